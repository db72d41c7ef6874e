"""The terminal summary of a synthesized stack: the resource tree and the node-pool table.

Both are computed from the desired-state document alone (``gpupools.synth.document``), so the
summary of a checked-in snapshot reads the same as the summary of a fresh synth.

The node-pool table comes from the stack's ``nodePools`` output (``NodePoolInfo.to_output()``),
one row per created pool (AKS agent pool) or node group (EKS managed node group, one per zone):

=================  ===========================================================================
column             meaning
=================  ===========================================================================
POOL               the ``gpuPools`` entry (``system`` for the system pool)
NODE POOL/GROUP    the cloud's name for the pool or node group
ROLE               system or gpu
CAPACITY           reserved (a node group in an EC2 capacity reservation), spot, on-demand, or
                   ``on-demand fallback`` (the on-demand group of a pool that has a Spot group);
                   for a Karpenter NodePool the allowed types, preferred first
                   (``spot>on-demand``, ``reserved>spot>on-demand``). Within a pool, rows are in
                   the order capacity is used: reserved, Spot, on-demand
ZONES              the zones it spans
INSTANCE TYPES     VM sizes / instance types
MIN, MAX           autoscaler bounds (nodes)
GPUS/NODE          physical GPUs on one node
SHARING            the pool's GPU sharing (``time-slicing x4``, ``mps x4``, ``mig MIG1g``; ``-`` for none)
SLOTS/NODE         ``nvidia.com/gpu`` one node advertises: GPUS/NODE x replicas or MIG instances per
                   GPU; what the scale-from-zero templates say, and how many GPU pods fit a node
GPUS AT MAX        MAX x GPUS/NODE: the most GPUs this pool can ever run
IDLE GPUS          MIN x GPUS/NODE: GPUs paid for even when no GPU pod runs (0 for scale-from-zero)
$/NODE-H           USD per node-hour of the pool's capacity type in the stack's region (Spot: a
                   recent observation, see the price catalog); ``no price (<why>)`` where the
                   catalog has none (the ``noPrice`` of the pool's ``nodePools`` entry); 0.0000
                   for reserved rows: the reservation is paid already, a node in it costs nothing extra
$/H AT MAX         MAX x $/NODE-H; ``no price`` where $/NODE-H has none
=================  ===========================================================================

The TOTAL row is the fleet's **ceiling** and **idle** state (``TOTAL_MEANING``), taken from the
``cost`` output's ``capacity`` block (``gpupools.capacity``, the one model the diff, the budget check
and Kueue's quotas use too): MAX, GPUS AT MAX and $/H AT MAX are the ceiling's nodes, GPUs and cost
(every row at MAX at once; a Karpenter/NAP NodePool once, at its limit and its dearest capacity),
MIN and IDLE GPUS the idle state's. A document without that block adds up the rows.

Under the table, the fleet's four states by the names ``gpupools.capacity.SCENARIO_NAMES`` gives
them (idle; at max, Spot first; at max, Spot gone; ceiling), each with nodes, GPUs, GPU slots,
its split by capacity type and USD per hour, and with ``gpupools:cost`` the monthly
estimate with its list-price saving and, next to it, the effective saving once evictions are
counted; the sizes without a price and why; then where the prices come from: the source, the date
the source collected them and the date gpupools read them (``PriceTable.provenance``). When that
source date is more than ``STALE_AFTER_DAYS`` before today, a warning names the region, the source
and the date (``price_warnings``; today is an argument, so tests fix it).

The default output fits ``WIDTH`` (160) columns, what a terminal beside an editor shows: the
resource tree folds each node group's cluster-autoscaler tags (``aws:autoscaling/tag:Tag``, one
per label, taint and resource) into one line (``FOLDED_TYPES``); the node-pool table keeps the
columns that differ between a pool's groups (``GROUP_COLUMNS``) and shows what a pool's groups
share once per pool (``SHAPE_COLUMNS``: role, instance types, GPUs, sharing); a row without a
price says ``no price [n]`` with the reason as footnote ``[n]`` under the table; longer lines
(the cost figures, the price source) wrap. ``render(..., wide=True)`` (``--wide``) prints
everything as before: one tree line per resource, every column in one table, reasons in the cells,
no wrapping.

``summary_data`` is the same summary as plain data (``python -m gpupools.synth <stack> --json``):
the ``nodePools`` and ``cost`` outputs as the stack exports them, each pool marked ``fallback``,
and the TOTAL figures.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Mapping, Sequence

POOL_COLUMNS = (
    "POOL",
    "NODE POOL/GROUP",
    "ROLE",
    "CAPACITY",
    "ZONES",
    "INSTANCE TYPES",
    "MIN",
    "MAX",
    "GPUS/NODE",
    "SHARING",
    "SLOTS/NODE",
    "GPUS AT MAX",
    "IDLE GPUS",
    "$/NODE-H",
    "$/H AT MAX",
)
NUMERIC_COLUMNS = frozenset(
    {
        "MIN",
        "MAX",
        "GPUS/NODE",
        "SLOTS/NODE",
        "GPUS AT MAX",
        "IDLE GPUS",
        "$/NODE-H",
        "$/H AT MAX",
        "LIMIT NODES",
        "LIMIT CPU",
        "LIMIT GPU",
    }
)
GROUP_COLUMNS = (
    "POOL",
    "NODE POOL/GROUP",
    "CAPACITY",
    "ZONES",
    "MIN",
    "MAX",
    "GPUS AT MAX",
    "IDLE GPUS",
    "$/NODE-H",
    "$/H AT MAX",
)
"""The default node-pool table: what differs between the groups of one pool, and the figures that add up."""
SHAPE_COLUMNS = ("POOL", "ROLE", "INSTANCE TYPES", "GPUS/NODE", "SHARING", "SLOTS/NODE")
"""The default pool-shape table: what every group of a pool shares, once per pool."""
WIDTH = 160
"""Columns the default output fits in (``--wide`` does not wrap or fold)."""
FOLDED_TYPES = frozenset({"aws:autoscaling/tag:Tag"})
"""Resource types the default tree shows as one line per parent-and-prefix (``<group>-*``), with their count."""
UNKNOWN_PRICE = "?"
NO_PRICE = "no price"
"""A table cell whose price the catalog lacks, followed by why when the ``nodePools`` entry says (``noPrice``)."""
STALE_AFTER_DAYS = 365
"""Prices whose source collected them more than this many days before today are warned about."""
FALLBACK = "on-demand fallback"
"""CAPACITY of an on-demand fallback row (``estimate.fallback_flags``)."""

TOTAL_MEANING = (
    "MAX, GPUS AT MAX and $/H AT MAX: the fleet's ceiling (every group at its max at once: reserved, Spot "
    "and fallbacks; a Karpenter/NAP NodePool once, at its limit and its dearest capacity); MIN and IDLE GPUS: "
    "the fleet idle (every group at minSize)"
)
"""What the TOTAL row (and ``total`` of the JSON summary) means, on every provisioner (``gpupools.capacity``)."""


def bounded_money(value: Any, known: Any, exact: bool, digits: int = 2, lower_only: bool = False) -> str:
    """A cost that may rest on unknown prices: ``12.35`` when exact, ``<=12.35`` when ``value`` is
    an upper bound (an unknown Spot price at on-demand), ``>=3.10`` when only the known part
    ``known`` is (an unknown price without a bound, or with ``lower_only`` an EKS Auto Mode fee the
    catalog lacks: every figure is then below what AWS charges)."""
    if lower_only and known is not None:
        return f">={money(known, digits)}"
    if exact or (value is None and known is None):
        return money(value, digits)
    return f"<={money(value, digits)}" if value is not None else f">={money(known, digits)}"


def dollars(amount: str) -> str:
    """``12.35`` -> ``$12.35``; ``<=12.35`` -> ``<=$12.35`` (``bounded_money``)."""
    return f"{amount[:2]}${amount[2:]}" if amount[:2] in ("<=", ">=") else f"${amount}"


def money(value: Any, digits: int = 2) -> str:
    """``12.3456`` -> ``12.35``; ``None`` (no price) -> ``?``."""
    return UNKNOWN_PRICE if value is None else f"{float(value):,.{digits}f}"


def price_cell(value: Any, why: Any = None, digits: int = 2) -> str:
    """A table cell: the price, or ``no price (<why>)`` (``no price`` without a reason)."""
    if value is not None:
        return money(value, digits)
    return f"{NO_PRICE} ({why})" if why else NO_PRICE


def price_warnings(cost: Mapping[str, Any] | None, today: date) -> list[str]:
    """Warnings about the prices of a ``cost`` output: one when the source collected them more than
    ``STALE_AFTER_DAYS`` days before ``today``, naming the region, the source and the date."""
    if not isinstance(cost, Mapping) or not cost.get("pricesSourceDate"):
        return []
    try:
        collected = date.fromisoformat(str(cost["pricesSourceDate"]))
    except ValueError:
        return []
    age = (today - collected).days
    if age <= STALE_AFTER_DAYS:
        return []
    return [
        f"Prices for {cost.get('region', '?')} are older than a year: {cost.get('priceSource', '?')} collected them on "
        f"{collected.isoformat()} ({age} days before {today.isoformat()}); Spot prices and sizes drift, refresh with "
        f"{cost.get('refresh', '')}"
    ]


def _fold_key(resource: Mapping[str, Any]) -> str:
    """The node group an ASG tag belongs to: its name before ``-label-``, ``-taint-`` or ``-resource-``
    (``aws.asg_tags`` names each ``<group>-<kind>-<key>``)."""
    name = str(resource["name"])
    cuts = [name.find(f"-{kind}-") for kind in ("label", "taint", "resource")]
    found = [cut for cut in cuts if cut > 0]
    return name[: min(found)] if found else name


def resource_tree(document: Mapping[str, Any], fold: bool = False) -> list[str]:
    """One line per resource, ``<type>  <name>``, indented two spaces per level under its parent.

    With ``fold``, the resources of a ``FOLDED_TYPES`` type under one parent are one line per node
    group: ``aws:autoscaling/tag:Tag  gpu1-od-us-west-2a-* (9: 7 labels, 1 resource, 1 taint)``."""
    resources = document.get("resources", [])
    known = {r["address"] for r in resources}
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for resource in resources:
        parent = resource.get("parent")
        children.setdefault(parent if parent in known else None, []).append(resource)
    lines: list[str] = []

    def folded_line(depth: int, type_: str, group: str, members: Sequence[Mapping[str, Any]]) -> str:
        kinds: dict[str, int] = {}
        for member in members:
            kind = str(member["name"])[len(group) + 1 :].split("-", 1)[0] or "?"
            kinds[kind] = kinds.get(kind, 0) + 1
        detail = ", ".join(f"{count} {kind}{'' if count == 1 else 's'}" for kind, count in sorted(kinds.items()))
        return f"{'  ' * depth}{type_}  {group}-*" + (f" ({len(members)}: {detail})" if len(members) > 1 else "")

    def walk(parent: str | None, depth: int) -> None:
        # In order: a resource (its line, then its children), or a folded group (one line).
        entries: list[Mapping[str, Any] | tuple[str, str]] = []
        folded: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for resource in sorted(children.get(parent, []), key=lambda r: (r["type"], r["name"])):
            if fold and resource["type"] in FOLDED_TYPES and not children.get(resource["address"]):
                key = (str(resource["type"]), _fold_key(resource))
                if key not in folded:
                    folded[key] = []
                    entries.append(key)
                folded[key].append(resource)
            else:
                entries.append(resource)
        for entry in entries:
            if isinstance(entry, tuple):
                lines.append(folded_line(depth, entry[0], entry[1], folded[entry]))
            else:
                lines.append(f"{'  ' * depth}{entry['type']}  {entry['name']}")
                walk(entry["address"], depth + 1)

    walk(None, 0)
    return lines


def fallbacks(node_pools: Sequence[Mapping[str, Any]]) -> list[bool]:
    """For each ``nodePools`` entry, True if it is an on-demand fallback (``estimate.fallback_flags``)."""
    from gpupools.conventions import CapacityType
    from gpupools.pricing.estimate import fallback_flags

    def capacity(pool: Mapping[str, Any]) -> CapacityType:
        value = pool.get("capacityType", "")
        return CapacityType(value) if value in {c.value for c in CapacityType} else CapacityType.ON_DEMAND

    return fallback_flags([(str(p.get("pool", "")), capacity(p)) for p in node_pools])


def fee_gap(pool: Mapping[str, Any]) -> str:
    """``>=`` before a priced EKS Auto Mode row whose fee is not in the price catalog
    (``autoModeFee`` null): its figure is the EC2 price alone, below what AWS charges."""
    return ">=" if "autoModeFee" in pool and pool["autoModeFee"] is None and pool.get("pricePerNodeHour") is not None else ""


def pool_rows(node_pools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table rows (column -> value) for the ``nodePools`` output, sorted by role, pool, capacity, name."""
    rows = []
    for pool, fallback in zip(node_pools, fallbacks(node_pools), strict=True):
        gpus = int(pool.get("gpusPerNode", 0) or 0)
        # Documents written before sharing existed have no gpuSlotsPerNode: one slot per GPU.
        slots = int(pool.get("gpuSlotsPerNode", gpus) or 0)
        min_size = int(pool.get("minSize", 0))
        max_size = int(pool.get("maxSize", 0))
        capacity = pool.get("capacityType", "")
        rows.append(
            {
                "POOL": pool.get("pool", ""),
                "NODE POOL/GROUP": pool.get("name", ""),
                "ROLE": pool.get("role", ""),
                # A Karpenter NodePool allows several capacity types, preferred first.
                "CAPACITY": ">".join(pool["capacityTypes"])
                if pool.get("capacityTypes")
                else (FALLBACK if fallback else capacity),
                "ZONES": ",".join(pool.get("zones", [])) or "-",
                "INSTANCE TYPES": ",".join(pool.get("instanceTypes", [])),
                "MIN": min_size,
                "MAX": max_size,
                "GPUS/NODE": gpus,
                "SHARING": pool.get("sharing") or "-",
                "SLOTS/NODE": slots,
                "GPUS AT MAX": gpus * max_size,
                "IDLE GPUS": gpus * min_size,
                # Documents written before prices existed have no price keys: shown as no price.
                # An EKS Auto Mode pool whose fee the catalog lacks (autoModeFee null): >= its EC2 price.
                "$/NODE-H": fee_gap(pool)
                + price_cell(pool.get("pricePerNodeHour"), pool.get("noPrice"), 4)
                + (f" (doubtful: {pool['doubtfulPrice']})" if pool.get("doubtfulPrice") else ""),
                "$/H AT MAX": fee_gap(pool) + price_cell(pool.get("costPerHourAtMax")),
            }
        )
    role_rank = {"system": 0, "gpu": 1, "cpu": 2}
    # The order capacity is used in: reserved, Spot, on-demand (estimate.CAPACITY_ORDER).
    capacity_rank = {"reserved": -1, "spot": 0, "on-demand": 1, FALLBACK: 1}
    rows.sort(
        key=lambda r: (
            role_rank.get(r["ROLE"], 2),
            r["POOL"],
            capacity_rank.get(r["CAPACITY"], 2),
            r["NODE POOL/GROUP"],
        )
    )
    return rows


LIMIT_COLUMNS = ("POOL", "NODEPOOL", "CAPACITY", "LIMIT NODES", "LIMIT CPU", "LIMIT GPU")
"""The Karpenter table: each NodePool's ``spec.limits`` (what enforces the pool's ``maxSize``)."""


def limit_rows(node_pools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per Karpenter NodePool (entries of ``nodePools`` that carry ``limits``), sorted by pool."""
    rows = []
    for pool in node_pools:
        limits = pool.get("limits")
        if not limits:
            continue
        rows.append(
            {
                "POOL": pool.get("pool", ""),
                "NODEPOOL": pool.get("name", ""),
                "CAPACITY": ">".join(pool.get("capacityTypes", [])),
                "LIMIT NODES": limits.get("nodes", "-"),
                "LIMIT CPU": limits.get("cpu", "-"),
                "LIMIT GPU": limits.get("nvidia.com/gpu", "-"),
            }
        )
    return sorted(rows, key=lambda r: r["POOL"])


def fleet_total(node_pools: Sequence[Mapping[str, Any]], cost: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The TOTAL figures (``TOTAL_MEANING``) as numbers: the ``cost`` output's ``capacity`` block
    (``gpupools.capacity``): ``maxSize``, ``gpusAtMax``, ``gpuSlotsAtMax`` and ``costPerHourAtMax``
    are the ceiling's, ``minSize`` and ``idleGpus`` the idle state's. A document written before that
    block existed adds up every ``nodePools`` entry (its ``costPerHourAtMax``, ``None`` when one is unknown).
    """
    figures = cost.get("capacity") if isinstance(cost, Mapping) else None
    if isinstance(figures, Mapping) and "ceiling" in figures and "idle" in figures:
        ceiling, idle = figures["ceiling"], figures["idle"]
        return {
            "meaning": TOTAL_MEANING,
            "minSize": idle["nodes"],
            "maxSize": ceiling["nodes"],
            "gpusAtMax": ceiling["gpus"],
            "gpuSlotsAtMax": ceiling["gpuSlots"],
            "idleGpus": idle["gpus"],
            "costPerHourAtMax": ceiling["costPerHour"],
            # Documents written before bounds existed: a known cost is exact.
            "costExact": ceiling.get("costExact", ceiling["costPerHour"] is not None),
            "costPerHourKnown": ceiling.get("costPerHourKnown", ceiling["costPerHour"]),
            # EKS Auto Mode with a fee the catalog lacks: the figure is below what AWS charges.
            "feeMissing": ceiling.get("autoModeFeeIncluded") is False,
        }

    def gpus(pool: Mapping[str, Any], key: str) -> int:
        return int(pool.get("gpusPerNode", 0) or 0) * int(pool.get(key, 0) or 0)

    costs = [p.get("costPerHourAtMax") for p in node_pools]
    known = [float(c) for c in costs if c is not None]
    return {
        "meaning": TOTAL_MEANING,
        "minSize": sum(int(p.get("minSize", 0) or 0) for p in node_pools),
        "maxSize": sum(int(p.get("maxSize", 0) or 0) for p in node_pools),
        "gpusAtMax": sum(gpus(p, "maxSize") for p in node_pools),
        "gpuSlotsAtMax": sum(
            int(p.get("gpuSlotsPerNode", p.get("gpusPerNode", 0)) or 0) * int(p.get("maxSize", 0) or 0) for p in node_pools
        ),
        "idleGpus": sum(gpus(p, "minSize") for p in node_pools),
        "costPerHourAtMax": round(sum(known), 4) if len(known) == len(costs) else None,
        # no bounds in such a document: a figure is exact or not computed ("no price")
        "costExact": True,
        "costPerHourKnown": round(sum(known), 4) if len(known) == len(costs) else None,
    }


def totals(node_pools: Sequence[Mapping[str, Any]], cost: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The TOTAL row of the table (``fleet_total``); per-node columns are blank, they do not add up.

    The row says in itself when it is not the sum of the column above it (``NOT_A_SUM``: a
    Karpenter/NAP NodePool counted once at its limit and dearest capacity) and when its cost is a
    bound (``bounded_money``: ``<=`` an upper bound, ``>=`` the known part)."""
    figures = fleet_total(node_pools, cost)
    total: dict[str, Any] = dict.fromkeys(POOL_COLUMNS, "")
    total["POOL"] = "TOTAL"
    total["MIN"] = figures["minSize"]
    total["MAX"] = figures["maxSize"]
    total["GPUS AT MAX"] = figures["gpusAtMax"]
    total["IDLE GPUS"] = figures["idleGpus"]
    exact = figures["costExact"]
    value = figures["costPerHourAtMax"]
    fee_missing = bool(figures.get("feeMissing"))
    total["$/H AT MAX"] = (
        price_cell(value)
        if exact and not fee_missing
        else bounded_money(value, figures["costPerHourKnown"], exact, lower_only=fee_missing)
    )
    rows = [r for r in pool_rows(node_pools)]
    cost_sum = sum(float(p.get("costPerHourAtMax") or 0.0) for p in node_pools)
    summed = (
        sum(int(r["MIN"]) for r in rows) == figures["minSize"]
        and sum(int(r["MAX"]) for r in rows) == figures["maxSize"]
        and sum(int(r["GPUS AT MAX"]) for r in rows) == figures["gpusAtMax"]
        # with a row unpriced, its cell says so and the total is a bound (``<=``/``>=``), not a sum anyway
        and (
            figures["costPerHourAtMax"] is None
            or any(p.get("costPerHourAtMax") is None for p in node_pools)
            or abs(cost_sum - float(figures["costPerHourAtMax"])) < 0.005
        )
    )
    if not summed:
        total["NODE POOL/GROUP"] = NOT_A_SUM
    return total


NOT_A_SUM = "(ceiling, not a sum)"
"""What the TOTAL row says in its NODE POOL/GROUP cell when a figure of it is not the sum of the
column above: the ceiling counts a Karpenter/NAP NodePool once, at its limit and dearest capacity."""


def upgrade_lines(estimate: Mapping[str, Any]) -> list[str]:
    """The lines for the ``upgrade`` output (AKS: ``gpupools.azure.upgrade.upgrade_estimate``)."""
    pools = ", ".join(f"{p['name']} {p['minutes']}" for p in estimate.get("pools") or [] if p.get("minutes"))
    lines = [
        f"Kubernetes minor upgrade, worst case: {estimate.get('worstCaseMinutes')} min (control plane "
        f"{estimate.get('controlPlaneMinutes')}; {pools or 'no pool nodes'}; every pool at its max, every drain at its "
        f"timeout, {estimate.get('perNodeMinutesAssumed')} min per batch assumed besides the drain)"
    ]
    if not estimate.get("fitsDeployJob", True):
        lines.append(
            f"Longer than the deploy job's {estimate.get('deployJobTimeoutMinutes')} min: upgrade the pools in later "
            'targeted ups (docs/aks.md, "Upgrades that outlast the deploy job")'
        )
    return lines


def cost_lines(cost: Mapping[str, Any]) -> list[str]:
    """The fleet's cost figures from the ``cost`` output, one per line, with their provenance."""
    lines = state_lines(cost)
    lines += unknown_lines(cost)
    fee = cost.get("autoModeFee")
    if isinstance(fee, Mapping):  # EKS Auto Mode stacks (gpupools.pricing.estimate)
        lines.append(str(fee.get("note", "")))
    if isinstance(cost.get("warm"), Mapping):
        from gpupools.pricing.warm import warm_lines

        lines += warm_lines(dict(cost["warm"]))
    if cost.get("budgetPerHour") is not None:
        exact = (cost.get("exact") or {}).get("ceiling", True)
        against = "the ceiling" if exact else "the ceiling's upper bound (unknown Spot prices at on-demand)"
        lines.append(f"Budget: {money(cost.get('budgetPerHour'))} per hour (checked against {against})")
    if cost.get("gpuHoursPerMonth") is not None:
        savings = cost.get("savingsPercent")
        bounded = bool(cost.get("unknownParts")) and cost.get("monthly") is not None
        at_most, at_least = ("<=", ">=") if bounded else ("", "")
        fee = cost.get("autoModeFee")
        if isinstance(fee, Mapping) and fee.get("included") is False and cost.get("monthly") is not None:
            # Without the Auto Mode fee the month is below what AWS charges, and the saving above it
            # (the fee is paid on Spot and on-demand hours alike); with unknown Spot prices too, neither.
            at_most, at_least = ("~", "~") if bounded else (">=", "<=")
        lines.append(
            f"Monthly estimate, {cost['gpuHoursPerMonth']:g} GPU node-hours{_cpu_hours(cost)} at "
            f"{100 * float(cost.get('spotShare', 1.0)):g}% Spot "
            f"plus idle all month: {at_most}{money(cost.get('monthly'))} (all on-demand: {money(cost.get('monthlyAllOnDemand'))}; "
            f"savings {at_least}{_percent(savings)} at list prices)"
        )
        rates = cost.get("evictionRates") or {}
        if "monthlyWithEvictions" in cost:
            shown = ", ".join(f"{pool} {100 * float(rate):g}%" for pool, rate in rates.items()) or "none"
            lines.append(
                f"With evictions (Spot runs interrupted: {shown}; {100 * float(cost.get('redoneShare', 0.5)):g}% of an "
                f"interrupted run redone): {at_most}{money(cost.get('monthlyWithEvictions'))}; effective savings "
                f"{at_least}{_percent(cost.get('effectiveSavingsPercent'))} against all on-demand"
            )
    unpriced = cost.get("unpriced") or []
    if unpriced:
        reasons = cost.get("unpricedReasons") or {}
        named = "; ".join(f"{entry}: {reasons[entry]}" if entry in reasons else entry for entry in unpriced)
        lines.append(f"No price for {named}; refresh with {cost.get('refresh', '')}")
    order = cost.get("priorityOrder") or {}
    if "reserved" in order:
        lines.append(
            "Reserved groups (capacity reservations) are used first, then Spot, then on-demand; a reserved node "
            "costs nothing extra per hour (the reservation's own fee is not included)"
        )
    by_size = [capacity for capacity, basis in order.items() if basis != "price" and capacity != "reserved"]
    ordered = str(cost.get("priorityOrderOf", "priority expander"))
    if by_size and ordered == "priority expander":  # Karpenter/NAP have no priority expander
        lines.append(f"Priority expander: {', '.join(by_size)} pools ordered by size facts (a price is unknown)")
    elif by_size:
        lines.append(f"{ordered[0].upper()}{ordered[1:]}: pools ordered by size facts (a price is unknown)")
    if cost.get("priceSource"):
        lines.append(
            f"Prices for {cost.get('region', '?')}: collected by their source {cost.get('pricesSourceDate', '?')}, "
            f"read by gpupools {cost.get('pricesReadOn', '?')}; source: {cost['priceSource']}"
        )
        lines += [f"Priced from another source: {note}" for note in cost.get("priceNotes") or ()]
        lines.append(
            f"Spot: {cost.get('spotBasis', '?')}. Not included: disks, egress, control plane, NAT, load balancers, discounts."
        )
    else:  # a document written before the cost output named its source
        lines.append(
            f"Prices read {cost.get('pricesReadOn', '?')}; Spot: {cost.get('spotBasis', '?')}. "
            "Not included: disks, egress, control plane, NAT, load balancers, discounts."
        )
    return lines


def unknown_lines(cost: Mapping[str, Any]) -> list[str]:
    """What the fleet's figures rest on besides known prices: each pool whose price is unknown (why,
    and the bound it is counted at: ``<=`` figures are upper bounds, ``>=`` known parts), and each
    doubtful Spot figure kept and used."""
    lines = [f"Unknown price, pool {pool}: {why}" for pool, why in (cost.get("unknownParts") or {}).items()]
    lines += [f"Doubtful price, used: {note}" for note in cost.get("doubtfulPrices") or ()]
    return lines


def state_lines(cost: Mapping[str, Any]) -> list[str]:
    """The fleet's four states (``gpupools.capacity``), one line each under its one name: nodes (by
    capacity type), GPUs, GPU slots and USD per hour; a document without the ``capacity`` block
    gets its per-hour figures only."""
    from gpupools.capacity import CAPACITY_KEYS, SCENARIO_MEANINGS, SCENARIO_NAMES, Scenario

    CAPACITY_NAMES = {key: capacity.value for capacity, key in CAPACITY_KEYS.items()}

    region = cost.get("region", "?")
    figures = cost.get("capacity")
    if not isinstance(figures, Mapping):
        keys = {
            Scenario.IDLE: "idlePerHour",
            Scenario.SPOT_FIRST: "spotAtMaxPerHour",
            Scenario.SPOT_GONE: "onDemandInsteadAtMaxPerHour",
            Scenario.CEILING: "ceilingPerHour",
        }
        shown = "; ".join(f"{SCENARIO_NAMES[s]} {money(cost.get(k))}" for s, k in keys.items())
        return [f"Fleet, USD per hour in {region}: {shown}"]
    lines = [f"Fleet in {region} (nodes, GPUs, GPU slots, USD per hour):"]
    width = max(len(name) for name in SCENARIO_NAMES.values())
    for scenario in Scenario:
        figure = figures.get(scenario.value) or {}
        split = ", ".join(f"{n} {CAPACITY_NAMES.get(c, c)}" for c, n in (figure.get("byCapacity") or {}).items())
        lines.append(
            f"  {SCENARIO_NAMES[scenario].ljust(width)}  {figure.get('nodes', '?')} nodes{f' ({split})' if split else ''}, "
            f"{figure.get('gpus', '?')} GPUs, {figure.get('gpuSlots', '?')} GPU slots, "
            f"{dollars(bounded_money(figure.get('costPerHour'), figure.get('costPerHourKnown'), figure.get('costExact', True), lower_only=figure.get('autoModeFeeIncluded') is False))}/h "
            f"({SCENARIO_MEANINGS[scenario]})"
        )
    return lines


def _percent(value: Any) -> str:
    return "?" if value is None else f"{value:g}%"


def zones_cell(zones: Sequence[str]) -> str:
    """Zones, the common prefix written once: ``us-west-2a,b,c`` (Azure's ``1,2,3`` unchanged)."""
    if len(zones) < 2:
        return ",".join(zones) or "-"
    prefix = zones[0][:-1]
    if all(len(z) == len(zones[0]) and z.startswith(prefix) for z in zones) and prefix:
        return zones[0] + "," + ",".join(z[-1] for z in zones[1:])
    return ",".join(zones)


def with_footnotes(rows: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``rows`` with each ``no price (<why>)`` cell as ``no price [n]`` (and a doubtful figure's
    ``0.4722 (doubtful: <why>)`` as ``0.4722 [n]``) and the footnotes ``[n] <why>``,
    one per distinct reason, numbered in row order; and ZONES written with ``zones_cell``."""
    notes: list[str] = []
    out = []
    for row in rows:
        row = dict(row)
        zones = str(row.get("ZONES", "-"))
        row["ZONES"] = zones_cell(zones.split(",")) if zones != "-" else "-"
        for column in ("$/NODE-H", "$/H AT MAX"):
            cell = str(row.get(column, ""))
            # "no price (<why>)", or a doubtful figure "0.4722 (doubtful: <why>)"
            if " (" in cell and cell.endswith(")"):
                head, why = cell[:-1].split(" (", 1)
                if why not in notes:
                    notes.append(why)
                row[column] = f"{head} [{notes.index(why) + 1}]"
        out.append(row)
    return out, [f"[{n}] {why}" for n, why in enumerate(notes, 1)]


def shape_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per pool (``SHAPE_COLUMNS``), in table order; a pool whose groups differ in shape
    (a Karpenter NodePool beside node groups) gets one row per distinct shape."""
    seen: list[tuple[str, ...]] = []
    out = []
    for row in rows:
        shape = tuple(str(row.get(c, "")) for c in SHAPE_COLUMNS)
        if shape not in seen:
            seen.append(shape)
            out.append({c: row.get(c, "") for c in SHAPE_COLUMNS})
    return out


def wrap(line: str, width: int = WIDTH) -> list[str]:
    """``line`` in lines of at most ``width`` characters, broken at spaces, continuation lines
    indented two more than the first; a word longer than a line (a URL) stays whole."""
    import textwrap

    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    return textwrap.wrap(
        line.strip(),
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] = POOL_COLUMNS,
    footer: Mapping[str, Any] | None = None,
) -> list[str]:
    """A plain-text table: left-aligned text, right-aligned numbers, rules under the header and above the footer."""
    cells = [[str(row.get(c, "")) for c in columns] for row in [*rows, *([footer] if footer else [])]]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(widths[i]) if columns[i] in NUMERIC_COLUMNS else v.ljust(widths[i]) for i, v in enumerate(values)]
        return "  ".join(parts).rstrip()

    rule = line(["-" * w for w in widths])
    body = [line(r) for r in cells]
    if footer:
        body.insert(len(body) - 1, rule)
    return [line(columns), rule, *body]


def render(
    document: Mapping[str, Any],
    *,
    files: Sequence[str] = (),
    tree: bool = True,
    today: date | None = None,
    wide: bool = False,
    program_warnings: Sequence[str] = (),
) -> str:
    """The whole summary: header, resource tree (unless ``tree=False``), node-pool table, cost lines,
    warnings about the prices as of ``today`` (default: the system date), what the program warned
    about (``program_warnings``: ``Run.warnings``, as ``pulumi up`` would show them), files written.

    Default: at most ``WIDTH`` columns (tags folded, the table split into groups and pool shapes,
    price reasons as footnotes, long lines wrapped); ``wide``: every resource, column and reason
    on its own line, nothing wrapped."""
    resources = document.get("resources", [])
    outputs = document.get("outputs", {})
    custom = sum(1 for r in resources if r.get("custom"))
    kubernetes = sum(1 for r in resources if str(r.get("type", "")).startswith("kubernetes:") and r.get("custom"))
    lines = [
        f"Stack {document.get('stack', '?')}: cluster {outputs.get('clusterName', '?')}, "
        f"{len(resources)} resources ({custom} custom, {len(resources) - custom} components), "
        f"{kubernetes} Kubernetes resources",
    ]
    if tree:
        lines += ["", "Resources:"]
        lines += ["  " + line for line in resource_tree(document, fold=not wide)]
    node_pools = outputs.get("nodePools")
    cost = outputs.get("cost")
    lines += ["", "Node pools:"]
    if isinstance(node_pools, list) and node_pools:
        rows = pool_rows(node_pools)
        footer = totals(node_pools, cost if isinstance(cost, Mapping) else None)
        if wide:
            lines += ["  " + line for line in format_table(rows, footer=footer)]
        else:
            grouped, notes = with_footnotes(rows)
            lines += ["  " + line for line in format_table(grouped, GROUP_COLUMNS, footer=footer)]
            lines += ["  " + note for note in notes]
            lines += ["", "Pool shapes (every group of a pool has these; --wide shows them per group):"]
            lines += ["  " + line for line in format_table(shape_rows(rows), SHAPE_COLUMNS)]
        lines += [
            "",
            "  GPUS AT MAX = MAX x GPUS/NODE; IDLE GPUS = MIN x GPUS/NODE (paid for while no GPU pod runs);",
            "  SLOTS/NODE = nvidia.com/gpu per node with the pool's SHARING (what the autoscaler is told).",
            "  TOTAL: MAX, GPUS AT MAX and $/H AT MAX are the fleet's ceiling (every row at MAX at once; a",
            "  Karpenter/NAP NodePool once, at its limit and dearest capacity); MIN and IDLE GPUS the fleet idle.",
            *(
                ["  Reserved rows: nodes in capacity reservations, used first, at no extra cost per hour."]
                if any(p.get("capacityType") == "reserved" for p in node_pools)
                else []
            ),
        ]
        limited = limit_rows(node_pools)
        if limited:
            lines += ["", "Karpenter NodePools (spec.limits enforce MAX; CAPACITY in order of preference):"]
            lines += ["  " + line for line in format_table(limited, LIMIT_COLUMNS)]
        if isinstance(cost, Mapping):
            lines += [""] + ["  " + line for line in cost_lines(cost)]
            lines += ["  Warning: " + warning for warning in price_warnings(cost, today or date.today())]
        upgrade = outputs.get("upgrade")
        if isinstance(upgrade, Mapping):
            lines += [""] + ["  " + line for line in upgrade_lines(upgrade)]
    else:
        lines.append("  (no nodePools stack output)")
    if program_warnings:
        lines += ["", "The program warns (pulumi up shows these too):"] + [f"  Warning: {w}" for w in program_warnings]
    if files:
        lines += ["", "Wrote:"] + [f"  {f}" for f in files]
    if not wide:
        lines = [part for line in lines for part in wrap(line)]
    return "\n".join(lines) + "\n"


def summary_data(
    document: Mapping[str, Any], *, files: Sequence[str] = (), today: date | None = None, program_warnings: Sequence[str] = ()
) -> dict[str, Any]:
    """The summary as plain data (``--json``), from the same document as ``render``.

    Keys: ``stack``, ``clusterName``, ``resources`` (counts), ``nodePools`` (the stack output as
    exported: one entry per node group, agent pool or Karpenter NodePool, with ``pricePerNodeHour``
    and ``costPerHourAtMax``, plus ``fallback``), ``total`` (``fleet_total``), ``cost`` (the stack's
    ``cost`` output: ``idlePerHour``, ``spotAtMaxPerHour``, ``onDemandInsteadAtMaxPerHour``,
    ``ceilingPerHour``, ``monthly``, ``monthlyWithEvictions``, ``effectiveSavingsPercent``,
    ``unpricedReasons``, ``priceSource``, ``pricesSourceDate``, ``pricesReadOn``, ...; ``null`` without
    one), ``upgrade`` (AKS: the worst-case minor upgrade, ``gpupools.azure.upgrade``; ``null`` elsewhere), ``warnings`` (``price_warnings`` as of ``today``, default the system date), ``programWarnings`` (what
    the program warned about, ``Run.warnings``) and ``files`` written.
    A pool without a price carries ``noPrice``: why.
    """
    resources = document.get("resources", [])
    outputs = document.get("outputs", {})
    custom = sum(1 for r in resources if r.get("custom"))
    kubernetes = sum(1 for r in resources if str(r.get("type", "")).startswith("kubernetes:") and r.get("custom"))
    node_pools = outputs.get("nodePools")
    node_pools = node_pools if isinstance(node_pools, list) else []
    cost = outputs.get("cost")
    cost = dict(cost) if isinstance(cost, Mapping) else None
    return {
        "stack": document.get("stack"),
        "clusterName": outputs.get("clusterName"),
        "resources": {
            "total": len(resources),
            "custom": custom,
            "components": len(resources) - custom,
            "kubernetes": kubernetes,
        },
        "nodePools": [{**pool, "fallback": fallback} for pool, fallback in zip(node_pools, fallbacks(node_pools), strict=True)],
        "total": fleet_total(node_pools, cost),
        "cost": cost,
        "upgrade": outputs.get("upgrade"),
        "warnings": price_warnings(cost, today or date.today()),
        "programWarnings": list(program_warnings),
        "files": list(files),
    }


def _cpu_hours(cost: Mapping[str, Any]) -> str:
    """``" and N CPU node-hours"`` when the monthly estimate counts CPU work (``cpuNodeHoursPerMonth``)."""
    hours = float(cost.get("cpuNodeHoursPerMonth") or 0)
    return f" and {hours:g} CPU node-hours" if hours else ""
