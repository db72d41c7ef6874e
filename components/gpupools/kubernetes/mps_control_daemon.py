"""The MPS control daemon DaemonSet that MPS-shared pools need beside the device plugin.

With ``sharing.mps`` the device plugin only hands out replicas; the CUDA MPS server that actually
partitions each GPU's memory and compute runs in this DaemonSet (NVIDIA/k8s-device-plugin v0.20.0,
the chart's ``templates/daemonset-mps-control-daemon.yml``; ``cmd/mps-control-daemon``). The plugin
checks the daemon is healthy before it serves (``internal/plugin/mps.go``, ``waitForDaemon``) and
mounts its pipe and ``/dev/shm`` directories into every MPS workload, so a pool with MPS and no
daemon advertises nothing usable.

Taken from upstream as is, because the daemon needs it: an init container that mounts a tmpfs at
``<mps root>/shm`` with ``Bidirectional`` propagation (``mps-control-daemon mount-shm``) and the
daemon itself, both ``privileged`` (the chart runs both so; the daemon sets each GPU's compute mode
to ``EXCLUSIVE_PROCESS`` with ``nvidia-smi``, ``mps/daemon.go`` ``setComputeMode``), the host's ``/run/nvidia/mps`` at ``/mps``, and the same ``config-manager`` init/sidecar
pair as the plugin, so the daemon reads the same per-node config (its replicas).

What differs: it runs only on the MPS pools (required affinity on their pool names *and* on their
``nvidia.com/device-plugin.config`` values, where upstream selects on a GPU feature discovery label
gpupools does not deploy), with its own selector labels (upstream reuses the plugin's), the same
tolerations as the plugin for those pools, and ``PROCESS_TO_SIGNAL`` equal to the daemon's command
word (the chart signals ``/usr/bin/mps-control-daemon`` while starting ``mps-control-daemon``, and the
config-manager compares the first command-line word exactly, ``findPidToSignal``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools import sharing
from gpupools.conventions import DEVICE_PLUGIN_CONFIG_LABEL, GPU_PRESENT_LABEL, POOL_LABEL, ROLE_LABEL, Role
from gpupools.kubernetes import device_plugin_config as configs
from gpupools.kubernetes.scan_skips import skip_annotations
from gpupools.pools import NodePoolInfo
from gpupools.scheduling import required_node_affinity, requirement, tolerations
from gpupools.specs import SharingMode

NAME = "nvidia-device-plugin-mps-control-daemon"
"""``metadata.name`` of the DaemonSet and its ``app.kubernetes.io/name``."""

CONTAINER_NAME = "mps-control-daemon-ctr"
PROCESS = "mps-control-daemon"
"""The daemon's command, and the process its config-manager sidecar signals."""

MPS_ROOT_VOLUME = "mps-root"
MPS_SHM_VOLUME = "mps-shm"
CONTAINER_MPS_ROOT = "/mps"
"""Where the daemon (and the plugin) see the host's MPS root (``mps.ContainerRoot``)."""

RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
"""Like the plugin's: the MPS servers it starts are host processes of the GPU driver, not this
container's memory. A judgement call, not measured."""

SCAN_SKIPS: dict[str, str] = {
    "CKV_K8S_8": "no endpoint to probe: the daemon talks to the GPU driver and a local pipe (upstream ships no probes)",
    "CKV_K8S_9": "no endpoint to probe: the daemon talks to the GPU driver and a local pipe (upstream ships no probes)",
    "CKV_K8S_11": "no CPU limit on purpose: throttling a node-critical agent buys nothing; CPU is requested, memory limited",
    "CKV_K8S_15": "pinned to a release tag; Always would make every MPS node's daemon start depend on the registry",
    "CKV_K8S_16": "privileged as upstream runs it: it mounts the MPS shm tmpfs into the host and runs the CUDA MPS server",
    "CKV_K8S_20": "privileged as upstream runs it: it mounts the MPS shm tmpfs into the host and runs the CUDA MPS server",
    "CKV_K8S_22": "upstream sets no read-only root and it is untested here",
    "CKV_K8S_23": "runs as root: it mounts into the host and runs the CUDA MPS server (image USER 0)",
    "CKV_K8S_28": "privileged as upstream runs it; capabilities cannot be narrowed on a privileged container",
    "CKV_K8S_37": "privileged as upstream runs it; capabilities cannot be narrowed on a privileged container",
    "CKV_K8S_40": "runs as root: it mounts into the host and runs the CUDA MPS server (image USER 0)",
    "CKV_K8S_43": "pinned by release tag in gpupools.versions, the project's image pinning policy",
    "CKV2_K8S_6": "node-local agent with no listener; only its config-manager calls the API server: a NetworkPolicy guards nothing",
}
"""Checkov findings accepted on the MPS DaemonSet, each with its reason (see ``scan_skips``)."""


def mps_pools(pools: Sequence[NodePoolInfo]) -> tuple[NodePoolInfo, ...]:
    """The pools, in order, whose sharing mode is MPS."""
    return tuple(p for p in pools if p.sharing.mode is SharingMode.MPS)


def mps_affinity(pools: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """Required: a GPU node of one of ``pools`` running one of their MPS configs."""
    names = sorted({p.pool for p in pools})
    config_names = sorted({str(sharing.config_name(p.sharing)) for p in pools})
    term = [
        requirement(ROLE_LABEL, "In", [Role.GPU.value]),
        requirement(POOL_LABEL, "In", names),
        requirement(GPU_PRESENT_LABEL, "In", ["true"]),
        requirement(DEVICE_PLUGIN_CONFIG_LABEL, "In", config_names),
    ]
    return {"nodeAffinity": required_node_affinity(term)}


def mps_volumes() -> list[dict[str, Any]]:
    """The host's MPS root and its shm directory (the chart's ``mps-root`` and ``mps-shm``)."""
    return [
        {"name": MPS_ROOT_VOLUME, "hostPath": {"path": configs.MPS_ROOT, "type": "DirectoryOrCreate"}},
        {"name": MPS_SHM_VOLUME, "hostPath": {"path": f"{configs.MPS_ROOT}/shm"}},
    ]


def mps_mounts() -> list[dict[str, Any]]:
    """The MPS shm as ``/dev/shm`` (the plugin checks the daemon's health through it) and the root at ``/mps``."""
    return [
        {"name": MPS_SHM_VOLUME, "mountPath": "/dev/shm"},
        {"name": MPS_ROOT_VOLUME, "mountPath": CONTAINER_MPS_ROOT},
    ]


def create_mps_control_daemon(
    resource_name: str,
    *,
    instance: str,
    pools: Sequence[NodePoolInfo],
    namespace: str,
    image: str,
    version: str,
    service_account: str,
    priority_class: str,
    max_unavailable: int,
    config_checksum: str,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.apps.v1.DaemonSet:
    """The MPS control daemon on ``pools`` (the MPS pools among those the plugin serves)."""
    selector = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": instance}
    labels: Mapping[str, str] = {**selector, "app.kubernetes.io/version": version, "app.kubernetes.io/managed-by": "pulumi"}
    privileged = {"privileged": True}
    daemon = {
        "name": CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [PROCESS],
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
            {"name": "CONFIG_FILE", "value": configs.CONFIG_FILE},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
        ],
        "securityContext": privileged,
        "resources": RESOURCES,
        "volumeMounts": [*mps_mounts(), *configs.config_mounts()],
    }
    mount_shm = {
        "name": "mps-control-daemon-mounts",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [PROCESS, "mount-shm"],
        "securityContext": privileged,
        "resources": RESOURCES,
        "volumeMounts": [{"name": MPS_ROOT_VOLUME, "mountPath": CONTAINER_MPS_ROOT, "mountPropagation": "Bidirectional"}],
    }
    return k8s.apps.v1.DaemonSet(
        resource_name,
        metadata={"name": NAME, "namespace": namespace, "labels": dict(labels), "annotations": skip_annotations(SCAN_SKIPS)},
        spec={
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}},
            "template": {
                "metadata": {"labels": dict(labels), "annotations": {"checksum/config": config_checksum}},
                "spec": {
                    "serviceAccountName": service_account,
                    "automountServiceAccountToken": False,
                    # Applies to the config-manager containers; privileged containers run unconfined.
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "shareProcessNamespace": True,
                    "priorityClassName": priority_class,
                    "tolerations": tolerations([taint for pool in pools for taint in pool.taints]),
                    "affinity": mps_affinity(pools),
                    "initContainers": [
                        mount_shm,
                        configs.config_manager_container(
                            "mps-control-daemon-init", image, oneshot=True, process_to_signal=PROCESS
                        ),
                    ],
                    "containers": [
                        daemon,
                        configs.config_manager_container(
                            "mps-control-daemon-sidecar", image, oneshot=False, process_to_signal=PROCESS
                        ),
                    ],
                    "volumes": [*mps_volumes(), *configs.config_volumes()],
                },
            },
        },
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on), delete_before_replace=True),
    )
