"""NvidiaDevicePlugin: defaults, behaviour (lands on every served GPU node, nowhere else), errors."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from gpupools.conventions import (
    AKS_SPOT_TAINT,
    AKS_SYSTEM_TAINT,
    GPU_TAINT,
    CapacityType,
    Taint,
    TaintEffect,
    device_plugin_labels,
)
from gpupools.kubernetes import NvidiaDevicePlugin
from gpupools.pools import NodePoolInfo
from gpupools.specs import GpuDriver
from gpupools.testing.manifests import api_version, to_manifest
from gpupools.versions import DEFAULT_DEVICE_PLUGIN_VERSION, DEVICE_PLUGIN_IMAGE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
)

DEDICATED = Taint("dedicated", "vision", TaintEffect.NO_SCHEDULE)
EVICT = Taint("team", "research", TaintEffect.NO_EXECUTE)


def aks_pools() -> list[NodePoolInfo]:
    """An azure-dev-like cluster: system pool, T4 Spot + fallback with an extra taint, A100 Spot + fallback."""
    return [
        aks_system_pool(),
        aks_gpu_pool("t4", CapacityType.SPOT, extra_taints=[DEDICATED]),
        aks_gpu_pool("t4", CapacityType.ON_DEMAND, extra_taints=[DEDICATED]),
        aks_gpu_pool("a100", CapacityType.SPOT, size="Standard_NC24ads_A100_v4"),
        aks_gpu_pool("a100", CapacityType.ON_DEMAND, size="Standard_NC24ads_A100_v4"),
    ]


def eks_pools() -> list[NodePoolInfo]:
    """An aws-dev-like cluster: system group, per-zone T4 groups, and a Bottlerocket pool."""
    pools = [eks_system_group()]
    for zone in ("us-west-2a", "us-west-2b"):
        pools.append(eks_gpu_group("t4", CapacityType.SPOT, zone, extra_taints=[EVICT]))
        pools.append(eks_gpu_group("t4", CapacityType.ON_DEMAND, zone, extra_taints=[EVICT]))
        pools.append(eks_gpu_group("br", CapacityType.SPOT, zone, bottlerocket=True))
    return pools


def deploy(pools: list[NodePoolInfo], **kwargs: Any) -> ProviderRun:
    return run_with_provider(lambda opts: NvidiaDevicePlugin("gpu", pools, opts=opts, **kwargs))


def daemon_set(seen: ProviderRun) -> dict[str, Any]:
    [registration] = seen.run.of_type("kubernetes:apps/v1:DaemonSet")
    return to_manifest(registration)


def pod_spec(seen: ProviderRun) -> dict[str, Any]:
    spec: dict[str, Any] = daemon_set(seen)["spec"]["template"]["spec"]
    return spec


# --- defaults -------------------------------------------------------------------------------------


def test_daemon_set_matches_upstream_where_it_should() -> None:
    seen = deploy(aks_pools())
    manifest = daemon_set(seen)
    assert manifest["apiVersion"] == "apps/v1"
    assert manifest["metadata"]["name"] == "nvidia-device-plugin"
    assert manifest["metadata"]["namespace"] == "kube-system"
    spec = manifest["spec"]
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    pod = spec["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"
    [container] = pod["containers"]
    assert container["name"] == "nvidia-device-plugin-ctr"
    assert container["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["resources"] == {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
    [mount] = container["volumeMounts"]
    [volume] = pod["volumes"]
    assert mount["mountPath"] == "/var/lib/kubelet/device-plugins"
    assert volume["name"] == mount["name"]
    assert volume["hostPath"] == {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}


def test_fail_on_init_error_keeps_upstream_default() -> None:
    container = pod_spec(deploy(aks_pools()))["containers"][0]
    names = [env["name"] for env in container.get("env", [])]
    assert "FAIL_ON_INIT_ERROR" not in names


def test_labels_selector_and_service_account() -> None:
    seen = deploy(aks_pools())
    manifest = daemon_set(seen)
    labels = manifest["metadata"]["labels"]
    assert labels == {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": "gpu",
        "app.kubernetes.io/version": DEFAULT_DEVICE_PLUGIN_VERSION,
        "app.kubernetes.io/managed-by": "pulumi",
    }
    selector = manifest["spec"]["selector"]["matchLabels"]
    # The selector is immutable: it must not carry the version, or every upgrade would replace the DaemonSet.
    assert "app.kubernetes.io/version" not in selector
    assert selector.items() <= manifest["spec"]["template"]["metadata"]["labels"].items()

    [account] = seen.run.of_type("kubernetes:core/v1:ServiceAccount")
    account_manifest = to_manifest(account)
    assert account_manifest["automountServiceAccountToken"] is False
    assert account_manifest["metadata"]["namespace"] == "kube-system"
    pod = manifest["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account_manifest["metadata"]["name"]
    assert pod["automountServiceAccountToken"] is False
    ds = seen.run.named("gpu-daemonset")
    assert account.urn in ds.dependencies


def test_children_use_the_explicit_provider_and_parent() -> None:
    seen = deploy(aks_pools())
    [component] = seen.run.of_type("gpupools:index:NvidiaDevicePlugin")
    children = seen.run.children(component)
    assert sorted(c.type for c in children) == ["kubernetes:apps/v1:DaemonSet", "kubernetes:core/v1:ServiceAccount"]
    for child in children:
        assert child.provider == seen.provider_ref()
        assert "::default" not in child.provider


def test_version_and_namespace_are_configurable() -> None:
    seen = deploy(aks_pools(), version="v0.19.3", namespace="nvidia-device-plugin")
    manifest = daemon_set(seen)
    assert manifest["metadata"]["namespace"] == "nvidia-device-plugin"
    assert manifest["spec"]["template"]["spec"]["containers"][0]["image"] == f"{DEVICE_PLUGIN_IMAGE}:v0.19.3"
    assert manifest["metadata"]["labels"]["app.kubernetes.io/version"] == "v0.19.3"


def test_every_object_validates_strictly_at_every_supported_version() -> None:
    for pools in (aks_pools(), eks_pools()):
        seen = deploy(pools)
        objects = list(seen.run.kubernetes_objects())
        assert len(objects) == 2
        for registration in objects:
            validate_all_versions(to_manifest(registration))


def test_to_manifest_maps_type_tokens() -> None:
    assert api_version("kubernetes:apps/v1:DaemonSet") == "apps/v1"
    assert api_version("kubernetes:core/v1:ServiceAccount") == "v1"
    assert api_version("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole") == "rbac.authorization.k8s.io/v1"
    with pytest.raises(ValueError):
        api_version("kubernetes:helm.sh/v3:Release")
    with pytest.raises(ValueError):
        api_version("aws:eks/nodeGroup:NodeGroup")


# --- behaviour: tolerations -----------------------------------------------------------------------


@pytest.mark.parametrize("pools", [aks_pools(), eks_pools()], ids=["aks", "eks"])
def test_tolerates_every_taint_of_every_served_pool(pools: list[NodePoolInfo]) -> None:
    tolerations = pod_spec(deploy(pools))["tolerations"]
    for pool in pools:
        if pool.needs_device_plugin and pool.role.value == "gpu":
            assert untolerated(tolerations, pool.taints) == [], pool.name


def test_tolerations_cover_a_pool_added_later_with_a_new_taint() -> None:
    """Issue 28: the tolerations listed the served pools' taints, so a pool with a new taint changed
    the template (a restart of every GPU node's plugin) and a pool the list missed got no plugin."""
    tolerations = pod_spec(deploy(aks_pools()))["tolerations"]
    later = Taint("example.com/tier", "batch", TaintEffect.NO_EXECUTE)
    assert untolerated(tolerations, [later, AKS_SPOT_TAINT, GPU_TAINT]) == []


def test_the_system_pool_is_kept_off_by_the_affinity() -> None:
    """Tolerating everything is safe only because the affinity never selects a non-GPU node."""
    pod = pod_spec(deploy(aks_pools()))
    assert untolerated(pod["tolerations"], [AKS_SYSTEM_TAINT]) == []
    assert not affinity_matches(pod["affinity"], node_labels(aks_system_pool()))
    assert not affinity_matches(pod["affinity"], node_labels(eks_system_group()))


def test_component_attributes_match_what_was_registered() -> None:
    seen = deploy(eks_pools())
    plugin = seen.result
    assert plugin.tolerations == pod_spec(seen)["tolerations"]
    assert plugin.affinity == pod_spec(seen)["affinity"]
    assert {p.name for p in plugin.served_pools} == {p.name for p in eks_pools() if p.pool == "t4"}


# --- behaviour: affinity --------------------------------------------------------------------------


@pytest.mark.parametrize("pools", [aks_pools(), eks_pools()], ids=["aks", "eks"])
def test_affinity_selects_served_gpu_nodes_only(pools: list[NodePoolInfo]) -> None:
    affinity = pod_spec(deploy(pools))["affinity"]
    for pool in pools:
        served = pool.role.value == "gpu" and pool.needs_device_plugin
        assert affinity_matches(affinity, node_labels(pool)) is served, pool.name


def test_affinity_selects_a_served_pool_added_later_and_no_unlabelled_node() -> None:
    """Issue 28: the affinity listed pool names, so adding a pool rewrote the template."""
    affinity = pod_spec(deploy(aks_pools()))["affinity"]
    assert affinity_matches(affinity, node_labels(aks_gpu_pool("h100", CapacityType.SPOT)))
    external = aks_gpu_pool("ops", CapacityType.SPOT, extra_labels=device_plugin_labels(True, False))
    assert not affinity_matches(affinity, node_labels(external))
    assert not affinity_matches(affinity, {"kubernetes.io/os": "linux"})
    # A node of a served pool that somehow lost the GPU label is not a GPU node to the plugin.
    labels = node_labels(aks_gpu_pool("t4", CapacityType.SPOT))
    del labels["nvidia.com/gpu.present"]
    assert not affinity_matches(affinity, labels)


def test_affinity_is_a_single_required_term() -> None:
    affinity = pod_spec(deploy(aks_pools()))["affinity"]
    required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    [term] = required["nodeSelectorTerms"]
    by_key = {r["key"]: r for r in term["matchExpressions"]}
    assert "gpupools.io/pool" not in by_key
    assert by_key["gpupools.io/role"]["values"] == ["gpu"]
    assert by_key["nvidia.com/gpu.present"]["values"] == ["true"]
    assert by_key["gpupools.io/device-plugin"] == {
        "key": "gpupools.io/device-plugin",
        "operator": "NotIn",
        "values": ["external"],
    }


def test_adding_a_gpu_pool_leaves_the_pod_template_unchanged() -> None:
    """Issue 28, Done when: "Adding a GPU pool leaves every existing DaemonSet's pod template unchanged"
    (here the plugin's; the DCGM exporter's in test_dcgm_exporter). A pool with a new extra taint and
    an unserved (gpuDriver: none) pool are added; neither changes the template."""
    before = daemon_set(deploy(aks_pools()))["spec"]["template"]
    added = [
        *aks_pools(),
        aks_gpu_pool("h100", CapacityType.SPOT, extra_taints=[Taint("example.com/tier", "x", TaintEffect.NO_SCHEDULE)]),
        with_driver(aks_gpu_pool("ops", CapacityType.ON_DEMAND), GpuDriver.NONE),
    ]
    assert daemon_set(deploy(added))["spec"]["template"] == before


# --- property -------------------------------------------------------------------------------------

taint_keys = st.sampled_from(["dedicated", "team", "example.com/tier", "workload"])
taint_values = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
effects = st.sampled_from(list(TaintEffect))
extra_taints = st.lists(st.builds(Taint, taint_keys, taint_values, effects), max_size=3, unique_by=lambda t: (t.key, t.effect))


def with_driver(pool: NodePoolInfo, driver: GpuDriver) -> NodePoolInfo:
    """``pool`` as a component builds it for ``driver``: ``none`` also clears ``needs_device_plugin``
    (``PoolSpec.needs_device_plugin``); ``managed`` keeps it, so ``is_served`` alone must leave it out."""
    needs = pool.needs_device_plugin and driver is not GpuDriver.NONE
    served = needs and driver is GpuDriver.INSTALL
    labels = {k: v for k, v in pool.labels.items() if k != "gpupools.io/device-plugin"}
    labels.update(device_plugin_labels(True, served))
    return dataclasses.replace(pool, gpu_driver=driver, needs_device_plugin=needs, labels=labels)


@st.composite
def clusters(draw: st.DrawFn) -> list[NodePoolInfo]:
    """A cluster on one cloud: its system pool plus 1-4 GPU pool entries, each with Spot and/or
    on-demand pools, random extra taints, some EKS entries on Bottlerocket, each entry with a
    random ``gpuDriver``."""
    cloud = draw(st.sampled_from(["aks", "eks"]))
    names = draw(st.lists(st.from_regex(r"\A[a-z][a-z0-9]{0,5}\Z"), min_size=1, max_size=4, unique=True))
    pools = [aks_system_pool() if cloud == "aks" else eks_system_group()]
    for name in names:
        taints = draw(extra_taints)
        capacities = draw(st.sampled_from([[CapacityType.SPOT], [CapacityType.ON_DEMAND], list(CapacityType)]))
        bottlerocket = cloud == "eks" and draw(st.booleans())
        driver = draw(st.sampled_from(list(GpuDriver)))
        for capacity in capacities:
            if cloud == "aks":
                pools.append(with_driver(aks_gpu_pool(name, capacity, extra_taints=taints), driver))
            else:
                for zone in draw(st.lists(st.sampled_from(["us-west-2a", "us-west-2b", "us-west-2c"]), min_size=1, unique=True)):
                    group = eks_gpu_group(name, capacity, zone, extra_taints=taints, bottlerocket=bottlerocket)
                    pools.append(with_driver(group, driver))
    return draw(st.permutations(pools))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_property_lands_on_every_served_node_and_nowhere_else(pools: list[NodePoolInfo]) -> None:
    seen = deploy(pools)
    served = [p for p in pools if p.role.value == "gpu" and p.needs_device_plugin and p.gpu_driver is GpuDriver.INSTALL]
    if not served:
        assert seen.error is not None and seen.ours == []
        return
    assert seen.error is None
    pod = pod_spec(seen)
    for pool in pools:
        lands = affinity_matches(pod["affinity"], node_labels(pool)) and not untolerated(pod["tolerations"], pool.taints)
        assert lands is (pool in served), pool.name
    # The same template whatever the pools (issue 28): it names no pool.
    assert pod == pod_spec(deploy([p for p in served[:1]]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_property_rendering_does_not_depend_on_pool_order(pools: list[NodePoolInfo]) -> None:
    first = deploy(pools)
    second = deploy(list(reversed(pools)))
    if first.error is not None:
        assert second.error is not None
        return
    assert daemon_set(first) == daemon_set(second)


# --- errors ---------------------------------------------------------------------------------------


def assert_rejected(seen: ProviderRun, path: str, rule: str) -> None:
    assert seen.error is not None, "expected a ConfigError"
    assert seen.error.path == path
    assert rule in seen.error.rule
    assert str(seen.error).startswith(f"{path}: ")
    assert seen.ours == [], [r.type for r in seen.ours]


def test_no_served_pool_is_rejected() -> None:
    pools = [eks_system_group(), eks_gpu_group("br", CapacityType.SPOT, bottlerocket=True)]
    assert_rejected(deploy(pools), "NvidiaDevicePlugin(gpu).pools", "at least one GPU pool")
    assert_rejected(deploy([]), "NvidiaDevicePlugin(gpu).pools", "at least one GPU pool")


@pytest.mark.parametrize("version", ["0.20.0", "latest", "v0.20", "v0.20.0-rc.1", ""])
def test_bad_version_tag_is_rejected(version: str) -> None:
    assert_rejected(deploy(aks_pools(), version=version), "NvidiaDevicePlugin(gpu).version", "release tag")


def test_unserved_pool_without_the_external_label_is_rejected() -> None:
    """Selection is by label now: a Bottlerocket group that lacks ``gpupools.io/device-plugin=external``
    would get a second plugin, so it is an error naming the label."""
    group = eks_gpu_group("br", CapacityType.ON_DEMAND, bottlerocket=True)
    unlabelled = dataclasses.replace(group, labels={k: v for k, v in group.labels.items() if k != "gpupools.io/device-plugin"})
    pools = [eks_gpu_group("t4", CapacityType.SPOT), unlabelled]
    assert_rejected(deploy(pools), "NvidiaDevicePlugin(gpu).pools[1].labels.gpupools.io/device-plugin", "unserved")


def test_served_pool_without_the_gpu_label_is_rejected() -> None:
    good = aks_gpu_pool("t4", CapacityType.SPOT)
    labels = {k: v for k, v in good.labels.items() if k != "nvidia.com/gpu.present"}
    broken = NodePoolInfo(**{**good.__dict__, "labels": labels})
    assert_rejected(
        deploy([aks_system_pool(), broken]), "NvidiaDevicePlugin(gpu).pools[1].labels.nvidia.com/gpu.present", "selects GPU nodes"
    )


def test_gpu_taint_is_the_convention() -> None:
    # Guard for the tests above: every example GPU pool carries the GPU taint.
    assert all(GPU_TAINT in p.taints for p in aks_pools() + eks_pools() if p.role.value == "gpu")
