"""Contracts against models nobody here wrote: botocore's EKS and Auto Scaling service models,
cluster-autoscaler's taint tag format, and the IAM policy grammar, on every stack variant.

Each ``aws:eks/nodeGroup:NodeGroup`` registration is mapped to the ``CreateNodegroup`` request the
provider would send and checked with botocore's ``ParamValidator`` (types, required members, minima)
plus the model's maxima, enums and patterns, which ``ParamValidator`` does not check. Each
``aws:autoscaling/tag:Tag`` is mapped to a ``CreateOrUpdateTags`` request the same way.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import botocore.session
import pytest
from botocore.model import Shape
from botocore.validate import ParamValidator
from gpupools.aws.iam import AUTOSCALER_DESCRIBE_ACTIONS, AUTOSCALER_MUTATING_ACTIONS
from gpupools.rules import ASG_MAX_TAGS, EKS_ASG_OWN_TAGS
from gpupools.testing import Registration, Run, fakes, run_stack, stack_config

from tests.multi_node_cases import efa_overrides

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"

CA_TAINT_VALUE = re.compile(r"(.*):(NoSchedule|NoExecute|PreferNoSchedule)")
"""cluster-autoscaler ``aws_manager.go`` ``extractTaintsFromAsg``: anything else is ignored."""

EKS_TO_K8S_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}

NODE_GROUP_INPUT_TO_PARAM = {
    "clusterName": "clusterName",
    "nodeGroupName": "nodegroupName",
    "nodeRoleArn": "nodeRole",
    "subnetIds": "subnets",
    "scalingConfig": "scalingConfig",
    "instanceTypes": "instanceTypes",
    "amiType": "amiType",
    "capacityType": "capacityType",
    "labels": "labels",
    "taints": "taints",
    "tags": "tags",
    "launchTemplate": "launchTemplate",
    "updateConfig": "updateConfig",
    "version": "version",
    "releaseVersion": "releaseVersion",
    "diskSize": "diskSize",
    "remoteAccess": "remoteAccess",
    "nodeRepairConfig": "nodeRepairConfig",
}
"""pulumi-aws NodeGroup inputs -> CreateNodegroup parameters (nested members share their names)."""


def aws_dev_pools() -> list[dict[str, Any]]:
    return list(stack_config("aws-dev")["gpupools:gpuPools"])


VARIANTS: dict[str, dict[str, Any]] = {
    "aws-dev": {},
    # Bottlerocket runs its own device plugin, so gpupools' sharing is not available there.
    "bottlerocket": {
        "gpupools:gpuPools": [
            {**{k: v for k, v in p.items() if k != "sharing"}, "amiType": "BOTTLEROCKET_x86_64_NVIDIA"} for p in aws_dev_pools()
        ]
    },
    "on-demand-only": {
        "gpupools:gpuPools": [
            {k: v for k, v in p.items() if k not in ("onDemandMaxSize", "onDemandFallback")} | {"spot": False}
            for p in aws_dev_pools()
        ]
    },
    "default-zones": {"gpupools:cluster": {"name": "ml-dev", "kubernetesVersion": "1.34"}},
    # A p5.48xlarge EFA pool in one zone: 32 EFA interfaces, a placement group, the EFA label and resource tags.
    "efa": efa_overrides(["p5.48xlarge"]),
}


@functools.cache
def run_variant(name: str) -> Run:
    return run_stack("aws-dev", overrides=VARIANTS[name])


@functools.cache
def operation_input(service: str, operation: str) -> Shape:
    model = botocore.session.get_session().get_service_model(service)
    return model.operation_model(operation).input_shape


def python_pattern(pattern: str) -> str:
    """The AWS models' (Java) patterns spell astral characters as UTF-16 surrogate pairs, which
    Python's ``re`` rejects in a range; spell that range with code points instead."""
    return pattern.replace(r"\uD800\uDC00-\uDBFF\uDFFF", r"\U00010000-\U0010FFFF")


def limit_violations(value: Any, shape: Shape, path: str) -> list[str]:
    """What ``ParamValidator`` leaves out: maxima, enums and patterns, recursively."""
    found: list[str] = []
    meta = shape.metadata
    kind = shape.type_name
    if kind == "structure":
        for key, item in value.items():
            if key in shape.members:
                found += limit_violations(item, shape.members[key], f"{path}.{key}")
    elif kind == "list":
        if "max" in meta and len(value) > meta["max"]:
            found.append(f"{path}: {len(value)} items > {meta['max']}")
        for index, item in enumerate(value):
            found += limit_violations(item, shape.member, f"{path}[{index}]")
    elif kind == "map":
        if "max" in meta and len(value) > meta["max"]:
            found.append(f"{path}: {len(value)} entries > {meta['max']}")
        for key, item in value.items():
            found += limit_violations(key, shape.key, f"{path}{{{key}}}")
            found += limit_violations(item, shape.value, f"{path}.{key}")
    elif kind == "string":
        if "max" in meta and len(value) > meta["max"]:
            found.append(f"{path}: {len(value)} characters > {meta['max']}")
        if shape.enum and value not in shape.enum:
            found.append(f"{path}: {value!r} not in {shape.enum}")
        if "pattern" in meta and not re.fullmatch(python_pattern(meta["pattern"]), value):
            found.append(f"{path}: {value!r} does not match {meta['pattern']}")
    elif kind in ("integer", "long") and "max" in meta and value > meta["max"]:
        found.append(f"{path}: {value} > {meta['max']}")
    return found


def check_request(params: dict[str, Any], shape: Shape, what: str) -> None:
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), f"{what}: {report.generate_report()}"
    assert limit_violations(params, shape, shape.name) == [], what


def create_nodegroup_request(registration: Registration) -> dict[str, Any]:
    unmapped = set(registration.inputs) - set(NODE_GROUP_INPUT_TO_PARAM)
    assert not unmapped, f"map these NodeGroup inputs to CreateNodegroup parameters first: {sorted(unmapped)}"
    return {NODE_GROUP_INPUT_TO_PARAM[k]: v for k, v in registration.inputs.items()}


def asg_name(run: Run, group: Registration) -> str:
    outputs = fakes.OUTPUTS[NODE_GROUP](group.name, group.inputs)
    return str(outputs["resources"][0]["autoscalingGroups"][0]["name"])


def tags_by_asg(run: Run) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for tag in run.of_type(ASG_TAG):
        found.setdefault(tag.inputs["autoscalingGroupName"], []).append(tag.inputs["tag"])
    return found


# --- EKS CreateNodegroup ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_node_group_is_a_valid_create_nodegroup_request(variant):
    shape = operation_input("eks", "CreateNodegroup")
    groups = run_variant(variant).of_type(NODE_GROUP)
    assert groups
    for group in groups:
        check_request(create_nodegroup_request(group), shape, group.name)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_node_group_enums_are_the_apis(variant):
    shape = operation_input("eks", "CreateNodegroup")
    effects = shape.members["taints"].member.members["effect"].enum
    for group in run_variant(variant).of_type(NODE_GROUP):
        assert group.inputs["capacityType"] in shape.members["capacityType"].enum
        assert group.inputs["amiType"] in shape.members["amiType"].enum
        assert all(t["effect"] in effects for t in group.inputs.get("taints", []))


def test_the_limit_checker_catches_what_param_validator_misses():
    shape = operation_input("eks", "CreateNodegroup")
    bad = {
        "clusterName": "c",
        "nodegroupName": "n",
        "subnets": ["s"],
        "nodeRole": "r",
        "amiType": "AL2023_x86_64_GPU",
        "labels": {"k" * 64: "v"},
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
    }
    assert not ParamValidator().validate(bad, shape).has_errors()
    assert len(limit_violations(bad, shape, "CreateNodegroup")) == 3


# --- Auto Scaling CreateOrUpdateTags ---------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_asg_tag_is_a_valid_create_or_update_tags_request(variant):
    shape = operation_input("autoscaling", "CreateOrUpdateTags")
    tags = run_variant(variant).of_type(ASG_TAG)
    assert tags
    for tag in tags:
        request = {
            "Tags": [
                {
                    "ResourceId": tag.inputs["autoscalingGroupName"],
                    "ResourceType": "auto-scaling-group",
                    "Key": tag.inputs["tag"]["key"],
                    "Value": tag.inputs["tag"]["value"],
                    "PropagateAtLaunch": tag.inputs["tag"]["propagateAtLaunch"],
                }
            ]
        }
        check_request(request, shape, tag.name)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_asg_stays_within_50_tags_with_the_ones_eks_adds(variant):
    for asg, tags in tags_by_asg(run_variant(variant)).items():
        assert len(tags) + EKS_ASG_OWN_TAGS <= ASG_MAX_TAGS, asg


# --- cluster-autoscaler's tag format ---------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_taint_tags_parse_as_cluster_autoscaler_reads_them_and_match_the_node_group(variant):
    run = run_variant(variant)
    tagged = tags_by_asg(run)
    for group in run.of_type(NODE_GROUP):
        tags = tagged[asg_name(run, group)]
        parsed = {}
        for tag in tags:
            key = tag["key"]
            if key.startswith("k8s.io/cluster-autoscaler/node-template/taint/"):
                match = CA_TAINT_VALUE.fullmatch(tag["value"])
                assert match, tag
                value, effect = tag["value"].split(":", 1)  # what cluster-autoscaler does
                parsed[key.rsplit("/taint/", 1)[1]] = (value, effect)
        expected = {t["key"]: (t["value"], EKS_TO_K8S_EFFECT[t["effect"]]) for t in group.inputs.get("taints", [])}
        assert parsed == expected, group.name


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_label_and_gpu_tags_match_each_node_group(variant):
    run = run_variant(variant)
    tagged = tags_by_asg(run)
    prefix = "k8s.io/cluster-autoscaler/node-template/"
    for group in run.of_type(NODE_GROUP):
        tags = {t["key"]: t["value"] for t in tagged[asg_name(run, group)]}
        labels = {k.removeprefix(prefix + "label/"): v for k, v in tags.items() if k.startswith(prefix + "label/")}
        assert labels == group.inputs["labels"]
        gpu = tags.get(prefix + "resources/nvidia.com/gpu")
        if group.inputs["amiType"] == "AL2023_x86_64_STANDARD":
            assert gpu is None
        else:
            assert gpu is not None and int(gpu) >= 1
        assert set(tags) == {prefix + "label/" + k for k in labels} | {
            k for k in tags if k.startswith((prefix + "taint/", prefix + "resources/"))
        }


def test_multi_gpu_pool_advertises_four_gpus():
    run = run_variant("aws-dev")
    tagged = tags_by_asg(run)
    for group in run.of_type(NODE_GROUP):
        if group.inputs["labels"].get("gpupools.io/pool") == "gpu4":
            tags = {t["key"]: t["value"] for t in tagged[asg_name(run, group)]}
            assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "4"


# --- IAM -------------------------------------------------------------------------------------------


def policies(run: Run) -> dict[str, dict[str, Any]]:
    documents = {r.name: json.loads(r.inputs["assumeRolePolicy"]) for r in run.of_type("aws:iam/role:Role")}
    documents |= {r.name: json.loads(r.inputs["policy"]) for r in run.of_type("aws:iam/rolePolicy:RolePolicy")}
    return documents


def test_policy_documents_are_json_with_the_iam_grammar():
    for name, document in policies(run_variant("aws-dev")).items():
        assert document["Version"] == "2012-10-17", name
        for statement in document["Statement"]:
            assert statement["Effect"] == "Allow"
            assert set(statement) <= {"Sid", "Effect", "Principal", "Action", "Resource", "Condition"}
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert all(re.fullmatch(r"[a-z0-9-]+:[A-Za-z]+", a) for a in actions), actions


def test_autoscaler_policy_has_exactly_the_intended_actions_and_scopes_the_mutating_ones():
    [policy] = [json.loads(r.inputs["policy"]) for r in run_variant("aws-dev").of_type("aws:iam/rolePolicy:RolePolicy")]
    statements = policy["Statement"]
    granted = sorted(a for s in statements for a in s["Action"])
    assert granted == sorted(
        [
            "autoscaling:DescribeAutoScalingGroups",
            "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations",
            "autoscaling:DescribeScalingActivities",
            "autoscaling:DescribeTags",
            "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions",
            "ec2:GetInstanceTypesFromInstanceRequirements",
            "eks:DescribeNodegroup",
            "autoscaling:SetDesiredCapacity",
            "autoscaling:TerminateInstanceInAutoScalingGroup",
        ]
    )
    assert sorted(AUTOSCALER_DESCRIBE_ACTIONS + AUTOSCALER_MUTATING_ACTIONS) == granted
    for statement in statements:
        mutating = [a for a in statement["Action"] if not re.match(r"[a-z0-9]+:(Describe|Get)", a)]
        if mutating:
            assert statement["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/ml-dev": "owned"}}
        else:
            assert "Condition" not in statement and statement["Resource"] == "*"


def test_the_autoscaler_role_trusts_the_clusters_oidc_provider_for_its_service_account_only():
    run = run_variant("aws-dev")
    [control_plane] = run.of_type("eks:index:Cluster")
    outputs = fakes.OUTPUTS["eks:index:Cluster"](control_plane.name, control_plane.inputs)
    issuer = outputs["oidcProviderUrl"].removeprefix("https://")
    [trust] = [d for n, d in policies(run).items() if n == "ml-dev-cluster-autoscaler-role"]
    [statement] = trust["Statement"]
    assert statement["Principal"] == {"Federated": outputs["oidcProviderArn"]}
    assert statement["Condition"]["StringEquals"] == {
        f"{issuer}:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
        f"{issuer}:aud": "sts.amazonaws.com",
    }


# --- launch templates ------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_node_group_uses_an_imdsv2_only_launch_template_with_encrypted_volumes(variant):
    run = run_variant(variant)
    templates = {
        fakes.OUTPUTS["aws:ec2/launchTemplate:LaunchTemplate"](r.name, r.inputs)["__id"]: r
        for r in run.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    }
    shape = operation_input("ec2", "CreateLaunchTemplate").members["LaunchTemplateData"]
    for group in run.of_type(NODE_GROUP):
        template = templates[group.inputs["launchTemplate"]["id"]]
        metadata = template.inputs["metadataOptions"]
        assert metadata["httpTokens"] == "required"
        assert metadata["httpPutResponseHopLimit"] == 1
        assert metadata["httpTokens"] in shape.members["MetadataOptions"].members["HttpTokens"].enum
        volumes = template.inputs["blockDeviceMappings"]
        assert volumes and all(v["ebs"]["encrypted"] == "true" and v["ebs"]["volumeType"] == "gp3" for v in volumes)
        assert "keyName" not in template.inputs
