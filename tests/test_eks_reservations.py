"""Issue 21: EC2 capacity reservations (ODCRs, Capacity Blocks) on EKS, on the recording mock runtime.

A stack with ``gpuPools[].reservations`` must register capacity that targets each reservation and is
used before the pool's Spot and on-demand capacity:

* cluster-autoscaler: a managed node group per reservation, its launch template targeting the
  reservation (a Capacity Block's also with the ``capacity-block`` market type), ranked above Spot
  and on-demand by the priority expander; inputs checked against botocore's ``eks`` and ``ec2`` models;
* Karpenter: ``karpenter.sh/capacity-type`` ``reserved`` first, ``capacityReservationSelectorTerms``
  on the pool's EC2NodeClass, checked against the pinned v1.14.1 CRDs (``tests/crd_schema.py``);
* costs: a reserved node-hour at 0 extra, reserved listed first.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml
from gpupools import config
from gpupools.aws import GpuNodeGroup
from gpupools.aws.karpenter_iam import RESERVATION_INTERRUPTION_EVENTS
from gpupools.catalog.prices import price_table
from gpupools.config import parse_gpu_pool
from gpupools.conventions import CAPACITY_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL, CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.priority_expander import pool_priorities
from gpupools.pricing.estimate import CapacityGroup, fleet_cost, groups_of_spec
from gpupools.specs import Cloud, ReservationSpec
from gpupools.synth.summary import cost_lines, pool_rows
from gpupools.testing import Registration, Run, fakes, run_program, run_stack, stack_config

from tests.crd_schema import validate_custom_resource
from tests.example_runs import example_run
from tests.k8s_schema import eks_gpu_group
from tests.test_aws_contracts import check_request, create_nodegroup_request, operation_input, tags_by_asg
from tests.test_karpenter_eks import CHART_VALUE_PATHS, value_paths

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
RELEASE = "kubernetes:helm.sh/v3:Release"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"

ODCR = "cr-0123456789abcdef0"
BLOCK = "cr-0fedcba9876543210"
ZONE = "us-west-2b"
CA_TAG = "k8s.io/cluster-autoscaler/node-template"


def with_reservations(stack: str, pool: str, reservations: list[dict[str, Any]]) -> dict[str, Any]:
    """``gpupools:gpuPools`` of ``stack`` with ``reservations`` on ``pool``."""
    pools = stack_config(stack)["gpupools:gpuPools"]
    return {"gpupools:gpuPools": [{**p, "reservations": reservations} if p["name"] == pool else p for p in pools]}


@cache
def plain() -> Run:
    return example_run("aws-dev")


@cache
def reserved() -> Run:
    """aws-dev with one ODCR for gpu1 (three zones) in us-west-2b."""
    return run_stack("aws-dev", overrides=with_reservations("aws-dev", "gpu1", [{"id": ODCR, "zone": ZONE}]))


def groups(run: Run) -> dict[str, Registration]:
    return {r.inputs["nodeGroupName"]: r for r in run.of_type(NODE_GROUP)}


def reserved_groups(run: Run) -> dict[str, Registration]:
    return {name: g for name, g in groups(run).items() if g.inputs["labels"][CAPACITY_TYPE_LABEL] == "reserved"}


def template_of(run: Run, group: Registration) -> Registration:
    templates = {fakes.OUTPUTS[LAUNCH_TEMPLATE](r.name, r.inputs)["__id"]: r for r in run.of_type(LAUNCH_TEMPLATE)}
    return templates[group.inputs["launchTemplate"]["id"]]


def asg_name(group: Registration) -> str:
    return str(fakes.OUTPUTS[NODE_GROUP](group.name, group.inputs)["resources"][0]["autoscalingGroups"][0]["name"])


def pascal(value: Any) -> Any:
    """pulumi-aws launch template inputs (camelCase) in the EC2 API's spelling (PascalCase)."""
    if isinstance(value, dict):
        return {key[0].upper() + key[1:]: pascal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [pascal(item) for item in value]
    return value


RESERVATION_INPUTS = ("capacityReservationSpecification", "instanceMarketOptions")


def launch_template_data(template: Registration) -> dict[str, Any]:
    """The reservation part of a template as ``CreateLaunchTemplate``'s ``LaunchTemplateData``."""
    return {key[0].upper() + key[1:]: pascal(template.inputs[key]) for key in RESERVATION_INPUTS if key in template.inputs}


# --- cluster-autoscaler: the node group ------------------------------------------------------------


def test_a_reservation_registers_one_on_demand_group_in_its_zone_targeting_it() -> None:
    run = reserved()
    [(name, group)] = reserved_groups(run).items()
    assert "-gpu1-rsv-b-" in name
    assert group.inputs["capacityType"] == "ON_DEMAND"
    # One instance type: the pool's first (a reservation is for exactly one type).
    assert group.inputs["instanceTypes"] == ["g4dn.xlarge"]
    # In the reservation's zone: the subnet of the pool's Spot group in us-west-2b.
    [spot_b] = [g for n, g in groups(run).items() if "-gpu1-spot-b-" in n]
    assert group.inputs["subnetIds"] == spot_b.inputs["subnetIds"]
    assert group.inputs["scalingConfig"] == {"minSize": 0, "maxSize": 6, "desiredSize": 0}
    assert group.inputs["labels"][CAPACITY_TYPE_LABEL] == "reserved"
    assert group.inputs["taints"] == spot_b.inputs["taints"]
    template = template_of(run, group)
    assert template.inputs["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": ODCR}}
    assert "instanceMarketOptions" not in template.inputs
    # The pool's other groups keep the shared template, which targets no reservation.
    others = [g for n, g in groups(run).items() if n != name]
    assert all("capacityReservationSpecification" not in template_of(run, g).inputs for g in others)
    # Everything else of the stack is unchanged: the same groups plus exactly one.
    assert set(groups(plain())) == set(groups(run)) - {name}


def test_reserved_group_inputs_are_valid_against_botocore() -> None:
    run = reserved()
    [group] = reserved_groups(run).values()
    check_request(create_nodegroup_request(group), operation_input("eks", "CreateNodegroup"), group.name)
    data = operation_input("ec2", "CreateLaunchTemplate").members["LaunchTemplateData"]
    check_request(launch_template_data(template_of(run, group)), data, "reserved launch template")


def test_reserved_group_asg_carries_the_scale_from_zero_tags() -> None:
    run = reserved()
    [group] = reserved_groups(run).values()
    tags = {t["key"]: t["value"] for t in tags_by_asg(run)[asg_name(group)]}
    assert tags[f"{CA_TAG}/label/{CAPACITY_TYPE_LABEL}"] == "reserved"
    assert tags[f"{CA_TAG}/resources/nvidia.com/gpu"] == "4"  # 1 GPU x 4 time-slicing replicas
    assert tags[f"{CA_TAG}/taint/nvidia.com/gpu"] == "present:NoSchedule"


def test_priority_expander_ranks_the_reserved_group_above_every_spot_and_on_demand_group() -> None:
    run = reserved()
    [config_map] = [r for r in run.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == "cluster-autoscaler-priority-expander"]
    tiers = yaml.safe_load(config_map.inputs["data"]["priorities"])

    def priority(group: Registration) -> int:
        return max(p for p, regexes in tiers.items() if any(re.search(r, asg_name(group)) for r in regexes))

    by_capacity: dict[str, list[int]] = {}
    for group in groups(run).values():
        by_capacity.setdefault(group.inputs["labels"][CAPACITY_TYPE_LABEL], []).append(priority(group))
    assert min(by_capacity["reserved"]) > max(by_capacity["spot"]) > 0
    assert min(by_capacity["spot"]) > max(by_capacity["on-demand"])


# --- Capacity Blocks, two reservations, errors (the component) --------------------------------------

SUBNETS = {"us-west-2a": "subnet-0aaaaaaaaaaaaaaa1", "us-west-2b": "subnet-0bbbbbbbbbbbbbbb2"}
POOL = {"name": "h100", "instanceTypes": ["p5.48xlarge"], "maxSize": 4}


def component(reservations: tuple[ReservationSpec, ...], **kwargs: Any) -> tuple[Run, Any]:
    spec = replace(parse_gpu_pool(POOL, Cloud.AWS, "pool"), reservations=reservations)
    seen: dict[str, Any] = {}

    def program() -> None:
        seen["component"] = GpuNodeGroup(
            "h100",
            pool=spec,
            cluster_name="ml-dev",
            node_role_arn="arn:aws:iam::123456789012:role/n",
            subnet_ids_by_zone=SUBNETS,
            **kwargs,
        )

    return run_program(program), seen["component"]


def test_a_capacity_block_gets_a_capacity_block_group_and_market_type_valid_against_botocore() -> None:
    run, nodes = component((ReservationSpec(BLOCK, "us-west-2a"), ReservationSpec(ODCR, "us-west-2a")), capacity_blocks=[BLOCK])
    found = reserved_groups(run)
    assert len(found) == 2 and len(set(found)) == 2  # two reservations in one zone: two names
    by_id = {
        template_of(run, g).inputs["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"]: g
        for g in found.values()
    }
    block, odcr = by_id[BLOCK], by_id[ODCR]
    eks = operation_input("eks", "CreateNodegroup")
    assert block.inputs["capacityType"] == "CAPACITY_BLOCK" and "CAPACITY_BLOCK" in eks.members["capacityType"].enum
    assert odcr.inputs["capacityType"] == "ON_DEMAND"
    market = template_of(run, block).inputs["instanceMarketOptions"]
    assert market == {"marketType": "capacity-block"}
    data = operation_input("ec2", "CreateLaunchTemplate").members["LaunchTemplateData"]
    assert market["marketType"] in data.members["InstanceMarketOptions"].members["MarketType"].enum
    for group in (block, odcr):
        check_request(create_nodegroup_request(group), eks, group.name)
        check_request(launch_template_data(template_of(run, group)), data, group.name)
        assert group.inputs["subnetIds"] == [SUBNETS["us-west-2a"]]
    # Reserved groups first in the component's groups, then Spot/on-demand per zone.
    assert [g.capacity for g in nodes.groups[:2]] == [CapacityType.RESERVED] * 2
    assert CapacityType.RESERVED not in {g.capacity for g in nodes.groups[2:]}


def test_capacity_block_and_odcr_of_one_id_get_different_names() -> None:
    run_odcr, _ = component((ReservationSpec(ODCR, "us-west-2a"),))
    run_block, _ = component((ReservationSpec(ODCR, "us-west-2a"),), capacity_blocks=[ODCR])
    assert set(reserved_groups(run_odcr)).isdisjoint(reserved_groups(run_block))


@pytest.mark.parametrize(
    ("reservations", "kwargs", "path"),
    [
        ((ReservationSpec(ODCR, None),), {}, "GpuNodeGroup(h100).pool.reservations[0].zone"),
        ((ReservationSpec(ODCR, "us-west-2c"),), {}, "GpuNodeGroup(h100).pool.reservations[0].zone"),
        ((ReservationSpec(ODCR, "us-west-2a"),), {"capacity_blocks": [BLOCK]}, "GpuNodeGroup(h100).pool.capacity_blocks"),
    ],
)
def test_errors_name_the_argument(reservations: Any, kwargs: Any, path: str) -> None:
    with pytest.raises(ConfigError) as error:
        component(reservations, **kwargs)
    assert error.value.path == path


def test_a_pool_with_one_zone_needs_no_zone_on_its_reservation() -> None:
    spec = replace(
        parse_gpu_pool({**POOL, "zones": ["us-west-2b"]}, Cloud.AWS, "pool"), reservations=(ReservationSpec(ODCR, None),)
    )
    run = run_program(
        lambda: GpuNodeGroup(
            "h100", pool=spec, cluster_name="ml-dev", node_role_arn="arn:aws:iam::1:role/n", subnet_ids_by_zone=SUBNETS
        )
    )
    [group] = reserved_groups(run).values()
    assert group.inputs["subnetIds"] == [SUBNETS["us-west-2b"]]


# --- priority expander (pure) ----------------------------------------------------------------------


def test_reserved_groups_outrank_spot_whatever_the_prices_and_the_smaller_node_first() -> None:
    small = replace(eks_gpu_group("t4", CapacityType.RESERVED), instance_types=("g4dn.xlarge",), gpus_per_node=1)
    big = replace(eks_gpu_group("a100", CapacityType.RESERVED), instance_types=("p4d.24xlarge",), gpus_per_node=8)
    spot = eks_gpu_group("t4", CapacityType.SPOT)
    od = eks_gpu_group("t4", CapacityType.ON_DEMAND)
    # Prices would put the big reserved group first and the Spot group above both; they must not.
    prices = {small.name: 5.0, big.name: 0.0, spot.name: 0.0, od.name: 1.0}
    tiers = pool_priorities([big, small, spot, od], prices)
    assert tiers[small.name] > tiers[big.name] > tiers[spot.name] > tiers[od.name]


# --- costs ----------------------------------------------------------------------------------------


def node_pools_output(run: Run) -> list[dict[str, Any]]:
    return list(run.outputs["nodePools"])


def test_reserved_node_hours_cost_nothing_extra_and_leave_the_fleet_figures_unchanged() -> None:
    rows = node_pools_output(reserved())
    [row] = [r for r in rows if r["capacityType"] == "reserved"]
    assert row["pricePerNodeHour"] == 0.0 and row["costPerHourAtMax"] == 0.0
    assert row["pool"] == "gpu1" and row["maxSize"] == 6
    before, after = plain().outputs["cost"], reserved().outputs["cost"]
    for key in ("spotAtMaxPerHour", "onDemandInsteadAtMaxPerHour", "ceilingPerHour", "idlePerHour"):
        assert after[key] == before[key] and after[key] is not None, key
    assert after["unpriced"] == before["unpriced"]
    # Capacity in the order it is used, and reserved only where it exists.
    assert list(after["priorityOrder"]) == ["reserved", "spot", "on-demand"]
    assert list(before["priorityOrder"]) == ["spot", "on-demand"]


def test_a_reserved_group_is_priced_at_zero_even_for_a_size_the_catalog_lacks() -> None:
    table = price_table(Cloud.AWS)
    unknown = "x9z.48xlarge"
    assert table.price("us-west-2", unknown) is None
    group = CapacityGroup("h100", Role.GPU, CapacityType.RESERVED, (unknown,), 0, 4)
    fleet = fleet_cost([group], table, "us-west-2")
    assert fleet.ceiling == 0.0 and fleet.spot_at_max == 0.0 and fleet.unpriced == ()
    # The same size bought on demand has no price: only the reserved node-hour is known (0 extra).
    assert fleet_cost([replace(group, capacity=CapacityType.ON_DEMAND)], table, "us-west-2").ceiling is None


def test_summary_lists_reserved_rows_first_and_says_what_they_cost() -> None:
    outputs = reserved().outputs
    rows = [r for r in pool_rows(node_pools_output(reserved())) if r["POOL"] == "gpu1"]
    assert rows[0]["CAPACITY"] == "reserved" and rows[0]["$/NODE-H"] == "0.0000"
    assert [r["CAPACITY"] for r in rows[1:]].count("reserved") == 0
    lines = cost_lines(outputs["cost"])
    assert any("Reserved groups (capacity reservations) are used first" in line for line in lines)
    assert not any("reserved pools ordered by size facts (a price is unknown)" in line for line in lines)


@pytest.mark.parametrize(("stack", "pool"), [("aws-dev", "gpu1"), ("aws-karpenter-dev", "gpu4")])
def test_spec_and_created_groups_give_the_same_figures_with_reservations(stack: str, pool: str) -> None:
    """The budget check (``groups_of_spec``, before anything exists) and the ``cost`` output
    (``groups_of_pools``, from what was created) agree with reservations too."""
    overrides = with_reservations(stack, pool, [{"id": ODCR, "zone": ZONE}])
    run = reserved() if stack == "aws-dev" else karpenter()
    spec = config.parse({**stack_config(stack), **overrides}, "us-west-2")
    fleet = fleet_cost(groups_of_spec(spec), price_table(Cloud.AWS), "us-west-2", spec.cost).to_output()
    for key in ("spotAtMaxPerHour", "onDemandInsteadAtMaxPerHour", "ceilingPerHour", "idlePerHour"):
        assert run.outputs["cost"][key] == fleet[key] is not None, key
    reserved_groups_of_spec = [g for g in groups_of_spec(spec) if g.capacity is CapacityType.RESERVED]
    assert [g.pool for g in reserved_groups_of_spec] == [pool]


# --- Karpenter -------------------------------------------------------------------------------------


@cache
def karpenter() -> Run:
    return run_stack("aws-karpenter-dev", overrides=with_reservations("aws-karpenter-dev", "gpu4", [{"id": ODCR, "zone": ZONE}]))


def custom_resource(reg: Registration) -> dict[str, Any]:
    return {key: reg.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def by_name(run: Run, type_: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: custom_resource(r) for r in run.of_type(type_)}


def capacity_requirement(nodepool: dict[str, Any]) -> list[str]:
    [found] = [r for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["key"] == KARPENTER_CAPACITY_TYPE_LABEL]
    return list(found["values"])


def test_karpenter_nodepool_allows_reserved_first_and_its_node_class_selects_the_reservation() -> None:
    pools = by_name(karpenter(), NODEPOOL)
    classes = by_name(karpenter(), NODECLASS)
    assert capacity_requirement(pools["gpu4"]) == ["reserved", "spot", "on-demand"]
    assert capacity_requirement(pools["gpu1"]) == ["spot", "on-demand"]
    own = pools["gpu4"]["spec"]["template"]["spec"]["nodeClassRef"]["name"]
    shared = pools["gpu1"]["spec"]["template"]["spec"]["nodeClassRef"]["name"]
    assert own != shared
    assert classes[own]["spec"]["capacityReservationSelectorTerms"] == [{"id": ODCR}]
    assert "capacityReservationSelectorTerms" not in classes[shared]["spec"]
    # The pool with a reservation is the most preferred NodePool.
    assert pools["gpu4"]["spec"]["weight"] == max(p["spec"]["weight"] for p in pools.values())


def test_karpenter_resources_with_reservations_are_valid_against_the_pinned_crds() -> None:
    resources = karpenter().of_type(NODEPOOL) + karpenter().of_type(NODECLASS)
    assert any("capacityReservationSelectorTerms" in r.inputs["spec"] for r in resources)
    for reg in resources:
        assert validate_custom_resource(custom_resource(reg)) == [], reg.name


def test_karpenter_states_the_reserved_capacity_gate_and_routes_reservation_interruptions() -> None:
    [controller] = [r for r in karpenter().of_type(RELEASE) if r.inputs["name"] == "karpenter"]
    assert controller.inputs["values"]["settings"]["featureGates"] == {"nodeOverlay": True, "reservedCapacity": True}
    assert value_paths(controller.inputs["values"]) <= CHART_VALUE_PATHS
    patterns = [json.loads(r.inputs["eventPattern"]) for r in karpenter().of_type(EVENT_RULE)]
    assert RESERVATION_INTERRUPTION_EVENTS["capacity-reservation-interruption"] in patterns
    assert len(patterns) == 5
    # Without reservations: neither.
    [plain_controller] = [r for r in example_run("aws-karpenter-dev").of_type(RELEASE) if r.inputs["name"] == "karpenter"]
    assert "reservedCapacity" not in plain_controller.inputs["values"]["settings"].get("featureGates", {})


def test_karpenter_costs_price_the_nodepool_at_spot_with_reserved_listed_first() -> None:
    [row] = [r for r in karpenter().outputs["nodePools"] if r["pool"] == "gpu4"]
    plain_row = next(r for r in example_run("aws-karpenter-dev").outputs["nodePools"] if r["pool"] == "gpu4")
    assert row["capacityTypes"] == ["reserved", "spot", "on-demand"]
    assert row["capacityType"] == "spot" and row["pricePerNodeHour"] == plain_row["pricePerNodeHour"] is not None
    cost = karpenter().outputs["cost"]
    assert list(cost["priorityOrder"]) == ["reserved", "spot", "on-demand"]
    plain_cost = example_run("aws-karpenter-dev").outputs["cost"]
    # The ceiling is the NodePool's limit at its dearest capacity, reservation or not; at max, Spot
    # first, its reservation (no count: the whole limit) fills first, at no extra cost.
    assert cost["ceilingPerHour"] == plain_cost["ceilingPerHour"]
    first, plain_first = cost["capacity"]["atMaxSpotFirst"], plain_cost["capacity"]["atMaxSpotFirst"]
    assert first["byCapacity"]["reserved"] == row["maxSize"] and first["nodes"] == plain_first["nodes"]
    assert cost["spotAtMaxPerHour"] == pytest.approx(
        plain_cost["spotAtMaxPerHour"] - row["maxSize"] * row["pricePerNodeHour"], abs=1e-3
    )


# --- the policy pack --------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["autoscaler", "karpenter", "capacity-block"])
def test_the_policy_pack_passes_stacks_with_reservations(which: str) -> None:
    """Reserved groups are GPU groups like the others (tainted, IMDSv2, encrypted, from zero): no
    rule of the pack fires on them, a Capacity Block's ``CAPACITY_BLOCK`` group included."""
    from tests.test_policy_stacks import fired, rules

    if which == "capacity-block":
        run, _ = component((ReservationSpec(BLOCK, "us-west-2a"),), capacity_blocks=[BLOCK])
    else:
        run = reserved() if which == "autoscaler" else karpenter()
    resources = [rules.Resource(r.type, r.name, r.inputs, r.urn, tuple(r.ignore_changes)) for r in run.registrations]
    found = fired(resources)
    if which == "capacity-block":
        # The component alone has no device plugin (a stack's); every other rule applies.
        assert list(found) == ["device-plugin-tolerates-gpu-pools"]
        found = {}
    assert found == {}


def test_a_capacity_block_named_in_the_stack_config_gets_a_capacity_block_group() -> None:
    """``reservations[].kind: capacityBlock``: the stack's way to say what an ID alone cannot (an ODCR
    and a Capacity Block share the ``cr-`` format)."""
    run = run_stack(
        "aws-dev", overrides=with_reservations("aws-dev", "gpu1", [{"id": ODCR, "zone": ZONE, "kind": "capacityBlock"}])
    )
    [block] = reserved_groups(run).values()
    assert block.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert template_of(run, block).inputs["instanceMarketOptions"]["marketType"] == "capacity-block"
    [odcr] = reserved_groups(reserved()).values()
    assert odcr.inputs["capacityType"] == "ON_DEMAND"


# --- issue 29 (B1): a Capacity Block group EKS accepts ---------------------------------------------


def test_a_capacity_block_group_names_its_instance_type_in_the_launch_template_only() -> None:
    """EKS user guide ``ml/capacity-blocks-mng.adoc`` ("Create a managed node group with Capacity
    Blocks for ML"): the launch template must carry ``InstanceMarketOptions``,
    ``CapacityReservationSpecification`` *and* ``InstanceType``, and "If the capacity type isn't set
    to CAPACITY_BLOCK or any of the other above required launch template values are missing, then the
    create request will be rejected"; ``nodes/launch-templates.adoc`` forbids an instance type in
    both the template and ``CreateNodegroup``. terraform-aws-eks commit ae3379e9 moves the type to
    the template for the same reason. main put it on the node group and left the template without one.
    Checked on the training example (its Capacity Block) and against botocore's ``CreateNodegroup``
    and ``CreateLaunchTemplate`` shapes; an ODCR group keeps its type on the group."""
    run = example_run("aws-training-dev")
    blocks = [g for g in run.of_type(NODE_GROUP) if g.inputs["capacityType"] == "CAPACITY_BLOCK"]
    assert blocks, "the training example has a Capacity Block group"
    eks = operation_input("eks", "CreateNodegroup")
    data = operation_input("ec2", "CreateLaunchTemplate").members["LaunchTemplateData"]
    pools = {p["name"]: p for p in stack_config("aws-training-dev")["gpupools:gpuPools"]}
    for block in blocks:
        template = template_of(run, block)
        assert "instanceTypes" not in block.inputs, block.name
        pool = pools[block.inputs["labels"]["gpupools.io/pool"]]
        assert template.inputs["instanceType"] == pool["instanceTypes"][0]
        request = launch_template_data(template) | {"InstanceType": template.inputs["instanceType"]}
        assert {"InstanceMarketOptions", "CapacityReservationSpecification", "InstanceType"} <= set(request)
        check_request(request, data, template.name)
        check_request(create_nodegroup_request(block), eks, block.name)
    [odcr] = reserved_groups(reserved()).values()
    assert odcr.inputs["instanceTypes"] and "instanceType" not in template_of(reserved(), odcr).inputs
