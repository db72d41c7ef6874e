"""Pool arguments of the components: one API style for every component that takes pools.

Library users hand a component the same thing a stack config holds: a plain ``gpuPools`` or
``cpuPools`` mapping (``{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}``),
or a ``PoolSpec`` that ``gpupools.config`` built. Either way the pool goes through the rules the
config loader applies (``config.parse_pool`` for a mapping, ``rules.check_gpu_pool`` for both), so a
library user gets the same error, naming the argument path, as a stack config would
(``NapNodePools(nap).pools[0].maxSize: must be >= minSize (2), got 1``), before anything is
registered. One implementation, two entry points (DESIGN.md).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence, Union

from gpupools import config, rules
from gpupools.conventions import Role
from gpupools.errors import ConfigError
from gpupools.specs import AutoscalerSpec, Cloud, MaintenanceSpec, PoolSpec, Provisioner

DEFAULT_CONSOLIDATE_AFTER = AutoscalerSpec().scale_down_unneeded_time
"""A NodePool's ``disruption.consolidateAfter`` when not given: the stack's default
``autoscaler.scaleDownUnneededTime`` (10m, cluster-autoscaler's upstream default), so an idle node
costs the same wait under either provisioner."""

PoolArg = Union[PoolSpec, Mapping[str, Any]]
"""A pool as a component takes it: a ``PoolSpec`` or a plain config mapping."""


def pool_spec(
    pool: object,
    cloud: Cloud,
    path: str,
    role: Role = Role.GPU,
    *,
    zones: Sequence[str] = (),
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    automatic: bool = False,
) -> PoolSpec:
    """One pool argument as a validated ``PoolSpec``.

    A mapping is parsed as a ``gpuPools`` entry (``role=Role.GPU``, the default) or a ``cpuPools``
    entry (``Role.CPU``); a ``PoolSpec`` keeps its own role. ``zones`` are the cluster's (empty on
    AWS means "resolved at deploy time"); ``provisioner`` picks the rule set (Karpenter lifts the
    per-zone node group rules); ``automatic`` an AKS Automatic cluster (``gpuDriver`` managed).
    """
    if isinstance(pool, PoolSpec):
        spec = pool
    elif isinstance(pool, Mapping):
        spec = config.parse_pool(pool, cloud, path, role)
    else:
        raise ConfigError(path, "must be a PoolSpec or a gpuPools/cpuPools mapping", type(pool).__name__)
    rules.check_gpu_pool(spec, cloud, path, zones, provisioner=provisioner, automatic=automatic)
    return spec


def pool_specs(
    pools: object,
    cloud: Cloud,
    path: str,
    *,
    cpu_pools: object = (),
    zones: Sequence[str] = (),
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    check: Callable[[PoolSpec, str], None] | None = None,
    automatic: bool = False,
) -> list[PoolSpec]:
    """``pools`` (mappings read as ``gpuPools`` entries) then ``cpu_pools`` (as ``cpuPools`` entries),
    each validated by ``pool_spec`` and then by ``check`` (a component's own rules, given the spec
    and its argument path); names must be unique across both, as in a stack config."""
    specs: list[PoolSpec] = []
    for argument, role in (("pools", Role.GPU), ("cpu_pools", Role.CPU)):
        entries = pools if argument == "pools" else cpu_pools
        if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Sequence):
            raise ConfigError(f"{path}.{argument}", "must be a list of pools", type(entries).__name__)
        for index, pool in enumerate(entries):
            at = f"{path}.{argument}[{index}]"
            spec = pool_spec(pool, cloud, at, role, zones=zones, provisioner=provisioner, automatic=automatic)
            if check is not None:
                check(spec, at)
            specs.append(spec)
    rules.check_unique([spec.name for spec in specs], f"{path}.pools", "pool names")
    return specs


def check_consolidate_after(value: object, path: str) -> str:
    """A NodePool's ``consolidateAfter`` as the components take it: whole minutes like the
    ``autoscaler.scaleDownUnneededTime`` it comes from in a stack (``rules.MINUTES``, 1m to 60m)."""
    if not isinstance(value, str) or not rules.MINUTES.match(value) or int(value[:-1]) > 60:
        raise ConfigError(path, "must be whole minutes from 1m to 60m, written like 10m", value)
    return value


def nodepool_arguments(path: str, maintenance: MaintenanceSpec | None, consolidate_after: object) -> MaintenanceSpec:
    """The arguments every NodePool component shares, checked: the maintenance window (default
    ``MaintenanceSpec()``, returned) and ``consolidate_after``."""
    window = maintenance if maintenance is not None else MaintenanceSpec()
    rules.check_maintenance(window, f"{path}.maintenance")
    check_consolidate_after(consolidate_after, f"{path}.consolidate_after")
    return window
