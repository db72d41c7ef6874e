"""Synth of an Azure stack in westeurope (issues 20 and 30): a GPU pool whose source row passed the
checks shows its Spot and on-demand prices with their source and date; a pool whose Spot figure
is outside the importer's band is priced from it, flagged as doubtful with the reason (issue 39).

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


def test_westeurope_gpu_pools_are_priced_from_checked_rows_and_a_doubtful_spot_figure_is_kept_flagged(tmp_path: Path) -> None:
    root = europe_project(tmp_path)
    table = price_table(Cloud.AZURE)
    row = table.price("westeurope", PRICED)
    assert row is not None and row.on_demand is not None and row.spot is not None
    # anycloud's row: 1.080138 Spot, 0.72x the 1.505 on-demand, outside the importer's band: kept,
    # flagged (issue 39; it used to be dropped, blanking every fleet figure of a stack using it).
    doubtful = table.price("westeurope", NO_SPOT)
    assert doubtful is not None and doubtful.on_demand == 1.505 and doubtful.spot == 1.080138
    why = table.doubtful["westeurope"][NO_SPOT]
    assert "1.080138" in why and "0.72x" in why and "outside 0.05-0.70x" in why

    data = json.loads(synth(root, "--json"))
    pools = {(p["pool"], p["capacityType"]): p for p in data["nodePools"]}
    # The output rounds a node-hour to 4 decimals.
    assert pools[("big", "spot")]["pricePerNodeHour"] == pytest.approx(row.spot, abs=5e-5)
    assert pools[("big", "on-demand")]["pricePerNodeHour"] == pytest.approx(row.on_demand, abs=5e-5)
    assert pools[("small", "on-demand")]["pricePerNodeHour"] == pytest.approx(1.505, abs=5e-5)
    assert pools[("small", "spot")]["pricePerNodeHour"] == pytest.approx(1.080138, abs=5e-5)
    assert why in pools[("small", "spot")]["doubtfulPrice"] and "doubtfulPrice" not in pools[("big", "spot")]
    assert data["cost"]["doubtfulPrices"] == [f"{NO_SPOT}: {why}"]
    assert data["cost"]["ceilingPerHour"] is not None and all(data["cost"]["exact"].values())

    text = synth(root, "--no-tree", "--wide")
    assert f"1.0801 (doubtful: {NO_SPOT}: {why})" in text
    # The default output gives the reason once, as a footnote the cell points to.
    default = synth(root, "--no-tree")
    assert "1.0801 [1]" in default and "(doubtful:" not in default
    assert f"[1] doubtful: {NO_SPOT}: {why}" in " ".join(default.split())
    origin = table.provenance("westeurope")
    assert "anycloud-sh/catalog" in origin.source
    assert f"collected by their source {origin.source_date.isoformat()}" in text
