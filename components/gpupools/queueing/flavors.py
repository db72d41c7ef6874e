"""Kueue ResourceFlavors from the pools as created, in the order capacity is bought.

A ResourceFlavor (``kueue.x-k8s.io/v1beta2``) names a kind of node: Kueue puts its ``nodeLabels``
into the admitted pods' node selector and adds its ``tolerations`` to theirs
(kubernetes-sigs/kueue v0.19.2 ``apis/kueue/v1beta2/resourceflavor_types.go``: "the ResourceFlavor's
nodeLabels should be injected into the pods of the Workload"; "tolerations are extra tolerations
that will be added to the pods admitted in the quota associated with this resource flavor"). So:

* **one flavour per pool and capacity type** under cluster-autoscaler: EKS node groups and AKS
  agent pools each have one capacity type, and gpupools labels their nodes ``gpupools.io/pool`` and
  ``gpupools.io/capacity-type`` (``NodePoolInfo.labels``). ``nodeLabels`` are exactly those two
  labels, read from the pools' own labels, so they are labels the nodes carry. Per-zone groups of a
  pool and capacity type are one flavour (the zones are the autoscaler's business).
* **one flavour per NodePool** under Karpenter and AKS Node Auto Provisioning: one NodePool buys
  reserved, Spot and on-demand nodes under one ``spec.limits`` and falls back between them itself
  ("If a NodePool is compatible with multiple capacity types, Karpenter will prioritize reserved
  capacity, followed by spot, then finally on-demand", Karpenter ``concepts/nodepools.md``).
  A flavour per capacity type would pin each admitted job to one capacity type, switching that
  fallback off, and would count the one limit once per capacity type: the queue could admit twice
  what the NodePool may launch. ``nodeLabels`` is ``gpupools.io/pool``, a label of the NodePool's
  template, so every node Karpenter launches for it carries it.
* **tolerations exactly for the pool's taints** (``Taint.toleration``: operator ``Equal``, key,
  value, effect), the GPU taint, a pool's own taints and the AKS Spot taint included, and nothing
  else: an admitted pod lands on its flavour's nodes and on no other tainted node.
* **the order**: "Kueue assigns the first flavor in the ClusterQueue's
  ``.spec.resourceGroups[*].flavors`` list that has enough unused ``nominalQuota``" (Kueue v0.19.2
  ``site/content/en/docs/concepts/cluster_queue.md``), so the order is the buying order the autoscaler already uses:
  the priority expander's tiers (``priority_expander.pool_priorities``: reserved, then Spot, then
  on-demand, cheaper first) under cluster-autoscaler, the NodePools' ``spec.weight`` (higher
  first) under Karpenter/NAP. The same function and the same weights produce both, so they cannot
  disagree (``tests/test_queueing.py``).

``flavours`` is the pure decision; ``resource_flavor`` renders one object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from gpupools.conventions import POOL_LABEL, CapacityType, Role, Taint
from gpupools.errors import ConfigError
from gpupools.kubernetes.priority_expander import pool_priorities
from gpupools.pools import NodePoolInfo
from gpupools.pricing.estimate import groups_of_pools
from gpupools.queueing.quotas import Quota, group_quotas
from gpupools.specs import frozen_map

API_VERSION = "kueue.x-k8s.io/v1beta2"
"""The storage version of every Kueue kind at v0.19.2 (``tests/crds/kueue``); the AKS Kueue docs
write ResourceFlavor as ``kueue.x-k8s.io/v1beta2`` too."""

MAX_FLAVORS = 64
"""``resourceGroups[].flavors`` ``maxItems`` in the ClusterQueue CRD (v0.19.2)."""


@dataclass(frozen=True)
class Flavour:
    """One ResourceFlavor and the capacity behind it.

    Attributes:
        name: ``<pool>-<capacity>`` (``gpu1-spot``), or ``<pool>`` for a Karpenter/NAP NodePool.
        pool: the ``gpuPools``/``cpuPools`` entry.
        role: gpu or cpu.
        capacity: the capacity type, or None for a NodePool that buys several.
        node_labels: ``spec.nodeLabels``.
        taints: the taints of its nodes (tolerated exactly by ``spec.tolerations``).
        quota: what its nodes hold at max.
        rank: its place in the buying order (the priority tier or NodePool weight; higher first).
    """

    name: str
    pool: str
    role: Role
    capacity: CapacityType | None
    node_labels: Mapping[str, str] = field(default_factory=frozen_map)
    taints: tuple[Taint, ...] = ()
    quota: Quota = field(default_factory=Quota)
    rank: int = 0

    @property
    def tolerations(self) -> list[dict[str, str]]:
        return [taint.toleration() for taint in sorted(self.taints)]

    @property
    def is_gpu(self) -> bool:
        return self.role is Role.GPU


def flavour_name(pool: str, capacity: CapacityType | None) -> str:
    return f"{pool}-{capacity.value}" if capacity is not None else pool


def _one_taint_set(members: Sequence[NodePoolInfo], path: str) -> tuple[Taint, ...]:
    taint_sets = {tuple(sorted(set(m.taints))) for m in members}
    if len(taint_sets) != 1:
        raise ConfigError(path, "must carry one set of taints in every group of a pool and capacity type", sorted(taint_sets))
    return taint_sets.pop()


def flavours(
    pools: Sequence[NodePoolInfo],
    *,
    prices: Mapping[str, float | None] | None = None,
    weights: Mapping[str, int] | None = None,
    only: Sequence[str] = (),
    path: str = "gpupools:queueing",
) -> list[Flavour]:
    """The flavours of ``pools`` (the system pool is never one), in buying order.

    Args:
        pools: every pool the stack created (``NodePoolInfo``), as given to the priority expander
            or returned by the Karpenter/NAP NodePools component.
        prices: the priority expander's prices (USD per node-hour per ``NodePoolInfo.name``), so
            the order is its order; cluster-autoscaler pools only.
        weights: ``spec.weight`` per NodePool name (``NodePoolInfo.name``); given for Karpenter/NAP.
        only: pool names to include; empty means every pool.
        path: the config path for errors.

    Raises:
        ConfigError: more flavours than a ClusterQueue takes, or a pool whose groups disagree on taints.
    """
    work = [p for p in pools if p.role is not Role.SYSTEM and (not only or p.pool in set(only))]
    groups = groups_of_pools(work)
    slots = {p.pool: p.gpu_slots_per_node for p in work}
    quotas = group_quotas(groups, slots, path, {p.pool: p.efa_interfaces for p in work})
    result: list[Flavour] = []
    if weights is not None:
        # Karpenter/NAP: one flavour per NodePool, its whole limit.
        for info in work:
            quota = sum((q for (pool, _), q in quotas.items() if pool == info.pool), Quota())
            result.append(
                Flavour(
                    name=flavour_name(info.pool, None),
                    pool=info.pool,
                    role=info.role,
                    capacity=None,
                    node_labels=frozen_map({POOL_LABEL: info.labels[POOL_LABEL]}),
                    taints=tuple(sorted(set(info.taints))),
                    quota=quota,
                    rank=weights[info.name],
                )
            )
    else:
        priority = pool_priorities(pools, prices)
        members: dict[tuple[str, CapacityType], list[NodePoolInfo]] = {}
        for info in work:
            members.setdefault((info.pool, info.capacity), []).append(info)
        for (pool, capacity), infos in members.items():
            first = infos[0]
            result.append(
                Flavour(
                    name=flavour_name(pool, capacity),
                    pool=pool,
                    role=first.role,
                    capacity=capacity,
                    node_labels=frozen_map(
                        {POOL_LABEL: first.labels[POOL_LABEL], first.capacity_label: first.labels[first.capacity_label]}
                    ),
                    taints=_one_taint_set(infos, f"{path}.pools[{pool}]"),
                    quota=quotas[(pool, capacity.value)],
                    rank=max(priority[i.name] for i in infos),
                )
            )
    result.sort(key=lambda f: (-f.rank, f.name))
    if len(result) > MAX_FLAVORS:
        raise ConfigError(
            f"{path}.pools", f"must give at most {MAX_FLAVORS} flavours (a ClusterQueue's limit)", [f.name for f in result]
        )
    return result


def resource_flavor(flavour: Flavour) -> dict[str, Any]:
    """The ResourceFlavor object (cluster-scoped)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavour.name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "spec": {"nodeLabels": dict(flavour.node_labels), "tolerations": flavour.tolerations},
    }
