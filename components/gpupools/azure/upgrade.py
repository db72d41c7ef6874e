"""How long a Kubernetes minor upgrade of an AKS stack can take, at worst: the ``upgrade`` stack output.

One ``pulumi up`` with a new ``gpupools:cluster.kubernetesVersion`` runs, in order (docs/aks.md,
"Upgrades"): the managed-cluster PUT (control plane, then the inline System pool), then every
agent pool's own PUT along the pool chain, one after another (AKS runs one agent-pool operation per
cluster at a time). Each pool upgrades in batches of ``maxSurge + maxUnavailable`` nodes; AKS cordons
and drains a batch ("Max unavailable doesn't create surge nodes ... AKS cordons n nodes ... at a
time", AKS ``upgrade-aks-node-pools-rolling.md``), waiting up to ``drainTimeoutInMinutes`` per node for
evictions that PDBs hold up, then reimages it and waits for it to be Ready.

The worst case per pool is ``ceil(maxNodes / batch) * (drain timeout + PER_NODE_MINUTES)``: every
node present (the pool at its max), every drain running into its timeout. Spot pools have no drain
("AKS internally issues a cordon and an eviction notice, but no drain is applied. There are no surge
nodes available for Spot node pool upgrades", AKS ``spot-node-pool.md``) and are counted one node at a
time with ``PER_NODE_MINUTES`` each. The inline System pool takes AKS's defaults (``maxSurge`` 10%,
drain 30 minutes: pulumi-azure-native 3.29 ``AgentPoolUpgradeSettingsArgs``). ``PER_NODE_MINUTES`` and
``CONTROL_PLANE_MINUTES`` are assumptions: AKS documents no per-node or control-plane upgrade time.

The figure is compared with the deploy workflow's job limit (``DEPLOY_JOB_TIMEOUT_MINUTES``,
``.github/workflows/deploy.yml``): above it, docs/aks.md ("Upgrades that outlast the deploy job")
says how to upgrade the pools in later ``up``s instead.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from gpupools.conventions import CapacityType
from gpupools.pools import NodePoolInfo
from gpupools.specs import UpgradeSpec

PER_NODE_MINUTES = 10
"""Assumed minutes per batch besides the drain wait: cordon, reimage (a new node image on the
scale-set instance), boot, kubelet and CNI Ready, the NVIDIA driver on GPU nodes. Not measured: AKS
publishes no figure; change it here when a real upgrade shows otherwise."""

CONTROL_PLANE_MINUTES = 15
"""Assumed minutes for the control plane's own upgrade inside the managed-cluster PUT (not measured)."""

SYSTEM_POOL_UPGRADE = UpgradeSpec(max_surge="10%", max_unavailable="0", drain_timeout_minutes=30)
"""What AKS applies to the inline System pool, which gpupools sends no ``upgradeSettings`` for: its
defaults, ``maxSurge`` "10%", ``maxUnavailable`` 0, drain "30 minutes" (``AgentPoolUpgradeSettingsArgs``)."""

DEPLOY_JOB_TIMEOUT_MINUTES = 120
"""``timeout-minutes`` of the ``deploy`` job in ``.github/workflows/deploy.yml`` (a test keeps them equal)."""


AZURE_NATIVE_DEFAULT_TIMEOUT_MINUTES = 120
"""pulumi-azure-native's deadline for a create or update (its PUT and the long-running-operation poll)
unless ``customTimeouts`` sets one: ``azureContext`` in ``provider/pkg/provider/provider.go`` ("either the
one explicitly specified, or the default one (2 hours)"; custom timeouts honoured since PR #496)."""

TIMEOUT_MARGIN_MINUTES = 30
"""Added to an operation's estimate for its deadline: the estimate assumes 10 minutes a node."""


def operation_timeout(minutes: int) -> str:
    """The ``customTimeouts`` ``update`` of an operation estimated at ``minutes``: the estimate plus
    ``TIMEOUT_MARGIN_MINUTES``, never below the provider's own 2 hours. Without it an agent pool whose
    upgrade the stack itself estimates past 2 hours fails the ``up`` at the provider's deadline while AKS
    goes on upgrading, and the next pool's PUT gets 409 until it is done (third AKS review, NM3)."""
    return f"{max(AZURE_NATIVE_DEFAULT_TIMEOUT_MINUTES, minutes + TIMEOUT_MARGIN_MINUTES)}m"


def agent_pool_minutes(max_nodes: int, upgrade: UpgradeSpec | None) -> int:
    """One agent pool's upgrade estimate: ``upgrade`` None for a Spot pool (no drain, no surge)."""
    return int(_entry("", max_nodes, upgrade)["minutes"])


def cluster_minutes(system_max_nodes: int) -> int:
    """The managed cluster's PUT of a minor upgrade: the control plane, then its inline System pool."""
    return CONTROL_PLANE_MINUTES + agent_pool_minutes(system_max_nodes, SYSTEM_POOL_UPGRADE)


def pool_minutes(max_nodes: int, nodes_at_once: int, drain_minutes: int) -> int:
    """``ceil(max_nodes / nodes_at_once) * (drain_minutes + PER_NODE_MINUTES)``; 0 for an empty pool."""
    if max_nodes <= 0:
        return 0
    return math.ceil(max_nodes / max(1, nodes_at_once)) * (drain_minutes + PER_NODE_MINUTES)


def _entry(name: str, max_nodes: int, upgrade: UpgradeSpec | None) -> dict[str, Any]:
    if upgrade is None:  # Spot: cordon and eviction notice, no drain, no surge
        batch, drain = 1, 0
    else:
        batch, drain = upgrade.nodes_at_once(max_nodes), upgrade.drain_timeout_minutes
    return {
        "name": name,
        "maxNodes": max_nodes,
        "nodesAtOnce": batch,
        "drainTimeoutMinutes": drain,
        "minutes": pool_minutes(max_nodes, batch, drain),
    }


def upgrade_estimate(
    system_pool: NodePoolInfo,
    agent_pools: Sequence[NodePoolInfo],
    upgrades: Mapping[str, UpgradeSpec],
) -> dict[str, Any]:
    """The worst-case duration of a minor upgrade (the ``upgrade`` stack output).

    Args:
        system_pool: the inline System pool (``AksCluster.system_pool``).
        agent_pools: every standalone agent pool, in chain order (none under NAP).
        upgrades: each config pool's ``upgrade`` by pool name (``PoolSpec.upgrade``).

    Returns ``worstCaseMinutes``, ``controlPlaneMinutes``, ``pools`` (one entry per pool, the System
    pool first: ``name``, ``maxNodes``, ``nodesAtOnce``, ``drainTimeoutMinutes``, ``minutes``),
    ``perNodeMinutesAssumed``, ``deployJobTimeoutMinutes`` and ``fitsDeployJob``.
    """
    pools = [_entry(system_pool.name, system_pool.max_size, SYSTEM_POOL_UPGRADE)]
    for info in agent_pools:
        spot = info.capacity is CapacityType.SPOT
        pools.append(_entry(info.name, info.max_size, None if spot else upgrades.get(info.pool, UpgradeSpec())))
    total = CONTROL_PLANE_MINUTES + sum(p["minutes"] for p in pools)
    return {
        "worstCaseMinutes": total,
        "controlPlaneMinutes": CONTROL_PLANE_MINUTES,
        "pools": pools,
        "perNodeMinutesAssumed": PER_NODE_MINUTES,
        "deployJobTimeoutMinutes": DEPLOY_JOB_TIMEOUT_MINUTES,
        "fitsDeployJob": total <= DEPLOY_JOB_TIMEOUT_MINUTES,
    }
