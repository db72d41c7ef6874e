"""Synth of an Azure stack in westeurope (issues 20 and 30): a GPU pool whose source row passed the
checks shows its Spot and on-demand prices with their source and date; a pool whose Spot figure
failed the check shows its on-demand price, and its Spot price as unknown with the reason.

The stack is ``azure-dev`` moved to westeurope with two GPU pools: ``Standard_NC24ads_A100_v4``
(anycloud's May 2026 row: on-demand 4.775, 1.30x the eastus 3.673, Spot 1.905225, 0.40x) and
``Standard_NC16as_T4_v3`` (on-demand 1.505, Spot 1.080138: 0.72x on-demand, outside the importer's
Spot band). Expected figures are the committed table's rows, read here independently of the synth code.
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

PRICED, NO_SPOT = "Standard_NC24ads_A100_v4", "Standard_NC16as_T4_v3"


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
        {"name": "small", "instanceTypes": [NO_SPOT], "maxSize": 2},
    ]
    (root / "Pulumi.azure-eu.yaml").write_text(yaml.safe_dump(document))
    return root


def synth(root: Path, *flags: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["azure-eu", "--root", str(root), "--out", str(root / "out"), *flags]) == 0
    return out.getvalue()


def test_westeurope_gpu_pools_are_priced_from_checked_rows_and_a_rejected_spot_figure_is_reported(tmp_path: Path) -> None:
    root = europe_project(tmp_path)
    table = price_table(Cloud.AZURE)
    row = table.price("westeurope", PRICED)
    assert row is not None and row.on_demand is not None and row.spot is not None
    dropped = table.price("westeurope", NO_SPOT)
    assert dropped is not None and dropped.on_demand == 1.505 and dropped.spot is None

    data = json.loads(synth(root, "--json"))
    pools = {(p["pool"], p["capacityType"]): p for p in data["nodePools"]}
    # The output rounds a node-hour to 4 decimals.
    assert pools[("big", "spot")]["pricePerNodeHour"] == pytest.approx(row.spot, abs=5e-5)
    assert pools[("big", "on-demand")]["pricePerNodeHour"] == pytest.approx(row.on_demand, abs=5e-5)
    assert pools[("small", "on-demand")]["pricePerNodeHour"] == pytest.approx(1.505, abs=5e-5)
    reason = table.missing_reason("westeurope", NO_SPOT)
    assert reason.startswith("no Spot price") and "0.72x" in reason
    assert reason in json.dumps(pools[("small", "spot")])

    text = synth(root, "--no-tree", "--wide")
    assert f"no price ({NO_SPOT}: {reason})" in text
    # The default output gives the reason once, as a footnote the cell points to.
    default = synth(root, "--no-tree")
    assert "no price [1]" in default and "no price (" not in default
    assert f"[1] {NO_SPOT}: {reason}" in " ".join(default.split())
    origin = table.provenance("westeurope")
    assert "anycloud-sh/catalog" in origin.source
    assert f"collected by their source {origin.source_date.isoformat()}" in text
