"""gpupools:nodeRepair: its defaults per cloud and provisioner, ``nodeRepairConfig`` on the GPU
managed node groups (botocore's ``eks`` model), the ``eks-node-monitoring-agent`` add-on
(``CreateAddon`` and the add-on's configuration schema, the scheduler model for its DaemonSets) and
Karpenter's ``NodeRepair`` gate (the chart's values at 1.14.1)."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from gpupools import config
from gpupools.aws import node_repair
from gpupools.conventions import Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.specs import Cloud, Provisioner
from gpupools.testing import Registration, Run, run_stack, stack_config
from gpupools.versions import NODE_MONITORING_AGENT_ADDON_VERSION

from tests.k8s_schema import untolerated, validate_manifest
from tests.test_aws_contracts import check_request, create_nodegroup_request, operation_input
from tests.test_karpenter_eks import CHART_VALUE_PATHS, value_paths

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
EKS_EFFECT = {e.eks: e for e in TaintEffect}


@functools.cache
def run(stack: str, enabled: bool | None = None) -> Run:
    overrides = {} if enabled is None else {"gpupools:nodeRepair": {"enabled": enabled}}
    return run_stack(stack, overrides=overrides)


def role(group: Registration) -> str:
    return str(group.inputs["labels"]["gpupools.io/role"])


def addons(result: Run) -> list[Registration]:
    return [a for a in result.of_type(ADDON) if a.inputs["addonName"] == node_repair.ADDON_NAME]


def eks_taints(group: Registration) -> list[Taint]:
    return [Taint(t["key"], t["value"], EKS_EFFECT[t["effect"]]) for t in group.inputs.get("taints", [])]


# --- config ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "expected"),
    [("aws-dev", True), ("aws-karpenter-dev", False), ("azure-dev", True), ("azure-nap-dev", True)],
)
def test_default_is_on_where_node_repair_is_ga(stack: str, expected: bool) -> None:
    """EKS managed node groups: GA, on. Karpenter: alpha gate, off. AKS: always on (nothing to set)."""
    values = {k: v for k, v in stack_config(stack).items() if k != "gpupools:nodeRepair"}
    region = values.get("aws:region") or values.get("azure-native:location")
    assert config.parse(values, region).node_repair.enabled is expected


def test_defaults_table() -> None:
    assert config.default_node_repair(Cloud.AWS, Provisioner.CLUSTER_AUTOSCALER) is True
    assert config.default_node_repair(Cloud.AWS, Provisioner.KARPENTER) is False
    assert config.default_node_repair(Cloud.AZURE, Provisioner.CLUSTER_AUTOSCALER) is True


def with_node_repair(stack: str, section: Any) -> dict[str, Any]:
    return {**stack_config(stack), "gpupools:nodeRepair": section}


NODE_REPAIR_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "node-repair-unknown-key",
        with_node_repair("aws-dev", {"enable": True}),
        "gpupools:nodeRepair.enable",
        "did you mean 'enabled'",
    ),
    ("node-repair-not-bool", with_node_repair("aws-dev", {"enabled": "yes"}), "gpupools:nodeRepair.enabled", "true or false"),
    ("node-repair-not-mapping", with_node_repair("aws-dev", True), "gpupools:nodeRepair", "must be a mapping"),
    ("node-repair-off-on-aks", with_node_repair("azure-dev", {"enabled": False}), "gpupools:nodeRepair.enabled", "always on"),
]
"""Bad ``gpupools:nodeRepair`` values (also run through the program by ``test_bad_input_catalogue``)."""


@pytest.mark.parametrize(("case", "raw", "path", "rule"), NODE_REPAIR_INVALID, ids=[c[0] for c in NODE_REPAIR_INVALID])
def test_bad_node_repair_config_is_one_error(case: str, raw: dict[str, Any], path: str, rule: str) -> None:
    region = raw.get("aws:region") or raw.get("azure-native:location")
    with pytest.raises(ConfigError) as caught:
        config.parse(raw, region)
    assert caught.value.path == path and rule in str(caught.value)


# --- managed node groups ---------------------------------------------------------------------------


def test_every_gpu_node_group_has_node_repair_and_no_other_group_does() -> None:
    groups = run("aws-dev").of_type(NODE_GROUP)
    roles = {role(g) for g in groups}
    assert {"gpu", "cpu", "system"} <= roles, roles
    capacities = {g.inputs["capacityType"] for g in groups if role(g) == "gpu"}
    assert {"SPOT", "ON_DEMAND"} <= capacities
    for group in groups:
        expected = {"enabled": role(group) == "gpu"}
        assert group.inputs.get("nodeRepairConfig") == expected, group.name


def test_reserved_groups_get_node_repair_too() -> None:
    groups = run("aws-training-dev").of_type(NODE_GROUP)
    reserved = [g for g in groups if g.inputs["labels"]["gpupools.io/capacity-type"] == "reserved"]
    assert reserved
    assert all(g.inputs["nodeRepairConfig"] == {"enabled": True} for g in reserved)


def test_node_repair_config_is_valid_on_create_and_on_update() -> None:
    """``CreateNodegroup`` takes it (botocore ``NodeRepairConfig``: ``enabled`` a boolean), and so
    does ``UpdateNodegroupConfig``: an existing group is changed in place, not replaced."""
    create = operation_input("eks", "CreateNodegroup")
    assert create.members["nodeRepairConfig"].members["enabled"].type_name == "boolean"
    for group in run("aws-dev").of_type(NODE_GROUP):
        check_request(create_nodegroup_request(group), create, group.name)
    update = operation_input("eks", "UpdateNodegroupConfig")
    assert update.members["nodeRepairConfig"].name == create.members["nodeRepairConfig"].name


def test_disabled_means_repair_config_false_and_no_agent() -> None:
    """Off is sent as ``{enabled: false}``, never left out (``node_repair.node_repair_config``)."""
    result = run("aws-dev", False)
    assert all(g.inputs["nodeRepairConfig"] == {"enabled": False} for g in result.of_type(NODE_GROUP))
    assert addons(result) == []


def test_turning_node_repair_off_reaches_existing_groups() -> None:
    """Issue 29 (M4): a group created with repair on, then ``gpupools:nodeRepair: {enabled: false}``.
    ``node_repair_config`` is Optional+Computed in terraform-provider-aws
    (``internal/service/eks/node_group.go``: ``Optional: true, Computed: true``), so a program that
    leaves the block out sends nothing and EKS keeps repairing (what main did); the explicit
    ``{enabled: false}`` is an ``UpdateNodegroupConfig`` change. Checked with the update model."""
    from gpupools.testing.update_model import Stored, eks_node_group_config_update

    before = {g.inputs["nodeGroupName"]: g for g in run("aws-dev", True).of_type(NODE_GROUP)}
    after = {g.inputs["nodeGroupName"]: g for g in run("aws-dev", False).of_type(NODE_GROUP)}
    gpu = [name for name, g in before.items() if role(g) == "gpu"]
    assert gpu
    for name in gpu:
        # What DescribeNodegroup returns for a group created with repair on (botocore NodeRepairConfig).
        stored = Stored(inputs=before[name].inputs, outputs={**before[name].inputs, "nodeRepairConfig": {"enabled": True}})
        sent = eks_node_group_config_update(stored, after[name].inputs)
        assert sent == {"nodeRepairConfig": {"enabled": False}}, name
        # main's program: the block left out, so the provider plans the stored value and sends nothing.
        omitted = {k: v for k, v in after[name].inputs.items() if k != "nodeRepairConfig"}
        assert eks_node_group_config_update(stored, omitted) == {}
    shape = operation_input("eks", "UpdateNodegroupConfig")
    check_request(
        {"clusterName": "ml", "nodegroupName": gpu[0], "nodeRepairConfig": {"enabled": False}}, shape, "UpdateNodegroupConfig"
    )


# --- the node monitoring agent add-on --------------------------------------------------------------


def test_agent_add_on_is_pinned_after_the_system_group_and_a_valid_create_addon_request() -> None:
    result = run("aws-dev")
    [addon] = addons(result)
    assert addon.inputs["addonVersion"] == NODE_MONITORING_AGENT_ADDON_VERSION
    assert addon.inputs["resolveConflictsOnCreate"] == addon.inputs["resolveConflictsOnUpdate"] == "OVERWRITE"
    system = next(g for g in result.of_type(NODE_GROUP) if role(g) == "system")
    assert system.urn in addon.dependencies
    request = {
        "clusterName": addon.inputs["clusterName"],
        "addonName": addon.inputs["addonName"],
        "addonVersion": addon.inputs["addonVersion"],
        "resolveConflicts": addon.inputs["resolveConflictsOnCreate"],
        "configurationValues": addon.inputs["configurationValues"],
    }
    check_request(request, operation_input("eks", "CreateAddon"), addon.name)
    mapped = {*request, "resolveConflictsOnCreate", "resolveConflictsOnUpdate"} - {"resolveConflicts"}
    assert set(addon.inputs) == mapped, "map every Addon input to the CreateAddon request"


def test_addon_version_has_the_eks_build_form() -> None:
    upstream, _, build = NODE_MONITORING_AGENT_ADDON_VERSION.partition("-eksbuild.")
    assert upstream.startswith("v") and all(p.isdigit() for p in upstream[1:].split(".")) and build.isdigit()


AGENT_SCHEMA_KEYS = {"global", "nodeAgent", "dcgmAgent", "extraObjects"}
COMPONENT_SCHEMA_KEYS = {
    "nodeAgent": {
        "affinity", "additionalArgs", "podAnnotations", "podLabels", "nodeSelector", "priorityClassName", "probePort",
        "resources", "resizePolicy", "tolerations", "monitors",
    },
    "dcgmAgent": {
        "affinity", "podAnnotations", "podLabels", "nodeSelector", "priorityClassName", "resources", "resizePolicy",
        "tolerations",
    },
}  # fmt: skip
"""The add-on's configuration schema (what ``DescribeAddonConfiguration`` validates against), as
aws/eks-node-monitoring-agent ``charts/configuration.schema.json`` has it at v1.7.0 (commit
c399089d): ``additionalProperties: false`` at the top (these four keys) and in ``NodeAgent`` and
``DCGMAgent`` (these properties); ``tolerations`` is an array of objects in both."""


def configuration(result: Run) -> dict[str, Any]:
    [addon] = addons(result)
    return dict(json.loads(addon.inputs["configurationValues"]))


@pytest.mark.parametrize("stack", ["aws-dev", "aws-training-dev"])
def test_configuration_values_fit_the_add_ons_schema_and_kubernetes(stack: str) -> None:
    values = configuration(run(stack))
    assert set(values) <= AGENT_SCHEMA_KEYS
    for component, settings in values.items():
        assert set(settings) <= COMPONENT_SCHEMA_KEYS[component], component
        tolerations = settings["tolerations"]
        assert isinstance(tolerations, list) and all(isinstance(t, dict) for t in tolerations)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "check"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": tolerations},
        }
        validate_manifest(pod)


@pytest.mark.parametrize("stack", ["aws-dev", "aws-training-dev"])
def test_both_daemonsets_tolerate_every_gpu_groups_taints(stack: str) -> None:
    result = run(stack)
    values = configuration(result)
    gpu = [g for g in result.of_type(NODE_GROUP) if role(g) == "gpu"]
    assert any(len(eks_taints(g)) > 1 for g in gpu) or stack != "aws-dev", "aws-dev has a pool with its own taint"
    for group in gpu:
        taints = eks_taints(group)
        assert taints
        assert untolerated(values["dcgmAgent"]["tolerations"], taints) == [], group.name
        assert untolerated(values["nodeAgent"]["tolerations"], taints) == [], group.name


def test_the_dcgm_tolerations_are_exact_not_everything() -> None:
    """The host engine goes on GPU nodes only (its own instance-type affinity); its tolerations name
    the GPU pools' taints rather than tolerating everything."""
    tolerations = configuration(run("aws-dev"))["dcgmAgent"]["tolerations"]
    assert tolerations and all(t.get("operator") == "Equal" and t.get("key") for t in tolerations)
    assert untolerated(tolerations, [Taint("node.kubernetes.io/unschedulable", "", TaintEffect.NO_SCHEDULE)])


# --- Karpenter --------------------------------------------------------------------------------------


def controller_values(result: Run) -> dict[str, Any]:
    release = next(r for r in result.of_type(RELEASE) if r.inputs["name"] == "karpenter")
    return dict(release.inputs["values"])


NODE_REPAIR_GATE = "settings.featureGates.nodeRepair"
"""In aws/karpenter-provider-aws ``charts/karpenter/values.yaml`` at v1.14.1 (commit 1d927085):
``nodeRepair: false``, "nodeRepair is ALPHA and is disabled by default"; the deployment template
passes it as ``FEATURE_GATES`` ``NodeRepair=...``."""


def test_karpenter_default_leaves_the_alpha_gate_off_and_adds_no_agent() -> None:
    result = run("aws-karpenter-dev")
    assert "nodeRepair" not in controller_values(result)["settings"].get("featureGates", {})
    assert addons(result) == []


def test_karpenter_enabled_turns_the_gate_on_and_adds_the_agent() -> None:
    result = run("aws-karpenter-dev", True)
    values = controller_values(result)
    assert values["settings"]["featureGates"]["nodeRepair"] is True
    assert value_paths(values) - (CHART_VALUE_PATHS | {NODE_REPAIR_GATE}) == set()
    [addon] = addons(result)
    tolerations = json.loads(addon.inputs["configurationValues"])["dcgmAgent"]["tolerations"]
    templates = [p.inputs["spec"]["template"] for p in result.of_type(NODEPOOL)]
    gpu = [t["spec"] for t in templates if t["metadata"]["labels"].get("gpupools.io/role") == "gpu"]
    assert gpu and any(len(spec["taints"]) > 1 for spec in gpu), "a GPU NodePool with a taint of its own"
    for spec in gpu:
        taints = [Taint(t["key"], t.get("value", ""), TaintEffect(t["effect"])) for t in spec["taints"]]
        assert untolerated(tolerations, taints) == []


# --- the components, as a library user calls them --------------------------------------------------

SUBNETS = {"us-west-2a": "subnet-0aaaaaaaaaaaaaaaa", "us-west-2b": "subnet-0bbbbbbbbbbbbbbbb"}
ROLE_ARN = "arn:aws:iam::123456789012:role/nodes"


@pytest.mark.parametrize(
    ("component", "pool", "node_repair", "expected"),
    [
        ("gpu", {"name": "g1", "instanceTypes": ["g4dn.xlarge"], "maxSize": 4}, None, {"enabled": True}),
        ("gpu", {"name": "g1", "instanceTypes": ["g4dn.xlarge"], "maxSize": 4}, False, {"enabled": False}),
        ("cpu", {"name": "c1", "instanceTypes": ["m6i.xlarge"], "maxSize": 4}, None, {"enabled": False}),
        ("cpu", {"name": "c1", "instanceTypes": ["m6i.xlarge"], "maxSize": 4}, True, {"enabled": True}),
    ],
)
def test_node_group_components_default_to_repair_on_gpu_pools_only(
    component: str, pool: dict[str, Any], node_repair: bool | None, expected: dict[str, bool]
) -> None:
    from gpupools.aws import CpuNodeGroup, GpuNodeGroup
    from gpupools.testing import run_program

    kind = GpuNodeGroup if component == "gpu" else CpuNodeGroup
    result = run_program(
        lambda: kind("p", pool, cluster_name="ml", node_role_arn=ROLE_ARN, subnet_ids_by_zone=SUBNETS, node_repair=node_repair)
    )
    groups = result.of_type(NODE_GROUP)
    assert len(groups) == 4  # Spot and on-demand in each of the two zones
    assert all(g.inputs.get("nodeRepairConfig") == expected for g in groups)
