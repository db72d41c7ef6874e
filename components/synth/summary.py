"""The terminal summary of a synthesized stack: the resource tree and the node-pool table.

Both are computed from the desired-state document alone (``components.synth.document``), so the
summary of a checked-in snapshot reads the same as the summary of a fresh synth.

The node-pool table comes from the stack's ``nodePools`` output (``NodePoolInfo.to_output()``),
one row per created pool (AKS agent pool) or node group (EKS managed node group, one per zone):

=================  ===========================================================================
column             meaning
=================  ===========================================================================
POOL               the ``gpuPools`` entry (``system`` for the system pool)
NODE POOL/GROUP    the cloud's name for the pool or node group
ROLE               system or gpu
CAPACITY           spot or on-demand; for a Karpenter NodePool the allowed types, preferred first
                   (``spot>on-demand``)
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
                   recent observation, see the price catalog); ``?`` where the catalog has none
$/H AT MAX         MAX x $/NODE-H
=================  ===========================================================================

Under the table, the stack's ``cost`` output: the fleet at max all Spot, at max with on-demand
fallbacks instead, the ceiling (every group at max), idle, and with ``gpupools:cost`` the monthly
estimate and its savings; then where the prices come from and how to refresh them.
"""

from __future__ import annotations

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
UNKNOWN_PRICE = "?"


def money(value: Any, digits: int = 2) -> str:
    """``12.3456`` -> ``12.35``; ``None`` (no price) -> ``?``."""
    return UNKNOWN_PRICE if value is None else f"{float(value):,.{digits}f}"


def resource_tree(document: Mapping[str, Any]) -> list[str]:
    """One line per resource, ``<type>  <name>``, indented two spaces per level under its parent."""
    resources = document.get("resources", [])
    known = {r["address"] for r in resources}
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for resource in resources:
        parent = resource.get("parent")
        children.setdefault(parent if parent in known else None, []).append(resource)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for resource in sorted(children.get(parent, []), key=lambda r: (r["type"], r["name"])):
            lines.append(f"{'  ' * depth}{resource['type']}  {resource['name']}")
            walk(resource["address"], depth + 1)

    walk(None, 0)
    return lines


def pool_rows(node_pools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table rows (column -> value) for the ``nodePools`` output, sorted by role, pool, capacity, name."""
    rows = []
    for pool in node_pools:
        gpus = int(pool.get("gpusPerNode", 0) or 0)
        # Documents written before sharing existed have no gpuSlotsPerNode: one slot per GPU.
        slots = int(pool.get("gpuSlotsPerNode", gpus) or 0)
        min_size = int(pool.get("minSize", 0))
        max_size = int(pool.get("maxSize", 0))
        rows.append(
            {
                "POOL": pool.get("pool", ""),
                "NODE POOL/GROUP": pool.get("name", ""),
                "ROLE": pool.get("role", ""),
                # A Karpenter NodePool allows several capacity types, preferred first.
                "CAPACITY": ">".join(pool["capacityTypes"]) if pool.get("capacityTypes") else pool.get("capacityType", ""),
                "ZONES": ",".join(pool.get("zones", [])) or "-",
                "INSTANCE TYPES": ",".join(pool.get("instanceTypes", [])),
                "MIN": min_size,
                "MAX": max_size,
                "GPUS/NODE": gpus,
                "SHARING": pool.get("sharing") or "-",
                "SLOTS/NODE": slots,
                "GPUS AT MAX": gpus * max_size,
                "IDLE GPUS": gpus * min_size,
                # Documents written before prices existed have no price keys: shown as unknown.
                "$/NODE-H": money(pool.get("pricePerNodeHour"), 4),
                "$/H AT MAX": money(pool.get("costPerHourAtMax")),
            }
        )
    role_rank = {"system": 0, "gpu": 1, "cpu": 2}
    capacity_rank = {"spot": 0, "on-demand": 1}
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


def totals(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The TOTAL row: sums of the numeric columns (per-node columns are left blank, they do not add up)."""
    total: dict[str, Any] = dict.fromkeys(POOL_COLUMNS, "")
    total["POOL"] = "TOTAL"
    for column in ("MIN", "MAX", "GPUS AT MAX", "IDLE GPUS"):
        total[column] = sum(int(r[column]) for r in rows)
    # Every group at max at once: the ceiling of the cost output.
    at_max = [r["$/H AT MAX"] for r in rows]
    total["$/H AT MAX"] = UNKNOWN_PRICE if UNKNOWN_PRICE in at_max else money(sum(float(v.replace(",", "")) for v in at_max))
    return total


def cost_lines(cost: Mapping[str, Any]) -> list[str]:
    """The fleet's cost figures from the ``cost`` output, one per line, with their provenance."""
    lines = [
        f"Fleet cost, USD per hour in {cost.get('region', '?')}: at max all Spot {money(cost.get('spotAtMaxPerHour'))}; "
        f"at max with on-demand fallbacks instead of Spot {money(cost.get('onDemandInsteadAtMaxPerHour'))}; "
        f"ceiling (every pool and fallback at max) {money(cost.get('ceilingPerHour'))}; "
        f"idle (system pool and every minSize) {money(cost.get('idlePerHour'))}",
    ]
    if cost.get("budgetPerHour") is not None:
        lines.append(f"Budget: {money(cost.get('budgetPerHour'))} per hour (checked against the ceiling)")
    if cost.get("gpuHoursPerMonth") is not None:
        savings = cost.get("savingsPercent")
        lines.append(
            f"Monthly estimate, {cost['gpuHoursPerMonth']:g} GPU node-hours at {100 * float(cost.get('spotShare', 1.0)):g}% Spot "
            f"plus idle all month: {money(cost.get('monthly'))} (all on-demand: {money(cost.get('monthlyAllOnDemand'))}; "
            f"savings {'?' if savings is None else f'{savings:g}%'})"
        )
    unpriced = cost.get("unpriced") or []
    if unpriced:
        lines.append(f"No price for {', '.join(unpriced)}: shown as ?; refresh with {cost.get('refresh', '')}")
    order = cost.get("priorityOrder") or {}
    by_size = [capacity for capacity, basis in order.items() if basis != "price"]
    if by_size:
        lines.append(f"Priority expander: {', '.join(by_size)} pools ordered by size facts (a price is unknown)")
    lines.append(
        f"Prices read {cost.get('pricesReadOn', '?')}; Spot: {cost.get('spotBasis', '?')}. "
        "Not included: disks, egress, control plane, NAT, load balancers, discounts."
    )
    return lines


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


def render(document: Mapping[str, Any], *, files: Sequence[str] = (), tree: bool = True) -> str:
    """The whole summary: header, resource tree (unless ``tree=False``), node-pool table, files written."""
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
        lines += ["  " + line for line in resource_tree(document)]
    node_pools = outputs.get("nodePools")
    lines += ["", "Node pools:"]
    if isinstance(node_pools, list) and node_pools:
        rows = pool_rows(node_pools)
        lines += ["  " + line for line in format_table(rows, footer=totals(rows))]
        lines += [
            "",
            "  GPUS AT MAX = MAX x GPUS/NODE; IDLE GPUS = MIN x GPUS/NODE (paid for while no GPU pod runs);",
            "  SLOTS/NODE = nvidia.com/gpu per node with the pool's SHARING (what the autoscaler is told).",
        ]
        limited = limit_rows(node_pools)
        if limited:
            lines += ["", "Karpenter NodePools (spec.limits enforce MAX; CAPACITY in order of preference):"]
            lines += ["  " + line for line in format_table(limited, LIMIT_COLUMNS)]
        cost = outputs.get("cost")
        if isinstance(cost, Mapping):
            lines += [""] + ["  " + line for line in cost_lines(cost)]
    else:
        lines.append("  (no nodePools stack output)")
    if files:
        lines += ["", "Wrote:"] + [f"  {f}" for f in files]
    return "\n".join(lines) + "\n"
