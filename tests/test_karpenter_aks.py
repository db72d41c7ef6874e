"""AKS Node Auto Provisioning (``gpupools:provisioner: karpenter`` on Azure), on the recording mock runtime.

What ``azure-nap-dev`` registers, checked against sources nobody here wrote: the pinned CRD schemas of
Azure/karpenter-provider-azure v1.14.2 (``tests/crd_schema.py``), pulumi-azure-native's enums for the
cluster fields, the provider's label and zone conventions and its GPU size list (typed below from
the v1.14.2 sources), and the scheduler model of ``tests/k8s_schema.py`` for where the device plugin
lands.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pulumi
import pytest
from gpupools import config
from gpupools.azure import AksCluster
from gpupools.azure.nap_nodes import NapNodePools, sku_gpu_name, zone_values
from gpupools.catalog.azure_vm_sizes import GPU_SIZES
from gpupools.catalog.prices import price_table
from gpupools.conventions import KARPENTER_CAPACITY_TYPE_LABEL, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.specs import Cloud, ClusterSpec, SystemPoolSpec
from gpupools.testing import Run, run_program, stack_config
from pulumi_azure_native import containerservice

from tests.crd_schema import validate_custom_resource
from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, untolerated

STACK = "azure-nap-dev"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.azure.com/v1beta1:AKSNodeClass"
CLUSTER = "azure-native:containerservice:ManagedCluster"


@cache
def run() -> Run:
    return example_run(STACK)


def custom_resource(inputs: dict[str, Any]) -> dict[str, Any]:
    return {key: inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def node_pools() -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: custom_resource(r.inputs) for r in run().of_type(NODEPOOL)}


def node_classes() -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: custom_resource(r.inputs) for r in run().of_type(NODECLASS)}


def requirement(pool: dict[str, Any], key: str) -> list[str] | None:
    found = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    if not found:
        return None
    [only] = found
    assert only["operator"] == "In"
    return list(only["values"])


def managed_cluster() -> dict[str, Any]:
    [cluster] = run().of_type(CLUSTER)
    return cluster.inputs


# --- the cluster -------------------------------------------------------------------------------------


def test_cluster_enables_nap_without_aks_default_nodepools() -> None:
    profile = managed_cluster()["nodeProvisioningProfile"]
    assert profile == {
        "mode": containerservice.NodeProvisioningMode.AUTO.value,
        "defaultNodePools": containerservice.NodeProvisioningDefaultNodePools.NONE.value,
    }
    assert profile == {"mode": "Auto", "defaultNodePools": "None"}  # the ARM spellings


def test_system_pool_has_a_fixed_size_and_no_autoscaler_profile() -> None:
    inputs = managed_cluster()
    [system] = inputs["agentPoolProfiles"]
    assert system["mode"] == "System" and system["enableAutoScaling"] is False
    assert system["count"] == stack_config(STACK)["gpupools:systemPool"]["minSize"] == 2
    assert "minCount" not in system and "maxCount" not in system
    assert "autoScalerProfile" not in inputs
    # The inline array is ignored whole after create (gpupools.azure.inline_pools); a fixed
    # System pool's count is ours, so a changed minSize is compared and sent
    # (tests/test_inline_pools.py::test_a_fixed_system_pool_compares_its_count).
    [cluster] = run().of_type(CLUSTER)
    assert cluster.options.get("ignoreChanges") == ["agentPoolProfiles"]


def test_network_is_azure_cni_overlay_powered_by_cilium() -> None:
    network = managed_cluster()["networkProfile"]
    assert network["networkPlugin"] == containerservice.NetworkPlugin.AZURE.value
    assert network["networkPluginMode"] == containerservice.NetworkPluginMode.OVERLAY.value
    assert network["networkDataplane"] == containerservice.NetworkDataplane.CILIUM.value
    assert network["networkPolicy"] == containerservice.NetworkPolicy.CILIUM.value
    assert network["loadBalancerSku"] == "standard"  # NAP in a custom VNet needs the Standard LB


def test_dataplane_values_are_the_sdks() -> None:
    assert set(config.DATAPLANES) == {d.value for d in containerservice.NetworkDataplane}


def test_no_agent_pools_and_no_priority_expander() -> None:
    assert run().of_type("azure-native:containerservice:AgentPool") == []
    names = [str(r.inputs.get("metadata", {}).get("name", "")) for r in run().registrations]
    assert "cluster-autoscaler-priority-expander" not in names
    assert not run().of_type("gpupools:index:PriorityExpander")


def test_autoscaler_stack_is_unchanged_by_nap_support() -> None:
    """azure-dev keeps its autoscaled System pool, its profile and AKS's default dataplane."""
    [cluster] = example_run("azure-dev").of_type(CLUSTER)
    assert "nodeProvisioningProfile" not in cluster.inputs
    assert "networkDataplane" not in cluster.inputs["networkProfile"]
    assert cluster.inputs["agentPoolProfiles"][0]["enableAutoScaling"] is True
    assert cluster.inputs["autoScalerProfile"]["expander"] == "priority"


# --- node classes and NodePools ----------------------------------------------------------------------


def test_nap_nodepools_and_node_classes_wait_for_a_gpu_drain_on_delete() -> None:
    # Karpenter's drain on delete is the same under NAP (gpupools.kubernetes.karpenter.nodepool.DELETE_TIMEOUT).
    resources = run().of_type(NODEPOOL) + run().of_type(NODECLASS)
    assert len(resources) == 6
    for reg in resources:
        assert reg.options.get("customTimeouts") == {"delete": "30m"}, reg.name


def test_every_custom_resource_is_valid_against_the_pinned_azure_crds() -> None:
    objects = [*node_pools().values(), *node_classes().values()]
    assert len(objects) == 6
    for obj in objects:
        assert validate_custom_resource(obj, provider="azure") == [], obj["metadata"]["name"]


def test_one_node_class_per_pool_with_the_image_disk_and_gpu_driver() -> None:
    raw = {p["name"]: p for p in [*stack_config(STACK)["gpupools:gpuPools"], *stack_config(STACK)["gpupools:cpuPools"]]}
    classes = node_classes()
    assert set(classes) == set(raw)
    for name, node_class in classes.items():
        spec = node_class["spec"]
        assert spec["imageFamily"] == "Ubuntu"
        assert spec["osDiskSizeGB"] == raw[name].get("diskSizeGb", 128)
        assert spec["tags"] == {"gpupools-pool": name}
        assert "vnetSubnetID" not in spec  # NAP uses the cluster's node subnet
        is_gpu = name in {p["name"] for p in stack_config(STACK)["gpupools:gpuPools"]}
        assert spec.get("gpu") == ({"mode": "Driver"} if is_gpu else None)
    assert classes["a100"]["spec"]["osDiskSizeGB"] == 256


def test_nodepools_require_the_size_the_zones_and_the_capacity_types() -> None:
    pools = node_pools()
    assert set(pools) == {"t4", "a100", "general"}
    for name, pool in pools.items():
        ref = pool["spec"]["template"]["spec"]["nodeClassRef"]
        assert ref == {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": name}
        assert requirement(pool, KARPENTER_CAPACITY_TYPE_LABEL) == ["spot", "on-demand"]
        assert requirement(pool, "kubernetes.io/arch") == ["amd64"]
    assert requirement(pools["t4"], "node.kubernetes.io/instance-type") == ["Standard_NC4as_T4_v3"]
    # Karpenter's Azure provider labels zones <region>-<zone> (pkg/utils/zones/zones.go).
    assert requirement(pools["t4"], "topology.kubernetes.io/zone") == ["eastus-1", "eastus-2", "eastus-3"]
    assert requirement(pools["a100"], "topology.kubernetes.io/zone") == ["eastus-1", "eastus-2"]


def test_gpu_nodepools_carry_the_azure_sku_selector_labels() -> None:
    pools = node_pools()
    assert requirement(pools["t4"], "karpenter.azure.com/sku-family") == ["N"]
    assert requirement(pools["t4"], "karpenter.azure.com/sku-gpu-manufacturer") == ["nvidia"]
    assert requirement(pools["t4"], "karpenter.azure.com/sku-gpu-count") == ["1"]
    assert requirement(pools["t4"], "karpenter.azure.com/sku-gpu-name") == ["T4"]
    assert requirement(pools["a100"], "karpenter.azure.com/sku-gpu-name") == ["A100"]
    assert requirement(pools["general"], "karpenter.azure.com/sku-gpu-manufacturer") is None


ACCELERATOR_SEGMENTS = {
    "Standard_NC4as_T4_v3": "T4",
    "Standard_NC8as_T4_v3": "T4",
    "Standard_NC16as_T4_v3": "T4",
    "Standard_NC64as_T4_v3": "T4",
    "Standard_NC24ads_A100_v4": "A100",
    "Standard_NC48ads_A100_v4": "A100",
    "Standard_NC96ads_A100_v4": "A100",
    "Standard_NC40ads_H100_v5": "H100",
    "Standard_NC80adis_H100_v5": "H100",
    "Standard_ND96asr_v4": None,
    "Standard_ND96amsr_A100_v4": "A100",
    "Standard_ND96isr_H100_v5": "H100",
    "Standard_ND96isr_H200_v5": "H200",
}
"""The accelerator segment of each catalog GPU size, as Azure/skewer's size-name grammar reads it
(``vmsize.go``: an optional ``_[A-Z][0-9]+`` after the additive features; the provider copies it to
``karpenter.azure.com/sku-gpu-name``). Typed by hand from the names; ND96asr_v4 has none."""


def test_sku_gpu_name_reads_the_accelerator_segment_of_every_catalog_size() -> None:
    assert set(ACCELERATOR_SEGMENTS) == set(GPU_SIZES)
    assert {size: sku_gpu_name(size) for size in GPU_SIZES} == ACCELERATOR_SEGMENTS


NAP_UBUNTU_NVIDIA_SIZES = {
    "standard_nc4as_t4_v3",
    "standard_nc8as_t4_v3",
    "standard_nc16as_t4_v3",
    "standard_nc64as_t4_v3",
    "standard_nc24ads_a100_v4",
    "standard_nc48ads_a100_v4",
    "standard_nc96ads_a100_v4",
    "standard_nc40ads_h100_v5",
    "standard_nc80adis_h100_v5",
    "standard_nd96asr_v4",
    "standard_nd96amsr_a100_v4",
    "standard_nd96isr_h100_v5",
    "standard_nd96isr_h200_v5",
}
"""Sizes listed with ``gpu: nvidia`` and ``ubuntu`` among their ``os`` in
Azure/karpenter-provider-azure ``pkg/utils/supported-gpus.yaml`` at v1.14.2 (commit d1552b7e),
typed from that file for the sizes gpupools knows. NAP offers a GPU size only if it is listed there
for the node class's OS (``pkg/providers/instancetype/instancetypes.go``, ``IsGPUSKUSupportedOnOS``)."""


def test_every_catalog_gpu_size_is_one_nap_provisions_on_ubuntu() -> None:
    assert {size.lower() for size in GPU_SIZES} <= NAP_UBUNTU_NVIDIA_SIZES


def test_labels_taints_limits_and_disruption() -> None:
    pools = node_pools()
    t4, a100, general = pools["t4"]["spec"], pools["a100"]["spec"], pools["general"]["spec"]
    assert t4["template"]["metadata"]["labels"] == {
        "gpupools.io/pool": "t4",
        "gpupools.io/role": "gpu",
        "nvidia.com/gpu.present": "true",
        "team": "vision",
    }
    assert [t["key"] for t in a100["template"]["spec"]["taints"]] == ["nvidia.com/gpu", "dedicated"]
    assert general["template"]["spec"]["taints"] == []
    # 8 x NC4as_T4_v3 (4 vCPUs, 1 T4; no sharing under NAP); 4 x NC24ads_A100_v4 (24 vCPUs, 1 GPU).
    assert t4["limits"] == {"cpu": "32", "nodes": "8", "nvidia.com/gpu": "8"}
    assert a100["limits"] == {"cpu": "96", "nodes": "4", "nvidia.com/gpu": "4"}
    assert general["limits"] == {"cpu": "80", "nodes": "10"}
    for spec in (t4, a100, general):
        assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty"
        assert spec["disruption"]["consolidateAfter"] == "10m"
        assert spec["template"]["spec"]["expireAfter"] == "Never"


def test_weights_follow_the_spot_price_per_node_hour() -> None:
    table = price_table(Cloud.AZURE)
    pools = node_pools()

    def spot(name: str) -> float:
        [size] = requirement(pools[name], "node.kubernetes.io/instance-type") or []
        price = table.price("eastus", size)
        assert price is not None and price.spot is not None
        return price.spot

    by_weight = sorted(pools, key=lambda n: -pools[n]["spec"]["weight"])
    assert by_weight == sorted(pools, key=spot)
    assert pools[by_weight[0]]["spec"]["weight"] == 100


def test_device_plugin_lands_on_every_gpu_nodepools_nodes_and_no_cpu_nodes() -> None:
    [daemonset] = [
        d for d in run().of_type("kubernetes:apps/v1:DaemonSet") if d.inputs["metadata"]["name"] == "nvidia-device-plugin"
    ]
    pod = daemonset.inputs["spec"]["template"]["spec"]
    for name, pool in node_pools().items():
        template = pool["spec"]["template"]
        for capacity in ("spot", "on-demand"):
            # A node NAP launches carries the template labels plus Karpenter's own; NAP adds no Spot taint.
            labels = {**template["metadata"]["labels"], KARPENTER_CAPACITY_TYPE_LABEL: capacity, "karpenter.sh/nodepool": name}
            taints = [Taint(t["key"], t["value"], TaintEffect(t["effect"])) for t in template["spec"]["taints"]]
            lands = affinity_matches(pod["affinity"], labels) and not untolerated(pod["tolerations"], taints)
            assert lands == (labels["gpupools.io/role"] == "gpu"), (name, capacity)


def test_node_pools_and_cost_outputs() -> None:
    outputs = {p["name"]: p for p in run().outputs["nodePools"]}
    assert outputs["system"]["minSize"] == outputs["system"]["maxSize"] == 2
    assert outputs["t4"]["capacityTypes"] == ["spot", "on-demand"]
    assert outputs["t4"]["limits"] == {"cpu": "32", "nodes": "8", "nvidia.com/gpu": "8"}
    assert run().outputs["cost"]["idlePerHour"] == pytest.approx(2 * outputs["system"]["pricePerNodeHour"])


def test_policy_pack_passes_the_nap_nodepools() -> None:
    import sys
    from pathlib import Path

    policy_dir = str(Path(__file__).resolve().parents[1] / "policy")
    if policy_dir not in sys.path:
        sys.path.insert(0, policy_dir)
    from gpupools_policy import rules as policy_rules

    for reg in run().of_type(NODEPOOL):
        assert policy_rules.check_karpenter_gpu_nodepool(reg.type, reg.inputs, name=reg.name) == []
    t4 = next(r for r in run().of_type(NODEPOOL) if r.name.endswith("-t4"))
    spec = json.loads(json.dumps(t4.inputs["spec"]))
    spec["template"]["spec"]["taints"] = []
    assert len(policy_rules.check_karpenter_gpu_nodepool(t4.type, {**t4.inputs, "spec": spec}, name="t4")) == 1


# --- regional clusters, the component's own checks ---------------------------------------------------


def test_zone_values_and_a_regional_cluster_get_no_zone_requirement() -> None:
    assert zone_values("EastUS", ["1", "3"]) == ["eastus-1", "eastus-3"]
    spec = config.parse(stack_config(STACK), "eastus")
    regional = [p for p in spec.pools if not p.zones]

    def program() -> None:
        nap = NapNodePools("nap", regional, location="eastus", zones=(), consolidate_after="10m")
        for manifest in nap.manifests.values():
            assert requirement(manifest, "topology.kubernetes.io/zone") is None
            assert validate_custom_resource(manifest, provider="azure") == []

    result = run_program(program, {})
    assert result.error is None and len(result.of_type(NODEPOOL)) == len(regional)


def test_aks_cluster_refuses_an_autoscaled_system_pool_under_nap_before_registering() -> None:
    def program() -> None:
        AksCluster(
            "nap",
            cluster=ClusterSpec(name="nap", kubernetes_version="1.35", zones=("1",)),
            system_pool=SystemPoolSpec(instance_types=("Standard_D4s_v5",), min_size=2, max_size=4),
            location="eastus",
            node_auto_provisioning=True,
            opts=pulumi.ResourceOptions(),
        )

    result = run_program(program, {}, raise_errors=False)
    assert isinstance(result.error, ConfigError)
    assert result.error.path == "AksCluster(nap).system_pool.max_size" and "must equal min_size (2)" in str(result.error)
    assert result.registrations == []


def test_nap_config_fixes_the_system_pool_and_defaults_the_dataplane_to_cilium() -> None:
    spec = config.parse(stack_config(STACK), "eastus")
    assert spec.node_auto_provisioning
    assert spec.system_pool.max_size == spec.system_pool.min_size == 2
    assert spec.network.dataplane == "cilium"
    chosen = config.parse({**stack_config(STACK), "gpupools:network": {"dataplane": "azure"}}, "eastus")
    assert chosen.network.dataplane == "azure"
    assert config.parse(stack_config("azure-dev"), "eastus").network.dataplane is None


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"minSize": 1}, "pools[0].min_size", "must be 0"),
        ({"onDemandMaxSize": 2}, "pools[0].on_demand_max_size", "no meaning under NAP"),
        ({"spotMaxPrice": 0.5}, "pools[0].spot_max_price", "must be -1"),
        ({"instanceTypes": ["Standard_NC24ads_A100_v4"], "sharing": {"mig": {"profile": "MIG1g"}}}, "pools[0].sharing", "MIG"),
        ({"labels": {"karpenter.azure.com/x": "y"}}, "pools[0].labels.karpenter.azure.com/x", "Karpenter reserves"),
        ({"sharing": {"timeSlicing": {"replicas": 2}}}, "pools[0].sharing", "NodeOverlay feature gate"),
        ({"sharing": {"mps": {"replicas": 4}}}, "pools[0].sharing", "k pending pods buy k nodes"),
    ],
)
def test_nap_node_pools_refuse_what_nap_cannot_do_before_registering(change: dict[str, Any], path: str, words: str) -> None:
    from gpupools.config import parse_pool
    from gpupools.conventions import Role

    pool = parse_pool(
        {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4, **change}, Cloud.AZURE, "t4", Role.GPU
    )

    def program() -> None:
        NapNodePools("nap", [pool], location="eastus", zones=["1", "2", "3"], consolidate_after="10m")

    result = run_program(program, {}, raise_errors=False)
    assert isinstance(result.error, ConfigError), result.error
    assert result.error.path == f"NapNodePools(nap).{path}" and words in str(result.error)
    assert result.registrations == []
