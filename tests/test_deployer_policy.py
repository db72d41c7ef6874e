"""The EKS deployer policy (components/gpupools/aws/deployer_policy.py) and the Azure deployer roles: every
action exists in the service's API model, the preflight simulates only actions the policy grants,
and every resource type the EKS stack registers is covered."""

from __future__ import annotations

import functools
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
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": ["eks:AssociateAccessPolicy"],
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


@functools.cache
def operation_names(service: str) -> frozenset[str]:
    """The operations of ``service``'s botocore model (read once per service: ec2's alone is megabytes)."""
    return frozenset(botocore.session.get_session().get_service_model(SERVICE_MODELS[service]).operation_names)


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
    assert statements["PassStackRolesToEksAndEc2"]["Condition"]["StringEquals"]["iam:PassedToService"] == [
        "eks.amazonaws.com",
        "ec2.amazonaws.com",
    ]
    assert "iam:PassRole" not in statements["Deploy"]["Action"]
    assert "iam:CreateServiceLinkedRole" not in statements["Deploy"]["Action"]


def test_cli_prints_the_policy_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert policy.main([]) == 0
    assert json.loads(capsys.readouterr().out) == policy.deployer_policy()
    assert policy.main(["--provisioner", "karpenter", "--existing-vpc", "--cluster-name", "ml-karp"]) == 0
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


# --- issue 29 (M1, M2): least privilege that really is ------------------------------------------------

ACCOUNT_ID = "123456789012"


def allows(document: dict[str, Any], action: str, resource: str, context: dict[str, str] | None = None) -> bool:
    """IAM's evaluation of Allow statements for one request (IAM user guide, "Policy evaluation
    logic"; no Deny statements here): some statement matches the action (``*`` wildcards), the
    resource (``${aws:PrincipalAccount}`` resolved to the caller's account) and every condition
    (``StringEquals``: the value is one of the listed; ``ArnLike``: it matches one of the patterns)."""
    context = context or {}

    def like(value: str, pattern: str) -> bool:
        pattern = pattern.replace("${aws:PrincipalAccount}", ACCOUNT_ID)
        return re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), value) is not None

    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if statement["Effect"] != "Allow" or not any(like(action, a) for a in actions):
            continue
        if not any(like(resource, r) for r in resources):
            continue
        conditions = statement.get("Condition", {})
        ok = True
        for operator, keys in conditions.items():
            for key, values in keys.items():
                got = context.get(key)
                if got is None:
                    ok = False
                elif operator == "StringEquals":
                    ok = ok and got in values
                elif operator == "ArnLike":
                    ok = ok and any(like(got, v) for v in values)
                else:
                    raise AssertionError(f"condition operator {operator} not modelled")
        if ok:
            return True
    return False


def test_no_escalation_action_is_granted_on_every_resource_without_a_condition() -> None:
    """Issue 29 (M1): main allowed ``iam:AttachRolePolicy``, ``PutRolePolicy``,
    ``UpdateAssumeRolePolicy`` (and ``CreatePolicyVersion`` under Karpenter) on ``*`` with no
    condition: the deployer could attach ``AdministratorAccess`` to itself. For both provisioners,
    with and without a VPC and EFA: no escalation action is on ``*`` unless a condition narrows it."""
    for document in [*all_policies(), *(policy.policy_for(spec_of(s)) for s in STACKS)]:
        for statement in document["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            risky = set(actions) & policy.ESCALATION_ACTIONS
            if risky and "*" in resources:
                assert statement.get("Condition"), f"{statement['Sid']}: {sorted(risky)} on * without a condition"


@pytest.mark.parametrize("stack", STACKS)
def test_the_deployer_cannot_lift_itself_and_can_do_what_the_stack_does(stack: str) -> None:
    """Requests the deployer could use to escalate are denied; every IAM request the stack itself
    makes (its roles, their attachments and inline policy, PassRole to EKS) is allowed."""
    spec = spec_of(stack)
    document = policy.policy_for(spec)
    own_role = f"arn:aws:iam::{ACCOUNT_ID}:role/{spec.cluster.name}-node-role-1a2b3c4"
    admin = {"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"}
    assert not allows(document, "iam:AttachRolePolicy", own_role, admin)
    assert not allows(document, "iam:AttachRolePolicy", f"arn:aws:iam::{ACCOUNT_ID}:role/deployer", admin)
    for action in ("iam:PutRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:CreateRole"):
        assert not allows(document, action, f"arn:aws:iam::{ACCOUNT_ID}:role/deployer"), action
    assert not allows(document, "iam:PassRole", own_role, {"iam:PassedToService": "lambda.amazonaws.com"})
    assert not allows(document, "iam:CreatePolicyVersion", f"arn:aws:iam::{ACCOUNT_ID}:policy/any-other-policy")

    run = run_stack(stack)
    roles = {r.name: r for r in run.registrations if r.type == "aws:iam/role:Role"}
    for registration in roles.values():
        assert "name" not in registration.inputs, "auto-named roles: the scope matches the logical name prefix"
        arn = f"arn:aws:iam::{ACCOUNT_ID}:role/{registration.name}-1a2b3c4"
        for action in ("iam:CreateRole", "iam:DeleteRole", "iam:TagRole", "iam:UpdateAssumeRolePolicy"):
            assert allows(document, action, arn), (action, arn)
        assert allows(document, "iam:PassRole", arn, {"iam:PassedToService": "eks.amazonaws.com"})
    for attachment in (r for r in run.registrations if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        arn = f"arn:aws:iam::{ACCOUNT_ID}:role/{attachment.inputs['role']}-1a2b3c4"
        assert allows(document, "iam:AttachRolePolicy", arn, {"iam:PolicyARN": attachment.inputs["policyArn"]}), attachment.name
    for inline in (r for r in run.registrations if r.type == "aws:iam/rolePolicy:RolePolicy"):
        assert allows(document, "iam:PutRolePolicy", f"arn:aws:iam::{ACCOUNT_ID}:role/{inline.inputs['role']}-1a2b3c4")
    for managed in (r for r in run.registrations if r.type == "aws:iam/policy:Policy"):
        arn = f"arn:aws:iam::{ACCOUNT_ID}:policy/{managed.name}-1a2b3c4"
        for action in policy.KARPENTER_POLICY_ACTIONS:
            assert allows(document, action, arn), (action, arn)
    # pulumi-eks's service role (`${name}-eksRole`, nodejs/eks/cluster/cluster.ts) is named after the
    # eks.Cluster component, whose name starts with the cluster name; it gets AmazonEKSClusterPolicy.
    [cluster] = run.of_type("eks:index:Cluster")
    service_role = f"arn:aws:iam::{ACCOUNT_ID}:role/{cluster.name}-eksRole-role-1a2b3c4"
    cluster_policy = {"iam:PolicyARN": "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"}
    assert allows(document, "iam:CreateRole", service_role) and allows(
        document, "iam:AttachRolePolicy", service_role, cluster_policy
    )


def test_karpenter_policy_updates_and_node_role_deletes_are_granted() -> None:
    """Issue 29 (M2): a Karpenter policy update makes a new default version
    (terraform-provider-aws ``internal/service/iam/policy.go``), so ``iam:SetDefaultPolicyVersion``; a
    role delete first removes it from its instance profiles (``iam/role.go``
    ``deleteRoleInstanceProfiles``), and under Karpenter the node role is in the profiles Karpenter
    made, so ``iam:RemoveRoleFromInstanceProfile``. main had neither."""
    karpenter = policy.policy_for(spec_of("aws-karpenter-dev"))
    node_role = f"arn:aws:iam::{ACCOUNT_ID}:role/ml-karp-node-role-1a2b3c4"
    assert allows(karpenter, "iam:SetDefaultPolicyVersion", f"arn:aws:iam::{ACCOUNT_ID}:policy/karpenter-node-lifecycle-1a2b3c4")
    assert allows(karpenter, "iam:RemoveRoleFromInstanceProfile", node_role)
    assert "iam:RemoveRoleFromInstanceProfile" in policy.all_actions(policy.policy_for(spec_of("aws-dev")))
