"""Synth's default output is read in a terminal: no line wider than 160 columns, for every example
stack; ``--wide`` prints everything (each ASG tag, every column per group, reasons in the cells).

Before: aws-dev printed 241 lines, 123 of them one ASG tag each; its table was 250 columns, and a
"no price" row reached 740 characters.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from gpupools.synth import main
from gpupools.synth.summary import WIDTH, render, resource_tree, with_footnotes, wrap, zones_cell
from gpupools.testing import PROJECT_ROOT

from tests.examples import EXAMPLE_STACKS

STACKS = list(EXAMPLE_STACKS)


def synth(stack: str, out: Path, *flags: str) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([stack, "--root", str(PROJECT_ROOT), "--out", str(out), *flags]) == 0
    return buffer.getvalue()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """``stack -> (default output, --wide output)``."""
    out = tmp_path_factory.mktemp("synth")
    return {stack: (synth(stack, out / stack), synth(stack, out / stack, "--wide")) for stack in STACKS}


def test_there_are_example_stacks_of_both_clouds() -> None:
    assert any(s.startswith("aws") for s in STACKS) and any(s.startswith("azure") for s in STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_no_line_of_the_default_output_is_wider_than_160(stack: str, outputs: dict[str, tuple[str, str]]) -> None:
    default, _ = outputs[stack]
    widest = max(default.splitlines(), key=len)
    assert len(widest) <= WIDTH == 160, f"{stack}: {len(widest)} columns: {widest}"


@pytest.mark.parametrize("stack", STACKS)
def test_wide_keeps_every_resource_and_column(stack: str, outputs: dict[str, tuple[str, str]]) -> None:
    default, wide = outputs[stack]
    for column in ("ROLE", "INSTANCE TYPES", "GPUS/NODE", "SHARING", "SLOTS/NODE", "GPUS AT MAX", "$/NODE-H"):
        assert column in default and column in wide, column
    header = next(line for line in wide.splitlines() if line.strip().startswith("POOL "))
    assert "ROLE" in header and "INSTANCE TYPES" in header and "$/H AT MAX" in header  # one table, every column


def test_asg_tags_are_one_line_per_group_by_default_and_each_with_wide(outputs: dict[str, tuple[str, str]]) -> None:
    default, wide = outputs["aws-dev"]
    tag_lines = [line for line in default.splitlines() if "aws:autoscaling/tag:Tag" in line]
    wide_tag_lines = [line for line in wide.splitlines() if "aws:autoscaling/tag:Tag" in line]
    # gpu1: 7 labels (3 gpupools, accelerator, device-plugin config, gpu.present, team), 2 resources
    # (nvidia.com/gpu, ephemeral-storage), 1 taint per group.
    assert "    aws:autoscaling/tag:Tag  gpu1-od-us-west-2a-* (10: 7 labels, 2 resources, 1 taint)" in tag_lines
    groups = {line.split()[1] for line in tag_lines}
    assert len(tag_lines) == len(groups)  # one line per node group
    assert len(wide_tag_lines) > 3 * len(tag_lines)
    assert "    aws:autoscaling/tag:Tag  gpu1-od-us-west-2a-label-team" in wide_tag_lines
    assert len(default.splitlines()) < 160 < len(wide.splitlines())


def test_folding_keeps_other_types_and_order() -> None:
    document = {
        "resources": [
            {"address": "p", "type": "gpupools:index:GpuNodeGroup", "name": "g", "parent": None},
            {"address": "t1", "type": "aws:autoscaling/tag:Tag", "name": "g-a-label-x", "parent": "p"},
            {"address": "t2", "type": "aws:autoscaling/tag:Tag", "name": "g-a-taint-y", "parent": "p"},
            {"address": "t3", "type": "aws:autoscaling/tag:Tag", "name": "g-b-label-x", "parent": "p"},
            {"address": "n", "type": "aws:eks/nodeGroup:NodeGroup", "name": "g-a", "parent": "p"},
        ]
    }
    assert resource_tree(document, fold=True) == [
        "gpupools:index:GpuNodeGroup  g",
        "  aws:autoscaling/tag:Tag  g-a-* (2: 1 label, 1 taint)",
        "  aws:autoscaling/tag:Tag  g-b-*",
        "  aws:eks/nodeGroup:NodeGroup  g-a",
    ]
    assert len(resource_tree(document)) == 5


def test_no_price_reasons_become_numbered_footnotes_once_each() -> None:
    rows: list[dict[str, Any]] = [
        {
            "NODE POOL/GROUP": "a",
            "ZONES": "us-east-1a,us-east-1b",
            "$/NODE-H": "no price (H100: no Spot price)",
            "$/H AT MAX": "no price",
        },
        {"NODE POOL/GROUP": "b", "ZONES": "1", "$/NODE-H": "no price (A100: rejected)", "$/H AT MAX": "no price"},
        {"NODE POOL/GROUP": "c", "ZONES": "1", "$/NODE-H": "no price (H100: no Spot price)", "$/H AT MAX": "no price"},
        {"NODE POOL/GROUP": "d", "ZONES": "1", "$/NODE-H": "0.1000", "$/H AT MAX": "0.40"},
    ]
    shown, notes = with_footnotes(rows)
    assert [r["$/NODE-H"] for r in shown] == ["no price [1]", "no price [2]", "no price [1]", "0.1000"]
    assert [r["ZONES"] for r in shown] == ["us-east-1a,b", "1", "1", "1"]
    assert notes == ["[1] H100: no Spot price", "[2] A100: rejected"]


def test_zones_are_written_with_their_common_prefix_once() -> None:
    assert zones_cell(["us-west-2a", "us-west-2b", "us-west-2c"]) == "us-west-2a,b,c"
    assert zones_cell(["1", "2", "3"]) == "1,2,3"
    assert zones_cell(["us-east-1a"]) == "us-east-1a"
    assert zones_cell([]) == "-"


def test_wrap_breaks_at_spaces_and_indents_the_rest() -> None:
    line = "  " + " ".join(["word"] * 60)
    lines = wrap(line, 40)
    assert all(len(part) <= 40 for part in lines) and lines[0].startswith("  word") and lines[1].startswith("    word")
    assert " ".join(" ".join(lines).split()) == " ".join(line.split())
    assert wrap("short") == ["short"]


def test_render_default_fits_even_a_long_reason() -> None:
    reason = "x" * 30 + " " + "because " * 60
    document = {
        "stack": "t",
        "resources": [],
        "outputs": {
            "clusterName": "c",
            "nodePools": [
                {
                    "pool": "a",
                    "name": "a-spot",
                    "role": "gpu",
                    "capacityType": "spot",
                    "zones": ["1"],
                    "instanceTypes": ["X"],
                    "minSize": 0,
                    "maxSize": 1,
                    "gpusPerNode": 1,
                    "pricePerNodeHour": None,
                    "noPrice": reason,
                },
            ],
        },
    }
    default = render(document)
    assert max(len(line) for line in default.splitlines()) <= WIDTH
    assert reason.split()[0] in default
    assert ("no price (" + reason) in render(document, wide=True)
