"""GPU sharing per pool (``gpuPools[].sharing``): config, rules, and what each cloud and autoscaler is told.

Expected values come from the sources, not from the code under test: the replica bounds from the
device plugin (v0.20.0 ``api/config/v1/replicas.go``: at least 2; ``cmd/mps-control-daemon/mps/
device.go``: at most 48 MPS clients), MIG instance counts from AKS ``gpu-multi-instance.md`` and
NVIDIA's MIG User Guide (1g: 7, 2g: 3, 3g: 2, 4g: 1, 7g: 1 per GPU), the Azure tag format from
kubernetes/autoscaler ``cloudprovider/azure/azure_template.go`` (``extractAllocatableResourcesFromScaleSet``)
and the AWS one from ``cloudprovider/aws/aws_manager.go`` (``extractAllocatableResourcesFromAsg``).
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

import pytest
import yaml
from gpupools import config
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import GPU_SIZES
from gpupools.errors import ConfigError
from gpupools.specs import SharingMode, SharingSpec
from gpupools.testing import Registration, Run, fakes, run_stack, stack_config
from gpupools.testing.manifests import to_manifest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.device_plugin_schema import check_config_file
from tests.example_runs import example_run
from tests.sharing_cases import AWS, AZURE, pool

CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_INSTANCES = {"MIG1g": 7, "MIG2g": 3, "MIG3g": 2, "MIG4g": 1, "MIG7g": 1}
"""AKS gpu-multi-instance.md, "GPU instance profiles" (Number of instances created), per GPU."""

AGENT_POOL = "azure-native:containerservice:AgentPool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
AKS_RESOURCE_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"
EKS_RESOURCE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def azure_template_resources(tags: dict[str, str]) -> dict[str, str]:
    """Resources cluster-autoscaler's Azure provider reads from scale-set tags: the part after the
    prefix, ``_`` read as ``/`` (``azure_template.go``)."""
    return {key.split(AKS_RESOURCE_TAG, 1)[1].replace("_", "/"): value for key, value in tags.items() if AKS_RESOURCE_TAG in key}


# --- config and rules ----------------------------------------------------------------------------


def test_each_mode_parses_to_its_spec() -> None:
    assert config.parse(pool(AZURE, sharing={"timeSlicing": {"replicas": 4}})).gpu_pools[0].sharing == SharingSpec(
        SharingMode.TIME_SLICING, replicas=4
    )
    assert config.parse(pool(AWS, sharing={"mps": {"replicas": 8}}), "us-west-2").gpu_pools[0].sharing == SharingSpec(
        SharingMode.MPS, replicas=8
    )
    mig = config.parse(pool(AZURE, instanceTypes=["Standard_NC24ads_A100_v4"], sharing={"mig": {"profile": "MIG2g"}}))
    assert mig.gpu_pools[0].sharing == SharingSpec(SharingMode.MIG, mig_profile="MIG2g")
    assert config.parse(AZURE).gpu_pools[0].sharing == SharingSpec()


@settings(max_examples=60, deadline=None)
@given(replicas=st.integers(-5, 100), mode=st.sampled_from(["timeSlicing", "mps"]), cloud=st.sampled_from(["azure", "aws"]))
def test_replicas_are_accepted_exactly_from_2_to_48(replicas: int, mode: str, cloud: str) -> None:
    base, region = (AZURE, None) if cloud == "azure" else (AWS, "us-west-2")
    raw = pool(base, sharing={mode: {"replicas": replicas}})
    if 2 <= replicas <= 48:
        assert config.parse(raw, region).gpu_pools[0].sharing.replicas == replicas
    else:
        with pytest.raises(ConfigError) as caught:
            config.parse(raw, region)
        assert caught.value.path == f"gpupools:gpuPools[0].sharing.{mode}.replicas"
        assert caught.value.value == replicas


@pytest.mark.parametrize("size", sorted(name for name, facts in GPU_SIZES.items() if facts.mig_capable))
@pytest.mark.parametrize("profile", sorted(MIG_INSTANCES))
def test_every_mig_size_takes_every_aks_profile(size: str, profile: str) -> None:
    spec = config.parse(pool(AZURE, instanceTypes=[size], sharing={"mig": {"profile": profile}}))
    assert spec.gpu_pools[0].sharing.mig_profile == profile
    assert dict(GPU_SIZES[size].mig_profiles) == MIG_INSTANCES


@pytest.mark.parametrize("size", sorted(name for name, facts in GPU_SIZES.items() if not facts.mig_capable))
def test_mig_is_refused_on_every_size_without_mig(size: str) -> None:
    with pytest.raises(ConfigError, match=r"MIG-capable"):
        config.parse(pool(AZURE, instanceTypes=[size], sharing={"mig": {"profile": "MIG1g"}}))


def test_the_mig_catalogue_is_the_a100_h100_and_h200_sizes() -> None:
    """AKS: MIG "is currently supported on NVIDIA A100, H100, and H200 series GPU VM sizes"."""
    for name, facts in GPU_SIZES.items():
        assert facts.mig_capable == any(model in facts.gpu_model for model in ("a100", "h100", "h200")), name


@pytest.mark.parametrize(
    "sharing",
    [
        {"timeSlicing": {"replicas": 2}},
        {"timeSlicing": {"replicas": 48}},
        {"mps": {"replicas": 4}},
        {"mig": {"profile": "MIG7g"}},
    ],
)
def test_config_names_are_label_values_and_configmap_keys(sharing: dict[str, Any]) -> None:
    from gpupools import sharing as sharing_rules

    raw = pool(AZURE, instanceTypes=["Standard_ND96asr_v4"], sharing=sharing)
    name = sharing_rules.config_name(config.parse(raw).gpu_pools[0].sharing)
    assert name and len(name) <= 63 and LABEL_VALUE.match(name) and CONFIG_MAP_KEY.match(name)


# --- AKS -------------------------------------------------------------------------------------------


def azure_pools(**sharing: dict[str, Any]) -> list[dict[str, Any]]:
    pools = copy.deepcopy(stack_config("azure-dev")["gpupools:gpuPools"])
    for entry in pools:
        if entry["name"] in sharing:
            entry["sharing"] = sharing[entry["name"]]
    return pools


@functools.cache
def azure_shared() -> Run:
    """azure-dev with its T4 pool time-sliced 4 ways and its A100 pool split with MIG1g."""
    return run_stack(
        "azure-dev",
        overrides={"gpupools:gpuPools": azure_pools(t4={"timeSlicing": {"replicas": 4}}, a100={"mig": {"profile": "MIG1g"}})},
    )


@functools.cache
def azure_plain() -> Run:
    return example_run("azure-dev")


def agent_pools(run: Run, entry: str) -> list[Registration]:
    return [p for p in run.of_type(AGENT_POOL) if p.inputs["nodeLabels"]["gpupools.io/pool"] == entry]


def test_aks_time_sliced_pool_is_labelled_and_advertises_gpus_times_replicas() -> None:
    gpus = GPU_SIZES["Standard_NC4as_T4_v3"].gpus
    pools = agent_pools(azure_shared(), "t4")
    assert len(pools) == 2  # Spot and its on-demand fallback: both share the same way
    for agent_pool in pools:
        assert agent_pool.inputs["nodeLabels"][CONFIG_LABEL] == "time-slicing-4"
        assert azure_template_resources(agent_pool.inputs["tags"]) == {"nvidia.com/gpu": str(gpus * 4)}
        assert "gpuInstanceProfile" not in agent_pool.inputs


def test_aks_mig_pool_sends_the_profile_and_advertises_the_instances() -> None:
    gpus = GPU_SIZES["Standard_NC24ads_A100_v4"].gpus
    pools = agent_pools(azure_shared(), "a100")
    assert len(pools) == 2
    for agent_pool in pools:
        assert agent_pool.inputs["gpuInstanceProfile"] == "MIG1g"
        assert agent_pool.inputs["nodeLabels"][CONFIG_LABEL] == "mig-single"
        assert azure_template_resources(agent_pool.inputs["tags"]) == {"nvidia.com/gpu": str(gpus * MIG_INSTANCES["MIG1g"])}
        assert "gpuInstanceProfile" in agent_pool.replace_on_changes


def test_aks_unshared_pools_state_their_physical_gpus_and_carry_no_config_label() -> None:
    for agent_pool in azure_plain().of_type(AGENT_POOL):
        if agent_pool.inputs["nodeLabels"].get("gpupools.io/role") != "gpu":
            continue
        size = GPU_SIZES[agent_pool.inputs["vmSize"]]
        assert azure_template_resources(agent_pool.inputs["tags"]) == {"nvidia.com/gpu": str(size.gpus)}
        assert CONFIG_LABEL not in agent_pool.inputs["nodeLabels"]
        assert "gpuInstanceProfile" not in agent_pool.inputs


def test_mig_is_create_only_and_renames_the_pool_while_time_slicing_updates_in_place() -> None:
    plain = {p.name: p.inputs["agentPoolName"] for p in azure_plain().of_type(AGENT_POOL)}
    shared = {p.name: p.inputs["agentPoolName"] for p in azure_shared().of_type(AGENT_POOL)}
    for logical in plain:
        if "-a100-" in logical:
            assert shared[logical] != plain[logical], "a new MIG profile must be a new pool (AKS cannot change it in place)"
        else:
            assert shared[logical] == plain[logical], "a label change must stay an in-place update"
    other = run_stack(
        "azure-dev",
        overrides={"gpupools:gpuPools": azure_pools(a100={"mig": {"profile": "MIG2g"}})},
    )
    other_names = {p.name: p.inputs["agentPoolName"] for p in other.of_type(AGENT_POOL)}
    assert {n for k, n in other_names.items() if "-a100-" in k}.isdisjoint({n for k, n in shared.items() if "-a100-" in k})


def test_aks_node_pools_output_shows_physical_gpus_and_slots() -> None:
    outputs = {p["name"]: p for p in azure_shared().outputs["nodePools"]}
    for agent_pool in azure_shared().of_type(AGENT_POOL):
        row = outputs[agent_pool.inputs["agentPoolName"]]
        if row["role"] == "cpu":
            # The example's CPU pool: no GPUs, no slots, no sharing, and no GPU template tag.
            assert (row["gpusPerNode"], row["gpuSlotsPerNode"], row["sharing"]) == (0, 0, "")
            assert "nvidia.com/gpu" not in azure_template_resources(agent_pool.inputs.get("tags") or {})
            continue
        size = GPU_SIZES[agent_pool.inputs["vmSize"]]
        assert row["gpusPerNode"] == size.gpus
        assert str(row["gpuSlotsPerNode"]) == azure_template_resources(agent_pool.inputs["tags"])["nvidia.com/gpu"]
        assert row["sharing"] == {"t4": "time-slicing x4", "a100": "mig MIG1g"}[row["pool"]]


# --- EKS -------------------------------------------------------------------------------------------


def aws_shared_pools() -> list[dict[str, Any]]:
    """aws-dev's pools with its 4-GPU pool time-sliced 4 ways (and whatever the file itself shares)."""
    pools = copy.deepcopy(stack_config("aws-dev")["gpupools:gpuPools"])
    for entry in pools:
        if entry["name"] == "gpu4":
            entry["sharing"] = {"timeSlicing": {"replicas": 4}}
    return pools


@functools.cache
def aws_shared() -> Run:
    return run_stack("aws-dev", overrides={"gpupools:gpuPools": aws_shared_pools()})


def replicas_in_config(entry: dict[str, Any]) -> int:
    sharing = entry.get("sharing") or {}
    return next((body["replicas"] for body in sharing.values() if "replicas" in body), 1)


def asg_tags(run: Run, group: Registration) -> dict[str, str]:
    asg = fakes.OUTPUTS[NODE_GROUP](group.name, group.inputs)["resources"][0]["autoscalingGroups"][0]["name"]
    return {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in run.of_type(ASG_TAG) if t.inputs["autoscalingGroupName"] == asg
    }


def test_eks_groups_advertise_gpus_times_replicas_on_the_asg_and_the_node_group() -> None:
    run = aws_shared()
    entries = {e["name"]: e for e in aws_shared_pools()}
    checked = 0
    for group in run.of_type(NODE_GROUP):
        entry = entries.get(group.inputs["labels"].get("gpupools.io/pool", ""))
        if entry is None:
            continue
        gpus = INSTANCE_TYPES[entry["instanceTypes"][0]].gpus
        expected = str(gpus * replicas_in_config(entry))
        assert asg_tags(run, group)[f"{EKS_RESOURCE_TAG}nvidia.com/gpu"] == expected, group.name
        assert group.inputs["tags"][f"{EKS_RESOURCE_TAG}nvidia.com/gpu"] == expected, group.name
        if entry.get("sharing"):
            assert group.inputs["labels"][CONFIG_LABEL] == f"time-slicing-{replicas_in_config(entry)}"
            assert (
                asg_tags(run, group)[f"k8s.io/cluster-autoscaler/node-template/label/{CONFIG_LABEL}"]
                == (group.inputs["labels"][CONFIG_LABEL])
            )
        else:
            assert CONFIG_LABEL not in group.inputs["labels"]
        checked += 1
    assert checked == 2 * 2 * 3  # two pools, Spot and on-demand, three zones


def test_eks_time_slicing_does_not_replace_node_groups() -> None:
    plain = {g.name: g.inputs["nodeGroupName"] for g in example_run("aws-dev").of_type(NODE_GROUP)}
    shared = {g.name: g.inputs["nodeGroupName"] for g in aws_shared().of_type(NODE_GROUP)}
    assert plain == shared


# --- the device plugin sees what the pools say ----------------------------------------------------


@pytest.mark.parametrize("run", [azure_shared, aws_shared], ids=["aks", "eks"])
def test_every_shared_node_selects_a_valid_config_of_its_replicas(run: Any) -> None:
    """Model of the config-manager (``cmd/config-manager/main.go``, ``updateConfigName``): a node's
    label names a file of the ConfigMap, an unlabelled node gets DEFAULT_CONFIG. The file it selects
    must load in the plugin and advertise, on that node, exactly what the autoscaler was told."""
    result = run()
    objects = [to_manifest(r) for r in result.kubernetes_objects()]
    [config_map] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nvidia-device-plugin-configs"]
    [daemon_set] = [o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nvidia-device-plugin"]
    pod = daemon_set["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    [init] = pod["initContainers"]
    env = {e["name"]: e.get("value") for e in init["env"]}
    assert env["NODE_LABEL"] == CONFIG_LABEL and env["DEFAULT_CONFIG"] in config_map["data"]
    [plugin] = [c for c in pod["containers"] if c["name"] == "nvidia-device-plugin-ctr"]
    assert {e["name"]: e["value"] for e in plugin["env"]}["CONFIG_FILE"] == env["CONFIG_FILE_DST"]

    for info in result.outputs["nodePools"]:
        if info["role"] != "gpu":
            continue
        labels = next(
            r.inputs.get("nodeLabels") or r.inputs.get("labels")
            for r in [*result.of_type(AGENT_POOL), *result.of_type(NODE_GROUP)]
            if info["name"] in (r.inputs.get("agentPoolName"), r.inputs.get("nodeGroupName"))
        )
        selected = labels.get(env["NODE_LABEL"], env["DEFAULT_CONFIG"])
        assert selected in config_map["data"], f"{info['name']}: no config {selected!r}"
        loaded = check_config_file(config_map["data"][selected])
        document = yaml.safe_load(config_map["data"][selected])
        if loaded["flags"].get("migStrategy") == "single":
            per_gpu = MIG_INSTANCES[info["sharing"].split()[1]]
        elif loaded["strategy"] == "none":
            per_gpu = 1
        else:
            [resource] = document["sharing"][loaded["strategy"]]["resources"]
            assert resource["name"] == "nvidia.com/gpu"
            per_gpu = resource["replicas"]
        assert info["gpuSlotsPerNode"] == info["gpusPerNode"] * per_gpu, info["name"]


# --- workloads and the synth table ---------------------------------------------------------------


def test_gpu_workload_lands_on_a_time_sliced_pool_and_asks_for_the_advertised_resource() -> None:
    """A pod placed with ``gpu_workload("t4")`` that requests ``nvidia.com/gpu: 1`` gets one slice:
    it schedules on the shared pool's nodes, and the resource it requests is the one the pool's
    config advertises (``renameByDefault: false``)."""
    from gpupools.scheduling import gpu_workload

    from tests.k8s_schema import affinity_matches, untolerated
    from tests.test_azure_stack import taints_of

    placement = gpu_workload("t4")
    run = azure_shared()
    objects = [to_manifest(r) for r in run.kubernetes_objects()]
    [config_map] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nvidia-device-plugin-configs"]
    for agent_pool in agent_pools(run, "t4"):
        labels = {"kubernetes.azure.com/agentpool": agent_pool.inputs["agentPoolName"], **agent_pool.inputs["nodeLabels"]}
        assert affinity_matches(placement["affinity"], labels)
        assert untolerated(placement["tolerations"], taints_of(agent_pool.inputs)) == []
        config = yaml.safe_load(config_map["data"][labels[CONFIG_LABEL]])
        assert [r["name"] for r in config["sharing"]["timeSlicing"]["resources"]] == ["nvidia.com/gpu"]


def test_synth_table_shows_physical_gpus_and_slots() -> None:
    from gpupools.synth.summary import POOL_COLUMNS, pool_rows

    rows = {r["NODE POOL/GROUP"]: r for r in pool_rows(azure_shared().outputs["nodePools"])}
    assert POOL_COLUMNS.index("GPUS/NODE") < POOL_COLUMNS.index("SLOTS/NODE")
    for agent_pool in azure_shared().of_type(AGENT_POOL):
        row = rows[agent_pool.inputs["agentPoolName"]]
        if row["ROLE"] == "cpu":
            assert (row["GPUS/NODE"], row["SLOTS/NODE"], row["SHARING"]) == (0, 0, "-")
            continue
        slots = azure_template_resources(agent_pool.inputs["tags"])["nvidia.com/gpu"]
        assert (row["GPUS/NODE"], str(row["SLOTS/NODE"])) == (GPU_SIZES[agent_pool.inputs["vmSize"]].gpus, slots)
        assert row["SHARING"] in ("time-slicing x4", "mig MIG1g")
    # A document written before sharing existed: one slot per GPU, no sharing.
    [old] = pool_rows([{"name": "x", "pool": "x", "role": "gpu", "gpusPerNode": 4, "minSize": 0, "maxSize": 2}])
    assert (old["SLOTS/NODE"], old["SHARING"]) == (4, "-")
