"""From the package's ``args`` dicts to the Python API's keyword arguments, and back for outputs.

The cross-language components (``gpupools.xlang.components``) receive one ``args`` dict with
snake_case keys (the ``TypedDict``s of ``gpupools.xlang.args``; the component provider maps the
schema's camelCase names back to them, recursively for nested types:
``ComponentProvider.map_input_properties`` in the pinned SDK). This module turns that dict into the
keyword arguments of the Python component, and nothing else: every value is checked where the
Python API checks it. Pool, cluster, network, system pool, autoscaler and maintenance mappings are
handed to the config parsers (``gpupools.config.parse_*``) in the stack config's camelCase shape,
so a bad value fails with the same ``ConfigError`` as in ``Pulumi.<stack>.yaml``.

Python-only arguments (a ``pulumi.Resource`` to order after, live-count readers, ``NodePoolInfo``
objects, enums of the Python API) are not in the args types; ``PYTHON_ONLY`` lists them per
component for the docs and a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.output import contains_unknowns
from pulumi.provider.experimental.util import camel_case

from gpupools import config
from gpupools.conventions import CapacityType, Role, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.specs import (
    AutoscalerSpec,
    ClusterSpec,
    GpuDriver,
    MaintenanceSpec,
    NetworkSpec,
    SharingMode,
    SharingSpec,
    SystemPoolSpec,
)

VERBATIM_KEYS = frozenset(
    {"labels", "limits", "prices", "subnet_ids_by_zone", "private_subnet_tags", "service_monitor_labels", "weights"}
)
"""Keys whose values are user maps (label keys, zone names, pool names): their keys are data, never
renamed."""

PYTHON_ONLY: dict[str, tuple[str, ...]] = {
    "AksCluster": (),
    "GpuNodePool": ("after", "live_counts"),
    "CpuNodePool": ("after", "live_counts"),
    "NapNodePools": (),
    "NodeImageMaintenance": (),
    "EksCluster": (),
    "GpuNodeGroup": ("live_sizes",),
    "CpuNodeGroup": ("live_sizes",),
    "KarpenterNodePools": (),
    "AutoModeNodePools": (),
    "Karpenter": (),
    "ClusterAutoscaler": (),
    "NvidiaDevicePlugin": (),
    "DcgmExporter": (),
    "EfaDevicePlugin": (),
    "PriorityExpander": (),
    "GpuSmokeTest": (),
    "WarmCapacity": ("after",),
    "Kueue": (),
    "KueueQueues": (),
}
"""Keyword arguments of the Python API that have no counterpart in the package's args: ``after``
(a ``pulumi.Resource`` to chain pool creation on: cross-language, use ``dependsOn``),
``live_counts`` / ``live_sizes`` (readers of live capacity, shared between Python components; the
package's components build their own)."""


def _int_fields() -> frozenset[str]:
    """Field names the args types declare ``int`` (directly, ``NotRequired`` or in a list)."""
    import typing

    from gpupools.xlang import args

    names = set()
    for obj in vars(args).values():
        if isinstance(obj, type) and typing.is_typeddict(obj):
            for field, hint in obj.__annotations__.items():  # real objects: args.py postpones none
                if hint is int or typing.get_args(hint) == (int,):
                    names.add(field)
    return frozenset(names)


def to_config(value: Any, key: str = "") -> Any:
    """Snake_case ``args`` (nested) -> the config's camelCase shape; user maps keep their keys.

    An integral float in an ``int`` field becomes an ``int``: numbers cross the wire as floats, and
    the pinned SDK's ``map_input_properties`` casts them (added by pulumi#21944, 3.224.0) but then
    stores the uncast value (the assignment after the cast has no ``continue``; ``component.py`` in
    pulumi 3.259.0 and 3.272.0), so ``3`` arrives as ``3.0``. Any other float is left for the parser to refuse."""
    if isinstance(value, Mapping):
        if key in VERBATIM_KEYS:
            return dict(value)
        return {camel_case(k): to_config(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_config(v, key) for v in value]
    if isinstance(value, float) and value.is_integer() and key in INT_FIELDS:
        return int(value)
    return value


INT_FIELDS = _int_fields()


def _mapping(args: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(args, Mapping):
        raise ConfigError(path, "must be a mapping of the component's arguments", args)
    return args


def cluster_spec(raw: Any, cloud: config.Cloud, path: str) -> ClusterSpec:
    return config.parse_cluster(to_config(raw), cloud, path)


def network_spec(raw: Any, cloud: config.Cloud, path: str) -> NetworkSpec:
    return config.parse_network(to_config(raw) if raw is not None else None, cloud, path)


def system_pool_spec(raw: Any, cloud: config.Cloud, path: str) -> SystemPoolSpec:
    return config.parse_system_pool(to_config(raw) if raw is not None else None, cloud, path)


def autoscaler_spec(raw: Any, path: str) -> AutoscalerSpec | None:
    """``AutoscalerArgs`` -> ``AutoscalerSpec`` (None: the component's default)."""
    if raw is None:
        return None
    raw = dict(to_config(_mapping(raw, path)))
    config.check_keys(raw, config.AUTOSCALER_KEYS, path)
    default = AutoscalerSpec()
    for key in config.AUTOSCALER_KEYS:
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{path}.{key}", "must be a duration string such as 10m", raw[key])
    return AutoscalerSpec(
        max_node_provision_time=raw.get("maxNodeProvisionTime", default.max_node_provision_time),
        scale_down_unneeded_time=raw.get("scaleDownUnneededTime", default.scale_down_unneeded_time),
    )


def maintenance_spec(raw: Any, path: str) -> MaintenanceSpec | None:
    return None if raw is None else config.parse_maintenance(to_config(raw), path)


def pools(raw: Any, path: str) -> list[Any]:
    """A list of ``PoolArgs`` -> config mappings (the components validate them)."""
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise ConfigError(path, "must be a list of pools", raw)
    return [to_config(p) for p in raw]


def pick(args: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The given keys that are present (absent keys keep the Python API's defaults)."""
    return {k: args[k] for k in keys if args.get(k) is not None}


# -- NodePoolInfo <-> the package's NodePoolInfo dicts -----------------------------------------


def info_to_dict(info: NodePoolInfo) -> dict[str, Any]:
    """A ``NodePoolInfo`` as the package's ``NodePoolInfo`` output (snake_case keys)."""
    sharing: dict[str, Any] = {"mode": info.sharing.mode.value, "replicas": info.sharing.replicas}
    if info.sharing.mig_profile:
        sharing["mig_profile"] = info.sharing.mig_profile
    return {
        "name": info.name,
        "pool": info.pool,
        "role": info.role.value,
        "capacity": info.capacity.value,
        "zones": list(info.zones),
        "instance_types": list(info.instance_types),
        "min_size": info.min_size,
        "max_size": info.max_size,
        "labels": dict(info.labels),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in info.taints],
        "gpus_per_node": info.gpus_per_node,
        "gpu_model": info.gpu_model,
        "autoscaler_group_regex": info.autoscaler_group_regex,
        "needs_device_plugin": info.needs_device_plugin,
        "sharing": sharing,
        "slots_per_gpu": info.slots_per_gpu,
        "capacity_types": [c.value for c in info.capacity_types],
        "capacity_label": info.capacity_label,
        "limits": dict(info.limits),
        "efa_interfaces": info.efa_interfaces,
        "gpu_driver": info.gpu_driver.value,
        "reserved_nodes": info.reserved_nodes,
    }


def _enum(enum: Any, value: Any, path: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        raise ConfigError(path, "must be one of " + ", ".join(e.value for e in enum), value) from None


def settled(value: Any, path: str) -> tuple[Any, list[pulumi.Resource]]:
    """The value of an input the component needs as a plain value, and the resources it came from.

    Another language's program passes a pool component's ``nodePools`` output here. The provider
    server hands such an input over as an ``Output`` already holding its value and its
    dependencies (``ProviderServicer._select_value`` in ``pulumi/provider/server.py``: a resolved
    future wrapped by ``Output._from_data``), so the value is read without waiting; the resources
    become ``depends_on`` of the component's children. The pool descriptions are computed from
    plain values, so they are known in previews too. An output that is not settled (or not known)
    is refused with one ``ConfigError``: the add-ons decide which objects to create from the pools,
    before anything is registered."""
    if not isinstance(value, pulumi.Output):
        return value, []
    data = getattr(value, "_data", None)
    if data is None or not data.done() or data.exception() is not None:
        raise ConfigError(path, "must be known when the component is constructed (pass pool components' nodePools)", "an output")
    output_data = data.result()
    if not output_data.is_known or contains_unknowns(output_data.value):
        raise ConfigError(
            path, "must be known when the component is constructed; it is unknown in this preview", "an unknown output"
        )
    return output_data.value, list(output_data.resources)


_SNAKE = {
    camel_case(k): k
    for k in (
        "instance_types",
        "min_size",
        "max_size",
        "gpus_per_node",
        "gpu_model",
        "autoscaler_group_regex",
        "needs_device_plugin",
        "slots_per_gpu",
        "capacity_types",
        "capacity_label",
        "efa_interfaces",
        "gpu_driver",
        "mig_profile",
    )
}
"""Schema names of ``NodePoolInfo`` fields back to Python names: an input that arrives as an output
keeps the names it was published under (the component provider renames only plain lists)."""


def _python_names(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = {_SNAKE.get(k, k): v for k, v in raw.items()}
    if isinstance(out.get("sharing"), Mapping):
        out["sharing"] = {_SNAKE.get(k, k): v for k, v in out["sharing"].items()}
    return out


def info_from_dict(raw: Any, path: str) -> NodePoolInfo:
    """The package's ``NodePoolInfo`` dict -> ``NodePoolInfo`` (the inverse of ``info_to_dict``;
    Python or schema names)."""
    raw = _python_names(_mapping(raw, path))
    missing = [k for k in ("name", "pool", "role", "capacity", "min_size", "max_size") if k not in raw]
    if missing:
        raise ConfigError(f"{path}.{camel_case(missing[0])}", "is required", None)
    sharing = raw.get("sharing") or {}
    return NodePoolInfo(
        name=str(raw["name"]),
        pool=str(raw["pool"]),
        role=_enum(Role, raw["role"], f"{path}.role"),
        capacity=_enum(CapacityType, raw["capacity"], f"{path}.capacity"),
        zones=tuple(raw.get("zones") or ()),
        instance_types=tuple(raw.get("instance_types") or ()),
        min_size=int(raw["min_size"]),
        max_size=int(raw["max_size"]),
        labels=dict(raw.get("labels") or {}),
        taints=tuple(
            Taint(key=t["key"], value=t["value"], effect=_enum(TaintEffect, t["effect"], f"{path}.taints[{i}].effect"))
            for i, t in enumerate(raw.get("taints") or ())
        ),
        gpus_per_node=int(raw.get("gpus_per_node") or 0),
        gpu_model=str(raw.get("gpu_model") or ""),
        autoscaler_group_regex=str(raw.get("autoscaler_group_regex") or ""),
        needs_device_plugin=bool(raw.get("needs_device_plugin", True)),
        sharing=SharingSpec(
            mode=_enum(SharingMode, sharing.get("mode", SharingMode.NONE.value), f"{path}.sharing.mode"),
            replicas=int(sharing.get("replicas") or 1),
            mig_profile=sharing.get("mig_profile"),
        ),
        slots_per_gpu=int(raw.get("slots_per_gpu") or 1),
        capacity_types=tuple(
            _enum(CapacityType, c, f"{path}.capacityTypes[{i}]") for i, c in enumerate(raw.get("capacity_types") or ())
        ),
        capacity_label=str(raw.get("capacity_label") or NodePoolInfo.__dataclass_fields__["capacity_label"].default),
        limits=dict(raw.get("limits") or {}),
        efa_interfaces=int(raw.get("efa_interfaces") or 0),
        gpu_driver=_enum(GpuDriver, raw.get("gpu_driver", GpuDriver.INSTALL.value), f"{path}.gpuDriver"),
        reserved_nodes=int(raw.get("reserved_nodes") or 0),
    )


def infos(raw: Any, path: str) -> list[NodePoolInfo]:
    if not isinstance(raw, (list, tuple)):
        raise ConfigError(path, "must be a list of node pool infos (a pool component's nodePools)", raw)
    return [info_from_dict(item, f"{path}[{i}]") for i, item in enumerate(raw)]


def infos_out(items: Sequence[NodePoolInfo]) -> list[dict[str, Any]]:
    """A ``list[NodePoolInfo]`` output, in schema (camelCase) names.

    ``ComponentProvider.get_state`` renames the keys of an output that *is* a type reference
    (``map_complex_output``) but passes arrays through untouched, so a list output is written in
    the schema's names here, while a single ``NodePoolInfo`` output stays in Python names
    (``info_to_dict``) for the provider to rename."""
    return [to_config(info_to_dict(i)) for i in items]
