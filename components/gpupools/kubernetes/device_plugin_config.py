"""The NVIDIA device plugin's config files for shared GPU pools, and how the plugin picks one per node.

Used by ``NvidiaDevicePlugin`` when at least one pool it serves has ``sharing``; without sharing the
plugin runs exactly as before, with no ConfigMap and no API access.

The mechanism is upstream's (NVIDIA/k8s-device-plugin v0.20.0, the Helm chart's
``templates/daemonset-device-plugin.yml`` and ``cmd/config-manager/main.go``):

* one ConfigMap (``CONFIG_MAP_NAME``) holding named configs in the plugin's ``version: v1`` format
  (``api/config/v1``): ``default`` for unshared pools, and one per distinct sharing setting
  (``time-slicing-4``, ``mps-4``, ``mig-single``; names from ``gpupools.sharing.config_name``);
* an init container running ``config-manager`` once: it reads the node's
  ``nvidia.com/device-plugin.config`` label and links ``/config/config.yaml`` to the file of that
  name (``DEFAULT_CONFIG`` when the label is absent), so the plugin starts with the right config;
* a ``config-manager`` sidecar that keeps watching the label and, when it changes, relinks the file
  and sends SIGHUP to ``nvidia-device-plugin`` (the plugin restarts its servers on SIGHUP,
  ``cmd/nvidia-device-plugin/main.go``). It finds that process by its first command-line word, so
  the pod shares one process namespace and the plugin is started as ``nvidia-device-plugin``;
* the plugin started with ``CONFIG_FILE=/config/config.yaml``. No flag is passed as an environment
  variable: those override the file (README "CONFIG_FILE": command line, then environment, then
  file), and the MIG strategy must come from each node's config.

Why one DaemonSet that selects per node, rather than one DaemonSet per config: node affinity is
"IgnoredDuringExecution", so relabelling a pool's nodes would start a second plugin beside the old
one (two plugins registering ``nvidia.com/gpu``); the config-manager switches the one plugin in place.

API access, and only where needed: the config-manager reads its own Node object (ClusterRole
``nodes: get, list, watch``, the chart's ``templates/role.yml``). The pod does not automount a
token; the config-manager containers alone mount a projected token, the same three sources the
ServiceAccount admission controller would add to every container (token, ``kube-root-ca.crt``,
namespace; Kubernetes "Managing Service Accounts", bound service account token volume), so the
plugin container itself still holds no credential.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpupools import sharing
from gpupools.conventions import DEVICE_PLUGIN_CONFIG_LABEL, GPU_RESOURCE
from gpupools.kubernetes.hardening import locked_down_security_context
from gpupools.pools import NodePoolInfo
from gpupools.specs import SharingMode, SharingSpec

CONFIG_VERSION = "v1"
"""``api/config/v1/config.go``: ``Version``; a file with another version is rejected ("unknown version")."""

DEFAULT_CONFIG = "default"
"""The config of nodes without the label (unshared pools): the plugin's defaults, stated."""

CONFIG_MAP_NAME = "nvidia-device-plugin-configs"
"""The ConfigMap of named configs (the chart's ``<fullname>-configs``)."""

CONFIG_SOURCE_DIR = "/available-configs"
CONFIG_FILE = "/config/config.yaml"
"""Where the ConfigMap is mounted and where the config-manager links the selected file (the chart's paths)."""

MPS_ROOT = "/run/nvidia/mps"
"""Host directory for MPS pipes, logs and the MPS ``/dev/shm`` (the chart's ``mps.root``). Set as
``flags.mpsRoot`` in MPS configs: the plugin refuses MPS without it (``main.go``, ``validateFlags``:
"using MPS requires --mps-root to be specified")."""

PLUGIN_PROCESS = "nvidia-device-plugin"
"""The plugin's command and the process the sidecar signals (``PROCESS_TO_SIGNAL``): the
config-manager matches it against each process's first command-line word (``findPidToSignal``)."""

SIGHUP = "1"

AVAILABLE_CONFIGS_VOLUME = "available-configs"
CONFIG_VOLUME = "config"
API_ACCESS_VOLUME = "kube-api-access"
API_ACCESS_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where client-go's in-cluster config reads the token and CA (``rest.InClusterConfig``)."""

TOKEN_EXPIRATION_SECONDS = 3607
"""The lifetime the ServiceAccount admission controller requests for its own projected tokens; the
kubelet rotates the file before it expires and client-go rereads it."""

CONFIG_MANAGER_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}
"""The config-manager watches one Node object and sleeps: small requests, a memory limit as a guard.
Upstream sets none; a judgement call, not measured."""

ROLE_NAME = "nvidia-device-plugin-config-manager"
"""The ClusterRole and ClusterRoleBinding (cluster-scoped, fixed like the DaemonSet's name)."""


def _flags(sharing_spec: SharingSpec) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "migStrategy": sharing.MIG_STRATEGY if sharing_spec.mode is SharingMode.MIG else "none",
        "failOnInitError": True,
    }
    if sharing_spec.mode is SharingMode.MPS:
        flags["mpsRoot"] = MPS_ROOT
    return flags


def render_config(sharing_spec: SharingSpec) -> dict[str, Any]:
    """The ``version: v1`` config for one sharing setting (``SharingSpec()`` gives the default config).

    * every config: ``flags.migStrategy`` (``none``, or ``single`` for MIG) and
      ``flags.failOnInitError: true`` (the plugin's default, stated so a config can never turn it off);
    * time-slicing and MPS: ``sharing.<mode>`` with ``renameByDefault: false`` (pods keep requesting
      ``nvidia.com/gpu``), ``failRequestsGreaterThanOne: true`` (a pod asking for 2 slices would get
      two time shares of possibly one GPU, not two GPUs; NVIDIA recommends failing such requests)
      and one resource, ``nvidia.com/gpu`` with ``replicas``; MPS also sets ``flags.mpsRoot``.
    """
    config: dict[str, Any] = {"version": CONFIG_VERSION, "flags": _flags(sharing_spec)}
    if sharing_spec.mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
        config["sharing"] = {
            sharing_spec.mode.value: {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": sharing_spec.replicas}],
            }
        }
    return config


def plugin_configs(pools: Sequence[NodePoolInfo]) -> dict[str, dict[str, Any]]:
    """Config name -> config for ``pools``: ``default`` first, then each distinct shared setting, sorted."""
    shared: dict[str, dict[str, Any]] = {}
    for pool in pools:
        name = sharing.config_name(pool.sharing)
        if name is not None:
            shared.setdefault(name, render_config(pool.sharing))
    return {DEFAULT_CONFIG: render_config(SharingSpec()), **dict(sorted(shared.items()))}


def render_data(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The ConfigMap's ``data``: each config as YAML, keys in the order given."""
    return {name: yaml.safe_dump(dict(config), default_flow_style=False, sort_keys=False) for name, config in configs.items()}


def checksum(data: Mapping[str, str]) -> str:
    """SHA-256 of the ConfigMap data: the pod template's ``checksum/config`` annotation, so a changed
    config rolls the pods (the config-manager reacts to label changes, not to file contents)."""
    return hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()


def needs_configs(pools: Sequence[NodePoolInfo]) -> bool:
    """True when any pool shares its GPUs: only then does the plugin get configs and API access."""
    return any(p.sharing.shared for p in pools)


def uses_mode(pools: Sequence[NodePoolInfo], mode: SharingMode) -> bool:
    return any(p.sharing.mode is mode for p in pools)


def config_manager_container(name: str, image: str, *, oneshot: bool, process_to_signal: str) -> dict[str, Any]:
    """A ``config-manager`` container: ``oneshot`` for the init container (link the file, no signal),
    else the sidecar that watches the label and signals ``process_to_signal`` with SIGHUP."""
    env = [
        {"name": "ONESHOT", "value": "true" if oneshot else "false"},
        {"name": "KUBECONFIG", "value": ""},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "NODE_LABEL", "value": DEVICE_PLUGIN_CONFIG_LABEL},
        {"name": "CONFIG_FILE_SRCDIR", "value": CONFIG_SOURCE_DIR},
        {"name": "CONFIG_FILE_DST", "value": CONFIG_FILE},
        {"name": "DEFAULT_CONFIG", "value": DEFAULT_CONFIG},
        {"name": "FALLBACK_STRATEGIES", "value": "named"},
        {"name": "SEND_SIGNAL", "value": "false" if oneshot else "true"},
        {"name": "SIGNAL", "value": "" if oneshot else SIGHUP},
        {"name": "PROCESS_TO_SIGNAL", "value": "" if oneshot else process_to_signal},
    ]
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["config-manager"],
        "env": env,
        "securityContext": locked_down_security_context(),
        "resources": CONFIG_MANAGER_RESOURCES,
        "volumeMounts": [*config_mounts(), {"name": API_ACCESS_VOLUME, "mountPath": API_ACCESS_DIR, "readOnly": True}],
    }


def config_mounts() -> list[dict[str, Any]]:
    """The ConfigMap (read-only) and the directory holding the selected config's link."""
    return [
        {"name": AVAILABLE_CONFIGS_VOLUME, "mountPath": CONFIG_SOURCE_DIR, "readOnly": True},
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_FILE.rsplit("/", 1)[0]},
    ]


def config_volumes() -> list[dict[str, Any]]:
    """The ConfigMap, the link directory and the config-manager's projected API credentials."""
    return [
        {"name": AVAILABLE_CONFIGS_VOLUME, "configMap": {"name": CONFIG_MAP_NAME}},
        {"name": CONFIG_VOLUME, "emptyDir": {}},
        {
            "name": API_ACCESS_VOLUME,
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRATION_SECONDS}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {
                        "downwardAPI": {
                            "items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]
                        }
                    },
                ]
            },
        },
    ]


def create_config_map(
    resource_name: str, namespace: str, labels: Mapping[str, str], data: Mapping[str, str], parent: pulumi.Resource
) -> k8s.core.v1.ConfigMap:
    return k8s.core.v1.ConfigMap(
        resource_name,
        metadata={"name": CONFIG_MAP_NAME, "namespace": namespace, "labels": dict(labels)},
        data=dict(data),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def create_node_reader(
    resource_name: str, service_account: str, namespace: str, labels: Mapping[str, str], parent: pulumi.Resource
) -> tuple[k8s.rbac.v1.ClusterRole, k8s.rbac.v1.ClusterRoleBinding]:
    """``nodes: get, list, watch`` for the config-manager (it lists and watches its own Node by name;
    RBAC cannot narrow a DaemonSet's list to "its own node", so this is the chart's rule)."""
    role = k8s.rbac.v1.ClusterRole(
        f"{resource_name}-clusterrole",
        metadata={"name": ROLE_NAME, "labels": dict(labels)},
        rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
        opts=pulumi.ResourceOptions(parent=parent),
    )
    binding = k8s.rbac.v1.ClusterRoleBinding(
        f"{resource_name}-clusterrolebinding",
        metadata={"name": ROLE_NAME, "labels": dict(labels)},
        role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE_NAME},
        subjects=[{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[role]),
    )
    return role, binding
