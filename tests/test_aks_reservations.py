"""AKS capacity reservations (issue 21): per ``gpuPools[].reservations`` entry an on-demand agent pool in
the Capacity Reservation Group, first in the pool chain, ranked above Spot by the priority expander;
the control-plane identity's Contributor role on the group's resource group; a config error under NAP."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
import yaml
from azure.mgmt.containerservice import models as aks_models
from gpupools.azure import AksCluster, GpuNodePool
from gpupools.azure.nap_nodes import check_nap_pool
from gpupools.azure.node_pool import CREATE_ONLY_FIELDS, plan_agent_pools
from gpupools.config import check_provisioner_keys, parse_gpu_pool
from gpupools.conventions import AKS_SPOT_TAINT, CAPACITY_TYPE_LABEL, CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes import priority_tiers
from gpupools.kubernetes.priority_expander import example_group_names
from gpupools.specs import Cloud, ClusterSpec, GpuPoolSpec, Provisioner, ReservationSpec, SystemPoolSpec
from gpupools.testing import Run, run_program, run_stack, stack_config

AGENT_POOL = "azure-native:containerservice:AgentPool"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
SUB = "00000000-0000-0000-0000-000000000000"
CRG_A = f"/subscriptions/{SUB}/resourceGroups/capacity/providers/Microsoft.Compute/capacityReservationGroups/gpu-a"
CRG_B = f"/subscriptions/{SUB}/resourceGroups/capacity/providers/Microsoft.Compute/capacityReservationGroups/gpu-b"
CRG_OTHER_RG = f"/subscriptions/{SUB}/resourceGroups/other/providers/Microsoft.Compute/capacityReservationGroups/gpu-c"
T4 = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}
CLUSTER = ClusterSpec(name="ml-dev", kubernetes_version="1.35", zones=("1", "2", "3"))
SYSTEM = SystemPoolSpec(instance_types=("Standard_D4s_v5",))
CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"
"""Built-in "Contributor", written out independently of the code (Azure built-in roles reference)."""


def spec(*reservations: ReservationSpec, **raw: Any) -> GpuPoolSpec:
    return replace(parse_gpu_pool({**T4, **raw}, Cloud.AZURE, "t4"), reservations=tuple(reservations))


def rest_property_names() -> set[str]:
    """Every agent pool property of the AKS REST API (the generated ``azure-mgmt-containerservice``
    models are built from the API's spec)."""
    model = aks_models.ManagedClusterAgentPoolProfileProperties
    model(count=0)  # the field table is built on first use
    fields = model._attr_to_rest_field  # type: ignore[attr-defined]
    return {field._rest_name for field in fields.values()}


# --- plans -----------------------------------------------------------------------------------------


def test_reserved_pool_is_first_on_demand_in_the_group_and_labelled_reserved() -> None:
    plans = plan_agent_pools(spec(ReservationSpec(CRG_A, "2")), ("1", "2", "3"))
    assert [p.capacity for p in plans] == [CapacityType.RESERVED, CapacityType.SPOT, CapacityType.ON_DEMAND]
    reserved = plans[0]
    assert reserved.args["capacity_reservation_group_id"] == CRG_A
    assert reserved.args["scale_set_priority"] == "Regular"
    assert "scale_set_eviction_policy" not in reserved.args and "spot_max_price" not in reserved.args
    assert (reserved.args["min_count"], reserved.args["max_count"], reserved.args["count"]) == (0, 4, 0)
    assert reserved.args["availability_zones"] == ["2"]  # the reservation's zone, not the pool's three
    assert reserved.args["node_labels"][CAPACITY_TYPE_LABEL] == "reserved"
    assert str(AKS_SPOT_TAINT) not in reserved.args["node_taints"]
    assert re.fullmatch(r"t4r[0-9a-f]{4}", reserved.name)
    assert reserved.info.capacity is CapacityType.RESERVED and reserved.info.zones == ("2",)
    assert reserved.info.matches_group(f"aks-{reserved.name}-12345678-vmss")


def test_reservation_without_zone_spans_the_pool_zones() -> None:
    [reserved, *_] = plan_agent_pools(spec(ReservationSpec(CRG_A, None), zones=["1", "3"]), ("1", "2", "3"))
    assert reserved.args["availability_zones"] == ["1", "3"]


def test_reservations_leave_the_other_pools_names_unchanged() -> None:
    """The group ID is in the digest of reserved pools only: adding a reservation to a running stack
    must not rename (replace) its Spot and fallback pools."""
    before = [p.name for p in plan_agent_pools(spec(), ("1", "2", "3"))]
    after = [p.name for p in plan_agent_pools(spec(ReservationSpec(CRG_A, "1")), ("1", "2", "3"))]
    assert after[1:] == before


def test_group_id_is_create_only_and_names_the_pool() -> None:
    assert "capacityReservationGroupID" in CREATE_ONLY_FIELDS
    a = plan_agent_pools(spec(ReservationSpec(CRG_A, "1")), ("1",))[0].name
    b = plan_agent_pools(spec(ReservationSpec(CRG_B, "1")), ("1",))[0].name
    assert a != b and a[:3] == b[:3] == "t4r"


def test_spot_false_pool_keeps_its_reserved_pool_first() -> None:
    plans = plan_agent_pools(spec(ReservationSpec(CRG_A, "1"), spot=False), ("1",))
    assert [p.capacity for p in plans] == [CapacityType.RESERVED, CapacityType.ON_DEMAND]


def test_agent_pool_inputs_are_properties_of_the_aks_rest_api() -> None:
    """What is registered (engine names, as azure-native PUTs them under ``properties``) is a property
    of ``ManagedClusterAgentPoolProfileProperties``: a misspelt ``capacityReservationGroupID`` (the
    API's spelling, capital ``ID``) would be dropped or rejected by ARM."""
    run = run_program(lambda: GpuNodePool("t4", spec(ReservationSpec(CRG_A, "1")), resource_group_name="rg", cluster_name="c"))
    rest = rest_property_names()
    assert "capacityReservationGroupID" in rest
    [reserved] = [
        r
        for r in run.of_type(AGENT_POOL)
        if r.inputs.get("scaleSetPriority") == "Regular" and "capacityReservationGroupID" in r.inputs
    ]
    assert reserved.inputs["capacityReservationGroupID"] == CRG_A
    outside = set(reserved.inputs) - rest - {"resourceGroupName", "resourceName", "agentPoolName"}
    assert not outside, outside
    assert set(CREATE_ONLY_FIELDS) <= rest


# --- the component ---------------------------------------------------------------------------------


def test_component_chains_reserved_pools_before_spot() -> None:
    run = run_program(
        lambda: GpuNodePool(
            "t4", spec(ReservationSpec(CRG_A, "1"), ReservationSpec(CRG_B, "2")), resource_group_name="rg", cluster_name="c"
        )
    )
    pools = run.of_type(AGENT_POOL)
    assert [p.name.rsplit("-", 1)[0] if "reserved" in p.name else p.name for p in pools] == [
        "t4-reserved",
        "t4-reserved",
        "t4-spot",
        "t4-ondemand",
    ]
    first, second, spot, fallback = pools
    assert first.inputs["capacityReservationGroupID"] == CRG_A and second.inputs["capacityReservationGroupID"] == CRG_B
    assert first.name != second.name and first.inputs["agentPoolName"] != second.inputs["agentPoolName"]
    assert first.urn in second.dependencies and second.urn in spot.dependencies and spot.urn in fallback.dependencies
    assert "capacityReservationGroupID" in first.replace_on_changes


def test_reserved_child_name_is_keyed_by_the_group() -> None:
    """Adding a reservation in front of another never renames the other's child (no replacement)."""

    def reserved_children(*reservations: ReservationSpec) -> dict[str, str]:
        run = run_program(lambda: GpuNodePool("t4", spec(*reservations), resource_group_name="rg", cluster_name="c"))
        return {
            r.inputs["capacityReservationGroupID"]: r.name
            for r in run.of_type(AGENT_POOL)
            if "capacityReservationGroupID" in r.inputs
        }

    one = reserved_children(ReservationSpec(CRG_B, "1"))
    two = reserved_children(ReservationSpec(CRG_A, "1"), ReservationSpec(CRG_B, "1"))
    assert two[CRG_B] == one[CRG_B]


def test_reserved_tier_is_above_spot_above_on_demand_above_system() -> None:
    """What cluster-autoscaler picks: the highest priority whose regex matches the scale set name."""
    pools = [p.info for p in plan_agent_pools(spec(ReservationSpec(CRG_A, "1")), ("1", "2", "3"))]
    tiers = priority_tiers(pools)
    config = yaml.safe_load(yaml.safe_dump({k: v for k, v in tiers.items()}))

    def priority(group: str) -> int:
        return max(p for p, regexes in config.items() if any(re.search(r, group) for r in regexes))

    rank = {p.capacity: priority(example_group_names(p)[0]) for p in pools}
    assert rank[CapacityType.RESERVED] > rank[CapacityType.SPOT] > rank[CapacityType.ON_DEMAND]


def test_reserved_tier_outranks_a_cheaper_spot_pool_of_another_entry() -> None:
    """Reserved capacity is already paid for: it comes first even when another pool's Spot is cheaper."""
    a100 = plan_agent_pools(spec(ReservationSpec(CRG_A, "1"), name="a100", instanceTypes=["Standard_NC24ads_A100_v4"]), ("1",))
    t4 = plan_agent_pools(spec(), ("1",))
    infos = [p.info for p in (*a100, *t4)]
    prices = {p.name: (9.0 if p.capacity is not CapacityType.SPOT else 0.1) for p in infos}
    tiers = priority_tiers(infos, prices=prices)
    by_name = {regex: prio for prio, regexes in tiers.items() for regex in regexes}
    reserved = by_name[a100[0].info.autoscaler_group_regex]
    assert all(reserved > by_name[p.autoscaler_group_regex] for p in infos if p.capacity is not CapacityType.RESERVED)


# --- the cluster's identity ------------------------------------------------------------------------


def cluster_run(**kwargs: Any) -> Run:
    return run_program(
        lambda: AksCluster(
            "ml",
            cluster=CLUSTER,
            system_pool=SYSTEM,
            location="eastus",
            **kwargs,
        )
    )


def test_created_identity_gets_contributor_on_each_group_resource_group_before_the_cluster() -> None:
    run = cluster_run(capacity_reservation_group_ids=[CRG_A, CRG_B, CRG_OTHER_RG])
    grants = [r for r in run.of_type(ROLE_ASSIGNMENT) if r.inputs["roleDefinitionId"].endswith(CONTRIBUTOR)]
    assert sorted(g.inputs["scope"] for g in grants) == [
        f"/subscriptions/{SUB}/resourceGroups/capacity",
        f"/subscriptions/{SUB}/resourceGroups/other",
    ]
    [cluster] = run.of_type("azure-native:containerservice:ManagedCluster")
    [identity] = run.of_type("azure-native:managedidentity:UserAssignedIdentity")
    for grant in grants:
        assert grant.urn in cluster.dependencies
        assert grant.inputs["principalType"] == "ServicePrincipal"
        assert identity.urn in grant.dependencies  # principalId is the created identity's


def test_no_reservations_no_contributor_grant() -> None:
    run = cluster_run()
    assert not [r for r in run.of_type(ROLE_ASSIGNMENT) if r.inputs["roleDefinitionId"].endswith(CONTRIBUTOR)]


@pytest.mark.parametrize(
    ("ids", "path"),
    [
        ("/subscriptions/x", "AksCluster(ml).capacity_reservation_group_ids"),
        (["/subscriptions/x/resourceGroups/y"], "AksCluster(ml).capacity_reservation_group_ids[0]"),
        ([42], "AksCluster(ml).capacity_reservation_group_ids[0]"),
    ],
)
def test_bad_group_ids_are_rejected_before_anything_registers(ids: Any, path: str) -> None:
    caught: list[ConfigError] = []

    def program() -> None:
        try:
            AksCluster("ml", cluster=CLUSTER, system_pool=SYSTEM, capacity_reservation_group_ids=ids)
        except ConfigError as error:
            caught.append(error)

    run = run_program(program)
    assert caught and caught[0].path == path
    assert not [r for r in run.registrations if r.custom]


# --- NAP -------------------------------------------------------------------------------------------


def test_reservations_under_nap_are_a_config_error_naming_the_key() -> None:
    raw = {"gpuPools": [T4, {**T4, "name": "a100", "reservations": [{"id": CRG_A}]}]}
    with pytest.raises(ConfigError) as caught:
        check_provisioner_keys(raw, Cloud.AZURE, Provisioner.KARPENTER)
    assert caught.value.path == "gpupools:gpuPools[1].reservations"
    assert "AKSNodeClass" in str(caught.value) and "cluster-autoscaler" in str(caught.value)


def test_reservations_under_cluster_autoscaler_and_empty_lists_under_nap_are_accepted() -> None:
    check_provisioner_keys({"gpuPools": [{**T4, "reservations": [{"id": CRG_A}]}]}, Cloud.AZURE, Provisioner.CLUSTER_AUTOSCALER)
    check_provisioner_keys({"gpuPools": [{**T4, "reservations": []}]}, Cloud.AZURE, Provisioner.KARPENTER)


def test_nap_pool_spec_with_reservations_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        check_nap_pool(spec(ReservationSpec(CRG_A, None)), "NapNodePools(nap).pools[0]")
    assert caught.value.path == "NapNodePools(nap).pools[0].reservations"
    check_nap_pool(spec(), "NapNodePools(nap).pools[0]")


def test_role_of_reserved_pool_infos_is_gpu() -> None:
    [reserved, *_] = plan_agent_pools(spec(ReservationSpec(CRG_A, "1")), ("1",))
    assert reserved.info.role is Role.GPU


# --- the azure-dev stack with a reservation ---------------------------------------------------------


def test_stack_with_a_reservation_registers_a_reserved_pool_first_ranked_above_spot() -> None:
    """Done-when of issue 21: the stack registers capacity that targets the reservation, chained
    before the Spot pool, ranked above Spot and on-demand in the priority expander's ConfigMap, and
    the control-plane identity is granted Contributor on the group's resource group."""
    config = stack_config("azure-dev")
    pools = [dict(p) for p in config["gpupools:gpuPools"]]
    pools[0] = {**pools[0], "reservations": [{"id": CRG_A, "zone": "1"}]}
    run = run_stack("azure-dev", overrides={"gpupools:gpuPools": pools})
    agent_pools = run.of_type(AGENT_POOL)
    entry = [p for p in agent_pools if p.inputs["nodeLabels"]["gpupools.io/pool"] == pools[0]["name"]]
    reserved, spot = entry[0], entry[1]
    assert reserved.inputs["capacityReservationGroupID"] == CRG_A
    assert reserved.inputs["scaleSetPriority"] == "Regular" and reserved.inputs["availabilityZones"] == ["1"]
    assert reserved.inputs["nodeLabels"][CAPACITY_TYPE_LABEL] == "reserved"
    assert spot.inputs["scaleSetPriority"] == "Spot" and reserved.urn in spot.dependencies
    assert not [p for p in agent_pools if p is not reserved and "capacityReservationGroupID" in p.inputs]
    [config_map] = [
        r
        for r in run.of_type("kubernetes:core/v1:ConfigMap")
        if r.name.endswith("priority-expander") or "priorities" in (r.inputs.get("data") or {})
    ]
    tiers = yaml.safe_load(config_map.inputs["data"]["priorities"])

    def priority(agent_pool: str) -> int:
        group = f"aks-{agent_pool}-12345678-vmss"
        return max(p for p, regexes in tiers.items() if any(re.search(r, group) for r in regexes))

    reserved_rank = priority(reserved.inputs["agentPoolName"])
    others = [p for p in agent_pools if p is not reserved]
    assert others and all(reserved_rank > priority(p.inputs["agentPoolName"]) for p in others)
    grants = [r for r in run.of_type(ROLE_ASSIGNMENT) if r.inputs["roleDefinitionId"].endswith(CONTRIBUTOR)]
    assert [g.inputs["scope"] for g in grants] == [f"/subscriptions/{SUB}/resourceGroups/capacity"]
