"""DcgmExporter: upstream's manifests where they should be, one exporter per served GPU node (and none
anywhere else) in every example stack, scraping by annotation or ServiceMonitor, errors, config."""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterator
from typing import Any

import pytest
from gpupools import config
from gpupools.conventions import AKS_SYSTEM_TAINT, CapacityType, Role, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.kubernetes import DcgmExporter, dcgm_exporter
from gpupools.pools import NodePoolInfo
from gpupools.specs import GpuDriver, GpuMetricsSpec
from gpupools.testing import Run, run_stack, stack_config
from gpupools.testing.manifests import to_manifest
from gpupools.versions import DCGM_EXPORTER_IMAGE, DEFAULT_DCGM_EXPORTER_VERSION
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.crd_schema import assert_valid_custom_resource
from tests.k8s_schema import (
    ProviderRun,
    affinity_matches,
    aks_gpu_pool,
    aks_system_pool,
    eks_gpu_group,
    eks_system_group,
    node_labels,
    run_with_provider,
    untolerated,
    validate_all_versions,
    validate_manifest,
)

DEDICATED = Taint("dedicated", "vision", TaintEffect.NO_SCHEDULE)
EVICT = Taint("team", "research", TaintEffect.NO_EXECUTE)
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
SERVICE = "kubernetes:core/v1:Service"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"


def with_driver(pool: NodePoolInfo, driver: GpuDriver) -> NodePoolInfo:
    return dataclasses.replace(pool, gpu_driver=driver)


def aks_pools() -> list[NodePoolInfo]:
    """System pool; T4 Spot + fallback with an extra taint; A100 Spot + fallback; an operator-run pool
    (``gpuDriver: none``) and an AKS managed one."""
    return [
        aks_system_pool(),
        aks_gpu_pool("t4", CapacityType.SPOT, extra_taints=[DEDICATED]),
        aks_gpu_pool("t4", CapacityType.ON_DEMAND, extra_taints=[DEDICATED]),
        aks_gpu_pool("a100", CapacityType.SPOT, size="Standard_NC24ads_A100_v4"),
        aks_gpu_pool("a100", CapacityType.ON_DEMAND, size="Standard_NC24ads_A100_v4"),
        with_driver(aks_gpu_pool("byo", CapacityType.SPOT), GpuDriver.NONE),
        with_driver(aks_gpu_pool("managed", CapacityType.SPOT), GpuDriver.MANAGED),
    ]


def eks_pools() -> list[NodePoolInfo]:
    """System group, per-zone T4 groups with a NoExecute taint, and a Bottlerocket pool."""
    pools = [eks_system_group()]
    for zone in ("us-west-2a", "us-west-2b"):
        pools.append(eks_gpu_group("t4", CapacityType.SPOT, zone, extra_taints=[EVICT]))
        pools.append(eks_gpu_group("t4", CapacityType.ON_DEMAND, zone, extra_taints=[EVICT]))
        pools.append(eks_gpu_group("br", CapacityType.SPOT, zone, bottlerocket=True))
    return pools


def deploy(pools: list[NodePoolInfo], **kwargs: Any) -> ProviderRun:
    return run_with_provider(lambda opts: DcgmExporter("dcgm", pools, opts=opts, **kwargs))


def manifests(run: Run, type_: str) -> list[dict[str, Any]]:
    return [to_manifest(r) for r in run.of_type(type_) if r.name.startswith(("dcgm-", "dcgm-exporter-"))]


def exporters(run: Run) -> list[dict[str, Any]]:
    """The exporter DaemonSets (by image, so the device plugin's DaemonSet in a stack is not one)."""
    found = []
    for registration in run.of_type(DAEMON_SET):
        manifest = to_manifest(registration)
        if manifest["spec"]["template"]["spec"]["containers"][0]["image"].startswith(DCGM_EXPORTER_IMAGE + ":"):
            found.append(manifest)
    return found


def lands(daemon_set: dict[str, Any], pool: NodePoolInfo) -> bool:
    """The scheduler model: the DaemonSet's pod fits a node of ``pool`` (affinity and taints)."""
    pod = daemon_set["spec"]["template"]["spec"]
    return affinity_matches(pod.get("affinity"), node_labels(pool)) and not untolerated(pod.get("tolerations", []), pool.taints)


def expected_served(pool: NodePoolInfo) -> bool:
    """Written out here, not taken from the module: a GPU pool, not Bottlerocket, driver installed by the cloud."""
    return pool.role is Role.GPU and pool.needs_device_plugin and pool.gpu_driver is GpuDriver.INSTALL


def assert_one_exporter_per_served_node(daemon_sets: list[dict[str, Any]], pools: list[NodePoolInfo]) -> None:
    """Each served pool's nodes get exactly one exporter pod, its own pool's; every other node none.
    Each DaemonSet tolerates exactly its pool's taints, nothing more."""
    assert daemon_sets
    for pool in pools:
        landing = [d["metadata"]["name"] for d in daemon_sets if lands(d, pool)]
        if expected_served(pool):
            assert landing == [f"dcgm-exporter-{pool.pool}"], (pool.name, landing)
        else:
            assert landing == [], (pool.name, landing)
    for daemon_set in daemon_sets:
        pool_name = daemon_set["metadata"]["labels"]["gpupools.io/pool"]
        own = [p for p in pools if p.pool == pool_name]
        allowed = {tuple(sorted(t.toleration().items())) for p in own for t in p.taints}
        tolerated = {tuple(sorted(t.items())) for t in daemon_set["spec"]["template"]["spec"]["tolerations"]}
        assert tolerated == allowed, pool_name
        assert daemon_set["spec"]["template"]["metadata"]["labels"]["gpupools.io/pool"] == pool_name


# --- upstream's manifest where it should be -----------------------------------------------------------


def test_exporter_matches_upstream_where_it_should() -> None:
    seen = deploy(aks_pools())
    [t4] = [d for d in exporters(seen.run) if d["metadata"]["name"] == "dcgm-exporter-t4"]
    assert t4["metadata"]["namespace"] == "kube-system"
    assert t4["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    pod = t4["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"
    [container] = pod["containers"]
    assert container["name"] == "exporter"
    assert container["image"] == "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env["DCGM_EXPORTER_LISTEN"] == ":9400"
    assert env["DCGM_EXPORTER_KUBERNETES"] == "true"
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert container["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": 9400, "scheme": "HTTP"}
        assert container[probe]["initialDelaySeconds"] == 45
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "200m", "memory": "512Mi"},
    }
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/var/lib/kubelet/pod-resources"]["readOnly"] is True
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/var/lib/kubelet/pod-resources"]["name"]]["hostPath"]["path"] == "/var/lib/kubelet/pod-resources"


def test_no_capability_no_privilege_escalation_no_token() -> None:
    """SYS_ADMIN is upstream's only for profiling fields, and none is collected: everything dropped."""
    seen = deploy(aks_pools())
    for daemon_set in exporters(seen.run):
        pod = daemon_set["spec"]["template"]["spec"]
        security = pod["containers"][0]["securityContext"]
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["allowPrivilegeEscalation"] is False
        assert "privileged" not in security
        assert pod["automountServiceAccountToken"] is False
    [account] = manifests(seen.run, "kubernetes:core/v1:ServiceAccount")
    assert account["automountServiceAccountToken"] is False


def counters_of(run: Run) -> list[list[str]]:
    [config_map] = manifests(run, "kubernetes:core/v1:ConfigMap")
    text = config_map["data"]["counters.csv"]
    rows = [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text)) if row and not row[0].startswith("#")]
    return rows


def test_counters_file_has_what_the_queries_use_and_no_profiling_fields() -> None:
    seen = deploy(aks_pools())
    rows = counters_of(seen.run)
    assert all(len(row) == 3 for row in rows)  # dcgm-exporter's format: field, type, help (two commas)
    fields = {row[0]: row[1] for row in rows}
    assert fields["DCGM_FI_DEV_GPU_UTIL"] == "gauge"
    assert fields["DCGM_FI_DEV_XID_ERRORS"] == "gauge"
    assert not [f for f in fields if f.startswith("DCGM_FI_PROF_")]
    # The exporter reads the mounted file, not the image's default.
    container = exporters(seen.run)[0]["spec"]["template"]["spec"]["containers"][0]
    [collectors] = [e["value"] for e in container["env"] if e["name"] == "DCGM_EXPORTER_COLLECTORS"]
    mount = next(m for m in container["volumeMounts"] if collectors.startswith(m["mountPath"] + "/"))
    volume = next(v for v in exporters(seen.run)[0]["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == manifests(seen.run, "kubernetes:core/v1:ConfigMap")[0]["metadata"]["name"]
    assert collectors.rsplit("/", 1)[1] in counters_of_keys(seen.run)


def counters_of_keys(run: Run) -> set[str]:
    [config_map] = manifests(run, "kubernetes:core/v1:ConfigMap")
    return set(config_map["data"])


def test_every_object_validates_strictly_at_every_supported_version() -> None:
    for pools in (aks_pools(), eks_pools()):
        seen = deploy(pools)
        objects = list(seen.run.kubernetes_objects())
        # ServiceAccount, ConfigMap, and a DaemonSet and a Service per served pool (t4, a100 / t4).
        assert len(objects) == 2 + 2 * len({p.pool for p in pools if expected_served(p)})
        for registration in objects:
            validate_all_versions(to_manifest(registration))


def test_selector_is_stable_across_versions_and_selects_its_pods() -> None:
    seen = deploy(aks_pools(), version="4.5.3-4.8.2-distroless")
    for daemon_set in exporters(seen.run):
        selector = daemon_set["spec"]["selector"]["matchLabels"]
        assert "app.kubernetes.io/version" not in selector  # immutable: an upgrade must not replace it
        assert selector.items() <= daemon_set["spec"]["template"]["metadata"]["labels"].items()
        assert daemon_set["spec"]["template"]["spec"]["containers"][0]["image"] == f"{DCGM_EXPORTER_IMAGE}:4.5.3-4.8.2-distroless"


# --- placement -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("pools", [aks_pools(), eks_pools()], ids=["aks", "eks"])
def test_one_exporter_per_served_node_and_none_elsewhere(pools: list[NodePoolInfo]) -> None:
    assert_one_exporter_per_served_node(exporters(deploy(pools).run), pools)


def test_not_on_operator_managed_or_bottlerocket_pools() -> None:
    served = {p.pool for p in dcgm_exporter.served_pools([*aks_pools(), *eks_pools()])}
    assert served == {"t4", "a100"}
    assert not dcgm_exporter.is_served(with_driver(aks_gpu_pool("x", CapacityType.SPOT), GpuDriver.NONE))
    assert not dcgm_exporter.is_served(with_driver(aks_gpu_pool("x", CapacityType.SPOT), GpuDriver.MANAGED))
    assert not dcgm_exporter.is_served(eks_gpu_group("x", CapacityType.SPOT, bottlerocket=True))
    assert dcgm_exporter.is_served(eks_gpu_group("x", CapacityType.SPOT))


def test_does_not_tolerate_the_system_pool_or_everything() -> None:
    stranger = Taint("example.com/anything", "x", TaintEffect.NO_SCHEDULE)
    for daemon_set in exporters(deploy(aks_pools()).run):
        tolerations = daemon_set["spec"]["template"]["spec"]["tolerations"]
        assert untolerated(tolerations, [AKS_SYSTEM_TAINT, stranger]) == [AKS_SYSTEM_TAINT, stranger]


taint_keys = st.sampled_from(["dedicated", "team", "example.com/tier"])
taint_values = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
extra_taints = st.lists(
    st.builds(Taint, taint_keys, taint_values, st.sampled_from(list(TaintEffect))),
    max_size=2,
    unique_by=lambda t: (t.key, t.effect),
)


@st.composite
def clusters(draw: st.DrawFn) -> list[NodePoolInfo]:
    """A cluster on one cloud: its system pool plus 1-4 GPU pool entries with random taints, drivers
    and (EKS) Bottlerocket."""
    cloud = draw(st.sampled_from(["aks", "eks"]))
    names = draw(st.lists(st.from_regex(r"\A[a-z][a-z0-9]{0,5}\Z"), min_size=1, max_size=4, unique=True))
    pools = [aks_system_pool() if cloud == "aks" else eks_system_group()]
    for name in names:
        taints = draw(extra_taints)
        driver = draw(st.sampled_from(list(GpuDriver)))
        bottlerocket = cloud == "eks" and draw(st.booleans())
        for capacity in draw(st.sampled_from([[CapacityType.SPOT], [CapacityType.ON_DEMAND], list(CapacityType)])):
            if cloud == "aks":
                pools.append(with_driver(aks_gpu_pool(name, capacity, extra_taints=taints), driver))
            else:
                pools.append(with_driver(eks_gpu_group(name, capacity, extra_taints=taints, bottlerocket=bottlerocket), driver))
    return draw(st.permutations(pools))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_property_one_exporter_per_served_node(pools: list[NodePoolInfo]) -> None:
    seen = deploy(pools)
    if not any(expected_served(p) for p in pools):
        assert seen.error is not None and seen.ours == []
        return
    assert seen.error is None
    assert_one_exporter_per_served_node(exporters(seen.run), pools)


# --- scraping ------------------------------------------------------------------------------------------


def test_each_pool_has_a_headless_annotated_service_selecting_only_its_pods() -> None:
    seen = deploy(aks_pools())
    services = {s["metadata"]["name"]: s for s in manifests(seen.run, SERVICE)}
    daemon_sets = {d["metadata"]["name"]: d for d in exporters(seen.run)}
    assert set(services) == set(daemon_sets) == {"dcgm-exporter-t4", "dcgm-exporter-a100"}
    for name, service in services.items():
        assert service["spec"]["clusterIP"] == "None"
        annotations = service["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == "9400"
        assert annotations["prometheus.io/path"] == "/metrics"
        pool = service["metadata"]["labels"]["gpupools.io/pool"]
        assert name == f"dcgm-exporter-{pool}"
        selector = service["spec"]["selector"].items()
        for other, daemon_set in daemon_sets.items():
            assert (selector <= daemon_set["spec"]["template"]["metadata"]["labels"].items()) is (other == name)
        [port] = service["spec"]["ports"]
        container = daemon_sets[name]["spec"]["template"]["spec"]["containers"][0]
        assert port["targetPort"] in [p["name"] for p in container["ports"]]


def test_service_monitor_only_when_asked_and_valid_against_the_pinned_crd() -> None:
    assert not deploy(aks_pools()).run.of_type(SERVICE_MONITOR)
    seen = deploy(aks_pools(), service_monitor=True)
    [monitor] = [to_manifest(r) for r in seen.run.of_type(SERVICE_MONITOR)]
    assert_valid_custom_resource(monitor)
    spec = monitor["spec"]
    assert spec["targetLabels"] == ["gpupools.io/pool"]  # the pool onto every target
    assert spec["namespaceSelector"] == {"matchNames": ["kube-system"]}
    [endpoint] = spec["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("metrics", "/metrics")
    # It selects every pool's Service and nothing of the device plugin's.
    for service in manifests(seen.run, SERVICE):
        assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert "gpupools.io/pool" in service["metadata"]["labels"]


def test_service_monitor_labels_are_added_and_cannot_replace_ours() -> None:
    seen = deploy(aks_pools(), service_monitor=True, service_monitor_labels={"release": "kube-prometheus-stack"})
    [monitor] = [to_manifest(r) for r in seen.run.of_type(SERVICE_MONITOR)]
    assert_valid_custom_resource(monitor)
    labels = monitor["metadata"]["labels"]
    assert labels["release"] == "kube-prometheus-stack"
    assert labels["app.kubernetes.io/name"] == "dcgm-exporter"
    # Only the ServiceMonitor gets them: the Services' labels (copied onto every target) stay ours.
    assert all("release" not in s["metadata"]["labels"] for s in manifests(seen.run, SERVICE))
    reserved = deploy(aks_pools(), service_monitor=True, service_monitor_labels={"app.kubernetes.io/name": "x"})
    assert_rejected(reserved, "DcgmExporter(dcgm).service_monitor_labels.app.kubernetes.io/name", "reserved")
    alone = deploy(aks_pools(), service_monitor_labels={"release": "x"})
    assert_rejected(alone, "DcgmExporter(dcgm).service_monitor_labels", "needs service_monitor=True")


def test_a_wrong_service_monitor_is_caught_by_the_pinned_crd() -> None:
    """Guard for the test above: the schema rejects what the API server would."""
    seen = deploy(aks_pools(), service_monitor=True)
    [monitor] = [to_manifest(r) for r in seen.run.of_type(SERVICE_MONITOR)]
    monitor["spec"]["endpoints"][0]["scheme"] = "ftp"
    with pytest.raises(AssertionError):
        assert_valid_custom_resource(monitor)


# --- errors --------------------------------------------------------------------------------------------


def assert_rejected(seen: ProviderRun, path: str, rule: str) -> None:
    assert seen.error is not None, "expected a ConfigError"
    assert seen.error.path == path
    assert rule in seen.error.rule
    assert seen.ours == [], [r.type for r in seen.ours]


def test_no_served_pool_is_rejected() -> None:
    pools = [eks_system_group(), eks_gpu_group("br", CapacityType.SPOT, bottlerocket=True)]
    assert_rejected(deploy(pools), "DcgmExporter(dcgm).pools", "at least one GPU pool")
    assert_rejected(deploy([]), "DcgmExporter(dcgm).pools", "at least one GPU pool")


@pytest.mark.parametrize("version", ["", "4.6.0 latest", "repo/image:tag", "x@sha256"])
def test_bad_version_is_rejected(version: str) -> None:
    assert_rejected(deploy(aks_pools(), version=version), "DcgmExporter(dcgm).version", "image tag")


def test_unserved_pool_sharing_a_served_pool_name_is_rejected() -> None:
    pools = [aks_gpu_pool("t4", CapacityType.SPOT), with_driver(aks_gpu_pool("t4", CapacityType.ON_DEMAND), GpuDriver.NONE)]
    assert_rejected(deploy(pools), "DcgmExporter(dcgm).pools[1].pool", "share its pool name")


def test_served_pool_without_the_gpu_label_is_rejected() -> None:
    good = aks_gpu_pool("t4", CapacityType.SPOT)
    broken = dataclasses.replace(good, labels={k: v for k, v in good.labels.items() if k != "nvidia.com/gpu.present"})
    assert_rejected(
        deploy([aks_system_pool(), broken]), "DcgmExporter(dcgm).pools[1].labels.nvidia.com/gpu.present", "never lands"
    )


# --- config --------------------------------------------------------------------------------------------


def azure_values(**extra: Any) -> dict[str, Any]:
    values = dict(stack_config("azure-dev"))
    values.update(extra)
    return values


def test_config_defaults_on_without_service_monitor() -> None:
    spec = config.parse(azure_values(), "eastus")
    assert spec.gpu_metrics == GpuMetricsSpec(enabled=True, service_monitor=False)
    spec = config.parse(azure_values(**{"gpupools:gpuMetrics": {"enabled": False, "serviceMonitor": True}}), "eastus")
    assert spec.gpu_metrics == GpuMetricsSpec(enabled=False, service_monitor=True)
    labelled = {"serviceMonitor": True, "serviceMonitorLabels": {"release": "kps"}}
    spec = config.parse(azure_values(**{"gpupools:gpuMetrics": labelled}), "eastus")
    assert dict(spec.gpu_metrics.service_monitor_labels) == {"release": "kps"}


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"enabled": "yes"}, "gpupools:gpuMetrics.enabled"),
        ({"serviceMonitor": 1}, "gpupools:gpuMetrics.serviceMonitor"),
        ({"enable": True}, "gpupools:gpuMetrics.enable"),
        ({"serviceMonitorLabels": {"release": "kps"}}, "gpupools:gpuMetrics.serviceMonitorLabels"),
        ({"serviceMonitor": True, "serviceMonitorLabels": {"release": 1}}, "gpupools:gpuMetrics.serviceMonitorLabels.release"),
        (
            {"serviceMonitor": True, "serviceMonitorLabels": {"bad key!": "x"}},
            "gpupools:gpuMetrics.serviceMonitorLabels.bad key!",
        ),
    ],
)
def test_bad_gpu_metrics_config_is_one_error_naming_the_path(value: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config.parse(azure_values(**{"gpupools:gpuMetrics": value}), "eastus")
    assert raised.value.path == path


# --- in every example stack --------------------------------------------------------------------------

STACKS = ("azure-dev", "azure-nap-dev", "aws-dev", "aws-karpenter-dev", "aws-training-dev")


@pytest.fixture
def recorded_pools(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[NodePoolInfo]]]:
    """The pools each ``DcgmExporter`` a stack builds is given (the stacks pass every pool of the cluster)."""
    calls: list[list[NodePoolInfo]] = []
    original = DcgmExporter.__init__

    def recording(self: DcgmExporter, name: str, pools: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(list(pools))
        original(self, name, pools, *args, **kwargs)

    monkeypatch.setattr(DcgmExporter, "__init__", recording)
    yield calls


def bottlerocket(stack: str) -> dict[str, Any]:
    """The stack with its last GPU pool on Bottlerocket NVIDIA (EKS only)."""
    pools = [dict(p) for p in stack_config(stack)["gpupools:gpuPools"]]
    pools[-1]["amiType"] = "BOTTLEROCKET_x86_64_NVIDIA"
    return {"gpupools:gpuPools": pools}


CASES = [(stack, None) for stack in STACKS] + [
    ("aws-dev", "bottlerocket"),
    ("aws-karpenter-dev", "bottlerocket"),
]


@pytest.mark.parametrize(("stack", "variant"), CASES, ids=[f"{s}{'+' + v if v else ''}" for s, v in CASES])
def test_every_example_stack_runs_one_exporter_on_each_served_node(
    stack: str, variant: str | None, recorded_pools: list[list[NodePoolInfo]]
) -> None:
    run = run_stack(stack, overrides=bottlerocket(stack) if variant else None)
    [pools] = recorded_pools
    roles = {p.role for p in pools}
    assert Role.SYSTEM in roles and Role.GPU in roles  # the whole cluster was passed, not a pre-filtered list
    if variant:
        assert any(p.role is Role.GPU and not p.needs_device_plugin for p in pools)
    daemon_sets = exporters(run)
    assert_one_exporter_per_served_node(daemon_sets, pools)
    version = stack_config(stack)["gpupools:cluster"].get("kubernetesVersion", "1.35")
    for manifest in [*daemon_sets, *manifests(run, SERVICE), *manifests(run, "kubernetes:core/v1:ConfigMap")]:
        validate_manifest(manifest, version)
    for daemon_set in daemon_sets:
        assert daemon_set["spec"]["template"]["spec"]["containers"][0]["image"] == (
            f"{DCGM_EXPORTER_IMAGE}:{DEFAULT_DCGM_EXPORTER_VERSION}"
        )


@pytest.mark.parametrize("stack", ["azure-dev", "aws-karpenter-dev"])
def test_gpu_metrics_off_registers_nothing_and_the_service_monitor_takes_its_labels(stack: str) -> None:
    run = run_stack(stack, overrides={"gpupools:gpuMetrics": {"enabled": False}})
    assert not exporters(run)
    assert not run.of_type("gpupools:index:DcgmExporter")
    labelled = {"serviceMonitor": True, "serviceMonitorLabels": {"release": "kube-prometheus-stack"}}
    on = run_stack(stack, overrides={"gpupools:gpuMetrics": labelled})
    [monitor] = [to_manifest(r) for r in on.of_type(SERVICE_MONITOR)]
    assert_valid_custom_resource(monitor)
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_adding_a_gpu_pool_leaves_every_existing_exporter_template_unchanged() -> None:
    """Issue 28, Done when: adding a GPU pool leaves every existing DaemonSet's pod template unchanged.
    One DaemonSet per pool, each naming only its own pool: the new pool gets its own."""
    before = {m["metadata"]["name"]: m["spec"]["template"] for m in exporters(deploy(aks_pools()).run)}
    added = [*aks_pools(), aks_gpu_pool("h100", CapacityType.SPOT, extra_taints=[EVICT])]
    after = {m["metadata"]["name"]: m["spec"]["template"] for m in exporters(deploy(added).run)}
    assert set(after) - set(before) == {"dcgm-exporter-h100"}
    assert {name: after[name] for name in before} == before
