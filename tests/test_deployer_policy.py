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

from tests.example_runs import example_run

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
"""The committed EKS example stacks with node groups and launch templates: cluster-autoscaler and
Karpenter mode."""

ALL_STACKS = (*STACKS, "aws-auto-dev")
"""Every committed EKS example stack, EKS Auto Mode's (``aws-auto-dev``) too: the checks that hold for
any stack (its preflight actions granted, every resource type it registers covered, its own IAM
requests allowed and no others)."""

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


BOUNDARY = "arn:aws:iam::123456789012:policy/gpupools-deployer-boundary"


def all_policies() -> list[dict[str, Any]]:
    return [
        policy.deployer_policy("ml-dev", network, provisioner, efa, permissions_boundary=boundary)
        for network in (True, False)
        for provisioner in Provisioner
        for efa in (False, True)
        for boundary in (None, BOUNDARY)
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


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_the_preflight_simulates_only_actions_the_policy_grants(stack: str) -> None:
    spec = spec_of(stack)
    granted = policy.all_actions(policy.policy_for(spec))
    assert set(preflight_aws.required_actions(spec)) <= granted
    brought = spec_of(stack, **{"gpupools:network": BROUGHT_NETWORK})
    assert set(preflight_aws.required_actions(brought)) <= policy.all_actions(policy.policy_for(brought))


BROUGHT_NETWORK = {"vpcId": "vpc-0abc12345678", "privateSubnetIds": ["subnet-0aaa1111", "subnet-0bbb2222", "subnet-0ccc3333"]}


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_resource_type_of_the_eks_stack_is_covered(stack: str) -> None:
    run = example_run(stack)
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
    karpenter_types = {r.type for r in example_run("aws-karpenter-dev").registrations if r.custom}
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
    full = policy.all_actions(policy.deployer_policy("ml-dev", provisioner=provisioner))
    byo = policy.all_actions(policy.deployer_policy("ml-dev", with_network=False, provisioner=provisioner))
    assert full - byo == set(policy.NETWORK_ACTIONS)


def test_pass_role_and_service_linked_roles_are_conditioned() -> None:
    """Issue 37 (M1' 6): no call of the stack passes a role to EC2 (the cluster and node roles go to
    EKS; Karpenter passes the node role with its own policy), so ``PassRole`` is to EKS only."""
    statements = {s["Sid"]: s for s in policy.deployer_policy("ml-dev")["Statement"]}
    assert statements["PassStackRolesToEks"]["Condition"]["StringEquals"]["iam:PassedToService"] == ["eks.amazonaws.com"]
    assert "iam:PassRole" not in statements["Deploy"]["Action"]
    assert "iam:CreateServiceLinkedRole" not in statements["Deploy"]["Action"]


def test_cli_prints_the_policy_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert policy.main(["--cluster-name", "ml-dev"]) == 0
    assert json.loads(capsys.readouterr().out) == policy.deployer_policy("ml-dev")
    subnets = ",".join(BROUGHT_NETWORK["privateSubnetIds"])
    arguments = ["--provisioner", "karpenter", "--existing-vpc", "--discovery-subnets", subnets, "--cluster-name", "ml-karp"]
    assert policy.main(arguments) == 0
    assert json.loads(capsys.readouterr().out) == policy.policy_for(
        spec_of("aws-karpenter-dev", **{"gpupools:network": BROUGHT_NETWORK})
    )


def test_cli_rejects_an_unknown_provisioner(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        policy.main(["--cluster-name", "ml-dev", "--provisioner", "autoscaler"])
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
    (``StringEquals``: the value is one of the listed; ``ArnLike``, ``ArnEquals``: it matches one of the
    patterns, ``*`` a wildcard in both)."""
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
            for key, value in keys.items():
                values = value if isinstance(value, list) else [value]
                got = context.get(key)
                if got is None:
                    ok = False
                elif operator == "StringEquals":
                    ok = ok and got in values
                elif operator in ("ArnLike", "ArnEquals"):
                    ok = ok and any(like(got, v) for v in values)
                elif operator == "ForAllValues:StringEquals":  # every value of a multivalued key listed
                    ok = ok and all(g in values for g in got.split(","))
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
    for document in [*all_policies(), *(policy.policy_for(spec_of(s)) for s in ALL_STACKS)]:
        for statement in document["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            risky = set(actions) & policy.ESCALATION_ACTIONS
            if risky and "*" in resources:
                assert statement.get("Condition"), f"{statement['Sid']}: {sorted(risky)} on * without a condition"


@pytest.mark.parametrize("stack", ALL_STACKS)
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

    run = example_run(stack)
    roles = {r.name: r for r in run.registrations if r.type == "aws:iam/role:Role"}
    for registration in roles.values():
        assert "name" not in registration.inputs, "auto-named roles: the scope matches the logical name prefix"
        assert registration.name.startswith(f"{spec.cluster.name}-"), "per-cluster names (issue 37, M1' 5)"
        arn = f"arn:aws:iam::{ACCOUNT_ID}:role/{registration.name}-1a2b3c4"
        for action in ("iam:CreateRole", "iam:DeleteRole", "iam:TagRole", "iam:UpdateAssumeRolePolicy"):
            assert allows(document, action, arn), (action, arn)
        # The node role (to CreateNodegroup) and the service role (to CreateCluster) are passed to
        # EKS; the IRSA roles never are, nor is the Auto Mode node role (EKS passes it to EC2 itself).
        auto_node_role = registration.name.endswith(f"-{policy.AUTO_MODE_NODE_ROLE}")
        passed = registration.name.endswith(("-node-role", "-eksRole-role")) and not auto_node_role
        assert allows(document, "iam:PassRole", arn, {"iam:PassedToService": "eks.amazonaws.com"}) is passed, arn
    for attachment in (r for r in run.registrations if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        arn = f"arn:aws:iam::{ACCOUNT_ID}:role/{attachment.inputs['role']}-1a2b3c4"
        attached = attachment.inputs["policyArn"]
        # The mock runtime gives a policy its logical name; IAM's has Pulumi's "-<7 hex>" suffix.
        attached = attached if ":iam::aws:" in attached else f"{attached}-1a2b3c4"
        assert allows(document, "iam:AttachRolePolicy", arn, {"iam:PolicyARN": attached}), attachment.name
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
    lifecycle = f"arn:aws:iam::{ACCOUNT_ID}:policy/ml-karp-karpenter-node-lifecycle-1a2b3c4"
    assert allows(karpenter, "iam:SetDefaultPolicyVersion", lifecycle)
    # Issue 37 (M2'): the action's resource is the instance profile (IAM service authorization
    # reference: RemoveRoleFromInstanceProfile, resource type instance-profile*), one Karpenter
    # v1.14.1 made for an EC2NodeClass of this cluster (path /karpenter/<region>/<cluster>/<uid>/,
    # name <cluster>_<hash>: pkg/controllers/nodeclass/instanceprofile.go, pkg/apis/v1/ec2nodeclass.go).
    profile = f"arn:aws:iam::{ACCOUNT_ID}:instance-profile/karpenter/us-west-2/ml-karp/0f8e7d6c-aaaa-bbbb-cccc-000000000000/ml-karp_1234567890123456"
    assert allows(karpenter, "iam:RemoveRoleFromInstanceProfile", profile)
    assert not allows(
        karpenter, "iam:RemoveRoleFromInstanceProfile", profile.replace("/ml-karp/", "/prod/").replace("ml-karp_", "prod_")
    )
    # cluster-autoscaler mode: EKS deletes the profile it made for a managed node group with the group.
    assert "iam:RemoveRoleFromInstanceProfile" not in policy.all_actions(policy.policy_for(spec_of("aws-dev")))


# --- issue 37 (M1', M2', n5): a deployer that cannot escalate, checked by a real IAM linter ------------

ACCOUNT_ARN = f"arn:aws:iam::{ACCOUNT_ID}"


@functools.cache
def iam_reference() -> dict[str, dict[str, Any]]:
    """The IAM service authorization reference's ``iam`` actions as parliament bundles it
    (``parliament/iam_definition.json``): action -> its resource types and condition keys."""
    from parliament import iam_definition

    # parliament 1.6.4 carries two "iam" entries, the reference under its old and its current
    # service name; the current one ("... (IAM)") has every action of the old and more.
    iam = max((service for service in iam_definition if service["prefix"] == "iam"), key=lambda s: len(s["privileges"]))
    return {privilege["privilege"]: privilege for privilege in iam["privileges"]}


def condition_keys(action: str) -> set[str]:
    """The condition keys the reference lists for an ``iam:`` action (over all its resource rows)."""
    return {key for row in iam_reference()[action.split(":")[1]]["resource_types"] for key in row["condition_keys"]}


ROLE_PERMISSION_WRITES = frozenset(
    f"iam:{name}"
    for name, entry in iam_reference().items()
    if any(row["resource_type"] == "role*" for row in entry["resource_types"])
    and "iam:PermissionsBoundary" in condition_keys(f"iam:{name}")
)
"""Every role action whose reference entry lists ``iam:PermissionsBoundary``: ``CreateRole``,
``PutRolePolicy``, ``AttachRolePolicy``, ``DetachRolePolicy``, ``DeleteRolePolicy``,
``PutRolePermissionsBoundary``, ``DeleteRolePermissionsBoundary`` (read from the reference, not from
the policy under test)."""


def role_statements(document: dict[str, Any]) -> list[tuple[dict[str, Any], set[str]]]:
    out = []
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        out.append((statement, set(actions)))
    return out


def test_the_reference_lists_the_boundary_key_on_the_role_writes() -> None:
    """What the bounded statements rest on (IAM service authorization reference, via parliament):
    the role writes that can be conditioned on the boundary, and those that cannot."""
    assert {
        "iam:CreateRole",
        "iam:PutRolePolicy",
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
        "iam:DeleteRolePolicy",
        "iam:PutRolePermissionsBoundary",
        "iam:DeleteRolePermissionsBoundary",
    } == ROLE_PERMISSION_WRITES
    # The role writes that give no permission cannot take it: the policy grants them on the stack's roles only.
    for action in policy.IAM_ROLE_ACTIONS:
        assert "iam:PermissionsBoundary" not in condition_keys(action), action


@pytest.mark.parametrize("provisioner", list(Provisioner))
def test_with_a_boundary_no_role_write_goes_without_it(provisioner: Provisioner) -> None:
    """Issue 37 (M1'): with ``--permissions-boundary`` every statement granting a role write the
    reference lets a policy condition on the boundary requires exactly that boundary, and
    ``DeleteRolePermissionsBoundary`` is granted by none. Without the boundary the same statements
    carry no such condition (nothing to compare against)."""
    for network in (True, False):
        document = policy.deployer_policy("ml-dev", network, provisioner, permissions_boundary=BOUNDARY)
        granted = policy.all_actions(document)
        assert "iam:DeleteRolePermissionsBoundary" not in granted
        assert {"iam:CreateRole", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary"} <= granted
        unbounded = policy.all_actions(policy.deployer_policy("ml-dev", network, provisioner))
        assert "iam:PutRolePermissionsBoundary" not in unbounded and "iam:DeleteRolePermissionsBoundary" not in unbounded
        for statement, actions in role_statements(document):
            if actions & ROLE_PERMISSION_WRITES and not statement["Sid"].startswith("DeletePrevious"):
                assert statement["Condition"]["ArnEquals"]["iam:PermissionsBoundary"] == BOUNDARY, statement["Sid"]
        # Evaluated: no role write of the stack's own roles (node, service and controller role; under
        # Auto Mode the Auto Mode node role and the service role) goes through without the boundary.
        own = [
            arn.replace("${aws:PrincipalAccount}", ACCOUNT_ID).replace("*", "1a2b3c4")
            for arn in policy.stack_role_arns("ml-dev", provisioner)
        ]
        assert len(own) == (2 if provisioner is Provisioner.AUTO_MODE else 3)
        node_policy = "AmazonEKSWorkerNodeMinimalPolicy" if provisioner is Provisioner.AUTO_MODE else "AmazonEKSWorkerNodePolicy"
        managed = {"iam:PolicyARN": f"arn:aws:iam::aws:policy/{node_policy}"}
        other = {**managed, "iam:PermissionsBoundary": "arn:aws:iam::123456789012:policy/wide-open"}
        for role in own:
            for action in sorted(ROLE_PERMISSION_WRITES & granted):
                assert not allows(document, action, role, managed), (action, role)
                assert not allows(document, action, role, other), (action, role)
            assert allows(document, "iam:CreateRole", role, {"iam:PermissionsBoundary": BOUNDARY})
            assert allows(document, "iam:AttachRolePolicy", role, {**managed, "iam:PermissionsBoundary": BOUNDARY})


def test_cli_takes_the_boundary_and_refuses_a_wildcard_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 (M1' 3): ``--cluster-name`` is required and names one cluster (``*`` scoped role
    actions to ``role/*-*``: every hyphenated role of the account)."""
    assert policy.main(["--cluster-name", "ml-dev", "--permissions-boundary", BOUNDARY]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == policy.deployer_policy("ml-dev", permissions_boundary=BOUNDARY)
    assert out.err == ""
    for argv in (
        [],
        ["--cluster-name", "*"],
        ["--cluster-name", "ml-*"],
        ["--cluster-name", "ml-dev", "--permissions-boundary", "boundary"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            policy.main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "--cluster-name" in err or "--permissions-boundary" in err, argv
    with pytest.raises(ValueError, match="no wildcards"):
        policy.deployer_policy("*")


@pytest.mark.parametrize("provisioner", list(Provisioner))
def test_cli_without_a_boundary_says_what_the_policy_still_allows(
    provisioner: Provisioner, capsys: pytest.CaptureFixture[str]
) -> None:
    assert policy.main(["--cluster-name", "ml-dev", "--provisioner", provisioner.value]) == 0
    err = capsys.readouterr().err
    if provisioner is Provisioner.AUTO_MODE:
        # No controller role to write a policy into: the way up is the cluster role's AmazonEKSComputePolicy.
        assert "take over any IAM role of the account that EC2 may assume" in " ".join(err.split())
        assert "iam:UpdateAssumeRolePolicy" in err and "NodeClass" in err and "--permissions-boundary" in err
        assert "role/ml-dev-eks-eksRole-role-*" in err and "role/ml-dev-auto-node-role-*" in err
        assert "iam:PutRolePolicy writes" not in err and "CreatePolicyVersion" not in err
        return
    step = "iam:PutRolePolicy" if provisioner is Provisioner.CLUSTER_AUTOSCALER else "iam:CreatePolicyVersion"
    assert "give itself any permission" in err and step in err and "--permissions-boundary" in err


PROBES = [
    # (request, action, resource, context): the escalation probes of the second review's table
    # (replays/policy_probe.py), plus the old names (0.2) and other clusters' resources.
    ("UpdateAssumeRolePolicy on another role", "iam:UpdateAssumeRolePolicy", f"{ACCOUNT_ARN}:role/github-actions-admin", {}),
    ("DetachRolePolicy on any hyphenated role", "iam:DetachRolePolicy", f"{ACCOUNT_ARN}:role/prod-app", {}),
    (
        "PassRole of another role to EC2",
        "iam:PassRole",
        f"{ACCOUNT_ARN}:role/prod-admin-ec2",
        {"iam:PassedToService": "ec2.amazonaws.com"},
    ),
    ("CreateRole under another cluster's prefix", "iam:CreateRole", f"{ACCOUNT_ARN}:role/ml-dev2-node-role-1a2b3c4", {}),
    ("CreateRole under 0.2's account-wide name", "iam:CreateRole", f"{ACCOUNT_ARN}:role/cluster-autoscaler-evil", {}),
    ("PutRolePolicy on 0.2's autoscaler role", "iam:PutRolePolicy", f"{ACCOUNT_ARN}:role/cluster-autoscaler-role-abc1234", {}),
    (
        "PutRolePolicy on another cluster's autoscaler role",
        "iam:PutRolePolicy",
        f"{ACCOUNT_ARN}:role/prod-cluster-autoscaler-role-abc1234",
        {},
    ),
    ("CreatePolicy under 0.2's name", "iam:CreatePolicy", f"{ACCOUNT_ARN}:policy/karpenter-evil", {}),
    (
        "CreatePolicyVersion on 0.2's Karpenter policy",
        "iam:CreatePolicyVersion",
        f"{ACCOUNT_ARN}:policy/karpenter-node-lifecycle-abc1234",
        {},
    ),
    (
        "CreatePolicyVersion on another cluster's",
        "iam:CreatePolicyVersion",
        f"{ACCOUNT_ARN}:policy/prod-karpenter-node-lifecycle-abc1234",
        {},
    ),
    (
        "AttachRolePolicy of a policy the stack does not own",
        "iam:AttachRolePolicy",
        f"{ACCOUNT_ARN}:role/ml-dev-node-role-1a2b3c4",
        {"iam:PolicyARN": f"{ACCOUNT_ARN}:policy/karpenter-evil"},
    ),
    ("CreateAccessEntry on another cluster", "eks:CreateAccessEntry", f"arn:aws:eks:us-east-1:{ACCOUNT_ID}:cluster/prod", {}),
    (
        "AssociateAccessPolicy on another cluster's entry",
        "eks:AssociateAccessPolicy",
        f"arn:aws:eks:us-east-1:{ACCOUNT_ID}:access-entry/prod/role/{ACCOUNT_ID}/x/0a1b2c3d",
        {},
    ),
    ("DeleteCluster of another cluster", "eks:DeleteCluster", f"arn:aws:eks:us-east-1:{ACCOUNT_ID}:cluster/prod", {}),
    (
        "UpdateClusterConfig of another cluster",
        "eks:UpdateClusterConfig",
        f"arn:aws:eks:us-east-1:{ACCOUNT_ID}:cluster/ml-dev2",
        {},
    ),
    (
        "DeleteRolePermissionsBoundary on the stack's role",
        "iam:DeleteRolePermissionsBoundary",
        f"{ACCOUNT_ARN}:role/ml-dev-node-role-1a2b3c4",
        {},
    ),
]


@pytest.mark.parametrize("provisioner", list(Provisioner))
@pytest.mark.parametrize("boundary", [None, BOUNDARY])
@pytest.mark.parametrize("probe", PROBES, ids=[p[0] for p in PROBES])
def test_the_reviews_escalation_probes_are_denied(
    provisioner: Provisioner, boundary: str | None, probe: tuple[str, str, str, dict[str, str]]
) -> None:
    """Issue 37 (M1'): every request of the review's table that was ALLOW, and the same requests
    against the 0.2 names and another cluster's resources, is denied for cluster ``ml-dev``."""
    _, action, resource, context = probe
    document = policy.deployer_policy("ml-dev", provisioner=provisioner, permissions_boundary=boundary)
    assert not allows(document, action, resource, context)
    if boundary:
        assert not allows(document, action, resource, {**context, "iam:PermissionsBoundary": boundary})


def test_the_stacks_own_eks_calls_are_allowed_on_its_cluster_only() -> None:
    document = policy.deployer_policy("ml-dev")
    cluster = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:cluster/ml-dev"
    for action in policy.EKS_CLUSTER_ACTIONS:
        assert allows(document, action, cluster), action
    entry = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:access-entry/ml-dev/role/{ACCOUNT_ID}/ci/0a1b2c3d"
    nodegroup = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:nodegroup/ml-dev/ml-dev-system-abc/0a1b2c3d"
    addon = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:addon/ml-dev/coredns/0a1b2c3d"
    assert allows(document, "eks:AssociateAccessPolicy", entry) and allows(document, "eks:DeleteNodegroup", nodegroup)
    assert allows(document, "eks:UpdateAddon", addon) and allows(document, "eks:CreateCluster", "*")
    assert not allows(document, "eks:AssociateAccessPolicy", entry.replace("/ml-dev/", "/ml-dev2/"))


# parliament: the IAM linter, with its bundled copy of the service authorization reference. It checks
# every action's resource against the resource types the reference gives it (RESOURCE_MISMATCH) and
# knows every action name (UNKNOWN_ACTION), including EKS's access-entry actions.


def lint(document: dict[str, Any]) -> list[Any]:
    """parliament's findings for a policy, with ``${aws:PrincipalAccount}`` resolved to an account as
    IAM resolves it for the caller (parliament does not know policy variables: INVALID_ARN)."""
    from parliament import analyze_policy_string

    text = json.dumps(document).replace(policy.ACCOUNT, ACCOUNT_ID)
    return list(analyze_policy_string(text).findings)


def test_parliament_finds_no_resource_type_mismatch_in_any_deployer_policy() -> None:
    """Issue 37 (n5, M2'): a real IAM policy linter, not only the evaluator above, for both
    provisioners, with and without network, EFA and boundary, and with the 0.2 deletes."""
    previous = {
        p: policy.previous_resources(exported_02_state(s))
        for p, s in ((Provisioner.CLUSTER_AUTOSCALER, "aws-dev"), (Provisioner.KARPENTER, "aws-karpenter-dev"))
    }
    # Auto Mode did not exist in 0.2: no previous names (test_auto_mode_refuses_the_0_2_previous_names).
    documents = all_policies() + [policy.deployer_policy("ml-dev", provisioner=p, previous=previous[p]) for p in previous]
    for document in documents:
        findings = [f for f in lint(document) if f.issue not in ("RESOURCE_STAR",)]
        assert findings == [], [(f.issue, f.detail) for f in findings]


def test_parliament_reports_the_old_remove_role_from_instance_profile_on_a_role() -> None:
    """The 0.3.0 statement of the first review's fix (``RemoveRoleFromInstanceProfile`` among the
    role actions on ``role/<cluster>-*``) is what parliament reports as RESOURCE_MISMATCH: the
    action's resource type is ``instance-profile``. The same check passes the policy of today."""
    old = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "StackRoles",
                "Effect": "Allow",
                "Action": ["iam:DeleteRole", "iam:RemoveRoleFromInstanceProfile"],
                "Resource": [f"arn:aws:iam::{policy.ACCOUNT}:role/ml-karp-*"],
            }
        ],
    }
    [finding] = lint(old)
    assert finding.issue == "RESOURCE_MISMATCH"
    assert finding.detail[0]["action"] == "iam:RemoveRoleFromInstanceProfile"
    assert "instance-profile" in finding.detail[0]["required_format"]
    assert not [f for f in lint(policy.policy_for(spec_of("aws-karpenter-dev"))) if f.issue == "RESOURCE_MISMATCH"]


def test_parliament_knows_every_action_of_the_policy() -> None:
    """Its bundled reference is recent enough for every action used (no UNKNOWN_ACTION or
    UNKNOWN_PREFIX), EKS access entries included; ``iam:PassRole`` is an action there too."""
    from parliament import iam_definition

    known = {f"{s['prefix']}:{p['privilege']}" for s in iam_definition for p in s["privileges"]}
    for document in all_policies():
        assert policy.all_actions(document) <= known, sorted(policy.all_actions(document) - known)


@functools.cache
def reference_arn_formats(action: str) -> list[tuple[str, str]]:
    """The required resource types of ``action`` and their ARN formats as globs (parliament's
    bundled service authorization reference, ``${...}`` as ``*`` the way parliament reports them)."""
    from parliament import iam_definition

    prefix, name = action.split(":")
    services = [s for s in iam_definition if s["prefix"] == prefix]
    formats = {r["resource"]: re.sub(r"\$\{[^}]+\}", "*", r["arn"]) for s in services for r in s["resources"]}
    rows = [row for s in services for p in s["privileges"] if p["privilege"] == name for row in p["resource_types"]]
    return [
        (row["resource_type"].rstrip("*"), formats[row["resource_type"].rstrip("*")])
        for row in rows
        if row["resource_type"].endswith("*")
    ]


@pytest.mark.parametrize("stack", ALL_STACKS)
@pytest.mark.parametrize("boundary", [None, BOUNDARY])
def test_the_preflight_simulates_each_scoped_action_on_its_resource_type(stack: str, boundary: str | None) -> None:
    """Issue 37 (M2', n5): the preflight's simulated resource is of the type IAM authorizes the action
    on (parliament's ``is_arn_match`` against the reference's ARN format), and the policy allows it
    with the condition values the preflight sends (the boundary's too). 0.3.0's preflight simulated
    nothing for ``RemoveRoleFromInstanceProfile`` and its test asserted the grant on a role ARN."""
    from parliament import is_arn_match

    cluster = dict(engine_cluster(stack), **({"permissionsBoundary": boundary} if boundary else {}))
    spec = spec_of(stack, **{"gpupools:cluster": cluster})
    document = policy.policy_for(spec)
    entries = preflight_aws.simulation_context(
        "aws", ACCOUNT_ID, spec.cluster.name, spec.cluster.permissions_boundary, spec.provisioner
    )
    context = {e["ContextKeyName"]: e["ContextKeyValues"][0] for e in entries}
    actions = preflight_aws.required_actions(spec)
    if spec.provisioner in (Provisioner.KARPENTER, Provisioner.AUTO_MODE):
        assert "iam:RemoveRoleFromInstanceProfile" in actions
    for action in actions:
        resources = preflight_aws.simulation_resources(action, spec, ACCOUNT_ID, "aws", "us-west-2") or ("*",)
        required = reference_arn_formats(action)
        for resource in resources:
            assert allows(document, action, resource, context), (action, resource)
            if resource != "*" and required:
                # Each simulated ARN is of one of the action's types, and every required type is simulated.
                assert any(is_arn_match(t, f, resource) for t, f in required), (action, resource, required)
        if resources != ("*",):
            for resource_type, arn_format in required:
                assert any(is_arn_match(resource_type, arn_format, r) for r in resources), (action, resource_type)


def engine_cluster(stack: str) -> dict[str, Any]:
    return dict(json.loads(engine_values(stack, PROJECT_ROOT)["gpupools:cluster"]))


def exported_02_state(stack: str) -> dict[str, Any]:
    """A ``pulumi stack export`` of ``stack`` as 0.2.0 left it: every URN 0.2.0's own program
    registered (``tests.upgrade.recorded``), with the outputs pulumi-aws stores for the types
    ``previous_resources`` reads: ``arn`` in AWS's formats (IAM ``role/<name>``, ``policy/<name>``,
    EventBridge ``rule/<name>``, EC2 ``launch-template/lt-<17 hex>``), physical names as Pulumi
    auto-names them (``<logical name>-<7 characters>``), the templates' ``tags`` without the stack tag."""
    from tests.upgrade import recorded

    ec2 = f"arn:aws:ec2:us-west-2:{ACCOUNT_ID}"
    ids = {
        "Vpc": "vpc",
        "Subnet": "subnet",
        "InternetGateway": "igw",
        "Eip": "eipalloc",
        "NatGateway": "nat",
        "RouteTable": "rtb",
    }
    resources = []
    for index, r in enumerate(recorded.record_release("0.2.0", stack)):
        physical = f"{r.name}-{index:07x}"
        short = r.type.rsplit(":", 1)[1]
        ec2_id = f"{ids[short]}-{index:017x}" if r.type.startswith("aws:ec2/") and short in ids else None
        arn = {
            "aws:iam/role:Role": f"arn:aws:iam::{ACCOUNT_ID}:role/{physical}",
            "aws:iam/policy:Policy": f"arn:aws:iam::{ACCOUNT_ID}:policy/{physical}",
            "aws:cloudwatch/eventRule:EventRule": f"arn:aws:events:us-west-2:{ACCOUNT_ID}:rule/{physical}",
            "aws:ec2/launchTemplate:LaunchTemplate": f"{ec2}:launch-template/lt-{index:017x}",
            # aws_vpc, aws_subnet, aws_internet_gateway, aws_route_table export `arn`; aws_nat_gateway does
            # not, and the test leaves it out of the EIP too, as an older state may (built from the ID then).
            "aws:ec2/vpc:Vpc": f"{ec2}:vpc/{ec2_id}",
            "aws:ec2/subnet:Subnet": f"{ec2}:subnet/{ec2_id}",
            "aws:ec2/internetGateway:InternetGateway": f"{ec2}:internet-gateway/{ec2_id}",
            "aws:ec2/routeTable:RouteTable": f"{ec2}:route-table/{ec2_id}",
        }.get(r.type)
        outputs = {"tags": dict(r.inputs.get("tags") or {}), **({"arn": arn} if arn else {})} if r.custom else {}
        resources.append({"urn": r.urn, "type": r.type, "custom": r.custom, "id": ec2_id or f"{physical}-id", "outputs": outputs})
    return {"version": 3, "deployment": {"resources": resources}}


@pytest.mark.parametrize(
    ("stack", "provisioner"), [("aws-dev", Provisioner.CLUSTER_AUTOSCALER), ("aws-karpenter-dev", Provisioner.KARPENTER)]
)
def test_previous_names_grant_the_deletes_on_that_stacks_02_resources_only(stack: str, provisioner: Provisioner) -> None:
    """``--previous-names STATE``: the first ``up`` after upgrading deletes the stack's 0.2 controller
    role (and Karpenter's policies and rules), which had no cluster name; the grant is on their ARNs
    from the stack's state, so another stack's 0.2 role of the same logical name is out of reach
    (third EKS review, t1: the patterns ``role/cluster-autoscaler-role-*``, ``policy/karpenter-*``
    matched every stack in the account)."""
    export = exported_02_state(stack)
    previous = policy.previous_resources(export)
    document = policy.deployer_policy("ml-dev", provisioner=provisioner, previous=previous)
    [old_role] = previous.roles
    assert old_role.rsplit("/", 1)[1].startswith(policy.PREVIOUS_CONTROLLER_ROLES[provisioner] + "-")
    for action in ("iam:DeleteRole", "iam:DeleteRolePolicy", "iam:DetachRolePolicy"):
        assert allows(document, action, old_role), action
        assert not allows(document, action, old_role[:-3] + "zzz"), action  # another stack's 0.2 role
    for action in ("iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:PassRole"):
        assert not allows(document, action, old_role, {"iam:PolicyARN": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"}), (
            action
        )
    karpenter = provisioner is Provisioner.KARPENTER
    assert (len(previous.policies), len(previous.rules)) == ((5, 4) if karpenter else (0, 0))
    for old_policy in previous.policies:
        assert allows(document, "iam:DeletePolicy", old_policy)
        assert not allows(document, "iam:CreatePolicyVersion", old_policy)
    assert not allows(document, "iam:DeletePolicy", f"{ACCOUNT_ARN}:policy/karpenter-node-lifecycle-abc1234")
    for rule in previous.rules:
        assert allows(document, "events:DeleteRule", rule)
    assert "DeletePrevious02ControllerRole" not in {
        s["Sid"] for s in policy.deployer_policy("ml-dev", provisioner=provisioner)["Statement"]
    }


def test_previous_names_reads_the_export_and_refuses_anything_else(tmp_path: Any) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(exported_02_state("aws-dev")))
    assert policy.read_previous_resources(str(path)) == policy.previous_resources(exported_02_state("aws-dev"))
    path.write_text("{}")
    with pytest.raises(policy.ConfigError, match=r"^--previous-names: must be the JSON of `pulumi stack export`"):
        policy.read_previous_resources(str(path))


# --- T4 (third EKS review): writes on existing resources scoped to the stack ---------------------------

READ_PREFIXES = ("Describe", "Get", "List", "Simulate")


def written_on_every_resource(document: dict[str, Any]) -> set[str]:
    """The actions other than reads (``Describe*``, ``Get*``, ``List*``, ``SimulatePrincipalPolicy``) that parliament reports as
    granted on ``Resource: "*"`` (``RESOURCE_STAR``)."""
    return {
        action
        for finding in lint(document)
        if finding.issue == "RESOURCE_STAR"
        for action in finding.detail
        if not action.split(":")[1].startswith(READ_PREFIXES)
    }


@pytest.mark.parametrize("provisioner", list(Provisioner))
def test_what_stays_on_every_resource_is_the_documented_list(provisioner: Provisioner) -> None:
    """parliament's RESOURCE_STAR over the policy with network and EFA: the writes still on ``*`` are
    exactly the ones the module docstring lists and explains (the created VPC's and an EFA pool's
    creates, modifies and deletes, ``RunInstances``, the service-linked roles of four services).
    Before T4 the launch template writes, every tag write, SQS and EventBridge were among them."""
    document = policy.deployer_policy("ml-dev", provisioner=provisioner, efa=True)
    # Auto Mode has no Auto Scaling group of the deployer's, so no ec2:RunInstances.
    auto_mode = provisioner is Provisioner.AUTO_MODE
    documented = {*(() if auto_mode else policy.EC2_ACTIONS), "iam:CreateServiceLinkedRole"}
    # parliament reports only actions the reference gives a required resource type (not, e.g.,
    # ec2:ReleaseAddress): those without one are checked on the statements themselves.
    assert written_on_every_resource(document) == {a for a in documented if reference_arn_formats(a)}
    on_star = {
        action
        for statement in document["Statement"]
        if "*" in (statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]])
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        if not action.split(":")[1].startswith(READ_PREFIXES)
    }
    assert on_star == documented | set(policy.EKS_CREATE_ACTIONS)
    for scoped in (*policy.LAUNCH_TEMPLATE_ACTIONS, policy.LAUNCH_TEMPLATE_CREATE, *policy.AUTOSCALING_TAG_WRITES):
        assert allows(document, scoped, "*") is False, scoped
    for scoped in (*policy.NETWORK_ACTIONS, *policy.EFA_ACTIONS):
        assert allows(document, scoped, "*") is False, scoped
    assert not {a for a in written_on_every_resource(document) if a.startswith(("sqs:", "events:", "autoscaling:"))}


LAUNCH_TEMPLATE = f"arn:aws:ec2:us-west-2:{ACCOUNT_ID}:launch-template/lt-0123456789abcdef0"
OURS = {"aws:ResourceTag/gpupools.io/cluster": "ml-dev"}


def test_launch_templates_are_written_only_where_they_carry_the_stack_tag() -> None:
    """T4's escalation: a new version of another workload's launch template runs the deployer's
    code under that group's instance profile. Writes need ``gpupools.io/cluster=ml-dev`` on the
    template; a create needs it in the request; tags go on at creation or on the stack's own."""
    document = policy.deployer_policy("ml-dev")
    for action in ("ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate", "ec2:DeleteLaunchTemplate"):
        assert allows(document, action, LAUNCH_TEMPLATE, OURS), action
        assert not allows(document, action, LAUNCH_TEMPLATE), action
        assert not allows(document, action, LAUNCH_TEMPLATE, {"aws:ResourceTag/gpupools.io/cluster": "ml-prod"}), action
        assert not allows(document, action, "*"), action
    assert allows(document, "ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE, {"aws:RequestTag/gpupools.io/cluster": "ml-dev"})
    assert not allows(document, "ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE)
    # Tagging a foreign template into the stack would open the writes above: only at creation.
    assert allows(document, "ec2:CreateTags", LAUNCH_TEMPLATE, {"ec2:CreateAction": "CreateLaunchTemplate"})
    assert allows(document, "ec2:CreateTags", LAUNCH_TEMPLATE, OURS)
    assert not allows(document, "ec2:CreateTags", LAUNCH_TEMPLATE, {"aws:RequestTag/gpupools.io/cluster": "ml-dev"})
    # The network and the security groups keep their tag writes, on the stack's own (tagged) ones.
    assert allows(document, "ec2:CreateTags", f"arn:aws:ec2:us-west-2:{ACCOUNT_ID}:subnet/subnet-0abc", OURS)
    assert not allows(document, "ec2:CreateTags", f"arn:aws:ec2:us-west-2:{ACCOUNT_ID}:subnet/subnet-0abc")


def test_the_first_up_after_0_2_may_add_the_stack_tag_and_nothing_else() -> None:
    """0.2's launch templates carry no stack tag: ``--previous-names`` (the first ``up`` after
    upgrading) lets that ``up`` add exactly that tag, with the stack's value."""
    previous = policy.previous_resources(exported_02_state("aws-dev"))
    document = policy.deployer_policy("ml-dev", previous=previous)
    assert len(previous.launch_templates) == len(example_run("aws-dev").of_type("aws:ec2/launchTemplate:LaunchTemplate"))
    request = {"aws:RequestTag/gpupools.io/cluster": "ml-dev", "aws:TagKeys": "gpupools.io/cluster"}
    for template in previous.launch_templates:
        assert allows(document, "ec2:CreateTags", template, request)
        assert allows(document, "ec2:CreateLaunchTemplateVersion", template)
        assert not allows(document, "ec2:CreateTags", template, {**request, "aws:TagKeys": "gpupools.io/cluster,Name"})
        assert not allows(document, "ec2:CreateTags", template, {**request, "aws:RequestTag/gpupools.io/cluster": "x"})
        assert not allows(policy.deployer_policy("ml-dev"), "ec2:CreateTags", template, request)
    # The 0.2 network gets the tag too (a tag update), NAT gateways and EIPs by the ARN built from their ID.
    network = previous.network
    assert {arn.split(":")[5].split("/")[0] for arn in network} == {
        "vpc",
        "subnet",
        "internet-gateway",
        "route-table",
        "elastic-ip",
        "natgateway",
    }
    assert all(arn.startswith(f"arn:aws:ec2:us-west-2:{ACCOUNT_ID}:") and not arn.endswith("/None") for arn in network)
    for arn in network:
        assert allows(document, "ec2:CreateTags", arn, request), arn
        assert not allows(document, "ec2:DeleteVpc", arn), arn
    # Another workload's template stays out of reach during the upgrade too (T4's escalation).
    assert not allows(document, "ec2:CreateLaunchTemplateVersion", LAUNCH_TEMPLATE)
    assert not allows(document, "ec2:CreateTags", LAUNCH_TEMPLATE, request)


@pytest.mark.parametrize("stack", STACKS)
def test_every_launch_template_the_stack_creates_carries_the_stack_tag_and_not_in_its_instances(stack: str) -> None:
    """What the policy's conditions rely on (``gpupools.aws.stack_tag``): the tag on the template
    (checked at create through ``aws:RequestTag`` and later through ``aws:ResourceTag``), never in
    its ``tagSpecifications``, whose change would be a new version that rolls every group's nodes."""
    cluster = spec_of(stack).cluster.name
    templates = [r for r in example_run(stack).registrations if r.type == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert templates
    for template in templates:
        assert template.inputs["tags"]["gpupools.io/cluster"] == cluster, template.name
        for specification in template.inputs.get("tagSpecifications", []):
            assert "gpupools.io/cluster" not in specification["tags"], template.name


def test_auto_scaling_group_tags_only_on_the_clusters_own_groups() -> None:
    """Adding ``k8s.io/cluster-autoscaler/<cluster>=owned`` to a foreign group would hand it to the
    cluster's cluster-autoscaler (T4, 2.): tag writes need the group to be the cluster's already."""
    document = policy.deployer_policy("ml-dev")
    group = f"arn:aws:autoscaling:us-west-2:{ACCOUNT_ID}:autoScalingGroup:0a1b:autoScalingGroupName/eks-ml-dev-gpu-0a1b"
    owned = {"autoscaling:ResourceTag/k8s.io/cluster-autoscaler/ml-dev": "owned"}
    for action in policy.AUTOSCALING_TAG_WRITES:
        assert allows(document, action, group, owned), action
        assert not allows(document, action, group), action
        assert not allows(document, action, group, {"autoscaling:ResourceTag/k8s.io/cluster-autoscaler/other": "owned"})


def test_karpenter_queue_and_rules_only_by_the_clusters_names() -> None:
    """``SetQueueAttributes`` rewrites a queue's resource policy and ``PutTargets`` redirects a rule
    (T4, 3.): only on ``<cluster>-karpenter-*``, the names the stack gives both."""
    document = policy.deployer_policy("ml-dev", provisioner=Provisioner.KARPENTER)
    queue = f"arn:aws:sqs:us-west-2:{ACCOUNT_ID}:ml-dev-karpenter-20261129000000000000000001"
    rule = f"arn:aws:events:us-west-2:{ACCOUNT_ID}:rule/ml-dev-karpenter-20261129000000000000000002"
    for action in ("sqs:SetQueueAttributes", "sqs:DeleteQueue", "sqs:CreateQueue"):
        assert allows(document, action, queue) and not allows(document, action, queue.replace("ml-dev-", "other-")), action
    for action in ("events:PutTargets", "events:PutRule", "events:DeleteRule"):
        assert allows(document, action, rule) and not allows(document, action, rule.replace("ml-dev-", "other-")), action
    run = example_run("aws-karpenter-dev")
    cluster = spec_of("aws-karpenter-dev").cluster.name
    prefixed = [r for r in run.registrations if r.type in ("aws:sqs/queue:Queue", "aws:cloudwatch/eventRule:EventRule")]
    assert len(prefixed) >= 5
    assert all(r.inputs["namePrefix"] == f"{cluster}-karpenter-" for r in prefixed)


# --- EKS Auto Mode (gpupools:provisioner: auto-mode) ------------------------------------------------------

AUTO = Provisioner.AUTO_MODE
AUTO_NODE_ROLE = f"{ACCOUNT_ARN}:role/ml-dev-auto-node-role-1a2b3c4"
SERVICE_ROLE = f"{ACCOUNT_ARN}:role/ml-dev-eks-eksRole-role-1a2b3c4"


def statements_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in document["Statement"]}


def test_auto_mode_roles_are_the_service_role_and_the_auto_mode_node_role_by_name() -> None:
    """An Auto Mode stack creates two roles (``gpupools.aws.auto_mode.AutoModeNodeRole``,
    ``iam.create_cluster_service_role``): the role statements name exactly those, the node role by
    its own ``<cluster>-auto-node-role-*`` pattern; no ``<cluster>-node-role-*`` and no controller role."""
    document = policy.deployer_policy("ml-dev", provisioner=AUTO)
    expected = [
        f"arn:aws:iam::{policy.ACCOUNT}:role/ml-dev-auto-node-role-*",
        f"arn:aws:iam::{policy.ACCOUNT}:role/ml-dev-eks-eksRole-role-*",
    ]
    statements = statements_of(document)
    for sid in ("StackRoles", "StackRoleWrites", "AttachOnlyTheStacksPolicies"):
        assert statements[sid]["Resource"] == expected, sid
    for action in ("iam:CreateRole", "iam:DeleteRole", "iam:DetachRolePolicy", "iam:TagRole"):
        assert allows(document, action, AUTO_NODE_ROLE) and allows(document, action, SERVICE_ROLE), action
        for other in (
            "ml-dev-node-role",
            "ml-dev-cluster-autoscaler-role",
            "ml-dev-karpenter-controller",
            "ml-dev2-auto-node-role",
        ):
            assert not allows(document, action, f"{ACCOUNT_ARN}:role/{other}-1a2b3c4"), (action, other)
    with pytest.raises(ValueError, match="no controller role"):
        policy.controller_role_arn("ml-dev", AUTO)
    # The aws-auto-dev example's roles are those two, under the cluster's name.
    cluster = spec_of("aws-auto-dev").cluster.name
    assert sorted(r.name for r in example_run("aws-auto-dev").of_type("aws:iam/role:Role")) == [
        f"{cluster}-{policy.AUTO_MODE_NODE_ROLE}",
        f"{cluster}-eks-eksRole-role",
    ]


def test_auto_mode_passes_only_the_service_role_and_only_to_eks() -> None:
    """``CreateCluster`` passes the service role; no call of the deployer's names the node role to a
    service (no ``computeConfig.nodeRoleArn``, no node group): EKS passes it to EC2 with the cluster
    role's ``AmazonEKSComputePolicy``."""
    document = policy.deployer_policy("ml-dev", provisioner=AUTO)
    assert statements_of(document)["PassStackRolesToEks"]["Resource"] == [
        f"arn:aws:iam::{policy.ACCOUNT}:role/ml-dev-eks-eksRole-role-*"
    ]
    eks, ec2 = {"iam:PassedToService": "eks.amazonaws.com"}, {"iam:PassedToService": "ec2.amazonaws.com"}
    assert allows(document, "iam:PassRole", SERVICE_ROLE, eks)
    assert not allows(document, "iam:PassRole", SERVICE_ROLE, ec2)
    assert not allows(document, "iam:PassRole", AUTO_NODE_ROLE, eks)
    assert not allows(document, "iam:PassRole", AUTO_NODE_ROLE, ec2)
    # The other provisioners still pass their node role to EKS (CreateNodegroup).
    assert allows(policy.deployer_policy("ml-dev"), "iam:PassRole", f"{ACCOUNT_ARN}:role/ml-dev-node-role-1a2b3c4", eks)


def test_auto_mode_attaches_exactly_the_seven_auto_mode_policies() -> None:
    arns = policy.attachable_policy_arns("ml-dev", AUTO)
    assert arns == [
        f"arn:aws:iam::aws:policy/{name}"
        for name in (
            "AmazonEKSClusterPolicy",
            "AmazonEKSComputePolicy",
            "AmazonEKSBlockStoragePolicy",
            "AmazonEKSLoadBalancingPolicy",
            "AmazonEKSNetworkingPolicy",
            "AmazonEKSWorkerNodeMinimalPolicy",
            "AmazonEC2ContainerRegistryPullOnly",
        )
    ]
    assert policy.attachable_policy_arns("ml-dev", AUTO, "aws-cn")[1] == "arn:aws-cn:iam::aws:policy/AmazonEKSComputePolicy"
    document = policy.deployer_policy("ml-dev", provisioner=AUTO)
    assert allows(document, "iam:AttachRolePolicy", SERVICE_ROLE, {"iam:PolicyARN": arns[1]})
    assert allows(document, "iam:AttachRolePolicy", AUTO_NODE_ROLE, {"iam:PolicyARN": arns[-1]})
    # The other provisioners' node policies are not the Auto Mode node role's.
    for name in ("AmazonEKSWorkerNodePolicy", "AmazonSSMManagedInstanceCore", "AmazonEKS_CNI_Policy", "AdministratorAccess"):
        assert not allows(document, "iam:AttachRolePolicy", AUTO_NODE_ROLE, {"iam:PolicyARN": f"arn:aws:iam::aws:policy/{name}"})
    # Every policy the example attaches is among them, and the example attaches all seven.
    attached = {
        r.inputs["policyArn"] for r in example_run("aws-auto-dev").of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert attached == set(arns)


def test_auto_mode_has_no_node_group_launch_template_autoscaling_or_karpenter_actions() -> None:
    """None of what only node groups, launch templates, cluster-autoscaler or Karpenter's own
    resources need: an Auto Mode stack registers none of them, and its policy grants none."""
    for network in (True, False):
        for boundary in (None, BOUNDARY):
            granted = policy.all_actions(policy.deployer_policy("ml-dev", network, AUTO, permissions_boundary=boundary))
            assert not {a for a in granted if a.split(":")[0] in ("sqs", "events", "autoscaling")}, sorted(granted)
            dropped = {
                *policy.EC2_ACTIONS,
                *policy.LAUNCH_TEMPLATE_ACTIONS,
                policy.LAUNCH_TEMPLATE_CREATE,
                *policy.LAUNCH_TEMPLATE_READ_ACTIONS,
                *policy.NODE_GROUP_EKS_ACTIONS,
                *policy.KARPENTER_POLICY_ACTIONS,
                "iam:PutRolePolicy",
            } - {"ec2:CreateTags", "ec2:DeleteTags"}  # the stack's network still gets tags
            assert not granted & dropped, sorted(granted & dropped)
    sids = set(statements_of(policy.deployer_policy("ml-dev", provisioner=AUTO)))
    assert not sids & {
        "CreateStackLaunchTemplates",
        "TagLaunchTemplatesAsTheyAreCreated",
        "StackLaunchTemplates",
        "StackAutoScalingGroupTags",
        "DiscoveryTagOnTheClusterSecurityGroup",
        "AutoscalerInlinePolicy",
        "KarpenterQueueAndRules",
        "KarpenterPolicies",
    }
    types = {r.type for r in example_run("aws-auto-dev").registrations if r.custom}
    assert not types & {
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:eks/nodeGroup:NodeGroup",
        "aws:eks/addon:Addon",
        "aws:autoscaling/tag:Tag",
        "aws:ec2/tag:Tag",
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/policy:Policy",
        "aws:sqs/queue:Queue",
        "aws:cloudwatch/eventRule:EventRule",
    }
    # Only EKS's and Spot's service-linked roles: no managed node group, no Auto Scaling group.
    slr = statements_of(policy.deployer_policy("ml-dev", provisioner=AUTO))["ServiceLinkedRoles"]
    assert slr["Condition"]["StringEquals"]["iam:AWSServiceName"] == ["eks.amazonaws.com", "spot.amazonaws.com"]


def test_auto_mode_eks_writes_are_the_cluster_and_its_access_entries() -> None:
    """The node role's ``EC2`` access entry (``CreateAccessEntry`` on the cluster) and its
    ``AmazonEKSAutoNodePolicy`` (``AssociateAccessPolicy`` on the entry); ``UpdateClusterConfig`` on the
    cluster; nothing on node groups or add-ons, and nothing on another cluster."""
    document = policy.deployer_policy("ml-dev", provisioner=AUTO)
    cluster = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:cluster/ml-dev"
    entry = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:access-entry/ml-dev/role/{ACCOUNT_ID}/ml-dev-auto-node-role-1a2b3c4/0a1b2c3d"
    for action in ("eks:CreateAccessEntry", "eks:UpdateClusterConfig", "eks:UpdateClusterVersion", "eks:DeleteCluster"):
        assert allows(document, action, cluster) and not allows(document, action, cluster.replace("/ml-dev", "/prod")), action
    for action in ("eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy", "eks:DeleteAccessEntry"):
        assert allows(document, action, entry), action
        assert not allows(document, action, entry.replace("/ml-dev/", "/ml-dev2/")), action
    assert allows(document, "eks:CreateCluster", "*")
    nodegroup = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:nodegroup/ml-dev/system/0a1b2c3d"
    addon = f"arn:aws:eks:us-west-2:{ACCOUNT_ID}:addon/ml-dev/coredns/0a1b2c3d"
    assert not allows(document, "eks:CreateNodegroup", cluster) and not allows(document, "eks:CreateAddon", cluster)
    assert not allows(document, "eks:DeleteNodegroup", nodegroup) and not allows(document, "eks:UpdateAddon", addon)
    assert not allows(document, "eks:TagResource", nodegroup)
    # The preflight simulates the access policy on the node role's entry, which the policy allows.
    spec = spec_of("aws-auto-dev")
    [simulated] = preflight_aws.simulation_resources("eks:AssociateAccessPolicy", spec, ACCOUNT_ID, "aws", "us-west-2")
    assert allows(policy.policy_for(spec), "eks:AssociateAccessPolicy", simulated)
    assert "/ml-auto-auto-node-role-" in simulated
    assert not {"eks:CreateNodegroup", "eks:CreateAddon", "ec2:CreateLaunchTemplate"} & set(preflight_aws.required_actions(spec))


def test_auto_mode_node_role_leaves_only_eks_made_instance_profiles() -> None:
    """The node role's delete takes it out of the instance profile Auto Mode made (``eks*``, which can
    outlive the cluster); nothing else of the kind, and the other provisioners get none of it."""
    document = policy.deployer_policy("ml-dev", provisioner=AUTO)
    action = "iam:RemoveRoleFromInstanceProfile"
    assert allows(document, action, f"{ACCOUNT_ARN}:instance-profile/eks-0f8e7d6c-aaaa-bbbb-cccc-000000000000")
    assert not allows(document, action, f"{ACCOUNT_ARN}:instance-profile/prod-admin")
    assert not allows(document, action, AUTO_NODE_ROLE)
    for escalation in ("iam:AddRoleToInstanceProfile", "iam:CreateInstanceProfile"):
        assert escalation not in policy.all_actions(document)
    assert action not in policy.all_actions(policy.deployer_policy("ml-dev"))


def test_auto_mode_refuses_the_0_2_previous_names(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    """Auto Mode did not exist in 0.2: ``--previous-names`` with it is a usage error naming the flag
    (and a ``ValueError`` from ``deployer_policy``), not a ``KeyError``; so is ``--efa``."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps(exported_02_state("aws-dev")))
    with pytest.raises(SystemExit) as exit_info:
        policy.main(["--cluster-name", "ml-dev", "--provisioner", "auto-mode", "--previous-names", str(state)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--previous-names" in err and "auto-mode" in err and "Traceback" not in err
    with pytest.raises(ValueError, match=r"^--previous-names: provisioner auto-mode did not exist"):
        policy.deployer_policy("ml-dev", provisioner=AUTO, previous=policy.previous_resources(exported_02_state("aws-dev")))
    with pytest.raises(SystemExit) as exit_info:
        policy.main(["--cluster-name", "ml-dev", "--provisioner", "auto-mode", "--efa"])
    assert exit_info.value.code == 2 and "--efa" in capsys.readouterr().err


def test_cli_prints_the_auto_mode_policy_of_the_example_stack(capsys: pytest.CaptureFixture[str]) -> None:
    spec = spec_of("aws-auto-dev")
    assert policy.main(["--cluster-name", spec.cluster.name, "--provisioner", "auto-mode"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == policy.policy_for(spec)
    assert out.err == policy.unbounded_warning(spec.cluster.name, AUTO) + "\n"
