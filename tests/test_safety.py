"""Guardrails across both clouds: a safe second ``pulumi up`` and the secure defaults.

Each test runs the committed example stacks on the recording mock runtime and asserts on what the
clouds would receive, so undoing any of these defaults in a component makes a test here fail.
"""

from __future__ import annotations

import copy
import itertools
import random
import time
import uuid
from typing import Any

import pytest
import yaml
from gpupools.testing import PROJECT_ROOT, Registration, Run, run_stack, stack_config

STACKS = ("azure-dev", "aws-dev")
AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"

CACHE: dict[str, Run] = {}


def run(stack: str) -> Run:
    if stack not in CACHE:
        CACHE[stack] = run_stack(stack)
    return CACHE[stack]


def first_pool_override(stack: str, **changes: Any) -> dict[str, Any]:
    pools = copy.deepcopy(stack_config(stack)["gpupools:gpuPools"])
    pools[0].update(changes)
    return {"gpupools:gpuPools": pools}


def names(run_: Run, type_: str, field: str) -> set[str]:
    return {r.inputs[field] for r in run_.of_type(type_)}


# --- a safe second `pulumi up` -------------------------------------------------------------------


def test_every_autoscaled_aks_pool_leaves_its_count_to_the_autoscaler() -> None:
    pools = run("azure-dev").of_type(AGENT_POOL)
    assert pools
    for pool in pools:
        assert pool.inputs["enableAutoScaling"] is True, pool.name
        assert "count" in pool.ignore_changes, pool.name
        assert pool.inputs["count"] == pool.inputs["minCount"], "count is sent on create (AKS requires it)"
    [cluster] = run("azure-dev").of_type(MANAGED_CLUSTER)
    for profile in cluster.inputs["agentPoolProfiles"]:
        assert profile["enableAutoScaling"] is True
    # The whole inline array, counts included (gpupools.azure.inline_pools).
    assert cluster.ignore_changes == ["agentPoolProfiles"]


def test_every_eks_node_group_leaves_desired_size_to_the_autoscaler() -> None:
    groups = run("aws-dev").of_type(NODE_GROUP)
    assert len(groups) >= 2
    for group in groups:
        assert "scalingConfig.desiredSize" in group.ignore_changes, group.name
        scaling = group.inputs["scalingConfig"]
        assert scaling["desiredSize"] == scaling["minSize"], group.name


def test_gpu_node_groups_are_created_empty_so_a_spot_shortage_cannot_fail_the_stack() -> None:
    gpu = [g for g in run("aws-dev").of_type(NODE_GROUP) if "NVIDIA" in g.inputs["amiType"]]
    assert gpu
    for group in gpu:
        assert group.inputs["scalingConfig"]["desiredSize"] == 0, group.name


def test_aks_create_only_fields_replace_the_pool_and_the_name_makes_room_for_it() -> None:
    create_only = {"vmSize", "scaleSetPriority", "spotMaxPrice", "scaleSetEvictionPolicy", "osDiskType", "maxPods", "gpuProfile"}
    for pool in run("azure-dev").of_type(AGENT_POOL):
        assert create_only <= set(pool.replace_on_changes), pool.name
        assert not pool.delete_before_replace, "a rotated name lets the new pool come up first"
    before = names(run("azure-dev"), AGENT_POOL, "agentPoolName")
    resized = run_stack("azure-dev", overrides=first_pool_override("azure-dev", instanceTypes=["Standard_NC8as_T4_v3"]))
    after = names(resized, AGENT_POOL, "agentPoolName")
    changed = before ^ after
    assert changed, "a new VM size must give the pool a new name, so create-before-destroy cannot clash"
    assert all(len(n) <= 12 for n in after)


def test_capacity_changes_update_in_place_without_renaming() -> None:
    for stack, type_, field in (("azure-dev", AGENT_POOL, "agentPoolName"), ("aws-dev", NODE_GROUP, "nodeGroupName")):
        pools = stack_config(stack)["gpupools:gpuPools"]
        bigger = run_stack(stack, overrides=first_pool_override(stack, maxSize=pools[0]["maxSize"] + 3))
        assert names(bigger, type_, field) == names(run(stack), type_, field), stack


def test_eks_create_only_fields_rename_the_group() -> None:
    before = names(run("aws-dev"), NODE_GROUP, "nodeGroupName")
    pools = stack_config("aws-dev")["gpupools:gpuPools"]
    changed = run_stack(
        "aws-dev", overrides=first_pool_override("aws-dev", instanceTypes=list(reversed(pools[0]["instanceTypes"])))
    )
    assert names(changed, NODE_GROUP, "nodeGroupName") != before


def _comparable(run_: Run) -> list[tuple[str, str, str, str]]:
    """Registrations as sorted text (the runtime registers concurrently, so order is not meaningful)."""
    import json

    return sorted(
        (r.type, r.name, json.dumps(r.redacted_inputs, sort_keys=True), json.dumps(r.options, sort_keys=True))
        for r in run_.registrations
    )


@pytest.mark.parametrize("stack", STACKS)
def test_nothing_depends_on_the_clock_or_randomness(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = _comparable(run(stack))
    later = time.time() + 400 * 86400
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "time_ns", lambda: int(later * 1e9))
    counter = itertools.count()
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter) + 12345))
    random.seed(987654321)
    assert _comparable(run_stack(stack)) == baseline


# --- secure defaults -----------------------------------------------------------------------------


def test_no_public_node_ips_on_aks() -> None:
    [cluster] = run("azure-dev").of_type(MANAGED_CLUSTER)
    pools = [*cluster.inputs["agentPoolProfiles"], *(p.inputs for p in run("azure-dev").of_type(AGENT_POOL))]
    assert pools
    assert all(p.get("enableNodePublicIP") is False for p in pools)


def test_no_public_node_ips_on_eks() -> None:
    aws = run("aws-dev")
    subnets = {r.urn: r for r in aws.of_type("aws:ec2/subnet:Subnet")}
    for template in aws.of_type(LAUNCH_TEMPLATE):
        for interface in template.inputs.get("networkInterfaces", []):
            assert interface.get("associatePublicIpAddress") in (None, False, "false"), template.name
    private = [s for s in subnets.values() if "private" in s.name]
    assert private and all(not s.inputs.get("mapPublicIpOnLaunch") for s in private)
    for group in aws.of_type(NODE_GROUP):
        node_subnets = [d for d in group.dependencies if "aws:ec2/subnet:Subnet" in d]
        assert node_subnets and all("private" in d for d in node_subnets), group.name


def test_imdsv2_required_and_pods_kept_off_node_credentials() -> None:
    templates = run("aws-dev").of_type(LAUNCH_TEMPLATE)
    assert templates
    for template in templates:
        metadata = template.inputs["metadataOptions"]
        assert metadata["httpTokens"] == "required", template.name
        assert metadata["httpPutResponseHopLimit"] == 1, "IRSA needs no IMDS; hop limit 1 keeps pods off node credentials"


def test_root_volumes_encrypted() -> None:
    for template in run("aws-dev").of_type(LAUNCH_TEMPLATE):
        mappings = template.inputs["blockDeviceMappings"]
        assert mappings and all(str(m["ebs"]["encrypted"]).lower() == "true" for m in mappings), template.name
    # AKS: managed OS disks are encrypted at rest by the platform (server-side encryption).
    for pool in run("azure-dev").of_type(AGENT_POOL):
        assert pool.inputs["osDiskType"] == "Managed"


def test_no_ssh_unless_configured() -> None:
    for group in run("aws-dev").of_type(NODE_GROUP):
        assert "remoteAccess" not in group.inputs, group.name
    for template in run("aws-dev").of_type(LAUNCH_TEMPLATE):
        assert "keyName" not in template.inputs
    [cluster] = run("azure-dev").of_type(MANAGED_CLUSTER)
    assert "linuxProfile" not in cluster.inputs


def test_aks_entra_id_only_unless_local_accounts_are_allowed() -> None:
    [cluster] = run("azure-dev").of_type(MANAGED_CLUSTER)
    assert cluster.inputs["disableLocalAccounts"] is True
    assert cluster.inputs["aadProfile"] == {**cluster.inputs["aadProfile"], "managed": True, "enableAzureRBAC": True}
    sandbox_cluster = {**stack_config("azure-dev")["gpupools:cluster"], "allowLocalAccounts": True}
    sandbox = run_stack("azure-dev", overrides={"gpupools:cluster": sandbox_cluster})
    [relaxed] = sandbox.of_type(MANAGED_CLUSTER)
    assert relaxed.inputs["disableLocalAccounts"] is False


def test_workload_identity_and_irsa_instead_of_static_credentials() -> None:
    [cluster] = run("azure-dev").of_type(MANAGED_CLUSTER)
    assert cluster.inputs["oidcIssuerProfile"]["enabled"] is True
    assert cluster.inputs["securityProfile"]["workloadIdentity"]["enabled"] is True
    assert "servicePrincipalProfile" not in cluster.inputs
    assert cluster.inputs["identity"]["type"] in ("UserAssigned", "SystemAssigned")
    [release] = run("aws-dev").of_type("kubernetes:helm.sh/v3:Release")
    annotations = release.inputs["values"]["rbac"]["serviceAccount"]["annotations"]
    assert annotations["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::")
    forbidden = {"aws:iam/accessKey:AccessKey", "aws:iam/userPolicy:UserPolicy", "aws:iam/user:User"}
    for stack in STACKS:
        assert not [r for r in run(stack).registrations if r.type in forbidden]
        assert not [r for r in run(stack).registrations if "ServicePrincipal" in r.type and "Password" in r.type]


def test_kubeconfig_is_a_secret_everywhere() -> None:
    for stack in STACKS:
        assert "kubeconfig" in run(stack).secret_outputs, stack
        [provider] = run(stack).of_type("pulumi:providers:kubernetes")
        assert "kubeconfig" in provider.secret_paths
        assert provider.inputs.get("clusterIdentifier"), "a kubeconfig refresh must not replace every Kubernetes object"


def test_default_kubernetes_provider_disabled_and_never_used() -> None:
    project = yaml.safe_load((PROJECT_ROOT / "Pulumi.yaml").read_text())
    assert "kubernetes" in project["config"]["pulumi:disable-default-providers"]["value"]
    for stack in STACKS:
        objects = [r for r in run(stack).registrations if r.type.startswith("kubernetes:") and r.custom]
        assert objects
        for obj in objects:
            assert "pulumi:providers:kubernetes::" in obj.provider and "::default" not in obj.provider, obj.name


def _containers(registration: Registration) -> list[dict[str, Any]]:
    spec = registration.inputs.get("spec", {})
    template = spec.get("template", spec.get("jobTemplate", {}).get("spec", {}).get("template", {}))
    pod = template.get("spec", {})
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


@pytest.mark.parametrize("stack", STACKS)
def test_every_container_of_ours_is_locked_down_and_pinned(stack: str) -> None:
    smoke = {"gpupools:smokeTest": {"enabled": True}}
    checked = 0
    for registration in run_stack(stack, overrides=smoke).kubernetes_objects():
        for container in _containers(registration):
            checked += 1
            where = f"{stack} {registration.name} {container['name']}"
            security = container.get("securityContext", {})
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("capabilities", {}).get("drop") == ["ALL"], where
            assert container.get("resources", {}).get("requests"), where
            image = container["image"]
            tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
            assert tag and tag != "latest", where
    assert checked >= 2, "the device plugin and the smoke test at least"


def test_cluster_autoscaler_image_pinned_to_the_cluster_minor() -> None:
    [release] = run("aws-dev").of_type("kubernetes:helm.sh/v3:Release")
    version = stack_config("aws-dev")["gpupools:cluster"].get("kubernetesVersion", "1.35")
    assert release.inputs["version"], "chart version pinned"
    assert release.inputs["values"]["image"]["tag"].startswith(f"v{version}.")
