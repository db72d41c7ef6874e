"""Cost arithmetic over the price catalog: per pool, per fleet, per month, and the budget check.

Everything here is pure and works on ``CapacityGroup``s: one autoscaled group of nodes of one
capacity type (an AKS agent pool, or the sum of an EKS pool's per-zone node groups of one capacity
type). ``groups_of_spec`` derives them from a validated ``StackSpec`` (used before anything is
registered, for ``budgetPerHour``); ``groups_of_pools`` from the ``NodePoolInfo``s the components
created (used for the ``nodePools`` and ``cost`` outputs). Both give the same totals, since the
components split a pool's sizes over zones without changing their sum.

What a figure means:

* **price per node-hour**: the Spot or on-demand Linux price of the pool's size in the stack's
  region. A pool of several instance types (EKS) may get any of them, so its price is the dearest
  of them: estimates are upper bounds, never optimistic. A node in a capacity reservation
  (``CapacityType.RESERVED``: an EC2 ODCR or Capacity Block, an Azure capacity reservation) costs
  **0 extra**: the reservation is billed whether or not a node runs in it, so using it adds
  nothing, and its own fee is not part of these figures (it is paid already, and its size and term
  are not known without an API call). Reserved groups are listed first, then Spot, then on-demand
  (``CAPACITY_ORDER``): the order in which the autoscalers use them.
* **the fleet's four states** (idle; at max, Spot first; at max, Spot gone; ceiling), as nodes,
  GPUs, GPU slots and USD per hour, per pool and in total: ``gpupools.capacity`` computes them,
  once, from the groups here; ``fleet_cost`` prices them. The ``cost`` output carries them in its
  ``capacity`` block and, per hour, as ``idlePerHour``, ``spotAtMaxPerHour`` (at max, Spot first),
  ``onDemandInsteadAtMaxPerHour`` (at max, Spot gone) and ``ceilingPerHour``. ``budgetPerHour``
  is checked against the ceiling. A reserved group's maximum is its reservations' ``count``.
* **monthly**: idle for every hour of the month (``HOURS_PER_MONTH``) plus ``gpuHoursPerMonth`` GPU
  node-hours, spread evenly over the GPU pools, and ``cpuNodeHoursPerMonth`` CPU node-hours over the
  CPU pools (default 0: before issue 48 CPU pools counted idle only), ``spotShare`` of them at the Spot price (pools
  without Spot: all on-demand; Spot pools without a fallback: all Spot). Savings compare it with
  the same hours with every node on-demand (the list-price saving). With an eviction rate
  (``gpupools:cost.evictionRate``, a pool's own ``evictionRate``) the Spot hours grow by the work
  interrupted and run again (``spot_hours_with_evictions``): ``monthly_with_evictions`` and the
  effective saving against the same all-on-demand figure. The GPU node-hours are priced as if no
  reservation served them (how many hours a reservation covers depends on its size, unknown here),
  so with reservations the monthly figure is an upper bound. Not included: disks, public IPs, egress, the EKS
  control-plane fee, NAT gateways, load balancers, support plans, taxes, discounts (reservations,
  savings plans, enterprise agreements).

**EKS Auto Mode** (``provisioner: auto-mode``, ``CapacityGroup.auto_mode``): AWS charges a
management fee per instance launched by Auto Mode, on top of the EC2 price, by instance type and
region, on Spot nodes too (``gpupools.pricing.aws_price_list`` for the sources). Every Auto Mode
node-hour is then its EC2 price (Spot or on-demand) plus the fee of its instance type from the price
catalog (``PriceTable.auto_mode_fee``): in ``node_price``, so in the ``nodePools`` rows (with the
fee itself in ``autoModeFee``), every figure, the budget check and ``price_order``. A group whose
sizes' fees are not all in the catalog is priced at EC2 prices alone, **said**, never taken as a fee
of 0: its rows say ``autoModeFee: null`` with a note, the ``cost`` output's ``autoModeFee`` block
names the sizes and pools, the states holding its nodes are not ``exact`` (their figures are below
what AWS charges), ``check_budget`` cannot pass on them, and the NodePool weights are by EC2 price
alone unless every pool's fee is known (one basis for all). The stack warns
(``auto_mode_fee_warning``).

**What is not known** does not blank the fleet (issue 39): a group without the price its capacity
type needs is counted at its **upper bound** where one exists (a Spot group at its size's on-demand
price: a Spot price is never above it, ``gpupools.catalog.prices.is_spot_price``), and left out where
none does (a size with no price at all). Every figure is then the figure at those bounds (an upper
bound; the savings a lower bound), ``known_per_hour`` gives each state's known part (unknown prices
at 0, a lower bound), and ``unknown_parts`` says which pool is unknown, why and what bounds it. A
state whose known part equals its bound (a Karpenter ceiling, priced at on-demand anyway) is exact.
The budget check decides what it can from the two bounds (``check_budget``). A Spot figure the
catalog keeps but flags as doubtful (``PriceTable.doubtful``) is used, and named (``doubtful``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpupools.capacity import CapacityGroup as CapacityGroup  # the capacity model's unit, priced here
from gpupools.capacity import FleetFigures, Scenario, fleet_figures
from gpupools.catalog.prices import HOURS_PER_MONTH, REFRESH_HINT, Price, PriceTable, normalize_region
from gpupools.conventions import CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.specs import CostSpec, PoolSpec, Provisioner, StackSpec

SYSTEM_POOL = "system"

CAPACITY_ORDER = (CapacityType.RESERVED, CapacityType.SPOT, CapacityType.ON_DEMAND)
"""The order in which capacity is used (the priority expander's tiers, Karpenter's capacity-type
preference: "Karpenter will prioritize ``reserved`` capacity, followed by ``spot``, then finally
``on-demand``", aws/karpenter-provider-aws v1.14.1 ``concepts/nodepools.md``) and in which the figures
list it."""

RESERVED_PRICE = 0.0
"""USD per node-hour of a node in a capacity reservation, on top of the reservation (module docstring)."""


def capacity_price(price: Price | None, capacity: CapacityType) -> float | None:
    """One size's price for ``capacity`` from its catalog row: Spot, on-demand, or for a reserved
    node ``RESERVED_PRICE`` (whether the catalog has the size or not: nothing is bought)."""
    if capacity is CapacityType.RESERVED:
        return RESERVED_PRICE
    if price is None:
        return None
    return price.spot if capacity is CapacityType.SPOT else price.on_demand


def _gpus_of(pool: PoolSpec) -> tuple[int, int]:
    """(GPUs, GPU slots) on one node of ``pool``: its first type's GPUs (a pool's types share one
    shape) times the sharing replicas; (0, 0) for a CPU pool or a size no catalog knows."""
    from gpupools import sharing
    from gpupools.catalog.sizes import size_facts

    facts = size_facts(pool.instance_types[0]) if pool.instance_types and pool.is_gpu else None
    gpus = facts[0] if facts else 0
    return gpus, gpus * sharing.slots_per_gpu(pool.sharing)


def groups_of_spec(spec: StackSpec) -> list[CapacityGroup]:
    """The capacity groups a validated spec creates, before any resource exists."""
    system = spec.system_pool
    # EKS Auto Mode: every group's nodes, the system pool's too, pay the Auto Mode fee.
    auto_mode = spec.provisioner is Provisioner.AUTO_MODE
    groups = [
        CapacityGroup(
            SYSTEM_POOL,
            Role.SYSTEM,
            CapacityType.ON_DEMAND,
            system.instance_types,
            # EKS Auto Mode and AKS Automatic: the system pool is a NodePool, which keeps no minimum
            # (gpupools.aws.auto_mode, gpupools.azure.automatic).
            0 if auto_mode or spec.cluster.automatic else system.min_size,
            system.max_size,
            auto_mode=auto_mode,
        )
    ]
    karpenter = spec.provisioner.node_pools
    for pool in spec.pools:
        gpus, slots = _gpus_of(pool)
        if pool.reservations:
            # cluster-autoscaler: a group per reservation, each up to its count (gpupools.aws.reservations);
            # Karpenter: the pool's one NodePool, under its one limit (gpupools.capacity).
            reserved = sum(r.reserved_max(pool.max_size) for r in pool.reservations)
            groups.append(
                CapacityGroup(
                    pool.name,
                    pool.role,
                    CapacityType.RESERVED,
                    pool.instance_types[:1],
                    0,
                    min(reserved, pool.max_size) if karpenter else reserved,
                    shares_limit=karpenter,
                    gpus_per_node=gpus,
                    slots_per_node=slots,
                    auto_mode=auto_mode,
                )
            )
        groups.append(  # the pool's own group: Spot, or on-demand where the pool buys no Spot
            CapacityGroup(
                pool.name,
                pool.role,
                CapacityType.SPOT if pool.spot else CapacityType.ON_DEMAND,
                pool.instance_types,
                pool.min_size,
                pool.max_size,
                gpus_per_node=gpus,
                slots_per_node=slots,
                auto_mode=auto_mode,
            )
        )
        if pool.spot and pool.on_demand_fallback:
            groups.append(
                CapacityGroup(
                    pool.name,
                    pool.role,
                    CapacityType.ON_DEMAND,
                    pool.instance_types,
                    0,
                    pool.fallback_max_size,
                    fallback=True,
                    shares_limit=karpenter,
                    gpus_per_node=gpus,
                    slots_per_node=slots,
                    auto_mode=auto_mode,
                )
            )
    return groups


def fallback_flags(groups: Sequence[tuple[str, CapacityType]]) -> list[bool]:
    """For each created group, as ``(pool, capacity)``: True for an on-demand fallback, i.e. an
    on-demand group of a pool that also has a Spot group. A Karpenter NodePool is one group whose
    capacity is its preferred type (Spot), so it is never a fallback. The synth table's TOTAL and
    ``groups_of_pools`` both decide it here."""
    spot_pools = {pool for pool, capacity in groups if capacity is CapacityType.SPOT}
    return [capacity is CapacityType.ON_DEMAND and pool in spot_pools for pool, capacity in groups]


def groups_of_pools(pools: Iterable[NodePoolInfo]) -> list[CapacityGroup]:
    """The capacity groups of created pools: per-zone groups of one pool and capacity added up."""
    pools = list(pools)
    fallbacks = fallback_flags([(p.pool, p.capacity) for p in pools])
    totals: dict[tuple[str, CapacityType], CapacityGroup] = {}
    for info, is_fallback in zip(pools, fallbacks, strict=True):
        if len(info.capacity_types) > 1:
            # One Karpenter NodePool: its priced capacity (Spot when allowed), with reserved and
            # on-demand under the same limit; on-demand is the fallback.
            for capacity in info.capacity_types:
                main = capacity is info.capacity
                totals[(info.pool, capacity)] = CapacityGroup(
                    info.pool,
                    info.role,
                    capacity,
                    info.instance_types,
                    info.min_size if main else 0,
                    info.max_size
                    if main or capacity is not CapacityType.RESERVED
                    else min(info.reserved_nodes or info.max_size, info.max_size),
                    fallback=not main and capacity is CapacityType.ON_DEMAND,
                    shares_limit=not main,
                    gpus_per_node=info.gpus_per_node,
                    slots_per_node=info.gpu_slots_per_node,
                    auto_mode=info.auto_mode,
                )
            continue
        key = (info.pool, info.capacity)
        seen = totals.get(key)
        totals[key] = CapacityGroup(
            pool=info.pool,
            role=info.role,
            capacity=info.capacity,
            instance_types=info.instance_types,
            min_size=info.min_size + (seen.min_size if seen else 0),
            max_size=info.max_size + (seen.max_size if seen else 0),
            fallback=is_fallback,
            gpus_per_node=info.gpus_per_node,
            slots_per_node=info.gpu_slots_per_node,
            auto_mode=info.auto_mode,
        )
    return list(totals.values())


def node_price(
    table: PriceTable, region: str, instance_types: Sequence[str], capacity: CapacityType, *, auto_mode: bool = False
) -> float | None:
    """USD per node-hour of a group: the dearest of its instance types (a node may be any of them);
    ``None`` when any of them has no price for ``capacity`` in ``region``. With ``auto_mode`` (an EKS
    Auto Mode group; default False) each type's price is its EC2 price plus its Auto Mode fee when
    the catalog has the fee of every type of the group, else the EC2 price alone (module docstring)."""
    fees = known_auto_mode_fees(table, region, instance_types) if auto_mode and capacity is not CapacityType.RESERVED else None
    values: list[float] = []
    for size in instance_types:
        value = capacity_price(table.price(region, size), capacity)
        if value is None:
            return None
        values.append(value + (fees[size] if fees is not None else 0.0))
    return max(values) if values else None


def known_auto_mode_fees(table: PriceTable, region: str, instance_types: Sequence[str]) -> dict[str, float] | None:
    """The Auto Mode fee of each of ``instance_types`` in ``region``; ``None`` unless every one is known."""
    fees = {size: table.auto_mode_fee(region, size) for size in instance_types}
    known = {size: fee for size, fee in fees.items() if fee is not None}
    return known if len(known) == len(fees) else None


def unknown_auto_mode_fees(table: PriceTable, region: str, instance_types: Iterable[str]) -> list[str]:
    """The sizes of ``instance_types`` whose Auto Mode fee the catalog does not hold in ``region``, sorted."""
    return sorted({size for size in instance_types if table.auto_mode_fee(region, size) is None})


def auto_mode_fee_in_price(table: PriceTable, region: str, instance_types: Sequence[str], capacity: CapacityType) -> float | None:
    """The Auto Mode fee ``node_price`` adds for a group: the fee of the type whose EC2 price plus
    fee is the dearest (without an EC2 price for ``capacity``, the dearest fee); ``None`` when a
    type's fee is unknown (then ``node_price`` adds none)."""
    fees = known_auto_mode_fees(table, region, instance_types)
    if fees is None or not fees:
        return None
    totals = []
    for size in instance_types:
        value = capacity_price(table.price(region, size), capacity)
        if value is None:
            return max(fees.values())
        totals.append((value + fees[size], fees[size]))
    return max(totals)[1]


AUTO_MODE_DOC = "docs/auto-mode.md"


def auto_mode_fee_missing_note(table: PriceTable, region: str, sizes: Sequence[str]) -> str:
    """Why an Auto Mode fee is not included: the catalog lacks it for ``sizes``, and how to fill it."""
    return (
        f"not included: the price catalog has no EKS Auto Mode fee for {', '.join(sizes)} in {normalize_region(region)}, "
        f"so these node-hours are EC2 prices alone, below what AWS charges; fill it with "
        f"{REFRESH_HINT.format(cloud=table.cloud.value)}"
    )


def auto_mode_fee_warning(table: PriceTable, region: str, instance_types: Iterable[str]) -> str | None:
    """What an Auto Mode stack warns when the catalog lacks the fee of some of its sizes (module
    docstring); ``None`` when it has every one."""
    missing = unknown_auto_mode_fees(table, region, instance_types)
    if not missing:
        return None
    return (
        f"EKS Auto Mode fee unknown for {', '.join(missing)} in {normalize_region(region)}: the price catalog "
        f"(read {table.provenance(region).read_on}) does not hold it, so the nodePools and cost outputs and the NodePool "
        f"weights leave it out (those node-hours are at EC2 prices alone, below what AWS charges) and "
        f"gpupools:cost.budgetPerHour cannot be checked; fill it with {REFRESH_HINT.format(cloud=table.cloud.value)} "
        f"(AWS credentials; {AUTO_MODE_DOC})"
    )


def unpriced(table: PriceTable, region: str, groups: Iterable[CapacityGroup]) -> list[str]:
    """``<size> (<capacity>)`` for every size of ``groups`` without a price: what a refresh must add."""
    missing: set[str] = set()
    for group in groups:
        for size in group.instance_types:
            if capacity_price(table.price(region, size), group.capacity) is None:
                missing.add(f"{size} ({group.capacity.value})")
    return sorted(missing)


def unpriced_sizes(table: PriceTable, region: str, groups: Iterable[CapacityGroup]) -> list[str]:
    """The sizes of ``groups`` without the price their group's capacity type needs, in sorted order."""
    return sorted(
        {
            size
            for group in groups
            for size in group.instance_types
            if capacity_price(table.price(region, size), group.capacity) is None
        }
    )


def footnoted_sizes(table: PriceTable, region: str, groups: Iterable[CapacityGroup]) -> list[str]:
    """The sizes of ``groups`` a footnote speaks of: those without the price their group's capacity
    type needs (``unpriced_sizes``) and those whose figures carry a note on their source, sorted."""
    groups = list(groups)
    noted = table.notes.get(normalize_region(region), {})
    return sorted({*unpriced_sizes(table, region, groups), *(s for g in groups for s in g.instance_types if s in noted)})


def why_unpriced(table: PriceTable, region: str, size: str, capacity: CapacityType) -> str:
    """Why ``size`` has no ``capacity`` price in ``region``: the table's recorded reason
    (``PriceTable.missing_reason``), or, for a size priced for the other capacity type only, that."""
    price = table.price(region, size)
    recorded = table.unpriced.get(normalize_region(region), {}).get(size)
    if price is None or recorded is not None:
        return table.missing_reason(region, size)
    return f"{size} has no {capacity.value} price for {normalize_region(region)} in the price catalog's source"


def price_gap(table: PriceTable, region: str, instance_types: Sequence[str], capacity: CapacityType) -> str | None:
    """Why a group of ``instance_types`` has no ``capacity`` price (``node_price`` is ``None``):
    ``<size>: <reason>`` for each size without one, joined by ``; ``; ``None`` when it has a price."""
    gaps = []
    for size in instance_types:
        if capacity_price(table.price(region, size), capacity) is None:
            gaps.append(f"{size}: {why_unpriced(table, region, size, capacity)}")
    if not instance_types:
        return "no instance types"
    return "; ".join(gaps) if gaps else None


def unpriced_reasons(table: PriceTable, region: str, groups: Iterable[CapacityGroup]) -> dict[str, str]:
    """``unpriced``'s entries, each with its reason (``why_unpriced``)."""
    reasons: dict[str, str] = {}
    for group in groups:
        for size in group.instance_types:
            if capacity_price(table.price(region, size), group.capacity) is None:
                reasons[f"{size} ({group.capacity.value})"] = why_unpriced(table, region, size, group.capacity)
    return dict(sorted(reasons.items()))


def unpriced_pools(table: PriceTable, region: str, groups: Iterable[CapacityGroup]) -> dict[str, str]:
    """Per pool with a group that cannot be priced, why (``price_gap``): once when its Spot group and
    its fallback lack a price for the same reason (the size is missing), else ``<capacity>: <why>``
    for each, joined by ``; ``. What the budget check names."""
    reasons: dict[str, list[tuple[str, str]]] = {}
    for group in groups:
        gap = price_gap(table, region, group.instance_types, group.capacity)
        if gap is not None:
            reasons.setdefault(group.pool, []).append((group.capacity.value, gap))
    out = {}
    for pool, gaps in reasons.items():
        texts = list(dict.fromkeys(gap for _, gap in gaps))
        out[pool] = texts[0] if len(texts) == 1 else "; ".join(f"{capacity}: {gap}" for capacity, gap in gaps)
    return out


def spot_hours_with_evictions(spot_hours: float, eviction_rate: float, redone_share: float) -> float:
    """Expected Spot node-hours to finish ``spot_hours`` of work when Spot runs are interrupted.

    ``H_eff = H_spot * (1 + r * f)``, where

    * ``H_spot`` is the work in Spot node-hours at list price (no interruption);
    * ``r`` (``eviction_rate``, 0 to 1) is the share of Spot runs that are interrupted: the figure
      the clouds publish per size and region in bands (AWS Spot Instance Advisor "frequency of
      interruption", the rate at which Spot reclaimed capacity over the trailing month: <5%, 5-10%,
      10-15%, 15-20%, >20%; Azure's Spot eviction rate per size and location over the trailing 28
      days: 0-5, 5-10, 10-15, 15-20, 20+);
    * ``f`` (``redone_share``, 0 to 1) is the share of an interrupted run's work that is lost and run
      again: 0.5 for a run without checkpoints interrupted at a uniformly random point (half of it,
      on average); about ``c / (2 L)`` for checkpoints every ``c`` hours of an ``L``-hour run; 1 for
      the worst case (interrupted just before the end, nothing kept).

    So ``r * H_spot`` hours of work are interrupted and ``r * f * H_spot`` hours are redone. The
    redone work is counted once (first order): its own interruptions (``r^2 f H_spot`` and smaller)
    are left out, which for ``r <= 0.2`` changes the figure by less than the width of the clouds'
    5-point bands, and keeps the figure finite and monotonic for every ``r`` from 0 to 1 (the
    geometric ``H_spot / (1 - r)`` diverges as ``r`` nears 1). Example: 100 Spot hours at r = 0.1
    and f = 0.5 take 105 hours.
    """
    return spot_hours * (1.0 + eviction_rate * redone_share)


@dataclass(frozen=True)
class FleetCost:
    """A fleet's cost figures in USD (``None``: a price is unknown). See the module docstring.

    Attributes:
        region: the region the prices are for.
        spot_at_max, on_demand_instead_at_max, ceiling, idle: USD per hour: the cost of the
            ``gpupools.capacity`` states at max, Spot first; at max, Spot gone; ceiling; idle.
        monthly, monthly_all_on_demand: USD per month (``None`` without ``gpuHoursPerMonth``).
        savings_percent: ``1 - monthly / monthly_all_on_demand`` in percent (list prices).
        monthly_with_evictions: ``monthly`` with each pool's Spot hours grown by its eviction rate
            (``spot_hours_with_evictions``); equal to ``monthly`` when no rate is set.
        effective_savings_percent: ``1 - monthly_with_evictions / monthly_all_on_demand`` in percent.
        eviction_rates: per GPU pool with Spot, the eviction rate applied.
        redone_share: ``f`` of ``spot_hours_with_evictions``.
        ceiling_by_pool: each pool's share of the ceiling, dearest first (what drives it).
        unpriced: sizes without a price (see ``unpriced``).
        unpriced_reasons: the same, each with why it has none (``unpriced_reasons``).
        unpriced_pools: per pool that cannot be priced, which size and why (``unpriced_pools``).
        price_source, source_date, read_on: the region's prices' source, when that source collected
            them and when gpupools read it (``PriceTable.provenance``), ISO dates.
        spot_basis: what the catalog's Spot figure is.
        figures: the fleet's four states as nodes, GPUs, GPU slots and cost (``gpupools.capacity``).
        price_footnotes: one short footnote per reason a size of the fleet lacks a price it needs
            (``PriceTable.footnotes``): what synth prints once under its table instead of in every row.
        price_notes: one line per note on where a priced size's figures come from when that is not
            the region's source (``PriceTable.notes_for``); synth prints them with the source.
        known_per_hour: per state (``Scenario`` value), its cost from the known prices alone (unknown
            ones at 0): a lower bound; equal to the state's figure when that is exact.
        ceiling_known_by_pool: each pool's share of ``known_per_hour``'s ceiling, dearest first: the
            drivers a budget error names beside that known part (so no pool shows more than the total).
        unknown_parts: per pool with a group whose price is unknown, why, and the bound it is
            counted at (or that it has none and is left out). Empty when every price is known.
        doubtful: one line per size whose Spot figure is kept but doubtful (``PriceTable.doubtful_notes``).
        auto_mode: whether any group is an EKS Auto Mode group (the ``cost`` output then has an
            ``autoModeFee`` block).
        auto_mode_fees: per size of the Auto Mode groups, its fee from the catalog (``None``: unknown).
        auto_mode_fee_unknown: per Auto Mode pool with a size whose fee is unknown, those sizes: the
            pool's figures are at EC2 prices alone (module docstring).
        auto_mode_fee_missing_in: the states (``Scenario`` values) holding nodes of such a pool:
            not ``exact``, their figures below what AWS charges.
    """

    region: str
    spot_at_max: float | None
    on_demand_instead_at_max: float | None
    ceiling: float | None
    idle: float | None
    monthly: float | None = None
    monthly_all_on_demand: float | None = None
    savings_percent: float | None = None
    ceiling_by_pool: tuple[tuple[str, float | None], ...] = ()
    unpriced: tuple[str, ...] = ()
    read_on: str = ""
    spot_basis: str = ""
    refresh: str = ""
    gpu_hours_per_month: float | None = None
    cpu_node_hours_per_month: float = 0.0
    spot_share: float = 1.0
    budget_per_hour: float | None = None
    monthly_with_evictions: float | None = None
    effective_savings_percent: float | None = None
    eviction_rates: tuple[tuple[str, float], ...] = ()
    redone_share: float = 0.5
    unpriced_reasons: tuple[tuple[str, str], ...] = ()
    unpriced_pools: tuple[tuple[str, str], ...] = ()
    price_source: str = ""
    source_date: str = ""
    figures: FleetFigures | None = None
    price_footnotes: tuple[str, ...] = ()
    price_notes: tuple[str, ...] = ()
    known_per_hour: tuple[tuple[str, float], ...] = ()
    ceiling_known_by_pool: tuple[tuple[str, float], ...] = ()
    unknown_parts: tuple[tuple[str, str], ...] = ()
    doubtful: tuple[str, ...] = ()
    auto_mode: bool = False
    auto_mode_fees: tuple[tuple[str, float | None], ...] = ()
    auto_mode_fee_unknown: tuple[tuple[str, tuple[str, ...]], ...] = ()
    auto_mode_fee_missing_in: tuple[str, ...] = ()

    @property
    def ceiling_known(self) -> float | None:
        """The ceiling's known part (``known_per_hour``); the ceiling itself without that figure."""
        return dict(self.known_per_hour).get(Scenario.CEILING.value, self.ceiling)

    def exact(self, scenario: Scenario) -> bool:
        """Whether ``scenario``'s cost is exact: known, and no unknown price or Auto Mode fee changes it."""
        if scenario.value in self.auto_mode_fee_missing_in:
            return False
        value = {
            Scenario.IDLE: self.idle,
            Scenario.SPOT_FIRST: self.spot_at_max,
            Scenario.SPOT_GONE: self.on_demand_instead_at_max,
            Scenario.CEILING: self.ceiling,
        }[scenario]
        known = dict(self.known_per_hour).get(scenario.value, value)
        return value is not None and known is not None and abs(value - known) <= EXACT_TOLERANCE

    def to_output(self) -> dict[str, object]:
        """The stack's ``cost`` output (rounded to cents; per-hour figures to 4 decimals). Beside the
        figures (upper bounds where a price is unknown, module docstring): ``exact`` and
        ``knownPerHour`` per state (also in each state of ``capacity``: ``costExact``,
        ``costPerHourKnown``), ``unknownParts`` and ``doubtfulPrices``."""
        capacity = self.figures.to_output() if self.figures is not None else None
        if capacity is not None:
            for scenario in Scenario:
                state = capacity[scenario.value]
                assert isinstance(state, dict)
                state["costExact"] = self.exact(scenario)
                state["costPerHourKnown"] = _round(dict(self.known_per_hour).get(scenario.value))
                if self.auto_mode:  # EKS Auto Mode stacks only: whether the state's figure holds every fee
                    state["autoModeFeeIncluded"] = scenario.value not in self.auto_mode_fee_missing_in
        return {
            "currency": "USD",
            "region": self.region,
            "spotAtMaxPerHour": _round(self.spot_at_max),
            "onDemandInsteadAtMaxPerHour": _round(self.on_demand_instead_at_max),
            "ceilingPerHour": _round(self.ceiling),
            "idlePerHour": _round(self.idle),
            "gpuHoursPerMonth": self.gpu_hours_per_month,
            "cpuNodeHoursPerMonth": self.cpu_node_hours_per_month,
            "spotShare": self.spot_share,
            "monthly": _round(self.monthly, 2),
            "monthlyAllOnDemand": _round(self.monthly_all_on_demand, 2),
            "savingsPercent": _round(self.savings_percent, 1),
            "evictionRates": dict(self.eviction_rates),
            "redoneShare": self.redone_share,
            "monthlyWithEvictions": _round(self.monthly_with_evictions, 2),
            "effectiveSavingsPercent": _round(self.effective_savings_percent, 1),
            "budgetPerHour": self.budget_per_hour,
            "ceilingByPool": {pool: _round(cost) for pool, cost in self.ceiling_by_pool},
            "unpriced": list(self.unpriced),
            "unpricedReasons": dict(self.unpriced_reasons),
            "unpricedPools": dict(self.unpriced_pools),
            "priceFootnotes": list(self.price_footnotes),
            "priceNotes": list(self.price_notes),
            "priceSource": self.price_source,
            "pricesSourceDate": self.source_date,
            "pricesReadOn": self.read_on,
            "spotBasis": self.spot_basis,
            "refresh": self.refresh,
            "exact": {scenario.value: self.exact(scenario) for scenario in Scenario},
            "knownPerHour": {state: _round(value) for state, value in self.known_per_hour},
            "unknownParts": dict(self.unknown_parts),
            "doubtfulPrices": list(self.doubtful),
            **({"autoModeFee": self.auto_mode_output()} if self.auto_mode else {}),
            **({"capacity": capacity} if capacity is not None else {}),
        }

    def auto_mode_output(self) -> dict[str, object]:
        """The ``cost`` output's ``autoModeFee`` block (Auto Mode stacks only): the fee per size
        (``null``: not in the catalog), whether every figure includes it, and if not, which sizes
        and pools lack it and how to fill it."""
        unknown = sorted({size for _, sizes in self.auto_mode_fee_unknown for size in sizes})
        if unknown:
            note = (
                f"EKS Auto Mode fee not included for pools {', '.join(pool for pool, _ in self.auto_mode_fee_unknown)}: "
                f"the price catalog has no fee for {', '.join(unknown)} in {self.region}, so their node-hours are EC2 "
                f"prices alone and the figures holding them ({', '.join(self.auto_mode_fee_missing_in) or 'none'}) are "
                f"below what AWS charges; fill it with {self.refresh}"
            )
        else:
            note = (
                "EKS Auto Mode fee included: every node-hour is its EC2 price (Spot or on-demand) plus the Auto Mode fee "
                "of its instance type from the price catalog (AWS Price List, AmazonEKS)"
            )
        return {
            "included": not unknown,
            "perNodeHour": {size: _round(fee) for size, fee in self.auto_mode_fees},
            "unknownSizes": unknown,
            "notIncludedFor": [pool for pool, _ in self.auto_mode_fee_unknown],
            "note": note,
        }


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _sum(values: Iterable[float | None]) -> float | None:
    total = 0.0
    for value in values:
        if value is None:
            return None
        total += value
    return total


EXACT_TOLERANCE = 1e-9
"""USD per hour within which a state's known part and its bound are the same figure (float sums)."""


@dataclass
class _Priced:
    """A group with its price for its capacity type (``None``: unknown) and its on-demand price."""

    group: CapacityGroup
    price: float | None
    on_demand_price: float | None = field(default=None)

    @property
    def bound(self) -> float | None:
        """The price, else its upper bound: a Spot group's on-demand price; ``None`` without one."""
        if self.price is not None:
            return self.price
        return self.on_demand_price if self.group.capacity is CapacityType.SPOT else None


def unknown_parts(priced: Sequence[_Priced], table: PriceTable, region: str) -> dict[str, str]:
    """Per pool with a group whose price is unknown: which capacity types, why (once per distinct
    reason), and what they are counted at: a Spot group at its on-demand price (an upper bound),
    a group without any price left out (the figures that hold its nodes are then lower bounds)."""
    parts: dict[str, list[_Priced]] = {}
    for p in priced:
        if p.price is None:
            parts.setdefault(p.group.pool, []).append(p)
    out = {}
    for pool, groups in parts.items():
        capacities = " and ".join(dict.fromkeys(p.group.capacity.value for p in groups))
        whys = "; ".join(
            dict.fromkeys(price_gap(table, region, p.group.instance_types, p.group.capacity) or "no price" for p in groups)
        )
        text = f"{capacities} price unknown ({whys})"
        bounds = sorted({p.bound for p in groups if p.bound is not None})
        if bounds:
            text += f"; Spot counted at its on-demand price {bounds[-1]:.4f}/node-h, the most it costs (figures are upper bounds)"
        if any(p.bound is None for p in groups):
            text += "; no bound, left out (figures are lower bounds)"
        out[pool] = text
    return out


def fleet_cost(groups: Sequence[CapacityGroup], table: PriceTable, region: str, cost: CostSpec | None = None) -> FleetCost:
    """The fleet figures of ``groups`` in ``region`` (see the module docstring for each figure)."""
    cost = cost or CostSpec()
    priced = [
        _Priced(
            g,
            node_price(table, region, g.instance_types, g.capacity, auto_mode=g.auto_mode),
            node_price(table, region, g.instance_types, CapacityType.ON_DEMAND, auto_mode=g.auto_mode),
        )
        for g in groups
    ]

    # Every figure of the fleet's size and cost in its four states: one model (gpupools.capacity),
    # priced at each group's price or, where that is unknown, its upper bound (module docstring) ...
    bounds = {id(p.group): p.bound for p in priced}
    figures = fleet_figures(groups, lambda group: bounds[id(group)])
    # ... and at the known prices alone (unknown ones at 0): the lower bound of each state.
    knowns = {id(p.group): p.price or 0.0 for p in priced}
    known = fleet_figures(groups, lambda group: knowns[id(group)])
    known_per_hour = tuple((s.value, known.total(s).cost_per_hour or 0.0) for s in Scenario)
    spot_at_max = figures.total(Scenario.SPOT_FIRST).cost_per_hour
    instead = figures.total(Scenario.SPOT_GONE).cost_per_hour
    idle = figures.total(Scenario.IDLE).cost_per_hour
    ceiling = figures.total(Scenario.CEILING).cost_per_hour
    by_pool = {pool.pool: pool.figures[Scenario.CEILING].cost_per_hour for pool in figures.pools}
    drivers = tuple(sorted(by_pool.items(), key=lambda item: (item[1] is not None, item[1] or 0.0), reverse=True))

    monthly = monthly_on_demand = savings = with_evictions = effective = None
    if cost.gpu_hours_per_month is not None:
        monthly, with_evictions, monthly_on_demand = _monthly(priced, cost, idle)
        if monthly is not None and with_evictions is not None and monthly_on_demand:
            savings = 100.0 * (1.0 - monthly / monthly_on_demand)
            effective = 100.0 * (1.0 - with_evictions / monthly_on_demand)
    spot_gpu_pools = sorted({g.pool for g in groups if g.role is Role.GPU and g.capacity is CapacityType.SPOT})
    origin = table.provenance(region)
    # EKS Auto Mode: the fee of each size, and the pools (and the states holding them) priced without it.
    auto_sizes = sorted({size for g in groups if g.auto_mode for size in g.instance_types})
    fee_unknown: dict[str, tuple[str, ...]] = {}
    for g in groups:
        missing = unknown_auto_mode_fees(table, region, g.instance_types) if g.auto_mode else []
        if missing:
            fee_unknown[g.pool] = tuple(sorted({*fee_unknown.get(g.pool, ()), *missing}))
    fee_missing_in = tuple(s.value for s in Scenario if any(p.pool in fee_unknown and p.figures[s].nodes for p in figures.pools))
    return FleetCost(
        region=region,
        spot_at_max=spot_at_max,
        on_demand_instead_at_max=instead,
        ceiling=ceiling,
        idle=idle,
        monthly=monthly,
        monthly_all_on_demand=monthly_on_demand,
        savings_percent=savings,
        ceiling_by_pool=drivers,
        unpriced=tuple(unpriced(table, region, groups)),
        read_on=origin.read_on.isoformat(),
        spot_basis=table.spot_basis,
        refresh=REFRESH_HINT.format(cloud=table.cloud.value),
        gpu_hours_per_month=cost.gpu_hours_per_month,
        cpu_node_hours_per_month=cost.cpu_node_hours_per_month,
        spot_share=cost.spot_share,
        budget_per_hour=cost.budget_per_hour,
        monthly_with_evictions=with_evictions,
        effective_savings_percent=effective,
        eviction_rates=tuple((pool, cost.eviction_rate_of(pool)) for pool in spot_gpu_pools),
        redone_share=cost.redone_share,
        unpriced_reasons=tuple(unpriced_reasons(table, region, groups).items()),
        unpriced_pools=tuple(unpriced_pools(table, region, groups).items()),
        price_source=origin.source,
        source_date=origin.source_date.isoformat(),
        figures=figures,
        price_footnotes=tuple(table.footnotes(region, footnoted_sizes(table, region, groups))),
        price_notes=tuple(table.notes_for(region, sorted({size for group in groups for size in group.instance_types}))),
        known_per_hour=known_per_hour,
        ceiling_known_by_pool=tuple(
            sorted(
                ((pool.pool, pool.figures[Scenario.CEILING].cost_per_hour or 0.0) for pool in known.pools),
                key=lambda item: item[1],
                reverse=True,
            )
        ),
        unknown_parts=tuple(unknown_parts(priced, table, region).items()),
        doubtful=tuple(
            table.doubtful_notes(
                region,
                sorted({s for g in groups if g.capacity is CapacityType.SPOT for s in g.instance_types}),
            )
        ),
        auto_mode=any(g.auto_mode for g in groups),
        auto_mode_fees=tuple((size, table.auto_mode_fee(region, size)) for size in auto_sizes),
        auto_mode_fee_unknown=tuple(fee_unknown.items()),
        auto_mode_fee_missing_in=fee_missing_in,
    )


def _monthly(priced: Sequence[_Priced], cost: CostSpec, idle: float | None) -> tuple[float | None, float | None, float | None]:
    """(monthly at list prices, the same with evictions, the same hours all on-demand): idle every
    hour plus the GPU work hours. With evictions, each pool's Spot hours are
    ``spot_hours_with_evictions`` of them, at the Spot price (an unknown one at its upper bound, the
    on-demand price, so the figures are then upper bounds); on-demand hours are not interrupted."""
    assert cost.gpu_hours_per_month is not None
    idle_on_demand = _sum(None if p.on_demand_price is None else p.on_demand_price * p.group.min_size for p in priced)
    if idle is None or idle_on_demand is None:
        return None, None, None
    work = work_evicted = work_on_demand = 0.0
    for role, total in ((Role.GPU, cost.gpu_hours_per_month), (Role.CPU, cost.cpu_node_hours_per_month)):
        pools = sorted({p.group.pool for p in priced if p.group.role is role})
        if not pools or not total:
            continue
        figures = _pool_hours(priced, cost, pools, total / len(pools))
        if figures is None:
            return None, None, None
        work, work_evicted, work_on_demand = work + figures[0], work_evicted + figures[1], work_on_demand + figures[2]
    return (
        idle * HOURS_PER_MONTH + work,
        idle * HOURS_PER_MONTH + work_evicted,
        idle_on_demand * HOURS_PER_MONTH + work_on_demand,
    )


def _pool_hours(
    priced: Sequence[_Priced], cost: CostSpec, pools: Sequence[str], hours: float
) -> tuple[float, float, float] | None:
    """(work, work with evictions, work all on-demand) in USD for ``hours`` node-hours in each of
    ``pools``; None where a needed price is unknown."""
    work = work_evicted = work_on_demand = 0.0
    for pool in pools:
        mine = [p for p in priced if p.group.pool == pool]
        spot = next((p for p in mine if p.group.capacity is CapacityType.SPOT), None)
        on_demand = next((p for p in mine if p.group.capacity is CapacityType.ON_DEMAND), None)
        # The pool's own groups' on-demand price (a reserved group may hold only the first type).
        od_price = next((p for p in mine if p.group.capacity is not CapacityType.RESERVED), mine[0]).on_demand_price
        if od_price is None:
            return None
        if spot is None:
            share = 0.0
        elif on_demand is None:
            share = 1.0
        else:
            share = cost.spot_share
        spot_price = spot.bound if spot is not None else None  # an unknown Spot price at its upper bound
        if share > 0 and spot_price is None:
            return None
        spot_hours = hours * share
        evicted = spot_hours_with_evictions(spot_hours, cost.eviction_rate_of(pool), cost.redone_share)
        work += spot_hours * (spot_price or 0.0) + (hours - spot_hours) * od_price
        work_evicted += evicted * (spot_price or 0.0) + (hours - spot_hours) * od_price
        work_on_demand += hours * od_price
    return work, work_evicted, work_on_demand


def check_budget(fleet: FleetCost, path: str = "gpupools:cost.budgetPerHour") -> None:
    """``budgetPerHour`` against the ceiling, decided from what is known (module docstring).

    * the ceiling is known, or its upper bound (unknown Spot prices at on-demand) is, and it is
      within the budget: passes, whatever the unknown Spot prices are;
    * the ceiling's known part alone exceeds the budget: a ``ConfigError`` naming what drives it;
    * otherwise it cannot be decided (an unknown price could take the ceiling over the budget, or
      has no bound): a ``ConfigError`` naming the known part, the bound and which pool is unknown, why.

    An EKS Auto Mode fee the catalog lacks, for a pool with nodes at the ceiling, has no bound: the
    ceiling then passes no budget; its known part (EC2 prices and the known fees) can still exceed one.
    """
    budget = fleet.budget_per_hour
    if budget is None:
        return
    exact = fleet.exact(Scenario.CEILING)
    fee_missing = Scenario.CEILING.value in fleet.auto_mode_fee_missing_in
    if fleet.ceiling is not None and fleet.ceiling <= budget and not fee_missing:
        return
    known = fleet.ceiling_known
    unknown_fees = sorted({size for _, sizes in fleet.auto_mode_fee_unknown for size in sizes})
    if exact or (known is not None and known > budget):
        assert known is not None
        # Every figure from the same prices as the total: per pool at the known prices when the total is.
        shares = fleet.ceiling_by_pool if exact else fleet.ceiling_known_by_pool
        drivers = ", ".join(f"{pool} ${share:,.2f}" for pool, share in shares if share)
        prices_known = exact or (fee_missing and not fleet.unpriced_pools)  # only fees are unknown
        part = "" if prices_known else ", from the known prices alone (unknown ones left out)"
        if fee_missing:
            part += f", without the EKS Auto Mode fee of {', '.join(unknown_fees)} (not in the price catalog)"
        raise ConfigError(
            path,
            f"must be at least the fleet's ceiling (every group at its max at once: reserved, Spot and "
            f"fallbacks) in {fleet.region}, ${known:,.2f}/h{part}: {drivers}; lower a maxSize or raise the budget",
            budget,
        )
    pools = ", ".join(f"pool {pool} ({reason})" for pool, reason in fleet.unpriced_pools) or ", ".join(fleet.unpriced)
    fee_pools = ", ".join(pool for pool, _ in fleet.auto_mode_fee_unknown)
    fees = f"the EKS Auto Mode fee of {', '.join(unknown_fees)} (pools {fee_pools}), charged on top of the EC2 price"
    if fee_missing and not pools:  # only Auto Mode fees are missing: no bound
        raise ConfigError(
            path,
            f"cannot be decided: the fleet's ceiling in {fleet.region} is ${known or 0.0:,.2f}/h at EC2 prices and the "
            f"known fees, within the budget, but {fees}, is not in the price catalog and has no bound (fill it: "
            f"{fleet.refresh}, or remove the budget)",
            budget,
        )
    if fleet.ceiling is None or fee_missing:
        bound = "has no upper bound (a size has no price at all)" if fleet.ceiling is None else "has no upper bound"
        fix = "or remove the budget"
    else:
        bound = f"may be up to ${fleet.ceiling:,.2f}/h (unknown Spot prices at on-demand)"
        fix = f"or raise the budget to ${fleet.ceiling:,.2f}"
    missing_fees = f"; nor {fees}" if fee_missing else ""
    raise ConfigError(
        path,
        f"cannot be decided: the fleet's ceiling in {fleet.region} is ${known or 0.0:,.2f}/h from the known prices, "
        f"within the budget, but {bound}; no price in {fleet.region} for {pools}{missing_fees} (refresh the price catalog: "
        f"{fleet.refresh}, {fix})",
        budget,
    )


def pool_prices(pools: Iterable[NodePoolInfo], table: PriceTable, region: str) -> dict[str, float | None]:
    """Per created pool (``NodePoolInfo.name``), USD per node-hour for its own capacity type (with
    the Auto Mode fee on an Auto Mode pool whose fees are known: ``node_price``)."""
    return {p.name: node_price(table, region, p.instance_types, p.capacity, auto_mode=p.auto_mode) for p in pools}


def pool_auto_mode_fees(
    pools: Iterable[NodePoolInfo], table: PriceTable, region: str
) -> dict[str, tuple[float | None, str | None]]:
    """Per created EKS Auto Mode pool: the fee its price includes (``auto_mode_fee_in_price``) and,
    when that is unknown, why (``auto_mode_fee_missing_note``). Other pools are not listed."""
    fees: dict[str, tuple[float | None, str | None]] = {}
    for pool in pools:
        if not pool.auto_mode:
            continue
        fee = auto_mode_fee_in_price(table, region, pool.instance_types, pool.capacity)
        missing = unknown_auto_mode_fees(table, region, pool.instance_types)
        fees[pool.name] = (fee, auto_mode_fee_missing_note(table, region, missing) if missing else None)
    return fees


def pool_price_gaps(pools: Iterable[NodePoolInfo], table: PriceTable, region: str) -> dict[str, str]:
    """Per created pool without a price for its own capacity type: why (``price_gap``)."""
    gaps = {p.name: price_gap(table, region, p.instance_types, p.capacity) for p in pools}
    return {name: gap for name, gap in gaps.items() if gap is not None}


def pool_doubts(pools: Iterable[NodePoolInfo], table: PriceTable, region: str) -> dict[str, str]:
    """Per created pool priced from a doubtful Spot figure (``PriceTable.doubtful``): the figure and why."""
    doubts = {}
    for pool in pools:
        if pool.capacity is not CapacityType.SPOT:
            continue
        notes = table.doubtful_notes(region, pool.instance_types)
        if notes:
            doubts[pool.name] = "; ".join(notes)
    return doubts


def with_costs(
    pools: Iterable[NodePoolInfo],
    prices: Mapping[str, float | None],
    gaps: Mapping[str, str] | None = None,
    doubts: Mapping[str, str] | None = None,
    auto_mode_fees: Mapping[str, tuple[float | None, str | None]] | None = None,
) -> list[dict[str, object]]:
    """The ``nodePools`` output: each pool's entry plus its price per node-hour and cost per hour at
    max, for a pool without a price ``noPrice``: why (``gaps``, from ``pool_price_gaps``), and for a
    pool priced from a doubtful Spot figure ``doubtfulPrice``: which and why (``doubts``, ``pool_doubts``).
    An EKS Auto Mode pool (``auto_mode_fees``, from ``pool_auto_mode_fees``) also gets ``autoModeFee``,
    the fee per node-hour its price includes, ``null`` when unknown, with ``autoModeFeeNote`` saying so."""
    rows = []
    for pool in pools:
        row: dict[str, object] = dict(pool.to_output())
        price = prices.get(pool.name)
        row["pricePerNodeHour"] = _round(price)
        row["costPerHourAtMax"] = _round(None if price is None else price * pool.max_size)
        if price is None and gaps and pool.name in gaps:
            row["noPrice"] = gaps[pool.name]
        if price is not None and doubts and pool.name in doubts:
            row["doubtfulPrice"] = doubts[pool.name]
        if auto_mode_fees and pool.name in auto_mode_fees:
            fee, note = auto_mode_fees[pool.name]
            row["autoModeFee"] = _round(fee)
            if note is not None:
                row["autoModeFeeNote"] = note
        rows.append(row)
    return rows


RESERVED_BASIS = "first, by size facts (reserved node-hours cost nothing extra)"
"""``priorityOrder`` of reserved groups: above every Spot and on-demand group, the smaller node first."""


PRIORITY_EXPANDER = "priority expander"
NODEPOOL_WEIGHTS = "Karpenter NodePool weights"
"""What ``priorityOrder`` orders (``priorityOrderOf``): cluster-autoscaler's priority expander, or,
under Karpenter and AKS Node Auto Provisioning (no priority expander), the NodePools' weights."""


def stack_costs(
    pools: Sequence[NodePoolInfo], table: PriceTable, region: str, cost: CostSpec, *, karpenter: bool = False
) -> tuple[dict[str, float | None], list[dict[str, object]], dict[str, object]]:
    """What a stack exports: per-pool prices (for the priority expander), the ``nodePools`` output
    with prices and the ``cost`` output (fleet figures, plus how the priority order was decided and,
    ``priorityOrderOf``, what it orders: the priority expander, or with ``karpenter`` (EKS Karpenter,
    AKS NAP; default False) the NodePools' weights)."""
    from gpupools.kubernetes.priority_expander import priced_by_size

    prices = pool_prices(pools, table, region)
    fleet = fleet_cost(groups_of_pools(pools), table, region, cost).to_output()
    by_size = {c.value for c in priced_by_size(pools, prices)}
    reserved = any(CapacityType.RESERVED in (p.capacity, *p.capacity_types) for p in pools)
    # In the order capacity is used; "reserved" only where a reserved group exists.
    fleet["priorityOrderOf"] = NODEPOOL_WEIGHTS if karpenter else PRIORITY_EXPANDER
    fleet["priorityOrder"] = {
        **({CapacityType.RESERVED.value: RESERVED_BASIS} if reserved else {}),
        **{
            c.value: ("size facts (a price is unknown)" if c.value in by_size else "price")
            for c in (CapacityType.SPOT, CapacityType.ON_DEMAND)
        },
    }
    auto_mode = [p for p in pools if p.auto_mode]
    if auto_mode:
        block = fleet["autoModeFee"]
        assert isinstance(block, dict)
        # price_order's basis: fees in the weights only when every (non-system) pool's are known.
        block["inNodePoolWeights"] = not unknown_auto_mode_fees(
            table, region, [s for p in auto_mode if p.role is not Role.SYSTEM for s in p.instance_types]
        )
    rows = with_costs(
        pools,
        prices,
        pool_price_gaps(pools, table, region),
        pool_doubts(pools, table, region),
        pool_auto_mode_fees(pools, table, region),
    )
    return prices, rows, fleet


def price_order(pools: Sequence[PoolSpec], table: PriceTable, region: str, *, auto_mode: bool = False) -> list[str] | None:
    """Pool names, cheapest node-hour first (Spot price where the pool buys Spot), for Karpenter's
    NodePool weights, pools with reservations before all others (their first node-hours cost
    nothing extra); ``None`` when a price is unknown (the caller then orders by size facts).

    With ``auto_mode`` (EKS Auto Mode NodePools; default False) a node-hour is its EC2 price plus
    its Auto Mode fee when the catalog has the fee of every size of ``pools``, else the EC2 price
    alone for every pool (one basis for all: ``auto_mode_fee_warning`` says which fees are missing)."""
    with_fees = auto_mode and not unknown_auto_mode_fees(table, region, [s for pool in pools for s in pool.instance_types])
    keyed: list[tuple[bool, float, str]] = []
    for pool in pools:
        capacity = CapacityType.SPOT if pool.spot else CapacityType.ON_DEMAND
        price = node_price(table, region, pool.instance_types, capacity, auto_mode=with_fees)
        if price is None:
            return None
        keyed.append((not pool.reservations, price, pool.name))
    return [name for _, _, name in sorted(keyed)]
