"""One capacity model: how many nodes, GPUs, GPU slots and dollars per hour the fleet is, in four states.

Every figure gpupools prints about the fleet's size comes from ``fleet_figures``: the synth table's
TOTAL row and its ``--json``, the fleet lines of ``synth diff``, the ``cost`` stack output, the
``budgetPerHour`` check, Kueue's quotas and the queueing errors. Each state has one name, printed
as ``SCENARIO_NAMES`` says, and one meaning (``SCENARIO_MEANINGS``, also in docs/costs.md):

* **idle**: every group at its ``minSize`` (the system pool's minimum included): what runs, and is
  paid for, when no job does.
* **at max, Spot first**: every pool at its maximum in the capacity it buys first: its reserved
  groups full (``reservations[].count`` nodes each), then Spot up to ``maxSize`` where the pool buys
  Spot, on-demand up to ``maxSize`` where it does not (``spot: false``); on-demand fallbacks idle.
  What the fleet costs at full load while Spot lasts. A pool with ``spot: false`` is on-demand here
  too: the figure's ``by capacity`` split says how many nodes are reserved, Spot and on-demand.
* **at max, Spot gone**: the same pools at their maximum when no Spot capacity can be had: reserved
  groups full, every on-demand group (fallbacks included) at its maximum, Spot groups at 0. A
  fallback's maximum is ``onDemandMaxSize``, so this state may hold fewer nodes and GPUs than the
  one before: the figure says how many.
* **ceiling**: every group at its maximum at once (reserved, Spot and fallbacks): the most the
  fleet can ever be. Reachable under cluster-autoscaler: when a Spot group is at its maximum, the
  priority expander scales the fallback for pods still pending. ``budgetPerHour`` is checked
  against its cost, and Kueue's ``nominalQuota`` of ``nvidia.com/gpu`` adds up to its GPU slots.

A Karpenter NodePool (EKS Karpenter, AKS Node Auto Provisioning) buys every capacity type it allows
under one limit (``spec.limits.nodes`` = ``maxSize``): its groups share that limit
(``CapacityGroup.shares_limit``). Its reserved capacity fills first (at most its ``count``, never
more than the limit), Spot or on-demand the rest; its ceiling is the limit once, priced at the
dearest capacity it allows (on-demand), since any node under the limit may be one.

Node counts, GPUs (physical) and GPU slots (``nvidia.com/gpu`` with the pool's sharing: what pods
request and Kueue counts) are exact; costs are USD per hour from the price catalog
(``gpupools.pricing.estimate.node_price``: Spot or on-demand Linux list price, the dearest of a
group's instance types; 0 for a reserved node, whose reservation is paid already), ``None`` when a
group with nodes in that state has no price.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from gpupools.conventions import CapacityType, Role


@dataclass(frozen=True)
class CapacityGroup:
    """Nodes of one pool and one capacity type, with their autoscaler bounds (totals over zones).

    Attributes:
        pool: the ``gpuPools``/``cpuPools`` entry (``system`` for the system pool).
        role: system, gpu or cpu.
        capacity: spot or on-demand.
        instance_types: the sizes a node may be.
        min_size, max_size: total bounds.
        fallback: True for the on-demand fallback of a Spot pool.
        shares_limit: True for a fallback that shares its Spot group's ``max_size`` (one Karpenter
            NodePool allowing both capacity types): together they never exceed it.
        gpus_per_node: physical GPUs on one node (0 for CPU and system pools).
        slots_per_node: ``nvidia.com/gpu`` one node advertises (GPUs x sharing replicas).
        auto_mode: nodes launched by EKS Auto Mode: each node-hour also pays the Auto Mode fee of
            its instance type (``gpupools.pricing.estimate.node_price``).
    """

    pool: str
    role: Role
    capacity: CapacityType
    instance_types: tuple[str, ...]
    min_size: int
    max_size: int
    fallback: bool = False
    shares_limit: bool = False
    gpus_per_node: int = 0
    slots_per_node: int = 0
    auto_mode: bool = False


class Scenario(str, Enum):
    """The four states of the fleet every figure is given for (module docstring); the value is the
    key in the ``cost`` output's ``capacity`` block and in ``synth --json``."""

    IDLE = "idle"
    SPOT_FIRST = "atMaxSpotFirst"
    SPOT_GONE = "atMaxSpotGone"
    CEILING = "ceiling"


SCENARIO_NAMES: Mapping[Scenario, str] = {
    Scenario.IDLE: "idle",
    Scenario.SPOT_FIRST: "at max, Spot first",
    Scenario.SPOT_GONE: "at max, Spot gone",
    Scenario.CEILING: "ceiling",
}
"""The one name each state is printed under, everywhere."""

SCENARIO_MEANINGS: Mapping[Scenario, str] = {
    Scenario.IDLE: "every group at minSize",
    Scenario.SPOT_FIRST: "each pool at max on its first choice",
    Scenario.SPOT_GONE: "no Spot: reserved and on-demand at max",
    Scenario.CEILING: "every group at max at once",
}
"""What each state means, short enough for one line of synth's output (the module docstring and
docs/costs.md say it at length)."""

CAPACITY_KEYS: Mapping[CapacityType, str] = {
    CapacityType.RESERVED: "reserved",
    CapacityType.SPOT: "spot",
    CapacityType.ON_DEMAND: "onDemand",
}


@dataclass(frozen=True)
class Figure:
    """One state of one pool or of the fleet.

    Attributes:
        nodes: nodes in that state.
        gpus: physical GPUs on them.
        gpu_slots: ``nvidia.com/gpu`` they advertise (GPUs x the pool's sharing replicas).
        cost_per_hour: USD per hour; ``None`` when a group with nodes in that state has no price.
        by_capacity: nodes per capacity type (reserved, Spot, on-demand), the zeros left out.
    """

    nodes: int = 0
    gpus: int = 0
    gpu_slots: int = 0
    cost_per_hour: float | None = 0.0
    by_capacity: Mapping[CapacityType, int] = field(default_factory=dict)

    def __add__(self, other: Figure) -> Figure:
        split = dict(self.by_capacity)
        for capacity, nodes in other.by_capacity.items():
            split[capacity] = split.get(capacity, 0) + nodes
        cost = None if self.cost_per_hour is None or other.cost_per_hour is None else self.cost_per_hour + other.cost_per_hour
        return Figure(
            self.nodes + other.nodes,
            self.gpus + other.gpus,
            self.gpu_slots + other.gpu_slots,
            cost,
            {c: split[c] for c in CAPACITY_KEYS if split.get(c)},
        )

    def to_output(self) -> dict[str, object]:
        """``{nodes, gpus, gpuSlots, costPerHour, byCapacity}`` (cost rounded to 4 decimals)."""
        return {
            "nodes": self.nodes,
            "gpus": self.gpus,
            "gpuSlots": self.gpu_slots,
            "costPerHour": None if self.cost_per_hour is None else round(self.cost_per_hour, 4),
            "byCapacity": {CAPACITY_KEYS[c]: n for c, n in self.by_capacity.items() if n},
        }


@dataclass(frozen=True)
class PoolFigures:
    """One pool's four states (``Scenario`` -> ``Figure``)."""

    pool: str
    role: Role
    figures: Mapping[Scenario, Figure]


@dataclass(frozen=True)
class FleetFigures:
    """Every pool's figures and the fleet's totals (the sum of the pools')."""

    pools: tuple[PoolFigures, ...]
    totals: Mapping[Scenario, Figure]

    def total(self, scenario: Scenario) -> Figure:
        return self.totals[scenario]

    def to_output(self) -> dict[str, object]:
        """The ``capacity`` block of the ``cost`` output: per state the fleet's figure, its name and
        meaning, and per pool its figures."""
        return {
            **{
                scenario.value: {"name": SCENARIO_NAMES[scenario], "meaning": SCENARIO_MEANINGS[scenario], **figure.to_output()}
                for scenario, figure in self.totals.items()
            },
            "pools": {p.pool: {s.value: f.to_output() for s, f in p.figures.items()} for p in self.pools},
        }


PriceOf = Callable[["CapacityGroup"], "float | None"]
"""USD per node-hour of a group (``None``: no price); see ``gpupools.pricing.estimate.node_price``."""


def _no_price(group: CapacityGroup) -> float | None:
    return None


def group_nodes(groups: Sequence[CapacityGroup], scenario: Scenario) -> list[int]:
    """Nodes of each of ``groups`` (one pool's, or the fleet's) in ``scenario``, in their order.

    cluster-autoscaler groups each scale on their own; the groups of one Karpenter NodePool share
    its limit (module docstring): the reserved share first, the rest on the NodePool's own
    (preferred) group, whose ``max_size`` is the limit.
    """
    nodes = [0] * len(groups)
    pools: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        pools.setdefault(group.pool, []).append(index)
    for members in pools.values():
        mine = [groups[i] for i in members]
        shared = any(g.shares_limit for g in mine)
        for i, count in zip(members, _pool_nodes(mine, scenario, shared), strict=True):
            nodes[i] = count
    return nodes


def _pool_nodes(groups: Sequence[CapacityGroup], scenario: Scenario, shared: bool) -> list[int]:
    if scenario is Scenario.IDLE:
        return [g.min_size for g in groups]
    if not shared:
        if scenario is Scenario.CEILING:
            return [g.max_size for g in groups]
        if scenario is Scenario.SPOT_FIRST:
            return [0 if g.fallback else g.max_size for g in groups]
        return [0 if g.capacity is CapacityType.SPOT else g.max_size for g in groups]
    # One NodePool: ``main`` is its own group (the limit), the others share it.
    main = next(i for i, g in enumerate(groups) if not g.shares_limit)
    limit = groups[main].max_size
    nodes = [0] * len(groups)
    if scenario is Scenario.CEILING:
        nodes[main] = limit
        return nodes
    reserved = sum(g.max_size for g in groups if g.capacity is CapacityType.RESERVED)
    filled = min(reserved, limit)
    for i, g in enumerate(groups):
        if g.capacity is CapacityType.RESERVED:
            nodes[i] = min(g.max_size, filled)
            filled -= nodes[i]
    rest = limit - sum(nodes)
    if scenario is Scenario.SPOT_GONE and groups[main].capacity is CapacityType.SPOT:
        fallback = next((i for i, g in enumerate(groups) if g.fallback), None)
        if fallback is not None:
            nodes[fallback] = rest
        return nodes
    nodes[main] += rest
    return nodes


def _figure(groups: Sequence[CapacityGroup], nodes: Sequence[int], price_of: PriceOf, ceiling_shared: bool) -> Figure:
    total = Figure()
    for group, count in zip(groups, nodes, strict=True):
        price = price_of(group)
        cost = 0.0 if count == 0 else (None if price is None else price * count)
        total = total + Figure(
            count, count * group.gpus_per_node, count * group.slots_per_node, cost, {group.capacity: count} if count else {}
        )
    if ceiling_shared:
        # Any node under a NodePool's limit may be its dearest capacity: the limit at that price.
        priced = [price_of(g) for g in groups if g.capacity is not CapacityType.RESERVED]
        dearest = None if any(p is None for p in priced) or not priced else max(p for p in priced if p is not None)
        limit = sum(nodes)
        # ... and the split says so: the limit in the dearest capacity the NodePool allows.
        allowed = [g.capacity for g in groups if g.capacity is not CapacityType.RESERVED]
        capacity = CapacityType.ON_DEMAND if CapacityType.ON_DEMAND in allowed else allowed[0]
        total = Figure(
            total.nodes,
            total.gpus,
            total.gpu_slots,
            None if dearest is None else dearest * limit,
            {capacity: limit} if limit else {},
        )
    return total


def pool_figures(groups: Sequence[CapacityGroup], price_of: PriceOf = _no_price) -> list[PoolFigures]:
    """Per pool (in the order its first group comes), its figure in every ``Scenario``."""
    result = []
    for pool in dict.fromkeys(g.pool for g in groups):
        mine = [g for g in groups if g.pool == pool]
        shared = any(g.shares_limit for g in mine)
        figures = {
            scenario: _figure(mine, _pool_nodes(mine, scenario, shared), price_of, shared and scenario is Scenario.CEILING)
            for scenario in Scenario
        }
        result.append(PoolFigures(pool, mine[0].role, figures))
    return result


def fleet_figures(groups: Sequence[CapacityGroup], price_of: PriceOf = _no_price) -> FleetFigures:
    """The fleet's figures: every pool's (``pool_figures``) and their totals per ``Scenario``.

    Args:
        groups: the capacity groups (``estimate.groups_of_spec`` before anything exists, or
            ``estimate.groups_of_pools`` from what the components created: the same figures).
        price_of: USD per node-hour of a group; default none known (costs ``None`` wherever a
            state has nodes), for callers that need counts only.
    """
    pools = pool_figures(groups, price_of)
    totals = {}
    for scenario in Scenario:
        total = Figure()
        for pool in pools:
            total = total + pool.figures[scenario]
        totals[scenario] = total
    return FleetFigures(tuple(pools), totals)
