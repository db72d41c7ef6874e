"""A schema check of NVIDIA device plugin config files, written from the plugin's own rules.

Source, read at the pinned plugin version (``gpupools.versions.DEFAULT_DEVICE_PLUGIN_VERSION``):
NVIDIA/k8s-device-plugin tag v0.20.0, commit 1b826acc6af3079d8923bac395c3124b8861a9a6.

* ``api/config/v1/config.go``: ``Config`` = ``version``, ``flags``, ``resources``, ``sharing``,
  ``imex``; ``parseConfigFrom`` reads YAML (sigs.k8s.io/yaml, i.e. YAML turned into JSON and decoded
  by encoding/json), an empty ``version`` means ``v1`` and any other version is "unknown version".
* ``api/config/v1/flags.go``: ``Flags`` embeds ``CommandLineFlags`` (its fields sit directly under
  ``flags``), with ``plugin`` (``PluginCommandLineFlags``) and ``gfd`` (``GFDCommandLineFlags``);
  each field's JSON name and Go type; ``deviceListStrategy`` is a string or a list of strings.
* ``api/config/v1/replicas.go``: ``ReplicatedResources.UnmarshalJSON`` (``renameByDefault`` and
  ``failRequestsGreaterThanOne`` booleans, ``resources`` required and non-empty) and
  ``ReplicatedResource.UnmarshalJSON`` (``name`` required, ``devices`` ``"all"`` / a count > 0 / a
  list of GPU indices, MIG indices or UUIDs, ``replicas`` required and >= 2, ``rename`` optional).
* ``api/config/v1/resources.go``: a ``ResourceName`` gets the ``nvidia.com/`` prefix if it has none,
  is at most 63 characters, and its name part is a DNS subdomain; ``resources.gpus``/``mig`` entries
  need ``pattern`` and ``name``.
* ``api/config/v1/sharing.go`` (``timeSlicing``, ``mps``), ``imex.go`` (``channelIDs`` [] or [0]),
  ``duration.go`` (a number, a Go duration or ``infinite``), ``consts.go`` (the strategy values).
* ``cmd/nvidia-device-plugin/main.go``, ``validateFlags``: MIG strategy none/single/mixed, device list
  strategies, device ID strategy uuid/index, allocation policy distributed/packed, discovery strategy
  auto/nvml/tegra; MPS needs ``mpsRoot`` and cannot run with the ``mixed`` MIG strategy.
* ``internal/plugin/mps.go``: MPS is not supported for MIG devices, so only ``nvidia.com/gpu`` is
  shared with MPS.

Stricter than the plugin where the plugin would silently do something other than the file says, so
that a typo or an ignored field fails here instead of in a cluster: unknown keys (encoding/json drops
them), time-slicing and MPS both replicated (``Sharing.SharingStrategy`` silently picks MPS), and
``rename``/``devices`` in shared resources or a ``resources`` section (``DisableResourceNamingInConfig``
ignores them with a warning). Only the shape is checked here, nothing about a node's GPUs.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import yaml

VERSION = "v1"
MIG_STRATEGIES = ("none", "single", "mixed")
DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
DEVICE_ID_STRATEGIES = ("uuid", "index")
ALLOCATION_POLICIES = ("distributed", "packed")
DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")
RESOURCE_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME = 63
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$|^0$")
UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
DEVICE_REF = re.compile(rf"^(\d+|\d+:\d+|GPU-{UUID}|MIG-{UUID}|MIG-GPU-{UUID}/\d+/\d+)$")


class PluginConfigError(ValueError):
    """The config would not load in the plugin (or would not do what it says). ``path`` is the key path."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path or '<root>'}: {message}")


# --- JSON types as encoding/json decodes them ----------------------------------------------------


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_duration(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and (value == "infinite" or bool(GO_DURATION.match(value)))


def _is_device_list_strategy(value: Any) -> bool:
    items = [value] if isinstance(value, str) else value
    return isinstance(items, list) and all(isinstance(s, str) and s in DEVICE_LIST_STRATEGIES for s in items)


def _choice(*choices: str) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and value in choices


Check = Callable[[Any], bool]

COMMAND_LINE_FLAGS: dict[str, tuple[Check, str]] = {
    "migStrategy": (_choice(*MIG_STRATEGIES), "one of " + ", ".join(MIG_STRATEGIES)),
    "failOnInitError": (_is_bool, "a boolean"),
    "mpsRoot": (_is_str, "a string"),
    "nvidiaDriverRoot": (_is_str, "a string"),
    "nvidiaDevRoot": (_is_str, "a string"),
    "gdrcopyEnabled": (_is_bool, "a boolean"),
    "gdsEnabled": (_is_bool, "a boolean"),
    "mofedEnabled": (_is_bool, "a boolean"),
    "useNodeFeatureAPI": (_is_bool, "a boolean"),
    "deviceDiscoveryStrategy": (_choice(*DISCOVERY_STRATEGIES), "one of " + ", ".join(DISCOVERY_STRATEGIES)),
}
PLUGIN_FLAGS: dict[str, tuple[Check, str]] = {
    "passDeviceSpecs": (_is_bool, "a boolean"),
    "deviceListStrategy": (_is_device_list_strategy, "one of (or a list of) " + ", ".join(DEVICE_LIST_STRATEGIES)),
    "deviceIDStrategy": (_choice(*DEVICE_ID_STRATEGIES), "one of " + ", ".join(DEVICE_ID_STRATEGIES)),
    "cdiAnnotationPrefix": (_is_str, "a string"),
    "nvidiaCTKPath": (_is_str, "a string"),
    "containerDriverRoot": (_is_str, "a string"),
    "sharedDevicesAllocationPolicy": (_choice(*ALLOCATION_POLICIES), "one of " + ", ".join(ALLOCATION_POLICIES)),
}
GFD_FLAGS: dict[str, tuple[Check, str]] = {
    "oneshot": (_is_bool, "a boolean"),
    "noTimestamp": (_is_bool, "a boolean"),
    "sleepInterval": (_is_duration, "a number of nanoseconds, a Go duration or 'infinite'"),
    "outputFile": (_is_str, "a string"),
    "machineTypeFile": (_is_str, "a string"),
}


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PluginConfigError(path, f"must be a mapping, got {value!r}")
    return value


def _known(value: Mapping[str, Any], keys: Any, path: str) -> None:
    for key in value:
        if key not in keys:
            raise PluginConfigError(
                f"{path}.{key}" if path else str(key), "is not a field of the plugin's config (it would be ignored)"
            )


def _fields(value: Mapping[str, Any], fields: Mapping[str, tuple[Check, str]], path: str) -> None:
    for key, raw in value.items():
        if raw is None:
            continue  # encoding/json leaves a pointer nil for null
        check, describe = fields[key]
        if not check(raw):
            raise PluginConfigError(f"{path}.{key}", f"must be {describe}, got {raw!r}")


def check_flags(raw: Any, path: str = "flags") -> Mapping[str, Any]:
    flags = _mapping(raw, path)
    _known(flags, {*COMMAND_LINE_FLAGS, "plugin", "gfd"}, path)
    _fields({k: v for k, v in flags.items() if k in COMMAND_LINE_FLAGS}, COMMAND_LINE_FLAGS, path)
    if flags.get("plugin") is not None:
        plugin = _mapping(flags["plugin"], f"{path}.plugin")
        _known(plugin, PLUGIN_FLAGS, f"{path}.plugin")
        _fields(plugin, PLUGIN_FLAGS, f"{path}.plugin")
    if flags.get("gfd") is not None:
        gfd = _mapping(flags["gfd"], f"{path}.gfd")
        _known(gfd, GFD_FLAGS, f"{path}.gfd")
        _fields(gfd, GFD_FLAGS, f"{path}.gfd")
    return flags


def resource_name(raw: Any, path: str) -> str:
    """``NewResourceName``: add the ``nvidia.com/`` prefix, at most 63 characters, DNS-subdomain name."""
    if not isinstance(raw, str):
        raise PluginConfigError(path, f"must be a string, got {raw!r}")
    name = raw if raw.startswith(f"{RESOURCE_PREFIX}/") else f"{RESOURCE_PREFIX}/{raw}"
    if len(name) > MAX_RESOURCE_NAME:
        raise PluginConfigError(path, f"fully-qualified resource name must be {MAX_RESOURCE_NAME} characters or less: {name}")
    if not DNS_SUBDOMAIN.match(name.split("/", 1)[1]):
        raise PluginConfigError(path, f"incorrect format for resource name {name!r}")
    return name


def _devices(raw: Any, path: str) -> None:
    if isinstance(raw, str):
        if raw != "all":
            raise PluginConfigError(path, f"the only valid string is 'all', got {raw!r}")
        return
    if _is_int(raw):
        if raw <= 0:
            raise PluginConfigError(path, f"a count of devices must be > 0, got {raw!r}")
        return
    if isinstance(raw, list):
        for index, item in enumerate(raw):
            if not ((_is_int(item) and item >= 0) or (isinstance(item, str) and DEVICE_REF.match(item))):
                raise PluginConfigError(f"{path}[{index}]", f"must be a GPU index, a MIG index or a UUID, got {item!r}")
        return
    raise PluginConfigError(path, f"unrecognized type for devices spec: {raw!r}")


def check_replicated_resources(raw: Any, path: str) -> list[dict[str, Any]]:
    """``ReplicatedResources`` as the plugin decodes it; returns the resources with full names."""
    body = _mapping(raw, path)
    _known(body, ("renameByDefault", "failRequestsGreaterThanOne", "resources"), path)
    for key in ("renameByDefault", "failRequestsGreaterThanOne"):
        if key in body and not _is_bool(body[key]):
            raise PluginConfigError(f"{path}.{key}", f"must be a boolean, got {body[key]!r}")
    resources = body.get("resources")
    if not isinstance(resources, list) or not resources:
        raise PluginConfigError(f"{path}.resources", "no resources specified")
    decoded = []
    for index, item in enumerate(resources):
        at = f"{path}.resources[{index}]"
        resource = _mapping(item, at)
        _known(resource, ("name", "rename", "devices", "replicas"), at)
        if "name" not in resource:
            raise PluginConfigError(f"{at}.name", "no resource name specified")
        name = resource_name(resource["name"], f"{at}.name")
        if "devices" in resource:
            _devices(resource["devices"], f"{at}.devices")
            if resource["devices"] != "all":
                raise PluginConfigError(
                    f"{at}.devices", "is ignored by the plugin ('devices' is not yet supported in the config)"
                )
        if "replicas" not in resource:
            raise PluginConfigError(f"{at}.replicas", "no replicas specified")
        replicas = resource["replicas"]
        if replicas is not None and not _is_int(replicas):
            raise PluginConfigError(f"{at}.replicas", f"must be an integer, got {replicas!r}")
        if (replicas or 0) < 2:
            raise PluginConfigError(f"{at}.replicas", f"number of replicas must be >= 2, got {replicas!r}")
        if "rename" in resource:
            rename = resource_name(resource["rename"], f"{at}.rename")
            default = f"{name}.shared" if body.get("renameByDefault") else ""
            if rename != default:
                raise PluginConfigError(f"{at}.rename", "is ignored by the plugin ('rename' is not yet supported in the config)")
        decoded.append({"name": name, "replicas": replicas})
    return decoded


def check_sharing(raw: Any, flags: Mapping[str, Any], path: str = "sharing") -> str:
    """The sharing section; returns the active strategy (``none``, ``timeSlicing`` or ``mps``)."""
    sharing = _mapping(raw, path)
    _known(sharing, ("timeSlicing", "mps"), path)
    active = [mode for mode in ("timeSlicing", "mps") if sharing.get(mode) is not None]
    if len(active) > 1:
        raise PluginConfigError(path, "time-slicing and MPS are mutually exclusive (the plugin would silently use MPS)")
    for mode in active:
        resources = check_replicated_resources(sharing[mode], f"{path}.{mode}")
        for index, resource in enumerate(resources):
            at = f"{path}.{mode}.resources[{index}].name"
            if mode == "mps" and resource["name"] != f"{RESOURCE_PREFIX}/gpu":
                raise PluginConfigError(at, "MPS shares only full GPUs (nvidia.com/gpu)")
            if mode == "timeSlicing" and not re.match(r"^nvidia\.com/(gpu|mig-\d+g\.\d+gb)$", resource["name"]):
                raise PluginConfigError(at, "time-slicing shares nvidia.com/gpu or a mixed-strategy MIG resource")
    if "mps" in active:
        if flags.get("migStrategy") == "mixed":
            raise PluginConfigError(f"{path}.mps", "using --mig-strategy=mixed is not supported with MPS")
        if not flags.get("mpsRoot"):
            raise PluginConfigError(f"{path}.mps", "using MPS requires --mps-root to be specified (flags.mpsRoot)")
    return active[0] if active else "none"


def check_config(raw: Any) -> dict[str, Any]:
    """Check one parsed config document. Returns ``{"version", "flags", "strategy"}``."""
    config = _mapping(raw, "")
    _known(config, ("version", "flags", "resources", "sharing", "imex"), "")
    version = config.get("version") or VERSION
    if version != VERSION:
        raise PluginConfigError("version", f"unknown version: {version}")
    flags = check_flags(config["flags"]) if config.get("flags") is not None else {}
    if config.get("resources") is not None:
        raise PluginConfigError("resources", "is ignored by the plugin ('resources' is not yet supported in the config)")
    strategy = check_sharing(config["sharing"], flags) if config.get("sharing") is not None else "none"
    if config.get("imex") is not None:
        imex = _mapping(config["imex"], "imex")
        _known(imex, ("channelIDs", "required"), "imex")
        ids = imex.get("channelIDs") or []
        if ids not in ([], [0]):
            raise PluginConfigError("imex.channelIDs", f"must be [] or [0], got {ids!r}")
        if "required" in imex and not _is_bool(imex["required"]):
            raise PluginConfigError("imex.required", f"must be a boolean, got {imex['required']!r}")
    return {"version": version, "flags": dict(flags), "strategy": strategy}


def check_config_file(text: str) -> dict[str, Any]:
    """Parse a config file's text as the plugin does (YAML or JSON) and check it."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PluginConfigError("", f"unmarshal error: {error}") from None
    return check_config(document if document is not None else {})
