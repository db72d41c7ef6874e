"""Issue 48, 5.: the monthly estimate counts CPU work too (``gpupools:cost.cpuNodeHoursPerMonth``) and
the summary calls the hours what they are (node-hours). Before, a CPU-heavy stack's estimate held
its CPU pools' idle nodes only."""

from __future__ import annotations

from typing import Any

import pytest
from gpupools.catalog.prices import price_table
from gpupools.specs import Cloud
from gpupools.synth.summary import cost_lines
from gpupools.testing import run_stack, stack_config

SPOT_SHARE = 0.75


def cost_of(stack: str, **extra: float) -> dict[str, Any]:
    cost = {**(stack_config(stack).get("gpupools:cost") or {}), "gpuHoursPerMonth": 100, "spotShare": SPOT_SHARE, **extra}
    return dict(run_stack(stack, overrides={"gpupools:cost": cost}).outputs["cost"])


def test_cpu_node_hours_are_priced_at_the_cpu_pools_own_prices() -> None:
    """aws-dev's one CPU pool, ``general``, by hand from the price table: a node-hour of a group is
    its dearest type's price; 75% of the hours at Spot, the rest on-demand."""
    before, after = cost_of("aws-dev"), cost_of("aws-dev", cpuNodeHoursPerMonth=200)
    [pool] = stack_config("aws-dev")["gpupools:cpuPools"]
    table = price_table(Cloud.AWS)
    prices = [table.price("us-west-2", size) for size in pool["instanceTypes"]]
    spot = max(p.spot for p in prices)
    on_demand = max(p.on_demand for p in prices)
    expected = 200 * (SPOT_SHARE * spot + (1 - SPOT_SHARE) * on_demand)
    assert after["monthly"] - before["monthly"] == pytest.approx(expected, abs=0.02)
    assert after["monthlyAllOnDemand"] - before["monthlyAllOnDemand"] == pytest.approx(200 * on_demand, abs=0.02)
    assert after["cpuNodeHoursPerMonth"] == 200


def test_the_summary_names_both_kinds_of_node_hours() -> None:
    line = next(line for line in cost_lines(cost_of("aws-dev", cpuNodeHoursPerMonth=200)) if line.startswith("Monthly"))
    assert line.startswith("Monthly estimate, 100 GPU node-hours and 200 CPU node-hours at 75% Spot")
    without = next(line for line in cost_lines(cost_of("aws-dev")) if line.startswith("Monthly"))
    assert "CPU node-hours" not in without and "GPU node-hours" in without
