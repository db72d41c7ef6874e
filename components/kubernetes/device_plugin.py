"""The NVIDIA device plugin DaemonSet, scheduled onto exactly the GPU pools it serves.

Upstream's static manifest (NVIDIA/k8s-device-plugin ``deployments/static/nvidia-device-plugin.yml``)
is the base: image ``nvcr.io/nvidia/k8s-device-plugin``, container ``nvidia-device-plugin-ctr``,
``system-node-critical``, RollingUpdate, ``allowPrivilegeEscalation: false`` with every capability
dropped, the kubelet's ``/var/lib/kubelet/device-plugins`` hostPath, and ``FAIL_ON_INIT_ERROR`` left
at its default (true: a plugin that cannot load NVML crash-loops visibly instead of silently
advertising nothing). What changes, and why:

* Tolerations come from the pools served: every taint of every served pool (the GPU taint, the
  pool's extra taints and, on AKS Spot pools, the Spot taint AKS adds), each as an exact ``Equal``
  toleration. Upstream tolerates only ``nvidia.com/gpu``, so on an AKS Spot pool the plugin never
  lands, no GPU is advertised, pods stay Pending and the autoscaler keeps buying nodes. Nothing
  here tolerates everything.
* A required node affinity keeps it on the served pools' GPU nodes (``gpupools.io/role=gpu``,
  ``gpupools.io/pool`` in the served pools, ``nvidia.com/gpu.present=true``): never on the system
  pool or a CPU pool, where it would crash-loop, and never on a Bottlerocket pool, whose image
  ships its own plugin (two plugins would both register ``nvidia.com/gpu``).
* Its own ServiceAccount without a token (the plugin talks only to the kubelet's socket, never to
  the API server), ``app.kubernetes.io/*`` labels, ``maxUnavailable: 1`` stated, seccomp
  ``RuntimeDefault``, and small requests with a memory limit.
"""

from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components import rules
from components.conventions import GPU_PRESENT_LABEL, POOL_LABEL, ROLE_LABEL, Role
from components.errors import ConfigError
from components.kubernetes.hardening import locked_down_security_context
from components.kubernetes.scan_skips import skip_annotations
from components.pools import NodePoolInfo
from components.scheduling import required_node_affinity, requirement, tolerations
from components.specs import DevicePluginSpec
from components.versions import DEFAULT_DEVICE_PLUGIN_VERSION, DEVICE_PLUGIN_IMAGE

TYPE = "gpupools:index:NvidiaDevicePlugin"

NAME = "nvidia-device-plugin"
"""``metadata.name`` of the DaemonSet and its ServiceAccount (and ``app.kubernetes.io/name``)."""

CONTAINER_NAME = "nvidia-device-plugin-ctr"
"""Upstream's container name, kept so NVIDIA's troubleshooting commands work as written."""

DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
"""Where the kubelet's device-plugin socket lives; the plugin registers its own socket there."""

VOLUME_NAME = "kubelet-device-plugins-dir"
"""Upstream's name for the hostPath volume."""

PRIORITY_CLASS = "system-node-critical"
"""Upstream's choice: without the plugin a GPU node is useless, so it must not be evicted or
preempted before the workloads it serves."""

RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
"""Small requests so it always fits beside the workloads, and a memory limit as a guard. No CPU
limit: throttling a node-critical agent buys nothing. Upstream sets none; these are a judgement
call, not measured."""

MAX_UNAVAILABLE = 1
"""Roll one node at a time (the Kubernetes default, stated so a reader does not have to know it)."""


SCAN_SKIPS: dict[str, str] = {
    "CKV_K8S_8": "no endpoint to probe: the plugin serves only the kubelet's device-plugin socket (upstream ships no probes)",
    "CKV_K8S_9": "no endpoint to probe: the plugin serves only the kubelet's device-plugin socket (upstream ships no probes)",
    "CKV_K8S_11": "no CPU limit on purpose: throttling a node-critical agent buys nothing; CPU is requested, memory limited",
    "CKV_K8S_15": "pinned to a release tag; Always would make every GPU node's plugin start depend on the registry",
    "CKV_K8S_22": "upstream sets no read-only root and it is untested here; a plugin that crash-loops hides every GPU",
    "CKV_K8S_23": "runs as root: it creates its socket in the kubelet's root-owned device-plugins directory (image USER 0)",
    "CKV_K8S_40": "runs as root: it creates its socket in the kubelet's root-owned device-plugins directory (image USER 0)",
    "CKV_K8S_43": "pinned by release tag in components.versions, the project's image pinning policy",
    "CKV2_K8S_6": "node-local agent with no listener and no API access (token not mounted): a NetworkPolicy guards nothing",
}
"""Checkov findings accepted on the DaemonSet, each with its reason; emitted as
``checkov.io/skip<N>`` annotations (``components.kubernetes.scan_skips``) and read by
``scripts/scan-manifests``. Everything else Checkov checks is fixed in the object."""


def is_served(pool: NodePoolInfo) -> bool:
    """True for a GPU pool whose nodes need this plugin (Bottlerocket pools ship their own)."""
    return pool.role is Role.GPU and pool.needs_device_plugin


def served_pools(pools: Sequence[NodePoolInfo]) -> tuple[NodePoolInfo, ...]:
    """The pools, in order, that ``is_served``."""
    return tuple(p for p in pools if is_served(p))


def plugin_tolerations(pools: Sequence[NodePoolInfo]) -> list[dict[str, str]]:
    """One exact toleration per distinct taint across ``pools``, sorted."""
    return tolerations([taint for pool in pools for taint in pool.taints])


def plugin_affinity(pools: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """The required node affinity: GPU role, one of the served pools, NVIDIA GPU present."""
    names = sorted({pool.pool for pool in pools})
    term = [
        requirement(ROLE_LABEL, "In", [Role.GPU.value]),
        requirement(POOL_LABEL, "In", names),
        requirement(GPU_PRESENT_LABEL, "In", ["true"]),
    ]
    return {"nodeAffinity": required_node_affinity(term)}


def validate(name: str, pools: Sequence[NodePoolInfo], version: str) -> tuple[NodePoolInfo, ...]:
    """Check the arguments; return the served pools. Raises ConfigError naming the argument."""
    path = f"NvidiaDevicePlugin({name})"
    served = served_pools(pools)
    if not served:
        raise ConfigError(
            f"{path}.pools",
            "must include at least one GPU pool that needs the device plugin",
            [p.name for p in pools],
            "system pools and Bottlerocket pools, which ship their own plugin, are not served",
        )
    rules.check_device_plugin(DevicePluginSpec(version=version), path)
    served_names = {p.pool for p in served}
    for index, pool in enumerate(pools):
        if pool.role is Role.GPU and not pool.needs_device_plugin and pool.pool in served_names:
            raise ConfigError(
                f"{path}.pools[{index}].pool",
                "a pool whose image ships its own device plugin must not share its pool name with a served pool "
                "(the affinity selects by pool name, and two plugins would register nvidia.com/gpu)",
                pool.pool,
            )
    for index, pool in enumerate(pools):
        if not is_served(pool):
            continue
        expected = {ROLE_LABEL: Role.GPU.value, POOL_LABEL: pool.pool, GPU_PRESENT_LABEL: "true"}
        for key, value in expected.items():
            if pool.labels.get(key) != value:
                raise ConfigError(
                    f"{path}.pools[{index}].labels.{key}",
                    f"must be {value!r} on a served GPU pool, or the plugin never lands there",
                    pool.labels.get(key),
                )
    return served


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The NVIDIA device plugin DaemonSet (and its ServiceAccount) for a set of GPU pools.

    Pass every pool of the cluster: the system pool and pools that ship their own plugin
    (``needs_device_plugin=False``, Bottlerocket) are left out automatically. Give the cluster's
    Kubernetes provider through ``opts``; the children inherit it::

        NvidiaDevicePlugin("gpu", pools, opts=pulumi.ResourceOptions(provider=k8s_provider))

    Args:
        name: the component's name; also ``app.kubernetes.io/instance``.
        pools: the cluster's pools; those with role GPU and ``needs_device_plugin`` are served.
        version: the image tag of ``nvcr.io/nvidia/k8s-device-plugin``; default
            ``DEFAULT_DEVICE_PLUGIN_VERSION`` (a pin, bumped deliberately).
        namespace: where the DaemonSet runs; default ``kube-system``, where
            ``system-node-critical`` is always admitted (some managed offerings restrict that
            priority class elsewhere with a ResourceQuota).
        opts: resource options; ``provider`` (or ``providers``) should be the cluster's.

    Attributes:
        served_pools: the pools the plugin runs on.
        tolerations: the DaemonSet's tolerations (one per distinct taint of the served pools).
        affinity: the DaemonSet's affinity (required node affinity on the served GPU pools).
        image: the container image.
        service_account, daemon_set: the child resources.

    Raises:
        ConfigError: no pool to serve, a version that is not a release tag, a Bottlerocket pool
            sharing a served pool's name, or a served pool missing a label the affinity selects on.
            Raised before anything is registered.
    """

    served_pools: tuple[NodePoolInfo, ...]
    tolerations: list[dict[str, str]]
    affinity: dict[str, Any]
    image: str
    service_account: k8s.core.v1.ServiceAccount
    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(
        self,
        name: str,
        pools: Sequence[NodePoolInfo],
        version: str = DEFAULT_DEVICE_PLUGIN_VERSION,
        namespace: str = "kube-system",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        served = validate(name, pools, version)
        super().__init__(TYPE, name, None, opts)

        self.served_pools = served
        self.tolerations = plugin_tolerations(served)
        self.affinity = plugin_affinity(served)
        self.image = f"{DEVICE_PLUGIN_IMAGE}:{version}"

        selector = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": name}
        labels = {**selector, "app.kubernetes.io/version": version, "app.kubernetes.io/managed-by": "pulumi"}

        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount",
            metadata={"name": NAME, "namespace": namespace, "labels": labels},
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata={"name": NAME, "namespace": namespace, "labels": labels, "annotations": skip_annotations(SCAN_SKIPS)},
            spec={
                "selector": {"matchLabels": selector},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": MAX_UNAVAILABLE}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        "automountServiceAccountToken": False,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "priorityClassName": PRIORITY_CLASS,
                        "tolerations": self.tolerations,
                        "affinity": self.affinity,
                        "containers": [
                            {
                                "name": CONTAINER_NAME,
                                "image": self.image,
                                "imagePullPolicy": "IfNotPresent",
                                "securityContext": locked_down_security_context(),
                                "resources": RESOURCES,
                                "volumeMounts": [{"name": VOLUME_NAME, "mountPath": DEVICE_PLUGIN_DIR}],
                            }
                        ],
                        "volumes": [
                            {"name": VOLUME_NAME, "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"}},
                        ],
                    },
                },
            },
            # The selector is immutable and the name fixed: a selector change replaces the
            # DaemonSet, and the old one has to go first.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.service_account], delete_before_replace=True),
        )
        self.register_outputs(
            {
                "image": self.image,
                "servedPools": sorted(p.name for p in served),
                "tolerations": self.tolerations,
            }
        )
