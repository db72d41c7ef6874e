"""The NVIDIA device plugin DaemonSet, scheduled onto exactly the GPU pools it serves.

Upstream's static manifest (NVIDIA/k8s-device-plugin ``deployments/static/nvidia-device-plugin.yml``)
is the base: image ``nvcr.io/nvidia/k8s-device-plugin``, container ``nvidia-device-plugin-ctr``,
``system-node-critical``, RollingUpdate, ``allowPrivilegeEscalation: false`` with every capability
dropped, the kubelet's ``/var/lib/kubelet/device-plugins`` hostPath, and ``FAIL_ON_INIT_ERROR`` left
at its default (true: a plugin that cannot load NVML crash-loops visibly instead of silently
advertising nothing). What changes, and why:

* Its pod template does not depend on which pools exist, so adding or removing a GPU pool never
  restarts the plugin on every GPU node (a rolling restart that, with ``maxUnavailable: 1``, walks
  every node while GPUs briefly disappear from the kubelet). Two choices make that true:

  - **Placement by label**: a required node affinity on ``gpupools.io/role=gpu``,
    ``nvidia.com/gpu.present=true`` and ``gpupools.io/device-plugin NotIn [external]``. Every GPU
    pool carries the first two; the pools whose nodes get their plugin elsewhere carry the third
    (``conventions.DEVICE_PLUGIN_LABEL``): Bottlerocket pools, whose image ships its own (two plugins
    would both register ``nvidia.com/gpu``), and ``gpuDriver: none`` or ``managed`` pools (the
    user's GPU Operator, or AKS). So it never runs on the system pool or a CPU pool, where it would
    crash-loop, nor where another plugin runs, and no pool name appears in the template. Which
    pools are served is decided once, by ``is_served`` (the same rule as the label's).
  - **Tolerations** (``GPU_NODE_TOLERATIONS``): one ``operator: Exists`` toleration with no key,
    which tolerates every taint. The rule this keeps is the design's: the plugin tolerates every
    taint of every GPU pool it serves (the GPU taint, the pool's extra taints and, on AKS Spot
    pools, the Spot taint AKS adds). A list of the served pools' taints, each as an exact
    toleration, made the template change whenever a pool with a new taint was added, and a plugin
    that misses one taint never lands: pods stay Pending and the autoscaler keeps buying nodes (the
    most common silent failure of GPU pools; upstream tolerates only ``nvidia.com/gpu``). Tolerating
    by key (``Exists`` per key) would still change with a pool whose extra taint has a new key. The
    affinity above is what keeps the plugin off every node that is not a served GPU node, so the
    broad toleration only matters on nodes that need the plugin, and node agents that must run on
    every selected node tolerate this way (a DaemonSet's pods already tolerate the node-lifecycle
    taints, ``kubernetes/kubernetes`` ``pkg/controller/daemon/util``, ``AddOrUpdateDaemonPodTolerations``).
* Its own ServiceAccount without a token (the plugin talks only to the kubelet's socket, never to
  the API server), ``app.kubernetes.io/*`` labels, ``maxUnavailable: 1`` stated, seccomp
  ``RuntimeDefault``, and small requests with a memory limit.

GPU sharing (pools with ``sharing``; ``gpupools.kubernetes.device_plugin_config``): the plugin then
runs upstream's per-node config selection: a ConfigMap of named ``version: v1`` configs (``default``
plus one per sharing setting), a ``config-manager`` init container and sidecar that pick the config
named by the node's ``nvidia.com/device-plugin.config`` label, ``CONFIG_FILE`` pointing at it. Only
the config-manager containers get API credentials (a projected token; ClusterRole ``nodes: get,
list, watch``). With a MIG pool the plugin also gets ``NVIDIA_MIG_MONITOR_DEVICES=all`` and
``CAP_SYS_ADMIN`` (the chart's ``requiresCapSysAdmin`` whenever a MIG strategy other than ``none`` is
possible; the container toolkit exposes the MIG monitor capability only then, and the AKS MIG guide
requires the variable); with an MPS pool, the MPS directories and the MPS control daemon
(``gpupools.kubernetes.mps_control_daemon``). Without sharing nothing of this exists.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools import rules, sharing
from gpupools.conventions import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_LABEL,
    EXTERNAL_DEVICE_PLUGIN,
    GPU_PRESENT_LABEL,
    POOL_LABEL,
    ROLE_LABEL,
    Role,
)
from gpupools.errors import ConfigError
from gpupools.kubernetes import device_plugin_config as configs
from gpupools.kubernetes import mps_control_daemon as mps
from gpupools.kubernetes.access_gate import CLUSTER_ROLE, CLUSTER_ROLE_BINDING, CONFIG_MAP, DAEMON_SET, SERVICE_ACCOUNT
from gpupools.kubernetes.hardening import locked_down_security_context
from gpupools.kubernetes.scan_skips import skip_annotations
from gpupools.pools import NodePoolInfo
from gpupools.scheduling import required_node_affinity, requirement, tolerations
from gpupools.specs import DevicePluginSpec, GpuDriver, SharingMode
from gpupools.versions import DEFAULT_DEVICE_PLUGIN_VERSION, DEVICE_PLUGIN_IMAGE

TYPE = "gpupools:index:NvidiaDevicePlugin"

KINDS = (SERVICE_ACCOUNT, DAEMON_SET, CONFIG_MAP, CLUSTER_ROLE, CLUSTER_ROLE_BINDING)
"""What it creates (``KubernetesAccessGate`` checks them): always the ServiceAccount and DaemonSet; with
sharing the ConfigMap of configs, the config-manager's ClusterRole and ClusterRoleBinding and, with
MPS, the control daemon's DaemonSet."""

UNSHARED_KINDS = (SERVICE_ACCOUNT, DAEMON_SET)
"""What it creates when no pool it serves is shared (AKS Node Auto Provisioning refuses sharing)."""

NAMESPACE = "kube-system"
"""Where its namespaced objects go by default."""

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
    "CKV_K8S_43": "pinned by release tag in gpupools.versions, the project's image pinning policy",
    "CKV2_K8S_6": "node-local agent with no listener; only the config-manager of shared pools calls the API server: "
    "a NetworkPolicy guards nothing",
}
"""Checkov findings accepted on the DaemonSet, each with its reason; emitted as
``checkov.io/skip<N>`` annotations (``gpupools.kubernetes.scan_skips``) and read by
``scripts/scan-manifests``. Everything else Checkov checks is fixed in the object."""

MIG_SCAN_SKIPS: dict[str, str] = {
    "CKV_K8S_25": "CAP_SYS_ADMIN only while a MIG pool is served: the MIG monitor capability needs it (upstream chart)",
    "CKV_K8S_39": "CAP_SYS_ADMIN only while a MIG pool is served: the MIG monitor capability needs it (upstream chart)",
}
"""Added to ``SCAN_SKIPS`` while a MIG pool is served."""

MIG_CAPABILITY = "SYS_ADMIN"
"""Added to the plugin container while a MIG pool is served (the chart's ``requiresCapSysAdmin``)."""


def is_served(pool: NodePoolInfo) -> bool:
    """True for a GPU pool whose nodes need gpupools' plugin: not a Bottlerocket pool (its image ships
    its own, ``needs_device_plugin`` False) and not a ``gpuDriver: none`` or ``managed`` pool (the
    user's GPU Operator, or AKS, runs one there). Everything that serves the same nodes (the DCGM
    exporter, the smoke test's plugin dependency) asks this function."""
    return pool.role is Role.GPU and pool.needs_device_plugin and pool.gpu_driver is GpuDriver.INSTALL


def served_pools(pools: Sequence[NodePoolInfo]) -> tuple[NodePoolInfo, ...]:
    """The pools, in order, that ``is_served``."""
    return tuple(p for p in pools if is_served(p))


GPU_NODE_TOLERATIONS: tuple[dict[str, str], ...] = ({"operator": "Exists"},)
"""The plugin's tolerations: every taint (module docstring)."""


def plugin_tolerations(pools: Sequence[NodePoolInfo] = ()) -> list[dict[str, str]]:
    """The plugin DaemonSet's tolerations: ``GPU_NODE_TOLERATIONS``, whatever the pools (module
    docstring); ``pools`` is accepted so callers need not know that."""
    return [dict(t) for t in GPU_NODE_TOLERATIONS]


def plugin_affinity(pools: Sequence[NodePoolInfo] = ()) -> dict[str, Any]:
    """The plugin DaemonSet's required node affinity: a GPU node (role and NVIDIA presence labels)
    whose pool does not bring its own plugin (``gpupools.io/device-plugin`` not ``external``), the
    same whatever the pools (module docstring)."""
    term = [
        requirement(ROLE_LABEL, "In", [Role.GPU.value]),
        requirement(GPU_PRESENT_LABEL, "In", ["true"]),
        requirement(DEVICE_PLUGIN_LABEL, "NotIn", [EXTERNAL_DEVICE_PLUGIN]),
    ]
    return {"nodeAffinity": required_node_affinity(term)}


def pool_tolerations(pools: Sequence[NodePoolInfo]) -> list[dict[str, str]]:
    """One exact toleration per distinct taint across ``pools``, sorted: for a DaemonSet of one pool
    (the DCGM exporter's), whose template is the pool's own and so does not change when others are added."""
    return tolerations([taint for pool in pools for taint in pool.taints])


def pool_affinity(pools: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """The required node affinity on ``pools`` by name: GPU role, one of the pools, NVIDIA GPU present
    (a DaemonSet per pool, the DCGM exporter's)."""
    names = sorted({pool.pool for pool in pools})
    term = [
        requirement(ROLE_LABEL, "In", [Role.GPU.value]),
        requirement(POOL_LABEL, "In", names),
        requirement(GPU_PRESENT_LABEL, "In", ["true"]),
    ]
    return {"nodeAffinity": required_node_affinity(term)}


def check_plugin_labels(path: str, pools: Sequence[NodePoolInfo]) -> None:
    """The labels ``plugin_affinity`` selects on: every served pool is a GPU node without the
    external-plugin label, every unserved GPU pool carries it (else the plugin would land beside
    the pool's own). Raises ConfigError naming the pool and label."""
    for index, pool in enumerate(pools):
        if pool.role is not Role.GPU:
            continue
        if is_served(pool):
            expected: dict[str, str | None] = {ROLE_LABEL: Role.GPU.value, GPU_PRESENT_LABEL: "true", DEVICE_PLUGIN_LABEL: None}
        else:
            expected = {DEVICE_PLUGIN_LABEL: EXTERNAL_DEVICE_PLUGIN}
        for key, value in expected.items():
            if pool.labels.get(key) != value:
                raise ConfigError(
                    f"{path}.pools[{index}].labels.{key}",
                    f"must be {value!r} on a {'served' if is_served(pool) else 'unserved'} GPU pool (absent: None): the "
                    "plugin selects GPU nodes by these labels",
                    pool.labels.get(key),
                )


def check_placement(
    path: str, pools: Sequence[NodePoolInfo], served: Callable[[NodePoolInfo], bool], shared_name_rule: str, what: str
) -> None:
    """The placement checks of a DaemonSet that ``pool_affinity`` places (the DCGM exporter's): no GPU pool it does not serve shares a served pool's name, since the affinity selects
    by pool name (``shared_name_rule`` says what would go wrong), and every served pool carries the
    labels the affinity requires, or ``what`` never lands there. Raises ConfigError naming the pool."""
    served_names = {p.pool for p in pools if served(p)}
    for index, pool in enumerate(pools):
        if pool.role is Role.GPU and not served(pool) and pool.pool in served_names:
            raise ConfigError(f"{path}.pools[{index}].pool", shared_name_rule, pool.pool)
    for index, pool in enumerate(pools):
        if not served(pool):
            continue
        expected = {ROLE_LABEL: Role.GPU.value, POOL_LABEL: pool.pool, GPU_PRESENT_LABEL: "true"}
        for key, value in expected.items():
            if pool.labels.get(key) != value:
                raise ConfigError(
                    f"{path}.pools[{index}].labels.{key}",
                    f"must be {value!r} on a served GPU pool, or {what} never lands there",
                    pool.labels.get(key),
                )


def validate(name: str, pools: Sequence[NodePoolInfo], version: str) -> tuple[NodePoolInfo, ...]:
    """Check the arguments; return the served pools. Raises ConfigError naming the argument."""
    path = f"NvidiaDevicePlugin({name})"
    served = served_pools(pools)
    if not served:
        raise ConfigError(
            f"{path}.pools",
            "must include at least one GPU pool that needs the device plugin",
            [p.name for p in pools],
            "system pools, Bottlerocket pools (which ship their own plugin) and gpuDriver none or managed pools are not served",
        )
    rules.check_device_plugin(DevicePluginSpec(version=version), path)
    check_plugin_labels(path, pools)
    for index, pool in enumerate(pools):
        if not is_served(pool):
            continue
        config = sharing.config_name(pool.sharing)
        if pool.labels.get(DEVICE_PLUGIN_CONFIG_LABEL) != config:
            wanted = (
                f"must be {config!r} for the pool's sharing ({sharing.describe(pool.sharing)})"
                if config
                else ("must be absent on a pool without sharing (its nodes get the default config)")
            )
            raise ConfigError(
                f"{path}.pools[{index}].labels.{DEVICE_PLUGIN_CONFIG_LABEL}",
                f"{wanted}: the config-manager selects each node's config by this label, and a name the ConfigMap "
                "lacks stops the plugin from starting",
                pool.labels.get(DEVICE_PLUGIN_CONFIG_LABEL),
            )
    return served


def plugin_container(image: str, pools: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """The plugin container; with shared pools, started on the selected config file (no flag in the
    environment, which would override every node's config), plus MIG and MPS needs."""
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": locked_down_security_context(),
        "resources": RESOURCES,
        "volumeMounts": [{"name": VOLUME_NAME, "mountPath": DEVICE_PLUGIN_DIR}],
    }
    if not configs.needs_configs(pools):
        return container
    container["command"] = [configs.PLUGIN_PROCESS]
    container["env"] = [{"name": "CONFIG_FILE", "value": configs.CONFIG_FILE}]
    container["volumeMounts"] += configs.config_mounts()
    if configs.uses_mode(pools, SharingMode.MIG):
        container["env"].append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
        container["securityContext"]["capabilities"]["add"] = [MIG_CAPABILITY]
    if configs.uses_mode(pools, SharingMode.MPS):
        container["volumeMounts"] += mps.mps_mounts()
    return container


def plugin_pod_spec(
    image: str, tolerations_: list[dict[str, str]], affinity: dict[str, Any], pools: Sequence[NodePoolInfo]
) -> dict[str, Any]:
    """The DaemonSet's pod spec for the served ``pools``."""
    spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "priorityClassName": PRIORITY_CLASS,
        "tolerations": tolerations_,
        "affinity": affinity,
        "containers": [plugin_container(image, pools)],
        "volumes": [{"name": VOLUME_NAME, "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"}}],
    }
    if not configs.needs_configs(pools):
        return spec
    spec["shareProcessNamespace"] = True
    spec["initContainers"] = [
        configs.config_manager_container(
            "nvidia-device-plugin-init", image, oneshot=True, process_to_signal=configs.PLUGIN_PROCESS
        )
    ]
    spec["containers"].append(
        configs.config_manager_container(
            "nvidia-device-plugin-sidecar", image, oneshot=False, process_to_signal=configs.PLUGIN_PROCESS
        )
    )
    spec["volumes"] += configs.config_volumes()
    if configs.uses_mode(pools, SharingMode.MPS):
        spec["volumes"] += mps.mps_volumes()
    return spec


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The NVIDIA device plugin DaemonSet (and its ServiceAccount) for a set of GPU pools.

    Pass every pool of the cluster: the system pool, pools that ship their own plugin
    (``needs_device_plugin=False``, Bottlerocket) and ``gpuDriver: none``/``managed`` pools are
    left out automatically (``is_served``). Give the cluster's
    Kubernetes provider through ``opts``; the children inherit it::

        NvidiaDevicePlugin("gpu", pools, opts=pulumi.ResourceOptions(provider=k8s_provider))

    Args:
        name: the component's name; also ``app.kubernetes.io/instance``.
        pools: the cluster's pools; those ``is_served`` accepts are served.
        version: the image tag of ``nvcr.io/nvidia/k8s-device-plugin``; default
            ``DEFAULT_DEVICE_PLUGIN_VERSION`` (a pin, bumped deliberately).
        namespace: where the DaemonSet runs; default ``kube-system``, where
            ``system-node-critical`` is always admitted (some managed offerings restrict that
            priority class elsewhere with a ResourceQuota).
        opts: resource options; ``provider`` (or ``providers``) should be the cluster's.

    Attributes:
        served_pools: the pools the plugin runs on.
        tolerations: the DaemonSet's tolerations (``GPU_NODE_TOLERATIONS``).
        affinity: the DaemonSet's affinity (``plugin_affinity``: served GPU nodes, by label).
        image: the container image.
        configs: config name -> the plugin config (``version: v1``) each node may select; empty
            when no served pool shares its GPUs.
        service_account, daemon_set: the child resources.
        config_map, cluster_role, cluster_role_binding: the named configs and the config-manager's
            node access; None without sharing.
        mps_daemon_set: the MPS control daemon; None without an MPS pool.

    Raises:
        ConfigError: no pool to serve, a version that is not a release tag, a GPU pool whose labels
            do not say whether the plugin serves it (``check_plugin_labels``), or
            a shared pool whose config label does not name its config. Raised before anything is
            registered.
    """

    served_pools: tuple[NodePoolInfo, ...]
    tolerations: list[dict[str, str]]
    affinity: dict[str, Any]
    image: str
    configs: dict[str, dict[str, Any]]
    service_account: k8s.core.v1.ServiceAccount
    daemon_set: k8s.apps.v1.DaemonSet
    config_map: k8s.core.v1.ConfigMap | None
    cluster_role: k8s.rbac.v1.ClusterRole | None
    cluster_role_binding: k8s.rbac.v1.ClusterRoleBinding | None
    mps_daemon_set: k8s.apps.v1.DaemonSet | None

    def __init__(
        self,
        name: str,
        pools: Sequence[NodePoolInfo],
        version: str = DEFAULT_DEVICE_PLUGIN_VERSION,
        namespace: str = NAMESPACE,
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
        shared = configs.needs_configs(served)
        mig = configs.uses_mode(served, SharingMode.MIG)
        self.configs = configs.plugin_configs(served) if shared else {}
        data = configs.render_data(self.configs)

        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount",
            metadata={"name": NAME, "namespace": namespace, "labels": labels},
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.config_map = self.cluster_role = self.cluster_role_binding = self.mps_daemon_set = None
        after: list[pulumi.Resource] = [self.service_account]
        if shared:
            self.config_map = configs.create_config_map(f"{name}-configmap", namespace, labels, data, parent=self)
            self.cluster_role, self.cluster_role_binding = configs.create_node_reader(name, NAME, namespace, labels, parent=self)
            after += [self.config_map, self.cluster_role_binding]

        skips = {**SCAN_SKIPS, **(MIG_SCAN_SKIPS if mig else {})}
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata={"name": NAME, "namespace": namespace, "labels": labels, "annotations": skip_annotations(skips)},
            spec={
                "selector": {"matchLabels": selector},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": MAX_UNAVAILABLE}},
                "template": {
                    "metadata": {
                        "labels": labels,
                        **({"annotations": {"checksum/config": configs.checksum(data)}} if shared else {}),
                    },
                    "spec": plugin_pod_spec(self.image, self.tolerations, self.affinity, served),
                },
            },
            # The selector is immutable and the name fixed: a selector change replaces the
            # DaemonSet, and the old one has to go first.
            opts=pulumi.ResourceOptions(parent=self, depends_on=after, delete_before_replace=True),
        )
        mps_served = mps.mps_pools(served)
        if mps_served:
            self.mps_daemon_set = mps.create_mps_control_daemon(
                f"{name}-mps-control-daemon",
                instance=name,
                pools=mps_served,
                namespace=namespace,
                image=self.image,
                version=version,
                service_account=NAME,
                priority_class=PRIORITY_CLASS,
                max_unavailable=MAX_UNAVAILABLE,
                config_checksum=configs.checksum(data),
                parent=self,
                depends_on=after,
            )
        self.register_outputs(
            {
                "image": self.image,
                "servedPools": sorted(p.name for p in served),
                "tolerations": self.tolerations,
                "configs": sorted(self.configs),
            }
        )
