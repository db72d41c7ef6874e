"""The IAM policy the identity running ``pulumi up`` on an EKS stack needs, as a real policy document.

Print it with ``python -m gpupools.aws.deployer_policy --cluster-name <gpupools:cluster.name>
--permissions-boundary <gpupools:cluster.permissionsBoundary>`` (``--existing-vpc`` without the VPC
actions, ``--provisioner karpenter`` or ``--provisioner auto-mode`` for a stack with that
``gpupools:provisioner``, ``--efa`` with an ``efa: true`` pool) and attach it to the CI role
(``AWS_ROLE_ARN``) or a person's role; ``policy_for(spec)`` picks all of them from a validated stack
config. ``--cluster-name`` is required and takes no wildcard: one policy per cluster. It covers
create, read, update and delete of everything the EKS stack registers
(``tests/snapshots/aws-dev.json``, ``tests/snapshots/aws-karpenter-dev.json``,
``tests/snapshots/aws-auto-dev.json``), so the same policy also lets ``pulumi refresh`` and
``pulumi destroy`` finish:

* the VPC, subnets, internet and NAT gateways, Elastic IPs and route tables (not needed with
  ``network.vpcId``), and the node launch templates;
* the EKS cluster (through pulumi-eks: its IAM role and OIDC provider for IRSA, the ``vpc-cni`` and
  ``kube-proxy`` add-ons), the CoreDNS add-on, node groups and the access entries;
* IAM roles with managed and inline policies (cluster service role, node role, the provisioner's
  IRSA role), and ``iam:PassRole`` of the service and node roles to EKS only;
* the service-linked roles EKS, managed node groups, Auto Scaling and Spot create on first use
  (``iam:CreateServiceLinkedRole`` limited by ``iam:AWSServiceName``);
* cluster-autoscaler mode: the node-template tags on each node group's Auto Scaling group;
* Karpenter mode (``KARPENTER_ACTIONS``, only in that policy): the interruption queue (SQS) and its
  queue policy, the EventBridge rules and their targets, the controller's customer-managed IAM
  policies, the discovery tag on the cluster security group (``ec2:CreateTags``, common), and taking
  the node role out of Karpenter's instance profiles when it is deleted;
* EKS Auto Mode (``AUTO_MODE``: ``gpupools.aws.auto_mode``), which has less: the cluster (created with
  ``computeConfig``, ``storageConfig`` and ``elasticLoadBalancing``, all in ``eks:CreateCluster``),
  its service role with the four Auto Mode policies, the Auto Mode node role
  (``<cluster>-auto-node-role-*``) with its two policies, that role's ``EC2`` access entry and its
  ``AmazonEKSAutoNodePolicy`` access policy, and the OIDC provider. No node group, launch template,
  add-on, Auto Scaling tag, controller role, inline or customer-managed policy, queue or rule, so
  none of their actions (``NODE_GROUP_EKS_ACTIONS``, ``LAUNCH_TEMPLATE_READ_ACTIONS``), and no
  ``ec2:RunInstances`` either; the one addition is taking the node role out of the instance profiles
  Auto Mode made for it when it is deleted (``auto_mode_instance_profile_arns``);
* the read-only calls the program and the preflight make (zones, caller identity, node group and
  ASG sizes for ``live_capacity``, add-on and Kubernetes versions, instance type offerings).

What stays on ``Resource: "*"`` (the ``Deploy`` statement; ``tests/test_deployer_policy.py`` pins
the list with ``parliament``'s ``RESOURCE_STAR`` check, so it cannot grow unnoticed):

* ``eks:CreateCluster`` (no resource type in the service authorization reference);
* ``ec2:RunInstances`` (``EC2_ACTIONS``: without ``iam:PassRole`` to EC2 it launches nothing with
  an instance profile; not under Auto Mode, which has no Auto Scaling group);
* nothing of the created VPC or an EFA pool's placement group and security group: their creates are
  granted on the created resource's type only (``NETWORK_CREATES``, ``EFA_CREATES``: its ARN does not
  exist yet, so no tag can be checked on it), and any part of the request that names an existing
  resource (the VPC a subnet goes into, the subnet and address of a NAT gateway, the group a rule
  goes into), like every modify and delete (``NETWORK_WRITES``, ``EFA_WRITES``), only where that
  resource carries the stack tag ``gpupools.io/cluster=<name>`` (``aws:ResourceTag``, which the
  service authorization reference lists for each of these actions' resource types); the stack puts
  that tag on every such resource it creates;
* the service-linked roles (``iam:CreateServiceLinkedRole``, only for the four services named);
  the OIDC provider actions on EKS issuers' ARNs (``oidc-provider/oidc.eks.*``: the issuer ID is
  not known before the cluster exists, so this reaches every EKS cluster's IRSA provider in the
  account).

Everything else is scoped to the cluster's own resources, each on the resource type the IAM service
authorization reference gives the action (a linter, ``parliament``, checks that in the tests):

* launch templates: created only with the stack tag ``gpupools.io/cluster=<name>`` in the request,
  and versioned, modified, tagged and deleted only where they carry it (``LAUNCH_TEMPLATE_ACTIONS``,
  ``gpupools.aws.stack_tag``); ``ec2:CreateTags``/``DeleteTags`` otherwise only on the EC2 types the
  stack tags (``TAGGED_EC2_TYPES``);
* Auto Scaling group tags only on the cluster's own groups (``AUTOSCALING_TAG_WRITES``);
* Karpenter's queue and EventBridge rules only by their ``<name>-karpenter-`` names;
* EKS writes on ``cluster/<name>`` and its ``nodegroup``, ``access-entry`` and ``addon`` ARNs, so
  no access entry or cluster change reaches another cluster of the account;
* role writes (``IAM_ROLE_ACTIONS``, ``BOUNDED_ROLE_ACTIONS``) only on the cluster's roles
  (``stack_role_arns``: its node, service and controller roles by name; under Auto Mode its service
  and Auto Mode node roles), ``iam:PassRole`` only of the service and node roles (under Auto Mode
  the service role alone) and only to EKS;
* ``iam:AttachRolePolicy`` only on those roles and only of the policies the stack attaches
  (``iam:PolicyARN``: five AWS managed policies and, under Karpenter, the cluster's own controller
  policies; under Auto Mode the seven of ``AUTO_MODE_POLICIES``), so ``AdministratorAccess`` can
  never be attached;
* ``iam:PutRolePolicy`` only on cluster-autoscaler's role (the one inline policy); Karpenter's policy
  writes (``KARPENTER_POLICY_ACTIONS``) only on the cluster's ``<cluster>-karpenter-<key>-*``
  policies; ``iam:RemoveRoleFromInstanceProfile`` only on the cluster's Karpenter instance profiles;
* with ``--permissions-boundary``: every role write that IAM lets a policy condition on the role's
  boundary (``CreateRole``, ``PutRolePolicy``, ``AttachRolePolicy``, ``DetachRolePolicy``,
  ``DeleteRolePolicy``, ``PutRolePermissionsBoundary``) requires ``iam:PermissionsBoundary`` to be
  that ARN, and ``iam:DeleteRolePermissionsBoundary`` is never granted.

What a name scope cannot stop, and only the boundary does: the deployer may write any inline policy
into cluster-autoscaler's role, or a new default version of a Karpenter policy, and then use that
role through its service account (the deployer is cluster admin). Under Auto Mode there is no such
policy to write, but the cluster role carries ``AmazonEKSComputePolicy``, which passes any role to
EC2, and the deployer may make that role trust itself or name another role in a NodeClass
(``AUTO_MODE_UNBOUNDED_WARNING``). With the boundary those roles stay under it; without, ``main``
prints what the policy still allows (``unbounded_warning``) and docs/safety.md ("Deployer
permissions") says the same.
``tests/test_deployer_policy.py`` checks every action against botocore's service models (so a typo
or a removed API fails the build), that every action the preflight simulates is here, that every
resource type and every role and policy name each example stack registers is covered, that no
escalation action is on ``*`` without a condition, that with a boundary no role write goes without
it, and that ``parliament`` finds no action on a resource of the wrong type.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from gpupools.aws.auto_mode import CLUSTER_ROLE_POLICIES as AUTO_MODE_CLUSTER_POLICIES
from gpupools.aws.auto_mode import NODE_MANAGED_POLICIES as AUTO_MODE_NODE_POLICIES
from gpupools.aws.iam import CLUSTER_POLICY, NODE_MANAGED_POLICIES, ownership_tag, service_role_name
from gpupools.aws.karpenter import DISCOVERY_TAG, queue_name_prefix
from gpupools.aws.karpenter_iam import CONTROLLER_POLICIES
from gpupools.aws.stack_tag import STACK_TAG
from gpupools.errors import ConfigError
from gpupools.rules import IAM_POLICY_ARN
from gpupools.specs import Provisioner, StackSpec

NETWORK_CREATES = {
    "ec2:CreateVpc": "vpc",
    "ec2:CreateSubnet": "subnet",
    "ec2:CreateInternetGateway": "internet-gateway",
    "ec2:AllocateAddress": "elastic-ip",
    "ec2:CreateNatGateway": "natgateway",
    "ec2:CreateRouteTable": "route-table",
}
"""The created VPC's creates (``gpupools.aws.network``), each with the resource type it creates: granted
on that type's ARNs without a condition (nothing to check on a resource that does not exist yet);
the existing resources such a request names are ``NETWORK_TYPES`` with the stack tag."""

NETWORK_WRITES = (
    "ec2:DeleteVpc",
    "ec2:ModifyVpcAttribute",
    "ec2:DeleteSubnet",
    "ec2:ModifySubnetAttribute",
    "ec2:AttachInternetGateway",
    "ec2:DetachInternetGateway",
    "ec2:DeleteInternetGateway",
    "ec2:ReleaseAddress",
    "ec2:DisassociateAddress",
    "ec2:DeleteNatGateway",
    "ec2:DeleteRouteTable",
    "ec2:CreateRoute",
    "ec2:DeleteRoute",
    "ec2:AssociateRouteTable",
    "ec2:DisassociateRouteTable",
)
"""Writes on the created VPC's existing parts: only where they carry the stack tag."""

NETWORK_TYPES = ("vpc", "subnet", "internet-gateway", "elastic-ip", "natgateway", "route-table")
"""The EC2 resource types of the created VPC (each carries the stack tag, ``gpupools.aws.network``)."""

NETWORK_ACTIONS = (*NETWORK_CREATES, *NETWORK_WRITES)
"""The created VPC (``gpupools.aws.network``); not needed with ``network.vpcId``."""

NETWORK_INTERFACE_ACTIONS = ("ec2:DisassociateAddress",)
"""Actions that may also name a network interface (``DisassociateAddress``: the NAT gateway's, which
AWS manages and which carries no tag of ours); the elastic IP they act on must be the stack's."""

EC2_ACTIONS = ("ec2:RunInstances",)
"""On ``*``. EC2 Auto Scaling checks ``ec2:RunInstances`` for whoever creates or updates an Auto
Scaling group from a launch template (EC2 Auto Scaling user guide, "Launch template permissions").
EKS creates a managed node group's ASG with its service-linked role, and whether ``CreateNodegroup``
also checks the caller is not documented, so it is granted: denying it would fail only at the first
node group, after the cluster's 10+ minutes. It cannot reach another workload's identity: an
instance with an instance profile needs ``iam:PassRole`` of its role to EC2, which the policy never
grants (``PASSED_TO_SERVICES``). Not under Auto Mode: no node group, so no Auto Scaling group of the
deployer's; Auto Mode launches its nodes with the cluster role (``AmazonEKSComputePolicy``)."""

LAUNCH_TEMPLATE_ACTIONS = (
    "ec2:CreateLaunchTemplateVersion",
    "ec2:ModifyLaunchTemplate",
    "ec2:DeleteLaunchTemplate",
    "ec2:CreateTags",
    "ec2:DeleteTags",
)
"""Writes on an existing launch template: only on the stack's own, those tagged
``gpupools.io/cluster=<cluster>`` (``aws:ResourceTag``; ``gpupools.aws.stack_tag``). On any other
template a new version would run the deployer's user data in every Auto Scaling group on
``$Latest``/``$Default``, with that group's instance profile (third EKS review, T4)."""

LAUNCH_TEMPLATE_CREATE = "ec2:CreateLaunchTemplate"
"""Only with the stack tag in the request (``aws:RequestTag/gpupools.io/cluster``); its tags are
written by ``ec2:CreateTags`` with ``ec2:CreateAction`` ``CreateLaunchTemplate`` (EC2 User Guide,
"Grant permission to tag Amazon EC2 resources during creation")."""

TAGGED_EC2_TYPES = (
    "vpc",
    "subnet",
    "internet-gateway",
    "route-table",
    "elastic-ip",
    "natgateway",
    "security-group",
    "security-group-rule",
    "placement-group",
)
"""The EC2 resource types whose tags the stack writes besides its launch templates: the created
VPC's parts, an EFA pool's security group and placement group, and Karpenter's discovery tag on the
private subnets and the cluster security group. ``ec2:CreateTags``/``DeleteTags`` are granted on
these types' ARNs, not on ``*``, so never on a launch template without the stack tag."""

EFA_CREATES = {
    "ec2:CreatePlacementGroup": "placement-group",
    "ec2:CreateSecurityGroup": "security-group",
    "ec2:AuthorizeSecurityGroupIngress": "security-group-rule",
    "ec2:AuthorizeSecurityGroupEgress": "security-group-rule",
}
"""An EFA pool's creates, each with the type it creates (a rule is created inside an existing group,
which must carry the stack tag)."""

EFA_WRITES = (
    "ec2:DeletePlacementGroup",
    "ec2:DeleteSecurityGroup",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupEgress",
    "ec2:ModifySecurityGroupRules",
)
"""Writes on an EFA pool's existing placement group, security group and its rules: only where they
carry the stack tag (the rules carry it too, ``node_group.create_efa_network``)."""

EFA_TYPES = ("placement-group", "security-group", "security-group-rule")

NETWORK_RESOURCE_TYPES: dict[str, tuple[str, ...]] = {
    # The IAM service authorization reference's required resource types of each (Amazon EC2).
    "ec2:CreateVpc": ("vpc",),
    "ec2:CreateSubnet": ("subnet", "vpc"),
    "ec2:CreateInternetGateway": ("internet-gateway",),
    "ec2:AllocateAddress": ("elastic-ip",),
    "ec2:CreateNatGateway": ("natgateway", "subnet"),
    "ec2:CreateRouteTable": ("route-table", "vpc"),
    "ec2:DeleteVpc": ("vpc",),
    "ec2:ModifyVpcAttribute": ("vpc",),
    "ec2:DeleteSubnet": ("subnet",),
    "ec2:ModifySubnetAttribute": ("subnet",),
    "ec2:AttachInternetGateway": ("internet-gateway", "vpc"),
    "ec2:DetachInternetGateway": ("internet-gateway", "vpc"),
    "ec2:DeleteInternetGateway": ("internet-gateway",),
    "ec2:ReleaseAddress": ("elastic-ip",),
    "ec2:DisassociateAddress": ("elastic-ip",),
    "ec2:DeleteNatGateway": ("natgateway",),
    "ec2:DeleteRouteTable": ("route-table",),
    "ec2:CreateRoute": ("route-table",),
    "ec2:DeleteRoute": ("route-table",),
    "ec2:AssociateRouteTable": ("route-table",),
    "ec2:DisassociateRouteTable": ("route-table",),
    "ec2:CreatePlacementGroup": ("placement-group",),
    "ec2:CreateSecurityGroup": ("security-group",),
    "ec2:AuthorizeSecurityGroupIngress": ("security-group",),
    "ec2:AuthorizeSecurityGroupEgress": ("security-group",),
    "ec2:DeletePlacementGroup": ("placement-group",),
    "ec2:DeleteSecurityGroup": ("security-group",),
    "ec2:RevokeSecurityGroupIngress": ("security-group",),
    "ec2:RevokeSecurityGroupEgress": ("security-group",),
    "ec2:ModifySecurityGroupRules": ("security-group", "security-group-rule"),
}
"""The EC2 resource types each network and EFA action is authorized on: what the preflight simulates
it on (``gpupools.preflight.aws.simulation_resources``)."""

EFA_ACTIONS = (*EFA_CREATES, *(a for a in EFA_WRITES if a not in EFA_CREATES))
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

EKS_CREATE_ACTIONS = ("eks:CreateCluster",)
"""On ``*``: ``CreateCluster`` has no resource type in the IAM service authorization reference
(Amazon EKS, "Actions defined by Amazon EKS"); its ARN does not exist yet."""

EKS_CLUSTER_ACTIONS = (
    "eks:DeleteCluster",
    "eks:UpdateClusterConfig",
    "eks:UpdateClusterVersion",
    "eks:CreateNodegroup",
    "eks:CreateAccessEntry",
    "eks:CreateAddon",
    "eks:TagResource",
    "eks:UntagResource",
)
"""On the stack's cluster (``cluster/<name>``: the service reference's resource type ``cluster*`` of
each; a node group, access entry and add-on are created on their cluster)."""

EKS_CHILD_ACTIONS = (
    "eks:DeleteNodegroup",
    "eks:UpdateNodegroupConfig",
    "eks:UpdateNodegroupVersion",
    "eks:DeleteAccessEntry",
    "eks:UpdateAccessEntry",
    "eks:AssociateAccessPolicy",
    "eks:DisassociateAccessPolicy",
    "eks:DeleteAddon",
    "eks:UpdateAddon",
    "eks:TagResource",
    "eks:UntagResource",
)
"""On the stack's cluster's node groups, access entries and add-ons (resource types ``nodegroup*``,
``access-entry*``, ``addon*``; ARNs ``nodegroup/<cluster>/<name>/<uuid>``,
``access-entry/<cluster>/<type>/<account>/<name>/<uuid>``, ``addon/<cluster>/<name>/<uuid>``)."""

NODE_GROUP_EKS_ACTIONS = (
    "eks:CreateNodegroup",
    "eks:DeleteNodegroup",
    "eks:UpdateNodegroupConfig",
    "eks:UpdateNodegroupVersion",
    "eks:CreateAddon",
    "eks:DeleteAddon",
    "eks:UpdateAddon",
)
"""The node group and add-on writes of ``EKS_CLUSTER_ACTIONS`` and ``EKS_CHILD_ACTIONS``: an Auto Mode
stack has neither (no node group; ``auto_mode.auto_mode_cluster_args`` turns the VPC CNI, kube-proxy
and CoreDNS add-ons off, Auto Mode's nodes run them), so its policy leaves them out, and its
``StackClusterParts`` reach the cluster's access entries only."""

EKS_ACTIONS = (*EKS_CREATE_ACTIONS, *EKS_CLUSTER_ACTIONS, *(a for a in EKS_CHILD_ACTIONS if a not in EKS_CLUSTER_ACTIONS))
"""Every EKS write of the stack."""

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

LAUNCH_TEMPLATE_READ_ACTIONS = ("ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions")
"""The launch templates' reads (refresh): left out under Auto Mode, which has no launch template of the
stack's (``EC2_READ_ACTIONS`` keeps them for the other provisioners)."""

IAM_ROLE_ACTIONS = (
    "iam:DeleteRole",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateRole",
    "iam:UpdateRoleDescription",
    "iam:UpdateAssumeRolePolicy",
)
"""Writes on the stack's own roles (``stack_role_arns``) that cannot take the
``iam:PermissionsBoundary`` condition: the IAM service authorization reference lists no such key for
them. None of them can give a role a permission (a trust policy says who may assume the role, not
what it may do), so with a boundary every permission of the roles stays under it."""

BOUNDED_ROLE_ACTIONS = (
    "iam:CreateRole",
    "iam:PutRolePermissionsBoundary",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
)
"""Role writes whose service authorization reference entry lists ``iam:PermissionsBoundary``
(with ``iam:AttachRolePolicy`` and ``iam:PutRolePolicy``, which have their own statements): with
``--permissions-boundary`` each requires the role to carry (or, for ``CreateRole`` and
``PutRolePermissionsBoundary``, to be given) exactly that boundary, the pattern of the IAM user guide
("Permissions boundaries for IAM entities", delegating with a boundary: create and change only with
the boundary). ``PutRolePermissionsBoundary`` only with a boundary (the provider calls it when a
boundary is added to an existing role). ``iam:DeleteRolePermissionsBoundary`` is never granted, so
taking the boundary off the stack's roles again (removing ``permissionsBoundary``) needs an
administrator."""

NEVER_GRANTED = ("iam:DeleteRolePermissionsBoundary",)
"""Removing a role's boundary would lift every bound at once."""

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
node-template tags removes them on its next ``pulumi up``. The tag writes only on the cluster's own
groups (``AUTOSCALING_TAG_WRITES``)."""

AUTOSCALING_TAG_WRITES = ("autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags")
"""Only on Auto Scaling groups tagged ``k8s.io/cluster-autoscaler/<cluster>=owned``
(``autoscaling:ResourceTag``), the tag EKS puts on every managed node group's group and the one
cluster-autoscaler's own policy scopes ``SetDesiredCapacity`` by (``iam.ownership_tag``). On any
other group, adding that tag would hand the group to this cluster's cluster-autoscaler, instances
and all (third EKS review, T4)."""

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
``internal/service/events/rule.go``, ``target.go``. Only on the cluster's queue and rules, by name
(``karpenter_resource_arns``: both are named ``<cluster>-karpenter-<unique suffix>``); on ``*``,
``SetQueueAttributes`` could rewrite any queue's resource policy and ``PutTargets`` redirect any
rule (third EKS review, T4). Neither SQS queues nor EventBridge rules take a tag condition on these
actions (service authorization reference), so the scope is the name."""

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

PASSED_TO_SERVICES = ("eks.amazonaws.com",)
"""``iam:PassRole`` is allowed only toward EKS, and only for the cluster's service role and the node
role: ``CreateCluster`` takes the service role and ``CreateNodegroup`` the node role, both passed to
EKS (``eks.amazonaws.com``, the value AWS's EKS policy examples condition ``PassRole`` on). No call
of the stack passes a role to EC2: Karpenter passes the node role itself, with its own policy, and
so does EKS Auto Mode, with the cluster role's ``AmazonEKSComputePolicy`` (``passed_role_arns``)."""

SERVICE_LINKED_ROLES = (
    "eks.amazonaws.com",
    "eks-nodegroup.amazonaws.com",
    "autoscaling.amazonaws.com",
    "spot.amazonaws.com",
)
"""Service-linked roles created on first use in an account (EKS, managed node groups, the node
groups' Auto Scaling groups, Spot Instances)."""

AUTO_MODE_SERVICE_LINKED_ROLES = ("eks.amazonaws.com", "spot.amazonaws.com")
"""Under Auto Mode: EKS's (``CreateCluster``) and Spot's, which the preflight's ``spot-role`` row asks
for and whose fix it names (``aws iam create-service-linked-role --aws-service-name
spot.amazonaws.com``; EKS may also create it itself, ``AmazonEKSComputePolicy`` allows it). No managed
node group and no Auto Scaling group, so neither of their service-linked roles."""

AUTO_MODE_NODE_ROLE = "auto-node-role"
"""The Auto Mode node role's name after the cluster name, ``<cluster>-auto-node-role-<7 characters>``
(``auto_mode.AutoModeNodeRole``'s logical name ``f"{name}-auto-node-role"``, ``name`` the
``EksCluster``'s, which ``stacks/aws.py`` sets to the cluster name; Pulumi's auto-naming appends the
rest). Not ``<cluster>-node-role-*``, the other provisioners' node role, which an Auto Mode stack
does not have."""

AUTO_MODE_POLICIES = (CLUSTER_POLICY, *AUTO_MODE_CLUSTER_POLICIES, *AUTO_MODE_NODE_POLICIES)
"""The AWS managed policies an Auto Mode stack attaches, and the only ones its policy lets
``iam:AttachRolePolicy`` attach: ``AmazonEKSClusterPolicy`` and the four Auto Mode policies
(``auto_mode.CLUSTER_ROLE_POLICIES``) on the service role, the two of ``auto_mode.NODE_MANAGED_POLICIES``
on the node role. None of the other provisioners' four node policies."""

AUTOSCALER_COMPONENT = "cluster-autoscaler"
KARPENTER_COMPONENT = "karpenter"
"""The names ``stacks/aws.py`` gives the ``ClusterAutoscaler`` and ``Karpenter`` components. Their
IAM roles and policies are auto-named ``<cluster>-<component>-...-<suffix>`` (Pulumi's auto-naming
appends ``-`` and 7 hex digits), the ``EksCluster``'s (node role, cluster service role) from the
component's name, which ``stacks/aws.py`` sets to the cluster name. ``tests/test_deployer_policy.py``
checks that every role and policy each example stack registers falls under ``stack_role_arns`` and
``stack_policy_arns``."""

NODE_AND_CLUSTER_POLICIES = (CLUSTER_POLICY, *NODE_MANAGED_POLICIES)
"""The AWS managed policies the stack attaches: the cluster's service role gets
``AmazonEKSClusterPolicy`` (``gpupools.aws.iam.CLUSTER_POLICY``), the node role the other four
(``gpupools.aws.iam.NODE_MANAGED_POLICIES``)."""

ACCOUNT = "${aws:PrincipalAccount}"
"""The account in the policy's ARNs: a policy variable, the caller's own account (IAM user guide,
"IAM policy elements: Variables and tags"; ``aws:PrincipalAccount`` is a global condition key), so
one document serves every account."""

CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,99}\Z")
"""What ``--cluster-name`` accepts: a gpupools cluster name (``rules.check_cluster``), so never ``*``
or any other wildcard, which would widen every scope below to other clusters' resources."""


def _iam(partition: str, resource: str) -> str:
    return f"arn:{partition}:iam::{ACCOUNT}:{resource}"


def _eks(partition: str, resource: str) -> str:
    return f"arn:{partition}:eks:*:{ACCOUNT}:{resource}"


def passed_role_arns(
    cluster_name: str, partition: str = "aws", provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER
) -> list[str]:
    """The roles the stack passes to EKS: the node role (``<cluster>-node-role-...``,
    ``iam.create_node_role``; ``CreateNodegroup``) and the cluster's service role
    (``<cluster>-eks-eksRole-role-...``, pulumi-eks's or ``iam.create_cluster_service_role``;
    ``CreateCluster``).

    Under Auto Mode the service role alone. The stack sends no ``computeConfig.nodeRoleArn``
    (``auto_mode.auto_mode_cluster_args``: custom pools only) and creates no node group, so no call of
    the deployer's names the node role to EKS: the NodeClass names it (``spec.role``), and EKS adds it
    to an instance profile and passes it to EC2 itself, as the cluster role, whose
    ``AmazonEKSComputePolicy`` allows ``iam:AddRoleToInstanceProfile`` on ``instance-profile/eks*``
    and ``iam:PassRole`` to ``ec2.amazonaws.com``. The access entry takes the role's ARN, which is no
    pass."""
    service_role = _iam(partition, f"role/{service_role_name(cluster_name + '-eks')}-*")
    if provisioner is Provisioner.AUTO_MODE:
        return [service_role]
    return [_iam(partition, f"role/{cluster_name}-node-role-*"), service_role]


def auto_mode_node_role_arn(cluster_name: str, partition: str = "aws") -> str:
    """The Auto Mode node role, by its own name: ``role/<cluster>-auto-node-role-*``
    (``AUTO_MODE_NODE_ROLE``)."""
    return _iam(partition, f"role/{cluster_name}-{AUTO_MODE_NODE_ROLE}-*")


def controller_role_arn(cluster_name: str, provisioner: Provisioner, partition: str = "aws") -> str:
    """The provisioner's IRSA role: ``<cluster>-cluster-autoscaler-role-...`` (``iam.create_irsa_role``)
    or ``<cluster>-karpenter-controller-...`` (``Karpenter``). A ``ValueError`` for Auto Mode, whose
    stack has no controller role (EKS runs Karpenter with the cluster role)."""
    if provisioner is Provisioner.AUTO_MODE:
        raise ValueError("provisioner auto-mode has no controller role: EKS Auto Mode runs Karpenter itself")
    if provisioner is Provisioner.KARPENTER:
        return _iam(partition, f"role/{cluster_name}-{KARPENTER_COMPONENT}-controller-*")
    return _iam(partition, f"role/{cluster_name}-{AUTOSCALER_COMPONENT}-role-*")


def stack_role_arns(cluster_name: str, provisioner: Provisioner, partition: str = "aws") -> list[str]:
    """The ARN patterns of every role a stack of ``cluster_name`` creates: node role, cluster service
    role and its provisioner's controller role, each by its own name (not ``<cluster>-*``, which would
    also cover a cluster named ``<cluster>-something``). Under Auto Mode the Auto Mode node role and the
    service role: no ``<cluster>-node-role-*`` and no controller role."""
    if provisioner is Provisioner.AUTO_MODE:
        return [auto_mode_node_role_arn(cluster_name, partition), *passed_role_arns(cluster_name, partition, provisioner)]
    return [*passed_role_arns(cluster_name, partition), controller_role_arn(cluster_name, provisioner, partition)]


def stack_policy_arns(cluster_name: str, partition: str = "aws") -> list[str]:
    """The ARN patterns of the Karpenter controller's customer-managed policies
    (``<cluster>-karpenter-<key>-...``, one per ``karpenter_iam.CONTROLLER_POLICIES``)."""
    return [_iam(partition, f"policy/{cluster_name}-{KARPENTER_COMPONENT}-{key}-*") for key in CONTROLLER_POLICIES]


def karpenter_instance_profile_arns(cluster_name: str, partition: str = "aws") -> list[str]:
    """The instance profiles Karpenter v1.14.1 makes for the cluster's EC2NodeClasses: path
    ``/karpenter/<region>/<cluster>/<nodeclass uid>/`` (``pkg/controllers/nodeclass/instanceprofile.go``:
    ``instanceprofile.FormatPath("karpenter", region, clusterName, nodeClass.UID)``), name
    ``<cluster>_<hash>`` (``pkg/apis/v1/ec2nodeclass.go``, ``InstanceProfileName``); an instance
    profile's ARN carries its path (``instance-profile/<path><name>``)."""
    return [_iam(partition, f"instance-profile/karpenter/*/{cluster_name}/*/{cluster_name}_*")]


def auto_mode_instance_profile_arns(partition: str = "aws") -> list[str]:
    """The instance profiles EKS Auto Mode makes for a NodeClass's role: ``instance-profile/eks*``, the
    scope AWS's own policies give them (``AmazonEKSServiceRolePolicy``, the EKS service-linked role's:
    ``iam:CreateInstanceProfile``, ``DeleteInstanceProfile``, ``RemoveRoleFromInstanceProfile`` on
    ``arn:aws:iam::*:instance-profile/eks*``; ``AmazonEKSComputePolicy``: ``AddRoleToInstanceProfile``
    on the same). AWS documents no finer name (no cluster name in it, unlike Karpenter's
    ``karpenter_instance_profile_arns``), so this reaches every ``eks*`` instance profile of the
    account, managed node groups' ``eks-<uuid>`` ones included: the deployer could take the role out
    of another cluster's profile, which stops that group's or class's new nodes from getting
    credentials but gives nothing to anyone.

    Why at all: deleting the node role first takes it out of every instance profile it is in
    (terraform-provider-aws ``internal/service/iam/role.go``, ``deleteRoleInstanceProfiles``), and
    Auto Mode's profile can outlive the cluster (aws/containers-roadmap#2531: after ``DeleteCluster``
    has finished, "the EKS-provisioned instance-profile still exists and is still associated with the
    IAM Role I manage for EKS-compute-nodes"); the stack deletes the node role alongside the cluster,
    not after it. Without this ``pulumi destroy`` of an Auto Mode stack stops at the node role."""
    return [_iam(partition, "instance-profile/eks*")]


def karpenter_resource_arns(cluster_name: str, partition: str = "aws") -> list[str]:
    """The interruption queue and the EventBridge rules of the cluster's Karpenter: both named
    ``<cluster>-karpenter-<unique suffix>`` (``karpenter.queue_name_prefix``)."""
    prefix = queue_name_prefix(cluster_name)
    return [f"arn:{partition}:sqs:*:{ACCOUNT}:{prefix}*", f"arn:{partition}:events:*:{ACCOUNT}:rule/{prefix}*"]


def ec2_arn(partition: str, resource_type: str) -> str:
    """Every resource of one EC2 type in the caller's account: ``arn:<p>:ec2:*:<account>:<type>/*``."""
    return f"arn:{partition}:ec2:*:{ACCOUNT}:{resource_type}/*"


def autoscaling_group_arn(partition: str) -> str:
    """Every Auto Scaling group of the caller's account (the tag condition narrows it)."""
    return f"arn:{partition}:autoscaling:*:{ACCOUNT}:autoScalingGroup:*:autoScalingGroupName/*"


def attachable_policy_arns(cluster_name: str, provisioner: Provisioner, partition: str = "aws") -> list[str]:
    """What ``iam:AttachRolePolicy`` may attach (its ``iam:PolicyARN`` condition): the AWS managed
    policies of ``NODE_AND_CLUSTER_POLICIES`` and, under Karpenter, the cluster's own controller
    policies; under Auto Mode the seven of ``AUTO_MODE_POLICIES`` and nothing else. Never
    ``AdministratorAccess`` or any other policy a deployer could lift itself with."""
    if provisioner is Provisioner.AUTO_MODE:
        return [f"arn:{partition}:iam::aws:policy/{name}" for name in AUTO_MODE_POLICIES]
    managed = [f"arn:{partition}:iam::aws:policy/{name}" for name in NODE_AND_CLUSTER_POLICIES]
    return managed + (stack_policy_arns(cluster_name, partition) if provisioner is Provisioner.KARPENTER else [])


PREVIOUS_CONTROLLER_ROLES = {
    Provisioner.CLUSTER_AUTOSCALER: "cluster-autoscaler-role",
    Provisioner.KARPENTER: "karpenter-controller",
}
"""The logical names gpupools 0.2 gave the controller roles (physical names ``<name>-<7 characters>``,
no cluster name, so no pattern can single out one stack's). The first ``up`` after upgrading creates
the new ``<cluster>-...`` ones and deletes these. None for Auto Mode, which 0.2 did not have
(``PREVIOUS_NAMES_AUTO_MODE``)."""

PREVIOUS_NAMES_AUTO_MODE = (
    "--previous-names: provisioner auto-mode did not exist in gpupools 0.2, so an auto-mode stack has no 0.2 "
    "resources to delete or tag (a stack moves to EKS Auto Mode by blue-green, a new stack: docs/auto-mode.md); "
    "leave --previous-names out"
)
"""The error for ``--previous-names`` (``deployer_policy(previous=...)``) under Auto Mode."""

PREVIOUS_RESOURCE_TYPES = {
    "role": "aws:iam/role:Role",
    "policy": "aws:iam/policy:Policy",
    "rule": "aws:cloudwatch/eventRule:EventRule",
    "launch template": "aws:ec2/launchTemplate:LaunchTemplate",
}

PREVIOUS_NETWORK_TYPES = {
    "aws:ec2/vpc:Vpc": "vpc",
    "aws:ec2/subnet:Subnet": "subnet",
    "aws:ec2/internetGateway:InternetGateway": "internet-gateway",
    "aws:ec2/eip:Eip": "elastic-ip",
    "aws:ec2/natGateway:NatGateway": "natgateway",
    "aws:ec2/routeTable:RouteTable": "route-table",
    "aws:ec2/placementGroup:PlacementGroup": "placement-group",
    "aws:ec2/securityGroup:SecurityGroup": "security-group",
}
"""The network and EFA types 0.2 created without the stack tag, with their EC2 ARN resource types. A
NAT gateway's state has no ``arn`` output (terraform-provider-aws ``aws_nat_gateway``), an EIP's may
not: theirs is built from the ID, in the region and account of the stack's other EC2 ARNs."""


@dataclass(frozen=True)
class PreviousResources:
    """The 0.2 resources of one stack that its first ``up`` after upgrading deletes or retags, by ARN,
    read from the stack's own state (``pulumi stack export``): ``--previous-names STATE`` grants those
    writes on exactly these, never on a name pattern that other stacks' resources match (third EKS
    review, t1)."""

    roles: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    launch_templates: tuple[str, ...] = ()
    network: tuple[str, ...] = ()
    """The created VPC's parts and EFA groups without the stack tag: the ``up`` adds it (a tag update)."""


def previous_resources(export: Mapping[str, Any]) -> PreviousResources:
    """The ``PreviousResources`` of a ``pulumi stack export`` document: the 0.2 controller role
    (``PREVIOUS_CONTROLLER_ROLES``), Karpenter's ``karpenter-*`` policies and EventBridge rules, and
    the launch templates that do not carry the stack tag yet; each by its ``arn`` output."""
    resources = (export.get("deployment") or export).get("resources") or []
    found: dict[str, list[str]] = {kind: [] for kind in PREVIOUS_RESOURCE_TYPES}
    for resource in resources:
        name = str(resource.get("urn", "")).rsplit("::", 1)[-1]
        outputs = resource.get("outputs") or {}
        arn = outputs.get("arn")
        kind = next((k for k, t in PREVIOUS_RESOURCE_TYPES.items() if t == resource.get("type")), None)
        if not arn or kind is None:
            continue
        wanted = {
            "role": name in PREVIOUS_CONTROLLER_ROLES.values(),
            "policy": name.startswith(f"{KARPENTER_COMPONENT}-"),
            "rule": name.startswith(f"{KARPENTER_COMPONENT}-"),
            "launch template": STACK_TAG not in (outputs.get("tags") or {}),
        }
        if wanted[kind]:
            found[kind].append(arn)
    return PreviousResources(
        roles=tuple(sorted(found["role"])),
        policies=tuple(sorted(found["policy"])),
        rules=tuple(sorted(found["rule"])),
        launch_templates=tuple(sorted(found["launch template"])),
        network=tuple(sorted(_untagged_network(resources))),
    )


def _untagged_network(resources: Sequence[Mapping[str, Any]]) -> list[str]:
    """ARNs of the exported network and EFA resources without the stack tag (``PREVIOUS_NETWORK_TYPES``)."""
    ec2_arns = [
        str((r.get("outputs") or {}).get("arn") or "") for r in resources if str(r.get("type", "")).startswith("aws:ec2/")
    ]
    prefix = next((a.rsplit(":", 1)[0] for a in ec2_arns if a.startswith("arn:") and ":ec2:" in a), None)
    found = []
    for resource in resources:
        kind = PREVIOUS_NETWORK_TYPES.get(str(resource.get("type")))
        outputs = resource.get("outputs") or {}
        if kind is None or STACK_TAG in (outputs.get("tags") or {}):
            continue
        arn = outputs.get("arn") or (f"{prefix}:{kind}/{resource.get('id') or outputs.get('id')}" if prefix else None)
        if arn:
            found.append(str(arn))
    return found


def read_previous_resources(path: str) -> PreviousResources:
    """``previous_resources`` of the ``pulumi stack export`` JSON at ``path`` (``-``: standard input);
    ConfigError naming ``--previous-names`` for a file that is not one."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError("--previous-names", f"must be the JSON of `pulumi stack export` ({error})", path) from None
    if not isinstance(document, dict) or not isinstance((document.get("deployment") or document).get("resources"), list):
        raise ConfigError("--previous-names", "must be the JSON of `pulumi stack export` (no deployment.resources)", path)
    return previous_resources(document)


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


def _bounded(boundary: str | None) -> dict[str, Any]:
    """The condition of a role write with a boundary: the role carries (or gets) exactly ``boundary``.
    ``ArnEquals``: the reference types ``iam:PermissionsBoundary`` as an ARN (the IAM user guide's
    examples use ``StringEquals``, which IAM also accepts; the linter asks for the typed operator),
    and ``check_boundary`` admits no wildcard, so it matches that one policy."""
    return {"ArnEquals": {"iam:PermissionsBoundary": boundary}} if boundary else {}


def _statement(sid: str, actions: Any, resources: Any, *conditions: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
    merged: dict[str, Any] = {}
    for condition in conditions:
        for operator, keys in condition.items():
            merged.setdefault(operator, {}).update(keys)
    if merged:
        statement["Condition"] = merged
    return statement


def check_cluster_name(cluster_name: str) -> str:
    """``cluster_name`` if it names one cluster; a ``ValueError`` for ``*`` or any other pattern."""
    if not isinstance(cluster_name, str) or not CLUSTER_NAME.match(cluster_name):
        raise ValueError(
            "must be the stack's gpupools:cluster.name (lowercase letters, digits and '-', starting with a letter); "
            f"no wildcards, which would scope role and EKS actions to other clusters' too: got {cluster_name!r}"
        )
    return cluster_name


def check_boundary(boundary: str | None) -> str | None:
    """``boundary`` if it is an IAM managed policy ARN (or None); a ``ValueError`` otherwise."""
    if boundary is not None and not IAM_POLICY_ARN.match(boundary):
        raise ValueError(f"must be an IAM managed policy ARN (arn:<partition>:iam::<account>:policy/<name>): got {boundary!r}")
    return boundary


def deployer_policy(
    cluster_name: str,
    with_network: bool = True,
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    efa: bool = False,
    partition: str = "aws",
    permissions_boundary: str | None = None,
    previous: PreviousResources | None = None,
    discovery_subnets: Sequence[str] = (),
) -> dict[str, Any]:
    """The policy document for the stack of ``cluster_name`` (required: role, policy and EKS actions
    are scoped to that cluster's resources; no wildcard). ``with_network=False`` for stacks with
    ``network.vpcId``; ``provisioner`` as the stack's ``gpupools:provisioner``: the SQS, EventBridge
    and IAM policy actions only for Karpenter, the ASG tag writes and the inline role policy only for
    cluster-autoscaler, and for Auto Mode (``Provisioner.AUTO_MODE``) neither, nor any node group,
    add-on or launch template action (module docstring); ``efa`` for stacks with an ``efa: true``
    pool; ``partition`` for GovCloud (``aws-us-gov``) or China (``aws-cn``); ``permissions_boundary``
    the stack's ``gpupools:cluster.permissionsBoundary``: every role write requires it
    (``BOUNDED_ROLE_ACTIONS``, ``AttachRolePolicy``, ``PutRolePolicy``); default none, and then the
    policy still lets the deployer widen the controller roles, or under Auto Mode use the cluster
    role's ``AmazonEKSComputePolicy`` (``unbounded_warning``). ``previous`` adds, for the first ``up``
    after upgrading from 0.2, the deletes and tag writes on exactly that stack's 0.2 resources
    (``previous_resources``); a ``ValueError`` under Auto Mode, which 0.2 did not have (a stack moves
    to it by blue-green, docs/auto-mode.md). ``discovery_subnets``: a Karpenter stack's brought
    private subnets (``network.privateSubnetIds``), which it tags ``karpenter.sh/discovery``
    (``ec2_tag_statements``)."""
    check_cluster_name(cluster_name)
    check_boundary(permissions_boundary)
    karpenter = provisioner is Provisioner.KARPENTER
    auto_mode = provisioner is Provisioner.AUTO_MODE
    if auto_mode and previous is not None:
        raise ValueError(PREVIOUS_NAMES_AUTO_MODE)
    writes = [*(() if auto_mode else EC2_ACTIONS), *EKS_CREATE_ACTIONS]
    creates = {**(NETWORK_CREATES if with_network else {}), **(EFA_CREATES if efa else {})}
    tagged_writes = [*(NETWORK_WRITES if with_network else ()), *(EFA_WRITES if efa else ())]
    # A create that names an existing resource (the VPC of a subnet, the group of a rule) needs that one tagged.
    tagged_writes += [
        a
        for a in creates
        if a not in ("ec2:CreateVpc", "ec2:CreateInternetGateway", "ec2:AllocateAddress", "ec2:CreatePlacementGroup")
    ]
    tagged_types = [*(NETWORK_TYPES if with_network else ()), *(EFA_TYPES if efa else ())]
    autoscaling_tag_writes = ["autoscaling:DeleteTags"] if karpenter else list(AUTOSCALING_TAG_WRITES)
    reads = [*EC2_READ_ACTIONS, *EKS_READ_ACTIONS, *IAM_READ_ACTIONS, *OTHER_READ_ACTIONS]
    reads += [*(KARPENTER_READ_ACTIONS if karpenter else ())]
    if auto_mode:
        # No launch template and no Auto Scaling group of the stack's to refresh.
        reads = [a for a in reads if a not in LAUNCH_TEMPLATE_READ_ACTIONS]
    else:
        reads += [a for a in AUTOSCALING_ACTIONS if a.split(":")[1].startswith("Describe")]
    if efa:
        reads += EFA_READ_ACTIONS
    roles = stack_role_arns(cluster_name, provisioner, partition)
    bounded = _bounded(permissions_boundary)
    eks_children = [
        _eks(partition, f"nodegroup/{cluster_name}/*"),
        _eks(partition, f"access-entry/{cluster_name}/*"),
        _eks(partition, f"addon/{cluster_name}/*"),
    ]
    eks_cluster_actions: tuple[str, ...] = EKS_CLUSTER_ACTIONS
    eks_child_actions: tuple[str, ...] = EKS_CHILD_ACTIONS
    if auto_mode:
        # The access entries are the cluster's only parts (NODE_GROUP_EKS_ACTIONS).
        eks_children = [_eks(partition, f"access-entry/{cluster_name}/*")]
        eks_cluster_actions = tuple(a for a in EKS_CLUSTER_ACTIONS if a not in NODE_GROUP_EKS_ACTIONS)
        eks_child_actions = tuple(a for a in EKS_CHILD_ACTIONS if a not in NODE_GROUP_EKS_ACTIONS)
    stack_tag = {"StringEquals": {f"aws:ResourceTag/{STACK_TAG}": cluster_name}}
    launch_templates = [
        _statement(
            "CreateStackLaunchTemplates",
            LAUNCH_TEMPLATE_CREATE,
            ec2_arn(partition, "launch-template"),
            {"StringEquals": {f"aws:RequestTag/{STACK_TAG}": cluster_name}},
        ),
        _statement(
            "TagLaunchTemplatesAsTheyAreCreated",
            "ec2:CreateTags",
            ec2_arn(partition, "launch-template"),
            {"StringEquals": {"ec2:CreateAction": LAUNCH_TEMPLATE_CREATE.split(":")[1]}},
        ),
        _statement("StackLaunchTemplates", sorted(LAUNCH_TEMPLATE_ACTIONS), ec2_arn(partition, "launch-template"), stack_tag),
    ]
    autoscaling_group_tags = [
        _statement(
            "StackAutoScalingGroupTags",
            sorted(autoscaling_tag_writes),
            autoscaling_group_arn(partition),
            {"StringEquals": {f"autoscaling:ResourceTag/{ownership_tag(cluster_name)}": "owned"}},
        )
    ]
    statements: list[dict[str, Any]] = [
        _statement("Deploy", sorted(writes), "*"),
        _statement("Read", sorted(reads), "*"),
        *([] if auto_mode else launch_templates),
        *network_statements(cluster_name, creates, tagged_writes, tagged_types, partition),
        # Auto Mode's NodeClasses select the cluster security group by EKS's own tag: no discovery tag on it.
        *ec2_tag_statements(cluster_name, sorted(creates), partition, discovery_subnets, cluster_security_group=not auto_mode),
        *([] if auto_mode else autoscaling_group_tags),
        _statement("StackCluster", sorted(eks_cluster_actions), _eks(partition, f"cluster/{cluster_name}")),
        _statement("StackClusterParts", sorted(eks_child_actions), eks_children),
        _statement("StackRoles", sorted(IAM_ROLE_ACTIONS), roles),
        # PutRolePermissionsBoundary only to set the one boundary: without one, no call of the stack makes it.
        _statement(
            "StackRoleWrites",
            sorted(a for a in BOUNDED_ROLE_ACTIONS if permissions_boundary or a != "iam:PutRolePermissionsBoundary"),
            roles,
            bounded,
        ),
        _statement(
            "AttachOnlyTheStacksPolicies",
            "iam:AttachRolePolicy",
            roles,
            {"ArnLike": {"iam:PolicyARN": attachable_policy_arns(cluster_name, provisioner, partition)}},
            bounded,
        ),
        _statement("OidcProvider", sorted(OIDC_PROVIDER_ACTIONS), _iam(partition, "oidc-provider/oidc.eks.*")),
        _statement(
            "PassStackRolesToEks",
            "iam:PassRole",
            passed_role_arns(cluster_name, partition, provisioner),
            {"StringEquals": {"iam:PassedToService": list(PASSED_TO_SERVICES)}},
        ),
        _statement(
            "ServiceLinkedRoles",
            "iam:CreateServiceLinkedRole",
            "*",
            {"StringEquals": {"iam:AWSServiceName": list(AUTO_MODE_SERVICE_LINKED_ROLES if auto_mode else SERVICE_LINKED_ROLES)}},
        ),
    ]
    if karpenter:
        statements.append(
            _statement("KarpenterQueueAndRules", sorted(KARPENTER_ACTIONS), karpenter_resource_arns(cluster_name, partition))
        )
        statements.append(
            _statement("KarpenterPolicies", sorted(KARPENTER_POLICY_ACTIONS), stack_policy_arns(cluster_name, partition))
        )
        # A role's delete first takes it out of every instance profile it is in (terraform-provider-aws
        # internal/service/iam/role.go, deleteRoleInstanceProfiles); the node role is in the profiles
        # Karpenter made. The action's resource type is the instance profile (service reference).
        statements.append(
            _statement(
                "NodeRoleOutOfKarpenterProfiles",
                "iam:RemoveRoleFromInstanceProfile",
                karpenter_instance_profile_arns(cluster_name, partition),
            )
        )
    elif auto_mode:
        # No controller role and no inline policy; the node role's delete takes it out of the
        # instance profile Auto Mode made for it, which can outlive the cluster.
        statements.append(
            _statement(
                "NodeRoleOutOfAutoModeProfiles", "iam:RemoveRoleFromInstanceProfile", auto_mode_instance_profile_arns(partition)
            )
        )
    else:
        # cluster-autoscaler's IRSA role is the only role with an inline policy (iam.py).
        statements.append(
            _statement(
                "AutoscalerInlinePolicy", "iam:PutRolePolicy", controller_role_arn(cluster_name, provisioner, partition), bounded
            )
        )
    if previous is not None:
        statements += previous_name_statements(cluster_name, previous)
    return {"Version": "2012-10-17", "Statement": statements}


def network_statements(
    cluster_name: str, creates: Mapping[str, str], tagged_writes: Sequence[str], tagged_types: Sequence[str], partition: str
) -> list[dict[str, Any]]:
    """The created VPC's and an EFA pool's statements (module docstring): each create on the type it
    creates, unconditioned; every other write, and every existing resource a create names, on the
    stack's types only where ``aws:ResourceTag/gpupools.io/cluster`` is the cluster."""
    if not creates and not tagged_writes:
        return []
    stack_tag = {"StringEquals": {f"aws:ResourceTag/{STACK_TAG}": cluster_name}}
    statements = [
        _statement("CreateStackNetwork", sorted(creates), sorted({ec2_arn(partition, t) for t in creates.values()})),
        _statement("StackNetwork", sorted(set(tagged_writes)), [ec2_arn(partition, t) for t in tagged_types], stack_tag),
    ]
    if any(a in NETWORK_INTERFACE_ACTIONS for a in tagged_writes):
        statements.append(
            _statement(
                "DisassociateStackAddressesFromTheirInterfaces",
                sorted(a for a in tagged_writes if a in NETWORK_INTERFACE_ACTIONS),
                ec2_arn(partition, "network-interface"),
            )
        )
    return statements


CLUSTER_NAME_TAG = "aws:eks:cluster-name"
"""The tag EKS puts on the cluster security group it creates (EKS User Guide, "View Amazon EKS
security group requirements for clusters"): Karpenter's discovery tag goes on that group."""


def ec2_tag_statements(
    cluster_name: str,
    creates: Sequence[str],
    partition: str,
    discovery_subnets: Sequence[str] = (),
    cluster_security_group: bool = True,
) -> list[dict[str, Any]]:
    """``ec2:CreateTags``/``DeleteTags`` on ``TAGGED_EC2_TYPES``: as a resource is created (``ec2:CreateAction``
    one of the stack's creates), on an existing one only where it carries the stack tag, on the EKS
    cluster security group (``aws:eks:cluster-name``; not with ``cluster_security_group=False``, Auto
    Mode, which tags no group) and a brought subnet (``discovery_subnets``) only
    ``karpenter.sh/discovery``. Before, tag writes were granted on every resource of these
    types: ``karpenter.sh/discovery`` on another VPC's subnet sends Karpenter's nodes there, and
    ``kubernetes.io/role/elb`` puts load balancers into it."""
    types = [ec2_arn(partition, t) for t in TAGGED_EC2_TYPES]
    tags = ["ec2:CreateTags", "ec2:DeleteTags"]
    only_discovery = {"ForAllValues:StringEquals": {"aws:TagKeys": [DISCOVERY_TAG]}}
    statements = [
        _statement("StackEc2Tags", tags, types, {"StringEquals": {f"aws:ResourceTag/{STACK_TAG}": cluster_name}}),
    ]
    if cluster_security_group:
        statements.append(
            _statement(
                "DiscoveryTagOnTheClusterSecurityGroup",
                tags,
                ec2_arn(partition, "security-group"),
                {"StringEquals": {f"aws:ResourceTag/{CLUSTER_NAME_TAG}": cluster_name}},
                only_discovery,
            )
        )
    if creates:
        statements.insert(
            0,
            _statement(
                "TagStackNetworkAsItIsCreated",
                "ec2:CreateTags",
                types,
                {"StringEquals": {"ec2:CreateAction": sorted(a.split(":")[1] for a in creates)}},
            ),
        )
    if discovery_subnets:
        statements.append(
            _statement(
                "DiscoveryTagOnTheBroughtSubnets",
                tags,
                [f"arn:{partition}:ec2:*:{ACCOUNT}:subnet/{subnet}" for subnet in discovery_subnets],
                only_discovery,
            )
        )
    return statements


def previous_name_statements(cluster_name: str, previous: PreviousResources) -> list[dict[str, Any]]:
    """What the first ``up`` after upgrading from 0.2 does to that stack's resources 0.2 named or
    tagged otherwise, on their ARNs only: the deletes of 0.2's controller role, (under Karpenter)
    policies and EventBridge rules (replaced by ``<cluster>-...`` ones), and the launch templates'
    writes while they do not carry the stack tag yet: the ``up`` adds it (``ec2:CreateTags`` of that
    one tag key with the cluster's value) and may write a new version of them before it does."""
    statements = []
    if previous.roles:
        statements.append(
            _statement(
                "DeletePrevious02ControllerRole",
                ["iam:DeleteRole", "iam:DeleteRolePolicy", "iam:DetachRolePolicy"],
                list(previous.roles),
            )
        )
    if previous.launch_templates or previous.network:
        statements.append(
            _statement(
                "Tag02ResourcesWithTheStackTag",
                "ec2:CreateTags",
                [*previous.launch_templates, *previous.network],
                {"StringEquals": {f"aws:RequestTag/{STACK_TAG}": cluster_name}},
                {"ForAllValues:StringEquals": {"aws:TagKeys": [STACK_TAG]}},
            )
        )
    if previous.launch_templates:
        statements.append(
            _statement(
                "Write02LaunchTemplatesBeforeTheyAreTagged",
                ["ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"],
                list(previous.launch_templates),
            )
        )
    if previous.policies:
        statements.append(
            _statement(
                "DeletePrevious02KarpenterPolicies", ["iam:DeletePolicy", "iam:DeletePolicyVersion"], list(previous.policies)
            )
        )
    if previous.rules:
        statements.append(
            _statement("DeletePrevious02KarpenterRules", ["events:DeleteRule", "events:RemoveTargets"], list(previous.rules))
        )
    return statements


ESCALATION_STEP = {
    Provisioner.CLUSTER_AUTOSCALER: "iam:PutRolePolicy writes any inline policy into {controller}",
    Provisioner.KARPENTER: (
        "iam:CreatePolicyVersion and iam:SetDefaultPolicyVersion rewrite the {cluster}-karpenter-* policies "
        "attached to {controller}"
    ),
}

UNBOUNDED_WARNING = """\
Without --permissions-boundary this policy still lets its holder give itself any permission, in two
steps through the stack's own controller role: {step}, then the deployer, as cluster admin, gets
a token for that role's Kubernetes service account (or lets the role trust itself with
iam:UpdateAssumeRolePolicy) and uses the role. Role names and EKS actions are limited to cluster
{cluster}; what the written policies allow is not. Set gpupools:cluster.permissionsBoundary on the
stack and pass the same ARN with --permissions-boundary: every role write then requires that
boundary (docs/safety.md, "Deployer permissions")."""


AUTO_MODE_UNBOUNDED_WARNING = """\
Without --permissions-boundary this policy still lets its holder take over any IAM role of the
account that EC2 may assume, through the stack's own cluster role
{service}:
EKS Auto Mode needs AmazonEKSComputePolicy on it, which passes any role to EC2 (iam:PassRole on *)
and launches instances. The deployer may let that role trust itself (iam:UpdateAssumeRolePolicy)
and, as the role, launch an instance with another role's instance profile; or, as cluster admin,
name another role in a NodeClass, give it an EC2 access entry (eks:CreateAccessEntry) and read its
credentials on the node Auto Mode launches with it. There is no controller role and no inline
policy to write (no iam:PutRolePolicy), and iam:AttachRolePolicy takes only the stack's seven AWS
managed policies; role names and EKS actions are limited to cluster {cluster}. Set
gpupools:cluster.permissionsBoundary on the stack to a boundary that allows iam:PassRole of the
node role only,
{node},
and pass the same ARN with --permissions-boundary: every role write then requires that boundary,
and the cluster role cannot pass another role (docs/safety.md, "Deployer permissions")."""
"""``unbounded_warning`` under Auto Mode. There is no controller role to write a policy into (no
``iam:PutRolePolicy``, no customer-managed policy), and ``AttachRolePolicy`` takes only
``AUTO_MODE_POLICIES``; the way up is the cluster role itself. ``AmazonEKSComputePolicy`` (version 6)
allows ``iam:PassRole`` on ``*`` with ``iam:PassedToService`` ``ec2.amazonaws.com``,
``iam:AddRoleToInstanceProfile`` on ``instance-profile/eks*`` and ``ec2:RunInstances``/``CreateFleet``
with the ``eks:eks-cluster-name`` request tag equal to the caller's principal tag, which a session the
deployer opens on the role (after ``UpdateAssumeRolePolicy``, allowed on the stack's roles) can carry;
EKS uses the same policy to start a node for any role a NodeClass names, and the deployer, cluster
admin, writes NodeClasses and may create access entries on its cluster. A boundary on the cluster role
that passes only the node role closes both."""


def unbounded_warning(cluster_name: str, provisioner: Provisioner, partition: str = "aws") -> str:
    """What a policy without a boundary still allows: the two-step escalation through the stack's own
    IRSA role (printed on stderr by ``main``; ``docs/safety.md`` says the same); under Auto Mode, which
    has no IRSA role, the one through the cluster role's ``AmazonEKSComputePolicy``
    (``AUTO_MODE_UNBOUNDED_WARNING``)."""
    if provisioner is Provisioner.AUTO_MODE:
        service, node = (
            arn.replace(f"iam::{ACCOUNT}:", "iam::<account>:")
            for arn in (
                passed_role_arns(cluster_name, partition, provisioner)[0],
                auto_mode_node_role_arn(cluster_name, partition),
            )
        )
        return AUTO_MODE_UNBOUNDED_WARNING.format(service=service, node=node, cluster=cluster_name)
    controller = controller_role_arn(cluster_name, provisioner, partition).replace(f"iam::{ACCOUNT}:", "iam::<account>:")
    step = ESCALATION_STEP[provisioner].format(controller=controller, cluster=cluster_name)
    return UNBOUNDED_WARNING.format(step=step, cluster=cluster_name)


def all_actions(document: dict[str, Any]) -> set[str]:
    """Every action a policy document allows (``Action`` as a string or a list)."""
    found: set[str] = set()
    for statement in document["Statement"]:
        actions = statement["Action"]
        found.update([actions] if isinstance(actions, str) else actions)
    return found


def policy_for(spec: StackSpec, partition: str = "aws", previous: PreviousResources | None = None) -> dict[str, Any]:
    """The policy a validated stack config needs (its cluster name, network, provisioner, EFA pools
    and permissions boundary)."""
    return deployer_policy(
        cluster_name=spec.cluster.name,
        with_network=not spec.network.bring_your_own,
        provisioner=spec.provisioner,
        efa=any(pool.efa for pool in spec.gpu_pools),
        partition=partition,
        permissions_boundary=spec.cluster.permissions_boundary,
        previous=previous,
        # A Karpenter stack tags the private subnets it is given with its discovery tag.
        discovery_subnets=spec.network.private_subnet_ids
        if spec.network.bring_your_own and spec.provisioner is Provisioner.KARPENTER
        else (),
    )


def _argument(check: Any) -> Any:
    """An argparse ``type`` from a ``check_*`` (its ``ValueError`` becomes the usage error)."""

    def parse(value: str) -> Any:
        try:
            return check(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def main(argv: list[str]) -> int:
    """``--cluster-name NAME [--permissions-boundary ARN] [--existing-vpc] [--efa]
    [--provisioner cluster-autoscaler|karpenter|auto-mode] [--partition aws] [--previous-names STATE]``;
    prints the policy as JSON, and without a boundary what it still allows on stderr. ``--previous-names``
    and ``--efa`` with ``--provisioner auto-mode`` are usage errors (no 0.2 stack and no EFA pool is
    auto-mode)."""
    parser = argparse.ArgumentParser(prog="python -m gpupools.aws.deployer_policy", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cluster-name",
        required=True,
        type=_argument(check_cluster_name),
        help="the stack's gpupools:cluster.name: role, policy and EKS actions only on its resources (no wildcards)",
    )
    parser.add_argument(
        "--permissions-boundary",
        type=_argument(check_boundary),
        help="the stack's gpupools:cluster.permissionsBoundary: every role write requires it",
    )
    parser.add_argument("--existing-vpc", action="store_true", help="a stack with network.vpcId: no VPC actions")
    parser.add_argument(
        "--discovery-subnets",
        default="",
        help="with --existing-vpc and Karpenter: the stack's network.privateSubnetIds, comma-separated (it tags them "
        "karpenter.sh/discovery; only that tag is granted on them)",
    )
    parser.add_argument("--efa", action="store_true", help="a stack with an efa: true pool")
    parser.add_argument(
        "--provisioner",
        choices=[p.value for p in Provisioner],
        default=Provisioner.CLUSTER_AUTOSCALER.value,
        help="the stack's gpupools:provisioner (default: %(default)s)",
    )
    parser.add_argument("--partition", default="aws", help="aws, aws-us-gov or aws-cn (default: %(default)s)")
    parser.add_argument(
        "--previous-names",
        metavar="STATE",
        help="the first up after upgrading from 0.2 only: the JSON of `pulumi stack export` (- for stdin); also "
        "delete that stack's 0.2 controller role, Karpenter policies and rules, and tag its 0.2 launch templates",
    )
    args = parser.parse_args(argv)
    provisioner = Provisioner(args.provisioner)
    if provisioner is Provisioner.AUTO_MODE and args.previous_names:
        parser.error(PREVIOUS_NAMES_AUTO_MODE)
    if provisioner is Provisioner.AUTO_MODE and args.efa:
        parser.error("--efa: provisioner auto-mode takes no efa: true pool (gpupools:gpuPools[].efa is refused with it)")
    document = deployer_policy(
        cluster_name=args.cluster_name,
        with_network=not args.existing_vpc,
        provisioner=provisioner,
        efa=args.efa,
        partition=args.partition,
        permissions_boundary=args.permissions_boundary,
        previous=read_previous_resources(args.previous_names) if args.previous_names else None,
        discovery_subnets=[s for s in args.discovery_subnets.split(",") if s],
    )
    print(json.dumps(document, indent=2))
    if not args.permissions_boundary:
        print(unbounded_warning(args.cluster_name, provisioner, args.partition), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
