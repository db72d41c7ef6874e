"""The EKS deployer policy (components/gpupools/aws/deployer_policy.py) and the Azure deployer roles: every
action exists in the service's API model, the preflight simulates only actions the policy grants,
and every resource type the EKS stack registers is covered."""

from __future__ import annotations

import json
import re
from typing import Any

import botocore.session
import pytest
from gpupools.aws import deployer_policy as policy
from gpupools.preflight import aws as preflight_aws
from gpupools.preflight import azure as preflight_azure
from gpupools.preflight.stack import engine_values, target_from_values
from gpupools.specs import Provisioner, StackSpec
from gpupools.testing import PROJECT_ROOT, run_stack

SERVICE_MODELS = {
    "ec2": "ec2",
    "eks": "eks",
    "iam": "iam",
    "autoscaling": "autoscaling",
    "sts": "sts",
    "servicequotas": "service-quotas",
    "sqs": "sqs",
    "events": "events",
}

STACKS = ("aws-dev", "aws-karpenter-dev")
"""Every committed EKS example stack: cluster-autoscaler and Karpenter mode."""

# What each resource type of the EKS stack needs to be created, besides reads (the Terraform AWS
# provider's create calls for each, which pulumi-aws bridges; pulumi-eks's Cluster is a component).
CREATE_ACTIONS = {
    "aws:ec2/vpc:Vpc": ["ec2:CreateVpc", "ec2:ModifyVpcAttribute"],
    "aws:ec2/subnet:Subnet": ["ec2:CreateSubnet"],
    "aws:ec2/internetGateway:InternetGateway": ["ec2:CreateInternetGateway", "ec2:AttachInternetGateway"],
    "aws:ec2/eip:Eip": ["ec2:AllocateAddress"],
    "aws:ec2/natGateway:NatGateway": ["ec2:CreateNatGateway"],
    "aws:ec2/routeTable:RouteTable": ["ec2:CreateRouteTable", "ec2:CreateRoute"],
    "aws:ec2/routeTableAssociation:RouteTableAssociation": ["ec2:AssociateRouteTable"],
    "aws:ec2/route:Route": ["ec2:CreateRoute"],
    "aws:ec2/launchTemplate:LaunchTemplate": ["ec2:CreateLaunchTemplate"],
    "aws:eks/cluster:Cluster": ["eks:CreateCluster", "iam:PassRole"],
    "aws:eks/nodeGroup:NodeGroup": ["eks:CreateNodegroup", "iam:PassRole"],
    "aws:eks/accessEntry:AccessEntry": ["eks:CreateAccessEntry"],
    "aws:eks/addon:Addon": ["eks:CreateAddon"],
    "aws:iam/role:Role": ["iam:CreateRole"],
    "aws:iam/rolePolicy:RolePolicy": ["iam:PutRolePolicy"],
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ["iam:AttachRolePolicy"],
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": ["iam:CreateOpenIDConnectProvider"],
    "aws:autoscaling/tag:Tag": ["autoscaling:CreateOrUpdateTags"],
    # Karpenter mode (components/gpupools/aws/karpenter.py). The queue's create waits on its attributes; the
    # queue policy is its Policy attribute; a rule and a target are read back after the put.
    "aws:ec2/tag:Tag": ["ec2:CreateTags"],
    "aws:sqs/queue:Queue": ["sqs:CreateQueue", "sqs:GetQueueAttributes"],
    "aws:sqs/queuePolicy:QueuePolicy": ["sqs:SetQueueAttributes", "sqs:GetQueueAttributes"],
    "aws:cloudwatch/eventRule:EventRule": ["events:PutRule", "events:DescribeRule"],
    "aws:cloudwatch/eventTarget:EventTarget": ["events:PutTargets", "events:ListTargetsByRule"],
    "aws:iam/policy:Policy": ["iam:CreatePolicy", "iam:GetPolicy", "iam:GetPolicyVersion"],
    # EFA pools (node_group.create_efa_network): the provider revokes a new group's default egress.
    "aws:ec2/placementGroup:PlacementGroup": ["ec2:CreatePlacementGroup", "ec2:DescribePlacementGroups"],
    "aws:ec2/securityGroup:SecurityGroup": ["ec2:CreateSecurityGroup", "ec2:RevokeSecurityGroupEgress"],
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ["ec2:AuthorizeSecurityGroupIngress"],
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ["ec2:AuthorizeSecurityGroupEgress"],
}

DELETE_ACTIONS = {
    "aws:ec2/tag:Tag": ["ec2:DeleteTags"],
    "aws:sqs/queue:Queue": ["sqs:DeleteQueue"],
    "aws:sqs/queuePolicy:QueuePolicy": ["sqs:SetQueueAttributes"],
    "aws:cloudwatch/eventRule:EventRule": ["events:DeleteRule"],
    "aws:cloudwatch/eventTarget:EventTarget": ["events:RemoveTargets"],
    # IAM deletes a policy only when it has no versions but the default (DeleteConflict otherwise).
    "aws:iam/policy:Policy": ["iam:ListPolicyVersions", "iam:DeletePolicyVersion", "iam:DeletePolicy"],
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ["iam:DetachRolePolicy"],
    "aws:ec2/placementGroup:PlacementGroup": ["ec2:DeletePlacementGroup"],
    "aws:ec2/securityGroup:SecurityGroup": ["ec2:DeleteSecurityGroup"],
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ["ec2:RevokeSecurityGroupIngress"],
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ["ec2:RevokeSecurityGroupEgress"],
}
"""What ``pulumi destroy`` (or removing Karpenter) calls for the Karpenter-mode resource types."""

KARPENTER_ONLY_SERVICES = ("sqs", "events")
KARPENTER_ONLY_IAM = ("iam:CreatePolicy", "iam:DeletePolicy", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion")


def spec_of(stack: str, **overrides: Any) -> StackSpec:
    values = engine_values(stack, PROJECT_ROOT)
    values.update({k: json.dumps(v) for k, v in overrides.items()})
    return target_from_values(stack, values, environ={}).spec


def all_policies() -> list[dict[str, Any]]:
    return [
        policy.deployer_policy(network, provisioner, efa)
        for network in (True, False)
        for provisioner in Provisioner
        for efa in (False, True)
    ]


def operation_names(service: str) -> set[str]:
    return set(botocore.session.get_session().get_service_model(SERVICE_MODELS[service]).operation_names)


PERMISSION_ONLY = {"iam:PassRole"}
"""Actions with no API of their own ("PassRole is a permission, not an API action": IAM user guide,
"Grant a user permissions to pass a role to an AWS service")."""


def test_every_action_is_an_operation_of_its_service() -> None:
    for document in all_policies():
        for action in policy.all_actions(document) - PERMISSION_ONLY:
            service, name = action.split(":")
            assert name in operation_names(service), f"{action} is not an operation in botocore's {service} model"


@pytest.mark.parametrize("stack", STACKS)
def test_the_preflight_simulates_only_actions_the_policy_grants(stack: str) -> None:
    spec = spec_of(stack)
    granted = policy.all_actions(policy.policy_for(spec))
    assert set(preflight_aws.required_actions(spec)) <= granted
    brought = spec_of(stack, **{"gpupools:network": BROUGHT_NETWORK})
    assert set(preflight_aws.required_actions(brought)) <= policy.all_actions(policy.policy_for(brought))


BROUGHT_NETWORK = {"vpcId": "vpc-0abc12345678", "privateSubnetIds": ["subnet-0aaa1111", "subnet-0bbb2222", "subnet-0ccc3333"]}


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_type_of_the_eks_stack_is_covered(stack: str) -> None:
    run = run_stack(stack)
    granted = policy.all_actions(policy.policy_for(spec_of(stack)))
    aws_types = {r.type for r in run.registrations if r.custom and r.type.startswith("aws:")}
    assert aws_types, "the stack registers AWS resources"
    missing_types = aws_types - set(CREATE_ACTIONS)
    assert not missing_types, f"no create actions known for {sorted(missing_types)}: add them here and to the policy"
    for resource_type in aws_types:
        assert set(CREATE_ACTIONS[resource_type]) <= granted, resource_type
        assert set(DELETE_ACTIONS.get(resource_type, [])) <= granted, resource_type


def test_karpenter_stack_registers_what_only_its_policy_grants() -> None:
    """aws-dev stays least-privilege: no SQS, EventBridge or policy-writing actions, which only the
    Karpenter resources need; the Karpenter policy has no ASG tag writes (no cluster-autoscaler)."""
    karpenter_types = {r.type for r in run_stack("aws-karpenter-dev").registrations if r.custom}
    assert {"aws:sqs/queue:Queue", "aws:cloudwatch/eventRule:EventRule", "aws:iam/policy:Policy"} <= karpenter_types
    assert "aws:autoscaling/tag:Tag" not in karpenter_types
    autoscaler = policy.all_actions(policy.policy_for(spec_of("aws-dev")))
    karpenter = policy.all_actions(policy.policy_for(spec_of("aws-karpenter-dev")))
    assert not [a for a in autoscaler if a.split(":")[0] in KARPENTER_ONLY_SERVICES or a in KARPENTER_ONLY_IAM]
    assert {a.split(":")[0] for a in karpenter} >= set(KARPENTER_ONLY_SERVICES) and set(KARPENTER_ONLY_IAM) <= karpenter
    assert "autoscaling:CreateOrUpdateTags" in autoscaler and "autoscaling:CreateOrUpdateTags" not in karpenter
    assert "autoscaling:CreateOrUpdateTags" not in preflight_aws.required_actions(spec_of("aws-karpenter-dev"))


@pytest.mark.parametrize("provisioner", list(Provisioner))
def test_existing_vpc_policy_drops_only_the_network_actions(provisioner: Provisioner) -> None:
    full = policy.all_actions(policy.deployer_policy(provisioner=provisioner))
    byo = policy.all_actions(policy.deployer_policy(with_network=False, provisioner=provisioner))
    assert full - byo == set(policy.NETWORK_ACTIONS)


def test_pass_role_and_service_linked_roles_are_conditioned() -> None:
    statements = {s["Sid"]: s for s in policy.deployer_policy()["Statement"]}
    assert statements["PassRolesToEksAndEc2"]["Condition"]["StringEquals"]["iam:PassedToService"] == [
        "eks.amazonaws.com",
        "ec2.amazonaws.com",
    ]
    assert "iam:PassRole" not in statements["Deploy"]["Action"]
    assert "iam:CreateServiceLinkedRole" not in statements["Deploy"]["Action"]


def test_cli_prints_the_policy_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert policy.main([]) == 0
    assert json.loads(capsys.readouterr().out) == policy.deployer_policy()
    assert policy.main(["--provisioner", "karpenter", "--existing-vpc"]) == 0
    assert json.loads(capsys.readouterr().out) == policy.policy_for(
        spec_of("aws-karpenter-dev", **{"gpupools:network": BROUGHT_NETWORK})
    )


def test_cli_rejects_an_unknown_provisioner(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        policy.main(["--provisioner", "autoscaler"])
    assert "--provisioner" in capsys.readouterr().err


def test_azure_deployer_needs_role_assignment_write_which_contributor_lacks() -> None:
    """Contributor's notActions include Microsoft.Authorization/*/Write (Azure built-in roles);
    the stack writes two role assignments (control plane on the subnet, deployer on the cluster)."""
    assert "Microsoft.Authorization/roleAssignments/write" in preflight_azure.REQUIRED_ACTIONS
    contributor_not_actions = ["Microsoft.Authorization/*/Delete", "Microsoft.Authorization/*/Write"]
    blocked = [
        a
        for a in preflight_azure.REQUIRED_ACTIONS
        if any(re.fullmatch(p.replace("*", ".*"), a, re.I) for p in contributor_not_actions)
    ]
    assert blocked == ["Microsoft.Authorization/roleAssignments/write"]


def test_an_efa_stack_is_covered_and_only_it_gets_the_efa_actions() -> None:
    from tests.multi_node_cases import efa_overrides

    overrides = efa_overrides(["p4d.24xlarge"])
    run = run_stack("aws-dev", overrides=overrides)
    granted = policy.all_actions(policy.policy_for(spec_of("aws-dev", **overrides)))
    aws_types = {r.type for r in run.registrations if r.custom and r.type.startswith("aws:")}
    assert "aws:ec2/placementGroup:PlacementGroup" in aws_types
    for resource_type in aws_types:
        assert set(CREATE_ACTIONS[resource_type]) <= granted, resource_type
        assert set(DELETE_ACTIONS.get(resource_type, [])) <= granted, resource_type
    assert not set(policy.EFA_ACTIONS) & policy.all_actions(policy.policy_for(spec_of("aws-dev")))
