"""IAM policy documents of the Karpenter controller and its interruption queue (pure dicts).

Ported statement by statement from the CloudFormation template of the pinned release,
aws/karpenter-provider-aws v1.14.1 ``website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml``
(the document the Karpenter docs call the controller's reference policy, ``reference/cloudformation.md``):
the same Sids, actions, resources and tag conditions, with the template's ``${AWS::Partition}``,
``${AWS::Region}``, ``${AWS::AccountId}``, ``${ClusterName}`` and ARNs as arguments. What the
conditions buy: Karpenter can launch, tag and terminate only instances, launch templates and
instance profiles tagged ``kubernetes.io/cluster/<cluster>=owned`` (and ``karpenter.sh/nodepool`` /
``karpenter.k8s.aws/ec2nodeclass``), pass only the node role and only to EC2, describe only in the
stack's region, and read only its own queue.

Left out on purpose: ``KarpenterControllerZonalShiftPolicy`` (read only with
``settings.enableZonalShift``, which gpupools leaves off). The policies stay separate managed
policies, as in the template: together they exceed the 10,240 characters IAM allows for all of a
role's inline policies.
"""

from __future__ import annotations

from typing import Any

EC2_SERVICES = ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]

CONTROLLER_POLICIES = ("node-lifecycle", "iam-integration", "eks-integration", "interruption", "resource-discovery")
"""The controller's managed policies, by the key ``Karpenter`` names each after
(``<cluster>-<component>-<key>``): the template's five, without ``ZonalShift`` (module docstring)."""


def _doc(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def node_lifecycle_policy(partition: str, region: str, cluster_name: str) -> dict[str, Any]:
    """``KarpenterControllerNodeLifecyclePolicy``: launch, tag and terminate this cluster's nodes."""
    ec2 = f"arn:{partition}:ec2:{region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    request_owned = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
    }
    created = [
        f"{ec2}:*:fleet/*",
        f"{ec2}:*:instance/*",
        f"{ec2}:*:volume/*",
        f"{ec2}:*:network-interface/*",
        f"{ec2}:*:launch-template/*",
        f"{ec2}:*:spot-instances-request/*",
    ]
    return _doc(
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{ec2}::image/*",
                f"{ec2}::snapshot/*",
                f"{ec2}:*:security-group/*",
                f"{ec2}:*:subnet/*",
                f"{ec2}:*:capacity-reservation/*",
                f"{ec2}:*:placement-group/*",
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": created,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {"StringEquals": request_owned, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": created,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {**request_owned, "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": owned,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]},
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
    )


def iam_integration_policy(partition: str, region: str, account: str, cluster_name: str, node_role_arn: str) -> dict[str, Any]:
    """``KarpenterControllerIAMIntegrationPolicy``: pass the node role to EC2; manage the instance
    profiles Karpenter creates for its EC2NodeClasses (tagged with cluster, region and node class)."""
    profiles = f"arn:{partition}:iam::{account}:instance-profile/*"
    request = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
        "aws:RequestTag/topology.kubernetes.io/region": region,
    }
    resource = {
        f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": region,
    }
    return _doc(
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": EC2_SERVICES}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {"StringEquals": request, "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}},
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {**resource, **request},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            "Condition": {"StringEquals": resource, "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}},
        },
    )


def eks_integration_policy(partition: str, region: str, account: str, cluster_name: str) -> dict[str, Any]:
    """``KarpenterControllerEKSIntegrationPolicy``: discover this cluster's API endpoint."""
    return _doc(
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": f"arn:{partition}:eks:{region}:{account}:cluster/{cluster_name}",
            "Action": "eks:DescribeCluster",
        }
    )


def interruption_policy(queue_arn: str) -> dict[str, Any]:
    """``KarpenterControllerInterruptionPolicy``: read and delete messages of its own queue only."""
    return _doc(
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        }
    )


RESOURCE_DISCOVERY_READ_ACTIONS = (
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)


def resource_discovery_policy(partition: str, region: str, account: str) -> dict[str, Any]:
    """``KarpenterControllerResourceDiscoveryPolicy``: describe calls in this region, the public
    EKS AMI parameters in SSM, prices, and instance profiles."""
    return _doc(
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": list(RESOURCE_DISCOVERY_READ_ACTIONS),
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{partition}:iam::{account}:instance-profile/*",
            "Action": "iam:GetInstanceProfile",
        },
    )


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """The interruption queue's resource policy (``KarpenterInterruptionQueuePolicy``): EventBridge
    (and SQS) may send to it; any request without TLS is denied."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }


INTERRUPTION_EVENTS: dict[str, dict[str, Any]] = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "instance-state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
}
"""EventBridge patterns of the template's ``ScheduledChangeRule``, ``SpotInterruptionRule``,
``RebalanceRule`` and ``InstanceStateChangeRule``. Its fifth rule is
``RESERVATION_INTERRUPTION_EVENTS``, only for stacks with reservations."""

RESERVATION_INTERRUPTION_EVENTS: dict[str, dict[str, Any]] = {
    "capacity-reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}
"""The template's ``CapacityReservationInterruptionRule`` (v1.14.1 ``getting-started-with-karpenter/cloudformation.yaml``,
``reference/cloudformation.md``: the capacity owner "is reclaiming reserved capacity, triggering a
notification for node reclamation"; Karpenter drains on the 2-minute warning, ``tasks/odcrs.md``,
Interruptible Capacity Reservations). Created by ``Karpenter(reserved_capacity=True)``: a stack
whose NodePools allow ``reserved``. ``ec2:DescribeCapacityReservations`` (``RESOURCE_DISCOVERY_READ_ACTIONS``)
and ``RunInstances``/``CreateFleet`` on ``capacity-reservation/*`` (``node_lifecycle_policy``) are in
every stack's policies already, as in the template."""
