"""Multi-node training (issue 21 item 2).

EKS ``efa: true``: EFA interfaces in the right count, a cluster placement group, the EFA security
group's self-referencing rules and the EFA device plugin on the pool's nodes, in one zone; a
non-EFA type is one clear error. AKS ``proximityPlacement: true``: a proximity placement group per
pool, sent as the agent pools' create-only ``proximityPlacementGroupID``; InfiniBand size facts.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from gpupools.aws.launch_template import efa_network_interfaces
from gpupools.azure.node_pool import CREATE_ONLY_FIELDS, plan_agent_pools
from gpupools.catalog.aws_instance_types import EFA_INTERFACES, INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import GPU_SIZES, infiniband_sizes
from gpupools.conventions import EFA_PRESENT_LABEL, EFA_RESOURCE, GPU_TAINT, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.kubernetes import efa_device_plugin
from gpupools.rules import check_gpu_pool
from gpupools.specs import Cloud, GpuPoolSpec, Provisioner
from gpupools.testing import Registration, Run, fakes, run_stack
from gpupools.testing.manifests import to_manifest

from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, untolerated, validate_all_versions
from tests.multi_node_cases import AWS_ZONE, efa_overrides, ppg_overrides

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
CLUSTER_SG = fakes.OUTPUTS["eks:index:Cluster"]("c", {})["clusterSecurityGroupId"]


@functools.cache
def efa_run(instance_type: str = "p5.48xlarge") -> Run:
    return run_stack("aws-dev", overrides=efa_overrides([instance_type]))


def output_id(registration: Registration) -> str:
    return str(fakes.OUTPUTS[registration.type](registration.name, registration.inputs)["__id"])


def pool_template(run: Run, pool: str) -> Registration:
    [template] = [r for r in run.of_type(LAUNCH_TEMPLATE) if r.name == f"{pool}-launch-template"]
    return template


def subnet_of_zone(run: Run, zone: str) -> str:
    [subnet] = [
        s for s in run.of_type("aws:ec2/subnet:Subnet") if s.inputs.get("availabilityZone") == zone and "private" in s.name
    ]
    return output_id(subnet)


def efa_daemon_set(run: Run) -> Registration:
    [daemon_set] = [r for r in run.of_type(DAEMON_SET) if r.name == "efa-device-plugin-daemonset"]
    return daemon_set


# --- EKS: the EFA pool ------------------------------------------------------------------------------


@pytest.mark.parametrize(("instance_type", "count"), [("p5.48xlarge", 32), ("p4d.24xlarge", 4), ("g5.48xlarge", 1)])
def test_an_efa_pool_registers_one_efa_interface_per_network_card(instance_type: str, count: int) -> None:
    run = efa_run(instance_type)
    [efa_group] = run.of_type(SECURITY_GROUP)
    interfaces = pool_template(run, "gpu4").inputs["networkInterfaces"]
    assert len(interfaces) == count
    assert [i["networkCardIndex"] for i in interfaces] == list(range(count))
    assert [i["deviceIndex"] for i in interfaces] == [0] + [1] * (count - 1)
    assert {i["interfaceType"] for i in interfaces} == {"efa"}
    for interface in interfaces:
        assert interface["securityGroups"] == [CLUSTER_SG, output_id(efa_group)]
        assert interface["associatePublicIpAddress"] == "false"
        assert interface["deleteOnTermination"] == "true"
        assert "subnetId" not in interface  # EKS rejects a launch template that names a subnet


def test_the_efa_pool_is_in_one_zone_in_its_cluster_placement_group() -> None:
    run = efa_run()
    [placement_group] = run.of_type(PLACEMENT_GROUP)
    assert placement_group.inputs["strategy"] == "cluster"
    template = pool_template(run, "gpu4")
    name = fakes.OUTPUTS[PLACEMENT_GROUP](placement_group.name, placement_group.inputs)["name"]
    assert template.inputs["placement"]["groupName"] == name
    groups = [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"].get("gpupools.io/pool") == "gpu4"]
    assert len(groups) == 2  # Spot and its on-demand fallback, one zone
    assert {g.inputs["subnetIds"][0] for g in groups} == {subnet_of_zone(run, AWS_ZONE)}
    for group in groups:
        assert group.inputs["launchTemplate"]["id"] == output_id(template)
        assert group.inputs["labels"][EFA_PRESENT_LABEL] == "true"
        assert group.inputs["tags"][f"k8s.io/cluster-autoscaler/node-template/resources/{EFA_RESOURCE}"] == "32"


def test_the_efa_security_group_allows_all_traffic_within_itself_both_ways() -> None:
    run = efa_run()
    [group] = run.of_type(SECURITY_GROUP)
    group_id = output_id(group)
    assert group.inputs["vpcId"]
    for rule_type in (INGRESS, EGRESS):
        [rule] = run.of_type(rule_type)
        assert rule.inputs["securityGroupId"] == group_id
        assert rule.inputs["referencedSecurityGroupId"] == group_id
        assert rule.inputs["ipProtocol"] == "-1"  # all protocols, all ports
        assert "cidrIpv4" not in rule.inputs


def test_efa_scale_from_zero_tags_advertise_the_interfaces() -> None:
    run = efa_run("p4d.24xlarge")
    tags = [t.inputs["tag"] for t in run.of_type("aws:autoscaling/tag:Tag") if "gpu4" in t.name]
    efa = [t for t in tags if t["key"].endswith(f"/resources/{EFA_RESOURCE}")]
    assert len(efa) == 2 and {t["value"] for t in efa} == {"4"}


def test_the_efa_device_plugin_runs_on_the_efa_pool_only_and_tolerates_its_taints() -> None:
    run = efa_run()
    daemon_set = efa_daemon_set(run)
    pod = daemon_set.inputs["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "public.ecr.aws/eks/aws-efa-k8s-device-plugin:v0.5.13"
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/var/lib/kubelet/device-plugins", "/dev/infiniband/"}
    assert pod["automountServiceAccountToken"] is False
    efa_groups = [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"].get("gpupools.io/pool") == "gpu4"]
    other_groups = [g for g in run.of_type(NODE_GROUP) if g not in efa_groups]
    for group in efa_groups:
        taints = [Taint(t["key"], t["value"], TaintEffect[t["effect"]]) for t in group.inputs["taints"]]
        assert GPU_TAINT in taints and Taint("dedicated", "training", TaintEffect.NO_SCHEDULE) in taints
        assert untolerated(pod["tolerations"], taints) == []
        assert affinity_matches(pod["affinity"], group.inputs["labels"])
    for group in other_groups:
        assert not affinity_matches(pod["affinity"], group.inputs["labels"]), group.name


def test_the_efa_device_plugin_objects_validate_and_carry_scan_skips_with_reasons() -> None:
    run = efa_run()
    objects = [r for r in run.kubernetes_objects() if r.name.startswith("efa-device-plugin")]
    assert {r.type for r in objects} == {DAEMON_SET, "kubernetes:core/v1:ServiceAccount"}
    for registration in objects:
        validate_all_versions(to_manifest(registration))
    annotations = efa_daemon_set(run).inputs["metadata"]["annotations"]
    assert all(re.fullmatch(r"CKV2?_K8S_\d+=\S.*", v) for v in annotations.values())
    kinds = {to_manifest(r)["kind"] for r in objects}
    assert kinds == {kind.kind for kind in efa_device_plugin.KINDS}


def test_a_stack_without_efa_has_no_efa_parts() -> None:
    run = example_run("aws-dev")
    assert run.of_type(PLACEMENT_GROUP) == [] and run.of_type(SECURITY_GROUP) == []
    assert run.of_type(INGRESS) == [] and run.of_type(EGRESS) == []
    assert all("networkInterfaces" not in t.inputs and "placement" not in t.inputs for t in run.of_type(LAUNCH_TEMPLATE))
    assert not [r for r in run.registrations if r.type == efa_device_plugin.TYPE]
    assert all(EFA_PRESENT_LABEL not in g.inputs["labels"] for g in run.of_type(NODE_GROUP))


@functools.cache
def launch_template_data_shape() -> Any:
    model = botocore.session.get_session().get_service_model("ec2")
    return model.operation_model("CreateLaunchTemplate").input_shape.members["LaunchTemplateData"]


def pascal(key: str) -> str:
    return key[0].upper() + key[1:]


def to_request(value: Any, shape: Any) -> Any:
    """A pulumi-aws LaunchTemplate input in the EC2 API's spelling: PascalCase members, the
    bridge's "true"/"false" strings as booleans, ``securityGroups`` -> ``Groups``."""
    kind = shape.type_name
    if kind == "structure":
        renamed = {"SecurityGroups": "Groups"}
        out = {}
        for key, item in value.items():
            member = renamed.get(pascal(key), pascal(key))
            assert member in shape.members, f"{member} is not a member of {shape.name}"
            out[member] = to_request(item, shape.members[member])
        return out
    if kind == "list":
        if isinstance(value, dict):  # tags: a map in pulumi-aws, a list of {Key, Value} in EC2
            value = [{"key": k, "value": v} for k, v in value.items()]
        return [to_request(item, shape.member) for item in value]
    if kind == "boolean" and isinstance(value, str):
        return {"true": True, "false": False}[value]
    return value


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p4d.24xlarge"])
def test_every_efa_launch_template_input_is_valid_launch_template_data(instance_type: str) -> None:
    run = efa_run(instance_type)
    shape = launch_template_data_shape()
    for template in run.of_type(LAUNCH_TEMPLATE):
        data = {k: v for k, v in template.inputs.items() if k not in ("description", "updateDefaultVersion", "tags", "name")}
        request = to_request(data, shape)
        report = ParamValidator().validate(request, shape)
        assert not report.has_errors(), report.generate_report()
        for interface in request.get("NetworkInterfaces", []):
            enum = shape.members["NetworkInterfaces"].member.members["InterfaceType"].enum or ["efa"]
            assert interface["InterfaceType"] in enum


def test_efa_facts_cover_the_catalog_and_name_known_types() -> None:
    assert set(EFA_INTERFACES) <= set(INSTANCE_TYPES)
    assert EFA_INTERFACES["p5.48xlarge"] == 32 and EFA_INTERFACES["p5en.48xlarge"] == 16
    assert EFA_INTERFACES["p4d.24xlarge"] == 4 and EFA_INTERFACES["g5.48xlarge"] == 1
    assert not INSTANCE_TYPES["g4dn.xlarge"].efa_supported and not INSTANCE_TYPES["m6i.large"].efa_supported
    assert all(INSTANCE_TYPES[name].gpus > 0 for name in EFA_INTERFACES)
    assert len(efa_network_interfaces(4, ["sg-1"])) == 4


# --- the rules, called as a library user would ------------------------------------------------------


def efa_spec(**changes: Any) -> GpuPoolSpec:
    fields: dict[str, Any] = {
        "name": "train",
        "instance_types": ("p5.48xlarge",),
        "max_size": 4,
        "efa": True,
        "zones": (AWS_ZONE,),
    }
    return GpuPoolSpec(**{**fields, **changes})


def test_a_non_efa_type_is_one_clear_error_naming_it() -> None:
    with pytest.raises(ConfigError) as caught:
        check_gpu_pool(efa_spec(instance_types=("g6.xlarge",)), Cloud.AWS, "gpupools:gpuPools[0]", (AWS_ZONE,))
    assert caught.value.path == "gpupools:gpuPools[0].instanceTypes[0]"
    assert "must support EFA" in str(caught.value) and "p5.48xlarge" in str(caught.value)


def test_efa_needs_exactly_one_zone_and_cluster_autoscaler() -> None:
    check_gpu_pool(efa_spec(), Cloud.AWS, "p", (AWS_ZONE, "us-west-2b"))
    check_gpu_pool(efa_spec(zones=()), Cloud.AWS, "p", (AWS_ZONE,))  # the cluster's single zone
    with pytest.raises(ConfigError, match="exactly one zone"):
        check_gpu_pool(efa_spec(zones=()), Cloud.AWS, "p", ("us-west-2a", "us-west-2b"))
    with pytest.raises(ConfigError, match="karpenter"):
        check_gpu_pool(efa_spec(), Cloud.AWS, "p", (AWS_ZONE,), provisioner=Provisioner.KARPENTER)


# --- AKS: proximity placement -----------------------------------------------------------------------


@functools.cache
def ppg_run() -> Run:
    return run_stack("azure-dev", overrides=ppg_overrides())


def test_a_proximity_placement_pool_gets_its_own_standard_group_in_its_zone() -> None:
    run = ppg_run()
    [group] = run.of_type("azure-native:compute:ProximityPlacementGroup")
    assert group.inputs["proximityPlacementGroupType"] == "Standard"
    assert group.inputs["zones"] == ["1"]
    pools = [p for p in run.of_type("azure-native:containerservice:AgentPool") if p.name.startswith("ml-dev-a100-")]
    assert len(pools) == 2
    group_id = output_id(group)
    for pool in pools:
        assert pool.inputs["proximityPlacementGroupID"] == group_id
        assert pool.inputs["availabilityZones"] == ["1"]
        assert "proximityPlacementGroupID" in pool.replace_on_changes
    others = [p for p in run.of_type("azure-native:containerservice:AgentPool") if p not in pools]
    assert others and all("proximityPlacementGroupID" not in p.inputs for p in others)
    assert all("proximityPlacementGroupID" not in p.replace_on_changes for p in others)


def test_turning_proximity_placement_on_is_a_new_pool_name_and_off_keeps_todays_names() -> None:
    base = GpuPoolSpec(name="a100", instance_types=("Standard_ND96asr_v4",), max_size=4, zones=("1",))
    on = GpuPoolSpec(**{**base.__dict__, "proximity_placement": True})
    names_off = [p.name for p in plan_agent_pools(base, ("1", "2", "3"))]
    names_on = [p.name for p in plan_agent_pools(on, ("1", "2", "3"))]
    assert all(a != b for a, b in zip(names_off, names_on, strict=True))
    assert "proximityPlacementGroupID" in CREATE_ONLY_FIELDS
    default = example_run("azure-dev")
    assert default.of_type("azure-native:compute:ProximityPlacementGroup") == []


def test_proximity_placement_needs_one_zone() -> None:
    spec = GpuPoolSpec(name="a100", instance_types=("Standard_ND96asr_v4",), max_size=4, proximity_placement=True)
    with pytest.raises(ConfigError, match="one zone when proximityPlacement"):
        check_gpu_pool(spec, Cloud.AZURE, "p", ("1", "2"))
    check_gpu_pool(spec, Cloud.AZURE, "p", ("2",))


AZURE_SIZE_FEATURES = re.compile(r"^Standard_N[CDV]\d+(?P<features>[a-z]*)")
"""Azure size naming: family, vCPUs, then lowercase additive features (``r``: RDMA capable)."""


def test_infiniband_sizes_are_exactly_the_rdma_capable_names() -> None:
    for name, size in GPU_SIZES.items():
        match = AZURE_SIZE_FEATURES.match(name)
        assert match, name
        assert size.infiniband == ("r" in match["features"]), name
    assert set(infiniband_sizes()) == {
        "Standard_ND96asr_v4",
        "Standard_ND96amsr_A100_v4",
        "Standard_ND96isr_H100_v5",
        "Standard_ND96isr_H200_v5",
    }


def test_a_reserved_efa_group_gets_the_interfaces_but_not_the_pool_placement_group() -> None:
    overrides = efa_overrides(["p5.48xlarge"], reservations=[{"id": "cr-0123456789abcdef0", "kind": "capacityBlock"}])
    run = run_stack("aws-dev", overrides=overrides)
    [reserved] = [t for t in run.of_type(LAUNCH_TEMPLATE) if t.name.startswith("gpu4-rsv-")]
    assert len(reserved.inputs["networkInterfaces"]) == 32
    assert "placement" not in reserved.inputs  # a Capacity Block launch lands where the block is
    assert reserved.inputs["instanceMarketOptions"]["marketType"] == "capacity-block"
    groups = [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"].get("gpupools.io/pool") == "gpu4"]
    assert {g.inputs["capacityType"] for g in groups} == {"CAPACITY_BLOCK", "SPOT", "ON_DEMAND"}
    assert all(g.inputs["labels"][EFA_PRESENT_LABEL] == "true" for g in groups)
