"""The azure-dev stack on the mock runtime: exactly what AKS (and the cluster) would receive.

Expected values come from the stack file, the AKS rules in the project's reference notes and the
SDK's own enums, never from the output under test. One test per applicable pitfall of the AKS
notes' "known pain points" section is named ``test_pitfall_*``.
"""

from __future__ import annotations

import copy
import re
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.conventions import (
    AKS_SPOT_LABEL,
    AKS_SPOT_TAINT,
    AKS_SYSTEM_TAINT,
    CAPACITY_TYPE_LABEL,
    GPU_TAINT,
    POOL_LABEL,
    ROLE_LABEL,
    Taint,
    TaintEffect,
)
from gpupools.errors import ConfigError
from gpupools.testing import Registration, Run, run_stack, stack_config
from gpupools.testing.manifests import to_manifest
from pulumi_azure_native import containerservice

from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, untolerated, validate_manifest

STACK = "azure-dev"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AKS_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
TAINT = re.compile(r"^(?P<key>[^=]+)=(?P<value>[^:]+):(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$")
SPOT = containerservice.ScaleSetPriority.SPOT.value
REGULAR = containerservice.ScaleSetPriority.REGULAR.value
CONFIG = stack_config(STACK)


@pytest.fixture(scope="module")
def run() -> Run:
    return example_run(STACK)


def gpu_config() -> list[dict[str, Any]]:
    """The stack file's gpuPools entries (a fresh copy to modify)."""
    pools: list[dict[str, Any]] = copy.deepcopy(CONFIG["gpupools:gpuPools"])
    return pools


def with_pools(pools: list[dict[str, Any]]) -> Run:
    return run_stack(STACK, overrides={"gpupools:gpuPools": pools})


def cpu_config() -> list[dict[str, Any]]:
    """The stack file's cpuPools entries."""
    return copy.deepcopy(CONFIG.get("gpupools:cpuPools", []))


def agent_pools(run: Run, gpu_only: bool = True) -> list[Registration]:
    """The AgentPools in the order the stack chains them: per gpuPools entry (then, with
    ``gpu_only=False``, per cpuPools entry), Spot then fallback."""
    cluster = CONFIG["gpupools:cluster"]["name"]
    entries = gpu_config() + ([] if gpu_only else cpu_config())
    everything = gpu_config() + cpu_config()
    order = [f"{cluster}-{e['name']}-{kind}" for e in everything for kind in ("spot", "ondemand")]
    pools = run.of_type(AGENT_POOL)
    assert sorted(p.name for p in pools) == sorted(order)
    wanted = {f"{cluster}-{e['name']}-{kind}" for e in entries for kind in ("spot", "ondemand")}
    return sorted((p for p in pools if p.name in wanted), key=lambda p: order.index(p.name))


def spot_pools(run: Run) -> list[Registration]:
    return [p for p in agent_pools(run) if p.inputs["scaleSetPriority"] == SPOT]


def regular_pools(run: Run) -> list[Registration]:
    return [p for p in agent_pools(run) if p.inputs["scaleSetPriority"] == REGULAR]


def managed_cluster(run: Run) -> Registration:
    [cluster] = run.of_type(MANAGED_CLUSTER)
    return cluster


def system_profile(run: Run) -> dict[str, Any]:
    [profile] = managed_cluster(run).inputs["agentPoolProfiles"]
    return dict(profile)


def taints_of(inputs: dict[str, Any]) -> list[Taint]:
    """Parse AKS ``nodeTaints`` strings (``key=value:Effect``) independently of the code under test."""
    parsed = []
    for text in inputs.get("nodeTaints", []):
        match = TAINT.match(text)
        assert match, f"not an AKS taint string: {text}"
        parsed.append(Taint(match["key"], match["value"], TaintEffect(match["effect"])))
    return parsed


def node_labels(pool: Registration) -> dict[str, str]:
    """The labels a node of this AgentPool carries: its declared labels plus AKS's own."""
    return {
        "kubernetes.io/os": "linux",
        "kubernetes.azure.com/agentpool": pool.inputs["agentPoolName"],
        "kubernetes.azure.com/mode": pool.inputs["mode"].lower(),
        **pool.inputs.get("nodeLabels", {}),
    }


def schedulable(pod: dict[str, Any], labels: dict[str, str]) -> bool:
    """A pod's nodeSelector (every pair must match) and required node affinity, against node labels."""
    selector = pod.get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items()) and affinity_matches(pod.get("affinity"), labels)


def transitive_dependencies(run: Run, registration: Registration) -> set[str]:
    seen: set[str] = set()
    pending = list(registration.dependencies)
    while pending:
        urn = pending.pop()
        if urn in seen:
            continue
        seen.add(urn)
        pending.extend(run.by_urn(urn).dependencies)
    return seen


# --- the cluster ------------------------------------------------------------------------------------


def test_one_managed_cluster_with_exactly_one_system_pool(run: Run) -> None:
    profiles = managed_cluster(run).inputs["agentPoolProfiles"]
    assert len(profiles) == 1
    [system] = profiles
    system_config = CONFIG["gpupools:systemPool"]
    assert system["mode"] == containerservice.AgentPoolMode.SYSTEM.value
    assert system["scaleSetPriority"] == REGULAR
    assert taints_of(system) == [AKS_SYSTEM_TAINT]
    assert system["enableAutoScaling"] is True
    assert system["minCount"] == system_config["minSize"] >= 2
    assert system["maxCount"] == system_config["maxSize"]
    assert system["count"] == system["minCount"]
    assert system["vmSize"] == system_config["instanceTypes"][0]
    assert sorted(system["availabilityZones"]) == sorted(CONFIG["gpupools:cluster"]["zones"])
    assert system["nodeLabels"] == {POOL_LABEL: "system", ROLE_LABEL: "system", CAPACITY_TYPE_LABEL: "on-demand"}
    assert system["vnetSubnetID"].endswith("/subnets/nodes")


def test_entra_id_azure_rbac_local_accounts_oidc_and_workload_identity(run: Run) -> None:
    inputs = managed_cluster(run).inputs
    assert inputs["aadProfile"]["managed"] is True
    assert inputs["aadProfile"]["enableAzureRBAC"] is True
    assert inputs["disableLocalAccounts"] is (not CONFIG["gpupools:cluster"]["allowLocalAccounts"])
    assert inputs["disableLocalAccounts"] is True
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["securityProfile"]["workloadIdentity"] == {"enabled": True}
    assert inputs["identity"]["type"] == containerservice.ResourceIdentityType.USER_ASSIGNED.value


def test_network_profile_is_azure_cni_overlay_clear_of_the_node_network(run: Run) -> None:
    import ipaddress

    profile = managed_cluster(run).inputs["networkProfile"]
    assert profile["networkPlugin"] == containerservice.NetworkPlugin.AZURE.value
    assert profile["networkPluginMode"] == containerservice.NetworkPluginMode.OVERLAY.value
    assert profile["outboundType"] == containerservice.OutboundType.LOAD_BALANCER.value
    assert profile["loadBalancerSku"] == containerservice.LoadBalancerSku.STANDARD.value
    nodes = ipaddress.ip_network(CONFIG["gpupools:network"]["cidr"])
    pods, services = ipaddress.ip_network(profile["podCidr"]), ipaddress.ip_network(profile["serviceCidr"])
    assert not nodes.overlaps(pods) and not nodes.overlaps(services) and not pods.overlaps(services)
    assert ipaddress.ip_address(profile["dnsServiceIP"]) in services


def test_autoscaler_profile_uses_priority_expander_and_configured_tuning(run: Run) -> None:
    profile = managed_cluster(run).inputs["autoScalerProfile"]
    assert profile["expander"] == containerservice.Expander.PRIORITY.value
    assert profile["maxNodeProvisionTime"] == CONFIG["gpupools:autoscaler"]["maxNodeProvisionTime"]
    assert profile["scaleDownUnneededTime"] == CONFIG["gpupools:autoscaler"]["scaleDownUnneededTime"]
    for key, value in profile.items():
        assert isinstance(value, (str, bool)), f"{key} must be a string or boolean, as AKS echoes it"
        if isinstance(value, str):
            assert re.fullmatch(r"(0|[1-9]\d*)([sm])?|0\.\d+|true|false|priority", value), f"{key}={value}"


def test_no_public_node_ips_anywhere(run: Run) -> None:
    assert system_profile(run)["enableNodePublicIP"] is False
    assert all(p.inputs["enableNodePublicIP"] is False for p in agent_pools(run, gpu_only=False))


def test_deployer_gets_aks_rbac_cluster_admin_on_the_cluster(run: Run) -> None:
    cluster = managed_cluster(run)
    [admin] = [r for r in run.of_type("azure-native:authorization:RoleAssignment") if r.name.endswith("deployer-cluster-admin")]
    assert admin.inputs["roleDefinitionId"].endswith(
        "/providers/Microsoft.Authorization/roleDefinitions/b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
    )
    assert admin.inputs["scope"].endswith("/managedClusters/" + CONFIG["gpupools:cluster"]["name"])
    assert admin.inputs["principalId"]  # the deploying principal's object ID (getClientConfig)
    assert cluster.urn in admin.dependencies


def test_kubeconfig_output_is_secret_and_provider_has_cluster_identifier(run: Run) -> None:
    assert "kubeconfig" in run.secret_outputs
    assert run.outputs["clusterName"] == CONFIG["gpupools:cluster"]["name"]
    [provider] = run.of_type("pulumi:providers:kubernetes")
    assert "kubeconfig" in provider.secret_paths
    assert provider.inputs["clusterIdentifier"].endswith("/managedClusters/" + CONFIG["gpupools:cluster"]["name"])
    assert "enableServerSideApply" not in provider.inputs or provider.inputs["enableServerSideApply"] in (True, "true")
    args = yaml.safe_load(run.outputs["kubeconfig"])["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--login") + 1] == "azurecli"
    [admin] = [r for r in run.of_type("azure-native:authorization:RoleAssignment") if r.name.endswith("deployer-cluster-admin")]
    assert admin.urn in provider.dependencies


def test_every_kubernetes_object_uses_the_cluster_provider(run: Run) -> None:
    [provider] = run.of_type("pulumi:providers:kubernetes")
    objects = list(run.kubernetes_objects())
    assert objects
    for registration in objects:
        assert registration.provider.startswith(provider.urn + "::"), registration.name


def test_node_pools_output_lists_every_pool(run: Run) -> None:
    outputs = run.outputs["nodePools"]
    every = agent_pools(run, gpu_only=False)
    assert [p["name"] for p in outputs] == ["system", *[p.inputs["agentPoolName"] for p in every]]
    by_name = {p["name"]: p for p in outputs}
    for pool in every:
        entry = by_name[pool.inputs["agentPoolName"]]
        assert entry["capacityType"] == ("spot" if pool.inputs["scaleSetPriority"] == SPOT else "on-demand")
        assert (entry["minSize"], entry["maxSize"]) == (pool.inputs["minCount"], pool.inputs["maxCount"])
        assert entry["instanceTypes"] == [pool.inputs["vmSize"]]


# --- GPU pools --------------------------------------------------------------------------------------


def test_one_spot_and_one_on_demand_fallback_pool_per_gpu_pool(run: Run) -> None:
    config = gpu_config()
    assert len(spot_pools(run)) == len(regular_pools(run)) == len(config)
    for entry in config:
        [spot] = [p for p in spot_pools(run) if p.inputs["nodeLabels"][POOL_LABEL] == entry["name"]]
        [fallback] = [p for p in regular_pools(run) if p.inputs["nodeLabels"][POOL_LABEL] == entry["name"]]
        assert spot.inputs["vmSize"] == fallback.inputs["vmSize"] == entry["instanceTypes"][0]
        assert spot.inputs["minCount"] == entry.get("minSize", 0) == 0
        assert spot.inputs["maxCount"] == entry["maxSize"]
        assert fallback.inputs["minCount"] == 0
        assert fallback.inputs["maxCount"] == entry.get("onDemandMaxSize", entry["maxSize"])
        assert spot.inputs["availabilityZones"] == fallback.inputs["availabilityZones"]
        assert sorted(spot.inputs["availabilityZones"]) == sorted(entry.get("zones", CONFIG["gpupools:cluster"]["zones"]))
        assert spot.inputs["osDiskSizeGB"] == fallback.inputs["osDiskSizeGB"] == entry.get("diskSizeGb", 128)
        assert spot.inputs["nodeLabels"][CAPACITY_TYPE_LABEL] == "spot"
        assert fallback.inputs["nodeLabels"][CAPACITY_TYPE_LABEL] == "on-demand"
        for key, value in entry.get("labels", {}).items():
            assert spot.inputs["nodeLabels"][key] == fallback.inputs["nodeLabels"][key] == value


def test_spot_pools_as_aks_requires_them(run: Run) -> None:
    for pool in spot_pools(run):
        inputs = pool.inputs
        assert inputs["mode"] == containerservice.AgentPoolMode.USER.value
        assert inputs["enableAutoScaling"] is True
        assert inputs["scaleSetEvictionPolicy"] == containerservice.ScaleSetEvictionPolicy.DELETE.value
        assert inputs["spotMaxPrice"] == -1
        assert GPU_TAINT in taints_of(inputs) and AKS_SPOT_TAINT in taints_of(inputs)
        assert inputs["gpuProfile"] == {"driver": containerservice.GPUDriver.INSTALL.value}
        assert "upgradeSettings" not in inputs


def test_fallback_pools_are_regular_gpu_pools(run: Run) -> None:
    for pool in regular_pools(run):
        inputs = pool.inputs
        assert inputs["mode"] == containerservice.AgentPoolMode.USER.value
        assert inputs["enableAutoScaling"] is True
        assert GPU_TAINT in taints_of(inputs)
        assert AKS_SPOT_TAINT not in taints_of(inputs)
        assert AKS_SPOT_LABEL[0] not in inputs["nodeLabels"]


def test_extra_taints_reach_both_pools_of_their_entry(run: Run) -> None:
    for entry in gpu_config():
        for raw in entry.get("taints", []):
            taint = Taint(raw["key"], raw["value"], TaintEffect(raw["effect"]))
            pools = [p for p in agent_pools(run) if p.inputs["nodeLabels"][POOL_LABEL] == entry["name"]]
            assert len(pools) == 2 and all(taint in taints_of(p.inputs) for p in pools)


def test_enum_values_are_the_sdks(run: Run) -> None:
    enums = {
        "mode": containerservice.AgentPoolMode,
        "scaleSetPriority": containerservice.ScaleSetPriority,
        "scaleSetEvictionPolicy": containerservice.ScaleSetEvictionPolicy,
        "osDiskType": containerservice.OSDiskType,
        "osType": containerservice.OSType,
        "type": containerservice.AgentPoolType,
        "scaleDownMode": containerservice.ScaleDownMode,
    }
    for inputs in [system_profile(run), *[p.inputs for p in agent_pools(run)]]:
        for key, enum in enums.items():
            if key in inputs:
                assert inputs[key] in {e.value for e in enum}, (key, inputs[key])


def test_replace_on_changes_covers_the_create_only_fields(run: Run) -> None:
    create_only = {
        "vmSize",
        "scaleSetPriority",
        "spotMaxPrice",
        "scaleSetEvictionPolicy",
        "osDiskType",
        "osDiskSizeGB",
        "maxPods",
        "gpuProfile",
        "gpuInstanceProfile",
        "availabilityZones",
        "vnetSubnetID",
    }
    for pool in agent_pools(run):
        assert create_only <= set(pool.replace_on_changes)
        assert not pool.delete_before_replace  # rotation makes create-before-destroy safe


def test_every_agent_pool_name_is_a_valid_aks_name(run: Run) -> None:
    names = [p.inputs["agentPoolName"] for p in agent_pools(run)]
    assert len(set(names)) == len(names)
    for pool in agent_pools(run):
        name = pool.inputs["agentPoolName"]
        assert AKS_NAME.fullmatch(name) and len(name) <= 12
        base = pool.inputs["nodeLabels"][POOL_LABEL]
        letter = "s" if pool.inputs["scaleSetPriority"] == SPOT else "o"
        assert re.fullmatch(rf"{base}{letter}[0-9a-f]{{4}}", name)


def test_names_change_when_vm_size_changes_but_not_when_max_size_changes(run: Run) -> None:
    before = {p.name: p.inputs["agentPoolName"] for p in agent_pools(run)}

    resized = gpu_config()
    resized[0]["maxSize"] += 5
    resized[0]["onDemandMaxSize"] = resized[0].get("onDemandMaxSize", 1) + 1
    after_resize = {p.name: p.inputs["agentPoolName"] for p in agent_pools(with_pools(resized))}
    assert after_resize == before

    bigger = gpu_config()
    bigger[0]["instanceTypes"] = ["Standard_NC8as_T4_v3"]
    after_vm = {p.name: p.inputs["agentPoolName"] for p in agent_pools(with_pools(bigger))}
    first = gpu_config()[0]["name"]
    for logical, name in before.items():
        changed = logical.endswith((f"-{first}-spot", f"-{first}-ondemand"))
        assert (after_vm[logical] != name) is changed, logical


# --- chaining ---------------------------------------------------------------------------------------


def test_all_agent_pools_are_chained_by_depends_on(run: Run) -> None:
    pools = agent_pools(run, gpu_only=False)
    cluster = managed_cluster(run)
    for previous, current in pairwise(pools):
        assert previous.urn in current.dependencies, f"{current.name} must depend on {previous.name}"
    for pool in pools:
        assert cluster.urn in transitive_dependencies(run, pool)
    for a, b in combinations(pools, 2):
        ordered = a.urn in transitive_dependencies(run, b) or b.urn in transitive_dependencies(run, a)
        assert ordered, f"{a.name} and {b.name} could run at the same time"


# --- Kubernetes side ----------------------------------------------------------------------------------


def daemon_set(run: Run) -> dict[str, Any]:
    """The device plugin's DaemonSet (the DCGM exporter's are tested in tests/test_dcgm_exporter.py)."""
    [registration] = [
        r for r in run.of_type("kubernetes:apps/v1:DaemonSet") if r.inputs["metadata"]["name"] == "nvidia-device-plugin"
    ]
    return to_manifest(registration)


def test_device_plugin_tolerates_every_taint_of_every_gpu_pool(run: Run) -> None:
    pod = daemon_set(run)["spec"]["template"]["spec"]
    for pool in agent_pools(run):
        assert untolerated(pod["tolerations"], taints_of(pool.inputs)) == [], pool.name


def test_device_plugin_lands_on_every_gpu_pool_and_never_on_the_system_pool(run: Run) -> None:
    affinity = daemon_set(run)["spec"]["template"]["spec"].get("affinity")
    pod = daemon_set(run)["spec"]["template"]["spec"]
    for pool in agent_pools(run):
        assert schedulable(pod, node_labels(pool)), pool.name
    system = system_profile(run)
    system_node = {"kubernetes.io/os": "linux", "kubernetes.azure.com/mode": "system", **system["nodeLabels"]}
    assert not schedulable(pod, system_node)
    assert not schedulable(pod, {"kubernetes.io/os": "linux"})
    assert affinity is not None or pod.get("nodeSelector")


def priorities(run: Run) -> dict[int, list[str]]:
    [config_map] = [
        c for c in run.of_type("kubernetes:core/v1:ConfigMap") if not c.inputs["metadata"]["name"].startswith("dcgm-exporter")
    ]
    assert config_map.inputs["metadata"]["name"] == "cluster-autoscaler-priority-expander"
    assert config_map.inputs["metadata"]["namespace"] == "kube-system"
    parsed: dict[int, list[str]] = yaml.safe_load(config_map.inputs["data"]["priorities"])
    return parsed


def priority_of(run: Run, scale_set: str) -> list[int]:
    return [p for p, regexes in priorities(run).items() if any(re.fullmatch(r, scale_set) for r in regexes)]


def test_priority_expander_ranks_spot_above_on_demand_above_system(run: Run) -> None:
    spot = {p for pool in spot_pools(run) for p in priority_of(run, f"aks-{pool.inputs['agentPoolName']}-12345678-vmss")}
    regular = {p for pool in regular_pools(run) for p in priority_of(run, f"aks-{pool.inputs['agentPoolName']}-12345678-vmss")}
    system = set(priority_of(run, "aks-system-12345678-vmss"))
    assert spot and regular and len(system) == 1
    assert min(spot) > max(regular) > max(system)


def test_priority_expander_regexes_match_exactly_the_right_scale_sets(run: Run) -> None:
    names = [p.inputs["agentPoolName"] for p in agent_pools(run, gpu_only=False)] + ["system"]
    all_regexes = [r for regexes in priorities(run).values() for r in regexes]
    for name in names:
        matching = [r for r in all_regexes if re.fullmatch(r, f"aks-{name}-12345678-vmss")]
        assert len(matching) == 1, f"aks-{name}-12345678-vmss matches {matching}"
    for regex in all_regexes:
        assert sum(bool(re.fullmatch(regex, f"aks-{n}-12345678-vmss")) for n in names) == 1, regex
        assert not re.fullmatch(regex, "aks-other-12345678-vmss")


def test_every_kubernetes_object_is_valid_at_the_stack_version(run: Run) -> None:
    version = CONFIG["gpupools:cluster"]["kubernetesVersion"]
    objects = list(run.kubernetes_objects())
    assert {o.type for o in objects} >= {"kubernetes:apps/v1:DaemonSet", "kubernetes:core/v1:ConfigMap"}
    for registration in objects:
        validate_manifest(to_manifest(registration), version)


def test_smoke_test_is_off_by_default_and_one_job_per_gpu_pool_when_on(run: Run) -> None:
    assert not run.of_type("kubernetes:batch/v1:Job")
    on = run_stack(STACK, overrides={"gpupools:smokeTest": {"enabled": True}})
    jobs = on.of_type("kubernetes:batch/v1:Job")
    assert len(jobs) == len(gpu_config())
    version = CONFIG["gpupools:cluster"]["kubernetesVersion"]
    [plugin] = [r for r in on.of_type("kubernetes:apps/v1:DaemonSet") if r.inputs["metadata"]["name"] == "nvidia-device-plugin"]
    targets = set()
    for job in jobs:
        manifest = to_manifest(job)
        validate_manifest(manifest, version)
        pod = manifest["spec"]["template"]["spec"]
        landed = [p for p in agent_pools(on) if schedulable(pod, node_labels(p))]
        assert len(landed) == 1, [p.name for p in landed]
        assert landed[0].inputs["scaleSetPriority"] == SPOT
        assert untolerated(pod.get("tolerations", []), taints_of(landed[0].inputs)) == []
        assert plugin.urn in transitive_dependencies(on, job)  # starts after the device plugin
        targets.add(landed[0].name)
    assert len(targets) == len(jobs)


def test_missing_location_is_a_config_error_before_anything_is_registered() -> None:
    config = {k: v for k, v in CONFIG.items() if k != "azure-native:location"}
    from gpupools.testing import PROJECT_ROOT, run_program

    registered: list[Any] = []

    def program() -> None:
        import runpy

        try:
            runpy.run_path(str(PROJECT_ROOT / "__main__.py"), run_name="__main__")
        except ConfigError as error:
            registered.append(error)

    seen = run_program(program, config)
    assert [e.path for e in registered] == ["azure-native:location"]
    assert seen.registrations == []


# --- pitfalls (AKS notes, "known pain points") ----------------------------------------------------------


def test_pitfall_autoscaled_pool_count_missing_on_create(run: Run) -> None:
    """pulumi-azure-native#2943: "Required parameter properties.count is missing" for autoscaled pools."""
    assert system_profile(run)["count"] == system_profile(run)["minCount"]
    for pool in agent_pools(run):
        assert pool.inputs["count"] == pool.inputs["minCount"]


def test_pitfall_count_drift_after_autoscaling_or_refresh(run: Run) -> None:
    """Count belongs to the autoscaler after create; a later `pulumi up` must not reset it. The
    cluster's inline array is ignored whole (a refresh stores every pool there;
    tests/test_inline_pools.py plays it)."""
    assert managed_cluster(run).ignore_changes == ["agentPoolProfiles"]
    for pool in agent_pools(run):
        assert pool.ignore_changes == ["count"]


def test_pitfall_spot_label_and_taint_leak_into_state_after_refresh(run: Run) -> None:
    """pulumi-azure-native#1808/#2245: declare what AKS adds to Spot pools so refresh shows no diff."""
    for pool in spot_pools(run):
        assert pool.inputs["nodeLabels"][AKS_SPOT_LABEL[0]] == AKS_SPOT_LABEL[1]
        assert str(AKS_SPOT_TAINT) in pool.inputs["nodeTaints"]
        assert "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in pool.inputs["nodeTaints"]


def test_pitfall_inline_and_standalone_pools_mixed(run: Run) -> None:
    """pulumi-azure-native#579/#2719/#4264: one inline System pool; every GPU pool standalone."""
    profiles = managed_cluster(run).inputs["agentPoolProfiles"]
    assert [p["mode"] for p in profiles] == ["System"]
    assert len(agent_pools(run)) == 2 * len(gpu_config())
    assert all(p.inputs["mode"] == "User" for p in agent_pools(run))


def test_pitfall_vm_size_change_replaces_a_pool_with_a_fixed_name(run: Run) -> None:
    """pulumi-azure-native#3655/#2462: a vmSize change is a replacement; the name must rotate."""
    changed = gpu_config()
    changed[1]["instanceTypes"] = ["Standard_NC48ads_A100_v4"]
    rotated = with_pools(changed)
    for old, new in zip(agent_pools(run), agent_pools(rotated), strict=True):  # matched by logical name
        assert old.name == new.name  # same logical resource: Pulumi replaces, not create + orphan
        is_a100 = old.inputs["nodeLabels"][POOL_LABEL] == changed[1]["name"]
        assert (old.inputs["agentPoolName"] != new.inputs["agentPoolName"]) is is_a100
        assert "vmSize" in new.replace_on_changes and not new.delete_before_replace


def test_pitfall_auto_naming_ignores_azure_limits(run: Run) -> None:
    """pulumi-azure-native#4294: never let Pulumi auto-name an agent pool."""
    for pool in agent_pools(run):
        assert "agentPoolName" in pool.inputs
        assert AKS_NAME.fullmatch(pool.inputs["agentPoolName"])


def test_pitfall_api_version_churn() -> None:
    """The API version and the force-new fields moved between azure-native releases (review M5:
    pulumi-azure-native #4771, #4756, #4505): the provider is pinned exactly, to the version the tests
    run (API 2025-09-01), in requirements.txt and pyproject.toml alike."""
    import importlib.metadata

    import tomllib
    from gpupools.testing import PROJECT_ROOT

    requirement = next(
        line for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines() if line.startswith("pulumi-azure-native")
    )
    pinned = re.fullmatch(r"pulumi-azure-native==(\d+\.\d+\.\d+)", requirement)
    assert pinned, requirement
    assert pinned[1] == importlib.metadata.version("pulumi-azure-native")
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"pulumi-azure-native=={pinned[1]}" in project
    source = Path(containerservice.agent_pool.__file__).read_text()
    assert "Uses Azure REST API version 2025-09-01" in source


def test_pitfall_device_plugin_not_scheduled_on_spot_gpu_nodes(run: Run) -> None:
    """Azure/AKS#4418, azure-aks-docs#138: the plugin must tolerate the Spot taint or GPUs never appear."""
    pod = daemon_set(run)["spec"]["template"]["spec"]
    for pool in spot_pools(run):
        assert untolerated(pod["tolerations"], [AKS_SPOT_TAINT]) == []
        assert schedulable(pod, node_labels(pool))


def test_pitfall_gpu_pools_scale_from_zero_with_their_labels_declared(run: Run) -> None:
    """Azure/AKS#2832/#1565: GPU pools start at 0 and carry their labels in the pool spec, which
    cluster-autoscaler reads for an empty scale set's template."""
    for pool in spot_pools(run):
        assert pool.inputs["minCount"] == 0 and pool.inputs["count"] == 0
        assert pool.inputs["nodeLabels"][ROLE_LABEL] == "gpu"


def test_pitfall_priority_expander_regex_does_not_match_scale_sets(run: Run) -> None:
    """Azure/AKS#2359, kubernetes/autoscaler#8321: regexes must match `aks-<pool>-<n>-vmss`, as lists."""
    for priority, regexes in priorities(run).items():
        assert isinstance(priority, int) and isinstance(regexes, list)
    for pool in agent_pools(run):
        assert priority_of(run, f"aks-{pool.inputs['agentPoolName']}-29141059-vmss")


def test_pitfall_concurrent_pool_operations_operation_not_allowed(run: Run) -> None:
    """Azure/AKS#1913/#2720: AKS rejects a second pool operation while one runs."""
    pools = agent_pools(run)
    for a, b in combinations(pools, 2):
        assert a.urn in transitive_dependencies(run, b) or b.urn in transitive_dependencies(run, a)


def test_pitfall_spot_pool_rejects_max_surge_and_max_unavailable(run: Run) -> None:
    """ "Spot pools can't set max surge" / "maxUnavailable" (InvalidParameter)."""
    for pool in spot_pools(run):
        assert "upgradeSettings" not in pool.inputs


def test_pitfall_eviction_policy_on_a_regular_pool(run: Run) -> None:
    """EvictionPolicyCanBeSetOnlyOnAzureSpotVirtualMachines."""
    for pool in regular_pools(run):
        assert "scaleSetEvictionPolicy" not in pool.inputs and "spotMaxPrice" not in pool.inputs
    assert "scaleSetEvictionPolicy" not in system_profile(run)


def test_pitfall_spot_system_pool(run: Run) -> None:
    """Spot pools require user mode; a Spot pool can't be the default/System pool."""
    assert system_profile(run)["scaleSetPriority"] == REGULAR
    assert all(p.inputs["mode"] == "User" for p in spot_pools(run))


def test_pitfall_system_pool_has_restricted_taint_and_can_not_taint_all_agent_pools(run: Run) -> None:
    """SystemPoolHasRestrictedTaint / CanNotTaintAllAgentPools: the System pool carries only
    CriticalAddonsOnly, which AKS accepts and its system pods tolerate."""
    assert taints_of(system_profile(run)) == [Taint("CriticalAddonsOnly", "true", TaintEffect.NO_SCHEDULE)]


def test_pitfall_spot_capacity_shortage_at_create(run: Run) -> None:
    """SkuNotAvailable / no Spot capacity at create time must not fail the stack: pools start empty."""
    for pool in agent_pools(run):
        assert pool.inputs["count"] == 0
