"""``python -m gpupools.synth <stack> --json`` and the TOTAL row, on every committed example stack.

Expected values come from the stack files (``Pulumi.<stack>.yaml``), the price catalog
(``prices_<cloud>.json`` through ``PriceTable``) and the size catalogs, never from the summary
code under test: a pool's price is recomputed here as the dearest of its instance types for its
capacity type, and the TOTAL from the config's ``maxSize``/``minSize`` and GPUs per size.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.catalog.prices import price_table
from gpupools.catalog.sizes import size_facts
from gpupools.specs import Cloud
from gpupools.synth import main
from gpupools.synth.summary import NOT_A_SUM
from gpupools.testing import PROJECT_ROOT

from tests.examples import EXAMPLE_STACKS

STACKS = list(EXAMPLE_STACKS)


def stack_config(stack: str) -> dict[str, Any]:
    return dict(yaml.safe_load((PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text())["config"])


def region_of(config: dict[str, Any]) -> str:
    return str(config.get("aws:region") or config.get("azure-native:location"))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], str]]:
    """Per stack: the parsed ``--json`` output and the table printed without it (same synth twice)."""
    import contextlib
    import io

    found = {}
    for stack in STACKS:
        out = tmp_path_factory.mktemp(stack)
        as_json, as_table = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(as_json):
            assert main([stack, "--root", str(PROJECT_ROOT), "--out", str(out), "--json"]) == 0
        with contextlib.redirect_stdout(as_table):
            assert main([stack, "--root", str(PROJECT_ROOT), "--out", str(out), "--no-tree"]) == 0
        # stdout is the JSON document and nothing else: json.loads of the whole of it.
        found[stack] = (json.loads(as_json.getvalue()), as_table.getvalue())
    return found


def catalog_price(cloud: Cloud, region: str, instance_types: list[str], capacity: str, auto_mode: bool = False) -> float | None:
    """USD per node-hour straight from the catalog: the dearest type (a node may be any of them); a
    reserved node costs nothing extra (its reservation is already paid for). On EKS Auto Mode each
    type's price also holds its Auto Mode fee when the catalog has every type's (else none is added)."""
    if capacity == "reserved":
        return 0.0
    table = price_table(cloud)
    with_fees = auto_mode and not fee_missing(cloud, region, instance_types, auto_mode)
    values = []
    for size in instance_types:
        price = table.price(region, size)
        value = None if price is None else (price.spot if capacity == "spot" else price.on_demand)
        if value is None:
            return None
        fee = table.auto_mode_fee(region, size) if with_fees else None
        values.append(value + (fee or 0.0))
    return max(values)


def fee_missing(cloud: Cloud, region: str, instance_types: list[str], auto_mode: bool) -> bool:
    """An EKS Auto Mode pool with a type whose fee the catalog lacks: synth shows its figures as ``>=``."""
    return auto_mode and any(price_table(cloud).auto_mode_fee(region, size) is None for size in instance_types)


def is_auto_mode(config: dict[str, Any]) -> bool:
    return config.get("gpupools:provisioner") == "auto-mode"


def table_rows(text: str) -> dict[str, dict[str, str]]:
    """The node-pool table's rows by NODE POOL/GROUP, and the TOTAL row under the key TOTAL."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("POOL "))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        if line.strip().startswith("---"):
            continue
        if line.strip().startswith("TOTAL"):
            # The row says when it is not the sum of the column above it (a NodePool counted once).
            numbers = line.replace(NOT_A_SUM, "").split()[
                1:
            ]  # MIN, MAX, GPUS AT MAX, IDLE GPUS, $/H AT MAX (blank columns skipped)
            rows["TOTAL"] = dict(zip(["MIN", "MAX", "GPUS AT MAX", "IDLE GPUS", "$/H AT MAX"], numbers, strict=True))
            continue
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(header), line
        row = dict(zip(header, cells, strict=True))
        rows[row["NODE POOL/GROUP"]] = row
    return rows


def test_the_example_stacks_cover_both_provisioners_on_both_clouds() -> None:
    kinds = {(c["gpupools:cloud"], c.get("gpupools:provisioner", "cluster-autoscaler")) for c in map(stack_config, STACKS)}
    assert kinds >= {("aws", "cluster-autoscaler"), ("aws", "karpenter"), ("azure", "cluster-autoscaler"), ("azure", "karpenter")}


@pytest.mark.parametrize("stack", STACKS)
def test_json_per_pool_prices_are_the_catalogs_and_the_tables(stack: str, outputs: dict[str, Any]) -> None:
    data, text = outputs[stack]
    config = stack_config(stack)
    cloud, region = Cloud(config["gpupools:cloud"]), region_of(config)
    rows = table_rows(text)
    assert data["stack"] == stack and data["nodePools"]
    assert {p["name"] for p in data["nodePools"]} == set(rows) - {"TOTAL"}
    for pool in data["nodePools"]:
        auto_mode = is_auto_mode(config)
        expected = catalog_price(cloud, region, pool["instanceTypes"], pool["capacityType"], auto_mode)
        assert expected is not None, f"{stack}: the catalog prices every example pool"
        assert pool["pricePerNodeHour"] == pytest.approx(expected, abs=5e-5), pool["name"]
        assert pool["costPerHourAtMax"] == pytest.approx(expected * pool["maxSize"], abs=5e-4), pool["name"]
        row = rows[pool["name"]]
        # Without an Auto Mode fee in the catalog the figure is below what AWS charges: ">=".
        bound = ">=" if fee_missing(cloud, region, pool["instanceTypes"], auto_mode) else ""
        assert row["$/NODE-H"] == f"{bound}{expected:.4f}"
        assert row["$/H AT MAX"].startswith(bound)
        assert float(row["$/H AT MAX"].removeprefix(bound)) == pytest.approx(expected * pool["maxSize"], abs=0.005 + 1e-9)
        assert int(row["MAX"]) == pool["maxSize"] and int(row["MIN"]) == pool["minSize"]


@pytest.mark.parametrize("stack", STACKS)
def test_total_and_the_four_states_follow_from_the_config(stack: str, outputs: dict[str, Any]) -> None:
    """The TOTAL row is the ceiling and the idle state, and the four states of ``gpupools.capacity``
    are what the config says, computed here from the config and the price catalog alone."""
    data, text = outputs[stack]
    config = stack_config(stack)
    cloud, region = Cloud(config["gpupools:cloud"]), region_of(config)
    karpenter = config.get("gpupools:provisioner") in ("karpenter", "auto-mode")
    system = config["gpupools:systemPool"]
    # EKS Auto Mode's system pool is a NodePool: no minimum (gpupools.specs.SystemPoolSpec.as_nodepool).
    # EKS Auto Mode and AKS Automatic: gpupools' system pool is a NodePool, which keeps no minimum.
    node_pool_system = config.get("gpupools:provisioner") == "auto-mode" or config["gpupools:cluster"].get("sku") == "Automatic"
    system_min = 0 if node_pool_system else system["minSize"]
    pools = list(config.get("gpupools:gpuPools", [])) + list(config.get("gpupools:cpuPools", []))

    def gpus(pool: dict[str, Any]) -> int:
        facts = size_facts(pool["instanceTypes"][0])
        assert facts is not None
        return facts[0] if pool in config.get("gpupools:gpuPools", []) else 0

    def price(pool: dict[str, Any], capacity: str) -> float:
        value = catalog_price(cloud, region, pool["instanceTypes"], capacity, is_auto_mode(config))
        assert value is not None
        return value

    def reserved(pool: dict[str, Any]) -> int:  # reservations[].count, the pool's maxSize without one
        return sum(r.get("count", pool["maxSize"]) for r in pool.get("reservations", []))

    system_max = system.get("maxSize", system_min)  # a fixed NAP System pool: its min
    system_price = price(system, "on-demand")
    # Per pool: (nodes at max, Spot first), its cost, (nodes at the ceiling), its cost.
    first_nodes = ceiling_nodes = system_max
    first_cost = ceiling_cost = system_max * system_price
    first_gpus = ceiling_gpus = 0
    for pool in pools:
        spot = pool.get("spot", True)
        fallback = spot and pool.get("onDemandFallback", True)
        main = price(pool, "spot" if spot else "on-demand")
        if karpenter:  # one NodePool, one limit: reserved first, the rest Spot; the ceiling the limit at on-demand
            rsv = min(reserved(pool), pool["maxSize"])
            first_nodes += pool["maxSize"]
            first_cost += (pool["maxSize"] - rsv) * main
            ceiling_nodes += pool["maxSize"]
            ceiling_cost += pool["maxSize"] * price(pool, "on-demand")
            first_gpus += pool["maxSize"] * gpus(pool)
            ceiling_gpus += pool["maxSize"] * gpus(pool)
            continue
        fallback_max = pool.get("onDemandMaxSize", pool["maxSize"]) if fallback else 0
        first_nodes += reserved(pool) + pool["maxSize"]
        first_cost += pool["maxSize"] * main
        first_gpus += (reserved(pool) + pool["maxSize"]) * gpus(pool)
        ceiling_nodes += reserved(pool) + pool["maxSize"] + fallback_max
        ceiling_cost += pool["maxSize"] * main + fallback_max * price(pool, "on-demand")
        ceiling_gpus += (reserved(pool) + pool["maxSize"] + fallback_max) * gpus(pool)
    idle_gpus = sum(p.get("minSize", 0) * gpus(p) for p in pools)

    total = data["total"]
    assert (total["maxSize"], total["gpusAtMax"], total["idleGpus"]) == (ceiling_nodes, ceiling_gpus, idle_gpus)
    assert total["minSize"] == system_min + sum(p.get("minSize", 0) for p in pools)
    assert total["costPerHourAtMax"] == pytest.approx(ceiling_cost, abs=1e-3)
    figures = data["cost"]["capacity"]
    assert (figures["atMaxSpotFirst"]["nodes"], figures["atMaxSpotFirst"]["gpus"]) == (first_nodes, first_gpus)
    assert figures["atMaxSpotFirst"]["costPerHour"] == pytest.approx(first_cost, abs=1e-3)
    # One source: the per-hour keys of the cost output are the states' costs.
    assert data["cost"]["ceilingPerHour"] == figures["ceiling"]["costPerHour"] == total["costPerHourAtMax"]
    assert data["cost"]["spotAtMaxPerHour"] == figures["atMaxSpotFirst"]["costPerHour"]
    assert data["cost"]["onDemandInsteadAtMaxPerHour"] == figures["atMaxSpotGone"]["costPerHour"]
    assert data["cost"]["idlePerHour"] == figures["idle"]["costPerHour"]
    # The table's TOTAL row says the same, and the lines under it name the four states once each.
    row = table_rows(text)["TOTAL"]
    assert [int(row[c]) for c in ("MIN", "MAX", "GPUS AT MAX", "IDLE GPUS")] == [
        total["minSize"],
        ceiling_nodes,
        ceiling_gpus,
        idle_gpus,
    ]
    # An Auto Mode fee the catalog lacks, for any pool: the ceiling is below what AWS charges (">=").
    bound = ">=" if any(fee_missing(cloud, region, p["instanceTypes"], is_auto_mode(config)) for p in [system, *pools]) else ""
    assert row["$/H AT MAX"] == f"{bound}{ceiling_cost:,.2f}"
    for name in ("idle", "at max, Spot first", "at max, Spot gone", "ceiling"):
        assert sum(1 for line in text.splitlines() if line.strip().startswith(name + " ")) == 1, name
    # Fallback rows are marked, in the table and in the JSON; the TOTAL's MAX adds up every row.
    fallback = {p["name"] for p in data["nodePools"] if p["fallback"]}
    assert fallback == {name for name, r in table_rows(text).items() if r.get("CAPACITY") == "on-demand fallback"}
    assert bool(fallback) is not karpenter  # NodePools allow both capacity types under one limit
    assert sum(p["maxSize"] for p in data["nodePools"]) == ceiling_nodes


def test_same_pools_same_first_choice_under_cluster_autoscaler_and_karpenter(outputs: dict[str, Any]) -> None:
    """The same pools at max on what they buy first are the same fleet on both provisioners; the
    ceilings differ by the fallbacks, which a NodePool keeps under its one limit."""
    autoscaled, karpenter = outputs["aws-dev"][0]["cost"]["capacity"], outputs["aws-karpenter-dev"][0]["cost"]["capacity"]
    config = stack_config("aws-dev")
    karpenter_config = stack_config("aws-karpenter-dev")
    same = ("gpupools:systemPool", "gpupools:cpuPools")
    assert all(config[k] == karpenter_config[k] for k in same)
    assert [(p["instanceTypes"], p["maxSize"]) for p in config["gpupools:gpuPools"]] == [
        (p["instanceTypes"], p["maxSize"]) for p in karpenter_config["gpupools:gpuPools"]
    ]
    assert autoscaled["atMaxSpotFirst"] == karpenter["atMaxSpotFirst"]
    assert autoscaled["idle"] == karpenter["idle"]
    assert autoscaled["ceiling"]["nodes"] > karpenter["ceiling"]["nodes"]


def test_json_lists_the_fleet_figures_and_the_files_written(outputs: dict[str, Any]) -> None:
    data, _ = outputs["azure-dev"]
    for key in ("idlePerHour", "spotAtMaxPerHour", "onDemandInsteadAtMaxPerHour", "ceilingPerHour", "monthly"):
        assert key in data["cost"]
    assert [Path(f).name for f in data["files"]] == ["desired-state.json", "kubernetes.yaml"]
    assert all(Path(f).exists() for f in data["files"])
    assert data["resources"]["total"] == data["resources"]["custom"] + data["resources"]["components"]


def test_json_and_quiet_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["aws-dev", "--root", str(PROJECT_ROOT), "--json", "--quiet"])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "not allowed with argument" in captured.err


def test_json_with_a_bad_config_prints_nothing_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = stack_config("aws-dev")
    config["aws:region"] = "eu-west-9"
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((PROJECT_ROOT / "__main__.py").read_text())
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump({"config": config}))
    assert main(["bad", "--root", str(tmp_path), "--json", "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "aws:region: must be a known AWS region (did you mean eu-west-1?), got 'eu-west-9'\n"
