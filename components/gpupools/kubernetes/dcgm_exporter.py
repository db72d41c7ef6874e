"""NVIDIA's DCGM exporter (GPU metrics for Prometheus), one DaemonSet per GPU pool that lacks one.

Upstream's manifests (NVIDIA/dcgm-exporter ``dcgm-exporter.yaml`` and the chart under
``deployment/``, read at release 4.5.3-4.8.2, the chart's ``appVersion`` 4.8.2) are the base: image
``nvcr.io/nvidia/k8s/dcgm-exporter`` (distroless), container ``exporter``, port 9400 named
``metrics`` serving ``/metrics`` and ``/health`` (the chart's liveness and readiness probes, 45 s
initial delay), ``DCGM_EXPORTER_KUBERNETES=true`` with the kubelet's
``/var/lib/kubelet/pod-resources`` mounted read-only (each GPU's series then carry the
``namespace``/``pod``/``container`` using it), ``NODE_NAME`` from the downward API, running as root,
``allowPrivilegeEscalation: false``, RollingUpdate with ``maxUnavailable: 1``, priority class
``system-node-critical`` and the chart's requests and limits. GPU access comes the way it does for
the device plugin: the image sets ``NVIDIA_VISIBLE_DEVICES=all`` (``docker/Dockerfile``) and the
node's default container runtime is NVIDIA's, so the container gets every GPU without requesting
one (and so without taking one from workloads). What changes, and why:

* **Where it runs** (``is_served``): exactly the GPU pools whose nodes have no exporter yet and can
  run this one. That is the device plugin's set (``device_plugin.is_served``) restricted to
  ``gpuDriver: install``: not ``none`` pools (bring your own stack: the GPU Operator deploys its own
  exporter, ``dcgmExporter.enabled`` defaults to true), not ``managed`` AKS pools (AKS installs a
  DCGM exporter on them and labels them ``kubernetes.azure.com/dcgm-exporter=enabled``), and not
  Bottlerocket NVIDIA pools: Bottlerocket ships no exporter, but its NVIDIA runtime ignores
  ``NVIDIA_VISIBLE_DEVICES`` in unprivileged containers (Bottlerocket settings reference,
  ``settings.nvidia-container-runtime.visible-devices-envvar-when-unprivileged``, default false), so
  the exporter there finds no GPU and crash-loops with "Failed to initialize NVML"
  (NVIDIA/dcgm-exporter#279, bottlerocket-os/bottlerocket#3992). Running it there would need a
  privileged container or a node setting gpupools does not own; those pools get no exporter.
* **One DaemonSet per pool**, named ``dcgm-exporter-<pool>``, its pods labelled
  ``gpupools.io/pool=<pool>``, with the pool's own scheduling: a required node affinity on
  ``gpupools.io/role=gpu``, ``gpupools.io/pool=<pool>`` and ``nvidia.com/gpu.present=true``, and one
  exact toleration per taint of that pool's node groups (the GPU taint, the pool's own taints, the
  AKS Spot taint) (``device_plugin.pool_affinity`` and ``pool_tolerations``). A pool's DaemonSet
  names only its own pool, so adding a pool adds a DaemonSet and changes no existing one. Upstream tolerates only the control-plane taint and selects no
  node, so on tainted GPU nodes it never lands (NVIDIA/dcgm-exporter#731, #733). Why per pool: the
  exporter's metrics name the GPU and the host, not the pool, and dcgm-exporter has no option to
  copy node labels onto its series (its flags: ``pkg/cmd/app.go``); a per-pool DaemonSet puts the
  pool on the scrape target instead, so every series is attributable to a pool with no join against
  kube-state-metrics.
* **Scraping**: one headless Service per pool, labelled ``gpupools.io/pool=<pool>`` and annotated
  ``prometheus.io/scrape: "true"``, ``prometheus.io/port: "9400"``, ``prometheus.io/path: /metrics``
  (the convention of the prometheus-community ``prometheus`` chart's ``kubernetes-service-endpoints``
  job, which also copies every Service label onto the target, ``labelmap`` of
  ``__meta_kubernetes_service_label_(.+)``: ``gpupools_io_pool``). With ``service_monitor=True``
  also one ``monitoring.coreos.com/v1`` ServiceMonitor over those Services, with ``targetLabels:
  [gpupools.io/pool]`` (the Prometheus Operator copies that Service label onto every target, under
  the same sanitized name ``gpupools_io_pool``: ``pkg/prometheus/promcfg.go``). The ServiceMonitor is opt-in because its CRD belongs
  to the cluster's Prometheus Operator, which Pulumi cannot see at preview.
* **Metrics**: a ConfigMap of counters (``COUNTERS``), passed with ``DCGM_EXPORTER_COLLECTORS``,
  instead of the image's default file: every field the README's queries use
  (``DCGM_FI_DEV_GPU_UTIL``, ``DCGM_FI_DEV_XID_ERRORS``) plus memory, power, temperature and
  row-remapping health, and no profiling (``DCGM_FI_PROF_*``) fields. Those are the only reason
  upstream adds ``CAP_SYS_ADMIN`` ("Required for profiling metrics", ``dcgm-exporter.yaml``, whose
  comment also gives the set-up without it), so here every capability is dropped.
* Its own ServiceAccount without a token (it reads the kubelet's pod-resources socket, never the
  API server; upstream mounts a token only for pod labels or DRA, both off), seccomp
  ``RuntimeDefault``, ``app.kubernetes.io/*`` labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools import rules
from gpupools.conventions import POOL_LABEL
from gpupools.errors import ConfigError
from gpupools.kubernetes import device_plugin
from gpupools.kubernetes.access_gate import CONFIG_MAP, DAEMON_SET, SERVICE, SERVICE_ACCOUNT, SERVICE_MONITOR
from gpupools.kubernetes.hardening import locked_down_security_context
from gpupools.kubernetes.scan_skips import skip_annotations
from gpupools.pools import NodePoolInfo
from gpupools.specs import GpuMetricsSpec
from gpupools.versions import DCGM_EXPORTER_IMAGE, DEFAULT_DCGM_EXPORTER_VERSION

TYPE = "gpupools:index:DcgmExporter"

KINDS = (SERVICE_ACCOUNT, CONFIG_MAP, DAEMON_SET, SERVICE, SERVICE_MONITOR)
"""What it creates (``KubernetesAccessGate`` checks them): the ServiceAccount, the counters
ConfigMap, a DaemonSet and a Service per pool and, with ``service_monitor``, the ServiceMonitor."""

NAMESPACE = "kube-system"
"""Where its objects go by default (``system-node-critical`` is always admitted there)."""

NAME = "dcgm-exporter"
"""``app.kubernetes.io/name``, the ServiceAccount's and ServiceMonitor's name, and the prefix of
each pool's DaemonSet and Service (``dcgm-exporter-<pool>``)."""

CONTAINER_NAME = "exporter"
"""The chart's container name."""

PORT = 9400
PORT_NAME = "metrics"
METRICS_PATH = "/metrics"
HEALTH_PATH = "/health"
"""Upstream's listen port (``DCGM_EXPORTER_LISTEN=:9400``), its name, the metrics path and the
health endpoint the chart probes (``internal/pkg/server/server.go``)."""

POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
"""The kubelet's pod-resources socket directory: which pod holds which GPU."""

COUNTERS_DIR = "/etc/gpupools-dcgm-exporter"
COUNTERS_FILE = "counters.csv"
"""Where the counters ConfigMap is mounted (beside, not over, the image's ``/etc/dcgm-exporter``)."""

COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "Share of the sample period a kernel ran on the GPU (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Share of the sample period device memory was read or written (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Code of the last XID error the GPU reported (0: none)."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of memory rows has failed."),
)
"""``(DCGM field, Prometheus type, help)`` per collected field, in dcgm-exporter's CSV format
(``etc/default-counters.csv``: "DCGM FIELD, Prometheus metric type, help message"). Each field is
one of that default file's (so the image's DCGM knows it), none a profiling field."""

PRIORITY_CLASS = "system-node-critical"
"""The chart's ``priorityClassName``."""

RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "200m", "memory": "512Mi"}}
"""The chart's requests and limits (``deployment/values.yaml``)."""

PROBE_DELAY_SECONDS = 45
PROBE_PERIOD_SECONDS = 5
"""The chart's probe timing: DCGM takes a while to start its embedded host engine."""

MAX_UNAVAILABLE = 1
"""The chart's rolling update: one node at a time."""

SCRAPE_ANNOTATIONS = {"prometheus.io/scrape": "true", "prometheus.io/port": str(PORT), "prometheus.io/path": METRICS_PATH}
"""The scrape annotations on each Service (values are strings, as annotations must be)."""

SCAN_SKIPS: dict[str, str] = {
    "CKV_K8S_15": "pinned to a release tag; Always would make every GPU node's exporter start depend on the registry",
    "CKV_K8S_22": "upstream leaves the root filesystem writable (DCGM's embedded host engine writes its log); untested read-only",
    "CKV_K8S_23": "runs as root like upstream: the kubelet's pod-resources socket is root-only, and DCGM expects root",
    "CKV_K8S_40": "runs as root like upstream: the kubelet's pod-resources socket is root-only, and DCGM expects root",
    "CKV_K8S_43": "pinned by release tag in gpupools.versions, the project's image pinning policy",
    "CKV2_K8S_6": "who scrapes it (namespace, labels) is the cluster owner's Prometheus: a policy here would block it or allow all",
}
"""Checkov findings accepted on each DaemonSet, each with its reason (``gpupools.kubernetes.scan_skips``);
everything else Checkov checks is fixed in the object (probes, limits, no capabilities, no token)."""


def is_served(pool: NodePoolInfo) -> bool:
    """True for a GPU pool whose nodes get this exporter: exactly the pools the NVIDIA device plugin
    serves (``device_plugin.is_served``: a GPU pool with ``gpuDriver: install`` whose image does not
    bring its own stack, so not Bottlerocket).

    Why this set and no other: ``none`` pools run their own stack (the GPU Operator brings its own
    exporter), ``managed`` AKS pools get AKS' exporter, and on Bottlerocket NVIDIA nodes an
    unprivileged container sees no GPU (module docstring); a second exporter on a node would double
    every series.
    """
    return device_plugin.is_served(pool)


def served_pools(pools: Sequence[NodePoolInfo]) -> tuple[NodePoolInfo, ...]:
    """The pools, in order, that ``is_served``."""
    return tuple(p for p in pools if is_served(p))


def by_pool(served: Sequence[NodePoolInfo]) -> dict[str, tuple[NodePoolInfo, ...]]:
    """Served node groups grouped by ``gpuPools`` entry (``NodePoolInfo.pool``), sorted by name:
    one DaemonSet each."""
    grouped: dict[str, list[NodePoolInfo]] = {}
    for info in served:
        grouped.setdefault(info.pool, []).append(info)
    return {name: tuple(grouped[name]) for name in sorted(grouped)}


def resource_name(pool: str) -> str:
    """``dcgm-exporter-<pool>``: the pool's DaemonSet and Service."""
    return f"{NAME}-{pool}"


def counters_csv(counters: Sequence[tuple[str, str, str]] = COUNTERS) -> str:
    """The collectors file: a comment, then ``FIELD, type, help`` per line."""
    lines = ["# DCGM FIELD, Prometheus metric type, help message (written by gpupools)"]
    lines += [f"{field}, {kind}, {help_}" for field, kind, help_ in counters]
    return "\n".join(lines) + "\n"


def validate(name: str, pools: Sequence[NodePoolInfo], version: str) -> tuple[NodePoolInfo, ...]:
    """Check the arguments; return the served pools. Raises ConfigError naming the argument."""
    path = f"DcgmExporter({name})"
    served = served_pools(pools)
    if not served:
        raise ConfigError(
            f"{path}.pools",
            "must include at least one GPU pool without an exporter of its own",
            [p.name for p in pools],
            "system and CPU pools, Bottlerocket pools and gpuDriver none/managed pools are not served",
        )
    if not version.strip() or any(c.isspace() or c in ":@/" for c in version):
        raise ConfigError(f"{path}.version", "must be an image tag of nvcr.io/nvidia/k8s/dcgm-exporter", version)
    device_plugin.check_placement(
        path,
        pools,
        is_served,
        "a GPU pool without this exporter must not share its pool name with a served pool "
        "(the affinity selects by pool name, and a node would get a second exporter or one that cannot start)",
        "the exporter",
    )
    return served


AGENT_HOSTENGINE_PORT = 5555
"""The DCGM host engine port of the EKS node monitoring agent's ``dcgm-server`` DaemonSet, published
on the node (aws/eks-node-monitoring-agent v1.7.0 ``charts/eks-node-monitoring-agent/templates/dcgm-daemonset.yaml``:
``nv-hostengine -n -b ALL``, ``containerPort: 5555``, ``hostPort: 5555``)."""


def remote_hostengine_env() -> list[dict[str, Any]]:
    """The exporter's environment when the node already runs a DCGM host engine (the node monitoring
    agent's): ``DCGM_REMOTE_HOSTENGINE_INFO`` at the node's IP and the agent's port, so the exporter
    connects to it instead of starting a second embedded one (NVIDIA/dcgm-exporter
    ``pkg/cmd/app.go``: flag ``--remote-hostengine-info``/``-r``, env ``DCGM_REMOTE_HOSTENGINE_INFO``;
    set, the exporter uses the remote engine). Two host engines on one node would each hold the GPUs'
    profiling counters, which only one client can use at a time."""
    return [
        {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": f"$(NODE_IP):{AGENT_HOSTENGINE_PORT}"},
    ]


def exporter_container(image: str, remote_hostengine: bool = False) -> dict[str, Any]:
    """The exporter container: upstream's environment, port and probes, the counters file, no
    capability; with ``remote_hostengine``, the node's existing host engine (``remote_hostengine_env``)."""
    probe = {"httpGet": {"path": HEALTH_PATH, "port": PORT, "scheme": "HTTP"}, "initialDelaySeconds": PROBE_DELAY_SECONDS}
    security = locked_down_security_context()
    security.update({"runAsUser": 0, "runAsNonRoot": False})
    return {
        "name": CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "DCGM_EXPORTER_LISTEN", "value": f":{PORT}"},
            {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
            {"name": "DCGM_EXPORTER_COLLECTORS", "value": f"{COUNTERS_DIR}/{COUNTERS_FILE}"},
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            *(remote_hostengine_env() if remote_hostengine else []),
        ],
        "ports": [{"name": PORT_NAME, "containerPort": PORT, "protocol": "TCP"}],
        "livenessProbe": {**probe, "periodSeconds": PROBE_PERIOD_SECONDS},
        "readinessProbe": probe,
        "securityContext": security,
        "resources": RESOURCES,
        "volumeMounts": [
            {"name": "pod-gpu-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True},
            {"name": "counters", "mountPath": COUNTERS_DIR, "readOnly": True},
        ],
    }


def exporter_pod_spec(
    image: str, group: Sequence[NodePoolInfo], config_map: str, remote_hostengine: bool = False
) -> dict[str, Any]:
    """The pod spec for one pool's node groups: their affinity and tolerations, the exporter."""
    return {
        "serviceAccountName": NAME,
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "priorityClassName": PRIORITY_CLASS,
        "tolerations": device_plugin.pool_tolerations(group),
        "affinity": device_plugin.pool_affinity(group),
        "containers": [exporter_container(image, remote_hostengine)],
        "volumes": [
            {"name": "pod-gpu-resources", "hostPath": {"path": POD_RESOURCES_DIR, "type": "Directory"}},
            {"name": "counters", "configMap": {"name": config_map, "items": [{"key": COUNTERS_FILE, "path": COUNTERS_FILE}]}},
        ],
    }


def service_monitor_spec(namespace: str, selector: Mapping[str, str]) -> dict[str, Any]:
    """The ServiceMonitor's spec: every pool's Service, the pool label carried onto the targets."""
    return {
        "selector": {"matchLabels": dict(selector)},
        "namespaceSelector": {"matchNames": [namespace]},
        "targetLabels": [POOL_LABEL],
        "endpoints": [{"port": PORT_NAME, "path": METRICS_PATH, "scheme": "http"}],
    }


class DcgmExporter(pulumi.ComponentResource):
    """NVIDIA's DCGM exporter on every GPU pool that lacks one: per pool a DaemonSet and a headless
    Service for Prometheus, optionally a ServiceMonitor.

    Pass every pool of the cluster: pools that are not served (``is_served``) are left out. Give the
    cluster's Kubernetes provider through ``opts``::

        DcgmExporter("dcgm-exporter", pools, opts=pulumi.ResourceOptions(provider=k8s_provider))

    Args:
        name: the component's name; also ``app.kubernetes.io/instance``.
        pools: the cluster's pools.
        version: the image tag of ``nvcr.io/nvidia/k8s/dcgm-exporter``; default
            ``DEFAULT_DCGM_EXPORTER_VERSION`` (a pin, bumped deliberately).
        service_monitor: also create a ``monitoring.coreos.com/v1`` ServiceMonitor; default False.
            Only with the Prometheus Operator's CRDs installed: without them the create fails
            (Pulumi cannot check at preview).
        service_monitor_labels: extra labels on the ServiceMonitor (a Prometheus selects
            ServiceMonitors by label; kube-prometheus-stack by its ``release`` label); only with
            ``service_monitor``. Kubernetes label syntax, no reserved prefix.
        namespace: where everything goes; default ``kube-system``.
        opts: resource options; ``provider`` should be the cluster's.
        remote_hostengine: the GPU nodes already run a DCGM host engine on port 5555 (the EKS node
            monitoring agent's, with ``gpupools:nodeRepair``): use it instead of an embedded one, so
            each node runs one (``remote_hostengine_env``); default False.

    Attributes:
        served_pools: the node groups it runs on.
        image: the container image.
        service_account, config_map: the shared children.
        daemon_sets, services: pool name -> its DaemonSet and Service.
        service_monitor: the ServiceMonitor, or None.

    Raises:
        ConfigError: no pool to serve, a version that is not an image tag, ServiceMonitor labels
            that are not valid labels or come without a ServiceMonitor, an unserved GPU pool
            sharing a served pool's name, or a served pool missing a label the affinity selects on.
            Raised before anything is registered.
    """

    served_pools: tuple[NodePoolInfo, ...]
    image: str
    service_account: k8s.core.v1.ServiceAccount
    config_map: k8s.core.v1.ConfigMap
    daemon_sets: dict[str, k8s.apps.v1.DaemonSet]
    services: dict[str, k8s.core.v1.Service]
    service_monitor: k8s.apiextensions.CustomResource | None

    def __init__(
        self,
        name: str,
        pools: Sequence[NodePoolInfo],
        version: str = DEFAULT_DCGM_EXPORTER_VERSION,
        service_monitor: bool = False,
        service_monitor_labels: Mapping[str, str] | None = None,
        namespace: str = NAMESPACE,
        opts: pulumi.ResourceOptions | None = None,
        remote_hostengine: bool = False,
    ) -> None:
        served = validate(name, pools, version)
        extra_labels = dict(service_monitor_labels or {})
        rules.check_labels(extra_labels, f"DcgmExporter({name}).service_monitor_labels")
        if extra_labels and not service_monitor:
            raise ConfigError(
                f"DcgmExporter({name}).service_monitor_labels",
                "needs service_monitor=True (they label the ServiceMonitor)",
                extra_labels,
            )
        super().__init__(TYPE, name, None, opts)
        self.served_pools = served
        self.image = f"{DCGM_EXPORTER_IMAGE}:{version}"

        common = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": name}
        labels = {**common, "app.kubernetes.io/version": version, "app.kubernetes.io/managed-by": "pulumi"}
        child = pulumi.ResourceOptions(parent=self)
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount",
            metadata={"name": NAME, "namespace": namespace, "labels": labels},
            automount_service_account_token=False,
            opts=child,
        )
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-counters",
            metadata={"name": f"{NAME}-counters", "namespace": namespace, "labels": labels},
            data={COUNTERS_FILE: counters_csv()},
            opts=child,
        )
        self.daemon_sets, self.services = {}, {}
        for pool, group in by_pool(served).items():
            selector = {**common, POOL_LABEL: pool}
            pool_labels = {**labels, POOL_LABEL: pool}
            self.daemon_sets[pool] = k8s.apps.v1.DaemonSet(
                f"{name}-{pool}-daemonset",
                metadata={
                    "name": resource_name(pool),
                    "namespace": namespace,
                    "labels": pool_labels,
                    "annotations": skip_annotations(SCAN_SKIPS),
                },
                spec={
                    "selector": {"matchLabels": selector},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": MAX_UNAVAILABLE}},
                    "template": {
                        "metadata": {"labels": pool_labels},
                        "spec": exporter_pod_spec(self.image, group, f"{NAME}-counters", remote_hostengine),
                    },
                },
                # The selector is immutable and the name fixed: a selector change replaces the
                # DaemonSet, and the old one has to go first.
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=[self.service_account, self.config_map], delete_before_replace=True
                ),
            )
            self.services[pool] = k8s.core.v1.Service(
                f"{name}-{pool}-service",
                metadata={
                    "name": resource_name(pool),
                    "namespace": namespace,
                    "labels": pool_labels,
                    "annotations": dict(SCRAPE_ANNOTATIONS),
                },
                spec={
                    # Headless: Prometheus scrapes each pod (one per node), never a load-balanced VIP.
                    "clusterIP": "None",
                    "selector": selector,
                    "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT_NAME, "protocol": "TCP"}],
                },
                opts=child,
            )
        self.service_monitor = None
        if service_monitor:
            self.service_monitor = k8s.apiextensions.CustomResource(
                f"{name}-servicemonitor",
                api_version="monitoring.coreos.com/v1",
                kind="ServiceMonitor",
                metadata={"name": NAME, "namespace": namespace, "labels": {**extra_labels, **labels}},
                spec=service_monitor_spec(namespace, common),
                opts=child,
            )
        self.register_outputs({"image": self.image, "servedPools": sorted(self.daemon_sets), "serviceMonitor": service_monitor})


def for_stack(
    metrics: GpuMetricsSpec, pools: Sequence[NodePoolInfo], opts: pulumi.ResourceOptions, remote_hostengine: bool = False
) -> DcgmExporter | None:
    """The stacks' exporter (``gpupools:gpuMetrics``) over every pool of the cluster, or None when it
    is off or no pool is served (every GPU pool ``gpuDriver: none``/``managed`` or Bottlerocket).
    ``remote_hostengine``: the EKS stack with the node monitoring agent (``DcgmExporter``)."""
    if not metrics.enabled or not served_pools(pools):
        return None
    return DcgmExporter(
        "dcgm-exporter",
        pools,
        service_monitor=metrics.service_monitor,
        service_monitor_labels=metrics.service_monitor_labels,
        opts=opts,
        remote_hostengine=remote_hostengine,
    )
