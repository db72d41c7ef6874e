"""AksCluster and GpuNodePool used directly, as a platform team would: defaults, behaviour, errors."""

from __future__ import annotations

import re
from typing import Any, Callable

import pytest
import yaml
from gpupools.azure import AksCluster, GpuNodePool
from gpupools.config import parse_gpu_pool
from gpupools.conventions import Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.specs import AutoscalerSpec, Cloud, ClusterSpec, NetworkSpec, SystemPoolSpec
from gpupools.testing import Run, run_program
from pulumi_azure_native import containerservice

AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
BYO_SUBNET = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hub/subnets/aks"
IDENTITY = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/id/providers/Microsoft.ManagedIdentity/userAssignedIdentities/aks"
T4 = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}
TAINT = re.compile(r"^(?P<key>[^=]+)=(?P<value>[^:]+):(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$")


def attempt(build: Callable[[], Any]) -> tuple[Run, ConfigError | None]:
    """Run ``build`` on the recording runtime; keep a ConfigError so the test can check what registered."""
    caught: list[ConfigError] = []

    def program() -> None:
        try:
            build()
        except ConfigError as error:
            caught.append(error)

    run = run_program(program)
    return run, caught[0] if caught else None


def pool(raw: dict[str, Any] | None = None, **kwargs: Any) -> Callable[[], GpuNodePool]:
    args: dict[str, Any] = {"resource_group_name": "rg-ml", "cluster_name": "existing", **kwargs}
    return lambda: GpuNodePool("t4", T4 if raw is None else raw, **args)


def parse_taint(text: str) -> Taint:
    match = TAINT.match(text)
    assert match, text
    return Taint(match["key"], match["value"], TaintEffect(match["effect"]))


# --- GpuNodePool standalone ------------------------------------------------------------------------


def test_gpu_node_pool_works_on_an_existing_cluster_given_by_plain_names() -> None:
    run, error = attempt(pool())
    assert error is None
    assert not run.of_type(MANAGED_CLUSTER)
    [component] = run.of_type("gpupools:index:GpuNodePool")
    pools = [run.named("t4-spot"), run.named("t4-ondemand")]
    assert len(run.of_type(AGENT_POOL)) == 2
    for p in pools:
        assert p.parent == component.urn
        assert p.inputs["resourceGroupName"] == "rg-ml"
        assert p.inputs["resourceName"] == "existing"
        assert p.inputs["mode"] == containerservice.AgentPoolMode.USER.value
        assert "vnetSubnetID" not in p.inputs  # AKS-managed VNet: nothing sent
    spot, fallback = pools
    assert spot.inputs["scaleSetPriority"] == containerservice.ScaleSetPriority.SPOT.value
    assert fallback.inputs["scaleSetPriority"] == containerservice.ScaleSetPriority.REGULAR.value
    assert (spot.inputs["minCount"], spot.inputs["maxCount"]) == (0, 4)
    assert (fallback.inputs["minCount"], fallback.inputs["maxCount"]) == (0, 4)


def test_spec_and_plain_mapping_give_identical_pools() -> None:
    spec = parse_gpu_pool(T4, Cloud.AZURE, "t4")
    from_dict, _ = attempt(pool(T4))
    from_spec, _ = attempt(lambda: GpuNodePool("t4", spec, resource_group_name="rg-ml", cluster_name="existing"))
    for logical in ("t4-spot", "t4-ondemand"):
        assert from_dict.named(logical).inputs == from_spec.named(logical).inputs


def test_brought_subnet_is_sent_to_every_pool() -> None:
    run, _ = attempt(pool(subnet_id=BYO_SUBNET))
    assert {p.inputs["vnetSubnetID"] for p in run.of_type(AGENT_POOL)} == {BYO_SUBNET}


def test_spot_false_gives_one_regular_pool_from_min_to_max() -> None:
    run, error = attempt(pool({**T4, "spot": False, "minSize": 1}))
    assert error is None
    [only] = run.of_type(AGENT_POOL)
    assert only.inputs["scaleSetPriority"] == containerservice.ScaleSetPriority.REGULAR.value
    assert (only.inputs["minCount"], only.inputs["maxCount"], only.inputs["count"]) == (1, 4, 1)
    assert re.fullmatch(r"t4o[0-9a-f]{4}", only.inputs["agentPoolName"])
    assert "scaleSetEvictionPolicy" not in only.inputs and "spotMaxPrice" not in only.inputs


def test_fallback_can_be_disabled_and_resized() -> None:
    run, _ = attempt(pool({**T4, "onDemandFallback": False}))
    assert [p.inputs["scaleSetPriority"] for p in run.of_type(AGENT_POOL)] == ["Spot"]
    run, _ = attempt(pool({**T4, "onDemandMaxSize": 1}))
    assert run.named("t4-ondemand").inputs["maxCount"] == 1


def test_pool_zones_default_to_cluster_zones_and_can_be_narrowed() -> None:
    run, _ = attempt(pool(cluster_zones=("1", "2")))
    assert {tuple(p.inputs["availabilityZones"]) for p in run.of_type(AGENT_POOL)} == {("1", "2")}
    run, _ = attempt(pool({**T4, "zones": ["2"]}))
    assert {tuple(p.inputs["availabilityZones"]) for p in run.of_type(AGENT_POOL)} == {("2",)}
    run, _ = attempt(pool(cluster_zones=()))
    assert all("availabilityZones" not in p.inputs for p in run.of_type(AGENT_POOL))


def test_after_chains_two_standalone_components() -> None:
    def build() -> None:
        first = GpuNodePool("t4", T4, resource_group_name="rg", cluster_name="c")
        GpuNodePool(
            "a100",
            {**T4, "name": "a100", "instanceTypes": ["Standard_NC24ads_A100_v4"]},
            resource_group_name="rg",
            cluster_name="c",
            after=first.last,
        )

    run, _ = attempt(build)
    t4_fallback = run.named("t4-ondemand")
    a100_spot = run.named("a100-spot")
    assert t4_fallback.urn in a100_spot.dependencies
    assert run.named("t4-spot").urn in t4_fallback.dependencies


def test_pool_infos_describe_exactly_what_aks_receives() -> None:
    created: list[GpuNodePool] = []
    extra = {**T4, "labels": {"team": "vision"}, "taints": [{"key": "dedicated", "value": "vision", "effect": "NoExecute"}]}
    run, _ = attempt(lambda: created.append(GpuNodePool("t4", extra, resource_group_name="rg", cluster_name="c")))
    [component] = created
    by_name = {r.inputs["agentPoolName"]: r for r in run.of_type(AGENT_POOL)}
    assert len(by_name) == len(component.pools) == 2
    for info in component.pools:
        registration = by_name[info.name]
        assert info.name == registration.inputs["agentPoolName"]
        assert dict(info.labels) == registration.inputs["nodeLabels"]
        assert set(info.taints) == {parse_taint(t) for t in registration.inputs["nodeTaints"]}
        assert info.zones == tuple(registration.inputs["availabilityZones"])
        assert (info.min_size, info.max_size) == (registration.inputs["minCount"], registration.inputs["maxCount"])
        assert info.instance_types == (registration.inputs["vmSize"],)
        assert (info.gpus_per_node, info.gpu_model) == (1, "nvidia-tesla-t4")
        assert info.matches_group(f"aks-{info.name}-12345678-vmss")
    assert component.last is not None and component.agent_pool_names == [p.name for p in component.pools]


GPU_POOL_ERRORS = [
    ({"name": "t4", "maxSize": 4}, "GpuNodePool(t4).pool.instanceTypes", "is required"),
    ({**T4, "minSize": 5}, "GpuNodePool(t4).pool.maxSize", "must be >= minSize"),
    ({**T4, "instanceTypes": ["Standard_NC6s_v3"]}, "GpuNodePool(t4).pool.instanceTypes[0]", "Standard_NC24ads_A100_v4"),
    ({**T4, "instanceTypes": ["Standard_D4s_v5"]}, "GpuNodePool(t4).pool.instanceTypes[0]", "GPU VM size"),
    (
        {**T4, "instanceTypes": ["Standard_NC4as_T4_v3", "Standard_NC8as_T4_v3"]},
        "GpuNodePool(t4).pool.instanceTypes",
        "exactly one",
    ),
    ({**T4, "name": "abcdefgh"}, "GpuNodePool(t4).pool.name", "at most 7"),
    ({**T4, "name": "T4"}, "GpuNodePool(t4).pool.name", "lowercase"),
    ({**T4, "spotMaxPrice": 0}, "GpuNodePool(t4).pool.spotMaxPrice", "-1"),
    ({**T4, "spotMaxPrice": 0.123456}, "GpuNodePool(t4).pool.spotMaxPrice", "5 decimals"),
    ({**T4, "zones": ["4"]}, "GpuNodePool(t4).pool.zones[0]", "availability zone"),
    ({**T4, "maxsize": 4}, "GpuNodePool(t4).pool.maxsize", "did you mean 'maxSize'"),
    ({**T4, "amiType": "AL2023_x86_64_NVIDIA"}, "GpuNodePool(t4).pool.amiType", "AWS only"),
    ({**T4, "labels": {"kubernetes.azure.com/mode": "x"}}, "GpuNodePool(t4).pool.labels.kubernetes.azure.com/mode", "reserved"),
    (
        {**T4, "taints": [{"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"}]},
        "GpuNodePool(t4).pool.taints[0].key",
        "GPU taint",
    ),
    ({**T4, "spot": False, "onDemandFallback": True}, "GpuNodePool(t4).pool.onDemandFallback", "spot is false"),
    ({**T4, "maxSize": 1001}, "GpuNodePool(t4).pool.maxSize", "1000"),
    ({**T4, "diskSizeGb": 10}, "GpuNodePool(t4).pool.diskSizeGb", "30"),
    (42, "GpuNodePool(t4).pool", "PoolSpec or a gpuPools mapping"),
]


@pytest.mark.parametrize(
    ("raw", "path", "message"), GPU_POOL_ERRORS, ids=[e[1].split(".", 1)[1] + "-" + str(i) for i, e in enumerate(GPU_POOL_ERRORS)]
)
def test_invalid_gpu_pool_args_raise_config_error_and_register_nothing(raw: Any, path: str, message: str) -> None:
    run, error = attempt(pool(raw))
    assert error is not None, "expected a ConfigError"
    assert error.path == path
    assert message in str(error)
    assert run.registrations == []


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"cluster_zones": ("a",)}, "GpuNodePool(t4).cluster_zones[0]"),
        ({"cluster_zones": ("1", "1")}, "GpuNodePool(t4).cluster_zones[1]"),
        ({"cluster_zones": "123"}, "GpuNodePool(t4).cluster_zones"),
        ({"after": "t4-spot"}, "GpuNodePool(t4).after"),
    ],
)
def test_invalid_gpu_node_pool_wiring_raises_config_error_and_registers_nothing(kwargs: dict[str, Any], path: str) -> None:
    run, error = attempt(pool(**kwargs))
    assert error is not None and error.path == path
    assert run.registrations == []


def test_pool_zones_must_be_cluster_zones() -> None:
    run, error = attempt(pool({**T4, "zones": ["3"]}, cluster_zones=("1", "2")))
    assert error is not None and error.path == "GpuNodePool(t4).pool.zones[0]"
    assert run.registrations == []


# --- AksCluster standalone --------------------------------------------------------------------------

CLUSTER = ClusterSpec(name="ml-dev", kubernetes_version="1.35", zones=("1", "2", "3"))
SYSTEM = SystemPoolSpec(instance_types=("Standard_D4s_v5",))


def cluster(**kwargs: Any) -> Callable[[], AksCluster]:
    args: dict[str, Any] = {"cluster": CLUSTER, "system_pool": SYSTEM, "location": "eastus", **kwargs}
    return lambda: AksCluster("ml-dev", **args)


def test_cluster_into_brought_network_group_and_identity_creates_none_of_them() -> None:
    run, error = attempt(
        cluster(network=NetworkSpec(subnet_id=BYO_SUBNET), resource_group_name="rg-existing", identity_id=IDENTITY)
    )
    assert error is None
    types = {r.type for r in run.registrations}
    for absent in (
        "azure-native:resources:ResourceGroup",
        "azure-native:network:VirtualNetwork",
        "azure-native:network:Subnet",
        "azure-native:managedidentity:UserAssignedIdentity",
    ):
        assert absent not in types
    [managed] = run.of_type(MANAGED_CLUSTER)
    assert managed.inputs["resourceGroupName"] == "rg-existing"
    assert managed.inputs["identity"] == {"type": "UserAssigned", "userAssignedIdentities": [IDENTITY]}
    assert managed.inputs["agentPoolProfiles"][0]["vnetSubnetID"] == BYO_SUBNET
    # Only the deployer's cluster-admin assignment: a brought identity is authorized by its owner.
    [assignment] = run.of_type(ROLE_ASSIGNMENT)
    assert assignment.inputs["roleDefinitionId"].endswith("/b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")


def test_created_identity_gets_network_contributor_on_the_subnet_before_the_cluster() -> None:
    run, _ = attempt(cluster())
    [identity] = run.of_type("azure-native:managedidentity:UserAssignedIdentity")
    [subnet] = run.of_type("azure-native:network:Subnet")
    [network_role] = [r for r in run.of_type(ROLE_ASSIGNMENT) if r.name.endswith("subnet-network-contributor")]
    assert network_role.inputs["roleDefinitionId"].endswith("/roleDefinitions/4d97b98b-1d4f-4787-a291-c67834d212e7")
    assert network_role.inputs["principalType"] == "ServicePrincipal"
    assert network_role.inputs["scope"].endswith("/subnets/nodes")
    assert {identity.urn, subnet.urn} <= set(network_role.dependencies)
    [managed] = run.of_type(MANAGED_CLUSTER)
    assert network_role.urn in managed.dependencies
    assert managed.inputs["identity"]["type"] == containerservice.ResourceIdentityType.USER_ASSIGNED.value


def test_cluster_defaults_and_network_layout() -> None:
    run, _ = attempt(cluster())
    [vnet] = run.of_type("azure-native:network:VirtualNetwork")
    [subnet] = run.of_type("azure-native:network:Subnet")
    assert vnet.inputs["addressSpace"] == {"addressPrefixes": ["10.40.0.0/16"]}
    assert "subnets" not in vnet.inputs  # standalone subnet only: a VNet update never deletes it
    assert subnet.inputs["addressPrefix"] == "10.40.0.0/17"
    [managed] = run.of_type(MANAGED_CLUSTER)
    assert managed.inputs["sku"] == {"name": "Base", "tier": "Standard"}
    assert managed.inputs["resourceName"] == "ml-dev"
    assert managed.inputs["kubernetesVersion"] == "1.35"
    # Review M5: protected, and create-first stated (the provider's default for a named resource is
    # delete-first): no diff can delete the cluster before anything else happens.
    assert managed.options["protect"] is True and managed.options["deleteBeforeReplace"] is False
    assert managed.inputs["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    assert managed.inputs["agentPoolProfiles"][0]["orchestratorVersion"] == "1.35"
    assert "apiServerAccessProfile" not in managed.inputs  # no apiAllowedCidrs configured


def test_sandbox_cluster_may_keep_local_accounts_and_names_admin_groups() -> None:
    spec = ClusterSpec(
        name="sandbox", kubernetes_version="1.36", zones=("1",), allow_local_accounts=True, admin_group_object_ids=("g-1",)
    )
    run, _ = attempt(cluster(cluster=spec, sku_tier="Free"))
    [managed] = run.of_type(MANAGED_CLUSTER)
    assert managed.inputs["disableLocalAccounts"] is False
    assert managed.inputs["aadProfile"]["adminGroupObjectIDs"] == ["g-1"]
    assert managed.inputs["sku"]["tier"] == "Free"


def test_device_code_login_keeps_aks_kubeconfig() -> None:
    run, _ = attempt(cluster(kubelogin_login="devicecode"))
    [provider] = run.of_type("pulumi:providers:kubernetes")
    args = yaml.safe_load(provider.inputs["kubeconfig"])["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--login") + 1] == "devicecode"


def test_cluster_and_pool_compose_and_pools_wait_for_the_cluster() -> None:
    def build() -> None:
        aks = cluster()()
        GpuNodePool(
            "t4",
            T4,
            resource_group_name=aks.resource_group_name,
            cluster_name=aks.name,
            subnet_id=aks.subnet_id,
            cluster_zones=aks.zones,
        )

    run, _ = attempt(build)
    [managed] = run.of_type(MANAGED_CLUSTER)
    spot = run.named("t4-spot")
    assert managed.urn in spot.dependencies
    assert spot.inputs["vnetSubnetID"].endswith("/virtualNetworks/ml-dev-vnet/subnets/nodes")
    assert spot.inputs["resourceName"] == "ml-dev"


def as_system(**changes: Any) -> SystemPoolSpec:
    return SystemPoolSpec(**{"instance_types": ("Standard_D4s_v5",), **changes})


CLUSTER_ERRORS: list[tuple[dict[str, Any], str]] = [
    ({"system_pool": as_system(min_size=1)}, "AksCluster(ml-dev).system_pool.minSize"),
    ({"system_pool": as_system(instance_types=("Standard_NC4as_T4_v3",))}, "AksCluster(ml-dev).system_pool.instanceTypes[0]"),
    ({"system_pool": as_system(instance_types=("Standard_D2s_v5",))}, "AksCluster(ml-dev).system_pool.instanceTypes[0]"),
    (
        {"system_pool": as_system(instance_types=("Standard_D4s_v5", "Standard_D8s_v5"))},
        "AksCluster(ml-dev).system_pool.instanceTypes",
    ),
    ({"network": NetworkSpec(cidr="172.20.0.0/16")}, "AksCluster(ml-dev).network.cidr"),
    ({"network": NetworkSpec(cidr="10.0.0.0/8")}, "AksCluster(ml-dev).network.cidr"),
    ({"network": NetworkSpec(subnet_id="subnet-123")}, "AksCluster(ml-dev).network.subnetId"),
    ({"cluster": ClusterSpec(name="ML_dev", kubernetes_version="1.35")}, "AksCluster(ml-dev).cluster.name"),
    ({"cluster": ClusterSpec(name="ml", kubernetes_version="1.20")}, "AksCluster(ml-dev).cluster.kubernetesVersion"),
    ({"cluster": ClusterSpec(name="ml", kubernetes_version="1.35", zones=("4",))}, "AksCluster(ml-dev).cluster.zones[0]"),
    ({"autoscaler": AutoscalerSpec(max_node_provision_time="15")}, "AksCluster(ml-dev).autoscaler.maxNodeProvisionTime"),
    ({"autoscaler": AutoscalerSpec(scale_down_unneeded_time="90m")}, "AksCluster(ml-dev).autoscaler.scaleDownUnneededTime"),
    ({"sku_tier": "Gold"}, "AksCluster(ml-dev).sku_tier"),
    ({"kubelogin_login": "spn"}, "AksCluster(ml-dev).kubelogin_login"),
    ({"cluster": {"name": "ml-dev"}}, "AksCluster(ml-dev).cluster"),
    ({"system_pool": None}, "AksCluster(ml-dev).system_pool"),
]


@pytest.mark.parametrize(
    ("kwargs", "path"), CLUSTER_ERRORS, ids=[p.rsplit(".", 1)[-1] + f"-{i}" for i, (_, p) in enumerate(CLUSTER_ERRORS)]
)
def test_invalid_cluster_args_raise_config_error_and_register_nothing(kwargs: dict[str, Any], path: str) -> None:
    run, error = attempt(cluster(**kwargs))
    assert error is not None, "expected a ConfigError"
    assert error.path == path
    assert run.registrations == []
