"""cluster-autoscaler's priority expander ConfigMap: reserved capacity first, then the cheapest
capacity, Spot above on-demand, the system pool last.

cluster-autoscaler (``--expander=priority``, AKS profile ``expander: priority``) reads the ConfigMap
``cluster-autoscaler-priority-expander`` in its namespace. Key ``priorities`` holds YAML: a map
from an integer priority to a *list* of regular expressions; among the node groups that could
host the pending pods it picks one from the highest priority whose regexes match the group's name
(kubernetes/autoscaler ``expander/priority/priority.go``: an unanchored Go regexp search on the
node group ID, which is the VMSS name on AKS and the ASG name on EKS), and among several groups of
that priority it picks at random (the same file: ties go to a random choice; AKS accepts one
expander only, so least-waste cannot break the tie: Azure/AKS #2610).

So every pool gets its own tier (``pool_priorities``), which removes the random choice:

* every reserved group (a node group in an EC2 capacity reservation, an AKS agent pool in a
  Capacity Reservation Group: ``CapacityType.RESERVED``)
  above every Spot pool, every Spot pool above every on-demand pool, the system pool lowest: a
  reservation is paid for whether or not it is used, so its nodes cost nothing extra;
* within reserved, by size facts (below): every reserved node-hour is free, so the smallest node
  that fits comes first and a one-GPU pod does not take an eight-GPU reservation;
* within Spot and within on-demand, the cheaper node-hour higher (``prices``: USD per node-hour
  per pool, from ``gpupools.pricing``); equal prices share a tier (equivalent for the job);
* where a price of a class is unknown (or no prices are given), that class is ordered by size facts
  instead: fewer GPUs, then fewer vCPUs, higher, so a one-GPU pod is not placed on an eight-GPU node
  when a one-GPU node would do.

Pods that fit several pools therefore get the cheapest pool that fits; pods pinned to a pool
(``gpu_workload(pool=...)``) are unaffected, since only their pool's groups can host them.

Two rules make it work:

* Lists, never scalars: ``30: ^aks-...$`` fails to parse as ``map[int][]string`` and the whole
  configuration is ignored (kubernetes/autoscaler#8321).
* Tiers that cannot overlap: a regex that also matches a lower tier's group lifts that group up
  (kubernetes/autoscaler#4098). ``check_tiers_disjoint`` tries every pool's regex against the names
  cluster-autoscaler would see for the pools of the other tiers.

``priority_tiers`` is the pure decision; ``PriorityExpander`` registers the ConfigMap.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpupools.catalog.sizes import size_facts
from gpupools.conventions import CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import CONFIG_MAP
from gpupools.pools import NodePoolInfo

TYPE = "gpupools:index:PriorityExpander"

KINDS = (CONFIG_MAP,)
"""What it creates (``KubernetesAccessGate`` checks it): one ConfigMap."""

NAMESPACE = "kube-system"
"""Where the ConfigMap goes by default: cluster-autoscaler's namespace."""

CONFIG_MAP_NAME = "cluster-autoscaler-priority-expander"
"""The name cluster-autoscaler looks for (``PriorityConfigMapName``)."""

CONFIG_MAP_KEY = "priorities"
"""The data key cluster-autoscaler reads (``ConfigMapKey``)."""

SYSTEM_PRIORITY = 10
"""The system pool: listed so cluster-autoscaler does not warn ``PriorityConfigMapNotMatchedGroup``
for it; lowest, though pods that fit there rarely fit a GPU group anyway."""

TIER_STEP = 10
"""Distance between consecutive tiers: on-demand tiers start at 20, Spot tiers continue above the
cheapest on-demand tier. Readable numbers; only their order matters."""

UNSUPPORTED_BY_RE2 = re.compile(r"\(\?[=!]|\(\?<[=!]|\\[1-9]")
"""Lookaround and backreferences: valid in Python, rejected by Go's RE2, so cluster-autoscaler
would refuse the whole configuration."""

_EXAMPLE_NAMESPACE = uuid.UUID("3b0f7c52-4bb4-4f8e-a0c8-5f7e3f3b9a21")


def order_key(pool: NodePoolInfo) -> tuple[int, int]:
    """Size facts of a pool, smaller first: (GPUs per node, vCPUs of its largest type)."""
    vcpus = max((facts[1] for t in pool.instance_types if (facts := size_facts(t)) is not None), default=0)
    return (pool.gpus_per_node, vcpus)


def pool_priorities(pools: Sequence[NodePoolInfo], prices: Mapping[str, float | None] | None = None) -> dict[str, int]:
    """Per pool (``NodePoolInfo.name``), its priority: see the module docstring.

    Args:
        pools: every autoscaled pool of the cluster.
        prices: USD per node-hour per pool name, for the pool's own capacity type; missing or
            ``None`` means unknown, and the pool's capacity class is then ordered by size facts.
    """
    prices = prices or {}
    result: dict[str, int] = {}
    next_priority = SYSTEM_PRIORITY + TIER_STEP
    # Lowest class first; reserved last, so highest. Reserved node-hours are all free: size facts.
    for capacity in (CapacityType.ON_DEMAND, CapacityType.SPOT, CapacityType.RESERVED):
        members = [p for p in pools if p.role is not Role.SYSTEM and p.capacity is capacity]
        known = capacity is not CapacityType.RESERVED and all(prices.get(p.name) is not None for p in members)
        # Dearest first, so the cheapest ends up with the highest priority of its class.
        keys: dict[str, tuple[float, ...]] = {
            p.name: ((prices[p.name] or 0.0,) if known else tuple(float(v) for v in order_key(p))) for p in members
        }
        for key in sorted(set(keys.values()), reverse=True):
            for pool in members:
                if keys[pool.name] == key:
                    result[pool.name] = next_priority
            next_priority += TIER_STEP
    for pool in pools:
        if pool.role is Role.SYSTEM:
            result[pool.name] = SYSTEM_PRIORITY
    return result


def priced_by_size(pools: Sequence[NodePoolInfo], prices: Mapping[str, float | None] | None) -> list[CapacityType]:
    """The capacity classes ordered by size facts because a price is unknown (for synth to say so).
    Reserved groups are always ordered by size facts (free node-hours) and are not listed here."""
    prices = prices or {}
    return [
        capacity
        for capacity in (CapacityType.SPOT, CapacityType.ON_DEMAND)
        if any(p.role is not Role.SYSTEM and p.capacity is capacity and prices.get(p.name) is None for p in pools)
    ]


def example_group_names(pool: NodePoolInfo) -> tuple[str, str]:
    """Names cluster-autoscaler could see for ``pool``, in both clouds' formats, derived
    deterministically from its name: the AKS scale set ``aks-<pool>-<8 digits>-vmss`` and the EKS
    ASG ``eks-<nodegroup>-<uuid>``."""
    digits = str(int(hashlib.sha256(pool.name.encode()).hexdigest(), 16))[-8:]
    return (f"aks-{pool.name}-{digits}-vmss", f"eks-{pool.name}-{uuid.uuid5(_EXAMPLE_NAMESPACE, pool.name)}")


def _check_regex(pool: NodePoolInfo, path: str) -> None:
    regex = pool.autoscaler_group_regex
    if not regex:
        raise ConfigError(path, "must be a regex matching the node group name cluster-autoscaler sees", regex)
    try:
        re.compile(regex)
    except re.error as error:
        raise ConfigError(path, f"must be a valid regular expression ({error})", regex) from None
    if UNSUPPORTED_BY_RE2.search(regex):
        raise ConfigError(path, "must not use lookaround or backreferences (Go's RE2, which cluster-autoscaler uses)", regex)


def check_tiers_disjoint(
    pools: Sequence[NodePoolInfo],
    group_names: Mapping[str, Sequence[str]],
    path: str = "PriorityExpander.pools",
    tiers: Mapping[str, int] | None = None,
) -> None:
    """Check each pool's regex against real or realistic node group names.

    Args:
        pools: the pools to rank.
        group_names: per pool name (``NodePoolInfo.name``), names cluster-autoscaler sees (or
            would see) for that pool. A pool missing here is not checked as a target.
        path: the argument path for errors.
        tiers: each pool's priority (default ``pool_priorities(pools)``).

    Raises:
        ConfigError: a pool's regex matches none of its own names (the pool would never be
            ranked), or matches a name of a pool in another tier (cluster-autoscaler searches
            unanchored, so that is what is checked).
    """
    tier_of = tiers if tiers is not None else pool_priorities(pools)
    for index, pool in enumerate(pools):
        regex = re.compile(pool.autoscaler_group_regex)
        own = list(group_names.get(pool.name, ()))
        if own and not any(regex.search(name) for name in own):
            raise ConfigError(
                f"{path}[{index}].autoscalerGroupRegex",
                "must match the node group name cluster-autoscaler sees for this pool",
                pool.autoscaler_group_regex,
                f"for example {own[0]}",
            )
        for other in pools:
            if tier_of[other.name] == tier_of[pool.name]:
                continue
            for name in group_names.get(other.name, ()):
                if regex.search(name):
                    raise ConfigError(
                        f"{path}[{index}].autoscalerGroupRegex",
                        f"must not match node groups of another priority tier ({other.name}, priority {tier_of[other.name]})",
                        pool.autoscaler_group_regex,
                        f"it matches {name}",
                    )


def priority_tiers(
    pools: Sequence[NodePoolInfo],
    *,
    prices: Mapping[str, float | None] | None = None,
    group_names: Mapping[str, Sequence[str]] | None = None,
    path: str = "PriorityExpander.pools",
) -> dict[int, list[str]]:
    """The priority expander's tiers for ``pools``: priority -> sorted, distinct regexes.

    Each pool's priority comes from ``pool_priorities`` (reserved above Spot above on-demand, the cheaper higher,
    the system pool at ``SYSTEM_PRIORITY``); higher wins. The mapping is ordered from the highest
    priority down.

    Args:
        pools: every autoscaled pool of the cluster.
        prices: USD per node-hour per pool name (see ``pool_priorities``); default none: every
            class ordered by size facts.
        group_names: names to check the regexes against (see ``check_tiers_disjoint``); default:
            ``example_group_names`` of every pool.
        path: the argument path for errors.

    Raises:
        ConfigError: no pools; a missing, invalid or RE2-incompatible regex; one regex in two
            tiers; a regex that misses its own pool or matches another tier's group.
    """
    if not pools:
        raise ConfigError(path, "must include at least one pool", [])
    for index, pool in enumerate(pools):
        _check_regex(pool, f"{path}[{index}].autoscalerGroupRegex")
    priority = pool_priorities(pools, prices)
    tiers: dict[int, set[str]] = {}
    owner: dict[str, int] = {}
    for index, pool in enumerate(pools):
        at = f"{path}[{index}].autoscalerGroupRegex"
        tier = priority[pool.name]
        regex = pool.autoscaler_group_regex
        if owner.get(regex, tier) != tier:
            raise ConfigError(at, f"must not appear in two priority tiers ({owner[regex]} and {tier})", regex)
        owner[regex] = tier
        tiers.setdefault(tier, set()).add(regex)
    names = group_names if group_names is not None else {p.name: example_group_names(p) for p in pools}
    check_tiers_disjoint(pools, names, path, priority)
    return {tier: sorted(tiers[tier]) for tier in sorted(tiers, reverse=True)}


def render_priorities(tiers: Mapping[int, Sequence[str]]) -> str:
    """The ``priorities`` YAML: each priority, highest first, with a block list of regexes
    (never a scalar: kubernetes/autoscaler#8321)."""
    document = {int(tier): list(tiers[tier]) for tier in sorted(tiers, reverse=True)}
    return yaml.safe_dump(document, default_flow_style=False, sort_keys=False, width=1000)


class PriorityExpander(pulumi.ComponentResource):
    """The ``cluster-autoscaler-priority-expander`` ConfigMap: the cheapest pool first, Spot above on-demand.

    Pass every autoscaled pool of the cluster (system and GPU, Spot and on-demand); the stack
    also sets the autoscaler's expander to ``priority`` (AKS autoscaler profile, or the EKS
    cluster-autoscaler's ``--expander=priority,least-waste``). Give the cluster's Kubernetes
    provider through ``opts``.

    Args:
        name: the component's name; also ``app.kubernetes.io/instance``.
        pools: the cluster's pools, each with its ``autoscaler_group_regex``.
        namespace: cluster-autoscaler's namespace; default ``kube-system`` (where AKS's managed
            autoscaler and the official chart's default install look).
        opts: resource options; ``provider`` should be the cluster's.
        prices: USD per node-hour per pool name (``gpupools.pricing.estimate.pool_prices``);
            default none, which orders each capacity class by size facts.

    Attributes:
        tiers: priority -> regexes, as rendered.
        priorities: the rendered YAML (``data.priorities``).
        config_map: the ConfigMap.

    Raises:
        ConfigError: see ``priority_tiers``; raised before anything is registered.
    """

    tiers: dict[int, list[str]]
    priorities: str
    config_map: k8s.core.v1.ConfigMap

    def __init__(
        self,
        name: str,
        pools: Sequence[NodePoolInfo],
        namespace: str = NAMESPACE,
        opts: pulumi.ResourceOptions | None = None,
        prices: Mapping[str, float | None] | None = None,
    ) -> None:
        tiers = priority_tiers(pools, prices=prices, path=f"PriorityExpander({name}).pools")
        super().__init__(TYPE, name, None, opts)
        self.tiers = tiers
        self.priorities = render_priorities(tiers)
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-configmap",
            metadata={
                "name": CONFIG_MAP_NAME,
                "namespace": namespace,
                "labels": {
                    "app.kubernetes.io/name": CONFIG_MAP_NAME,
                    "app.kubernetes.io/instance": name,
                    "app.kubernetes.io/managed-by": "pulumi",
                },
            },
            data={CONFIG_MAP_KEY: self.priorities},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"priorities": self.priorities})
