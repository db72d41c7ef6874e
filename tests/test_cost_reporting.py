"""Issue 20: unpriced sizes named with their reason, evictions in the monthly figure, and the age of
the prices stated in synth.

Every table is built here (the committed catalogs change with each refresh or import), every
expected figure is worked out by hand in the comments, and every date is fixed: the staleness
warning takes ``today`` as an argument, so nothing depends on the day the tests run.
"""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest
from gpupools import config
from gpupools.catalog.prices import Price, PriceTable, RegionSource
from gpupools.conventions import CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.pricing.estimate import (
    check_budget,
    fleet_cost,
    groups_of_pools,
    groups_of_spec,
    pool_price_gaps,
    pool_prices,
    spot_hours_with_evictions,
    with_costs,
)
from gpupools.specs import Cloud, CostSpec
from gpupools.synth.summary import price_warnings, render, summary_data

from tests.test_config import AZURE

D4 = "Standard_D4s_v5"
T4 = "Standard_NC4as_T4_v3"
A100 = "Standard_NC24ads_A100_v4"
H100 = "Standard_NC40ads_H100_v5"
A100_REJECTED = "the source's Spot row equals on-demand: rejected by the import check"
OLD_SOURCE = "coroot/cloud-pricing gh-pages data/cloud-pricing.json.gz at af03eada"
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
        },
        "westeurope": {
            D4: Price(on_demand=0.23, spot=0.03),
            T4: Price(on_demand=0.842, spot=0.079),
            H100: Price(on_demand=7.0, spot=None),
        },
    },
    region_sources={"westeurope": RegionSource(OLD_SOURCE, date(2024, 8, 9), date(2026, 11, 20))},
    unpriced={"westeurope": {A100: A100_REJECTED}},
)


def parse(pools: list[dict[str, Any]], **cost: Any) -> Any:
    raw = copy.deepcopy(AZURE)
    raw["gpupools:gpuPools"] = pools
    if cost:
        raw["gpupools:cost"] = cost
    return config.parse(raw)


POOLS = [
    {"name": "t4", "instanceTypes": [T4], "maxSize": 10, "minSize": 1, "onDemandMaxSize": 4},
    {"name": "a100", "instanceTypes": [A100], "maxSize": 2},
    {"name": "od", "instanceTypes": [T4], "maxSize": 3, "spot": False},
]


# --- 3. evictions in the monthly figure ----------------------------------------------------------


def test_the_formula_grows_spot_hours_by_rate_times_redone_share() -> None:
    assert spot_hours_with_evictions(100.0, 0.0, 0.5) == 100.0  # no rate, no change
    assert spot_hours_with_evictions(100.0, 0.1, 0.5) == pytest.approx(105.0)  # 100 * (1 + 0.1 * 0.5)
    assert spot_hours_with_evictions(100.0, 0.2, 1.0) == pytest.approx(120.0)  # nothing kept: 100 * 1.2
    assert spot_hours_with_evictions(80.0, 1.0, 0.5) == pytest.approx(120.0)  # every run hit: 80 * 1.5, finite


def test_with_an_eviction_rate_the_monthly_spot_figure_rises_as_documented() -> None:
    # gpupools:cost.evictionRate 0.2 for the stack, 0.1 for the a100 pool itself; half of an
    # interrupted run redone.
    pools = copy.deepcopy(POOLS)
    pools[1]["evictionRate"] = 0.1
    spec = parse(pools, gpuHoursPerMonth=300, spotShare=0.8, evictionRate=0.2, redoneShare=0.5)
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "eastus", spec.cost)
    # Idle: system pool minimum 2 x D4 0.2 + t4 Spot minimum 1 x 0.1 = 0.5/h, x 730 h = 365.
    # 300 GPU hours over three GPU pools = 100 each; 80 on Spot, 20 on-demand (spotShare 0.8).
    # List prices: t4 80 x 0.1 + 20 x 0.5 = 18; a100 80 x 1.0 + 20 x 4.0 = 160; od (no Spot) 100 x 0.5 = 50.
    # 365 + 18 + 160 + 50 = 593.
    assert fleet.monthly == pytest.approx(593.0)
    # With evictions: t4 80 x (1 + 0.2 x 0.5) = 88 Spot hours, 88 x 0.1 + 20 x 0.5 = 18.8;
    # a100 80 x (1 + 0.1 x 0.5) = 84 Spot hours, 84 x 1.0 + 20 x 4.0 = 164; od unchanged, 50.
    # 365 + 18.8 + 164 + 50 = 597.8.
    assert fleet.monthly_with_evictions == pytest.approx(597.8)
    # All on-demand: idle (2 x 0.2 + 1 x 0.5) x 730 = 657; work 100 x (0.5 + 4.0 + 0.5) = 500; 1157.
    assert fleet.monthly_all_on_demand == pytest.approx(1157.0)
    out = fleet.to_output()
    assert out["savingsPercent"] == 48.7  # 1 - 593 / 1157 = 0.48747
    assert out["effectiveSavingsPercent"] == 48.3  # 1 - 597.8 / 1157 = 0.48332
    assert out["monthlyWithEvictions"] == 597.8
    assert out["evictionRates"] == {"a100": 0.1, "t4": 0.2}  # od buys no Spot
    assert out["redoneShare"] == 0.5


def test_without_a_rate_the_figure_with_evictions_is_the_list_figure() -> None:
    spec = parse(POOLS, gpuHoursPerMonth=300, spotShare=0.8)
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "eastus", spec.cost)
    assert fleet.monthly_with_evictions == pytest.approx(593.0) == fleet.monthly
    assert fleet.to_output()["evictionRates"] == {"a100": 0.0, "t4": 0.0}


def test_created_pools_apply_the_same_rates_as_the_spec() -> None:
    """The stack's ``cost`` output is computed from the created pools, which know no config: the
    per-pool rate travels in ``CostSpec.pool_eviction_rates``."""
    cost = CostSpec(gpu_hours_per_month=100, eviction_rate=0.0, redone_share=1.0, pool_eviction_rates={"a100": 0.25})
    created = [
        NodePoolInfo("system", "system", Role.SYSTEM, CapacityType.ON_DEMAND, ("1",), (D4,), 0, 1),
        NodePoolInfo("a100s", "a100", Role.GPU, CapacityType.SPOT, ("1",), (A100,), 0, 2),
        NodePoolInfo("a100o", "a100", Role.GPU, CapacityType.ON_DEMAND, ("1",), (A100,), 0, 2),
    ]
    fleet = fleet_cost(groups_of_pools(created), TABLE, "eastus", cost)
    # Nothing idle; 100 Spot hours x (1 + 0.25 x 1.0) = 125 at 1.0 = 125, against 100 at list price.
    assert fleet.monthly == pytest.approx(100.0)
    assert fleet.monthly_with_evictions == pytest.approx(125.0)
    assert fleet.effective_savings_percent == pytest.approx(100 * (1 - 125 / 400))  # 68.75 against 100 x 4.0


@pytest.mark.parametrize(
    ("cost", "pool", "path", "words"),
    [
        ({"evictionRate": 1.5}, {}, "gpupools:cost.evictionRate", "must be between 0 and 1 (share of Spot runs interrupted"),
        ({"evictionRate": -0.1}, {}, "gpupools:cost.evictionRate", "got -0.1"),
        ({"evictionRate": "10%"}, {}, "gpupools:cost.evictionRate", "must be a number from 0 to 1"),
        ({"redoneShare": 2}, {}, "gpupools:cost.redoneShare", "share of an interrupted run that is redone"),
        ({}, {"evictionRate": 5}, "gpupools:gpuPools[0].evictionRate", "must be between 0 and 1"),
        ({}, {"spot": False, "evictionRate": 0.1}, "gpupools:gpuPools[0].evictionRate", "Spot pools only"),
    ],
)
def test_invalid_eviction_settings_name_their_path(cost: dict[str, Any], pool: dict[str, Any], path: str, words: str) -> None:
    pools = [{**POOLS[0], **pool}]
    with pytest.raises(ConfigError) as error:
        parse(pools, **cost)
    assert error.value.path == path and words in str(error.value)


def test_an_eviction_rate_on_a_cpu_pool_is_an_error() -> None:
    raw = copy.deepcopy(AZURE)
    raw["gpupools:cpuPools"] = [{"name": "prep", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 2, "evictionRate": 0.1}]
    with pytest.raises(ConfigError, match=r"gpupools:cpuPools\[0\]\.evictionRate: is for GPU pools only"):
        config.parse(raw)


# --- 2. unpriced sizes named, with their reason --------------------------------------------------


def test_the_budget_names_each_pool_it_cannot_price_and_why() -> None:
    spec = parse(POOLS[:2])
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "westeurope", CostSpec(budget_per_hour=500.0))
    with pytest.raises(ConfigError) as error:
        check_budget(fleet)
    text = str(error.value)
    assert error.value.path == "gpupools:cost.budgetPerHour"
    # The a100 size is recorded as rejected in westeurope; t4 and the system pool are priced there.
    assert f"no price in westeurope for pool a100 ({A100}: {A100_REJECTED})" in text
    assert "pool t4" not in text and "pool system" not in text

    elsewhere = fleet_cost(groups_of_spec(spec), TABLE, "northeurope", CostSpec(budget_per_hour=500.0))
    with pytest.raises(ConfigError) as error:
        check_budget(elsewhere)
    assert f"pool system ({D4}: region northeurope is not in the azure price catalog)" in str(error.value)


def test_a_size_priced_on_demand_only_says_so_per_capacity() -> None:
    spec = parse([{"name": "h100", "instanceTypes": [H100], "maxSize": 1}])
    fleet = fleet_cost(groups_of_spec(spec), TABLE, "westeurope", CostSpec(budget_per_hour=500.0))
    assert dict(fleet.unpriced_reasons) == {
        f"{H100} (spot)": f"{H100} has no spot price for westeurope in the price catalog's source"
    }
    # Its on-demand fallback is priced, so only the Spot group is named.
    assert dict(fleet.unpriced_pools) == {
        "h100": f"{H100}: {H100} has no spot price for westeurope in the price catalog's source"
    }


def document(pools: list[NodePoolInfo], table: PriceTable, region: str, cost: CostSpec) -> dict[str, Any]:
    """A synthesized document's parts the summary reads, made the way the stacks make them."""
    prices = pool_prices(pools, table, region)
    return {
        "stack": "test",
        "resources": [],
        "outputs": {
            "clusterName": "ml",
            "nodePools": with_costs(pools, prices, pool_price_gaps(pools, table, region)),
            "cost": fleet_cost(groups_of_pools(pools), table, region, cost).to_output(),
        },
    }


CREATED = [
    NodePoolInfo("system", "system", Role.SYSTEM, CapacityType.ON_DEMAND, ("1",), (D4,), 1, 1),
    NodePoolInfo("t4s", "t4", Role.GPU, CapacityType.SPOT, ("1",), (T4,), 0, 2, gpus_per_node=1),
    NodePoolInfo("a100s", "a100", Role.GPU, CapacityType.SPOT, ("1",), (A100,), 0, 2, gpus_per_node=1),
    NodePoolInfo("a100o", "a100", Role.GPU, CapacityType.ON_DEMAND, ("1",), (A100,), 0, 2, gpus_per_node=1),
]


def test_synth_table_says_no_price_and_why_and_json_carries_it() -> None:
    doc = document(CREATED, TABLE, "westeurope", CostSpec())
    wide = render(doc, today=date(2024, 9, 1), wide=True)
    a100_row = next(line for line in wide.splitlines() if "a100s" in line)
    assert f"no price ({A100}: {A100_REJECTED})" in a100_row
    assert "?" not in a100_row
    # By default the reason is a footnote under the table, the cell points to it.
    text = render(doc, today=date(2024, 9, 1))
    a100_row = next(line for line in text.splitlines() if "a100s" in line)
    assert a100_row.split("  ")[-1].strip() == "no price" and "no price [1]" in a100_row
    assert f"  [1] {A100}: {A100_REJECTED}" in text.splitlines()
    t4_row = next(line for line in text.splitlines() if "t4s" in line)
    assert "0.0790" in t4_row and "0.16" in t4_row  # priced: 0.079 per node-hour, 2 x 0.079 at max
    assert f"No price for {A100} (on-demand): {A100_REJECTED}; {A100} (spot): {A100_REJECTED}" in wide
    data = summary_data(doc, today=date(2024, 9, 1))
    by_name = {p["name"]: p for p in data["nodePools"]}
    assert by_name["a100s"]["noPrice"] == f"{A100}: {A100_REJECTED}"
    assert "noPrice" not in by_name["t4s"]
    assert data["cost"]["unpricedReasons"] == {f"{A100} (on-demand)": A100_REJECTED, f"{A100} (spot)": A100_REJECTED}
    assert data["cost"]["unpricedPools"] == {"a100": f"{A100}: {A100_REJECTED}"}


def test_synth_prints_the_effective_saving_next_to_the_list_price_saving() -> None:
    cost = CostSpec(gpu_hours_per_month=100, eviction_rate=0.2, redone_share=0.5)
    pools = [p for p in CREATED if p.pool != "t4"]
    doc = document(pools, TABLE, "eastus", cost)
    text = render(doc, today=date(2026, 11, 24))
    # Idle: system 1 x 0.2 = 0.2/h x 730 = 146. a100: 100 Spot hours at 1.0 = 100 -> 246 at list prices;
    # with evictions 100 x (1 + 0.2 x 0.5) = 110 -> 256. All on-demand: 146 + 100 x 4.0 = 546.
    # Savings 1 - 246/546 = 54.95 %; effective 1 - 256/546 = 53.11 %.
    assert "246.00 (all on-demand: 546.00; savings 54.9% at list prices)" in text
    assert "With evictions (Spot runs interrupted: a100 20%; 50% of an interrupted run redone): 256.00; " in text
    assert "effective savings 53.1% against all on-demand" in text


# --- 4. staleness stated -------------------------------------------------------------------------


def test_synth_states_source_and_read_dates_and_warns_when_a_year_old() -> None:
    doc = document(CREATED[:2], TABLE, "westeurope", CostSpec())
    cost = doc["outputs"]["cost"]
    assert (cost["priceSource"], cost["pricesSourceDate"], cost["pricesReadOn"]) == (OLD_SOURCE, "2024-08-09", "2026-11-20")
    # 2024-08-09 + 365 days = 2025-08-09 (2025 is not a leap year; 2024's 29 February is before August).
    assert price_warnings(cost, date(2025, 8, 9)) == []
    (warning,) = price_warnings(cost, date(2025, 8, 10))
    assert warning.startswith(f"Prices for westeurope are older than a year: {OLD_SOURCE} collected them on 2024-08-09")
    assert "(366 days before 2025-08-10)" in warning
    text = render(doc, today=date(2026, 11, 24), wide=True)
    assert (
        f"Prices for westeurope: collected by their source 2024-08-09, read by gpupools 2026-11-20; source: {OLD_SOURCE}\n"
        in text
    )
    assert "Warning: Prices for westeurope are older than a year" in text and "(837 days before 2026-11-24)" in text
    assert "Warning:" not in render(doc, today=date(2025, 1, 1))
    assert summary_data(doc, today=date(2026, 11, 24))["warnings"] == [
        warning.replace("366 days before 2025-08-10", "837 days before 2026-11-24")
    ]


def test_a_region_read_from_the_tables_own_source_has_that_source_and_date() -> None:
    doc = document(CREATED[:2], TABLE, "eastus", CostSpec())
    cost = doc["outputs"]["cost"]
    assert (cost["priceSource"], cost["pricesSourceDate"], cost["pricesReadOn"]) == (
        "hand-made for tests",
        "2026-11-01",
        "2026-11-01",
    )
    assert summary_data(doc, today=date(2027, 11, 1))["warnings"] == []  # 365 days: not yet
    assert len(summary_data(doc, today=date(2027, 11, 2))["warnings"]) == 1
