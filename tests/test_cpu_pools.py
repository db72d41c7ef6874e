"""CPU worker pools (``gpupools:cpuPools``) on both clouds, on the mock runtime: what each cloud
receives, what the device plugin and the priority expander derive from them, where
``cpu_workload()`` lands, and the bad inputs that must fail with one error each.

Expectations come from the stack files and the conventions, not from the code under test: a CPU
pool is the GPU pool's lifecycle (Spot first, on-demand fallback, from zero, count owned by the
autoscaler) without anything GPU.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

import botocore.session
import pytest
import yaml
from gpupools import config
from gpupools.conventions import AKS_SPOT_TAINT, GPU_TAINT, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.kubernetes.priority_expander import CONFIG_MAP_NAME
from gpupools.scheduling import cpu_only, cpu_workload, gpu_workload
from gpupools.testing import Registration, Run, stack_config
from gpupools.testing.manifests import to_manifest

from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, untolerated

AGENT_POOL = "azure-native:containerservice:AgentPool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
AZURE = stack_config("azure-dev")
AWS = stack_config("aws-dev")


@functools.cache
def run(stack: str) -> Run:
    return example_run(stack)


def cpu_entries(stack: str) -> list[dict[str, Any]]:
    return list((AZURE if stack == "azure-dev" else AWS).get("gpupools:cpuPools", []))


def test_each_example_stack_has_a_spot_cpu_pool() -> None:
    for stack in ("azure-dev", "aws-dev"):
        [entry] = cpu_entries(stack)
        assert entry.get("spot", True) and entry.get("minSize", 0) == 0


# --- AKS --------------------------------------------------------------------------------------------


def aks_cpu_pools() -> list[Registration]:
    return [p for p in run("azure-dev").of_type(AGENT_POOL) if p.inputs["nodeLabels"]["gpupools.io/role"] == "cpu"]


def test_aks_cpu_pool_is_a_spot_and_an_on_demand_user_pool_without_gpu_settings() -> None:
    [entry] = cpu_entries("azure-dev")
    pools = aks_cpu_pools()
    assert sorted(p.inputs["scaleSetPriority"] for p in pools) == ["Regular", "Spot"]
    for pool in pools:
        inputs = pool.inputs
        assert inputs["mode"] == "User" and inputs["vmSize"] == entry["instanceTypes"][0]
        assert "gpuProfile" not in inputs and "gpuInstanceProfile" not in inputs
        assert inputs["nodeLabels"]["gpupools.io/pool"] == entry["name"]
        assert "nvidia.com/gpu.present" not in inputs["nodeLabels"]
        assert not any(t.startswith("nvidia.com/gpu") for t in inputs.get("nodeTaints", []))
        assert inputs["enableAutoScaling"] is True and inputs["count"] == inputs["minCount"] == 0
        assert pool.ignore_changes == ["count"]
        if inputs["scaleSetPriority"] == "Spot":
            assert str(AKS_SPOT_TAINT) in inputs["nodeTaints"]
            assert inputs["maxCount"] == entry["maxSize"]


def test_aks_cpu_pools_are_chained_after_every_gpu_pool() -> None:
    every = run("azure-dev").of_type(AGENT_POOL)
    gpu = [p for p in every if p.inputs["nodeLabels"]["gpupools.io/role"] == "gpu"]
    spot, on_demand = sorted(aks_cpu_pools(), key=lambda p: p.inputs["scaleSetPriority"] != "Spot")
    assert gpu[-1].urn in spot.dependencies and spot.urn in on_demand.dependencies


# --- EKS --------------------------------------------------------------------------------------------


def eks_cpu_groups() -> list[Registration]:
    return [g for g in run("aws-dev").of_type(NODE_GROUP) if g.inputs["labels"]["gpupools.io/role"] == "cpu"]


def test_eks_cpu_pool_is_a_spot_and_an_on_demand_group_per_zone_with_a_standard_ami() -> None:
    [entry] = cpu_entries("aws-dev")
    zones = AWS["gpupools:cluster"]["zones"]
    groups = eks_cpu_groups()
    assert sorted(g.inputs["capacityType"] for g in groups) == sorted(["SPOT", "ON_DEMAND"] * len(zones))
    ami_types = botocore.session.get_session().get_service_model("eks").shape_for("AMITypes").enum
    for group in groups:
        inputs = group.inputs
        assert inputs["amiType"] == "AL2023_x86_64_STANDARD" and inputs["amiType"] in ami_types
        assert inputs["instanceTypes"] == entry["instanceTypes"]
        assert not inputs.get("taints")
        assert "k8s.amazonaws.com/accelerator" not in inputs["labels"]
        assert "scalingConfig.desiredSize" in group.ignore_changes
        assert inputs["scalingConfig"]["minSize"] == 0 == inputs["scalingConfig"]["desiredSize"]
        assert not any("nvidia.com/gpu" in key for key in inputs.get("tags", {}))


def test_eks_cpu_groups_carry_scale_from_zero_label_tags_and_no_gpu_resource_tag() -> None:
    aws = run("aws-dev")
    from tests.test_aws_stack import asg_of, tags_on

    for group in eks_cpu_groups():
        tags = tags_on(aws, asg_of(group))
        prefix = "k8s.io/cluster-autoscaler/node-template/label/"
        labels = {k[len(prefix) :]: v for k, v in tags.items() if k.startswith(prefix)}
        assert labels == group.inputs["labels"]
        assert not any("resources/nvidia.com/gpu" in k for k in tags)


# --- derived: device plugin, priority expander, placement -------------------------------------------


EKS_EFFECTS = {
    "NO_SCHEDULE": TaintEffect.NO_SCHEDULE,
    "NO_EXECUTE": TaintEffect.NO_EXECUTE,
    "PREFER_NO_SCHEDULE": TaintEffect.PREFER_NO_SCHEDULE,
}


@functools.cache
def nodes(stack: str) -> list[dict[str, Any]]:
    """What a node of each pool looks like to the scheduler: labels and taints, read from what the
    cloud receives (plus the Spot label and taint AKS adds), with the pool's role and capacity."""
    found = []
    if stack == "azure-dev":
        for pool in run(stack).of_type(AGENT_POOL):
            inputs = pool.inputs
            labels = dict(inputs["nodeLabels"])
            taints = []
            for text in inputs.get("nodeTaints", []):
                key_value, effect = text.rsplit(":", 1)
                key, value = key_value.split("=", 1)
                taints.append(Taint(key, value, TaintEffect(effect)))
            found.append(
                {
                    "name": inputs["agentPoolName"],
                    "labels": labels,
                    "taints": taints,
                    "spot": inputs["scaleSetPriority"] == "Spot",
                }
            )
    else:
        for group in run(stack).of_type(NODE_GROUP):
            inputs = group.inputs
            taints = [Taint(t["key"], t["value"], EKS_EFFECTS[t["effect"]]) for t in inputs.get("taints", [])]
            found.append(
                {
                    "name": inputs["nodeGroupName"],
                    "labels": dict(inputs["labels"]),
                    "taints": taints,
                    "spot": inputs["capacityType"] == "SPOT",
                }
            )
    for node in found:
        node["role"] = node["labels"]["gpupools.io/role"]
    return found


def manifests(stack: str) -> list[dict[str, Any]]:
    return [to_manifest(r) for r in run(stack).kubernetes_objects()]


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_device_plugin_never_lands_on_a_cpu_pool(stack: str) -> None:
    daemon_sets = [m for m in manifests(stack) if m["kind"] == "DaemonSet"]
    cpu_nodes = [n["labels"] for n in nodes(stack) if n["role"] == "cpu"]
    assert cpu_nodes
    for daemon_set in daemon_sets:
        affinity = daemon_set["spec"]["template"]["spec"]["affinity"]
        for labels in cpu_nodes:
            assert not affinity_matches(affinity, labels), daemon_set["metadata"]["name"]


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_priority_expander_ranks_cpu_spot_above_its_fallback(stack: str) -> None:
    [config_map] = [m for m in manifests(stack) if m["kind"] == "ConfigMap" and m["metadata"]["name"] == CONFIG_MAP_NAME]
    tiers = {int(k): v for k, v in yaml.safe_load(config_map["data"]["priorities"]).items()}

    def tier_of(group_name: str) -> int:
        matching = [tier for tier, regexes in tiers.items() for r in regexes if re.search(r, group_name)]
        assert matching, group_name
        return max(matching)

    def group_name(node: dict[str, Any]) -> str:  # the scale set / ASG name the autoscaler sees
        if stack == "azure-dev":
            return f"aks-{node['name']}-12345678-vmss"
        return f"eks-{node['name']}-0b8f3c2e-1d2a-4c5b-9e7f-123456789abc"

    cpu = [n for n in nodes(stack) if n["role"] == "cpu"]
    spot = [tier_of(group_name(n)) for n in cpu if n["spot"]]
    on_demand = [tier_of(group_name(n)) for n in cpu if not n["spot"]]
    assert spot and on_demand and min(spot) > max(on_demand)


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_cpu_workload_lands_only_on_cpu_pools_and_tolerates_their_taints(stack: str) -> None:
    placement = cpu_workload()
    for node in nodes(stack):
        fits = affinity_matches(placement["affinity"], node["labels"]) and not untolerated(
            placement["tolerations"], node["taints"]
        )
        assert fits == (node["role"] == "cpu"), node["name"]
    pinned = cpu_workload("general")
    assert pinned["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"
    ][-1] == {"key": "gpupools.io/pool", "operator": "In", "values": ["general"]}
    assert GPU_TAINT.toleration() not in placement["tolerations"]
    # gpu_workload never lands on a CPU pool, cpu_only never on a GPU pool
    for node in nodes(stack):
        if node["role"] == "cpu":
            assert not affinity_matches(gpu_workload()["affinity"], node["labels"])
            assert affinity_matches(cpu_only()["affinity"], node["labels"])
        if node["role"] == "gpu":
            assert not affinity_matches(cpu_only()["affinity"], node["labels"])


# --- bad input ----------------------------------------------------------------------------------------


def with_cpu(base: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(base)
    raw["gpupools:cpuPools"] = [entry]
    return raw


BAD = [
    (
        "name-system",
        AWS,
        {"name": "system", "instanceTypes": ["m6i.xlarge"], "maxSize": 3},
        "cpuPools[0].name",
        "reserved for the system pool",
    ),
    (
        "gpu-size-azure",
        AZURE,
        {"name": "c", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 2},
        "cpuPools[0].instanceTypes[0]",
        "gpuPools",
    ),
    (
        "gpu-type-aws",
        AWS,
        {"name": "c", "instanceTypes": ["g5.xlarge"], "maxSize": 3},
        "cpuPools[0].instanceTypes[0]",
        "gpuPools",
    ),
    (
        "duplicate-name",
        AWS,
        {"name": "gpu1", "instanceTypes": ["m6i.2xlarge"], "maxSize": 3},
        "cpuPools[0].name",
        "unique across both",
    ),
    (
        "mixed-arch",
        AWS,
        {"name": "c", "instanceTypes": ["m7g.2xlarge", "m6i.2xlarge"], "maxSize": 3},
        "cpuPools[0].instanceTypes[1]",
        "arm64",
    ),
    (
        "arm-with-x86-ami",
        AWS,
        {"name": "c", "instanceTypes": ["m7g.2xlarge"], "maxSize": 3},
        "cpuPools[0].instanceTypes[0]",
        "AL2023_ARM_64_STANDARD",
    ),
    (
        "nvidia-ami",
        AWS,
        {"name": "c", "instanceTypes": ["m6i.2xlarge"], "maxSize": 3, "amiType": "AL2023_x86_64_NVIDIA"},
        "cpuPools[0].amiType",
        "NVIDIA",
    ),
    (
        "sharing",
        AZURE,
        {"name": "c", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 2, "sharing": {"timeSlicing": {"replicas": 2}}},
        "cpuPools[0].sharing",
        "GPU pools only",
    ),
    (
        "eviction-rate",
        AWS,
        {"name": "c", "instanceTypes": ["m6i.xlarge"], "maxSize": 2, "evictionRate": 0.1},
        "cpuPools[0].evictionRate",
        "GPU pools only",
    ),
    (
        "unknown-size-azure",
        AZURE,
        {"name": "c", "instanceTypes": ["Standard_Q8_v9"], "maxSize": 2},
        "cpuPools[0].instanceTypes[0]",
        "general-purpose",
    ),
]


@pytest.mark.parametrize(("case", "base", "entry", "path", "words"), BAD, ids=[b[0] for b in BAD])
def test_invalid_cpu_pools_fail_with_one_clear_error(
    case: str, base: dict[str, Any], entry: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        config.parse(with_cpu(base, entry))
    assert caught.value.path == f"gpupools:{path}", str(caught.value)
    assert words in str(caught.value)


def test_a_non_gpu_size_in_gpu_pools_points_to_cpu_pools() -> None:
    raw = copy.deepcopy(AZURE)
    raw["gpupools:gpuPools"][0]["instanceTypes"] = ["Standard_D8s_v5"]
    with pytest.raises(ConfigError, match="cpuPools"):
        config.parse(raw)


def test_graviton_pool_with_the_arm_ami_is_accepted() -> None:
    spec = config.parse(
        with_cpu(
            AWS,
            {"name": "arm", "instanceTypes": ["m7g.2xlarge", "m6g.2xlarge"], "maxSize": 3, "amiType": "AL2023_ARM_64_STANDARD"},
        )
    )
    [pool] = spec.cpu_pools
    assert pool.ami_type.value == "AL2023_ARM_64_STANDARD" and pool.min_size == 0 and pool.spot and pool.on_demand_fallback
