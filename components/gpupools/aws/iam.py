"""IAM for EKS nodes and cluster-autoscaler: policy documents (pure) and the roles that carry them.

Every document is built as a Python dict and serialised with ``json.dumps``, so the same inputs give
byte-identical JSON (no diff on every ``pulumi up``) and tests can parse and inspect it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)
"""AWS managed policies on the node role: join the cluster, run the VPC CNI (which assigns pod IPs
from the node's own credentials unless it is given an IRSA role), pull images from ECR, and be
reachable through SSM Session Manager instead of SSH."""

AUTOSCALER_DESCRIBE_ACTIONS = (
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
)
"""Read-only calls cluster-autoscaler makes (cluster-autoscaler's AWS README, "Full features"):
``DescribeScalingActivities`` lets it see a failed Spot launch at once and fall back instead of
waiting out ``--max-node-provision-time``; ``DescribeNodegroup`` gives it a managed node group's
labels and taints for scale-from-zero templates. Describe calls cannot be scoped to resources."""

AUTOSCALER_MUTATING_ACTIONS = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)
"""The only writes cluster-autoscaler needs, scoped by ``autoscaler_policy`` to this cluster's groups."""

AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
"""The Kubernetes service account the autoscaler runs as (and that its IRSA role trusts)."""


def ownership_tag(cluster_name: str) -> str:
    """``k8s.io/cluster-autoscaler/<cluster>``: EKS sets it to ``owned`` on every managed node group's ASG."""
    return f"k8s.io/cluster-autoscaler/{cluster_name}"


def service_principal_policy(service: str) -> dict[str, Any]:
    """A trust policy letting one AWS service (``ec2.amazonaws.com``) assume the role."""
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }


def irsa_trust_policy(oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str) -> dict[str, Any]:
    """A trust policy for IAM Roles for Service Accounts: only ``namespace/service_account`` of this
    cluster, with a token issued for STS, may assume the role.

    Args:
        oidc_provider_arn: the cluster's IAM OIDC provider.
        oidc_issuer: the issuer URL, with or without ``https://`` (condition keys use it without).
    """
    issuer = oidc_issuer.removeprefix("https://")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{issuer}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """cluster-autoscaler's permissions: describe anything, resize and terminate only in Auto
    Scaling groups tagged ``k8s.io/cluster-autoscaler/<cluster>=owned`` (this cluster's)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Describe",
                "Effect": "Allow",
                "Action": list(AUTOSCALER_DESCRIBE_ACTIONS),
                "Resource": "*",
            },
            {
                "Sid": "ScaleThisClustersGroups",
                "Effect": "Allow",
                "Action": list(AUTOSCALER_MUTATING_ACTIONS),
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{ownership_tag(cluster_name)}": "owned"}},
            },
        ],
    }


def to_json(document: dict[str, Any]) -> str:
    """Canonical JSON for a policy document (stable key order, so no spurious diffs)."""
    return json.dumps(document, sort_keys=True)


@dataclass(frozen=True)
class NodeRole:
    """The node role and its policy attachments.

    Node groups must depend on the attachments, not only on the role: on ``pulumi destroy`` a
    group that depends on the role alone may lose its policies before it is deleted, and then
    "EKS will not be able to properly delete EC2 Instances and Elastic Network Interfaces"
    (terraform-provider-aws ``website/docs/r/eks_node_group.html.markdown``, example usage: "Ensure
    that IAM Role permissions are created before and deleted after EKS Node Group handling";
    pulumi-aws's ``eks.NodeGroup`` example passes the attachments as ``depends_on`` for the same
    reason).
    """

    role: aws.iam.Role
    policy_attachments: tuple[aws.iam.RolePolicyAttachment, ...]


def create_node_role(name: str, parent: pulumi.Resource) -> NodeRole:
    """The EC2 instance role of every node group, with ``NODE_MANAGED_POLICIES`` attached."""
    partition = aws.get_partition()
    role = aws.iam.Role(
        f"{name}-node-role",
        assume_role_policy=to_json(service_principal_policy(f"ec2.{partition.dns_suffix}")),
        description="EKS worker nodes (gpupools)",
        opts=pulumi.ResourceOptions(parent=parent),
    )
    attachments = tuple(
        aws.iam.RolePolicyAttachment(
            f"{name}-node-role-{policy}",
            role=role.name,
            policy_arn=f"arn:{partition.partition}:iam::aws:policy/{policy}",
            opts=pulumi.ResourceOptions(parent=role),
        )
        for policy in NODE_MANAGED_POLICIES
    )
    return NodeRole(role, attachments)


def create_irsa_role(
    name: str,
    oidc_provider_arn: pulumi.Input[str],
    oidc_provider_url: pulumi.Input[str],
    namespace: str,
    service_account: str,
    policy: dict[str, Any],
    parent: pulumi.Resource,
) -> aws.iam.Role:
    """A role one Kubernetes service account assumes through IRSA, with ``policy`` inline."""
    trust = pulumi.Output.all(oidc_provider_arn, oidc_provider_url).apply(
        lambda values: to_json(irsa_trust_policy(values[0], values[1], namespace, service_account))
    )
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=trust,
        description=f"IRSA role of {namespace}/{service_account} (gpupools)",
        opts=pulumi.ResourceOptions(parent=parent),
    )
    aws.iam.RolePolicy(
        f"{name}-policy",
        role=role.name,
        policy=to_json(policy),
        opts=pulumi.ResourceOptions(parent=role),
    )
    return role
