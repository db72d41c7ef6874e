"""IAM for EKS nodes and cluster-autoscaler: policy documents (pure) and the roles that carry them.

Every document is built as a Python dict and serialised with ``json.dumps``, so the same inputs give
byte-identical JSON (no diff on every ``pulumi up``) and tests can parse and inspect it.
"""

from __future__ import annotations

import hashlib
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


ROLE_ARN_POD_ANNOTATION = "gpupools.io/role-arn"
"""The pod-template annotation that carries a controller's IRSA role ARN (``irsa_service_account_values``)."""


def irsa_service_account_values(role_arn: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ServiceAccount annotations and the pod annotations of a controller that assumes ``role_arn``
    through IRSA: ``({"eks.amazonaws.com/role-arn": arn}, {"gpupools.io/role-arn": arn})``.

    Why the role is in the pod template too: the role reaches the pod only as ``AWS_ROLE_ARN``,
    which the EKS Pod Identity webhook sets when the pod is *created* ("The mutating web hook
    doesn't apply them to Pods that are already running", EKS User Guide, "Configure Pods to use a
    Kubernetes service account"). A new role that changed only the ServiceAccount's annotation
    would update the ServiceAccount and leave the Deployment alone (neither the cluster-autoscaler
    chart nor the Karpenter chart renders the pod template from the ServiceAccount or carries a
    checksum of it), so the running pods would keep the old role, and the ``up`` that renamed the
    role deletes the old one under them. Both charts render ``podAnnotations`` into the pod template
    (cluster-autoscaler chart 9.59.0 and karpenter 1.14.1, ``templates/deployment.yaml``), so with
    the ARN there every change of the role is a change of the pod template, and the Deployment
    rolls its pods onto the new role.
    """
    return {"eks.amazonaws.com/role-arn": role_arn}, {ROLE_ARN_POD_ANNOTATION: role_arn}


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


def create_node_role(name: str, parent: pulumi.Resource, permissions_boundary: str | None = None) -> NodeRole:
    """The EC2 instance role of every node group, with ``NODE_MANAGED_POLICIES`` attached and
    ``permissions_boundary`` (``gpupools:cluster.permissionsBoundary``; default none) as its boundary."""
    partition = aws.get_partition()
    role = aws.iam.Role(
        f"{name}-node-role",
        assume_role_policy=to_json(service_principal_policy(f"ec2.{partition.dns_suffix}")),
        description="EKS worker nodes (gpupools)",
        permissions_boundary=permissions_boundary,
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
    permissions_boundary: str | None = None,
) -> aws.iam.Role:
    """A role one Kubernetes service account assumes through IRSA, with ``policy`` inline and
    ``permissions_boundary`` (default none) as its boundary. ``name`` starts with the cluster name
    (``<cluster>-cluster-autoscaler``), so the role is ``<name>-role-<suffix>`` and the deployer
    policy scopes role writes to this cluster's roles (``gpupools.aws.deployer_policy``)."""
    trust = pulumi.Output.all(oidc_provider_arn, oidc_provider_url).apply(
        lambda values: to_json(irsa_trust_policy(values[0], values[1], namespace, service_account))
    )
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=trust,
        description=f"IRSA role of {namespace}/{service_account} (gpupools)",
        permissions_boundary=permissions_boundary,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    aws.iam.RolePolicy(
        f"{name}-policy",
        role=role.name,
        policy=to_json(policy),
        opts=pulumi.ResourceOptions(parent=role),
    )
    return role


CLUSTER_POLICY = "AmazonEKSClusterPolicy"
"""The AWS managed policy of the cluster's service role (pulumi-eks ``nodejs/eks/cluster/cluster.ts``
v4.3.0, "Create the EKS service role": ``managedPolicies = ["AmazonEKSClusterPolicy"]`` without Auto Mode)."""


def service_role_name(eks_cluster_name: str) -> str:
    """``<eks.Cluster name>-eksRole-role``: the logical name pulumi-eks gives its own service role
    (``new ServiceRole(`${name}-eksRole`)``, whose ``aws.iam.Role`` is ``${name}-role``:
    ``nodejs/eks/servicerole.ts`` v4.3.0). ``create_cluster_service_role`` uses the same name, so
    both are auto-named ``<cluster>-eks-eksRole-role-<suffix>``."""
    return f"{eks_cluster_name}-eksRole-role"


def _sha1_8(text: str) -> str:
    """pulumi-eks's ``sha1hash`` (``nodejs/eks/servicerole.ts`` v4.3.0: the first 8 hex digits of the
    SHA-1), which names the service role's policy attachments."""
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def create_cluster_service_role(
    eks_cluster_name: str, permissions_boundary: str | None, parent: pulumi.Resource
) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
    """The EKS cluster's service role, with ``permissions_boundary`` when given, for
    ``eks.Cluster(service_role=...)``. Every EKS stack brings it, boundary or not.

    pulumi-eks creates its own service role when none is given, but its ``ServiceRole`` takes no
    permissions boundary (``nodejs/eks/servicerole.ts`` v4.3.0: ``description``, ``assumeRolePolicy``
    and ``tags`` only), so this is the same role made here: the same trust (``eks.amazonaws.com``,
    ``sts:AssumeRole`` and ``sts:TagSession``), description and ``AmazonEKSClusterPolicy``. Both
    resources are aliased to pulumi-eks's (children of its ``eks:index:ServiceRole`` component under
    the ``eks:index:Cluster``), so a stack whose role pulumi-eks made (every stack before 0.3.0)
    keeps its role and ARN. Why always, not only with a boundary: the engine matches old state only
    by the URN and the aliases the *new* registration declares (pulumi/pulumi
    ``pkg/resource/deploy/step_generator.go``, ``generateSteps``: "We look up first by URN and then
    by any provided aliases"), so a role that moved back to pulumi-eks when the boundary was removed
    would be a new role, and a new ``roleArn`` replaces the cluster. With one role at one URN,
    adding or removing the boundary is an in-place update of that role
    (``permissions_boundary`` is not ``ForceNew`` in terraform-provider-aws
    ``internal/service/iam/role.go``; its update calls ``PutRolePermissionsBoundary`` or
    ``DeleteRolePermissionsBoundary``).
    """
    partition = aws.get_partition()
    role_name = service_role_name(eks_cluster_name)
    attachment_name = f"{eks_cluster_name}-eksRole-{_sha1_8(f'arn:aws:iam::aws:policy/{CLUSTER_POLICY}')}"
    urns = parent.urn.apply(lambda urn: pulumi_eks_service_role_urns(urn, eks_cluster_name))

    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Effect": "Allow",
                "Principal": {"Service": ["eks.amazonaws.com"]},
            }
        ],
    }
    role = aws.iam.Role(
        role_name,
        assume_role_policy=to_json(trust),
        description="Allows EKS to manage clusters on your behalf.",
        permissions_boundary=permissions_boundary,
        opts=pulumi.ResourceOptions(parent=parent, aliases=[urns.apply(lambda u: u[0])]),
    )
    attachment = aws.iam.RolePolicyAttachment(
        attachment_name,
        role=role.name,
        policy_arn=f"arn:{partition.partition}:iam::aws:policy/{CLUSTER_POLICY}",
        opts=pulumi.ResourceOptions(parent=role, aliases=[urns.apply(lambda u: u[1])]),
    )
    return role, attachment


def pulumi_eks_service_role_urns(parent_urn: str, eks_cluster_name: str) -> tuple[str, str]:
    """The URNs pulumi-eks v4.3.0 gives its service role and its ``AmazonEKSClusterPolicy``
    attachment when its ``eks.Cluster`` named ``eks_cluster_name`` is a child of ``parent_urn``:
    ``Cluster`` (``eks:index:Cluster``) > ``ServiceRole`` ``<name>-eksRole`` (``eks:index:ServiceRole``)
    > ``aws.iam.Role`` ``<name>-eksRole-role`` and ``aws.iam.RolePolicyAttachment``
    ``<name>-eksRole-<sha1hash(policy ARN)>`` (``nodejs/eks/cluster/cluster.ts``, ``servicerole.ts``).
    A child's URN is its parent's with ``$<type>`` appended to the type chain and its own name; the
    root stack's type (``pulumi:pulumi:Stack``) is never part of a chain (the engine's resource
    monitor leaves it out for resources parented to the stack), even where ``parent_urn`` spells it."""
    head, types, _ = parent_urn.rsplit("::", 2)
    chain = f"{types.removeprefix('pulumi:pulumi:Stack$')}$eks:index:Cluster$eks:index:ServiceRole"
    policy_hash = _sha1_8(f"arn:aws:iam::aws:policy/{CLUSTER_POLICY}")
    return (
        f"{head}::{chain}$aws:iam/role:Role::{service_role_name(eks_cluster_name)}",
        f"{head}::{chain}$aws:iam/rolePolicyAttachment:RolePolicyAttachment::{eks_cluster_name}-eksRole-{policy_hash}",
    )
