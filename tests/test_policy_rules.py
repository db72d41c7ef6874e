"""The policy pack's rules, called directly on synthetic engine-shaped properties.

Each rule: a complying input passes, a violating one fails with a message that names the pool or
template, the field and the value. Inputs are written out literally (camelCase engine keys, as
``pulumi preview`` hands them to a policy), not built from the components under test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

POLICY_DIR = Path(__file__).resolve().parents[1] / "policy"
if str(POLICY_DIR) not in sys.path:
    sys.path.insert(0, str(POLICY_DIR))

from gpupools_policy import paths, rules, shapes  # noqa: E402
from gpupools_policy.shapes import UNKNOWN  # noqa: E402

AGENT_POOL = "azure-native:containerservice:AgentPool"
CLUSTER = "azure-native:containerservice:ManagedCluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"

GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"


def aks_pool(**overrides: Any) -> dict[str, Any]:
    """A complying AKS Spot T4 pool, as the engine sees its inputs."""
    props: dict[str, Any] = {
        "agentPoolName": "t4spot",
        "resourceGroupName": "rg",
        "resourceName": "ml-dev",
        "vmSize": "Standard_NC4as_T4_v3",
        "scaleSetPriority": "Spot",
        "enableAutoScaling": True,
        "minCount": 0.0,
        "maxCount": 8.0,
        "count": 0.0,
        "nodeTaints": [GPU_TAINT, SPOT_TAINT],
        "nodeLabels": {"gpupools.io/pool": "t4"},
        "enableNodePublicIP": False,
    }
    props.update(overrides)
    return {k: v for k, v in props.items() if v is not None}


def eks_group(**overrides: Any) -> dict[str, Any]:
    """A complying EKS Spot GPU node group."""
    props: dict[str, Any] = {
        "clusterName": "ml-dev",
        "nodeGroupName": "gpu1-spot-a",
        "amiType": "AL2023_x86_64_NVIDIA",
        "capacityType": "SPOT",
        "instanceTypes": ["g4dn.xlarge", "g5.xlarge"],
        "scalingConfig": {"minSize": 0.0, "maxSize": 2.0, "desiredSize": 0.0},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "labels": {"gpupools.io/pool": "gpu1"},
    }
    props.update(overrides)
    return {k: v for k, v in props.items() if v is not None}


def launch_template(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1.0},
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "volumeSize": 128.0}}],
    }
    props.update(overrides)
    return {k: v for k, v in props.items() if v is not None}


def device_plugin(tolerations: list[dict[str, str]], name: str = "nvidia-device-plugin") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}],
                    "tolerations": tolerations,
                }
            }
        },
    }


TOLERATE_GPU = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
TOLERATE_SPOT = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}


# --- GPU detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "gpu"),
    [
        ("Standard_NC4as_T4_v3", True),
        ("Standard_ND96isr_H100_v5", True),
        ("Standard_NC6s_v3", True),  # retired, still a GPU size
        ("Standard_NC8ads_A10_v4", True),  # not in the catalog: recognised by the N family
        ("Standard_D4s_v5", False),
        ("Standard_E8s_v5", False),
    ],
)
def test_azure_gpu_sizes(size: str, gpu: bool) -> None:
    assert shapes.is_gpu_vm_size(size) is gpu


@pytest.mark.parametrize(
    ("instance_type", "gpu"),
    [
        ("g4dn.xlarge", True),
        ("p5.48xlarge", True),
        ("g6e.12xlarge", True),
        ("p4d.24xlarge", True),
        ("g7.xlarge", True),  # not in the catalog: a g family
        ("m6i.xlarge", False),
        ("c7g.large", False),
        ("inf2.xlarge", False),
    ],
)
def test_aws_gpu_types(instance_type: str, gpu: bool) -> None:
    assert shapes.is_gpu_instance_type(instance_type) is gpu


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nvidia.com/gpu=present:NoSchedule", ("nvidia.com/gpu", "present", "NoSchedule")),
        ("CriticalAddonsOnly=true:NoSchedule", ("CriticalAddonsOnly", "true", "NoSchedule")),
        ("dedicated:NoExecute", ("dedicated", "", "NoExecute")),
        ("nvidia.com/gpu=present", None),
        ("=x:NoSchedule", None),
        ("a=b:Sometimes", None),
    ],
)
def test_parse_aks_taint(text: str, expected: tuple[str, str, str] | None) -> None:
    taint = shapes.parse_aks_taint(text)
    assert (None if taint is None else (taint.key, taint.value, taint.effect.value)) == expected


# --- Kubernetes toleration semantics -----------------------------------------------------------

TAINT = shapes.parse_aks_taint("nvidia.com/gpu=present:NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}, True),  # Equal is the default
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),  # empty effect matches all effects
        ({"operator": "Exists"}, True),  # empty key + Exists tolerates everything
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/mig", "operator": "Exists"}, False),
        ({"operator": "Equal", "value": "present"}, False),  # empty key needs Exists
    ],
)
def test_tolerates(toleration: dict[str, str], tolerated: bool) -> None:
    assert TAINT is not None
    assert shapes.tolerates(toleration, TAINT) is tolerated


# --- ignoreChanges paths -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("count", ("count",)),
        ("scalingConfig.desiredSize", ("scalingConfig", "desiredSize")),
        ("agentPoolProfiles[0].count", ("agentPoolProfiles", 0, "count")),
        ("agentPoolProfiles[*].count", ("agentPoolProfiles", "*", "count")),
        ('tags["k8s.io/cluster-autoscaler/enabled"]', ("tags", "k8s.io/cluster-autoscaler/enabled")),
        ("scalingConfig..desiredSize", None),
        ("", None),
    ],
)
def test_parse_paths(path: str, segments: tuple[Any, ...] | None) -> None:
    assert paths.parse(path) == segments


@pytest.mark.parametrize(
    ("ignored", "target", "covered"),
    [
        ("count", "count", True),
        ("scalingConfig", "scalingConfig.desiredSize", True),
        ("scalingConfig.desiredSize", "scalingConfig.desiredSize", True),
        ("scalingConfig.minSize", "scalingConfig.desiredSize", False),
        ("agentPoolProfiles", "agentPoolProfiles[0].count", True),
        ("agentPoolProfiles[*].count", "agentPoolProfiles[1].count", True),
        ("agentPoolProfiles[1].count", "agentPoolProfiles[0].count", False),
        ("scalingConfig.desiredSize.x", "scalingConfig.desiredSize", False),
        ("scaling_config.desired_size", "scalingConfig.desiredSize", False),  # Python names never reach the engine
    ],
)
def test_path_covers(ignored: str, target: str, covered: bool) -> None:
    assert paths.covers(ignored, target) is covered


# --- 1. gpu-pool-taint -------------------------------------------------------------------------


def test_gpu_taint_passes_on_a_tainted_aks_pool() -> None:
    assert rules.check_gpu_taint(AGENT_POOL, aks_pool(), name="pool") == []


def test_gpu_taint_accepts_no_execute_and_any_value() -> None:
    assert rules.check_gpu_taint(AGENT_POOL, aks_pool(nodeTaints=["nvidia.com/gpu=true:NoExecute"])) == []


def test_gpu_taint_fails_on_an_untainted_aks_gpu_pool() -> None:
    [message] = rules.check_gpu_taint(AGENT_POOL, aks_pool(nodeTaints=[SPOT_TAINT]), name="pool")
    assert "AKS agent pool 't4spot'" in message
    assert "vmSize Standard_NC4as_T4_v3" in message
    assert "nodeTaints has no 'nvidia.com/gpu' taint" in message
    assert f"got ['{SPOT_TAINT}']" in message
    assert "Add 'nvidia.com/gpu=present:NoSchedule'" in message


def test_gpu_taint_rejects_prefer_no_schedule() -> None:
    [message] = rules.check_gpu_taint(AGENT_POOL, aks_pool(nodeTaints=["nvidia.com/gpu=present:PreferNoSchedule"]))
    assert "got ['nvidia.com/gpu=present:PreferNoSchedule']" in message


def test_gpu_taint_ignores_cpu_pools_and_other_types() -> None:
    assert rules.check_gpu_taint(AGENT_POOL, aks_pool(vmSize="Standard_D4s_v5", nodeTaints=[])) == []
    assert rules.check_gpu_taint("azure-native:compute:VirtualMachine", {"vmSize": "Standard_NC4as_T4_v3"}) == []


def test_gpu_taint_applies_to_versioned_type_tokens_and_uncatalogued_sizes() -> None:
    props = aks_pool(vmSize="Standard_NC8ads_A10_v4", nodeTaints=[])
    [message] = rules.check_gpu_taint("azure-native:containerservice/v20250301:AgentPool", props)
    assert "vmSize Standard_NC8ads_A10_v4" in message


def test_gpu_taint_checks_inline_cluster_profiles() -> None:
    cluster = {
        "agentPoolProfiles": [
            {
                "name": "system",
                "mode": "System",
                "vmSize": "Standard_D4s_v5",
                "nodeTaints": ["CriticalAddonsOnly=true:NoSchedule"],
            },
            {"name": "gpu", "mode": "User", "vmSize": "Standard_NC24ads_A100_v4"},
        ]
    }
    [message] = rules.check_gpu_taint(CLUSTER, cluster, name="aks")
    assert "AKS agent pool 'gpu' (agentPoolProfiles[1])" in message
    assert "agentPoolProfiles[1].nodeTaints has no" in message


def test_gpu_taint_eks() -> None:
    assert rules.check_gpu_taint(NODE_GROUP, eks_group()) == []
    [message] = rules.check_gpu_taint(NODE_GROUP, eks_group(taints=[]))
    assert "EKS node group 'gpu1-spot-a'" in message
    assert "amiType AL2023_x86_64_NVIDIA" in message
    assert "taints has no 'nvidia.com/gpu' taint" in message
    assert "{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}" in message


def test_gpu_taint_eks_detects_gpu_by_instance_type() -> None:
    props = eks_group(amiType="AL2023_x86_64_STANDARD", instanceTypes=["p5.48xlarge"], taints=None)
    [message] = rules.check_gpu_taint(NODE_GROUP, props)
    assert "instanceTypes ['p5.48xlarge']" in message
    assert (
        rules.check_gpu_taint(NODE_GROUP, eks_group(amiType="AL2023_x86_64_STANDARD", instanceTypes=["m6i.xlarge"], taints=None))
        == []
    )


def test_gpu_taint_skips_unknown_values() -> None:
    assert rules.check_gpu_taint(AGENT_POOL, aks_pool(vmSize=UNKNOWN, nodeTaints=[])) == []
    assert rules.check_gpu_taint(AGENT_POOL, aks_pool(nodeTaints=UNKNOWN)) == []
    assert rules.check_gpu_taint(NODE_GROUP, eks_group(taints=[UNKNOWN])) == []


# --- 2. gpu-spot-scale-to-zero -----------------------------------------------------------------


def test_spot_scale_to_zero_passes() -> None:
    assert rules.check_spot_scale_to_zero(AGENT_POOL, aks_pool()) == []
    assert rules.check_spot_scale_to_zero(NODE_GROUP, eks_group()) == []


def test_spot_scale_to_zero_fails_on_an_aks_floor() -> None:
    [message] = rules.check_spot_scale_to_zero(AGENT_POOL, aks_pool(minCount=1.0))
    assert "AKS agent pool 't4spot' is a Spot GPU pool that cannot scale to zero" in message
    assert "minCount must be 0, got 1;" in message


def test_spot_scale_to_zero_fails_without_autoscaling() -> None:
    [message] = rules.check_spot_scale_to_zero(AGENT_POOL, aks_pool(enableAutoScaling=False, minCount=None, maxCount=None))
    assert "enableAutoScaling must be true with minCount 0, got False" in message


def test_spot_scale_to_zero_fails_on_an_eks_floor() -> None:
    props = eks_group(scalingConfig={"minSize": 1.0, "maxSize": 2.0, "desiredSize": 1.0})
    [message] = rules.check_spot_scale_to_zero(NODE_GROUP, props)
    assert "scalingConfig.minSize must be 0, got 1;" in message


def test_spot_scale_to_zero_leaves_on_demand_and_cpu_pools_alone() -> None:
    assert rules.check_spot_scale_to_zero(AGENT_POOL, aks_pool(scaleSetPriority="Regular", minCount=1.0)) == []
    assert rules.check_spot_scale_to_zero(AGENT_POOL, aks_pool(vmSize="Standard_D4s_v5", minCount=2.0)) == []
    on_demand = eks_group(capacityType="ON_DEMAND", scalingConfig={"minSize": 1.0, "maxSize": 2.0})
    assert rules.check_spot_scale_to_zero(NODE_GROUP, on_demand) == []


# --- 3. autoscaled-count-ignored ---------------------------------------------------------------


def test_count_ignored_passes_with_the_ignore() -> None:
    assert rules.check_autoscaled_count_ignored(AGENT_POOL, aks_pool(), ignore_changes=["count"]) == []
    assert rules.check_autoscaled_count_ignored(NODE_GROUP, eks_group(), ignore_changes=["scalingConfig.desiredSize"]) == []
    assert rules.check_autoscaled_count_ignored(NODE_GROUP, eks_group(), ignore_changes=["scalingConfig"]) == []


def test_count_not_ignored_is_accepted_only_from_gpupools_live_sizing_components() -> None:
    """gpupools' components send an existing pool's live size instead of ignoring it; the same
    resource anywhere else (at the stack root, or under another component) still fails."""
    for parent in ("gpupools:index:GpuNodePool", "gpupools:index:AksCluster"):
        urn = f"urn:pulumi:dev::gpupools::{parent}$azure-native:containerservice:AgentPool::t4-spot"
        assert rules.check_autoscaled_count_ignored(AGENT_POOL, aks_pool(), urn=urn) == []
    for parent in ("gpupools:index:GpuNodeGroup", "gpupools:index:EksCluster"):
        urn = f"urn:pulumi:dev::gpupools::{parent}$aws:eks/nodeGroup:NodeGroup::gpu1-spot-a"
        assert rules.check_autoscaled_count_ignored(NODE_GROUP, eks_group(), urn=urn) == []
    for urn in (
        "urn:pulumi:dev::mine::aws:eks/nodeGroup:NodeGroup::gpu1",
        "urn:pulumi:dev::mine::my:index:Pools$aws:eks/nodeGroup:NodeGroup::gpu1",
        "urn:pulumi:dev::mine::aws:eks/nodeGroup:NodeGroup::gpupools:index:GpuNodeGroup",
    ):
        assert len(rules.check_autoscaled_count_ignored(NODE_GROUP, eks_group(), urn=urn)) == 1, urn


def test_count_ignored_fails_on_aks_without_it() -> None:
    [message] = rules.check_autoscaled_count_ignored(AGENT_POOL, aks_pool(), ignore_changes=["tags"])
    assert "AKS agent pool 't4spot' is autoscaled but ignoreChanges does not cover 'count', got ['tags']" in message


def test_count_ignored_fails_on_eks_with_a_misspelt_path() -> None:
    [message] = rules.check_autoscaled_count_ignored(NODE_GROUP, eks_group(), ignore_changes=["scaling_config.desired_size"])
    assert "does not cover 'scalingConfig.desiredSize'" in message


def test_count_ignored_applies_to_cpu_pools_too() -> None:
    [message] = rules.check_autoscaled_count_ignored(AGENT_POOL, aks_pool(vmSize="Standard_D4s_v5"))
    assert "is autoscaled" in message


def test_count_ignored_skips_fixed_size_pools() -> None:
    assert rules.check_autoscaled_count_ignored(AGENT_POOL, aks_pool(enableAutoScaling=False, count=3.0)) == []
    fixed = eks_group(scalingConfig={"minSize": 2.0, "maxSize": 2.0, "desiredSize": 2.0})
    assert rules.check_autoscaled_count_ignored(NODE_GROUP, fixed) == []


def test_count_ignored_inline_profiles() -> None:
    cluster = {
        "agentPoolProfiles": [
            {"name": "system", "vmSize": "Standard_D4s_v5", "enableAutoScaling": True, "minCount": 2.0, "maxCount": 4.0}
        ]
    }
    for ignored in (["agentPoolProfiles[0].count"], ["agentPoolProfiles[*].count"], ["agentPoolProfiles"]):
        assert rules.check_autoscaled_count_ignored(CLUSTER, cluster, ignore_changes=ignored) == []
    [message] = rules.check_autoscaled_count_ignored(CLUSTER, cluster, ignore_changes=["agentPoolProfiles[1].count"])
    assert "does not cover 'agentPoolProfiles[0].count'" in message


# --- 4. launch-template-imdsv2-encrypted -------------------------------------------------------


def test_launch_template_passes() -> None:
    assert rules.check_launch_template_imdsv2(LAUNCH_TEMPLATE, launch_template(), name="lt") == []
    assert rules.check_launch_template_encryption(LAUNCH_TEMPLATE, launch_template(), name="lt") == []


def test_launch_template_imds_disabled_passes() -> None:
    props = launch_template(metadataOptions={"httpEndpoint": "disabled"})
    assert rules.check_launch_template_imdsv2(LAUNCH_TEMPLATE, props, name="lt") == []


@pytest.mark.parametrize(("options", "got"), [({"httpTokens": "optional"}, "'optional'"), (None, "None"), ({}, "None")])
def test_launch_template_without_imdsv2_fails(options: dict[str, str] | None, got: str) -> None:
    props = launch_template(metadataOptions=options)
    [message] = rules.check_launch_template_imdsv2(LAUNCH_TEMPLATE, props, name="gpu1-lt")
    assert (
        f"launch template 'gpu1-lt' does not require IMDSv2: metadataOptions.httpTokens must be 'required', got {got}" in message
    )


def test_launch_template_accepts_boolean_encryption() -> None:
    props = launch_template(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": True}}])
    assert rules.check_launch_template_encryption(LAUNCH_TEMPLATE, props, name="lt") == []


def test_launch_template_unencrypted_volume_fails() -> None:
    props = launch_template(
        blockDeviceMappings=[
            {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}},
            {"deviceName": "/dev/xvdb", "ebs": {"encrypted": "false"}},
            {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": 10.0}},
        ]
    )
    messages = rules.check_launch_template_encryption(LAUNCH_TEMPLATE, props, name="lt")
    assert messages == [
        "launch template 'lt' has an unencrypted volume: blockDeviceMappings[1].ebs.encrypted (/dev/xvdb) must be 'true', got 'false'.",
        "launch template 'lt' has an unencrypted volume: blockDeviceMappings[2].ebs.encrypted (/dev/xvdc) must be 'true', got None.",
    ]


@pytest.mark.parametrize("mappings", [None, [], [{"deviceName": "/dev/sdb", "virtualName": "ephemeral0"}]])
def test_launch_template_without_root_volume_fails(mappings: list[dict[str, str]] | None) -> None:
    [message] = rules.check_launch_template_encryption(LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=mappings), name="lt")
    assert "launch template 'lt' declares no EBS blockDeviceMappings" in message


def test_launch_template_rules_ignore_other_types_and_unknowns() -> None:
    assert rules.check_launch_template_imdsv2(NODE_GROUP, {"metadataOptions": {"httpTokens": "optional"}}) == []
    assert rules.check_launch_template_encryption(LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=UNKNOWN)) == []
    assert rules.check_launch_template_imdsv2(LAUNCH_TEMPLATE, launch_template(metadataOptions={"httpTokens": UNKNOWN})) == []


# --- 5. no-public-node-ips ---------------------------------------------------------------------


def test_no_public_ips_passes() -> None:
    assert rules.check_no_public_node_ips(AGENT_POOL, aks_pool()) == []
    lt = launch_template(networkInterfaces=[{"associatePublicIpAddress": "false"}])
    assert rules.check_no_public_node_ips(LAUNCH_TEMPLATE, lt, name="lt") == []


def test_no_public_ips_fails_on_aks() -> None:
    [message] = rules.check_no_public_node_ips(AGENT_POOL, aks_pool(enableNodePublicIP=True))
    assert "AKS agent pool 't4spot' gives its nodes public IPs: enableNodePublicIP must be false" in message
    cluster = {"agentPoolProfiles": [{"name": "system", "vmSize": "Standard_D4s_v5", "enableNodePublicIP": True}]}
    [message] = rules.check_no_public_node_ips(CLUSTER, cluster)
    assert "agentPoolProfiles[0].enableNodePublicIP must be false" in message


@pytest.mark.parametrize("value", ["true", True])
def test_no_public_ips_fails_on_a_launch_template(value: Any) -> None:
    lt = launch_template(networkInterfaces=[{"deviceIndex": 0.0, "associatePublicIpAddress": value}])
    [message] = rules.check_no_public_node_ips(LAUNCH_TEMPLATE, lt, name="lt")
    assert f"networkInterfaces[0].associatePublicIpAddress must be false or unset, got {value!r}" in message


# --- 6. device-plugin-tolerates-gpu-pools (stack) ----------------------------------------------

R = rules.Resource


def test_device_plugin_tolerating_every_taint_passes() -> None:
    resources = [
        R(AGENT_POOL, "t4", aks_pool(), "urn:t4"),
        R(DAEMON_SET, "dp", device_plugin([TOLERATE_GPU, TOLERATE_SPOT]), "urn:dp"),
    ]
    assert rules.check_device_plugin_tolerations(resources) == []


def test_device_plugin_missing_the_aks_spot_toleration_fails() -> None:
    resources = [
        R(AGENT_POOL, "t4", aks_pool(), "urn:t4"),
        R(DAEMON_SET, "dp", device_plugin([TOLERATE_GPU]), "urn:dp"),
    ]
    [(message, urn)] = rules.check_device_plugin_tolerations(resources)
    assert urn == "urn:dp"
    assert f"DaemonSet 'nvidia-device-plugin' does not tolerate ['{SPOT_TAINT}'] of AKS agent pool 't4spot'" in message
    assert "{key: kubernetes.azure.com/scalesetpriority, operator: Equal, value: spot, effect: NoSchedule}" in message


def test_device_plugin_must_tolerate_the_spot_taint_even_when_undeclared() -> None:
    """AKS adds the Spot taint itself: a program that does not declare it still gets it on the nodes."""
    pool = aks_pool(nodeTaints=[GPU_TAINT])
    [(message, _)] = rules.check_device_plugin_tolerations(
        [R(AGENT_POOL, "t4", pool), R(DAEMON_SET, "dp", device_plugin([TOLERATE_GPU]))]
    )
    assert SPOT_TAINT in message


def test_device_plugin_must_tolerate_extra_taints() -> None:
    pool = aks_pool(
        scaleSetPriority="Regular", nodeTaints=[GPU_TAINT, "dedicated=training:NoSchedule", "soft=x:PreferNoSchedule"]
    )
    [(message, _)] = rules.check_device_plugin_tolerations(
        [R(AGENT_POOL, "a", pool), R(DAEMON_SET, "dp", device_plugin([TOLERATE_GPU]))]
    )
    assert "does not tolerate ['dedicated=training:NoSchedule']" in message  # PreferNoSchedule does not block


def test_device_plugin_eks_taint_spelling_is_converted() -> None:
    group = eks_group(
        taints=[
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
            {"key": "team", "value": "a", "effect": "NO_EXECUTE"},
        ]
    )
    resources = [R(NODE_GROUP, "ng", group), R(DAEMON_SET, "dp", device_plugin([TOLERATE_GPU]))]
    [(message, _)] = rules.check_device_plugin_tolerations(resources)
    assert "does not tolerate ['team=a:NoExecute'] of EKS node group 'gpu1-spot-a'" in message
    both = device_plugin([TOLERATE_GPU, {"key": "team", "operator": "Exists", "effect": "NoExecute"}])
    assert rules.check_device_plugin_tolerations([R(NODE_GROUP, "ng", group), R(DAEMON_SET, "dp", both)]) == []


def test_device_plugin_one_of_several_daemonsets_suffices() -> None:
    resources = [
        R(AGENT_POOL, "t4", aks_pool()),
        R(DAEMON_SET, "a", device_plugin([TOLERATE_GPU], name="plugin-a")),
        R(DAEMON_SET, "b", device_plugin([{"operator": "Exists"}], name="plugin-b")),
    ]
    assert rules.check_device_plugin_tolerations(resources) == []


def test_device_plugin_absent_fails_at_stack_level_unless_configured() -> None:
    resources = [R(AGENT_POOL, "t4", aks_pool()), R(DAEMON_SET, "other", {"metadata": {"name": "fluent-bit"}})]
    [(message, urn)] = rules.check_device_plugin_tolerations(resources)
    assert urn is None
    assert "the stack has GPU pools ['t4spot'] but no NVIDIA device plugin DaemonSet" in message
    assert rules.check_device_plugin_tolerations(resources, config={"devicePluginOutsideStack": True}) == []


def test_device_plugin_not_needed_without_gpu_pools_or_on_bottlerocket() -> None:
    cpu = aks_pool(vmSize="Standard_D4s_v5", scaleSetPriority="Regular", nodeTaints=[])
    assert rules.check_device_plugin_tolerations([R(AGENT_POOL, "cpu", cpu)]) == []
    bottlerocket = eks_group(amiType="BOTTLEROCKET_x86_64_NVIDIA")
    assert rules.check_device_plugin_tolerations([R(NODE_GROUP, "br", bottlerocket)]) == []


def test_device_plugin_not_needed_on_aks_pools_without_a_driver() -> None:
    """gpuDriver: none on AKS (gpuProfile.driver None): the user's GPU Operator serves it, so neither
    a missing plugin nor an untolerated extra taint is a violation; Install still is."""
    none = aks_pool(gpuProfile={"driver": "None"}, nodeTaints=[GPU_TAINT, SPOT_TAINT, "dedicated=training:NoSchedule"])
    assert rules.check_device_plugin_tolerations([R(AGENT_POOL, "t4", none)]) == []
    resources = [R(AGENT_POOL, "t4", none), R(DAEMON_SET, "dp", device_plugin([TOLERATE_GPU]))]
    assert rules.check_device_plugin_tolerations(resources) == []
    install = aks_pool(gpuProfile={"driver": "Install"})
    [(message, _)] = rules.check_device_plugin_tolerations([R(AGENT_POOL, "t4", install)])
    assert "no NVIDIA device plugin DaemonSet" in message


def test_device_plugin_recognised_by_image() -> None:
    props = device_plugin([], name="gpu-agent")
    assert shapes.is_device_plugin(DAEMON_SET, props)
    props["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/k8s-device-plugin-fork:1"
    assert not shapes.is_device_plugin(DAEMON_SET, props)


# --- 7. gpu-on-demand-has-spot-sibling (advisory, stack) ---------------------------------------


def on_demand(**overrides: Any) -> dict[str, Any]:
    return aks_pool(agentPoolName="t4od", scaleSetPriority="Regular", nodeTaints=[GPU_TAINT], **overrides)


def test_spot_sibling_same_shape_passes() -> None:
    resources = [R(AGENT_POOL, "spot", aks_pool(nodeLabels={})), R(AGENT_POOL, "od", on_demand(nodeLabels={}))]
    assert rules.check_spot_sibling(resources) == []


def test_spot_sibling_same_pool_label_passes() -> None:
    spot = aks_pool(vmSize="Standard_NC8as_T4_v3")
    assert rules.check_spot_sibling([R(AGENT_POOL, "spot", spot), R(AGENT_POOL, "od", on_demand())]) == []


def test_lonely_on_demand_gpu_pool_fails() -> None:
    [(message, urn)] = rules.check_spot_sibling([R(AGENT_POOL, "od", on_demand(), "urn:od")])
    assert urn == "urn:od"
    assert (
        "AKS agent pool 't4od' is an on-demand GPU pool with no Spot GPU pool of the same shape (Standard_NC4as_T4_v3)" in message
    )


def test_spot_sibling_must_be_in_the_same_cluster() -> None:
    other_cluster = aks_pool(resourceName="other")
    [(message, _)] = rules.check_spot_sibling([R(AGENT_POOL, "spot", other_cluster), R(AGENT_POOL, "od", on_demand())])
    assert "'t4od'" in message


def test_spot_sibling_eks_shares_an_instance_type() -> None:
    spot = eks_group(labels={})
    fallback = eks_group(nodeGroupName="gpu1-od-a", capacityType="ON_DEMAND", instanceTypes=["g5.xlarge"], labels={})
    assert rules.check_spot_sibling([R(NODE_GROUP, "s", spot), R(NODE_GROUP, "o", fallback)]) == []
    big = eks_group(nodeGroupName="gpu4-od-a", capacityType="ON_DEMAND", instanceTypes=["g5.12xlarge"], labels={})
    [(message, _)] = rules.check_spot_sibling([R(NODE_GROUP, "s", spot), R(NODE_GROUP, "o", big)])
    assert "EKS node group 'gpu4-od-a' is an on-demand GPU pool" in message


# --- 8. gpu-pool-upper-bound (advisory) --------------------------------------------------------


def test_upper_bound_passes() -> None:
    assert rules.check_upper_bound(AGENT_POOL, aks_pool()) == []
    assert rules.check_upper_bound(NODE_GROUP, eks_group()) == []


def test_upper_bound_fails_above_the_default() -> None:
    [message] = rules.check_upper_bound(AGENT_POOL, aks_pool(maxCount=200.0))
    assert "AKS agent pool 't4spot' can grow to 200 GPU nodes (maxCount), above this pack's advisory bound of 50" in message


def test_upper_bound_follows_the_config() -> None:
    assert rules.check_upper_bound(AGENT_POOL, aks_pool(maxCount=200.0), config={"maxNodesPerPool": 300}) == []
    [message] = rules.check_upper_bound(AGENT_POOL, aks_pool(maxCount=8.0), config={"maxNodesPerPool": 4})
    assert "bound of 4" in message


def test_upper_bound_missing_maximum_fails() -> None:
    [message] = rules.check_upper_bound(NODE_GROUP, eks_group(scalingConfig={"minSize": 0.0, "desiredSize": 0.0}))
    assert (
        "EKS node group 'gpu1-spot-a' is an autoscaled GPU pool without an upper bound: scalingConfig.maxSize is not set"
        in message
    )


def test_upper_bound_skips_fixed_aks_pools_and_cpu_pools() -> None:
    assert rules.check_upper_bound(AGENT_POOL, aks_pool(enableAutoScaling=False, maxCount=None, count=2.0)) == []
    assert rules.check_upper_bound(AGENT_POOL, aks_pool(vmSize="Standard_D4s_v5", maxCount=500.0)) == []


# --- all rules together --------------------------------------------------------------------------


def test_check_resource_reports_each_fired_rule_by_policy_name() -> None:
    bad = aks_pool(nodeTaints=[SPOT_TAINT], minCount=1.0, enableNodePublicIP=True, maxCount=100.0)
    found = rules.check_resource(AGENT_POOL, bad, name="x")
    assert set(found) == {
        "gpu-pool-taint",
        "gpu-spot-scale-to-zero",
        "autoscaled-count-ignored",
        "no-public-node-ips",
        "gpu-pool-upper-bound",
    }
    assert rules.check_resource(AGENT_POOL, aks_pool(), ignore_changes=["count"]) == {}


def test_messages_fall_back_to_the_logical_name_when_the_pool_name_is_unknown() -> None:
    [message] = rules.check_gpu_taint(AGENT_POOL, aks_pool(agentPoolName=UNKNOWN, nodeTaints=[]), name="ml-dev-t4-spot")
    assert "AKS agent pool 'ml-dev-t4-spot'" in message
