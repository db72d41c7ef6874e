"""The IAM policy the identity running ``pulumi up`` on an EKS stack needs, as a real policy document.

Print it with ``python -m gpupools.aws.deployer_policy`` (``--existing-vpc`` without the VPC
actions, ``--provisioner karpenter`` for a stack with ``gpupools:provisioner: karpenter``) and attach
it to the CI role (``AWS_ROLE_ARN``) or a person's role; ``policy_for(spec)`` picks both from a
validated stack config. It covers create, read, update and delete of everything the EKS stack
registers (``tests/snapshots/aws-dev.json``, ``tests/snapshots/aws-karpenter-dev.json``), so the
same policy also lets ``pulumi refresh`` and ``pulumi destroy`` finish:

* the VPC, subnets, internet and NAT gateways, Elastic IPs and route tables (not needed with
  ``network.vpcId``), and the node launch templates;
* the EKS cluster (through pulumi-eks: its IAM role and OIDC provider for IRSA, the ``vpc-cni`` and
  ``kube-proxy`` add-ons), the CoreDNS add-on, node groups and the node role's access entry;
* IAM roles with managed and inline policies (cluster, node, cluster-autoscaler IRSA role), and
  ``iam:PassRole`` only to EKS and EC2 (``iam:PassedToService``);
* the service-linked roles EKS, managed node groups, Auto Scaling and Spot create on first use
  (``iam:CreateServiceLinkedRole`` limited by ``iam:AWSServiceName``);
* cluster-autoscaler mode: the node-template tags on each node group's Auto Scaling group;
* Karpenter mode (``KARPENTER_ACTIONS``, only in that policy): the interruption queue (SQS) and its
  queue policy, the EventBridge rules and their targets, the controller's customer-managed IAM
  policies, and the discovery tag on the cluster security group (``ec2:CreateTags``, common);
* the read-only calls the program and the preflight make (zones, caller identity, node group and
  ASG sizes for ``live_capacity``, add-on and Kubernetes versions, instance type offerings).

Resources are ``*`` except where the action supports a useful condition: most create calls cannot
be scoped to ARNs that do not exist yet, and the tag-based conditions that could narrow them need
tags on every resource at create time, which the pulumi-eks component does not set on all of its
children. ``tests/test_deployer_policy.py`` checks every action against botocore's service models
(so a typo or a removed API fails the build) and that every action the preflight simulates is here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

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

IAM_ACTIONS = (
    "iam:CreateRole",
    "iam:DeleteRole",
    "iam:GetRole",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:AttachRolePolicy",
    "iam:DetachRolePolicy",
    "iam:ListAttachedRolePolicies",
    "iam:PutRolePolicy",
    "iam:GetRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:ListRolePolicies",
    "iam:ListInstanceProfilesForRole",
    "iam:CreateOpenIDConnectProvider",
    "iam:GetOpenIDConnectProvider",
    "iam:DeleteOpenIDConnectProvider",
    "iam:TagOpenIDConnectProvider",
    "iam:UpdateOpenIDConnectProviderThumbprint",
    "iam:SimulatePrincipalPolicy",
)
"""``SimulatePrincipalPolicy`` is the preflight's permission check, not ``pulumi up``'s."""

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
    "iam:CreatePolicy",
    "iam:DeletePolicy",
    "iam:CreatePolicyVersion",
    "iam:DeletePolicyVersion",
    "iam:TagPolicy",
    "iam:UntagPolicy",
)
"""Karpenter mode's writes (``gpupools.aws.karpenter``): ``aws.sqs.Queue`` (create, then its
attributes and tags; the queue policy is the ``Policy`` attribute, ``SetQueueAttributes``),
``aws.cloudwatch.EventRule`` and ``EventTarget``, ``aws.iam.Policy`` (an update is a new default
version; IAM keeps 5, so the oldest is deleted first; a delete removes the non-default versions,
then the policy). The Terraform AWS provider's calls for these resources, which pulumi-aws
bridges: ``internal/service/sqs/queue.go``, ``queue_policy.go``, ``internal/service/events/rule.go``,
``target.go``, ``internal/service/iam/policy.go``."""

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
"""``iam:PassRole`` is allowed only toward these: the cluster and node roles go to EKS."""

SERVICE_LINKED_ROLES = (
    "eks.amazonaws.com",
    "eks-nodegroup.amazonaws.com",
    "autoscaling.amazonaws.com",
    "spot.amazonaws.com",
)
"""Service-linked roles created on first use in an account (EKS, managed node groups, the node
groups' Auto Scaling groups, Spot Instances)."""


def deployer_policy(with_network: bool = True, provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER) -> dict[str, Any]:
    """The policy document. ``with_network=False`` for stacks with ``network.vpcId``;
    ``provisioner`` as the stack's ``gpupools:provisioner``: the SQS, EventBridge and IAM policy
    actions only for Karpenter, the ASG tag writes only for cluster-autoscaler."""
    karpenter = provisioner is Provisioner.KARPENTER
    writes = [*(NETWORK_ACTIONS if with_network else ()), *EC2_ACTIONS, *EKS_ACTIONS, *IAM_ACTIONS]
    if karpenter:
        writes += [*KARPENTER_ACTIONS, "autoscaling:DeleteTags"]
    else:
        writes += [a for a in AUTOSCALING_ACTIONS if not a.split(":")[1].startswith("Describe")]
    reads = [*EC2_READ_ACTIONS, *EKS_READ_ACTIONS, *OTHER_READ_ACTIONS, *(KARPENTER_READ_ACTIONS if karpenter else ())]
    reads += [a for a in AUTOSCALING_ACTIONS if a.split(":")[1].startswith("Describe")]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Deploy", "Effect": "Allow", "Action": sorted(writes), "Resource": "*"},
            {"Sid": "Read", "Effect": "Allow", "Action": sorted(reads), "Resource": "*"},
            {
                "Sid": "PassRolesToEksAndEc2",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:PassedToService": list(PASSED_TO_SERVICES)}},
            },
            {
                "Sid": "ServiceLinkedRoles",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": list(SERVICE_LINKED_ROLES)}},
            },
        ],
    }


def all_actions(document: dict[str, Any]) -> set[str]:
    """Every action a policy document allows (``Action`` as a string or a list)."""
    found: set[str] = set()
    for statement in document["Statement"]:
        actions = statement["Action"]
        found.update([actions] if isinstance(actions, str) else actions)
    return found


def policy_for(spec: StackSpec) -> dict[str, Any]:
    """The policy a validated stack config needs (its network and its provisioner)."""
    return deployer_policy(with_network=not spec.network.bring_your_own, provisioner=spec.provisioner)


def main(argv: list[str]) -> int:
    """``[--existing-vpc] [--provisioner cluster-autoscaler|karpenter]``; prints the policy as JSON."""
    parser = argparse.ArgumentParser(prog="python -m gpupools.aws.deployer_policy", description=__doc__.splitlines()[0])
    parser.add_argument("--existing-vpc", action="store_true", help="a stack with network.vpcId: no VPC actions")
    parser.add_argument(
        "--provisioner",
        choices=[p.value for p in Provisioner],
        default=Provisioner.CLUSTER_AUTOSCALER.value,
        help="the stack's gpupools:provisioner (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    print(json.dumps(deployer_policy(not args.existing_vpc, Provisioner(args.provisioner)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
