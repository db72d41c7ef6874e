"""Output a person reads fits 160 columns (issue 39): synth's summary (its cost lines included) of
every example stack and of stacks whose prices are partly unknown, the preflight's table of every
example stack on fake clouds (answered and failing), and the header of ``synth diff``.

``synth diff`` is Markdown for a pull-request comment, read rendered: its diff blocks hold values
verbatim (a wrapped value would be another value), so only its prose header is held to the width,
and the header says so (``MARKDOWN_NOTE``, docs/synth.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gpupools.preflight.aws import AwsPreflight
from gpupools.preflight.report import render as render_preflight
from gpupools.synth import synthesize
from gpupools.synth.diff import MARKDOWN_NOTE, diff_documents, render_markdown
from gpupools.synth.summary import WIDTH, render
from gpupools.testing import PROJECT_ROOT

from tests.examples import EXAMPLE_STACKS
from tests.test_fleet_totals_unknowns import eastus2_h100, project, synth, westeurope_t4
from tests.test_preflight_aws import StubbedAws, aws_dev, aws_karpenter_dev, good_account
from tests.test_preflight_azure import FAMILIES, azure_dev, good_subscription, run, sku

STACKS = list(EXAMPLE_STACKS)


def widest(text: str) -> tuple[int, str]:
    return max((len(line), line) for line in text.splitlines())


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    return {stack: synthesize(stack, PROJECT_ROOT).document for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
def test_synth_summary_fits(stack: str, documents: dict[str, dict[str, Any]]) -> None:
    width, line = widest(render(documents[stack]))
    assert width <= WIDTH, line


@pytest.mark.parametrize(
    "config",
    [eastus2_h100(), westeurope_t4(100.0), {**eastus2_h100(), "gpupools:cost": {"gpuHoursPerMonth": 300, "budgetPerHour": 100}}],
    ids=["unknown-spot", "doubtful-spot", "unknown-spot-monthly"],
)
def test_synth_summary_with_unknown_or_doubtful_prices_fits(config: dict[str, Any], tmp_path: Path) -> None:
    root = project(tmp_path, "s", config)
    status, text = synth(root, "s")
    assert status == 0
    width, line = widest(text)
    assert width <= WIDTH, line


def test_azure_preflight_fits() -> None:
    target = azure_dev()
    width, line = widest(render_preflight(run(target, good_subscription(target))))
    assert width <= WIDTH, line
    # A size the location does not list: long reasons in FOUND, the quota row's NEEDED from the catalog.
    skus = [sku(n, f, v) for n, (f, v) in FAMILIES.items() if n != "Standard_NC24ads_A100_v4"]
    checks = run(target, good_subscription(target, skus=skus))
    width, line = widest(render_preflight(checks))
    assert width <= WIDTH, line
    quota = [c for c in checks if c.check.value == "quota" and c.pool == "a100"]
    # 4 Spot nodes of 24 vCPUs (the size catalog), the numbers the answered rows give.
    assert quota and all(any(char.isdigit() for char in c.needed) for c in quota), [c.needed for c in quota]
    assert {c.needed for c in quota} >= {"spot: 96 vCPU = a100 4x24 (size catalog)"}


@pytest.mark.parametrize("target", [aws_dev, aws_karpenter_dev], ids=["aws-dev", "aws-karpenter-dev"])
def test_aws_preflight_fits(target: Any) -> None:
    stack = target()
    with StubbedAws() as aws:
        good_account(aws, stack)
        checks = AwsPreflight(stack, clients=aws).run()
    width, line = widest(render_preflight(checks))
    assert width <= WIDTH, line


def test_preflight_wraps_long_cells_within_the_width() -> None:
    from gpupools.preflight.report import Check, CheckKind, Status

    long = "no answer: " + "AuthorizationFailed: the client has no authorization to perform action " * 4
    checks = [Check(CheckKind.QUOTA, "system, t4, a100, general", "-", long, "cores: " + "x" * 150, Status.UNKNOWN)]
    text = render_preflight(checks)
    assert widest(text)[0] <= WIDTH
    # Nothing is lost: the words of both cells are all there, the status on the row's first line.
    assert text.split().count("AuthorizationFailed:") == 4
    assert text.splitlines()[1].rstrip().endswith("?")


def test_synth_diff_header_fits_and_says_it_is_markdown(documents: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    new_root = project(tmp_path, "azure-dev", eastus2_h100())
    assert synth(new_root, "azure-dev", "-q")[0] == 0
    new = json.loads((new_root / "out" / "desired-state.json").read_text())
    text = render_markdown([diff_documents(documents["azure-dev"], new, "azure-dev")])
    header = text.split("\n### ", 1)[0]
    width, line = widest(header)
    assert width <= WIDTH, line
    assert MARKDOWN_NOTE in header
