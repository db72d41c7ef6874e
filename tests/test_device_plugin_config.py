"""The device plugin with shared pools: its configs load in the plugin, each node selects its own, and
only what sharing needs is added (API access for the config-manager, SYS_ADMIN for MIG, the MPS daemon).

The configs are checked with ``tests/device_plugin_schema.py``: a schema check written from
NVIDIA/k8s-device-plugin v0.20.0 (commit 1b826acc6af3079d8923bac395c3124b8861a9a6)
``api/config/v1/config.go``, ``flags.go``, ``replicas.go``, ``resources.go``, ``sharing.go`` and
``cmd/nvidia-device-plugin/main.go`` (``validateFlags``); the file says which rule comes from where.
The version it was written for is the project's pin, asserted below.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import yaml
from gpupools.conventions import CapacityType
from gpupools.kubernetes import NvidiaDevicePlugin
from gpupools.kubernetes.device_plugin_config import render_config
from gpupools.pools import NodePoolInfo
from gpupools.specs import SharingMode, SharingSpec
from gpupools.testing.manifests import to_manifest
from gpupools.versions import DEFAULT_DEVICE_PLUGIN_VERSION
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.device_plugin_schema import PluginConfigError, check_config, check_config_file
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

TS4 = SharingSpec(SharingMode.TIME_SLICING, replicas=4)
MPS8 = SharingSpec(SharingMode.MPS, replicas=8)
MIG1G = SharingSpec(SharingMode.MIG, mig_profile="MIG1g")
CONFIG_LABEL = "nvidia.com/device-plugin.config"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def test_the_schema_check_is_for_the_pinned_plugin() -> None:
    assert DEFAULT_DEVICE_PLUGIN_VERSION == "v0.20.0", (
        "re-read api/config/v1 at the new pin and update tests/device_plugin_schema.py"
    )


def shared_aks() -> list[NodePoolInfo]:
    """System pool, an unshared T4 pool, a time-sliced T4 pool, an MPS T4 pool, a MIG A100 pool."""
    a100 = "Standard_NC24ads_A100_v4"
    return [
        aks_system_pool(),
        aks_gpu_pool("t4", CapacityType.SPOT),
        aks_gpu_pool("ts", CapacityType.SPOT, sharing=TS4),
        aks_gpu_pool("ts", CapacityType.ON_DEMAND, sharing=TS4),
        aks_gpu_pool("mps", CapacityType.SPOT, sharing=MPS8),
        aks_gpu_pool("mig", CapacityType.SPOT, size=a100, sharing=MIG1G),
    ]


def deploy(pools: list[NodePoolInfo]) -> ProviderRun:
    seen = run_with_provider(lambda opts: NvidiaDevicePlugin("gpu", pools, opts=opts))
    assert seen.error is None, seen.error
    return seen


def objects(seen: ProviderRun) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["kind"], m["metadata"]["name"]): m for m in (to_manifest(r) for r in seen.run.kubernetes_objects())}


def plugin_pod(seen: ProviderRun) -> dict[str, Any]:
    pod: dict[str, Any] = objects(seen)[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]
    return pod


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [c for c in [*pod.get("initContainers", []), *pod["containers"]] if c["name"] == name]
    return found


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


# --- the configs load in the plugin ----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from([SharingMode.TIME_SLICING, SharingMode.MPS]), replicas=st.integers(2, 48))
def test_every_replicated_config_loads_and_names_its_replicas(mode: SharingMode, replicas: int) -> None:
    text = yaml.safe_dump(render_config(SharingSpec(mode, replicas=replicas)))
    loaded = check_config_file(text)
    assert loaded["strategy"] == mode.value
    body = yaml.safe_load(text)["sharing"][mode.value]
    assert body["resources"] == [{"name": "nvidia.com/gpu", "replicas": replicas}]
    assert body["renameByDefault"] is False  # pods keep requesting nvidia.com/gpu
    assert body["failRequestsGreaterThanOne"] is True
    assert loaded["flags"]["migStrategy"] == "none"


def test_default_and_mig_configs_load_with_their_mig_strategy() -> None:
    assert check_config_file(yaml.safe_dump(render_config(SharingSpec())))["flags"]["migStrategy"] == "none"
    mig = check_config_file(yaml.safe_dump(render_config(MIG1G)))
    assert mig["flags"]["migStrategy"] == "single" and mig["strategy"] == "none"


def test_configmap_holds_default_and_one_config_per_setting_each_loading() -> None:
    seen = deploy(shared_aks())
    config_map = objects(seen)[("ConfigMap", "nvidia-device-plugin-configs")]
    assert list(config_map["data"]) == ["default", "mig-single", "mps-8", "time-slicing-4"]
    for text in config_map["data"].values():
        assert yaml.safe_load(text)["version"] == "v1"
        check_config_file(text)
    assert seen.result.configs == {k: yaml.safe_load(v) for k, v in config_map["data"].items()}


# The checker must be able to fail: each of these is refused by the plugin (or silently not applied).
BROKEN: list[tuple[str, dict[str, Any], str]] = [
    ("replicas-one", {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}}, ">= 2"),
    ("replicas-missing", {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu"}]}}}, "no replicas"),
    ("replicas-text", {"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": "4"}]}}}, "integer"),
    ("no-resources", {"sharing": {"timeSlicing": {"renameByDefault": False}}}, "no resources"),
    ("empty-resources", {"sharing": {"timeSlicing": {"resources": []}}}, "no resources"),
    ("no-name", {"sharing": {"timeSlicing": {"resources": [{"replicas": 4}]}}}, "no resource name"),
    ("long-name", {"sharing": {"timeSlicing": {"resources": [{"name": "x" * 60, "replicas": 4}]}}}, "63 characters"),
    ("version", {"version": "v2"}, "unknown version"),
    ("mig-strategy", {"flags": {"migStrategy": "all"}}, "migStrategy"),
    ("bool-as-text", {"flags": {"failOnInitError": "true"}}, "boolean"),
    ("list-strategy", {"flags": {"plugin": {"deviceListStrategy": ["envvar", "nvlink"]}}}, "deviceListStrategy"),
    ("typo", {"sharing": {"timeslicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}, "not a field"),
    (
        "both-modes",
        {
            "flags": {"mpsRoot": "/run/nvidia/mps"},
            "sharing": {
                "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                "mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
            },
        },
        "mutually exclusive",
    ),
    ("mps-no-root", {"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}, "mps-root"),
    (
        "mps-mixed",
        {
            "flags": {"migStrategy": "mixed", "mpsRoot": "/run/nvidia/mps"},
            "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
        },
        "mixed",
    ),
    (
        "mps-mig-resource",
        {"flags": {"mpsRoot": "/m"}, "sharing": {"mps": {"resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}]}}},
        "full GPUs",
    ),
    ("rename", {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "rename": "x", "replicas": 2}]}}}, "ignored"),
    ("devices", {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "devices": 2, "replicas": 2}]}}}, "ignored"),
    ("bad-devices", {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "devices": "some", "replicas": 2}]}}}, "'all'"),
    ("imex", {"imex": {"channelIDs": [1]}}, "[] or [0]"),
    ("duration", {"flags": {"gfd": {"sleepInterval": "soon"}}}, "duration"),
]


@pytest.mark.parametrize(("case", "document", "fragment"), BROKEN, ids=[c[0] for c in BROKEN])
def test_the_schema_check_refuses_what_the_plugin_refuses(case: str, document: dict[str, Any], fragment: str) -> None:
    with pytest.raises(PluginConfigError) as caught:
        check_config({"version": "v1", **document})
    assert fragment in str(caught.value), f"{case}: {caught.value}"


def test_the_schema_check_accepts_upstreams_own_examples() -> None:
    """The README's config-file example and its time-slicing example (v0.20.0 README.md)."""
    check_config_file(
        'version: v1\nflags:\n  migStrategy: "none"\n  failOnInitError: true\n  nvidiaDriverRoot: "/"\n'
        '  plugin:\n    passDeviceSpecs: false\n    deviceListStrategy: "envvar"\n    deviceIDStrategy: "uuid"\n'
    )
    check_config_file("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n")
    check_config_file(
        "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n"
    )


# --- per-node selection -----------------------------------------------------------------------------


def test_each_node_selects_the_config_of_its_pool() -> None:
    """The config-manager model: the node label names a ConfigMap key; no label means DEFAULT_CONFIG."""
    pools = shared_aks()
    seen = deploy(pools)
    data = objects(seen)[("ConfigMap", "nvidia-device-plugin-configs")]["data"]
    init = env(container(plugin_pod(seen), "nvidia-device-plugin-init"))
    expected = {"t4": "default", "ts": "time-slicing-4", "mps": "mps-8", "mig": "mig-single"}
    for pool in pools[1:]:
        selected = node_labels(pool).get(init["NODE_LABEL"], init["DEFAULT_CONFIG"])
        assert selected == expected[pool.pool] and selected in data


def test_daemonset_mounts_the_configs_and_starts_the_plugin_on_the_selected_file() -> None:
    pod = plugin_pod(deploy(shared_aks()))
    plugin = container(pod, "nvidia-device-plugin-ctr")
    init = container(pod, "nvidia-device-plugin-init")
    sidecar = container(pod, "nvidia-device-plugin-sidecar")
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["available-configs"]["configMap"]["name"] == "nvidia-device-plugin-configs"
    assert "emptyDir" in volumes["config"]
    assert env(plugin) == {"CONFIG_FILE": env(init)["CONFIG_FILE_DST"], "NVIDIA_MIG_MONITOR_DEVICES": "all"}
    assert "MIG_STRATEGY" not in env(plugin)  # an environment flag would override every node's config
    assert env(init)["ONESHOT"] == "true" and env(init)["SEND_SIGNAL"] == "false"
    assert env(sidecar)["ONESHOT"] == "false" and env(sidecar)["SEND_SIGNAL"] == "true" and env(sidecar)["SIGNAL"] == "1"
    # The config-manager signals the process whose first command-line word is PROCESS_TO_SIGNAL.
    assert plugin["command"][0] == env(sidecar)["PROCESS_TO_SIGNAL"] == "nvidia-device-plugin"
    assert pod["shareProcessNamespace"] is True
    for c in (init, sidecar):
        assert c["command"] == ["config-manager"] and c["image"] == plugin["image"]
        assert env(c)["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        assert mounts["/available-configs"] == "available-configs" and mounts["/config"] == "config"
    assert {m["mountPath"] for m in plugin["volumeMounts"]} >= {
        "/config",
        "/available-configs",
        "/var/lib/kubelet/device-plugins",
    }


def test_a_config_change_rolls_the_pods() -> None:
    seen = deploy(shared_aks())
    data = objects(seen)[("ConfigMap", "nvidia-device-plugin-configs")]["data"]
    annotations = objects(seen)[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["checksum/config"] == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    other = deploy([aks_system_pool(), aks_gpu_pool("ts", CapacityType.SPOT, sharing=SharingSpec(SharingMode.TIME_SLICING, 8))])
    other_annotations = objects(other)[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["metadata"]["annotations"]
    assert other_annotations["checksum/config"] != annotations["checksum/config"]


# --- only what sharing needs ------------------------------------------------------------------------


def test_without_sharing_there_is_no_configmap_no_api_access_and_no_config_manager() -> None:
    seen = deploy([aks_system_pool(), aks_gpu_pool("t4"), aks_gpu_pool("t4", CapacityType.ON_DEMAND)])
    kinds = sorted(kind for kind, _ in objects(seen))
    assert kinds == ["DaemonSet", "ServiceAccount"]
    pod = plugin_pod(seen)
    assert "initContainers" not in pod and len(pod["containers"]) == 1 and "shareProcessNamespace" not in pod
    assert "env" not in pod["containers"][0]
    assert seen.result.configs == {} and seen.result.config_map is None


def test_only_the_config_manager_gets_api_credentials_and_only_to_read_nodes() -> None:
    seen = deploy(shared_aks())
    found = objects(seen)
    pod = plugin_pod(seen)
    assert pod["automountServiceAccountToken"] is False
    [api] = [v for v in pod["volumes"] if "projected" in v]
    sources = api["projected"]["sources"]
    assert sources[0]["serviceAccountToken"]["path"] == "token"
    assert {"key": "ca.crt", "path": "ca.crt"} in sources[1]["configMap"]["items"]
    for c in [*pod["initContainers"], *pod["containers"]]:
        mounted = {m["mountPath"]: m for m in c["volumeMounts"]}
        if c["command"] == ["config-manager"]:
            assert mounted[TOKEN_DIR]["name"] == api["name"] and mounted[TOKEN_DIR]["readOnly"] is True
        else:
            assert TOKEN_DIR not in mounted, c["name"]
    role = found[("ClusterRole", "nvidia-device-plugin-config-manager")]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]
    binding = found[("ClusterRoleBinding", "nvidia-device-plugin-config-manager")]
    account = found[("ServiceAccount", "nvidia-device-plugin")]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    ]
    assert pod["serviceAccountName"] == account["metadata"]["name"]


def test_sys_admin_and_the_mig_monitor_only_with_a_mig_pool() -> None:
    with_mig = container(plugin_pod(deploy(shared_aks())), "nvidia-device-plugin-ctr")
    assert with_mig["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    assert env(with_mig)["NVIDIA_MIG_MONITOR_DEVICES"] == "all"
    without = container(plugin_pod(deploy([aks_system_pool(), aks_gpu_pool("ts", sharing=TS4)])), "nvidia-device-plugin-ctr")
    assert without["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "NVIDIA_MIG_MONITOR_DEVICES" not in env(without)


def test_mps_daemon_runs_on_mps_nodes_only_and_tolerates_them() -> None:
    pools = shared_aks()
    seen = deploy(pools)
    daemon = objects(seen)[("DaemonSet", "nvidia-device-plugin-mps-control-daemon")]
    pod = daemon["spec"]["template"]["spec"]
    for pool in pools:
        runs = affinity_matches(pod["affinity"], node_labels(pool)) and not untolerated(pod["tolerations"], pool.taints)
        assert runs is (pool.sharing.mode is SharingMode.MPS), pool.name
    plugin_selector = objects(seen)[("DaemonSet", "nvidia-device-plugin")]["spec"]["selector"]["matchLabels"]
    assert daemon["spec"]["selector"]["matchLabels"] != plugin_selector  # two DaemonSets must not claim each other's pods
    main = container(pod, "mps-control-daemon-ctr")
    sidecar = container(pod, "mps-control-daemon-sidecar")
    assert main["command"][0] == env(sidecar)["PROCESS_TO_SIGNAL"]
    assert env(main)["CONFIG_FILE"] == env(container(pod, "mps-control-daemon-init"))["CONFIG_FILE_DST"]
    mount_shm = container(pod, "mps-control-daemon-mounts")
    assert mount_shm["command"] == ["mps-control-daemon", "mount-shm"]
    assert mount_shm["volumeMounts"] == [{"name": "mps-root", "mountPath": "/mps", "mountPropagation": "Bidirectional"}]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    plugin = plugin_pod(seen)
    plugin_paths = {v["name"]: v["hostPath"]["path"] for v in plugin["volumes"] if "hostPath" in v}
    # The plugin and the daemon see the same host MPS root, which the MPS configs name as mpsRoot.
    assert (
        host_paths["mps-root"]
        == plugin_paths["mps-root"]
        == yaml.safe_load(objects(seen)[("ConfigMap", "nvidia-device-plugin-configs")]["data"]["mps-8"])["flags"]["mpsRoot"]
    )
    assert {m["mountPath"] for m in container(plugin, "nvidia-device-plugin-ctr")["volumeMounts"]} >= {"/mps", "/dev/shm"}


def test_no_mps_daemon_without_an_mps_pool() -> None:
    seen = deploy([eks_system_group(), eks_gpu_group("ts", sharing=TS4)])
    assert ("DaemonSet", "nvidia-device-plugin-mps-control-daemon") not in objects(seen)
    assert seen.result.mps_daemon_set is None


def test_every_object_validates_strictly_at_every_supported_version() -> None:
    for pools in (shared_aks(), [eks_system_group(), eks_gpu_group("ts", sharing=TS4), eks_gpu_group("mps", sharing=MPS8)]):
        found = objects(deploy(pools))
        assert ("ConfigMap", "nvidia-device-plugin-configs") in found
        for manifest in found.values():
            validate_all_versions(manifest)


# --- property ---------------------------------------------------------------------------------------

sharings = st.one_of(
    st.just(SharingSpec()),
    st.builds(SharingSpec, st.just(SharingMode.TIME_SLICING), st.integers(2, 48)),
    st.builds(SharingSpec, st.just(SharingMode.MPS), st.integers(2, 48)),
)


@st.composite
def shared_clusters(draw: st.DrawFn) -> list[NodePoolInfo]:
    """A cluster on one cloud with 1-4 GPU pool entries, each with its own sharing (MIG on AKS A100s)."""
    cloud = draw(st.sampled_from(["aks", "eks"]))
    names = draw(st.lists(st.from_regex(r"\A[a-z][a-z0-9]{0,5}\Z"), min_size=1, max_size=4, unique=True))
    pools = [aks_system_pool() if cloud == "aks" else eks_system_group()]
    for name in names:
        mig = cloud == "aks" and draw(st.booleans())
        sharing = MIG1G if mig else draw(sharings)
        for capacity in draw(st.sampled_from([[CapacityType.SPOT], list(CapacityType)])):
            if cloud == "aks":
                size = "Standard_NC24ads_A100_v4" if mig else "Standard_NC4as_T4_v3"
                pools.append(aks_gpu_pool(name, capacity, size=size, sharing=sharing))
            else:
                pools.append(eks_gpu_group(name, capacity, sharing=sharing))
    return draw(st.permutations(pools))


@settings(max_examples=30, deadline=None)
@given(shared_clusters())
def test_property_every_node_gets_a_loadable_config_and_mps_nodes_get_the_daemon(pools: list[NodePoolInfo]) -> None:
    seen = deploy(pools)
    found = objects(seen)
    gpu_pools = [p for p in pools if p.role.value == "gpu"]
    if not any(p.sharing.shared for p in gpu_pools):
        assert ("ConfigMap", "nvidia-device-plugin-configs") not in found
        return
    data = found[("ConfigMap", "nvidia-device-plugin-configs")]["data"]
    init = env(container(plugin_pod(seen), "nvidia-device-plugin-init"))
    mps_pod = (
        found.get(("DaemonSet", "nvidia-device-plugin-mps-control-daemon"), {}).get("spec", {}).get("template", {}).get("spec")
    )
    for pool in gpu_pools:
        selected = node_labels(pool).get(init["NODE_LABEL"], init["DEFAULT_CONFIG"])
        loaded = check_config_file(data[selected])
        expected = {SharingMode.NONE: "none", SharingMode.MIG: "none"}.get(pool.sharing.mode, pool.sharing.mode.value)
        assert loaded["strategy"] == expected, pool.name
        on_mps = mps_pod is not None and affinity_matches(mps_pod["affinity"], node_labels(pool))
        assert on_mps is (pool.sharing.mode is SharingMode.MPS), pool.name
    assert found == objects(deploy(list(reversed(pools))))
