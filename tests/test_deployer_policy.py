"""The EKS deployer policy (components/aws/deployer_policy.py) and the Azure deployer roles: every
action exists in the service's API model, the preflight simulates only actions the policy grants,
and every resource type the EKS stack registers is covered."""

from __future__ import annotations

import json
import re

import botocore.session
import pytest

from components.aws import deployer_policy as policy
from components.preflight import aws as preflight_aws
from components.preflight import azure as preflight_azure
from components.testing import run_stack

SERVICE_MODELS = {
    "ec2": "ec2",
    "eks": "eks",
    "iam": "iam",
    "autoscaling": "autoscaling",
    "sts": "sts",
    "servicequotas": "service-quotas",
}

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
}


def operation_names(service: str) -> set[str]:
    return set(botocore.session.get_session().get_service_model(SERVICE_MODELS[service]).operation_names)


PERMISSION_ONLY = {"iam:PassRole"}
"""Actions with no API of their own ("PassRole is a permission, not an API action": IAM user guide,
"Grant a user permissions to pass a role to an AWS service")."""


def test_every_action_is_an_operation_of_its_service() -> None:
    for action in policy.all_actions(policy.deployer_policy()) - PERMISSION_ONLY:
        service, name = action.split(":")
        assert name in operation_names(service), f"{action} is not an operation in botocore's {service} model"


def test_the_preflight_simulates_only_actions_the_policy_grants() -> None:
    granted = policy.all_actions(policy.deployer_policy())
    assert set(preflight_aws.NETWORK_ACTIONS) | set(preflight_aws.DEPLOY_ACTIONS) <= granted


def test_every_resource_type_of_the_eks_stack_is_covered() -> None:
    run = run_stack("aws-dev")
    granted = policy.all_actions(policy.deployer_policy())
    aws_types = {r.type for r in run.registrations if r.custom and r.type.startswith("aws:")}
    assert aws_types, "the stack registers AWS resources"
    missing_types = aws_types - set(CREATE_ACTIONS)
    assert not missing_types, f"no create actions known for {sorted(missing_types)}: add them here and to the policy"
    for resource_type in aws_types:
        assert set(CREATE_ACTIONS[resource_type]) <= granted, resource_type


def test_existing_vpc_policy_drops_only_the_network_actions() -> None:
    full = policy.all_actions(policy.deployer_policy())
    byo = policy.all_actions(policy.deployer_policy(with_network=False))
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
