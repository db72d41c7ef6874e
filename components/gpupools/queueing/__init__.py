"""Kueue on the pools (``gpupools:queueing``): jobs wait in a queue with quotas equal to the pools'
capacity at max, are admitted in the order capacity is bought, and under cluster-autoscaler get
all of their GPU nodes at once or wait.

* ``quotas``: what the pools hold at max, in Kueue's units (the synth ceiling's node count);
* ``flavors``: a ResourceFlavor per pool and capacity type (per NodePool under Karpenter/NAP), in
  the priority expander's or NodePool weights' order;
* ``queues``: ClusterQueues, the teams' Cohort, LocalQueues, the ProvisioningRequest admission check;
* ``kueue``: the ``Kueue`` (chart) and ``KueueQueues`` components;
* ``check``: the config rules;
* ``workloads``: a gang-job helper (an indexed Job, its headless Service, torchrun's environment).

``install`` composes them for the stacks.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pulumi

from gpupools.pools import NodePoolInfo
from gpupools.queueing.check import atomic_scale_up
from gpupools.queueing.flavors import Flavour, flavours
from gpupools.queueing.kueue import Kueue, KueueQueues
from gpupools.specs import StackSpec

__all__ = ["Flavour", "Kueue", "KueueQueues", "flavours", "install"]


def install(
    spec: StackSpec,
    system_pool: NodePoolInfo,
    pools: Sequence[NodePoolInfo],
    provider: pulumi.ProviderResource,
    *,
    after: Sequence[pulumi.Resource] = (),
    prices: Mapping[str, float | None] | None = None,
    weights: Mapping[str, int] | None = None,
) -> tuple[Kueue, KueueQueues] | None:
    """Kueue and the queues for a validated stack, or None when ``gpupools:queueing`` is off.

    Args:
        spec: the stack's spec.
        system_pool: where the controller runs.
        pools: the pools the stack created (``NodePoolInfo``).
        provider: the cluster's Kubernetes provider.
        after: what the release waits for (what serves ProvisioningRequests; the system pool).
        prices: the priority expander's prices (cluster-autoscaler), so the flavour order is its order.
        weights: the NodePools' weights (Karpenter/NAP).
    """
    if not spec.queueing.enabled:
        return None
    ordered = flavours(pools, prices=prices, weights=weights, only=spec.queueing.pools)
    queueing = spec.queueing
    namespaces = [*queueing.namespaces, *(ns for team in queueing.teams for ns in team.namespaces)]
    kueue = Kueue("kueue", system_pool, namespaces, opts=pulumi.ResourceOptions(provider=provider, depends_on=list(after)))
    queues = KueueQueues(
        "queues",
        ordered,
        namespaces=spec.queueing.namespaces,
        teams=spec.queueing.teams,
        atomic_scale_up=atomic_scale_up(spec),
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[kueue.release]),
    )
    return kueue, queues
