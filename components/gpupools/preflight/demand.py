"""What a stack asks the cloud for, cloud-neutral and pure: per pool and capacity type, the instance
types, the zones and the most nodes it may ever run.

This mirrors the pool plans of the components (``gpupools.azure.node_pool.plan_agent_pools``,
``gpupools.aws.node_group.plan_gpu_groups``): a ``gpuPools`` entry with ``spot: true`` asks for a
Spot pool of up to ``maxSize`` nodes and, unless ``onDemandFallback: false``, an on-demand pool of up
to ``onDemandMaxSize`` (default ``maxSize``); with ``spot: false`` one on-demand pool of up to
``maxSize``. Both are totals across the pool's zones (the pool's own ``zones``, else the cluster's).
The system pool is on-demand, up to ``systemPool.maxSize`` nodes, across the cluster's zones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gpupools.conventions import CapacityType
from gpupools.specs import GpuPoolSpec, StackSpec

SYSTEM_POOL = "system"
"""The POOL column of the system pool's rows (the ``gpupools.io/pool`` value of the system pool)."""


@dataclass(frozen=True)
class PoolDemand:
    """One pool (or set of per-zone groups) of one capacity type.

    Attributes:
        pool: the ``gpuPools`` entry, or ``system``.
        capacity: spot or on-demand.
        instance_types: its VM sizes / instance types.
        zones: the zones it spans; empty for a regional (zone-less) AKS pool.
        max_nodes: the most nodes it may run, across all its zones.
    """

    pool: str
    capacity: CapacityType
    instance_types: tuple[str, ...]
    zones: tuple[str, ...]
    max_nodes: int


def gpu_pool_demands(pool: GpuPoolSpec, cluster_zones: Sequence[str]) -> list[PoolDemand]:
    """The Spot pool and its fallback, or the one on-demand pool, of a ``gpuPools`` entry."""
    zones = tuple(pool.zones or cluster_zones)
    if not pool.spot:
        return [PoolDemand(pool.name, CapacityType.ON_DEMAND, pool.instance_types, zones, pool.max_size)]
    demands = [PoolDemand(pool.name, CapacityType.SPOT, pool.instance_types, zones, pool.max_size)]
    if pool.on_demand_fallback:
        demands.append(PoolDemand(pool.name, CapacityType.ON_DEMAND, pool.instance_types, zones, pool.fallback_max_size))
    return demands


def stack_demands(spec: StackSpec, cluster_zones: Sequence[str]) -> list[PoolDemand]:
    """Every pool the stack creates, the system pool first.

    ``cluster_zones`` is ``spec.cluster.zones`` resolved: on AWS an empty list means "the region's
    first three zones", which only the cloud can answer (``gpupools.preflight.aws.default_zones``).
    """
    system = spec.system_pool
    demands = [PoolDemand(SYSTEM_POOL, CapacityType.ON_DEMAND, system.instance_types, tuple(cluster_zones), system.max_size)]
    for pool in spec.pools:  # gpuPools, then cpuPools: each is a Spot pool and its fallback
        demands.extend(gpu_pool_demands(pool, cluster_zones))
    return demands


def zone_pairs(demands: Sequence[PoolDemand]) -> list[tuple[str, tuple[str, ...], str]]:
    """``(pool, instance types, zone)`` once per pool and zone (a Spot pool and its fallback share
    types and zones, so they need one offering check, not two). A zone-less pool gives zone ``""``."""
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    pairs = []
    for demand in demands:
        for zone in demand.zones or ("",):
            key = (demand.pool, demand.instance_types, zone)
            if key not in seen:
                seen.add(key)
                pairs.append(key)
    return pairs
