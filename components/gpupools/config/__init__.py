"""The config contract: ``Pulumi.<stack>.yaml`` -> frozen, validated ``StackSpec``.

Pure Python: no resources are registered here, so a bad config fails before the first one. Every
violation raises one ``ConfigError`` naming the config path, the rule and the value, e.g.
``gpupools:gpuPools[1].maxSize: must be >= minSize (2), got 1``. Unknown keys are errors with a
"did you mean" suggestion: a typo in ``maxSize`` must never silently become the default.

Every value is read through its declaration in ``gpupools.config_keys`` (``read_keys``: its kind,
whether it is required, its choices, its default and the wording of its errors), so adding a key
is one ``Key`` there plus the spec field it fills and the code that uses it; a section's
``parse_*`` here adds only its stack-dependent defaults (cloud, region, the pool's role) and the
checks between keys, in the order a stack with several mistakes gets them.

Two entry points:
    ``parse(values, region=None)`` takes the stack's ``config:`` mapping (keys like ``gpupools:cloud``),
    as read from ``Pulumi.<stack>.yaml``; tests and tools use it.
    ``load()`` reads the same keys through ``pulumi.Config`` inside a Pulumi program.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import os
import re
import typing
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from gpupools import rules
from gpupools.catalog import regions, user_sizes
from gpupools.config_keys import (
    KARPENTER_MEANINGLESS_AUTOSCALER_KEYS,
    KARPENTER_MEANINGLESS_POOL_KEYS,
    LARGE_GPU_PROVISION_TIME,
    NAP_MEANINGLESS_POOL_KEYS,
    NO_DEFAULT,
    STACK,
    Key,
    gpu_only,
    keys_of,
)
from gpupools.config_keys import section as declared
from gpupools.conventions import Role, Taint, TaintEffect
from gpupools.errors import ConfigError, yaml_error
from gpupools.specs import (
    AKS_AUTOMATIC,
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
    ReleaseUpgradeSpec,
    ReservationSpec,
    SharingMode,
    SharingSpec,
    SmokeTestSpec,
    StackSpec,
    SystemPoolSpec,
    TeamQueueSpec,
    UpgradeSpec,
    UserSizeSpec,
    WarmScheduleSpec,
    WarmSpec,
    WeekDay,
    frozen_map,
)
from gpupools.versions import DEFAULT_DEVICE_PLUGIN_VERSION, DEFAULT_KUBERNETES_VERSION

NAMESPACE = "gpupools"

TOP_LEVEL_KEYS = keys_of("")
"""Every key list below comes from the one declaration, ``gpupools.config_keys`` (the sections'
readers take their keys from it directly: ``open_section``)."""
CLUSTER_KEYS = keys_of("cluster")
NETWORK_KEYS = keys_of("network")
SYSTEM_POOL_KEYS = keys_of("systemPool")
GPU_POOL_KEYS = keys_of("gpuPools")
CPU_POOL_KEYS = GPU_POOL_KEYS
"""A ``cpuPools`` entry takes the same keys; what is GPU-only is a value (an NVIDIA ``amiType``) or
a key in ``GPU_ONLY_POOL_KEYS``."""
GPU_ONLY_POOL_KEYS = gpu_only()
"""Keys that only mean something on a GPU pool: in ``cpuPools`` they are an error that says so."""
UPGRADE_VALUE_TYPE = 'a node count or a percentage ("33%")'
"""What ``upgrade.maxSurge`` and ``upgrade.maxUnavailable`` take (ranges in ``rules.check_upgrade``)."""
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
NODE_REPAIR_KEYS = keys_of("nodeRepair")
QUEUEING_KEYS = keys_of("queueing")
TEAM_KEYS = keys_of("queueing.teams")
MAINTENANCE_KEYS = keys_of("maintenance")

SUPPORT_TYPES = declared("cluster").key("supportType").choices
"""``gpupools:cluster.supportType`` (AWS): the EKS ``UpgradePolicyRequest.supportType`` enum (botocore
``eks`` ``SupportType``; a test keeps the two equal)."""

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

S = TypeVar("S")

ALL_DAYS = tuple(day.value for day in WeekDay)
"""``warm.schedule.days`` when left out: every day."""


# --- reading declared values ---------------------------------------------------------------------
#
# Every value is read through its declaration (``gpupools.config_keys``): the kind says how to read
# it and which rule a wrong type breaks (``KIND_RULES``, or the key's own ``type_error``), the
# declaration says whether it is required (``required_error``), its choices and its default. The
# value lands in the spec under the key's name in snake_case (``FIELD_NAMES`` for the exceptions).
# A default that depends on the cloud, the region, the pool's role or another key is passed in by
# the section's ``parse_*``; a key left out without any default is left to the spec's own default.

KIND_RULES: Mapping[str, str] = MappingProxyType(
    {
        "string": "must be a string",
        "integer": "must be an integer",
        "number": "must be a number",
        "boolean": "must be true or false",
        "strings": "must be a list of strings",
        "labels": "must be a mapping of strings to strings",
        "nodes": f"must be {UPGRADE_VALUE_TYPE}",
        "section": "must be a mapping",
        "list": "must be a list",
    }
)
"""The rule a value of the wrong type breaks, by kind; a key's ``type_error`` says more where it has one."""

FIELD_NAMES: Mapping[str, str] = MappingProxyType({"profile": "mig_profile"})
"""Spec fields not named after their key in snake_case (``sharing.mig.profile`` -> ``SharingSpec.mig_profile``)."""

CLOUD_ONLY_RULES: Mapping[str, Mapping[Cloud, str]] = MappingProxyType(
    {
        "cluster": {
            Cloud.AZURE: "is Azure only",
            Cloud.AWS: "is AWS only; on Azure grant cluster-admin with adminGroupObjectIds",
        },
        "network": {
            Cloud.AZURE: "is Azure only; on AWS bring your own vpcId and privateSubnetIds",
            Cloud.AWS: "is AWS only; on Azure bring your own subnet with subnetId",
        },
        "pool": {
            Cloud.AZURE: "is Azure only (EKS Spot pays the current Spot price, capped at on-demand)",
            Cloud.AWS: "is AWS only",
        },
        "size": {
            Cloud.AZURE: "is Azure only",
            Cloud.AWS: "is AWS only (Elastic Fabric Adapter interfaces of an EC2 instance type)",
        },
    }
)
"""What a key of another cloud is told, by section and by the cloud the key is for."""

CLOUD_ONLY_KEY_RULES: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("cluster", "permissionsBoundary"): "is AWS only (a boundary on the IAM roles the EKS stack creates)",
        ("pool", "upgrade"): "is Azure only (EKS node groups roll with their own update config)",
    }
)
"""Keys of another cloud with a reason of their own; they are refused before the section's others."""

GPU_ONLY_RULE = "is for GPU pools only; move the pool to gpuPools if it has GPUs"

Parser = Callable[[Any, str], Any]
"""Reads a value (a section's mapping, or one item of a list) at a config path."""


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


def field_name(name: str) -> str:
    """The spec field a key fills: ``FIELD_NAMES``, else the key in snake_case (``maxSize`` -> ``max_size``)."""
    return FIELD_NAMES.get(name) or re.sub(r"([A-Z])", r"_\1", name).lower()


def did_you_mean(value: Any, choices: Sequence[str]) -> str | None:
    """The hint of a value that is not one of ``choices``: the nearest choice, if one is near."""
    close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}?" if close else None


def choice(key: Key, value: Any, path: str, suggest: Callable[[Any], str | None] | None = None) -> Any:
    """``value`` if it is one of ``key.choices``, else an error with ``suggest``'s hint (default ``did_you_mean``)."""
    if value not in key.choices:
        hint = suggest(value) if suggest is not None else did_you_mean(value, key.choices)
        raise ConfigError(path, "must be one of " + ", ".join(key.choices), value, hint)
    return value


def _wrong_type(key: Key, value: Any, path: str) -> ConfigError:
    return ConfigError(path, key.type_error or KIND_RULES[key.kind], value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string(key: Key, value: Any, path: str, suggest: Callable[[Any], str | None] | None) -> str:
    if not isinstance(value, str):
        raise _wrong_type(key, value, path)
    if key.required and value == "":
        raise ConfigError(path, "must not be empty", value)
    return choice(key, value, path, suggest) if key.choices else value


def _integer(key: Key, value: Any, path: str) -> int:
    if not _is_int(value):
        raise _wrong_type(key, value, path)
    return int(value)


def _number(key: Key, value: Any, path: str) -> float:
    if _is_int(value):
        return float(value)
    if not isinstance(value, float):
        raise _wrong_type(key, value, path)
    return value


def _boolean(key: Key, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _wrong_type(key, value, path)
    return value


def _strings(key: Key, value: Any, path: str) -> tuple[str, ...]:
    """A list of strings; with choices, each item is one of them (a non-string is not)."""
    if not isinstance(value, list):
        raise _wrong_type(key, value, path)
    for index, item in enumerate(value):
        if key.choices:
            choice(key, item, f"{path}[{index}]")
        elif not isinstance(item, str):
            raise ConfigError(f"{path}[{index}]", "must be a string", item)
    return tuple(value)


def _labels(key: Key, value: Any, path: str) -> Mapping[str, str]:
    if not isinstance(value, dict):
        raise _wrong_type(key, value, path)
    for name, item in value.items():
        if not isinstance(item, str):
            raise ConfigError(f"{path}.{name}", "must be a string (quote numbers and booleans)", item)
    return frozen_map(value)


def _nodes(key: Key, value: Any, path: str) -> str:
    """A node count (an integer or digits) or a percentage string, as text (``UpgradeSpec``)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not UPGRADE_VALUE.match(str(value)):
        raise _wrong_type(key, value, path)
    return str(value)


def _items(key: Key, value: Any, path: str, parser: Parser | None) -> tuple[Any, ...]:
    """A list kind: each item read by ``parser`` (a section's keys by default) at ``path[i]``."""
    if not isinstance(value, list):
        raise _wrong_type(key, value, path)
    read = parser or (lambda item, at: read_keys(open_section(item, key, at), key, at))
    return tuple(read(item, f"{path}[{index}]") for index, item in enumerate(value))


def _declared_default(key: Key) -> Any:
    if key.default is NO_DEFAULT:
        return None
    return float(key.default) if key.kind == "number" else key.default


VALUE_READERS: dict[str, Callable[[Key, Any, str], Any]] = {
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "strings": _strings,
    "labels": _labels,
    "nodes": _nodes,
}
"""The reader of each kind of plain value (a ``string`` takes a hint too; a ``list`` or ``section`` its parser)."""


def read(
    key: Key,
    value: Any,
    path: str,
    default: Any = None,
    *,
    parser: Parser | None = None,
    present: bool | None = None,
    suggest: Callable[[Any], str | None] | None = None,
) -> Any:
    """``value`` (of the key ``key``, at ``path``) read by the key's kind with the kind's messages.

    Left out (``None``): ``default``, else the declared default, else ``None``; a required key is an
    error (``is required``, or its ``required_error``), a required ``strings`` key only when it is
    missing (``present``: the key is in its mapping, even as ``null``). ``parser`` reads a section,
    or each item of a list, in place of the declaration's keys; ``suggest`` gives the hint of a
    string that is not one of the choices (default: the nearest choice)."""
    if value is None:
        missing = not present if present is not None else True
        if key.required and (key.kind != "strings" or missing):
            raise ConfigError(path, key.required_error or "is required", None)
        if key.required:  # a required list of strings given as null: empty, for the rule that wants one
            return ()
        return default if default is not None else _declared_default(key)
    kind = key.kind
    if kind == "string":
        return _string(key, value, path, suggest)
    if kind in VALUE_READERS:
        return VALUE_READERS[kind](key, value, path)
    if kind == "list":
        return _items(key, value, path, parser)
    return parser(value, path) if parser is not None else read_keys(open_section(value, key, path), key, path)


def read_value(
    key: Key, raw: Mapping[str, Any], path: str, default: Any = None, suggest: Callable[[Any], str | None] | None = None
) -> Any:
    """The value of ``key`` in the section ``raw`` at ``path`` (``read``)."""
    return read(key, raw.get(key.name), f"{path}.{key.name}", default, present=key.name in raw, suggest=suggest)


def open_section(
    raw: Any, section: Key, path: str, *, cloud: Cloud | None = None, refusals: str = "", gpu: bool = True
) -> Mapping[str, Any]:
    """The mapping of the declared ``section`` at ``path``, its keys checked in this order: a
    ``gpu_only`` key in a CPU pool (``gpu=False``), an unknown key (with the nearest known one), a
    key of another cloud than ``cloud`` (``CLOUD_ONLY_KEY_RULES``, then ``CLOUD_ONLY_RULES[refusals]``).
    Left out: an empty mapping, or ``required_error`` if the section is required."""
    if raw is None:
        if section.required:
            raise ConfigError(path, section.required_error or "is required", None)
        raw = {}
    raw = _mapping(raw, path)
    if not gpu:
        for key in section.keys:
            if key.gpu_only and key.name in raw:
                raise ConfigError(f"{path}.{key.name}", GPU_ONLY_RULE, raw[key.name])
    check_keys(raw, [key.name for key in section.keys], path)
    if cloud is not None:
        other = [key for key in section.keys if cloud not in key.clouds]
        own = [key for key in other if (refusals, key.name) in CLOUD_ONLY_KEY_RULES]
        for key in (*own, *other):
            if key.name in raw:
                rule = CLOUD_ONLY_KEY_RULES.get((refusals, key.name)) or CLOUD_ONLY_RULES[refusals][key.clouds[0]]
                raise ConfigError(f"{path}.{key.name}", rule, raw[key.name])
    return raw


def read_keys(
    raw: Mapping[str, Any],
    section: Key,
    path: str,
    *,
    defaults: Mapping[str, Any] | None = None,
    parsers: Mapping[str, Parser] | None = None,
    first: Sequence[str] = (),
) -> dict[str, Any]:
    """Every key of the declared ``section`` read from ``raw`` (``read``), keyed by spec field
    (``field_name``), in declaration order after the keys named in ``first`` (whose errors come
    first). ``defaults`` are the stack-dependent defaults by key; ``parsers`` read a section key
    or a list key's items. A key left out without a default is not in the result."""
    defaults = defaults or {}
    parsers = parsers or {}
    keys = [section.key(name) for name in first] + [key for key in section.keys if key.name not in first]
    values: dict[str, Any] = {}
    for key in keys:
        name = key.name
        value = read(key, raw.get(name), f"{path}.{name}", defaults.get(name), parser=parsers.get(name), present=name in raw)
        if value is not None:
            values[field_name(name)] = value
    return values


@functools.cache
def _enum_fields(spec: type) -> dict[str, tuple[type[Enum], bool]]:
    """The fields of a spec dataclass that hold an enum (``True``: a tuple of them), from its type hints."""
    hints = typing.get_type_hints(spec)
    fields: dict[str, tuple[type[Enum], bool]] = {}
    for field in dataclasses.fields(spec):
        hint = hints[field.name]
        args = typing.get_args(hint)
        if isinstance(hint, type) and issubclass(hint, Enum):
            fields[field.name] = (hint, False)
        elif typing.get_origin(hint) is tuple and args and isinstance(args[0], type) and issubclass(args[0], Enum):
            fields[field.name] = (args[0], True)
    return fields


def build(spec: Callable[..., S], values: Mapping[str, Any]) -> S:
    """``spec(**values)``, each choice turned into the field's enum (``"install"`` -> ``GpuDriver.INSTALL``)."""
    converted = dict(values)
    for name, (enum, many) in _enum_fields(spec).items():
        if name in converted:
            value = converted[name]
            converted[name] = tuple(enum(item) for item in value) if many else enum(value)
    return spec(**converted)


# --- sections ------------------------------------------------------------------------------------


def parse_cloud(value: Any) -> Cloud:
    """``gpupools:cloud``: required, ``azure`` or ``aws`` (any value that is not one of them says so)."""
    key = STACK.key("cloud")
    path = f"{NAMESPACE}:cloud"
    if value is None:
        raise ConfigError(path, key.required_error, None)
    return Cloud(choice(key, value, path))


def parse_cluster(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:cluster", region: str | None = None) -> ClusterSpec:
    """``gpupools:cluster``. ``zones`` default: Azure ``DEFAULT_AZURE_ZONES``, or none (a regional
    cluster) in a ``region`` Azure's regions list names without availability zones (``westus``);
    AWS none here, the region's first three at deploy time."""
    section = declared("cluster")
    raw = open_section(raw, section, path, cloud=cloud, refusals="cluster")
    default_zones = DEFAULT_AZURE_ZONES if cloud is Cloud.AZURE else ()
    if cloud is Cloud.AZURE and region and regions.azure_has_zones(region) is False:
        default_zones = ()
    version = raw.get("kubernetesVersion")
    if isinstance(version, float):
        raise ConfigError(
            f"{path}.kubernetesVersion", 'must be a quoted string such as "1.35" (1.30 in YAML is the number 1.3)', version
        )
    defaults = {"kubernetesVersion": DEFAULT_KUBERNETES_VERSION, "zones": default_zones}
    return build(ClusterSpec, read_keys(raw, section, path, defaults=defaults))


def parse_network(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:network") -> NetworkSpec:
    """``gpupools:network``: a created network (``cidr``) or your own (``subnetId``; ``vpcId`` and
    ``privateSubnetIds``), not both."""
    if raw is None:
        return NetworkSpec()
    section = declared("network")
    raw = open_section(raw, section, path, cloud=cloud, refusals="network")
    if "cidr" in raw and ("subnetId" in raw or "vpcId" in raw):
        raise ConfigError(f"{path}.cidr", "is for a created network; leave it out when bringing your own", raw["cidr"])
    return build(NetworkSpec, read_keys(raw, section, path, first=("dataplane",)))


def parse_system_pool(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:systemPool") -> SystemPoolSpec:
    """``gpupools:systemPool``: always on-demand (``spot`` is refused before the unknown keys);
    ``instanceTypes`` default ``DEFAULT_SYSTEM_INSTANCE_TYPES`` of the cloud."""
    raw = _mapping(raw if raw is not None else {}, path)
    if "spot" in raw:
        raise ConfigError(
            f"{path}.spot",
            "is not allowed: the system pool is always on-demand (AKS rejects Spot system pools, and "
            "evicting CoreDNS or the autoscaler stalls the cluster)",
            raw["spot"],
        )
    section = declared("systemPool")
    raw = open_section(raw, section, path)
    return build(SystemPoolSpec, read_keys(raw, section, path, defaults={"instanceTypes": DEFAULT_SYSTEM_INSTANCE_TYPES[cloud]}))


def _kubernetes_spelling(effect: Any) -> str | None:
    """The hint for a taint effect in EKS's spelling (``NO_SCHEDULE``): the Kubernetes one."""
    eks = {e.eks: e.value for e in TaintEffect}
    return f"use the Kubernetes spelling {eks[effect]!r}" if effect in eks else None


def parse_taint(raw: Any, path: str) -> Taint:
    """One ``taints`` entry. ``value`` has a rule of its own: required and non-empty, with why."""
    section = declared("gpuPools.taints")
    raw = open_section(raw, section, path)
    key = read_value(section.key("key"), raw, path)
    value = raw.get("value")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{path}.value", KIND_RULES["string"], value)
    if not value:
        raise ConfigError(
            f"{path}.value",
            "is required and must be non-empty (cluster-autoscaler ignores taints without a value "
            "when it builds a scale-from-zero template)",
            value,
        )
    effect = read_value(section.key("effect"), raw, path, suggest=_kubernetes_spelling)
    return Taint(key=key, value=value, effect=TaintEffect(effect))


def parse_reservation(raw: Any, path: str) -> ReservationSpec:
    """One ``gpuPools[].reservations`` entry; ``kind`` is read first; ``count`` is a whole number >= 1
    (its declared ``type_error`` says so for a count below 1 too). Formats and zones are checked by
    ``rules.check_reservations``."""
    section = declared("gpuPools.reservations")
    raw = open_section(raw, section, path)
    values = read_keys(raw, section, path, first=("kind",))
    count = values.get("count")
    if count is not None and count < 1:
        raise ConfigError(f"{path}.count", section.key("count").type_error, count)
    return ReservationSpec(capacity_block=values.pop("kind") == "capacityBlock", **values)


def parse_reservations(raw: Any, path: str) -> tuple[ReservationSpec, ...]:
    """``gpuPools[].reservations``: a list of ``{id, zone, kind, count}`` (``parse_reservation``)."""
    return read(declared("gpuPools").key("reservations"), raw, path, (), parser=parse_reservation)  # type: ignore[no-any-return]


def parse_sharing(raw: Any, path: str) -> SharingSpec:
    """``gpuPools[].sharing``: exactly one of ``timeSlicing: {replicas}``, ``mps: {replicas}``,
    ``mig: {profile}``. Ranges and cloud rules are checked by ``rules.check_sharing``."""
    if raw is None:
        return SharingSpec()
    section = declared("gpuPools.sharing")
    raw = open_section(raw, section, path)
    modes = [key.name for key in section.keys if key.name in raw]
    if len(modes) != 1:
        raise ConfigError(
            path,
            "must set exactly one mode (timeSlicing, mps or mig): the device plugin applies one sharing setting to "
            "every GPU of a node, and time-slicing and MPS are mutually exclusive",
            sorted(raw),
        )
    [mode] = modes
    at = f"{path}.{mode}"
    body = section.key(mode)
    return SharingSpec(mode=SharingMode(mode), **read_keys(open_section(raw[mode], body, at), body, at))


def parse_upgrade(raw: Any, path: str) -> UpgradeSpec:
    """``gpuPools[].upgrade`` / ``cpuPools[].upgrade``: ``maxSurge`` and ``maxUnavailable`` as a node
    count (int or digits) or a percentage string, ``drainTimeoutMinutes`` an int; each defaults to
    ``UpgradeSpec``'s. Ranges are ``rules.check_upgrade``'s."""
    if raw is None:
        return UpgradeSpec()
    section = declared("gpuPools.upgrade")
    return build(UpgradeSpec, read_keys(open_section(raw, section, path), section, path))


def parse_warm(raw: Any, path: str) -> WarmSpec | None:
    """``gpuPools[].warm``: ``{nodes, schedule: {days, start, end, timeZone}}``; None when left out.
    ``nodes`` is required (read after the schedule); ``days`` defaults to every day and ``timeZone``
    to ``UTC``. Ranges, the time forms and the time zone are ``rules.check_warm``'s."""
    if raw is None:
        return None
    section = declared("gpuPools.warm")
    raw = open_section(raw, section, path)
    return build(WarmSpec, read_keys(raw, section, path, first=("schedule",), parsers={"schedule": parse_warm_schedule}))


def parse_warm_schedule(raw: Any, path: str) -> WarmScheduleSpec:
    """``gpuPools[].warm.schedule``: an unquoted ``08:00`` (a number to YAML) is refused with why."""
    section = declared("gpuPools.warm.schedule")
    body = open_section(raw, section, path)
    for key in ("start", "end"):
        if _is_int(body.get(key)):
            raise ConfigError(
                f"{path}.{key}", 'must be a quoted "HH:MM" string (YAML reads an unquoted 08:00 as a number)', body[key]
            )
    return build(WarmScheduleSpec, read_keys(body, section, path, defaults={"days": ALL_DAYS}))


def parse_gpu_pool(raw: Any, cloud: Cloud, path: str) -> GpuPoolSpec:
    """One ``gpuPools`` entry (also what components accept as a plain mapping)."""
    return parse_pool(raw, cloud, path, Role.GPU)


def parse_cpu_pool(raw: Any, cloud: Cloud, path: str) -> PoolSpec:
    """One ``cpuPools`` entry: the ``gpuPools`` keys with CPU defaults (``amiType``
    ``AL2023_x86_64_STANDARD``, 80 GiB disk on AWS)."""
    return parse_pool(raw, cloud, path, Role.CPU)


POOL_PARSERS: Mapping[str, Parser] = MappingProxyType(
    {
        "taints": parse_taint,
        "sharing": parse_sharing,
        "reservations": parse_reservation,
        "upgrade": parse_upgrade,
        "warm": parse_warm,
    }
)
"""The pool keys read by a section's own parser (a list key's: each item)."""


def parse_pool(raw: Any, cloud: Cloud, path: str, role: Role) -> PoolSpec:
    """One pool entry of either list; ``role`` picks the defaults (``diskSizeGb``: ``DEFAULT_GPU_DISK_GB``
    or ``DEFAULT_CPU_DISK_GB``; ``amiType``: ``DEFAULT_AMI_TYPE``) and the GPU-only keys' fate.
    ``onDemandFallback`` defaults to ``spot``."""
    section = declared("gpuPools")
    raw = open_section(raw, section, path, cloud=cloud, refusals="pool", gpu=role is Role.GPU)
    # Checked before the other keys, in this order: the first message a pool with several mistakes gets.
    if "instanceTypes" not in raw:
        raise ConfigError(f"{path}.instanceTypes", "is required", None)
    spot = read_value(section.key("spot"), raw, path)
    taints = raw.get("taints")
    if taints is not None and not isinstance(taints, list):
        raise _wrong_type(section.key("taints"), taints, f"{path}.taints")
    read_value(section.key("spotMaxPrice"), raw, path)
    defaults = {
        "onDemandFallback": spot,
        "diskSizeGb": (DEFAULT_GPU_DISK_GB if role is Role.GPU else DEFAULT_CPU_DISK_GB)[cloud],
        "amiType": DEFAULT_AMI_TYPE[role],
    }
    values = read_keys(raw, section, path, defaults=defaults, parsers=POOL_PARSERS)
    return build(PoolSpec, {**values, "role": role})


def parse_gpu_pools(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:gpuPools") -> tuple[GpuPoolSpec, ...]:
    """``gpupools:gpuPools``: required, at least one pool."""
    return read(STACK.key("gpuPools"), raw, path, parser=lambda item, at: parse_gpu_pool(item, cloud, at))  # type: ignore[no-any-return]


def parse_cpu_pools(raw: Any, cloud: Cloud, path: str = f"{NAMESPACE}:cpuPools") -> tuple[PoolSpec, ...]:
    """Optional: no CPU pools unless listed."""
    return read(STACK.key("cpuPools"), raw, path, (), parser=lambda item, at: parse_cpu_pool(item, cloud, at))  # type: ignore[no-any-return]


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

MEANINGFUL_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {name: declared("gpuPools").key(name).default for name in ("minSize", "spotMaxPrice")}
)
"""The values of the keys in ``KARPENTER_MEANINGLESS_POOL_KEYS`` and ``NAP_MEANINGLESS_POOL_KEYS``
(declared in ``gpupools.config_keys``, whose reference notes name them) that say what Karpenter
does anyway, so they are accepted: their declared defaults (``minSize`` 0, ``spotMaxPrice`` -1)."""


def parse_provisioner(value: Any, path: str = f"{NAMESPACE}:provisioner") -> Provisioner:
    """``gpupools:provisioner``: ``cluster-autoscaler`` (default) or ``karpenter``."""
    key = STACK.key("provisioner")
    return Provisioner(key.default if value is None else choice(key, value, path))


def check_provisioner_keys(ours: Mapping[str, Any], cloud: Cloud, provisioner: Provisioner) -> None:
    """Reject, under ``karpenter``, the keys it cannot honour (by name, with why).

    Runs on the raw mappings, so an explicit key is caught even when its value equals the default
    (``maxNodeProvisionTime: 10m``): a stack switching provisioner must not silently keep a setting
    that no longer does anything. ``minSize: 0`` is the Karpenter behaviour itself and is accepted.
    On AKS (Node Auto Provisioning) also ``spotMaxPrice`` other than -1, ``sharing``, ``reservations`` and a
    ``systemPool.maxSize`` other than ``minSize`` (``NAP_MEANINGLESS_POOL_KEYS``, ``check_nap_system_pool``).
    """
    if provisioner is Provisioner.AUTO_MODE:
        check_auto_mode_keys(ours, cloud)
    if not provisioner.node_pools:
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
                        f"{NAMESPACE}:{section}[{index}].{key}",
                        f"has no meaning with provisioner {provisioner.value}: {why}",
                        entry[key],
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
                    f"{NAMESPACE}:autoscaler.{key}",
                    f"has no meaning with provisioner {provisioner.value}: {why}",
                    autoscaler[key],
                )
    if cloud is Cloud.AZURE and not automatic_requested(ours):
        check_nap_system_pool(ours.get("systemPool"))


AUTO_MODE_REFUSED_POOL_KEYS = {
    "sharing": "EKS Auto Mode runs the NVIDIA device plugin itself with no configuration (no time-slicing, MPS or MIG "
    "config: EKS user guide auto-accelerated), and has no NodeOverlay for Karpenter to plan shared slots "
    "(aws/containers-roadmap #2690); use provisioner karpenter for shared GPUs on EKS",
    "efa": "an eks.amazonaws.com/v1 NodeClass has no EFA interface setting (the pinned schema, components/gpupools/kubernetes/crds/eks-auto-mode), "
    "and gpupools' EFA device plugin and security group are its node groups' and EC2NodeClasses'; use provisioner "
    "karpenter or cluster-autoscaler for EFA pools",
    "reservations": "the pinned eks.amazonaws.com/v1 NodeClass schema (components/gpupools/kubernetes/crds/eks-auto-mode) has no "
    "capacityReservationSelectorTerms, so a reserved pool's class could not be checked before deploy; use provisioner "
    "karpenter for capacity reservations on EKS",
    "gpuDriver": "EKS Auto Mode installs and updates the NVIDIA driver and device plugin on its nodes (EKS user guide "
    "auto-accelerated: 'You do not have to install or update these components'); leave it out",
}
"""Pool keys ``provisioner: auto-mode`` refuses, with why (``check_auto_mode_keys``)."""

AUTO_MODE_NODE_REPAIR = (
    "has no meaning with provisioner auto-mode: EKS Auto Mode runs the node monitoring agent and node auto repair on "
    "its nodes itself (EKS user guide node-health: 'automatically enabled with EKS Auto Mode compute'); leave it out"
)


def check_auto_mode_keys(ours: Mapping[str, Any], cloud: Cloud) -> None:
    """What ``provisioner: auto-mode`` (EKS Auto Mode) cannot honour, by name, with why: another cloud,
    the pool keys of ``AUTO_MODE_REFUSED_POOL_KEYS`` and ``nodeRepair`` (Auto Mode's own). The keys
    Karpenter cannot honour are refused after this, as under ``karpenter``."""
    if cloud is not Cloud.AWS:
        raise ConfigError(
            f"{NAMESPACE}:provisioner",
            "auto-mode is EKS Auto Mode, on aws only; on azure the provisioner Karpenter runs is karpenter (AKS Node "
            "Auto Provisioning)",
            "auto-mode",
        )
    for section in ("gpuPools", "cpuPools"):
        entries = ours.get(section)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, Mapping):
                continue
            for key, why in AUTO_MODE_REFUSED_POOL_KEYS.items():
                if key in entry and entry[key] not in (None, False, [], {}):
                    raise ConfigError(
                        f"{NAMESPACE}:{section}[{index}].{key}", f"is not available with provisioner auto-mode: {why}", entry[key]
                    )
    repair = ours.get("nodeRepair")
    if isinstance(repair, Mapping) and "enabled" in repair:
        raise ConfigError(f"{NAMESPACE}:nodeRepair.enabled", AUTO_MODE_NODE_REPAIR, repair["enabled"])


AUTOMATIC_REFUSED_KEYS = {
    "network": "AKS Automatic creates a managed virtual network (Azure CNI Overlay with Cilium); a network of your own "
    "needs hostedSystemProfile subnets and apiServerAccessProfile.subnetId, which the ManagedCluster API version "
    "gpupools pins (2025-09-01, pulumi-azure-native 3.29.0) does not have (docs/aks-automatic.md); leave it out",
    "devicePlugin": "AKS Automatic GPU pools are AKS managed GPU pools (gpuDriver managed): AKS runs the NVIDIA device "
    "plugin, gpupools runs none; leave it out",
}
"""Top-level keys ``cluster.sku: Automatic`` refuses, with why (``check_automatic_keys``)."""


def automatic_requested(ours: Mapping[str, Any]) -> bool:
    """``gpupools:cluster.sku`` is ``Automatic`` (read from the raw mapping, before the cluster is parsed)."""
    cluster = ours.get("cluster")
    return isinstance(cluster, Mapping) and cluster.get("sku") == AKS_AUTOMATIC


def check_automatic_keys(ours: Mapping[str, Any], cloud: Cloud, provisioner: Provisioner, region: str | None) -> None:
    """What ``cluster.sku: Automatic`` (AKS Automatic) needs and cannot honour, by name, with why:
    ``provisioner: karpenter`` (Automatic runs Node Auto Provisioning and no cluster autoscaler), a
    region where Automatic is available (``regions.AKS_AUTOMATIC_REGIONS``), no network of your own,
    no device plugin settings, no local accounts (Automatic preconfigures Azure RBAC with them off), no
    ``systemPool.minSize`` (gpupools' system NodePool keeps none) and no ServiceMonitor for an exporter
    gpupools does not deploy. A GPU pool's ``gpuDriver: install`` is refused with the pool rules
    (``gpu_driver.check_gpu_driver``), after ``with_automatic_defaults``."""
    if not automatic_requested(ours) or cloud is not Cloud.AZURE:
        return
    if provisioner is not Provisioner.KARPENTER:
        raise ConfigError(
            f"{NAMESPACE}:provisioner",
            "must be karpenter with cluster.sku Automatic: AKS Automatic runs Node Auto Provisioning (Karpenter) and no "
            "cluster autoscaler",
            provisioner.value,
        )
    if region is not None and regions.normalize(Cloud.AZURE, region) not in regions.AKS_AUTOMATIC_REGIONS:
        raise ConfigError(
            "azure-native:location",
            f"must be a region where AKS Automatic is available ({len(regions.AKS_AUTOMATIC_REGIONS)} regions, "
            "aks-automatic-limitations.md) with cluster.sku Automatic",
            region,
        )
    for key, why in AUTOMATIC_REFUSED_KEYS.items():
        if key in ours:
            raise ConfigError(f"{NAMESPACE}:{key}", f"is not available with cluster.sku Automatic: {why}", ours[key])
    cluster = ours["cluster"]
    if cluster.get("allowLocalAccounts"):
        raise ConfigError(
            f"{NAMESPACE}:cluster.allowLocalAccounts",
            "must be false with cluster.sku Automatic: AKS Automatic preconfigures Entra ID with Azure RBAC and local "
            "accounts off",
            cluster["allowLocalAccounts"],
        )
    system = ours.get("systemPool")
    if isinstance(system, Mapping) and "minSize" in system:
        raise ConfigError(
            f"{NAMESPACE}:systemPool.minSize",
            "has no meaning with cluster.sku Automatic: AKS runs the cluster's system pool itself, and gpupools' system "
            "NodePool (for Kueue and its own controllers) keeps no minimum; leave it out",
            system["minSize"],
        )
    metrics = ours.get("gpuMetrics")
    if isinstance(metrics, Mapping) and metrics.get("serviceMonitor"):
        raise ConfigError(
            f"{NAMESPACE}:gpuMetrics.serviceMonitor",
            "is not available with cluster.sku Automatic: AKS managed GPU pools run AKS's own DCGM exporter (port 19400), "
            "gpupools deploys none for its ServiceMonitor to select",
            metrics["serviceMonitor"],
        )


def with_automatic_defaults(ours: Mapping[str, Any]) -> Mapping[str, Any]:
    """``ours`` with ``gpuDriver: managed`` on every GPU pool that sets none, under ``cluster.sku:
    Automatic``: there AKS installs the driver and runs the device plugin (``gpupools.gpu_driver.AUTOMATIC_INSTALL_WHY``)."""
    entries = ours.get("gpuPools")
    if not automatic_requested(ours) or not isinstance(entries, list):
        return ours
    pools = [
        {**entry, "gpuDriver": GpuDriver.MANAGED.value} if isinstance(entry, Mapping) and "gpuDriver" not in entry else entry
        for entry in entries
    ]
    return {**ours, "gpuPools": pools}


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
    check_automatic_keys(ours, cloud, provisioner, region)
    ours = dict(with_automatic_defaults(ours))
    p = f"{NAMESPACE}:"
    # First: the sizes a stack declares join the catalog before any pool is read (catalog.user_sizes).
    catalog = parse_catalog(ours.get("catalog"), p + "catalog", cloud)
    user_sizes.install(cloud, catalog.instance_types, p + "catalog.instanceTypes")
    device = open_section(ours.get("devicePlugin"), declared("devicePlugin"), p + "devicePlugin")
    autoscaler = open_section(ours.get("autoscaler"), declared("autoscaler"), p + "autoscaler")
    smoke = open_section(ours.get("smokeTest"), declared("smokeTest"), p + "smokeTest")
    upgrade = open_section(ours.get("upgrade"), declared("upgrade"), p + "upgrade")
    metrics = open_section(ours.get("gpuMetrics"), declared("gpuMetrics"), p + "gpuMetrics")
    network = parse_network(ours.get("network"), cloud)
    system_pool = parse_system_pool(ours.get("systemPool"), cloud)
    if cloud is Cloud.AZURE and provisioner is Provisioner.KARPENTER and not automatic_requested(ours):
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
        device_plugin=DevicePluginSpec(
            **read_keys(device, declared("devicePlugin"), p + "devicePlugin", defaults={"version": DEFAULT_DEVICE_PLUGIN_VERSION})
        ),
        autoscaler=AutoscalerSpec(
            **read_keys(
                autoscaler,
                declared("autoscaler"),
                p + "autoscaler",
                defaults={"maxNodeProvisionTime": default_max_node_provision_time(gpu_pools, cloud)},
            )
        ),
        smoke_test=SmokeTestSpec(**read_keys(smoke, declared("smokeTest"), p + "smokeTest")),
        upgrade=ReleaseUpgradeSpec(**read_keys(upgrade, declared("upgrade"), p + "upgrade")),
        cost=parse_cost(ours.get("cost"), p + "cost"),
        provisioner=provisioner,
        maintenance=parse_maintenance(ours.get("maintenance"), p + "maintenance"),
        node_repair=parse_node_repair(ours.get("nodeRepair"), cloud, provisioner, p + "nodeRepair"),
        gpu_metrics=parse_gpu_metrics(metrics, p + "gpuMetrics"),
        queueing=parse_queueing(ours.get("queueing"), p + "queueing"),
        catalog=catalog,
    )
    spec = dataclasses.replace(spec, cost=with_pool_eviction_rates(spec.cost, spec.gpu_pools))
    rules.check_stack(spec, region)
    check_budget(spec, region)
    from gpupools.queueing.check import check_queueing

    queueing = ours.get("queueing")
    check_queueing(spec, frozenset(queueing) if isinstance(queueing, Mapping) else frozenset(), p + "queueing")
    return spec


def parse_catalog(raw: Any, path: str, cloud: Cloud) -> CatalogSpec:
    """``gpupools:catalog``: optional; ``allowUnlisted`` a list of sizes (checked in ``rules.check_offered``),
    ``instanceTypes`` sizes the catalog lacks (``parse_user_size``)."""
    section = declared("catalog")

    def size(item: Any, at: str) -> UserSizeSpec:
        return parse_user_size(item, at, cloud)

    values = read_keys(open_section(raw, section, path), section, path, parsers={"instanceTypes": size})
    return CatalogSpec(**values)


def parse_user_size(raw: Any, path: str, cloud: Cloud) -> UserSizeSpec:
    """One ``catalog.instanceTypes`` entry ``{name, vcpus, memoryGib, gpus, gpuModel, architecture, efaInterfaces}``."""
    section = declared("catalog.instanceTypes")
    return UserSizeSpec(**read_keys(open_section(raw, section, path, cloud=cloud, refusals="size"), section, path))


def parse_gpu_metrics(section: Mapping[str, Any], path: str) -> GpuMetricsSpec:
    """``gpupools:gpuMetrics``: on by default; labels for a ServiceMonitor only with one."""
    declaration = declared("gpuMetrics")
    # Read first, in this order, for the checks between them; then every key.
    service_monitor = read_value(declaration.key("serviceMonitor"), section, path)
    labels = read_value(declaration.key("serviceMonitorLabels"), section, path) or frozen_map()
    rules.check_labels(labels, f"{path}.serviceMonitorLabels")
    if labels and not service_monitor:
        raise ConfigError(
            f"{path}.serviceMonitorLabels", "needs serviceMonitor: true (they label the ServiceMonitor)", dict(labels)
        )
    return GpuMetricsSpec(**read_keys(section, declaration, path))


def parse_cost(raw: Any, path: str) -> CostSpec:
    """``gpupools:cost``: optional; numbers only (ranges in ``rules.check_cost``)."""
    section = declared("cost")
    return build(CostSpec, read_keys(open_section(raw, section, path), section, path))


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
    (``concepts/disruption.md``, Node Auto Repair); ``enabled: true`` turns it on. EKS Auto Mode: off
    here, because Auto Mode repairs its nodes itself (the key is refused: ``AUTO_MODE_NODE_REPAIR``).
    AKS: on (always on, nothing to set).
    """
    return not (cloud is Cloud.AWS and provisioner.node_pools)


def parse_node_repair(raw: Any, cloud: Cloud, provisioner: Provisioner, path: str) -> NodeRepairSpec:
    """``gpupools:nodeRepair``: ``{enabled: bool}``, default ``default_node_repair``; ``false`` on
    Azure is an error (``AKS_NODE_REPAIR_ALWAYS_ON``)."""
    declaration = declared("nodeRepair")
    section = open_section(raw, declaration, path)
    enabled = read_value(declaration.key("enabled"), section, path, default_node_repair(cloud, provisioner))
    if cloud is Cloud.AZURE and not enabled:
        raise ConfigError(f"{path}.enabled", AKS_NODE_REPAIR_ALWAYS_ON, False)
    return NodeRepairSpec(enabled=enabled)


def parse_queueing(raw: Any, path: str) -> QueueingSpec:
    """``gpupools:queueing``: optional, off by default; types here, rules in ``gpupools.queueing.check``."""
    declaration = declared("queueing")
    section = open_section(raw, declaration, path)
    return build(QueueingSpec, read_keys(section, declaration, path, first=("teams",), parsers={"teams": parse_team}))


def parse_team(raw: Any, path: str) -> TeamQueueSpec:
    """One ``queueing.teams`` entry: ``namespaces`` default none."""
    declaration = declared("queueing.teams")
    return build(TeamQueueSpec, read_keys(open_section(raw, declaration, path), declaration, path, defaults={"namespaces": ()}))


def parse_maintenance(raw: Any, path: str) -> MaintenanceSpec:
    """``gpupools:maintenance``: optional; every key has a default (``MaintenanceSpec``). Forms and
    ranges in ``rules.check_maintenance``."""
    declaration = declared("maintenance")
    section = open_section(raw, declaration, path)
    start_time = section.get("startTime")
    if _is_int(start_time):
        raise ConfigError(
            f"{path}.startTime", 'must be a quoted "HH:MM" string (YAML reads an unquoted 02:00 as a number)', start_time
        )
    return build(MaintenanceSpec, read_keys(section, declaration, path))


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


def _one_edit_apart(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one inserted, deleted or replaced character, or two swapped
    neighbours (optimal string alignment distance 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diffs) == 1 or (
            len(diffs) == 2 and diffs[1] == diffs[0] + 1 and a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]]
        )
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def misspelt_namespace_keys(keys: Iterable[str]) -> list[str]:
    """The config keys whose namespace is not ``gpupools`` but one edit from it, case aside
    (``gpupool:cost``, ``GPUPools:queueing``, ``gpuools:gpuPools``). Pulumi hands a program every key
    of the stack file and the program reads only ``gpupools:*``, so such a key would be dropped
    without a word (a budget under ``gpupool:cost`` was, with exit 0: issue 48, 5.)."""
    found = []
    for key in keys:
        namespace = key.split(":", 1)[0]
        if (
            ":" in key
            and namespace != NAMESPACE
            and (namespace.lower() == NAMESPACE or _one_edit_apart(namespace.lower(), NAMESPACE))
        ):
            found.append(key)
    return sorted(found)


def misspelt_namespace_warning(keys: Iterable[str]) -> str | None:
    """One line naming every ``misspelt_namespace_keys`` key and the key it was probably meant to be;
    None when there is none."""
    found = misspelt_namespace_keys(keys)
    if not found:
        return None
    meant = ", ".join(f"{key} (did you mean {NAMESPACE}:{key.split(':', 1)[1]}?)" for key in found)
    return f"config keys not read by gpupools, their namespace one edit from '{NAMESPACE}': {meant}"


def load() -> StackSpec:
    """The running stack's validated spec. Raises ``ConfigError`` before any resource exists; warns
    (``pulumi.log.warn``) about keys whose namespace is a misspelling of ``gpupools``
    (``misspelt_namespace_warning``), which nothing else would read."""
    import pulumi
    from pulumi.runtime.config import CONFIG

    warning = misspelt_namespace_warning(CONFIG.get().keys())
    if warning:
        pulumi.log.warn(warning)
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

    text = Path(path).read_text(encoding="utf-8")
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise yaml_error(Path(path).name, text, error) from None
    values = document.get("config") or {} if isinstance(document, Mapping) else {}
    if not isinstance(values, Mapping):
        raise ConfigError(f"{os.fspath(path)}: config", "must be a mapping", values)
    cloud = cloud_of(values)
    region_key = "aws:region" if cloud is Cloud.AWS else "azure-native:location"
    region = values.get(region_key)
    return parse(values, region=str(region) if region is not None else None)
