"""What warm pools cost (``gpuPools[].warm``, ``gpupools.warm``): per pool, per hour while the
buffer is kept and per month under its schedule. Kept apart from the fleet figures on purpose: the
warm nodes are inside each pool's ``maxSize`` (``gpupools.warm.check_warm``), so the ceiling that
``gpupools:cost.budgetPerHour`` is checked against already counts them; what a buffer adds is the
floor, the idle cost while the schedule is open, shown here and in the ``cost`` output's ``warm``.

A warm node is bought as the pool buys its first node: from its reservations first (0 extra, up to
the reserved count), then Spot where the pool buys Spot, else on-demand (the priority expander's and
Karpenter's order, ``gpupools.pricing.estimate.CAPACITY_ORDER``). An idle Spot node is billed at
the Spot price like any other. On EKS Auto Mode a warm node also pays the Auto Mode fee of its size
when the price catalog has it (``gpupools.pricing.estimate.node_price``).
"""

from __future__ import annotations

from typing import Any, Sequence

from gpupools.catalog.prices import PriceTable
from gpupools.conventions import CapacityType
from gpupools.pricing.estimate import RESERVED_PRICE, node_price
from gpupools.specs import PoolSpec
from gpupools.warm import open_hours_per_month, open_hours_per_week


def reserved_nodes(pool: PoolSpec) -> int:
    """Nodes the pool's reservations hold (each ``count``, else the pool's ``maxSize``)."""
    return sum(r.reserved_max(pool.max_size) for r in pool.reservations)


def warm_pool_cost(pool: PoolSpec, table: PriceTable, region: str, auto_mode: bool = False) -> dict[str, Any]:
    """One warm pool's figures: nodes, how they are bought, USD per hour while kept, hours and USD
    per month (``None`` where a price is unknown); ``auto_mode``: an EKS Auto Mode stack's pool."""
    warm = pool.warm
    assert warm is not None
    capacity = CapacityType.SPOT if pool.spot else CapacityType.ON_DEMAND
    price = node_price(table, region, pool.instance_types, capacity, auto_mode=auto_mode)
    reserved = min(reserved_nodes(pool), warm.nodes)
    bought = warm.nodes - reserved
    per_hour = None if price is None and bought else reserved * RESERVED_PRICE + bought * (price or 0.0)
    hours = open_hours_per_month(warm)
    return {
        "nodes": warm.nodes,
        "capacityType": capacity.value,
        "reservedNodes": reserved,
        "pricePerNodeHour": None if price is None else round(price, 4),
        "perHour": None if per_hour is None else round(per_hour, 4),
        "hoursPerWeek": round(open_hours_per_week(warm), 2),
        "hoursPerMonth": round(hours, 1),
        "monthly": None if per_hour is None else round(per_hour * hours, 2),
        "schedule": None
        if warm.schedule is None
        else {
            "days": [d.value for d in warm.schedule.days],
            "start": warm.schedule.start,
            "end": warm.schedule.end,
            "timeZone": warm.schedule.time_zone,
        },
    }


def warm_costs(pools: Sequence[PoolSpec], table: PriceTable, region: str, auto_mode: bool = False) -> dict[str, Any] | None:
    """The ``cost`` output's ``warm`` block: per warm pool and in total; None without warm pools."""
    rows = {pool.name: warm_pool_cost(pool, table, region, auto_mode) for pool in pools if pool.warm is not None}
    if not rows:
        return None
    per_hour = [row["perHour"] for row in rows.values()]
    monthly = [row["monthly"] for row in rows.values()]
    return {
        "pools": rows,
        "perHourAllOpen": None if None in per_hour else round(sum(per_hour), 4),
        "monthly": None if None in monthly else round(sum(monthly), 2),
    }


def warm_lines(warm: dict[str, Any]) -> list[str]:
    """The synth summary's lines for the ``warm`` block."""
    lines = ["Warm GPU capacity (kept idle for the next pod; inside maxSize, so the ceiling already counts it):"]
    for name, row in warm["pools"].items():
        per_hour = "no price" if row["perHour"] is None else f"${row['perHour']:,.2f}/h"
        monthly = "no price" if row["monthly"] is None else f"${row['monthly']:,.2f}/month"
        when = (
            "always"
            if row["schedule"] is None
            else (
                f"{','.join(d[:3] for d in row['schedule']['days'])} {row['schedule']['start']}-{row['schedule']['end']} "
                f"{row['schedule']['timeZone']}"
            )
        )
        lines.append(
            f"  {name}: {row['nodes']} node(s) {row['capacityType']}, {per_hour} while kept, "
            f"{when} ({row['hoursPerMonth']:g} h/month): {monthly}"
        )
    return lines


def with_warm_costs(cost: dict[str, Any], spec: Any, region: str) -> dict[str, Any]:
    """The stack's ``cost`` output plus ``warm`` (``warm_costs``) when the stack has warm pools;
    unchanged otherwise (existing stacks' outputs stay byte for byte the same)."""
    from gpupools.catalog.prices import price_table
    from gpupools.specs import Provisioner

    block = warm_costs(spec.gpu_pools, price_table(spec.cloud), region, spec.provisioner is Provisioner.AUTO_MODE)
    return cost if block is None else {**cost, "warm": block}
