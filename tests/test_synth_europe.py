"""Synth of an Azure stack in westeurope (issue 20): the GPU pools whose coroot rows passed the check
show those rows' Spot and on-demand prices with their source and date; a pool whose row failed the
check is reported with the reason and priced at nothing.

The stack is ``azure-dev`` moved to westeurope with two GPU pools: ``Standard_NC16as_T4_v3`` (its
coroot row is within the band of its eastus Linux price) and ``Standard_NC4as_T4_v3`` (its coroot row,
0.842, is 1.60x the eastus 0.526: a Windows rate). Expected figures are the committed table's rows,
read here independently of the synth code.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.catalog.prices import price_table
from gpupools.specs import Cloud
from gpupools.synth import main
from gpupools.testing import PROJECT_ROOT

PRICED, REJECTED = "Standard_NC16as_T4_v3", "Standard_NC4as_T4_v3"


def europe_project(root: Path) -> Path:
    """A copy of the project with one stack, ``azure-eu``, in westeurope."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_ROOT / name, root / name)
    shutil.copytree(PROJECT_ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    document = yaml.safe_load((PROJECT_ROOT / "Pulumi.azure-dev.yaml").read_text())
    config: dict[str, Any] = document["config"]
    config["azure-native:location"] = "westeurope"
    config["gpupools:gpuPools"] = [
        {"name": "big", "instanceTypes": [PRICED], "maxSize": 2},
        {"name": "small", "instanceTypes": [REJECTED], "maxSize": 2},
    ]
    (root / "Pulumi.azure-eu.yaml").write_text(yaml.safe_dump(document))
    return root


def synth(root: Path, *flags: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["azure-eu", "--root", str(root), "--out", str(root / "out"), *flags]) == 0
    return out.getvalue()


def test_westeurope_gpu_pools_are_priced_from_checked_rows_and_a_rejected_row_is_reported(tmp_path: Path) -> None:
    root = europe_project(tmp_path)
    table = price_table(Cloud.AZURE)
    row = table.price("westeurope", PRICED)
    assert row is not None and row.on_demand is not None and row.spot is not None
    assert table.price("westeurope", REJECTED) is None

    data = json.loads(synth(root, "--json"))
    pools = {(p["pool"], p["capacityType"]): p for p in data["nodePools"]}
    # The output rounds a node-hour to 4 decimals.
    assert pools[("big", "spot")]["pricePerNodeHour"] == pytest.approx(row.spot, abs=5e-5)
    assert pools[("big", "on-demand")]["pricePerNodeHour"] == pytest.approx(row.on_demand, abs=5e-5)
    reason = table.missing_reason("westeurope", REJECTED)
    assert "rejected" in reason and "1.60x" in reason
    assert reason in json.dumps(pools[("small", "spot")])

    text = synth(root, "--no-tree", "--wide")
    assert f"no price ({REJECTED}: {reason})" in text
    # The default output gives the reason once, as a footnote the cell points to.
    default = synth(root, "--no-tree")
    assert "no price [1]" in default and "no price (" not in default
    assert f"[1] {REJECTED}: {reason}" in " ".join(default.split())
    origin = table.provenance("westeurope")
    assert "coroot/cloud-pricing" in origin.source
    assert f"collected by their source {origin.source_date.isoformat()}" in text
    assert "older than a year" in text
