"""Cost arithmetic, the budget, the price order of the priority expander, and the cost outputs.

The arithmetic is checked on a small hand-made price table (every expected figure is worked out
here from its prices, not read back from the code); the committed catalog is checked in
``tests/test_prices.py``.
"""

from __future__ import annotations

import copy
import re
from datetime import date
from typing import Any

import pytest
import yaml
from gpupools import config
from gpupools.catalog.prices import HOURS_PER_MONTH, Price, PriceTable, price_table
from gpupools.conventions import CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.priority_expander import CONFIG_MAP_NAME, pool_priorities
from gpupools.pools import NodePoolInfo
from gpupools.pricing.estimate import (
    check_budget,
    fleet_cost,
    groups_of_pools,
    groups_of_spec,
    node_price,
)
from gpupools.specs import Cloud, CostSpec
from gpupools.testing import stack_config

from tests.example_runs import example_run
from tests.test_config import AZURE

D4 = "Standard_D4s_v5"
T4 = "Standard_NC4as_T4_v3"
A100 = "Standard_NC24ads_A100_v4"
TABLE = PriceTable(
    cloud=Cloud.AZURE,
    source="hand-made for tests",
    read_on=date(2026, 11, 1),
    spot_basis="test",
    prices={
        "eastus": {
            D4: Price(on_demand=0.2, spot=0.05),
            T4: Price(on_demand=0.5, spot=0.1),
            A100: Price(on_demand=4.0, spot=1.0),
        }
    },
)


def azure_spec(**cost: Any) -> Any:
    raw = copy.deepcopy(AZURE)
    raw["gpupools:gpuPools"] = [
        {"name": "t4", "instanceTypes": [T4], "maxSize": 10, "minSize": 1, "onDemandMaxSize": 4},
        {"name": "a100", "instanceTypes": [A100], "maxSize": 2},
        {"name": "od", "instanceTypes": [T4], "maxSize": 3, "spot": False},
    ]
    if cost:
        raw["gpupools:cost"] = cost
    return config.parse(raw)


# --- arithmetic ----------------------------------------------------------------------------------


def test_fleet_figures_follow_their_definitions() -> None:
    spec = azure_spec()
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "eastus", spec.cost)
    system = 4 * 0.2  # system pool at its default max of 4, on-demand
    on_demand_only = 3 * 0.5
    assert fleet.spot_at_max == pytest.approx(system + 10 * 0.1 + 2 * 1.0 + on_demand_only)
    # Spot replaced by each pool's fallback at the fallback's own maximum (t4: onDemandMaxSize 4).
    assert fleet.on_demand_instead_at_max == pytest.approx(system + 4 * 0.5 + 2 * 4.0 + on_demand_only)
    assert fleet.ceiling == pytest.approx(system + 10 * 0.1 + 4 * 0.5 + 2 * 1.0 + 2 * 4.0 + on_demand_only)
    assert fleet.idle == pytest.approx(2 * 0.2 + 1 * 0.1)  # system min 2, t4 Spot min 1
    assert dict(fleet.ceiling_by_pool)["a100"] == pytest.approx(2 * 1.0 + 2 * 4.0)
    assert fleet.ceiling_by_pool[0][0] == "a100"  # the dearest pool first
    assert fleet.monthly is None and fleet.savings_percent is None


def test_monthly_estimate_and_savings() -> None:
    spec = azure_spec(gpuHoursPerMonth=300, spotShare=0.8)
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "eastus", spec.cost)
    per_pool = 300 / 3  # spread evenly over the three GPU pools
    work = per_pool * (0.8 * 0.1 + 0.2 * 0.5) + per_pool * (0.8 * 1.0 + 0.2 * 4.0) + per_pool * 0.5
    idle = 2 * 0.2 + 1 * 0.1
    assert fleet.monthly == pytest.approx(idle * HOURS_PER_MONTH + work)
    all_on_demand = (2 * 0.2 + 1 * 0.5) * HOURS_PER_MONTH + per_pool * (0.5 + 4.0 + 0.5)
    assert fleet.monthly_all_on_demand == pytest.approx(all_on_demand)
    assert fleet.savings_percent == pytest.approx(100 * (1 - fleet.monthly / all_on_demand))


def test_a_pool_of_several_types_is_priced_at_the_dearest() -> None:
    table = PriceTable(Cloud.AWS, "t", date(2026, 11, 1), "t", {"us-west-2": {"a": Price(1.0, 0.3), "b": Price(1.2, 0.2)}})
    assert node_price(table, "us-west-2", ("a", "b"), CapacityType.ON_DEMAND) == 1.2
    assert node_price(table, "us-west-2", ("a", "b"), CapacityType.SPOT) == 0.3
    assert node_price(table, "us-west-2", ("a", "c"), CapacityType.SPOT) is None
    assert node_price(table, "eu-west-1", ("a",), CapacityType.SPOT) is None


def test_an_unknown_price_makes_the_figures_unknown_and_is_named() -> None:
    spec = azure_spec()
    table = PriceTable(Cloud.AZURE, "t", date(2026, 11, 1), "t", {"eastus": {D4: Price(0.2, None), T4: Price(0.5, 0.1)}})
    fleet = fleet_cost(groups_of_spec(spec), table, "eastus", spec.cost)
    assert fleet.ceiling is None and fleet.spot_at_max is None
    assert "Standard_NC24ads_A100_v4 (spot)" in fleet.unpriced
    assert "python -m gpupools.pricing refresh --cloud azure" in fleet.refresh


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev", "aws-karpenter-dev", "azure-nap-dev"])
def test_spec_and_created_pools_give_the_same_totals(stack: str) -> None:
    run = example_run(stack)
    raw = stack_config(stack)
    region = raw.get("aws:region") or raw["azure-native:location"]
    spec = config.parse(raw, region=region)
    table = price_table(spec.cloud)

    def totals(groups: Any) -> dict[tuple[str, str], tuple[int, int]]:
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for g in groups:
            key = (g.pool, g.capacity.value)
            lo, hi = out.get(key, (0, 0))
            out[key] = (lo + g.min_size, hi + g.max_size)
        return out

    outputs = run.outputs["nodePools"]
    created = [
        NodePoolInfo(
            name=p["name"],
            pool=p["pool"],
            role=Role(p["role"]),
            capacity=CapacityType(p["capacityType"]),
            zones=tuple(p["zones"]),
            instance_types=tuple(p["instanceTypes"]),
            min_size=p["minSize"],
            max_size=p["maxSize"],
            capacity_types=tuple(CapacityType(c) for c in p.get("capacityTypes", ())),
        )
        for p in outputs
    ]
    assert totals(groups_of_spec(spec)) == totals(groups_of_pools(created))
    fleet = fleet_cost(groups_of_spec(spec), table, region, spec.cost).to_output()
    assert fleet["ceilingPerHour"] == run.outputs["cost"]["ceilingPerHour"]
    assert fleet["idlePerHour"] == run.outputs["cost"]["idlePerHour"]


def test_a_karpenter_nodepool_counts_its_limit_once_at_the_dearer_price() -> None:
    """One NodePool allowing Spot and on-demand buys at most maxSize nodes of either: its ceiling is
    maxSize on-demand nodes, not Spot and on-demand added up as for two autoscaled groups."""
    raw = copy.deepcopy(AZURE)
    raw["gpupools:provisioner"] = "karpenter"
    raw["gpupools:systemPool"] = {"instanceTypes": [D4], "minSize": 2}
    raw["gpupools:gpuPools"] = [{"name": "a100", "instanceTypes": [A100], "maxSize": 3}]
    raw.pop("gpupools:autoscaler", None)
    spec = config.parse(raw)
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "eastus", spec.cost)
    system = 2 * 0.2  # fixed at minSize under NAP
    assert fleet.spot_at_max == pytest.approx(system + 3 * 1.0)
    assert fleet.on_demand_instead_at_max == pytest.approx(system + 3 * 4.0)
    assert fleet.ceiling == pytest.approx(system + 3 * 4.0)
    assert dict(fleet.ceiling_by_pool)["a100"] == pytest.approx(3 * 4.0)


# --- budget --------------------------------------------------------------------------------------


def test_budget_above_the_ceiling_passes_and_below_names_figure_and_drivers() -> None:
    spec = azure_spec()
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "eastus", CostSpec(budget_per_hour=100.0))
    check_budget(fleet)
    tight = fleet_cost(groups_of_spec(spec), TABLE, "eastus", CostSpec(budget_per_hour=5.0))
    with pytest.raises(ConfigError) as error:
        check_budget(tight)
    text = str(error.value)
    assert error.value.path == "gpupools:cost.budgetPerHour"
    assert f"${fleet.ceiling:,.2f}/h" in text and "a100 $10.00" in text and "got 5" in text


def test_budget_with_an_unknown_price_is_an_error() -> None:
    spec = azure_spec()
    empty = PriceTable(Cloud.AZURE, "t", date(2026, 11, 1), "t", {})
    with pytest.raises(ConfigError, match=r"cannot be decided: .* no upper bound .*no price in eastus for pool system"):
        check_budget(fleet_cost(groups_of_spec(spec), empty, "eastus", CostSpec(budget_per_hour=50.0)))


@pytest.mark.parametrize(
    ("cost", "path", "words"),
    [
        ({"spotShare": 1.5}, "gpupools:cost.spotShare", "from 0 to 1"),
        ({"gpuHoursPerMonth": -1}, "gpupools:cost.gpuHoursPerMonth", ">= 0"),
        ({"budgetPerHour": 0}, "gpupools:cost.budgetPerHour", "> 0"),
        ({"budgetPerHour": "lots"}, "gpupools:cost.budgetPerHour", "a number"),
        ({"budget": 10}, "gpupools:cost.budget", "did you mean 'budgetPerHour'"),
    ],
)
def test_invalid_cost_settings(cost: dict[str, Any], path: str, words: str) -> None:
    raw = copy.deepcopy(AZURE)
    raw["gpupools:cost"] = cost
    with pytest.raises(ConfigError) as error:
        config.parse(raw, region="eastus")
    assert error.value.path.startswith(path) and words in str(error.value)


def test_budget_needs_a_region() -> None:
    raw = copy.deepcopy(AZURE)
    raw["gpupools:cost"] = {"budgetPerHour": 1000}
    with pytest.raises(ConfigError, match="azure-native:location"):
        config.parse(raw, region=None)


# --- cheapest capacity first ---------------------------------------------------------------------


def info(name: str, capacity: CapacityType, size: str, gpus: int, role: Role = Role.GPU) -> NodePoolInfo:
    return NodePoolInfo(
        name=name,
        pool=name.split("-")[0],
        role=role,
        capacity=capacity,
        zones=("1",),
        instance_types=(size,),
        min_size=0,
        max_size=3,
        gpus_per_node=gpus,
        autoscaler_group_regex=f"^aks-{name}-[0-9]+-vmss$",
    )


SPOT, OD = CapacityType.SPOT, CapacityType.ON_DEMAND
POOLS = [
    info("system", OD, D4, 0, Role.SYSTEM),
    info("a100s", SPOT, A100, 1),
    info("t4s", SPOT, T4, 1),
    info("a100o", OD, A100, 1),
    info("t4o", OD, T4, 1),
]


def test_every_pool_its_own_tier_cheapest_first_spot_above_on_demand() -> None:
    prices = {"a100s": 1.0, "t4s": 0.1, "a100o": 4.0, "t4o": 0.5, "system": 0.2}
    rank = pool_priorities(POOLS, prices)
    assert rank["t4s"] > rank["a100s"] > rank["t4o"] > rank["a100o"] > rank["system"]
    assert len(set(rank.values())) == len(POOLS)


def test_equal_prices_share_a_tier() -> None:
    rank = pool_priorities(POOLS, {"a100s": 0.1, "t4s": 0.1, "a100o": 4.0, "t4o": 0.5})
    assert rank["t4s"] == rank["a100s"] > rank["t4o"]


def test_an_unknown_price_orders_its_class_by_size_facts() -> None:
    eight = info("big", SPOT, "Standard_ND96asr_v4", 8)
    rank = pool_priorities([*POOLS, eight], {"a100s": 1.0, "t4s": 0.1, "a100o": 4.0, "t4o": 0.5})
    # Spot: "big" has no price, so Spot is ordered by GPUs then vCPUs: T4 (4 vCPUs) > A100 (24) > ND96 (8 GPUs).
    assert rank["t4s"] > rank["a100s"] > rank["big"] > rank["t4o"] > rank["a100o"]


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_an_unpinned_one_gpu_pod_gets_the_cheapest_pool_that_fits(stack: str) -> None:
    """cluster-autoscaler picks the highest tier among groups that fit: for a pod asking one
    ``nvidia.com/gpu`` and no pool, every GPU pool fits, so the highest tier must be the cheapest."""
    run = example_run(stack)
    [config_map] = [r for r in run.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == CONFIG_MAP_NAME]
    tiers = {int(k): v for k, v in yaml.safe_load(config_map.inputs["data"]["priorities"]).items()}
    rows = [p for p in run.outputs["nodePools"] if p["role"] == "gpu" and p["gpuSlotsPerNode"] >= 1]
    assert all(p["pricePerNodeHour"] is not None for p in rows), "the example stacks' sizes are priced"

    def tier(row: dict[str, Any]) -> int:
        name = (
            f"aks-{row['name']}-12345678-vmss"
            if stack == "azure-dev"
            else f"eks-{row['name']}-0b8f3c2e-1d2a-4c5b-9e7f-123456789abc"
        )
        return max(t for t, regexes in tiers.items() if any(re.search(r, name) for r in regexes))

    best = max(rows, key=tier)
    cheapest = min(p["pricePerNodeHour"] for p in rows)
    assert best["pricePerNodeHour"] == cheapest
    assert best["capacityType"] == "spot"


# --- outputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_node_pools_output_carries_prices_and_the_cost_output_the_fleet(stack: str) -> None:
    run = example_run(stack)
    raw = stack_config(stack)
    region = raw.get("aws:region") or raw["azure-native:location"]
    table = price_table(Cloud(raw["gpupools:cloud"]))
    for row in run.outputs["nodePools"]:
        capacity = CapacityType(row["capacityType"])
        expected = node_price(table, region, row["instanceTypes"], capacity)
        assert row["pricePerNodeHour"] == (None if expected is None else round(expected, 4))
        if expected is not None:
            assert row["costPerHourAtMax"] == round(expected * row["maxSize"], 4)
    cost = run.outputs["cost"]
    assert cost["region"] == region and cost["currency"] == "USD"
    assert cost["pricesReadOn"] == table.read_on.isoformat()
    assert set(cost["priorityOrder"]) == {"spot", "on-demand"}


# --- the PR diff ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("stack", "pool"), [("azure-dev", "t4"), ("aws-dev", "gpu4")])
def test_raising_max_size_by_two_shows_twice_the_node_price(stack: str, pool: str) -> None:
    from gpupools.synth import synthesize
    from gpupools.synth.diff import diff_documents, render_stack

    raw = stack_config(stack)
    old = synthesize(stack).document
    pools = copy.deepcopy(raw["gpupools:gpuPools"])
    [entry] = [p for p in pools if p["name"] == pool]
    entry["maxSize"] += 2
    new = synthesize(stack, overrides={"gpupools:gpuPools": pools}).document
    region = raw.get("aws:region") or raw["azure-native:location"]
    table = price_table(Cloud(raw["gpupools:cloud"]))
    spot = node_price(table, region, entry["instanceTypes"], CapacityType.SPOT)
    assert spot is not None
    diff = diff_documents(old, new, stack)
    [all_spot] = [c for c in diff.cost if c.label == "at max, Spot first"]
    assert all_spot.delta == pytest.approx(2 * spot, abs=1e-3)
    spot_causes = [c for c in diff.cost_causes if c.capacity == "spot"]
    assert [c.pool for c in spot_causes] == [pool]
    assert spot_causes[0].delta == pytest.approx(2 * spot, abs=1e-3)
    text = render_stack(diff)
    assert f"+${2 * spot:,.2f}/h" in text and f"`{pool}` spot" in text
