"""Karpenter on EKS (``gpupools:provisioner: karpenter``), on the recording mock runtime.

What ``aws-karpenter-dev`` registers, checked against sources nobody here wrote: the pinned CRD
schemas (``tests/crd_schema.py``), the Karpenter v1.14.1 CloudFormation template's IAM and
EventBridge definitions (the expected values below are typed from that file,
``website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml``),
the chart's ``values.yaml`` at 1.14.1, botocore's EventBridge and SQS models, and the scheduler
model of ``tests/k8s_schema.py`` for where the device plugin lands.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from gpupools.aws import karpenter
from gpupools.conventions import CAPACITY_TYPE_LABEL, GPU_TAINT, KARPENTER_CAPACITY_TYPE_LABEL, Role, Taint, TaintEffect
from gpupools.kubernetes.karpenter import nodepool
from gpupools.pools import NodePoolInfo
from gpupools.rules import CLUSTER_NAME_MAX
from gpupools.scheduling import gpu_workload
from gpupools.specs import PoolSpec, SharingMode, SharingSpec
from gpupools.testing import Registration, Run, fakes, run_stack, stack_config
from gpupools.versions import AL2023_AMI_ALIAS, BOTTLEROCKET_AMI_ALIAS, KARPENTER_VERSION

from tests.crd_schema import validate_custom_resource
from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, untolerated

STACK = "aws-karpenter-dev"
CLUSTER = "ml-karp"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
RELEASE = "kubernetes:helm.sh/v3:Release"


@cache
def run() -> Run:
    return example_run(STACK)


def custom_resource(reg: Registration) -> dict[str, Any]:
    return {key: reg.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def node_pools(result: Run) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: custom_resource(r) for r in result.of_type(NODEPOOL)}


def requirement(pool: dict[str, Any], key: str) -> list[str]:
    [found] = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    assert found["operator"] == "In"
    return list(found["values"])


# --- what the mode does not have -------------------------------------------------------------------


def test_no_pool_node_groups_no_asg_tags_no_cluster_autoscaler() -> None:
    result = run()
    groups = result.of_type("aws:eks/nodeGroup:NodeGroup")
    assert [g.inputs["nodeGroupName"] for g in groups] == [g.inputs["nodeGroupName"] for g in groups if "system" in g.name]
    assert len(groups) == 1
    # No cluster-autoscaler runs, so not even the system group's ASG gets node-template tags.
    assert result.of_type("aws:autoscaling/tag:Tag") == []
    assert "k8s.io/cluster-autoscaler" not in json.dumps([r.inputs for r in result.registrations])
    charts = [r.inputs["chart"] for r in result.of_type(RELEASE)]
    assert "cluster-autoscaler" not in charts
    assert not [r for r in result.registrations if "priority-expander" in str(r.inputs.get("metadata", {}).get("name", ""))]
    assert not result.of_type("gpupools:index:ClusterAutoscaler")


# --- the controller --------------------------------------------------------------------------------


def test_release_is_the_official_oci_chart_at_the_pinned_version_on_the_system_group() -> None:
    releases = {r.inputs["name"]: r for r in run().of_type(RELEASE)}
    crd, controller = releases["karpenter-crd"], releases["karpenter"]
    assert crd.inputs["chart"] == "oci://public.ecr.aws/karpenter/karpenter-crd"
    assert controller.inputs["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert crd.inputs["version"] == controller.inputs["version"] == KARPENTER_VERSION == "1.14.1"
    assert "repositoryOpts" not in controller.inputs  # OCI: the chart reference carries the registry
    assert controller.inputs["skipCrds"] is True
    assert controller.inputs["namespace"] == "kube-system"
    values = controller.inputs["values"]
    assert values["nodeSelector"]["gpupools.io/role"] == Role.SYSTEM.value
    # The example's gpu1 pool is time-sliced: its NodeOverlay needs the alpha NodeOverlay gate.
    assert values["settings"] == {
        "clusterName": CLUSTER,
        "interruptionQueue": queue_outputs()["name"],
        "featureGates": {"nodeOverlay": True},
    }
    role_arn = values["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"]
    assert role_arn.endswith(f":role/{CLUSTER}-karpenter-controller")
    # The same role in the pod template, so a new role rolls the pods (review T1).
    assert values["podAnnotations"] == {"gpupools.io/role-arn": role_arn}
    deps = controller.dependencies
    assert crd.urn in deps and any(run().by_urn(d).type == "aws:eks/nodeGroup:NodeGroup" for d in deps)
    assert any(run().by_urn(d).type == "aws:sqs/queue:Queue" for d in deps)


CHART_VALUE_PATHS = {
    "settings.clusterName",
    "settings.interruptionQueue",
    "settings.featureGates.nodeOverlay",
    "settings.featureGates.reservedCapacity",
    "serviceAccount.create",
    "serviceAccount.name",
    "serviceAccount.annotations",
    "podAnnotations",
    "replicas",
    "dnsPolicy",
    "nodeSelector",
    "controller.resources",
    "controller.env",
}
"""Paths that exist in aws/karpenter-provider-aws ``charts/karpenter/values.yaml`` as released for
chart 1.14.1 (commit 1d927085): ``settings.{clusterName,interruptionQueue}``,
``settings.featureGates.nodeOverlay`` (boolean, default false: "nodeOverlay is ALPHA and is disabled by default"),
``settings.featureGates.reservedCapacity`` (boolean, default true: "reservedCapacity is BETA and is enabled by default"),
``serviceAccount.{create,name,annotations}``, ``podAnnotations`` (map, rendered into the pod
template's annotations), ``replicas``, ``dnsPolicy`` (default ``ClusterFirst``, rendered
as the pod's ``dnsPolicy`` by ``templates/deployment.yaml``), ``nodeSelector`` (map, default
``kubernetes.io/os: linux``), ``controller.resources`` and ``controller.env`` (list). Maps and
lists end a path: their content is free-form."""


def value_paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        free_form = path in CHART_VALUE_PATHS
        paths |= value_paths(value, f"{path}.") if isinstance(value, dict) and not free_form else {path}
    return paths


def test_every_helm_value_set_exists_in_the_charts_values() -> None:
    controller = next(r for r in run().of_type(RELEASE) if r.inputs["name"] == "karpenter")
    unknown = value_paths(controller.inputs["values"]) - CHART_VALUE_PATHS
    assert unknown == set(), f"not in the chart's values.yaml: {unknown}"


# --- IAM -------------------------------------------------------------------------------------------


def policies() -> dict[str, dict[str, Any]]:
    return {
        r.name.removeprefix(f"{CLUSTER}-karpenter-"): json.loads(r.inputs["policy"])
        for r in run().of_type("aws:iam/policy:Policy")
    }


def statements() -> list[dict[str, Any]]:
    return [s for doc in policies().values() for s in doc["Statement"]]


def actions(statement: dict[str, Any]) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def test_controller_role_trusts_only_the_karpenter_service_account() -> None:
    [role] = [r for r in run().of_type("aws:iam/role:Role") if r.name == f"{CLUSTER}-karpenter-controller"]
    [statement] = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    conditions = statement["Condition"]["StringEquals"]
    assert sorted(conditions.values()) == ["sts.amazonaws.com", "system:serviceaccount:kube-system:karpenter"]
    attached = [a for a in run().of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if a.name.startswith("karpenter-")]
    assert len(attached) == len(policies()) == 5


def test_no_wildcard_actions_and_every_write_is_scoped() -> None:
    writes = {"ec2:CreateTags", "ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ec2:CreateLaunchTemplate"}
    writes |= {"iam:CreateInstanceProfile", "iam:TagInstanceProfile", "iam:AddRoleToInstanceProfile"}
    writes |= {"iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile", "iam:PassRole"}
    for statement in statements():
        assert statement["Effect"] == "Allow"
        for action in actions(statement):
            assert "*" not in action, statement["Sid"]
            if action in writes:
                assert "Condition" in statement, f"{statement['Sid']} grants {action} without a condition"


def test_node_lifecycle_is_limited_to_this_clusters_resources() -> None:
    by_sid = {s["Sid"]: s for s in policies()["node-lifecycle"]["Statement"]}
    owned = f"kubernetes.io/cluster/{CLUSTER}"
    create = by_sid["AllowScopedEC2InstanceActionsWithTags"]["Condition"]
    assert create["StringEquals"] == {f"aws:RequestTag/{owned}": "owned", "aws:RequestTag/eks:eks-cluster-name": CLUSTER}
    assert create["StringLike"] == {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    delete = by_sid["AllowScopedDeletion"]
    assert sorted(actions(delete)) == ["ec2:DeleteLaunchTemplate", "ec2:TerminateInstances"]
    assert delete["Condition"]["StringEquals"] == {f"aws:ResourceTag/{owned}": "owned"}
    tagging = by_sid["AllowScopedResourceTagging"]["Condition"]
    assert tagging["ForAllValues:StringEquals"]["aws:TagKeys"] == ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
    assert all(r.startswith("arn:aws:ec2:us-west-2:") for s in by_sid.values() for r in [s["Resource"]] if isinstance(r, str))


def test_pass_role_only_the_node_role_only_to_ec2_and_queue_access_only_its_own_queue() -> None:
    [passrole] = [s for s in statements() if "iam:PassRole" in actions(s)]
    assert passrole["Resource"].endswith(":role/ml-karp-node-role")
    assert passrole["Condition"] == {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}
    [queue] = policies()["interruption"]["Statement"]
    assert sorted(actions(queue)) == ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    assert queue["Resource"] == queue_outputs()["arn"]
    [regional] = [s for s in policies()["resource-discovery"]["Statement"] if s["Sid"] == "AllowRegionalReadActions"]
    assert regional["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}
    [eks] = policies()["eks-integration"]["Statement"]
    assert eks["Resource"] == f"arn:aws:eks:us-west-2:123456789012:cluster/{CLUSTER}"


def test_each_managed_policy_fits_the_iam_size_limit() -> None:
    # IAM: a managed policy document is at most 6,144 characters, whitespace not counted.
    for name, document in policies().items():
        assert len(json.dumps(document, separators=(",", ":"))) <= 6144, name


# --- interruption handling ---------------------------------------------------------------------------

CLOUDFORMATION_RULES = {
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
}
"""``ScheduledChangeRule``, ``SpotInterruptionRule``, ``RebalanceRule``, ``InstanceStateChangeRule``
of the v1.14.1 CloudFormation template (source, detail-type)."""


def test_queue_is_encrypted_and_accepts_only_eventbridge_over_tls() -> None:
    [queue] = run().of_type("aws:sqs/queue:Queue")
    assert queue.inputs["sqsManagedSseEnabled"] is True
    assert queue.inputs["messageRetentionSeconds"] == 300
    [policy] = run().of_type("aws:sqs/queuePolicy:QueuePolicy")
    allow, deny = json.loads(policy.inputs["policy"])["Statement"]
    assert (
        allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]} and allow["Action"] == "sqs:SendMessage"
    )
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    model = botocore.session.get_session().get_service_model("sqs")
    report = ParamValidator().validate(
        {"QueueName": queue_outputs()["name"], "Attributes": {"MessageRetentionPeriod": "300", "SqsManagedSseEnabled": "true"}},
        model.operation_model("CreateQueue").input_shape,
    )
    assert not report.has_errors(), report.generate_report()


def queue_outputs() -> dict[str, Any]:
    """The interruption queue's ``name`` and ``arn`` as the provider would return them for its inputs
    (the mock runtime's fake: ``namePrefix`` plus the provider's 26-character unique suffix)."""
    [queue] = run().of_type("aws:sqs/queue:Queue")
    return fakes.OUTPUTS["aws:sqs/queue:Queue"](queue.name, queue.inputs)


def test_queue_has_no_fixed_name_and_everything_reads_its_name_and_arn_from_its_outputs() -> None:
    """A fixed name is blocked for 60 s after its queue is deleted (SQS ``DeleteQueue`` API
    reference), so the queue gets a prefix and a unique suffix; Karpenter's
    ``settings.interruptionQueue``, the rules' targets, the queue policy and the controller's
    interruption policy all follow the queue's outputs."""
    [queue] = run().of_type("aws:sqs/queue:Queue")
    assert "name" not in queue.inputs
    assert queue.inputs["namePrefix"] == f"{CLUSTER}-karpenter-"
    name, arn = queue_outputs()["name"], queue_outputs()["arn"]
    assert name.startswith(f"{CLUSTER}-karpenter-") and len(name) == len(f"{CLUSTER}-karpenter-") + 26
    assert len(name) <= 80 and arn.endswith(":" + name)
    controller = next(r for r in run().of_type(RELEASE) if r.inputs["name"] == "karpenter")
    assert controller.inputs["values"]["settings"]["interruptionQueue"] == name
    [policy] = run().of_type("aws:sqs/queuePolicy:QueuePolicy")
    assert {s["Resource"] for s in json.loads(policy.inputs["policy"])["Statement"]} == {arn}
    assert policy.inputs["queueUrl"].endswith("/" + name)
    [interruption] = policies()["interruption"]["Statement"]
    assert interruption["Resource"] == arn
    # The longest cluster name the rules allow still fits SQS's 80 characters.
    assert len(karpenter.queue_name_prefix("a" * CLUSTER_NAME_MAX)) + karpenter.UNIQUE_SUFFIX_LENGTH <= karpenter.QUEUE_NAME_MAX


def test_four_rules_with_the_documented_patterns_target_the_queue() -> None:
    result = run()
    rules = result.of_type("aws:cloudwatch/eventRule:EventRule")
    patterns = {
        (json.loads(r.inputs["eventPattern"])["source"][0], json.loads(r.inputs["eventPattern"])["detail-type"][0]) for r in rules
    }
    assert patterns == CLOUDFORMATION_RULES
    targets = result.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 4
    assert all(t.inputs["arn"] == queue_outputs()["arn"] for t in targets)
    events = botocore.session.get_session().get_service_model("events")
    put_rule = events.operation_model("PutRule").input_shape
    for rule in rules:
        report = ParamValidator().validate({"Name": rule.name, "EventPattern": rule.inputs["eventPattern"]}, put_rule)
        assert not report.has_errors(), report.generate_report()
        assert len(rule.inputs["eventPattern"]) <= put_rule.members["EventPattern"].metadata.get("max", 4096)


def test_discovery_tags_on_created_subnets_and_the_cluster_security_group() -> None:
    result = run()
    private = [s for s in result.of_type("aws:ec2/subnet:Subnet") if "private" in s.name]
    assert len(private) == 3 and all(s.inputs["tags"]["karpenter.sh/discovery"] == CLUSTER for s in private)
    tags = result.of_type("aws:ec2/tag:Tag")
    assert [(t.inputs["resourceId"], t.inputs["key"], t.inputs["value"]) for t in tags] == [
        ("sg-0cluster000000000", "karpenter.sh/discovery", CLUSTER)
    ]


def test_brought_subnets_are_tagged_with_ec2_tags() -> None:
    subnets = ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb", "subnet-0cccccccccccccccc"]
    result = run_stack(STACK, overrides={"gpupools:network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": subnets}})
    tagged = sorted(t.inputs["resourceId"] for t in result.of_type("aws:ec2/tag:Tag"))
    assert tagged == sorted([*subnets, "sg-0cluster000000000"])


# --- node classes and NodePools ----------------------------------------------------------------------


def test_every_custom_resource_is_valid_against_the_pinned_crds() -> None:
    resources = run().of_type(NODEPOOL) + run().of_type(NODECLASS)
    assert len(resources) == 6
    for reg in resources:
        assert validate_custom_resource(custom_resource(reg)) == [], reg.name


def minutes(duration: str) -> float:
    """A Pulumi custom timeout (Go duration: ``30m``, ``1h``, ``90s``) in minutes."""
    units = {"s": 1 / 60, "m": 1, "h": 60}
    assert duration[-1] in units and duration[:-1].isdigit(), duration
    return int(duration[:-1]) * units[duration[-1]]


PULUMI_KUBERNETES_DEFAULT_DELETE_MINUTES = 10
"""pulumi-kubernetes' default wait for a delete (nodepool.DELETE_TIMEOUT's docstring)."""

NODE_CLASS_RECHECK_MINUTES = 10
"""An EC2NodeClass with NodeClaims left rechecks every 10 minutes (v1.14.1
``pkg/controllers/nodeclass/controller.go``, ``finalize``: ``RequeueAfter: time.Minute * 10``)."""


def test_nodepools_and_node_classes_wait_for_a_gpu_drain_on_delete() -> None:
    resources = run().of_type(NODEPOOL) + run().of_type(NODECLASS)
    assert len(resources) == 6
    for reg in resources:
        timeouts = reg.options.get("customTimeouts", {})
        assert set(timeouts) == {"delete"}, reg.name
        # Longer than the default, and than one node-class recheck plus a drain of a few minutes.
        assert minutes(timeouts["delete"]) > PULUMI_KUBERNETES_DEFAULT_DELETE_MINUTES, reg.name
        assert minutes(timeouts["delete"]) >= NODE_CLASS_RECHECK_MINUTES + 15, reg.name


def test_custom_resources_wait_for_the_controller_release() -> None:
    controller = next(r for r in run().of_type(RELEASE) if r.inputs["name"] == "karpenter")
    for reg in run().of_type(NODEPOOL) + run().of_type(NODECLASS):
        assert controller.urn in reg.dependencies, reg.name


def test_node_classes_pin_the_image_and_keep_the_secure_defaults() -> None:
    classes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in run().of_type(NODECLASS)}
    from gpupools import config

    disks = {pool.name: pool.disk_size_gb for pool in config.parse(stack_config(STACK)).pools}
    assert sorted(classes) == sorted(disks) == ["general", "gpu1", "gpu4"]  # one per pool, named after it
    for name, spec in classes.items():
        assert spec["amiSelectorTerms"] == [{"alias": AL2023_AMI_ALIAS}] and not AL2023_AMI_ALIAS.endswith("latest")
        assert spec["metadataOptions"]["httpTokens"] == "required" and spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
        [root] = spec["blockDeviceMappings"]
        assert root["deviceName"] == "/dev/xvda" and root["ebs"]["encrypted"] is True and root["ebs"]["volumeType"] == "gp3"
        assert root["ebs"]["volumeSize"] == f"{disks[name]}Gi"
        assert spec["role"] == "ml-karp-node-role"
        assert (
            spec["subnetSelectorTerms"] == spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": CLUSTER}}]
        )


def test_one_nodepool_per_pool_with_requirements_labels_taints_limits_and_disruption() -> None:
    config = stack_config(STACK)
    pools = {p["name"]: p for p in [*config["gpupools:gpuPools"], *config["gpupools:cpuPools"]]}
    found = node_pools(run())
    assert sorted(found) == sorted(pools)
    facts = {"gpu1": (4, 1, 4), "gpu4": (48, 4, 1), "general": (8, 0, 1)}  # vCPUs, GPUs, slots per GPU
    for name, pool in found.items():
        spec = pool["spec"]
        assert requirement(pool, "node.kubernetes.io/instance-type") == pools[name]["instanceTypes"]
        assert requirement(pool, "topology.kubernetes.io/zone") == ["us-west-2a", "us-west-2b", "us-west-2c"]
        assert requirement(pool, "karpenter.sh/capacity-type") == ["spot", "on-demand"]
        assert requirement(pool, "kubernetes.io/arch") == ["amd64"]
        labels = spec["template"]["metadata"]["labels"]
        assert labels["gpupools.io/pool"] == name and CAPACITY_TYPE_LABEL not in labels
        taints = spec["template"]["spec"]["taints"]
        vcpus, gpus, slots = facts[name]
        max_size = pools[name]["maxSize"]
        assert spec["limits"]["nodes"] == str(max_size) and spec["limits"]["cpu"] == str(max_size * vcpus)
        if gpus:
            assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in taints
            assert labels["nvidia.com/gpu.present"] == "true" and labels["gpupools.io/role"] == "gpu"
            assert spec["limits"]["nvidia.com/gpu"] == str(max_size * gpus * slots)
        else:
            assert taints == [] and "nvidia.com/gpu" not in spec["limits"] and labels["gpupools.io/role"] == "cpu"
        assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty"
        assert spec["disruption"]["consolidateAfter"] == config["gpupools:autoscaler"]["scaleDownUnneededTime"]
        assert spec["disruption"]["budgets"][0] == {"nodes": "10%"}
    assert {"key": "dedicated", "value": "training", "effect": "NoSchedule"} in found["gpu4"]["spec"]["template"]["spec"][
        "taints"
    ]
    assert found["gpu1"]["spec"]["template"]["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "time-slicing-4"


def test_capacity_types_follow_spot_and_on_demand_fallback() -> None:
    pools = [dict(p) for p in stack_config(STACK)["gpupools:gpuPools"]]
    pools[0]["onDemandFallback"] = False
    pools[1]["spot"] = False
    found = node_pools(run_stack(STACK, overrides={"gpupools:gpuPools": pools}))
    assert requirement(found["gpu1"], "karpenter.sh/capacity-type") == ["spot"]
    assert requirement(found["gpu4"], "karpenter.sh/capacity-type") == ["on-demand"]


def test_weights_prefer_the_smaller_node_and_follow_an_explicit_order() -> None:
    found = node_pools(run())
    weights = {name: pool["spec"]["weight"] for name, pool in found.items()}
    assert weights["general"] > weights["gpu1"] > weights["gpu4"]
    assert nodepool.weights(["gpu4", "gpu1"]) == {"gpu4": 100, "gpu1": 99}


def test_bottlerocket_pool_gets_the_bottlerocket_class_and_no_device_plugin() -> None:
    pools = [dict(p) for p in stack_config(STACK)["gpupools:gpuPools"]]
    pools[1]["amiType"] = "BOTTLEROCKET_x86_64_NVIDIA"
    result = run_stack(STACK, overrides={"gpupools:gpuPools": pools})
    classes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in result.of_type(NODECLASS)}
    bottlerocket = classes["gpu4"]
    assert bottlerocket["amiSelectorTerms"] == [{"alias": BOTTLEROCKET_AMI_ALIAS}]
    assert [d["deviceName"] for d in bottlerocket["blockDeviceMappings"]] == ["/dev/xvda", "/dev/xvdb"]
    assert all(d["ebs"]["encrypted"] for d in bottlerocket["blockDeviceMappings"])
    assert node_pools(result)["gpu4"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "gpu4"
    [daemonset] = [
        d for d in result.of_type("kubernetes:apps/v1:DaemonSet") if d.inputs["metadata"]["name"] == "nvidia-device-plugin"
    ]
    affinity = daemonset.inputs["spec"]["template"]["spec"]["affinity"]
    assert not affinity_matches(affinity, node_pools(result)["gpu4"]["spec"]["template"]["metadata"]["labels"])
    assert affinity_matches(affinity, node_pools(result)["gpu1"]["spec"]["template"]["metadata"]["labels"])


def test_device_plugin_lands_on_every_gpu_nodepools_nodes_and_no_cpu_nodes() -> None:
    [daemonset] = [
        d for d in run().of_type("kubernetes:apps/v1:DaemonSet") if d.inputs["metadata"]["name"] == "nvidia-device-plugin"
    ]
    pod = daemonset.inputs["spec"]["template"]["spec"]
    for name, pool in node_pools(run()).items():
        template = pool["spec"]["template"]
        # A node Karpenter launches carries the template labels plus Karpenter's own.
        labels = {**template["metadata"]["labels"], KARPENTER_CAPACITY_TYPE_LABEL: "spot", "karpenter.sh/nodepool": name}
        taints = [Taint(t["key"], t["value"], TaintEffect(t["effect"])) for t in template["spec"]["taints"]]
        lands = affinity_matches(pod["affinity"], labels) and not untolerated(pod["tolerations"], taints)
        assert lands == (labels["gpupools.io/role"] == "gpu"), name


def test_node_pools_output_lists_the_nodepools_with_limits() -> None:
    outputs = {p["name"]: p for p in run().outputs["nodePools"]}
    assert outputs["gpu1"]["capacityTypes"] == ["spot", "on-demand"]
    assert outputs["gpu1"]["limits"] == {"cpu": "24", "nodes": "6", "nvidia.com/gpu": "24"}
    assert "limits" not in outputs[next(n for n in outputs if n.startswith("ml-karp-system"))]


# --- the pure builder and the workload helpers -------------------------------------------------------


def test_gpu_workload_prefers_spot_on_karpenter_nodes() -> None:
    preferred = gpu_workload()["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    spot_node = {KARPENTER_CAPACITY_TYPE_LABEL: "spot"}
    on_demand_node = {KARPENTER_CAPACITY_TYPE_LABEL: "on-demand"}

    def score(labels: dict[str, str]) -> int:
        return sum(
            t["weight"]
            for t in preferred
            if affinity_matches(
                {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [t["preference"]]}}},
                labels,
            )
        )

    assert score(spot_node) > score(on_demand_node) == 0
    assert score({CAPACITY_TYPE_LABEL: "spot"}) == score(spot_node)


def test_node_pool_info_carries_what_the_kubernetes_side_needs() -> None:
    pool = PoolSpec(name="t4", instance_types=("g4dn.xlarge",), max_size=5, sharing=SharingSpec(SharingMode.MPS, replicas=2))
    shape = nodepool.NodeShape(vcpus=4, gpus=1, gpu_model="nvidia-tesla-t4")
    info: NodePoolInfo = nodepool.node_pool_info("t4", pool, shape, ["us-west-2a"], needs_device_plugin=True)
    assert info.taints == (GPU_TAINT,) and info.capacity_label == KARPENTER_CAPACITY_TYPE_LABEL
    assert info.gpu_slots_per_node == 2 and info.limits["nvidia.com/gpu"] == "10"
    with pytest.raises(Exception, match="weight"):
        nodepool.node_pool(
            "t4",
            pool,
            node_class_ref=nodepool.NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "x"),
            shape=shape,
            zones=["us-west-2a"],
            consolidate_after="5m",
            weight=0,
        )


# --- policy pack ----------------------------------------------------------------------------------


def test_policy_pack_passes_the_stack_and_catches_an_untainted_or_unlimited_gpu_nodepool() -> None:
    import sys
    from pathlib import Path

    policy_dir = str(Path(__file__).resolve().parents[1] / "policy")
    if policy_dir not in sys.path:
        sys.path.insert(0, policy_dir)
    from gpupools_policy import rules as policy_rules

    for reg in run().of_type(NODEPOOL):
        assert policy_rules.check_karpenter_gpu_nodepool(reg.type, reg.inputs, name=reg.name) == []
    gpu1 = next(r for r in run().of_type(NODEPOOL) if r.name.endswith("gpu1"))
    spec = json.loads(json.dumps(gpu1.inputs["spec"]))
    spec["template"]["spec"]["taints"] = []
    del spec["limits"]["nvidia.com/gpu"]
    messages = policy_rules.check_karpenter_gpu_nodepool(gpu1.type, {**gpu1.inputs, "spec": spec}, name="gpu1")
    assert len(messages) == 2 and "GPU taint" in messages[0] and "nvidia.com/gpu' limit" in messages[1]
    general = next(r for r in run().of_type(NODEPOOL) if r.name.endswith("general"))
    cpu_spec = json.loads(json.dumps(general.inputs["spec"]))
    del cpu_spec["limits"]["cpu"]
    assert policy_rules.check_karpenter_gpu_nodepool(general.type, {**general.inputs, "spec": cpu_spec}, name="general") == []


# --- config ------------------------------------------------------------------------------------------


def test_default_provisioner_is_cluster_autoscaler_and_changes_nothing() -> None:
    from gpupools import config
    from gpupools.specs import Provisioner
    from gpupools.synth.document import desired_state

    raw = stack_config("aws-dev")
    assert config.parse(raw, "us-west-2").provisioner is Provisioner.CLUSTER_AUTOSCALER
    assert config.parse(stack_config(STACK), "us-west-2").provisioner is Provisioner.KARPENTER
    implicit = desired_state(example_run("aws-dev"), "aws-dev")
    explicit = desired_state(run_stack("aws-dev", overrides={"gpupools:provisioner": "cluster-autoscaler"}), "aws-dev")
    assert implicit == explicit


def test_karpenter_lifts_the_per_zone_node_group_rules() -> None:
    from gpupools import config

    pools = [dict(p) for p in stack_config(STACK)["gpupools:gpuPools"]]
    pools[1]["maxSize"] = 1  # fewer nodes than zones: an error for per-zone node groups, fine for a NodePool
    config.parse({**stack_config(STACK), "gpupools:gpuPools": pools}, "us-west-2")
    autoscaler = {k: v for k, v in stack_config(STACK).items() if k != "gpupools:maintenance"}  # a Karpenter-only key
    with pytest.raises(Exception, match="number of zones"):
        config.parse({**autoscaler, "gpupools:gpuPools": pools, "gpupools:provisioner": "cluster-autoscaler"}, "us-west-2")
