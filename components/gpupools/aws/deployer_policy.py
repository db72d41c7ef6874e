"""The IAM policy the identity running ``pulumi up`` on an EKS stack needs, as a real policy document.

Print it with ``python -m gpupools.aws.deployer_policy --cluster-name <gpupools:cluster.name>``
(``--existing-vpc`` without the VPC actions, ``--provisioner karpenter`` for a stack with
``gpupools:provisioner: karpenter``, ``--efa`` with an ``efa: true`` pool) and attach
it to the CI role (``AWS_ROLE_ARN``) or a person's role; ``policy_for(spec)`` picks both from a
validated stack config. It covers create, read, update and delete of everything the EKS stack
registers (``tests/snapshots/aws-dev.json``, ``tests/snapshots/aws-karpenter-dev.json``), so the
same policy also lets ``pulumi refresh`` and ``pulumi destroy`` finish:

* the VPC, subnets, internet and NAT gateways, Elastic IPs and route tables (not needed with
  ``network.vpcId``), and the node launch templates;
* the EKS cluster (through pulumi-eks: its IAM role and OIDC provider for IRSA, the ``vpc-cni`` and
  ``kube-proxy`` add-ons), the CoreDNS add-on, node groups and the node role's access entry;
* IAM roles with managed and inline policies (cluster, node, cluster-autoscaler IRSA role), and
  ``iam:PassRole`` only to EKS and EC2 (``iam:PassedToService``), all scoped (below);
* the service-linked roles EKS, managed node groups, Auto Scaling and Spot create on first use
  (``iam:CreateServiceLinkedRole`` limited by ``iam:AWSServiceName``);
* cluster-autoscaler mode: the node-template tags on each node group's Auto Scaling group;
* Karpenter mode (``KARPENTER_ACTIONS``, only in that policy): the interruption queue (SQS) and its
  queue policy, the EventBridge rules and their targets, the controller's customer-managed IAM
  policies, and the discovery tag on the cluster security group (``ec2:CreateTags``, common);
* the read-only calls the program and the preflight make (zones, caller identity, node group and
  ASG sizes for ``live_capacity``, add-on and Kubernetes versions, instance type offerings).

Resources are ``*`` for EC2, EKS, Auto Scaling, SQS and EventBridge (most create calls cannot be
scoped to ARNs that do not exist yet, and tag conditions would need tags on every child pulumi-eks
creates), but never for an IAM action that could raise the deployer's own privileges
(``ESCALATION_ACTIONS``):

* role writes (``IAM_ROLE_ACTIONS``) and ``iam:PassRole`` only on the stack's own roles
  (``stack_role_arns``: ``<cluster>-*`` and ``cluster-autoscaler-*`` or ``karpenter-*``), ``PassRole``
  also only to EKS and EC2 (``iam:PassedToService``);
* ``iam:AttachRolePolicy`` only on those roles and only of the policies the stack attaches
  (``iam:PolicyARN``: five AWS managed policies and, under Karpenter, its own ``karpenter-*``
  policies), so ``AdministratorAccess`` can never be attached;
* ``iam:PutRolePolicy`` only on cluster-autoscaler's role (the one inline policy);
* Karpenter's policy writes (``KARPENTER_POLICY_ACTIONS``, ``SetDefaultPolicyVersion`` included) only
  on ``karpenter-*`` policies; the OIDC provider actions only on EKS issuers.

What a name scope cannot stop: a deployer may create a role under those names whose trust policy
admits itself, and give it the stack's attachable policies (or, under Karpenter, a ``karpenter-*``
policy it wrote). Where that matters, also attach a permissions boundary or an SCP that caps what
roles under these names can do (docs/safety.md, "Deployer permissions").
``tests/test_deployer_policy.py`` checks every action against botocore's service models (so a typo
or a removed API fails the build), that every action the preflight simulates is here, that every
resource type and every role and policy name each example stack registers is covered, and that no
escalation action is on ``*`` without a condition.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpupools.aws.iam import NODE_MANAGED_POLICIES
from gpupools.specs import Provisioner, StackSpec

NETWORK_ACTIONS = (
    "ec2:CreateVpc",
    "ec2:DeleteVpc",
    "ec2:ModifyVpcAttribute",
    "ec2:CreateSubnet",
    "ec2:DeleteSubnet",
    "ec2:ModifySubnetAttribute",
    "ec2:CreateInternetGateway",
    "ec2:AttachInternetGateway",
    "ec2:DetachInternetGateway",
    "ec2:DeleteInternetGateway",
    "ec2:AllocateAddress",
    "ec2:ReleaseAddress",
    "ec2:DisassociateAddress",
    "ec2:CreateNatGateway",
    "ec2:DeleteNatGateway",
    "ec2:CreateRouteTable",
    "ec2:DeleteRouteTable",
    "ec2:CreateRoute",
    "ec2:DeleteRoute",
    "ec2:AssociateRouteTable",
    "ec2:DisassociateRouteTable",
)
"""The created VPC (``gpupools.aws.network``); not needed with ``network.vpcId``."""

EC2_ACTIONS = (
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "ec2:ModifyLaunchTemplate",
    "ec2:DeleteLaunchTemplate",
    "ec2:CreateTags",
    "ec2:DeleteTags",
    "ec2:RunInstances",
)
"""Launch templates and tags. ``ec2:RunInstances``: EC2 Auto Scaling checks it for whoever creates
or updates an Auto Scaling group from a launch template (EC2 Auto Scaling user guide, "Launch
template permissions"). EKS creates a managed node group's ASG with its service-linked role, and
whether ``CreateNodegroup`` also checks the caller is not documented, so it is granted: denying it
would fail only at the first node group, after the cluster's 10+ minutes."""

EFA_ACTIONS = (
    "ec2:CreatePlacementGroup",
    "ec2:DeletePlacementGroup",
    "ec2:CreateSecurityGroup",
    "ec2:DeleteSecurityGroup",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupEgress",
    "ec2:ModifySecurityGroupRules",
)
"""Stacks with an ``efa: true`` pool only (``node_group.create_efa_network``): the pool's cluster
placement group and its EFA security group with two self-referencing rules. The Terraform AWS
provider revokes a new group's default allow-all egress rule right after creating it, hence
``RevokeSecurityGroupEgress`` on create too."""

EFA_READ_ACTIONS = ("ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroupRules")

EC2_READ_ACTIONS = (
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeVpcs",
    "ec2:DescribeVpcAttribute",
    "ec2:DescribeSubnets",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeAddresses",
    "ec2:DescribeAddressesAttribute",
    "ec2:DescribeNatGateways",
    "ec2:DescribeRouteTables",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeTags",
    "ec2:DescribeCapacityReservations",
)
"""Read-only EC2 calls. ``ec2:DescribeCapacityReservations`` is for pools with ``reservations``:
AWS documents it for the identity that creates capacity targeting a Capacity Block (AWS PCS user
guide, "Configure an AWS PCS compute node group to use a Capacity Block"); the EKS user guide says
nothing either way for managed node groups, so it is granted, read-only, rather than found missing
at the first reserved group."""

EKS_ACTIONS = (
    "eks:CreateCluster",
    "eks:DeleteCluster",
    "eks:UpdateClusterConfig",
    "eks:UpdateClusterVersion",
    "eks:CreateNodegroup",
    "eks:DeleteNodegroup",
    "eks:UpdateNodegroupConfig",
    "eks:UpdateNodegroupVersion",
    "eks:CreateAccessEntry",
    "eks:DeleteAccessEntry",
    "eks:UpdateAccessEntry",
    "eks:AssociateAccessPolicy",
    "eks:DisassociateAccessPolicy",
    "eks:CreateAddon",
    "eks:DeleteAddon",
    "eks:UpdateAddon",
    "eks:TagResource",
    "eks:UntagResource",
)

EKS_READ_ACTIONS = (
    "eks:DescribeCluster",
    "eks:ListClusters",
    "eks:DescribeNodegroup",
    "eks:ListNodegroups",
    "eks:DescribeAccessEntry",
    "eks:ListAccessEntries",
    "eks:ListAssociatedAccessPolicies",
    "eks:DescribeAddon",
    "eks:DescribeAddonVersions",
    "eks:DescribeClusterVersions",
    "eks:ListTagsForResource",
    "eks:DescribeUpdate",
)

IAM_ROLE_ACTIONS = (
    "iam:CreateRole",
    "iam:DeleteRole",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:DetachRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:RemoveRoleFromInstanceProfile",
)
"""Writes on the stack's own roles only (``stack_role_arns``). ``RemoveRoleFromInstanceProfile``:
deleting a role first removes it from every instance profile it is in (terraform-provider-aws
``internal/service/iam/role.go``, ``deleteRoleInstanceProfiles``), and under Karpenter the node role
is in the instance profiles Karpenter made from its EC2NodeClasses; without it the node role's delete
fails whenever one survives."""

IAM_READ_ACTIONS = (
    "iam:GetRole",
    "iam:ListAttachedRolePolicies",
    "iam:GetRolePolicy",
    "iam:ListRolePolicies",
    "iam:ListInstanceProfilesForRole",
    "iam:GetOpenIDConnectProvider",
    "iam:SimulatePrincipalPolicy",
)
"""IAM reads (refresh and the waits after create). ``SimulatePrincipalPolicy`` is the preflight's
permission check, not ``pulumi up``'s."""

OIDC_PROVIDER_ACTIONS = (
    "iam:CreateOpenIDConnectProvider",
    "iam:DeleteOpenIDConnectProvider",
    "iam:TagOpenIDConnectProvider",
    "iam:UpdateOpenIDConnectProviderThumbprint",
)
"""The cluster's IAM OIDC provider (pulumi-eks ``createOidcProvider``), on EKS issuers' ARNs only."""

AUTOSCALING_ACTIONS = (
    "autoscaling:CreateOrUpdateTags",
    "autoscaling:DeleteTags",
    "autoscaling:DescribeTags",
    "autoscaling:DescribeAutoScalingGroups",
)
"""cluster-autoscaler mode. Karpenter mode keeps the reads (``live_capacity`` reads the system
group's ASG) and ``DeleteTags``: a Karpenter stack deployed before its system group lost the
node-template tags removes them on its next ``pulumi up``."""

KARPENTER_ACTIONS = (
    "sqs:CreateQueue",
    "sqs:DeleteQueue",
    "sqs:SetQueueAttributes",
    "sqs:TagQueue",
    "sqs:UntagQueue",
    "events:PutRule",
    "events:DeleteRule",
    "events:PutTargets",
    "events:RemoveTargets",
    "events:TagResource",
    "events:UntagResource",
)
"""Karpenter mode's writes (``gpupools.aws.karpenter``): ``aws.sqs.Queue`` (create, then its
attributes and tags; the queue policy is the ``Policy`` attribute, ``SetQueueAttributes``),
``aws.cloudwatch.EventRule`` and ``EventTarget``. The Terraform AWS provider's calls for these
resources, which pulumi-aws bridges: ``internal/service/sqs/queue.go``, ``queue_policy.go``,
``internal/service/events/rule.go``, ``target.go``."""

KARPENTER_POLICY_ACTIONS = (
    "iam:CreatePolicy",
    "iam:DeletePolicy",
    "iam:CreatePolicyVersion",
    "iam:DeletePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:TagPolicy",
    "iam:UntagPolicy",
)
"""The Karpenter controller's customer-managed policies (``aws.iam.Policy``), on their own ARNs only
(``stack_policy_arns``): an update is a new default version (IAM keeps 5, so the oldest is deleted
first), a delete removes the non-default versions, then the policy (terraform-provider-aws
``internal/service/iam/policy.go``: ``policyPruneVersions``, ``SetDefaultPolicyVersion`` when a
version becomes the default). Without ``SetDefaultPolicyVersion`` any later change of a Karpenter
policy fails."""

KARPENTER_READ_ACTIONS = (
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ListQueueTags",
    "events:DescribeRule",
    "events:ListTargetsByRule",
    "events:ListTagsForResource",
    "iam:GetPolicy",
    "iam:GetPolicyVersion",
    "iam:ListPolicyVersions",
)
"""Karpenter mode's reads: the same resources' refresh and the waits after create."""

OTHER_READ_ACTIONS = (
    "sts:GetCallerIdentity",
    "servicequotas:GetServiceQuota",
    "servicequotas:ListServiceQuotas",
)
"""Caller identity (the program's region and account lookups, the preflight) and the preflight's
vCPU quota reads."""

PASSED_TO_SERVICES = ("eks.amazonaws.com", "ec2.amazonaws.com")
"""``iam:PassRole`` is allowed only toward these, and only for the stack's own roles: the cluster and
node roles go to EKS."""

SERVICE_LINKED_ROLES = (
    "eks.amazonaws.com",
    "eks-nodegroup.amazonaws.com",
    "autoscaling.amazonaws.com",
    "spot.amazonaws.com",
)
"""Service-linked roles created on first use in an account (EKS, managed node groups, the node
groups' Auto Scaling groups, Spot Instances)."""

AUTOSCALER_COMPONENT = "cluster-autoscaler"
KARPENTER_COMPONENT = "karpenter"
"""The names ``stacks/aws.py`` gives the ``ClusterAutoscaler`` and ``Karpenter`` components: their
IAM roles and policies are auto-named from them (``<logical name>-<7 hex digits>``, Pulumi's
auto-naming), as the ``EksCluster``'s (the node role, pulumi-eks's ``<name>-eksRole`` service role)
are from the cluster name. ``tests/test_deployer_policy.py`` checks that every role and policy each
example stack registers falls under these patterns."""

NODE_AND_CLUSTER_POLICIES = ("AmazonEKSClusterPolicy", *NODE_MANAGED_POLICIES)
"""The AWS managed policies the stack attaches: pulumi-eks's service role gets
``AmazonEKSClusterPolicy`` (pulumi/pulumi-eks ``nodejs/eks/cluster/cluster.ts``, "Create the EKS
service role"), the node role the other four (``gpupools.aws.iam.NODE_MANAGED_POLICIES``)."""

ACCOUNT = "${aws:PrincipalAccount}"
"""The account in the policy's ARNs: a policy variable, the caller's own account (IAM user guide,
"IAM policy elements: Variables and tags"; ``aws:PrincipalAccount`` is a global condition key), so
one document serves every account."""


def stack_role_arns(cluster_name: str, provisioner: Provisioner, partition: str = "aws") -> list[str]:
    """The ARN patterns of every role a stack of ``cluster_name`` creates: the cluster's
    (``<cluster>-*``: the node role and pulumi-eks's service role) and its provisioner's."""
    component = KARPENTER_COMPONENT if provisioner is Provisioner.KARPENTER else AUTOSCALER_COMPONENT
    return [f"arn:{partition}:iam::{ACCOUNT}:role/{prefix}-*" for prefix in (cluster_name, component)]


def stack_policy_arns(partition: str = "aws") -> list[str]:
    """The ARN pattern of the Karpenter controller's customer-managed policies (``karpenter-*``)."""
    return [f"arn:{partition}:iam::{ACCOUNT}:policy/{KARPENTER_COMPONENT}-*"]


def attachable_policy_arns(provisioner: Provisioner, partition: str = "aws") -> list[str]:
    """What ``iam:AttachRolePolicy`` may attach (its ``iam:PolicyARN`` condition): the AWS managed
    policies of ``NODE_AND_CLUSTER_POLICIES`` and, under Karpenter, the stack's own policies. Never
    ``AdministratorAccess`` or any other policy a deployer could lift itself with."""
    managed = [f"arn:{partition}:iam::aws:policy/{name}" for name in NODE_AND_CLUSTER_POLICIES]
    return managed + (stack_policy_arns(partition) if provisioner is Provisioner.KARPENTER else [])


ESCALATION_ACTIONS = frozenset(
    {
        "iam:AttachRolePolicy",
        "iam:AttachUserPolicy",
        "iam:AttachGroupPolicy",
        "iam:PutRolePolicy",
        "iam:PutUserPolicy",
        "iam:PutGroupPolicy",
        "iam:CreatePolicyVersion",
        "iam:SetDefaultPolicyVersion",
        "iam:UpdateAssumeRolePolicy",
        "iam:CreateRole",
        "iam:PassRole",
        "iam:CreateAccessKey",
        "iam:CreateLoginProfile",
        "iam:UpdateLoginProfile",
        "iam:AddUserToGroup",
        "iam:PutRolePermissionsBoundary",
        "iam:DeleteRolePermissionsBoundary",
        "iam:CreateServiceLinkedRole",
        "iam:AddRoleToInstanceProfile",
        "iam:CreateInstanceProfile",
    }
)
"""IAM actions that let a principal grant itself more than it has (the privilege-escalation methods
of Rhino Security Labs' "AWS IAM Privilege Escalation - Methods and Mitigations", which
``pmapper`` and Cloudsplaining also flag). The policy grants none of them on ``Resource: "*"``
without a condition (``tests/test_deployer_policy.py``)."""


def deployer_policy(
    with_network: bool = True,
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    efa: bool = False,
    cluster_name: str = "*",
    partition: str = "aws",
) -> dict[str, Any]:
    """The policy document. ``with_network=False`` for stacks with ``network.vpcId``;
    ``provisioner`` as the stack's ``gpupools:provisioner``: the SQS, EventBridge and IAM policy
    actions only for Karpenter, the ASG tag writes and the inline role policy only for
    cluster-autoscaler; ``efa`` for stacks with an ``efa: true`` pool (placement group and EFA
    security group actions); ``cluster_name`` scopes the role actions to the stack's roles (default
    ``*``: any cluster's ``<cluster>-*`` roles, for a CI role shared by several stacks);
    ``partition`` for GovCloud (``aws-us-gov``) or China (``aws-cn``)."""
    karpenter = provisioner is Provisioner.KARPENTER
    writes = [*(NETWORK_ACTIONS if with_network else ()), *EC2_ACTIONS, *EKS_ACTIONS]
    if efa:
        writes += EFA_ACTIONS
    if karpenter:
        writes += [*KARPENTER_ACTIONS, "autoscaling:DeleteTags"]
    else:
        writes += [a for a in AUTOSCALING_ACTIONS if not a.split(":")[1].startswith("Describe")]
    reads = [*EC2_READ_ACTIONS, *EKS_READ_ACTIONS, *IAM_READ_ACTIONS, *OTHER_READ_ACTIONS]
    reads += [*(KARPENTER_READ_ACTIONS if karpenter else ())]
    reads += [a for a in AUTOSCALING_ACTIONS if a.split(":")[1].startswith("Describe")]
    if efa:
        reads += EFA_READ_ACTIONS
    roles = stack_role_arns(cluster_name, provisioner, partition)
    statements: list[dict[str, Any]] = [
        {"Sid": "Deploy", "Effect": "Allow", "Action": sorted(writes), "Resource": "*"},
        {"Sid": "Read", "Effect": "Allow", "Action": sorted(reads), "Resource": "*"},
        {"Sid": "StackRoles", "Effect": "Allow", "Action": sorted(IAM_ROLE_ACTIONS), "Resource": roles},
        {
            "Sid": "AttachOnlyTheStacksPolicies",
            "Effect": "Allow",
            "Action": "iam:AttachRolePolicy",
            "Resource": roles,
            "Condition": {"ArnLike": {"iam:PolicyARN": attachable_policy_arns(provisioner, partition)}},
        },
        {
            "Sid": "OidcProvider",
            "Effect": "Allow",
            "Action": sorted(OIDC_PROVIDER_ACTIONS),
            "Resource": f"arn:{partition}:iam::{ACCOUNT}:oidc-provider/oidc.eks.*",
        },
        {
            "Sid": "PassStackRolesToEksAndEc2",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": roles,
            "Condition": {"StringEquals": {"iam:PassedToService": list(PASSED_TO_SERVICES)}},
        },
        {
            "Sid": "ServiceLinkedRoles",
            "Effect": "Allow",
            "Action": "iam:CreateServiceLinkedRole",
            "Resource": "*",
            "Condition": {"StringEquals": {"iam:AWSServiceName": list(SERVICE_LINKED_ROLES)}},
        },
    ]
    if karpenter:
        statements.append(
            {
                "Sid": "KarpenterPolicies",
                "Effect": "Allow",
                "Action": sorted(KARPENTER_POLICY_ACTIONS),
                "Resource": stack_policy_arns(partition),
            }
        )
    else:
        # cluster-autoscaler's IRSA role is the only role with an inline policy (iam.py).
        statements.append(
            {
                "Sid": "AutoscalerInlinePolicy",
                "Effect": "Allow",
                "Action": "iam:PutRolePolicy",
                "Resource": f"arn:{partition}:iam::{ACCOUNT}:role/{AUTOSCALER_COMPONENT}-*",
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def all_actions(document: dict[str, Any]) -> set[str]:
    """Every action a policy document allows (``Action`` as a string or a list)."""
    found: set[str] = set()
    for statement in document["Statement"]:
        actions = statement["Action"]
        found.update([actions] if isinstance(actions, str) else actions)
    return found


def policy_for(spec: StackSpec, partition: str = "aws") -> dict[str, Any]:
    """The policy a validated stack config needs (its network, provisioner, EFA pools and cluster name)."""
    return deployer_policy(
        with_network=not spec.network.bring_your_own,
        provisioner=spec.provisioner,
        efa=any(pool.efa for pool in spec.gpu_pools),
        cluster_name=spec.cluster.name,
        partition=partition,
    )


def main(argv: list[str]) -> int:
    """``[--cluster-name NAME] [--existing-vpc] [--efa] [--provisioner cluster-autoscaler|karpenter]
    [--partition aws]``; prints the policy as JSON."""
    parser = argparse.ArgumentParser(prog="python -m gpupools.aws.deployer_policy", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cluster-name",
        default="*",
        help="the stack's gpupools:cluster.name: role actions only on its roles (default: any cluster's)",
    )
    parser.add_argument("--existing-vpc", action="store_true", help="a stack with network.vpcId: no VPC actions")
    parser.add_argument("--efa", action="store_true", help="a stack with an efa: true pool")
    parser.add_argument(
        "--provisioner",
        choices=[p.value for p in Provisioner],
        default=Provisioner.CLUSTER_AUTOSCALER.value,
        help="the stack's gpupools:provisioner (default: %(default)s)",
    )
    parser.add_argument("--partition", default="aws", help="aws, aws-us-gov or aws-cn (default: %(default)s)")
    args = parser.parse_args(argv)
    document = deployer_policy(not args.existing_vpc, Provisioner(args.provisioner), args.efa, args.cluster_name, args.partition)
    print(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
