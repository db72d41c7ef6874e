"""The config contract: ``Pulumi.<stack>.yaml`` -> frozen, validated ``StackSpec``.

Pure Python: no resources are registered here, so a bad config fails before the first one. Every
violation raises one ``ConfigError`` naming the config path, the rule and the value, e.g.
``gpupools:gpuPools[1].maxSize: must be >= minSize (2), got 1``. Unknown keys are errors with a
"did you mean" suggestion: a typo in ``maxSize`` must never silently become the default.

Two entry points:
    ``parse(values, region=None)`` takes the stack's ``config:`` mapping (keys like ``gpupools:cloud``),
    as read from ``Pulumi.<stack>.yaml``; tests and tools use it.
    ``load()`` reads the same keys through ``pulumi.Config`` inside a Pulumi program.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence, TypeVar

from gpupools import rules
from gpupools.catalog import regions
from gpupools.config_keys import (
    KARPENTER_MEANINGLESS_AUTOSCALER_KEYS,
    KARPENTER_MEANINGLESS_POOL_KEYS,
    LARGE_GPU_PROVISION_TIME,
    NAP_MEANINGLESS_POOL_KEYS,
    NO_DEFAULT,
    cloud_only,
    gpu_only,
    keys_of,
)
from gpupools.config_keys import section as declared
from gpupools.conventions import Role, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.specs import (
    UPGRADE_VALUE,
    AmiType,
    AutoscalerSpec,
    CatalogSpec,
    Cloud,
    ClusterSpec,
    CostSpec,
    DevicePluginSpec,
    GpuDriver,
    GpuMetricsSpec,
    GpuPoolSpec,
    MaintenanceSpec,
    NetworkSpec,
    NodeRepairSpec,
    PoolSpec,
    Provisioner,
    QueueingSpec,
    ReservationSpec,
    SharingMode,
    SharingSpec,
    SmokeTestSpec,
    StackSpec,
    SystemPoolSpec,
    TeamQueueSpec,
    UpgradeSpec,
    WarmScheduleSpec,
    WarmSpec,
    WeekDay,
    frozen_map,
)
from gpupools.versions import DEFAULT_DEVICE_PLUGIN_VERSION, DEFAULT_KUBERNETES_VERSION

NAMESPACE = "gpupools"

_CLOUD_SECTIONS = {"cluster": "cluster", "network": "network", "gpuPool": "gpuPools"}
"""The sections with cloud-only keys, as ``AZURE_ONLY_KEYS`` / ``AWS_ONLY_KEYS`` name them."""


TOP_LEVEL_KEYS = keys_of("")
"""Every key list below comes from the one declaration, ``gpupools.config_keys``."""
CLUSTER_KEYS = keys_of("cluster")
NETWORK_KEYS = keys_of("network")
SYSTEM_POOL_KEYS = keys_of("systemPool")
GPU_POOL_KEYS = keys_of("gpuPools")
CPU_POOL_KEYS = GPU_POOL_KEYS
"""A ``cpuPools`` entry takes the same keys; what is GPU-only is a value (an NVIDIA ``amiType``) or
a key in ``GPU_ONLY_POOL_KEYS``."""
GPU_ONLY_POOL_KEYS = gpu_only()
"""Keys that only mean something on a GPU pool: in ``cpuPools`` they are an error that says so."""
SHARING_KEYS = keys_of("gpuPools.sharing")
REPLICATED_KEYS = keys_of("gpuPools.sharing.mps")
UPGRADE_KEYS = keys_of("gpuPools.upgrade")
UPGRADE_VALUE_TYPE = 'a node count or a percentage ("33%")'
"""What ``upgrade.maxSurge`` and ``upgrade.maxUnavailable`` take (ranges in ``rules.check_upgrade``)."""
MIG_KEYS = keys_of("gpuPools.sharing.mig")
WARM_KEYS = keys_of("gpuPools.warm")
WARM_SCHEDULE_KEYS = keys_of("gpuPools.warm.schedule")
TAINT_KEYS = keys_of("gpuPools.taints")
DEVICE_PLUGIN_KEYS = keys_of("devicePlugin")
AUTOSCALER_KEYS = keys_of("autoscaler")


def is_large_gpu_type(instance_type: str) -> bool:
    """8 GPUs or more per node, or more than one EFA interface (p4d, p5, g5.48xlarge, g6e.48xlarge...)."""
    from gpupools.catalog.aws_instance_types import INSTANCE_TYPES

    facts = INSTANCE_TYPES.get(instance_type)
    return facts is not None and (facts.gpus >= 8 or facts.efa_interfaces > 1)


def default_max_node_provision_time(gpu_pools: Sequence[GpuPoolSpec], cloud: Cloud) -> str:
    """``LARGE_GPU_PROVISION_TIME`` on EKS when a GPU pool lists a large GPU type, else ``10m``
    (``AutoscalerSpec``); an explicit ``maxNodeProvisionTime`` always wins. AKS keeps ``10m``: its
    autoscaler profile is the AKS component's."""
    large = cloud is Cloud.AWS and any(is_large_gpu_type(t) for pool in gpu_pools for t in pool.instance_types)
    return LARGE_GPU_PROVISION_TIME if large else AutoscalerSpec.max_node_provision_time


SMOKE_TEST_KEYS = keys_of("smokeTest")
GPU_METRICS_KEYS = keys_of("gpuMetrics")
CATALOG_KEYS = keys_of("catalog")
COST_KEYS = keys_of("cost")
EVICTION_RATE_TYPE = "a number from 0 to 1 (share of Spot runs interrupted)"
"""What ``gpupools:cost.evictionRate`` and ``gpuPools[].evictionRate`` take (ranges in ``rules.check_cost``)."""
NODE_REPAIR_KEYS = keys_of("nodeRepair")
QUEUEING_KEYS = keys_of("queueing")
TEAM_KEYS = keys_of("queueing.teams")
MAINTENANCE_KEYS = keys_of("maintenance")

AZURE_ONLY_KEYS = {name: cloud_only(path, Cloud.AZURE) for name, path in _CLOUD_SECTIONS.items()}
AWS_ONLY_KEYS = {name: cloud_only(path, Cloud.AWS) for name, path in _CLOUD_SECTIONS.items()}
SUPPORT_TYPES = declared("cluster").key("supportType").choices
"""``gpupools:cluster.supportType`` (AWS): the EKS ``UpgradePolicyRequest.supportType`` enum (botocore
``eks`` ``SupportType``; a test keeps the two equal)."""
RESERVATION_KEYS = keys_of("gpuPools.reservations")
RESERVATION_KINDS = declared("gpuPools.reservations").key("kind").choices
"""``reservations[].kind`` (AWS): an On-Demand Capacity Reservation (default) or a Capacity Block for ML."""

DATAPLANES = declared("network").key("dataplane").choices
"""``gpupools:network.dataplane`` values: the AKS ``networkProfile.networkDataplane`` values
(pulumi-azure-native ``containerservice.NetworkDataplane``; a test keeps the two equal)."""

NAP_DATAPLANE = "cilium"
"""The dataplane of a Node Auto Provisioning cluster unless ``network.dataplane`` says otherwise: AKS
"Overview of networking configurations for NAP" supports Azure CNI Overlay with or without Cilium
and recommends Cilium ("optimized for performance with NAP"); its custom-VNet example creates the
cluster with ``--network-plugin-mode overlay --network-dataplane cilium``."""

DEFAULT_SYSTEM_INSTANCE_TYPES = {Cloud.AZURE: ("Standard_D4s_v5",), Cloud.AWS: ("m6i.xlarge",)}
"""Azure: D4s_v5 (4 vCPU, 16 GiB), the smallest general-purpose size AKS accepts for a system pool.
AWS: m6i.xlarge (4 vCPU, 16 GiB), room for CoreDNS, cluster-autoscaler and the CNI."""

DEFAULT_GPU_DISK_GB = {Cloud.AZURE: 128, Cloud.AWS: 100}
"""Azure: the AKS default OS disk. AWS: CUDA images are large; eksctl's 80 GiB fills up quickly."""

DEFAULT_CPU_DISK_GB = {Cloud.AZURE: 128, Cloud.AWS: 80}
"""Azure: the AKS default OS disk. AWS: eksctl's default; data-prep images are smaller than CUDA's."""

DEFAULT_AMI_TYPE = {Role.GPU: AmiType.AL2023_NVIDIA, Role.CPU: AmiType.AL2023_STANDARD}

DEFAULT_AZURE_ZONES = ("1", "2", "3")

T = TypeVar("T")


# --- reading typed values ------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__
    )


def check_keys(raw: Mapping[str, Any], allowed: Sequence[str], path: str) -> None:
    """Reject unknown keys, suggesting the closest known one."""
    for key in raw:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(allowed)
            raise ConfigError(f"{path}.{key}" if path else f"{NAMESPACE}:{key}", "is not a known key", key, hint)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(path, "must be a mapping", value)
    return value


def _get(raw: Mapping[str, Any], key: str, path: str, kind: type, default: Any, describe: str) -> Any:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not ok:
        raise ConfigError(f"{path}.{key}", f"must be {describe}", value)
    return value


def _str(raw: Mapping[str, Any], key: str, path: str, default: Any = None, *, required: bool = False) -> Any:
    if required and (key not in raw or raw[key] is None):
        raise ConfigError(f"{path}.{key}", "is required", None)
    value = _get(raw, key, path, str, default, "a string")
    if required and value == "":
        raise ConfigError(f"{path}.{key}", "must not be empty", value)
    return value


def _int(raw: Mapping[str, Any], key: str, path: str, default: Any = None, *, required: bool = False) -> Any:
    if required and (key not in raw or raw[key] is None):
        raise ConfigError(f"{path}.{key}", "is required", None)
    return _get(raw, key, path, int, default, "an integer")


def _bool(raw: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    return bool(_get(raw, key, path, bool, default, "true or false"))


def _str_list(raw: Mapping[str, Any], key: str, path: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    value = _get(raw, key, path, list, None, "a list of strings")
    if value is None:
        return default
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"{path}.{key}[{index}]", "must be a string", item)
    return tuple(value)


def _str_map(raw: Mapping[str, Any], key: str, path: str) -> Mapping[str, str]:
    value = _get(raw, key, path, dict, None, "a mapping of strings to strings")
    for k, v in (value or {}).items():
        if not isinstance(v, str):
            raise ConfigError(f"{path}.{key}.{k}", "must be a string (quote numbers and booleans)", v)
    return frozen_map(value)


def _enum(raw: Mapping[str, Any], key: str, path: str, enum: Callable[[str], T], choices: Sequence[str], default: T) -> T:
    value = _str(raw, key, path)
    if value is None:
        return default
    if value not in choices:
        close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}?" if close else None
        raise ConfigError(f"{path}.{key}", "must be one of " + ", ".join(choices), value, hint)
    return enum(value)


def declared_value(raw: Mapping[str, Any], section: str, name: str, path: str) -> Any:
    """The value of the key ``name`` of the declared ``section`` (``gpupools.config_keys``) in
    ``raw``, read by its kind with its declared default and the same messages as the readers above.
    For the kinds whose type error reads the same for every key; a number or an enum key says more
    (its range, its choices) and is read by hand."""
    key = declared(section).key(name)
    default = None if key.default is NO_DEFAULT else key.default
    if key.kind == "boolean" and isinstance(key.default, bool):  # else the default depends on the stack
        return _bool(raw, name, path, key.default)
    if key.kind == "string" and not key.choices:
        return _str(raw, name, path, default, required=key.required)
    if key.kind == "integer":
        return _int(raw, name, path, default, required=key.required)
    if key.kind == "strings":
        return _str_list(raw, name, path, tuple(default or ()))
    if key.kind == "labels":
        return _str_map(raw, name, path)
    raise TypeError(f"{path}.{name}: a {key.kind} key with choices or a stack-dependent default is read by hand")


def _reject_keys(raw: Mapping[str, Any], keys: Sequence[str], path: str, rule: str) -> None:
    for key in keys:
        if key in raw:
            raise ConfigError(f"{path}.{key}", rule, raw[key])


# --- sections ------------------------------------------------------------------------------------


def parse_cloud(value: Any) -> Cloud:
    path = f"{NAMESPACE}:cloud"
    if value is None:
        raise ConfigError(path, "is required (azure or aws)", None)
    if value not in [c.value for c in Cloud]:
        raise ConfigError(path, "must be one of azure, aws", value)
    return Cloud(value)


def parse_cluster(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:cluster", region: str | None = None) -> ClusterSpec:
    """``gpupools:cluster``. ``zones`` default: Azure ``DEFAULT_AZURE_ZONES``, or none (a regional
    cluster) in a ``region`` Azure's regions list names without availability zones (``westus``);
    AWS none here, the region's first three at deploy time."""
    if raw is None:
        raise ConfigError(path, "is required (at least a name)", None)
    raw = _mapping(raw, path)
    check_keys(raw, CLUSTER_KEYS, path)
    if cloud is Cloud.AWS:
        _reject_keys(raw, AZURE_ONLY_KEYS["cluster"], path, "is Azure only")
    else:
        _reject_keys(raw, ("permissionsBoundary",), path, "is AWS only (a boundary on the IAM roles the EKS stack creates)")
        _reject_keys(raw, AWS_ONLY_KEYS["cluster"], path, "is AWS only; on Azure grant cluster-admin with adminGroupObjectIds")
    default_zones = DEFAULT_AZURE_ZONES if cloud is Cloud.AZURE else ()
    if cloud is Cloud.AZURE and region and regions.azure_has_zones(region) is False:
        default_zones = ()
    version = raw.get("kubernetesVersion")
    if isinstance(version, float):
        raise ConfigError(
            f"{path}.kubernetesVersion", 'must be a quoted string such as "1.35" (1.30 in YAML is the number 1.3)', version
        )
    return ClusterSpec(
        name=_str(raw, "name", path, required=True),
        kubernetes_version=_str(raw, "kubernetesVersion", path, DEFAULT_KUBERNETES_VERSION),
        zones=_str_list(raw, "zones", path, default_zones),
        allow_local_accounts=_bool(raw, "allowLocalAccounts", path, False),
        admin_group_object_ids=_str_list(raw, "adminGroupObjectIds", path),
        api_allowed_cidrs=_str_list(raw, "apiAllowedCidrs", path),
        admins=_str_list(raw, "admins", path),
        control_plane_logs=_str_list(raw, "controlPlaneLogs", path, ClusterSpec.control_plane_logs),
        support_type=_enum(raw, "supportType", path, str, SUPPORT_TYPES, ClusterSpec.support_type),
        permissions_boundary=_str(raw, "permissionsBoundary", path),
    )


def parse_network(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:network") -> NetworkSpec:
    if raw is None:
        return NetworkSpec()
    raw = _mapping(raw, path)
    check_keys(raw, NETWORK_KEYS, path)
    if cloud is Cloud.AWS:
        _reject_keys(raw, AZURE_ONLY_KEYS["network"], path, "is Azure only; on AWS bring your own vpcId and privateSubnetIds")
    else:
        _reject_keys(raw, AWS_ONLY_KEYS["network"], path, "is AWS only; on Azure bring your own subnet with subnetId")
    if "cidr" in raw and ("subnetId" in raw or "vpcId" in raw):
        raise ConfigError(f"{path}.cidr", "is for a created network; leave it out when bringing your own", raw["cidr"])
    dataplane = _str(raw, "dataplane", path)
    if dataplane is not None and dataplane not in DATAPLANES:
        raise ConfigError(f"{path}.dataplane", "must be one of " + ", ".join(DATAPLANES), dataplane)
    return NetworkSpec(
        cidr=_str(raw, "cidr", path, NetworkSpec.cidr),
        subnet_id=_str(raw, "subnetId", path),
        vpc_id=_str(raw, "vpcId", path),
        private_subnet_ids=_str_list(raw, "privateSubnetIds", path),
        dataplane=dataplane,
    )


def parse_system_pool(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:systemPool") -> SystemPoolSpec:
    raw = _mapping(raw if raw is not None else {}, path)
    if "spot" in raw:
        raise ConfigError(
            f"{path}.spot",
            "is not allowed: the system pool is always on-demand (AKS rejects Spot system pools, and "
            "evicting CoreDNS or the autoscaler stalls the cluster)",
            raw["spot"],
        )
    check_keys(raw, SYSTEM_POOL_KEYS, path)
    return SystemPoolSpec(
        instance_types=_str_list(raw, "instanceTypes", path, DEFAULT_SYSTEM_INSTANCE_TYPES[cloud]),
        min_size=_int(raw, "minSize", path, 2),
        max_size=_int(raw, "maxSize", path, 4),
        disk_size_gb=_int(raw, "diskSizeGb", path, 128),
    )


def parse_taint(raw: Any, path: str) -> Taint:
    raw = _mapping(raw, path)
    check_keys(raw, TAINT_KEYS, path)
    key = _str(raw, "key", path, required=True)
    value = _str(raw, "value", path, "")
    if "value" not in raw or value == "":
        raise ConfigError(
            f"{path}.value",
            "is required and must be non-empty (cluster-autoscaler ignores taints without a value "
            "when it builds a scale-from-zero template)",
            raw.get("value"),
        )
    effects = [e.value for e in TaintEffect]
    effect = _str(raw, "effect", path, required=True)
    if effect not in effects:
        eks = {e.eks: e.value for e in TaintEffect}
        hint = f"use the Kubernetes spelling {eks[effect]!r}" if effect in eks else None
        raise ConfigError(f"{path}.effect", "must be one of " + ", ".join(effects), effect, hint)
    return Taint(key=key, value=value, effect=TaintEffect(effect))


def parse_reservations(raw: Any, path: str) -> tuple[ReservationSpec, ...]:
    """``gpuPools[].reservations``: a list of ``{id, zone}``; formats and zones are checked by
    ``rules.check_reservations``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(path, "must be a list of {id, zone}", raw)
    reservations = []
    for index, item in enumerate(raw):
        at = f"{path}[{index}]"
        item = _mapping(item, at)
        check_keys(item, RESERVATION_KEYS, at)
        kind = _str(item, "kind", at, "odcr")
        if kind not in RESERVATION_KINDS:
            raise ConfigError(f"{at}.kind", "must be one of " + ", ".join(RESERVATION_KINDS), kind)
        reservations.append(
            ReservationSpec(
                id=_str(item, "id", at, required=True),
                zone=_str(item, "zone", at),
                capacity_block=kind == "capacityBlock",
                count=_reservation_count(item.get("count"), f"{at}.count"),
            )
        )
    return tuple(reservations)


def _reservation_count(raw: Any, path: str) -> int | None:
    """``reservations[].count``: instances reserved, a whole number >= 1; absent: ``None`` (the
    pool's ``maxSize``, ``ReservationSpec.reserved_max``)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ConfigError(path, rules.RESERVATION_COUNT_RULE, raw)
    return raw


def parse_sharing(raw: Any, path: str) -> SharingSpec:
    """``gpuPools[].sharing``: exactly one of ``timeSlicing: {replicas}``, ``mps: {replicas}``,
    ``mig: {profile}``. Ranges and cloud rules are checked by ``rules.check_sharing``."""
    if raw is None:
        return SharingSpec()
    raw = _mapping(raw, path)
    check_keys(raw, SHARING_KEYS, path)
    modes = [key for key in SHARING_KEYS if key in raw]
    if len(modes) != 1:
        raise ConfigError(
            path,
            "must set exactly one mode (timeSlicing, mps or mig): the device plugin applies one sharing setting to "
            "every GPU of a node, and time-slicing and MPS are mutually exclusive",
            sorted(raw),
        )
    [mode] = modes
    at = f"{path}.{mode}"
    body = _mapping(raw[mode] if raw[mode] is not None else {}, at)
    if mode == "mig":
        check_keys(body, MIG_KEYS, at)
        return SharingSpec(mode=SharingMode.MIG, mig_profile=_str(body, "profile", at, required=True))
    check_keys(body, REPLICATED_KEYS, at)
    return SharingSpec(mode=SharingMode(mode), replicas=_int(body, "replicas", at, required=True))


def parse_upgrade(raw: Any, path: str) -> UpgradeSpec:
    """``gpuPools[].upgrade`` / ``cpuPools[].upgrade``: ``maxSurge`` and ``maxUnavailable`` as a node
    count (int or digits) or a percentage string, ``drainTimeoutMinutes`` an int; each defaults to
    ``UpgradeSpec``'s. Ranges are ``rules.check_upgrade``'s."""
    if raw is None:
        return UpgradeSpec()
    raw = _mapping(raw, path)
    check_keys(raw, UPGRADE_KEYS, path)
    default = UpgradeSpec()

    def nodes(key: str, fallback: str) -> str:
        value = raw.get(key)
        if value is None:
            return fallback
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not UPGRADE_VALUE.match(str(value)):
            raise ConfigError(f"{path}.{key}", f"must be {UPGRADE_VALUE_TYPE}", value)
        return str(value)

    return UpgradeSpec(
        max_surge=nodes("maxSurge", default.max_surge),
        max_unavailable=nodes("maxUnavailable", default.max_unavailable),
        drain_timeout_minutes=_int(raw, "drainTimeoutMinutes", path, default.drain_timeout_minutes),
    )


def parse_warm(raw: Any, path: str) -> WarmSpec | None:
    """``gpuPools[].warm``: ``{nodes, schedule: {days, start, end, timeZone}}``; None when left out.
    ``nodes`` is required; ``days`` defaults to every day and ``timeZone`` to ``UTC``. Ranges, the
    time forms and the time zone are ``rules.check_warm``'s."""
    if raw is None:
        return None
    raw = _mapping(raw, path)
    check_keys(raw, WARM_KEYS, path)
    schedule = None
    if raw.get("schedule") is not None:
        at = f"{path}.schedule"
        body = _mapping(raw["schedule"], at)
        check_keys(body, WARM_SCHEDULE_KEYS, at)
        for key in ("start", "end"):
            if isinstance(body.get(key), int) and not isinstance(body.get(key), bool):
                raise ConfigError(
                    f"{at}.{key}", 'must be a quoted "HH:MM" string (YAML reads an unquoted 08:00 as a number)', body[key]
                )
        days = _get(body, "days", at, list, [d.value for d in WeekDay], "a list of week days (Monday ... Sunday)")
        choices = [d.value for d in WeekDay]
        for index, day in enumerate(days):
            if day not in choices:
                raise ConfigError(f"{at}.days[{index}]", "must be one of " + ", ".join(choices), day)
        schedule = WarmScheduleSpec(
            start=_str(body, "start", at, required=True),
            end=_str(body, "end", at, required=True),
            days=tuple(WeekDay(day) for day in days),
            time_zone=_str(body, "timeZone", at, "UTC"),
        )
    return WarmSpec(nodes=_int(raw, "nodes", path, required=True), schedule=schedule)


def parse_gpu_pool(raw: Any, cloud: Cloud, path: str) -> GpuPoolSpec:
    """One ``gpuPools`` entry (also what components accept as a plain mapping)."""
    return parse_pool(raw, cloud, path, Role.GPU)


def parse_cpu_pool(raw: Any, cloud: Cloud, path: str) -> PoolSpec:
    """One ``cpuPools`` entry: the ``gpuPools`` keys with CPU defaults (``amiType``
    ``AL2023_x86_64_STANDARD``, 80 GiB disk on AWS)."""
    return parse_pool(raw, cloud, path, Role.CPU)


def parse_pool(raw: Any, cloud: Cloud, path: str, role: Role) -> PoolSpec:
    """One pool entry of either list; ``role`` picks the defaults and the GPU-only keys' fate."""
    raw = _mapping(raw, path)
    if role is Role.CPU:
        for key in GPU_ONLY_POOL_KEYS:
            if key in raw:
                raise ConfigError(f"{path}.{key}", "is for GPU pools only; move the pool to gpuPools if it has GPUs", raw[key])
    check_keys(raw, GPU_POOL_KEYS, path)
    if cloud is Cloud.AWS:
        _reject_keys(raw, ("upgrade",), path, "is Azure only (EKS node groups roll with their own update config)")
        _reject_keys(
            raw, AZURE_ONLY_KEYS["gpuPool"], path, "is Azure only (EKS Spot pays the current Spot price, capped at on-demand)"
        )
    else:
        _reject_keys(raw, AWS_ONLY_KEYS["gpuPool"], path, "is AWS only")
    if "instanceTypes" not in raw:
        raise ConfigError(f"{path}.instanceTypes", "is required", None)
    spot = _bool(raw, "spot", path, True)
    taints_raw = _get(raw, "taints", path, list, [], "a list of {key, value, effect}")
    price = raw.get("spotMaxPrice")
    if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float))):
        raise ConfigError(f"{path}.spotMaxPrice", "must be a number", price)
    return GpuPoolSpec(
        name=_str(raw, "name", path, required=True),
        instance_types=_str_list(raw, "instanceTypes", path),
        max_size=_int(raw, "maxSize", path, required=True),
        min_size=_int(raw, "minSize", path, 0),
        spot=spot,
        spot_max_price=float(price) if price is not None else -1.0,
        on_demand_fallback=_bool(raw, "onDemandFallback", path, spot),
        on_demand_max_size=_int(raw, "onDemandMaxSize", path),
        zones=_str_list(raw, "zones", path),
        labels=_str_map(raw, "labels", path),
        taints=tuple(parse_taint(t, f"{path}.taints[{i}]") for i, t in enumerate(taints_raw)),
        disk_size_gb=_int(raw, "diskSizeGb", path, (DEFAULT_GPU_DISK_GB if role is Role.GPU else DEFAULT_CPU_DISK_GB)[cloud]),
        ami_type=_enum(raw, "amiType", path, AmiType, [a.value for a in AmiType], DEFAULT_AMI_TYPE[role]),
        role=role,
        sharing=parse_sharing(raw.get("sharing"), f"{path}.sharing"),
        eviction_rate=_get(raw, "evictionRate", path, float, None, EVICTION_RATE_TYPE),
        reservations=parse_reservations(raw.get("reservations"), f"{path}.reservations"),
        efa=_bool(raw, "efa", path, False),
        proximity_placement=_bool(raw, "proximityPlacement", path, False),
        infiniband=_bool(raw, "infiniband", path, False),
        gpu_driver=_enum(raw, "gpuDriver", path, GpuDriver, [d.value for d in GpuDriver], GpuDriver.INSTALL),
        upgrade=parse_upgrade(raw.get("upgrade"), f"{path}.upgrade"),
        warm=parse_warm(raw.get("warm"), f"{path}.warm"),
    )


def parse_gpu_pools(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:gpuPools") -> tuple[GpuPoolSpec, ...]:
    if raw is None:
        raise ConfigError(path, "is required: list at least one GPU pool", None)
    if not isinstance(raw, list):
        raise ConfigError(path, "must be a list of pools", raw)
    return tuple(parse_gpu_pool(item, cloud, f"{path}[{index}]") for index, item in enumerate(raw))


def parse_cpu_pools(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:cpuPools") -> tuple[PoolSpec, ...]:
    """Optional: no CPU pools unless listed."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(path, "must be a list of pools", raw)
    return tuple(parse_cpu_pool(item, cloud, f"{path}[{index}]") for index, item in enumerate(raw))


NAP_RESERVATIONS_WHY = (
    "an AKSNodeClass has no capacity reservation field in Azure/karpenter-provider-azure v1.14.2 (karpenter.azure.com/"
    "v1beta1, tests/crds/karpenter-provider-azure; support is proposed in #1834 and #1839, both open), so NAP could not "
    "launch into the group; use provisioner cluster-autoscaler, which gives each reservation an on-demand agent pool "
    "ranked above Spot"
)
"""Why ``gpuPools[].reservations`` is refused under Node Auto Provisioning (``check_provisioner_keys``
and ``gpupools.azure.nap_nodes.check_nap_pool``)."""

NAP_SHARING_RULE = (
    "is not available with provisioner karpenter on azure: Karpenter plans a node's physical GPUs, not the "
    "replicas the device plugin advertises (kubernetes-sigs/karpenter #729), so k pending pods of a shared pool buy "
    "k nodes that spreading keeps non-empty; the fix, a NodeOverlay declaring the shared capacity, needs Karpenter's "
    "alpha NodeOverlay feature gate, which AKS sets for its managed Karpenter and gpupools can neither enable nor "
    "confirm; use cluster-autoscaler for shared GPUs on AKS (or Karpenter on EKS)"
)
"""Why ``sharing`` (time-slicing, MPS) is refused under AKS Node Auto Provisioning."""

MEANINGFUL_DEFAULTS: dict[str, Any] = {"minSize": 0, "spotMaxPrice": -1}
"""The values of the keys in ``KARPENTER_MEANINGLESS_POOL_KEYS`` and ``NAP_MEANINGLESS_POOL_KEYS``
(declared in ``gpupools.config_keys``, whose reference notes name them) that say what Karpenter
does anyway, so they are accepted."""


def parse_provisioner(value: Any, path: str = f"{NAMESPACE}:provisioner") -> Provisioner:
    """``gpupools:provisioner``: ``cluster-autoscaler`` (default) or ``karpenter``."""
    if value is None:
        return Provisioner.CLUSTER_AUTOSCALER
    choices = [p.value for p in Provisioner]
    if value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
        raise ConfigError(path, "must be one of " + ", ".join(choices), value, f"did you mean {close[0]!r}?" if close else None)
    return Provisioner(value)


def check_provisioner_keys(ours: Mapping[str, Any], cloud: Cloud, provisioner: Provisioner) -> None:
    """Reject, under ``karpenter``, the keys it cannot honour (by name, with why).

    Runs on the raw mappings, so an explicit key is caught even when its value equals the default
    (``maxNodeProvisionTime: 10m``): a stack switching provisioner must not silently keep a setting
    that no longer does anything. ``minSize: 0`` is the Karpenter behaviour itself and is accepted.
    On AKS (Node Auto Provisioning) also ``spotMaxPrice`` other than -1, ``sharing``, ``reservations`` and a
    ``systemPool.maxSize`` other than ``minSize`` (``NAP_MEANINGLESS_POOL_KEYS``, ``check_nap_system_pool``).
    """
    if provisioner is not Provisioner.KARPENTER:
        maintenance = ours.get("maintenance")
        if "maintenance" in ours and cloud is Cloud.AWS:
            raise ConfigError(
                f"{NAMESPACE}:maintenance",
                "has no meaning with provisioner cluster-autoscaler on EKS: it is the window in which Karpenter may replace "
                "nodes for a new image (NodePool budgets) and AKS reimages nodes; leave it out, or set gpupools:provisioner: "
                "karpenter",
                maintenance,
            )
        if isinstance(maintenance, Mapping) and "terminationGracePeriod" in maintenance:
            raise ConfigError(
                f"{NAMESPACE}:maintenance.terminationGracePeriod",
                "has no meaning with provisioner cluster-autoscaler: it is the Karpenter/NAP NodePools' terminationGracePeriod "
                "(AKS agent pools drain with their upgradeSettings.drainTimeoutInMinutes); leave it out",
                maintenance["terminationGracePeriod"],
            )
        return
    pool_keys = {**KARPENTER_MEANINGLESS_POOL_KEYS, **(NAP_MEANINGLESS_POOL_KEYS if cloud is Cloud.AZURE else {})}
    for section in ("gpuPools", "cpuPools"):
        entries = ours.get(section)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, Mapping):
                continue
            for key, why in pool_keys.items():
                if key in entry and entry[key] != MEANINGFUL_DEFAULTS.get(key):
                    raise ConfigError(
                        f"{NAMESPACE}:{section}[{index}].{key}", f"has no meaning with provisioner karpenter: {why}", entry[key]
                    )
            sharing = entry.get("sharing")
            if cloud is Cloud.AZURE and isinstance(sharing, Mapping) and "mig" in sharing:
                raise ConfigError(
                    f"{NAMESPACE}:{section}[{index}].sharing.mig",
                    "is not available with provisioner karpenter on azure: MIG is an agent pool's gpuInstanceProfile, and "
                    "an AKSNodeClass has no such field (karpenter.azure.com/v1beta1); use cluster-autoscaler",
                    sharing["mig"],
                )
            if cloud is Cloud.AZURE and isinstance(sharing, Mapping) and sharing:
                raise ConfigError(f"{NAMESPACE}:{section}[{index}].sharing", NAP_SHARING_RULE, dict(sharing))
            if cloud is Cloud.AZURE and entry.get("reservations"):
                raise ConfigError(
                    f"{NAMESPACE}:{section}[{index}].reservations",
                    "is not available with provisioner karpenter on azure: " + NAP_RESERVATIONS_WHY,
                    entry["reservations"],
                )
    autoscaler = ours.get("autoscaler")
    if isinstance(autoscaler, Mapping):
        for key, why in KARPENTER_MEANINGLESS_AUTOSCALER_KEYS.items():
            if key in autoscaler:
                raise ConfigError(
                    f"{NAMESPACE}:autoscaler.{key}", f"has no meaning with provisioner karpenter: {why}", autoscaler[key]
                )
    if cloud is Cloud.AZURE:
        check_nap_system_pool(ours.get("systemPool"))


def check_nap_system_pool(raw: Any, path: str = f"{NAMESPACE}:systemPool") -> None:
    """Under NAP the System pool has a fixed size, ``minSize`` nodes: with ``nodeProvisioningProfile.mode:
    Auto`` AKS refuses autoscaled agent pools ("Fixed size Node Pools can still be created, but
    autoscaling Node Pools cannot be", pulumi-azure-native ``NodeProvisioningMode.AUTO``), so
    ``maxSize`` can only repeat ``minSize``."""
    if not isinstance(raw, Mapping) or "maxSize" not in raw:
        return
    min_size = raw.get("minSize", SystemPoolSpec.min_size)
    if raw["maxSize"] != min_size:
        raise ConfigError(
            f"{path}.maxSize",
            f"has no meaning with provisioner karpenter on azure: Node Auto Provisioning refuses autoscaled pools, "
            f"so the System pool stays at minSize ({min_size}) nodes; leave maxSize out",
            raw["maxSize"],
        )


def _section(raw: Any, keys: Sequence[str], path: str) -> Mapping[str, Any]:
    section = _mapping(raw if raw is not None else {}, path)
    check_keys(section, keys, path)
    return section


def _own_keys(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gpupools:*`` entries of a ``config:`` mapping, keyed without the namespace and decoded;
    an unknown key is refused first, with the known key it is near (``gpupools:Cloud``: did you
    mean 'cloud'?), so a misspelt required key is not reported as missing."""
    ours: dict[str, Any] = {}
    for full_key, value in values.items():
        namespace, _, key = str(full_key).partition(":")
        if namespace != NAMESPACE:
            continue
        ours[key] = _decode(value, full_key)
    check_keys(ours, TOP_LEVEL_KEYS, "")
    return ours


def cloud_of(values: Mapping[str, Any]) -> Cloud:
    """``gpupools:cloud`` of a ``config:`` mapping, after the check of its top-level keys
    (``_own_keys``)."""
    return parse_cloud(_own_keys(values).get("cloud"))


def parse(values: Mapping[str, Any], region: str | None = None) -> StackSpec:
    """Parse and validate a stack's ``config:`` mapping (``gpupools:*`` keys; others are ignored).

    Object values may be given parsed or as JSON strings (the form ``pulumi.Config`` stores them in).
    """
    ours = _own_keys(values)
    cloud = parse_cloud(ours.get("cloud"))
    provisioner = parse_provisioner(ours.get("provisioner"))
    check_provisioner_keys(ours, cloud, provisioner)
    p = f"{NAMESPACE}:"
    device = _section(ours.get("devicePlugin"), DEVICE_PLUGIN_KEYS, p + "devicePlugin")
    autoscaler = _section(ours.get("autoscaler"), AUTOSCALER_KEYS, p + "autoscaler")
    smoke = _section(ours.get("smokeTest"), SMOKE_TEST_KEYS, p + "smokeTest")
    metrics = _section(ours.get("gpuMetrics"), GPU_METRICS_KEYS, p + "gpuMetrics")
    network = parse_network(ours.get("network"), cloud)
    system_pool = parse_system_pool(ours.get("systemPool"), cloud)
    if cloud is Cloud.AZURE and provisioner is Provisioner.KARPENTER:
        # Node Auto Provisioning: a fixed-size System pool (check_nap_system_pool) and the dataplane NAP
        # recommends unless one is chosen.
        system_pool = dataclasses.replace(system_pool, max_size=system_pool.min_size)
        network = dataclasses.replace(network, dataplane=network.dataplane or NAP_DATAPLANE)
    gpu_pools = parse_gpu_pools(ours.get("gpuPools"), cloud)
    spec = StackSpec(
        cloud=cloud,
        cluster=parse_cluster(ours.get("cluster"), cloud, region=region),
        network=network,
        system_pool=system_pool,
        gpu_pools=gpu_pools,
        cpu_pools=parse_cpu_pools(ours.get("cpuPools"), cloud),
        device_plugin=DevicePluginSpec(version=_str(device, "version", p + "devicePlugin", DEFAULT_DEVICE_PLUGIN_VERSION)),
        autoscaler=AutoscalerSpec(
            max_node_provision_time=_str(
                autoscaler, "maxNodeProvisionTime", p + "autoscaler", default_max_node_provision_time(gpu_pools, cloud)
            ),
            scale_down_unneeded_time=_str(
                autoscaler, "scaleDownUnneededTime", p + "autoscaler", AutoscalerSpec.scale_down_unneeded_time
            ),
        ),
        smoke_test=SmokeTestSpec(enabled=declared_value(smoke, "smokeTest", "enabled", p + "smokeTest")),
        cost=parse_cost(ours.get("cost"), p + "cost"),
        provisioner=provisioner,
        maintenance=parse_maintenance(ours.get("maintenance"), p + "maintenance"),
        node_repair=parse_node_repair(ours.get("nodeRepair"), cloud, provisioner, p + "nodeRepair"),
        gpu_metrics=parse_gpu_metrics(metrics, p + "gpuMetrics"),
        queueing=parse_queueing(ours.get("queueing"), p + "queueing"),
        catalog=parse_catalog(ours.get("catalog"), p + "catalog"),
    )
    spec = dataclasses.replace(spec, cost=with_pool_eviction_rates(spec.cost, spec.gpu_pools))
    rules.check_stack(spec, region)
    check_budget(spec, region)
    from gpupools.queueing.check import check_queueing

    queueing = ours.get("queueing")
    check_queueing(spec, frozenset(queueing) if isinstance(queueing, Mapping) else frozenset(), p + "queueing")
    return spec


def parse_catalog(raw: Any, path: str) -> CatalogSpec:
    """``gpupools:catalog``: optional; ``allowUnlisted`` a list of sizes (checked in ``rules.check_offered``)."""
    section = _section(raw, CATALOG_KEYS, path)
    return CatalogSpec(allow_unlisted=_str_list(section, "allowUnlisted", path))


def parse_gpu_metrics(section: Mapping[str, Any], path: str) -> GpuMetricsSpec:
    """``gpupools:gpuMetrics``: on by default; labels for a ServiceMonitor only with one."""
    service_monitor = _bool(section, "serviceMonitor", path, GpuMetricsSpec.service_monitor)
    labels = _str_map(section, "serviceMonitorLabels", path)
    rules.check_labels(labels, f"{path}.serviceMonitorLabels")
    if labels and not service_monitor:
        raise ConfigError(
            f"{path}.serviceMonitorLabels", "needs serviceMonitor: true (they label the ServiceMonitor)", dict(labels)
        )
    return GpuMetricsSpec(
        enabled=_bool(section, "enabled", path, GpuMetricsSpec.enabled),
        service_monitor=service_monitor,
        service_monitor_labels=labels,
    )


def parse_cost(raw: Any, path: str) -> CostSpec:
    """``gpupools:cost``: optional; numbers only (ranges in ``rules.check_cost``)."""
    section = _section(raw, COST_KEYS, path)
    return CostSpec(
        gpu_hours_per_month=_get(section, "gpuHoursPerMonth", path, float, None, "a number of hours"),
        spot_share=_get(section, "spotShare", path, float, CostSpec.spot_share, "a number from 0 to 1"),
        budget_per_hour=_get(section, "budgetPerHour", path, float, None, "a number (USD per hour)"),
        eviction_rate=_get(section, "evictionRate", path, float, CostSpec.eviction_rate, EVICTION_RATE_TYPE),
        redone_share=_get(
            section,
            "redoneShare",
            path,
            float,
            CostSpec.redone_share,
            "a number from 0 to 1 (share of an interrupted run redone)",
        ),
    )


def with_pool_eviction_rates(cost: CostSpec, gpu_pools: Sequence[PoolSpec]) -> CostSpec:
    """``cost`` with each GPU pool's own ``evictionRate`` (``CostSpec.pool_eviction_rates``), so the
    estimate, which sees pools by name only, applies them."""
    own = {pool.name: pool.eviction_rate for pool in gpu_pools if pool.eviction_rate is not None}
    return dataclasses.replace(cost, pool_eviction_rates=MappingProxyType(own)) if own else cost


AKS_NODE_REPAIR_ALWAYS_ON = (
    "cannot be false on azure: AKS node auto-repair is always on and has no setting (AKS docs, node-auto-repair.md: "
    "'Both AKS Automatic and AKS Standard clusters come preconfigured with node auto-repair'); leave it out"
)


def default_node_repair(cloud: Cloud, provisioner: Provisioner) -> bool:
    """``gpupools:nodeRepair.enabled`` when left out: on where node repair is GA.

    EKS managed node groups (``cluster-autoscaler``): on; ``nodeRepairConfig`` is GA (EKS user
    guide ``node-repair.adoc``). EKS with ``karpenter``: off; Karpenter's ``NodeRepair`` gate is
    alpha in the pinned v1.14.1 (``charts/karpenter/values.yaml``: "nodeRepair is ALPHA and is
    disabled by default"), and a repair there terminates the node without draining it
    (``concepts/disruption.md``, Node Auto Repair); ``enabled: true`` turns it on. AKS: on (always
    on, nothing to set).
    """
    return not (cloud is Cloud.AWS and provisioner is Provisioner.KARPENTER)


def parse_node_repair(raw: Any, cloud: Cloud, provisioner: Provisioner, path: str) -> NodeRepairSpec:
    """``gpupools:nodeRepair``: ``{enabled: bool}``, default ``default_node_repair``; ``false`` on
    Azure is an error (``AKS_NODE_REPAIR_ALWAYS_ON``)."""
    section = _section(raw, NODE_REPAIR_KEYS, path)
    enabled = _bool(section, "enabled", path, default_node_repair(cloud, provisioner))
    if cloud is Cloud.AZURE and not enabled:
        raise ConfigError(f"{path}.enabled", AKS_NODE_REPAIR_ALWAYS_ON, False)
    return NodeRepairSpec(enabled=enabled)


def parse_queueing(raw: Any, path: str) -> QueueingSpec:
    """``gpupools:queueing``: optional, off by default; types here, rules in ``gpupools.queueing.check``."""
    section = _section(raw, QUEUEING_KEYS, path)
    teams_raw = section.get("teams", [])
    if not isinstance(teams_raw, list):
        raise ConfigError(f"{path}.teams", "must be a list of {name, namespaces, gpus}", teams_raw)
    teams = []
    for index, entry in enumerate(teams_raw):
        at = f"{path}.teams[{index}]"
        team = _section(entry, TEAM_KEYS, at)
        teams.append(
            TeamQueueSpec(
                name=_str(team, "name", at, required=True),
                namespaces=_str_list(team, "namespaces", at),
                gpus=_int(team, "gpus", at, 0),
            )
        )
    atomic = section.get("atomicScaleUp")
    return QueueingSpec(
        enabled=_bool(section, "enabled", path, False),
        namespaces=_str_list(section, "namespaces", path),
        teams=tuple(teams),
        pools=_str_list(section, "pools", path),
        atomic_scale_up=None if atomic is None else _bool(section, "atomicScaleUp", path, True),
    )


def parse_maintenance(raw: Any, path: str) -> MaintenanceSpec:
    """``gpupools:maintenance``: optional; every key has a default (``MaintenanceSpec``). Forms and
    ranges in ``rules.check_maintenance``."""
    section = _section(raw, MAINTENANCE_KEYS, path)
    default = MaintenanceSpec()
    start_time = section.get("startTime")
    if isinstance(start_time, int) and not isinstance(start_time, bool):
        raise ConfigError(
            f"{path}.startTime", 'must be a quoted "HH:MM" string (YAML reads an unquoted 02:00 as a number)', start_time
        )
    return MaintenanceSpec(
        day=_enum(section, "day", path, WeekDay, [d.value for d in WeekDay], default.day),
        start_time=_str(section, "startTime", path, default.start_time),
        duration_hours=_int(section, "durationHours", path, default.duration_hours),
        utc_offset=_str(section, "utcOffset", path, default.utc_offset),
        termination_grace_period=(
            None if section.get("terminationGracePeriod") is None else _str(section, "terminationGracePeriod", path, "")
        ),
    )


def check_budget(spec: StackSpec, region: str | None) -> None:
    """``gpupools:cost.budgetPerHour`` against the fleet's ceiling, before anything is registered."""
    if spec.cost.budget_per_hour is None:
        return
    from gpupools.catalog.prices import price_table
    from gpupools.pricing.estimate import check_budget as check
    from gpupools.pricing.estimate import fleet_cost, groups_of_spec

    path = f"{NAMESPACE}:cost.budgetPerHour"
    if not region:
        key = "aws:region" if spec.cloud is Cloud.AWS else "azure-native:location"
        raise ConfigError(path, f"needs the stack's region to price the fleet: set {key}", spec.cost.budget_per_hour)
    check(fleet_cost(groups_of_spec(spec), price_table(spec.cloud), region, spec.cost), path)


def _decode(value: Any, key: str) -> Any:
    """Pulumi stores object config as JSON strings; scalars stay strings."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(key, "must be valid YAML/JSON", value, str(error)) from None
    return value


# --- inside a Pulumi program ---------------------------------------------------------------------


def _raw_config() -> dict[str, Any]:
    import pulumi

    config = pulumi.Config(NAMESPACE)
    values: dict[str, Any] = {}
    for key in TOP_LEVEL_KEYS:
        value = config.get(key)
        if value is not None:
            values[f"{NAMESPACE}:{key}"] = value
    # Unknown gpupools:* keys: read what the engine passed in so typos are caught here too.
    from pulumi.runtime.config import CONFIG

    for full_key, value in CONFIG.get().items():
        if full_key.startswith(f"{NAMESPACE}:") and full_key not in values:
            values[full_key] = value
    return values


def load_cloud() -> Cloud:
    """``gpupools:cloud`` of the running stack (an unknown top-level key is refused first: ``cloud_of``)."""
    return cloud_of(_raw_config())


def load() -> StackSpec:
    """The running stack's validated spec. Raises ``ConfigError`` before any resource exists."""
    import pulumi

    namespace, key = ("aws", "region") if load_cloud() is Cloud.AWS else ("azure-native", "location")
    region = pulumi.Config(namespace).get(key)
    return parse(_raw_config(), region=region)


# --- outside a Pulumi program --------------------------------------------------------------------


def load_file(path: str | os.PathLike[str]) -> StackSpec:
    """The validated spec of a stack file (``Pulumi.<stack>.yaml``), for scripts that run outside a
    Pulumi program (``gpupools.jobs.gpu_job_for_pool`` writing a manifest for ``kubectl apply``).

    Reads the file's ``config:`` mapping and its region (``aws:region`` or
    ``azure-native:location``) and applies every rule ``load()`` applies. Secret values are not
    decrypted: gpupools reads none.

    Raises:
        FileNotFoundError: no such file. ConfigError: as ``load()``, naming the config path.
    """
    import yaml

    document = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    values = document.get("config") or {} if isinstance(document, Mapping) else {}
    if not isinstance(values, Mapping):
        raise ConfigError(f"{os.fspath(path)}: config", "must be a mapping", values)
    cloud = cloud_of(values)
    region_key = "aws:region" if cloud is Cloud.AWS else "azure-native:location"
    region = values.get(region_key)
    return parse(values, region=str(region) if region is not None else None)


# --- python -m gpupools.config -------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gpupools.config schema``: print the JSON Schema of a stack file (``gpupools.config_schema``)."""
    import argparse

    from gpupools import config_schema

    parser = argparse.ArgumentParser(prog="python -m gpupools.config", description="The stack config of gpupools.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("schema", help="print the JSON Schema (draft 2020-12) of a Pulumi.<stack>.yaml")
    if parser.parse_args(argv).command is None:
        parser.error("a command is required: schema")
    sys.stdout.write(config_schema.text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
