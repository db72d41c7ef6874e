"""The EKS Auto Mode management fee in the costs of ``provisioner: auto-mode`` (issue 47, item 4).

AWS charges the fee per instance Auto Mode launches, by instance type and region, on top of the EC2
price (EKS User Guide, ``eks-compute``); gpupools adds it to every Auto Mode node-hour, Spot or
on-demand, where the price catalog has it (``gpupools.pricing.estimate``). No per-type fee with an AWS
source is available offline, so the committed catalog has none: the tests that need fees run the
stacks on a **hand-made table** (``TABLE`` below), whose figures are made up for the arithmetic and
are no AWS prices. Every expected figure is worked out here from that table, not read back from the
code. What the committed catalog gives (no fee known) is checked in ``tests/test_auto_mode.py``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from gpupools import config
from gpupools.catalog import prices
from gpupools.catalog.prices import REFRESH_HINT, Price, PriceTable
from gpupools.conventions import CapacityType
from gpupools.errors import ConfigError
from gpupools.pricing.estimate import (
    auto_mode_fee_warning,
    check_budget,
    fleet_cost,
    groups_of_spec,
    node_price,
    price_order,
)
from gpupools.specs import Cloud
from gpupools.testing import Run, run_stack, stack_config

from tests.test_karpenter_eks import node_pools

STACK = "aws-auto-dev"
REGION = "us-west-2"
FEE_SHARE = 0.10
"""The made-up fee of every size in ``TABLE``: 10 % of its on-demand price."""

EC2 = {  # size -> (on-demand, Spot), USD per node-hour: made up, not AWS prices
    "m6i.xlarge": (0.2, 0.08),  # the system pool
    "g4dn.xlarge": (0.5, 0.2),  # gpu1
    "g5.xlarge": (1.0, 0.4),
    "g6.xlarge": (0.8, 0.3),
    "g5.12xlarge": (5.6, 2.0),  # gpu4
    "g6.12xlarge": (4.6, 1.8),
    # general: m7i.2xlarge has a high on-demand price and a low Spot price, so its fee (10 % of
    # on-demand) takes the pool's Spot node-hour above gpu1's: the order changes with the fee.
    "m6i.2xlarge": (0.4, 0.15),
    "m7i.2xlarge": (3.0, 0.35),
    "m6a.2xlarge": (0.35, 0.14),
}
FEES = {size: round(FEE_SHARE * on_demand, 6) for size, (on_demand, _) in EC2.items()}
GPU_SIZES = ("g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g5.12xlarge", "g6.12xlarge")


def table(fees: dict[str, float]) -> PriceTable:
    """The hand-made AWS table for ``REGION``, with ``fees`` as its Auto Mode fees."""
    return PriceTable(
        cloud=Cloud.AWS,
        source="hand-made for tests",
        read_on=date(2026, 11, 23),
        spot_basis="test (Spot prices move)",
        prices={REGION: {size: Price(od, spot, fees.get(size)) for size, (od, spot) in EC2.items()}},
    )


TABLE = table(FEES)
NO_FEES = table({})
PARTIAL = table({size: FEES[size] for size in GPU_SIZES})  # the GPU sizes' fees only


@pytest.fixture
def aws_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[PriceTable], None]]:
    """Install a table as the AWS price catalog (what ``price_table(Cloud.AWS)`` reads) for one test."""

    def install(new: PriceTable) -> None:
        path = tmp_path / "prices_aws.json"
        path.write_text(json.dumps(new.to_json()))
        real = prices.table_path
        monkeypatch.setattr(prices, "table_path", lambda cloud: path if cloud is Cloud.AWS else real(cloud))
        prices.price_table.cache_clear()

    yield install
    prices.price_table.cache_clear()


def pools_of(stack: str) -> dict[str, dict[str, Any]]:
    """The stack's pools by name, the system pool's as Auto Mode makes it (on-demand only)."""
    values = stack_config(stack)
    pools = {p["name"]: p for p in (*values["gpupools:gpuPools"], *values["gpupools:cpuPools"])}
    return {"system": {**values["gpupools:systemPool"], "spot": False}, **pools}


def with_fee(size: str, capacity: str) -> float:
    on_demand, spot = EC2[size]
    return (spot if capacity == "spot" else on_demand) + FEES[size]


def expected_ceiling(fees: bool) -> float:
    """Every NodePool at its limit, priced at its dearest capacity (on-demand; Karpenter's ceiling),
    each node its dearest size: from ``EC2`` and ``FEES`` alone."""
    total = 0.0
    for pool in pools_of(STACK).values():
        total += pool["maxSize"] * max(EC2[s][0] + (FEES[s] if fees else 0.0) for s in pool["instanceTypes"])
    return total


def run_with(aws_prices: Callable[[PriceTable], None], new: PriceTable, stack: str = STACK, **overrides: Any) -> Run:
    aws_prices(new)
    return run_stack(stack, overrides=overrides or None)


# --- the arithmetic ---------------------------------------------------------------------------


def test_a_node_hour_is_the_ec2_price_plus_the_fee_of_its_size_spot_and_on_demand() -> None:
    gpu1 = pools_of(STACK)["gpu1"]["instanceTypes"]
    for capacity in (CapacityType.SPOT, CapacityType.ON_DEMAND):
        expected = max(with_fee(s, capacity.value) for s in gpu1)
        assert node_price(TABLE, REGION, gpu1, capacity, auto_mode=True) == pytest.approx(expected)
        # Not under other provisioners, and not where a size's fee is unknown (never a fee of 0 mixed in).
        column = 1 if capacity is CapacityType.SPOT else 0
        assert node_price(TABLE, REGION, gpu1, capacity) == max(EC2[s][column] for s in gpu1)
    half = table({gpu1[0]: FEES[gpu1[0]]})
    assert node_price(half, REGION, gpu1, CapacityType.SPOT, auto_mode=True) == max(EC2[s][1] for s in gpu1)


def test_rows_totals_and_the_fee_block_include_the_fee(aws_prices: Callable[[PriceTable], None]) -> None:
    outputs = run_with(aws_prices, TABLE).outputs
    pools = pools_of(STACK)
    rows = {row["pool"]: row for row in outputs["nodePools"]}
    for name, pool in pools.items():
        capacity = "spot" if pool.get("spot", True) else "on-demand"
        dearest = max(pool["instanceTypes"], key=lambda s: (with_fee(s, capacity), FEES[s]))
        row = rows[name]
        assert row["pricePerNodeHour"] == pytest.approx(with_fee(dearest, capacity), abs=1e-4), name
        assert row["autoModeFee"] == pytest.approx(FEES[dearest], abs=1e-4), name
        assert "autoModeFeeNote" not in row
        assert row["costPerHourAtMax"] == pytest.approx(with_fee(dearest, capacity) * pool["maxSize"], abs=1e-3)
    cost = outputs["cost"]
    assert cost["ceilingPerHour"] == pytest.approx(expected_ceiling(fees=True), abs=1e-3)
    assert cost["exact"]["ceiling"] is True and cost["capacity"]["ceiling"]["autoModeFeeIncluded"] is True
    spot_first = sum(
        pool["maxSize"] * max(with_fee(s, "spot" if pool.get("spot", True) else "on-demand") for s in pool["instanceTypes"])
        for pool in pools.values()
    )
    assert cost["spotAtMaxPerHour"] == pytest.approx(spot_first, abs=1e-3)
    block = cost["autoModeFee"]
    assert block["included"] is True and block["inNodePoolWeights"] is True
    assert block["perNodeHour"] == pytest.approx(FEES) and block["unknownSizes"] == [] and block["notIncludedFor"] == []
    # The same stack on the same EC2 prices without fees: every figure lower by the fees alone.
    plain = run_with(aws_prices, NO_FEES).outputs["cost"]
    assert plain["ceilingPerHour"] == pytest.approx(expected_ceiling(fees=False), abs=1e-3)
    assert cost["ceilingPerHour"] - plain["ceilingPerHour"] == pytest.approx(
        sum(p["maxSize"] * max(EC2[s][0] * FEE_SHARE for s in p["instanceTypes"]) for p in pools.values()), abs=1e-3
    )


def test_the_fee_orders_the_nodepools(aws_prices: Callable[[PriceTable], None]) -> None:
    """general's Spot node-hour is below gpu1's at EC2 prices (0.35 < 0.40) and above it with the
    fee (0.35 + 0.30 > 0.40 + 0.10): the weights follow the fee (higher weight: tried first)."""
    general = max(EC2[s][1] for s in pools_of(STACK)["general"]["instanceTypes"])
    gpu1 = max(EC2[s][1] for s in pools_of(STACK)["gpu1"]["instanceTypes"])
    assert general < gpu1
    assert max(with_fee(s, "spot") for s in pools_of(STACK)["general"]["instanceTypes"]) > max(
        with_fee(s, "spot") for s in pools_of(STACK)["gpu1"]["instanceTypes"]
    )
    weights = {name: p["spec"]["weight"] for name, p in node_pools(run_with(aws_prices, TABLE)).items()}
    assert weights["gpu1"] > weights["general"]
    weights = {name: p["spec"]["weight"] for name, p in node_pools(run_with(aws_prices, NO_FEES)).items()}
    assert weights["general"] > weights["gpu1"]
    spec = config.parse(stack_config(STACK), region=REGION)
    assert price_order(spec.pools, TABLE, REGION, auto_mode=True) == ["gpu1", "general", "gpu4"]
    assert price_order(spec.pools, TABLE, REGION) == ["general", "gpu1", "gpu4"]  # other provisioners: EC2 only


def test_the_budget_counts_the_fee(aws_prices: Callable[[PriceTable], None]) -> None:
    with_fees, without = expected_ceiling(fees=True), expected_ceiling(fees=False)
    between = round((with_fees + without) / 2, 2)
    aws_prices(TABLE)
    values = copy.deepcopy(stack_config(STACK))
    values["gpupools:cost"] = {"budgetPerHour": between}
    with pytest.raises(ConfigError) as raised:  # within the budget at EC2 prices, above it with the fee
        config.parse(values, region=REGION)
    assert raised.value.path == "gpupools:cost.budgetPerHour"
    assert f"${with_fees:,.2f}/h" in str(raised.value)
    values["gpupools:cost"] = {"budgetPerHour": round(with_fees + 0.01, 2)}
    assert config.parse(values, region=REGION).cost.budget_per_hour == round(with_fees + 0.01, 2)


def test_an_unknown_fee_is_said_and_the_budget_cannot_pass_on_it(aws_prices: Callable[[PriceTable], None]) -> None:
    """The GPU sizes' fees known, the CPU sizes' not: the CPU pools are at EC2 prices, said in the
    rows, the fee block and a warning; the weights use EC2 prices for every pool (one basis)."""
    cpu_sizes = sorted(set(EC2) - set(GPU_SIZES))
    result = run_with(aws_prices, PARTIAL)
    warning = auto_mode_fee_warning(PARTIAL, REGION, EC2)
    assert warning is not None and warning in result.warnings
    assert f"fee unknown for {', '.join(cpu_sizes)} in {REGION}" in warning
    assert REFRESH_HINT.format(cloud="aws") in warning
    rows = {row["pool"]: row for row in result.outputs["nodePools"]}
    for name in ("system", "general"):
        assert rows[name]["autoModeFee"] is None
        assert (
            "not included" in rows[name]["autoModeFeeNote"] and REFRESH_HINT.format(cloud="aws") in rows[name]["autoModeFeeNote"]
        )
    for name in ("gpu1", "gpu4"):
        assert rows[name]["autoModeFee"] is not None and "autoModeFeeNote" not in rows[name]
    block = result.outputs["cost"]["autoModeFee"]
    assert block["included"] is False and block["unknownSizes"] == cpu_sizes
    assert block["notIncludedFor"] == ["system", "general"] and block["inNodePoolWeights"] is False
    assert result.outputs["cost"]["exact"]["ceiling"] is False
    weights = {name: p["spec"]["weight"] for name, p in node_pools(result).items()}
    assert weights["general"] > weights["gpu1"]  # EC2 order (previous test): general's fee is unknown

    values = copy.deepcopy(stack_config(STACK))
    values["gpupools:cost"] = {"budgetPerHour": 10_000.0}  # far above any ceiling, yet undecidable
    with pytest.raises(ConfigError) as raised:
        config.parse(values, region=REGION)
    assert "cannot be decided" in str(raised.value) and "EKS Auto Mode fee of " + ", ".join(cpu_sizes) in str(raised.value)
    assert REFRESH_HINT.format(cloud="aws") in str(raised.value)


def test_an_unknown_fee_cannot_hide_a_ceiling_already_over_the_budget() -> None:
    spec = config.parse(stack_config(STACK), region=REGION)
    fleet = fleet_cost(groups_of_spec(spec), NO_FEES, REGION, replace(spec.cost, budget_per_hour=1.0))
    with pytest.raises(ConfigError) as raised:
        check_budget(fleet)
    assert "must be at least the fleet's ceiling" in str(raised.value)
    assert f"${expected_ceiling(fees=False):,.2f}/h, without the EKS Auto Mode fee" in str(raised.value)


def test_spec_and_created_pools_give_the_same_figures_with_fees(aws_prices: Callable[[PriceTable], None]) -> None:
    spec = config.parse(stack_config(STACK), region=REGION)
    before = fleet_cost(groups_of_spec(spec), TABLE, REGION, spec.cost).to_output()
    cost = run_with(aws_prices, TABLE).outputs["cost"]
    for key in ("idlePerHour", "spotAtMaxPerHour", "onDemandInsteadAtMaxPerHour", "ceilingPerHour", "autoModeFee"):
        if key == "autoModeFee":
            assert {k: v for k, v in cost[key].items() if k != "inNodePoolWeights"} == before[key]
        else:
            assert cost[key] == before[key], key


# --- other provisioners: nothing changes ----------------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-karpenter-dev", "aws-dev"])
def test_fees_in_the_table_change_nothing_on_other_provisioners(stack: str, aws_prices: Callable[[PriceTable], None]) -> None:
    with_fees = run_with(aws_prices, TABLE, stack)
    without = run_with(aws_prices, NO_FEES, stack)
    assert with_fees.outputs["nodePools"] == without.outputs["nodePools"]
    assert with_fees.outputs["cost"] == without.outputs["cost"]
    assert "autoModeFee" not in with_fees.outputs["cost"]
    assert not any("autoModeFee" in row for row in with_fees.outputs["nodePools"])
    assert not any("Auto Mode fee" in w for w in with_fees.warnings)
