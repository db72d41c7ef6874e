"""``Karpenter``: the Karpenter controller on EKS with its IAM, interruption queue and discovery tags.

Pinned release: aws/karpenter-provider-aws v1.14.1 (``gpupools.versions.KARPENTER_VERSION``).
What it creates, following that release's getting-started guide and CloudFormation template
(``website/content/en/docs/getting-started/getting-started-with-karpenter/``):

* **Controller IAM** (``karpenter_iam``): the template's managed policies (node lifecycle, IAM
  integration, EKS integration, interruption, resource discovery), each scoped by the documented
  tag and region conditions, attached to a role the ``kube-system/karpenter`` service account
  assumes through **IRSA** (the cluster's OIDC provider, as cluster-autoscaler's role): the EKS
  stack creates an OIDC provider and no Pod Identity agent add-on, and IRSA is what the chart
  supports with ``serviceAccount.annotations`` (``eks.amazonaws.com/role-arn``).
* **Node role**: the cluster's node role (``iam.create_node_role``: worker, CNI, ECR read and SSM
  policies, the same managed policies the template's ``KarpenterNodeRole`` has, with ECR
  ``ReadOnly`` in place of ``PullOnly``), which already has its ``EC2_LINUX`` access entry
  (``EksCluster``), so nodes Karpenter launches join like the system group's. Karpenter creates
  the instance profile for it from the EC2NodeClass's ``role``.
* **Interruption queue**: SQS, SQS-managed server-side encryption, 300 s retention (the template's
  ``KarpenterInterruptionQueue``), named ``<cluster>-karpenter-<unique suffix>`` (``queue_name_prefix``:
  no fixed name), a queue policy letting EventBridge send and denying non-TLS
  access, and four EventBridge rules targeting it: Spot interruption warning, rebalance
  recommendation, AWS Health scheduled change, instance state change, and with reservations
  capacity reservation interruption warnings
  (``karpenter_iam.INTERRUPTION_EVENTS``). With ``settings.interruptionQueue`` Karpenter cordons
  and drains a node on its 2-minute Spot notice and launches the replacement at once
  (``concepts/disruption.md``, Interruption); rebalance recommendations are recorded as events.
* **Discovery tags** ``karpenter.sh/discovery=<cluster>`` on each private subnet and on the cluster
  security group (the one EKS creates, which the managed node groups use too). The security group
  and a brought VPC's subnets get ``aws.ec2.Tag`` resources (resources this stack does not
  manage); a created VPC's subnets carry the tag in their own tags (``tag_subnets=False``). The
  EC2NodeClasses select subnets and security groups by this tag.
* **Helm**: two ``helm.v3.Release`` of the official OCI charts at the pinned version: first
  ``karpenter-crd`` (the upgrade guide: Helm installs a chart's ``crds/`` only on first install and
  never upgrades them, so the CRDs get their own chart), then ``karpenter`` with ``skip_crds``. A
  ``helm.v3.Release`` rather than ``helm.v4.Chart``: the release is one resource whose values are
  visible in previews, diffs and tests (as for cluster-autoscaler), Helm itself orders and waits
  for the controller, and ``helm rollback`` stays possible; ``v4.Chart`` renders every object
  client-side, which under the mock runtime (a remote component) would hide all of them.
* **Placement**: ``nodeSelector`` ``gpupools.io/role=system`` (the system node group) on top of the
  chart's own ``karpenter.sh/nodepool DoesNotExist`` affinity, so the controller never runs on a
  node it may remove; 2 replicas (chart default, spread by its hostname anti-affinity over the
  system group's 2+ nodes), requests and limits of 1 CPU and 1 GiB (the getting-started values),
  ``AWS_REGION`` set (the system nodes' IMDS hop limit of 1 keeps pods off IMDS), and
  ``dnsPolicy: Default`` (``DNS_POLICY``): the controller resolves AWS endpoints through the VPC's
  resolver, so it keeps working while CoreDNS is gone (``pulumi destroy``).
* **Feature gates**: the chart's defaults, except ``settings.featureGates.nodeOverlay: true`` with
  ``node_overlay=True`` (a stack with a time-sliced or MPS pool; see
  ``gpupools.kubernetes.karpenter.overlay``). The gate is alpha in 1.14.1 (``values.yaml``).
  With ``reserved_capacity=True`` (a pool with ``reservations``), ``reservedCapacity: true``: beta and
  already on by default in 1.14.1 (``values.yaml``: "reservedCapacity is BETA and is enabled by
  default"), set so that the NodePools' ``reserved`` capacity type cannot be switched off by a later
  default; and the ``CapacityReservationInterruptionRule`` (``karpenter_iam.RESERVATION_INTERRUPTION_EVENTS``).
  With ``node_repair=True`` (``gpupools:nodeRepair.enabled: true``), ``nodeRepair: true``: alpha
  and off by default in 1.14.1 (``values.yaml``: "nodeRepair is ALPHA and is disabled by default");
  what it acts on and what it needs (the node monitoring agent add-on) is in ``gpupools.aws.node_repair``.
  With ``capacity_buffer=True`` (a ``gpuPools[].warm`` pool), ``capacityBuffer: true``: alpha and off
  by default in 1.14.1 (``values.yaml``: "capacityBuffer is ALPHA and is disabled by default"); its
  CRD, ``autoscaling.x-k8s.io_capacitybuffers.yaml``, is a template of the ``karpenter-crd`` chart.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpupools.aws import karpenter_iam
from gpupools.aws.iam import irsa_service_account_values, irsa_trust_policy, to_json
from gpupools.aws.node_group import check_cluster_name, depends_on_of
from gpupools.conventions import ROLE_LABEL, Role
from gpupools.errors import ConfigError
from gpupools.versions import KARPENTER_CHART, KARPENTER_CRD_CHART, KARPENTER_VERSION

TYPE = "gpupools:index:Karpenter"

NAMESPACE = "kube-system"
"""Where the controller runs (the getting-started guide's ``KARPENTER_NAMESPACE``)."""

SERVICE_ACCOUNT = "karpenter"
"""The chart's service account name (``fullname``, the release name): what the IRSA role trusts."""

RELEASE_NAME = "karpenter"
CRD_RELEASE_NAME = "karpenter-crd"

DISCOVERY_TAG = "karpenter.sh/discovery"
"""Subnets and the cluster security group carry ``karpenter.sh/discovery=<cluster>``; the
EC2NodeClasses select on it (``concepts/nodeclasses.md``, subnetSelectorTerms)."""

QUEUE_RETENTION_SECONDS = 300
"""The template's ``MessageRetentionPeriod``: an interruption older than 5 minutes is moot (a Spot
notice gives 2)."""

DNS_POLICY = "Default"
"""The controller pod's ``dnsPolicy`` (chart value ``dnsPolicy``, default ``ClusterFirst`` in
``charts/karpenter/values.yaml`` at v1.14.1, rendered by ``templates/deployment.yaml``): ``Default``
resolves through the node's resolver (the VPC's Amazon DNS server), not CoreDNS. Karpenter reaches
only AWS endpoints (STS, EC2, IAM, SQS, SSM, pricing) and the API server (by the service IP in its
environment), so it needs no in-cluster names, and with ``Default`` it keeps resolving them while
CoreDNS is down: at ``pulumi destroy``, while it drains its NodeClaims and removes its instance
profiles, and on a new cluster before CoreDNS runs. Karpenter's troubleshooting page: STS is
unreachable "when Karpenter is running with ``dnsPolicy: ClusterFirst`` and your in-cluster DNS
service is not yet running" (``website/content/en/docs/troubleshooting.md``); terraform-aws-eks's
Karpenter example sets ``dnsPolicy: Default`` (``examples/karpenter/main.tf``)."""

REPLICAS = 2
CONTROLLER_RESOURCES = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
"""The getting-started guide's ``controller.resources`` (``scripts/step08-apply-helm-chart.sh``)."""


QUEUE_NAME_MAX = 80
"""SQS queue names: letters, digits, ``-`` and ``_``, at most 80 characters (SQS ``CreateQueue`` API
reference, ``QueueName``)."""

UNIQUE_SUFFIX_LENGTH = 26
"""What ``name_prefix`` appends: ``id.PrefixedUniqueId`` of hashicorp/terraform-plugin-sdk
(``helper/id/id.go``: the UTC time as ``20060102150405.0000`` without the dot, 18 digits, then an
8-hex-digit counter), which the Terraform AWS provider uses and pulumi-aws bridges."""


def queue_name_prefix(cluster_name: str) -> str:
    """``<cluster>-karpenter-``: the interruption queue's ``name_prefix``, not a fixed name, and the
    EventBridge rules' (``name_prefix`` too: at most 20 + 11 + 26 characters, within EventBridge's
    64 for a rule name), so the deployer policy can scope both by name.

    A fixed name cannot be reused for 60 seconds after its queue is deleted ("After you delete a
    queue, you must wait at least 60 seconds before creating a queue with the same name", SQS
    ``DeleteQueue`` API reference), so a replacement (Pulumi creates the new queue before deleting
    the old one) or a destroy followed by an up would fail with ``QueueDeletedRecently``; two
    stacks of one cluster name in one account and region would collide outright. With a prefix the
    provider adds a unique suffix, and Karpenter reads the name from the queue's output
    (``settings.interruptionQueue``), the rules and the controller policy its ARN.
    """
    # check_cluster_name allows at most rules.CLUSTER_NAME_MAX (20) characters: 20 + 11 + 26 <= 80.
    return f"{cluster_name}-karpenter-"


def helm_values(
    cluster_name: str,
    region: str,
    queue: pulumi.Input[str],
    role_arn: pulumi.Input[str],
    node_overlay: bool = False,
    reserved_capacity: bool = False,
    node_repair: bool = False,
    capacity_buffer: bool = False,
) -> dict[str, Any]:
    """The ``karpenter`` chart values (module docstring); every key exists in the chart's
    ``values.yaml`` at 1.14.1 (a test checks)."""
    settings: dict[str, Any] = {"clusterName": cluster_name, "interruptionQueue": queue}
    service_account_annotations, pod_annotations = irsa_service_account_values(role_arn)
    gates = {
        **({"nodeOverlay": True} if node_overlay else {}),
        **({"reservedCapacity": True} if reserved_capacity else {}),
        **({"nodeRepair": True} if node_repair else {}),
        # Warm pools (gpupools.warm): alpha and off by default in 1.14.1 (values.yaml: "capacityBuffer is ALPHA").
        **({"capacityBuffer": True} if capacity_buffer else {}),
    }
    if gates:
        settings["featureGates"] = gates
    return {
        "settings": settings,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT, "annotations": service_account_annotations},
        # The role in the pod template as well, so a new role rolls the pods (gpupools.aws.iam.irsa_service_account_values).
        "podAnnotations": pod_annotations,
        "replicas": REPLICAS,
        "dnsPolicy": DNS_POLICY,
        "nodeSelector": {"kubernetes.io/os": "linux", ROLE_LABEL: Role.SYSTEM.value},
        "controller": {"resources": CONTROLLER_RESOURCES, "env": [{"name": "AWS_REGION", "value": region}]},
    }


class Karpenter(pulumi.ComponentResource):
    """Karpenter for one EKS cluster (see the module docstring). Give the cluster's Kubernetes
    provider through ``opts``; ``depends_on`` (the system node group) is passed to the releases.

    Args:
        name: the component's name; prefixes child resource names.
        cluster_name: the EKS cluster name.
        region: the cluster's region (IAM conditions, ``AWS_REGION``).
        node_role_arn: the node role's ARN (``iam:PassRole`` is limited to it).
        oidc_provider_arn: the ARN of the cluster's IAM OIDC provider (IRSA trust).
        oidc_provider_url: the URL of the same OIDC provider.
        subnet_ids: the private subnets nodes go in (tagged for discovery unless ``tag_subnets`` is False).
        security_group_id: the cluster security group (tagged for discovery).
        tag_subnets: tag ``subnet_ids`` with ``aws.ec2.Tag``; default True, for subnets this stack
            does not manage (a brought VPC). Pass False when the subnets were created with the tag
            (``EksCluster(private_subnet_tags=...)``): an ``aws.ec2.Tag`` on a subnet whose tags a
            Pulumi ``aws.ec2.Subnet`` manages would fight it on every update (pulumi-aws ``ec2.Tag``
            docs: not for resources whose tags the program also manages).
        node_overlay: turn on the alpha ``NodeOverlay`` feature gate; default False. Needed by the
            NodeOverlays of shared GPU pools (``KarpenterNodePools``).
        reserved_capacity: a NodePool allows ``reserved`` (a pool with ``reservations``): set the
            ``ReservedCapacity`` gate explicitly and route capacity reservation interruption
            warnings to the queue; default False.
        node_repair: turn on the alpha ``NodeRepair`` feature gate; default False. Pair it with the
            node monitoring agent add-on (``gpupools.aws.node_repair``), which reports GPU health.
        capacity_buffer: turn on the alpha ``CapacityBuffer`` feature gate (warm pools,
            ``gpupools.warm``); default False. Its CRD is in the ``karpenter-crd`` chart.
        permissions_boundary: the controller role's permissions boundary
            (``gpupools:cluster.permissionsBoundary``); default none.
        opts: resource options.

    Attributes:
        queue: the interruption queue. rules: the EventBridge rules by event key.
        role: the controller's IRSA role, ``<cluster>-<name>-controller-<suffix>``, and its policies
            ``<cluster>-<name>-<key>-<suffix>`` (the cluster's name first, so the deployer policy can
            limit role and policy writes to this cluster's). policies: the policy documents by name
            (dicts, resolved lazily as outputs). values: the Helm values. crd_release, release: the
            Helm releases.
    """

    queue: aws.sqs.Queue
    rules: dict[str, aws.cloudwatch.EventRule]
    role: aws.iam.Role
    values: dict[str, Any]
    crd_release: k8s.helm.v3.Release
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        cluster_name: str,
        region: str,
        node_role_arn: pulumi.Input[str],
        oidc_provider_arn: pulumi.Input[str],
        oidc_provider_url: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        security_group_id: pulumi.Input[str],
        tag_subnets: bool = True,
        node_overlay: bool = False,
        opts: pulumi.ResourceOptions | None = None,
        reserved_capacity: bool = False,
        node_repair: bool = False,
        permissions_boundary: str | None = None,
        capacity_buffer: bool = False,
    ) -> None:
        path = f"Karpenter({name})"
        check_cluster_name(cluster_name, f"{path}.cluster_name")
        if not subnet_ids:
            raise ConfigError(f"{path}.subnet_ids", "must list the private subnets Karpenter launches nodes into", [])
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        partition = aws.get_partition(opts=pulumi.InvokeOptions(parent=self))
        account = aws.get_caller_identity(opts=pulumi.InvokeOptions(parent=self)).account_id

        for index, subnet in enumerate(subnet_ids if tag_subnets else ()):
            aws.ec2.Tag(f"{name}-discovery-subnet-{index}", resource_id=subnet, key=DISCOVERY_TAG, value=cluster_name, opts=child)
        aws.ec2.Tag(f"{name}-discovery-sg", resource_id=security_group_id, key=DISCOVERY_TAG, value=cluster_name, opts=child)

        self.queue = aws.sqs.Queue(
            f"{name}-interruption",
            name_prefix=queue_name_prefix(cluster_name),
            message_retention_seconds=QUEUE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruption",
            queue_url=self.queue.url,
            policy=self.queue.arn.apply(lambda arn: to_json(karpenter_iam.queue_policy(arn))),
            opts=pulumi.ResourceOptions(parent=self.queue),
        )
        self.rules = {}
        events = {
            **karpenter_iam.INTERRUPTION_EVENTS,
            **(karpenter_iam.RESERVATION_INTERRUPTION_EVENTS if reserved_capacity else {}),
        }
        for key, pattern in events.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{key}",
                # Named <cluster>-karpenter-<unique suffix>, as the queue: the deployer policy scopes
                # EventBridge writes by that name (rules have no tag condition key; T4).
                name_prefix=queue_name_prefix(cluster_name),
                description=f"Karpenter interruption handling for {cluster_name}: {pattern['detail-type'][0]}",
                event_pattern=json.dumps(pattern, sort_keys=True),
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{key}",
                rule=rule.name,
                target_id="KarpenterInterruptionQueueTarget",
                arn=self.queue.arn,
                opts=pulumi.ResourceOptions(parent=rule),
            )
            self.rules[key] = rule

        trust = pulumi.Output.all(oidc_provider_arn, oidc_provider_url).apply(
            lambda v: to_json(irsa_trust_policy(v[0], v[1], NAMESPACE, SERVICE_ACCOUNT))
        )
        self.role = aws.iam.Role(
            f"{cluster_name}-{name}-controller",
            assume_role_policy=trust,
            description=f"Karpenter controller of {cluster_name} (IRSA {NAMESPACE}/{SERVICE_ACCOUNT}, gpupools)",
            permissions_boundary=permissions_boundary,
            opts=child,
        )
        p = partition.partition
        documents: dict[str, pulumi.Input[str]] = {
            "node-lifecycle": to_json(karpenter_iam.node_lifecycle_policy(p, region, cluster_name)),
            "iam-integration": pulumi.Output.from_input(node_role_arn).apply(
                lambda arn: to_json(karpenter_iam.iam_integration_policy(p, region, account, cluster_name, arn))
            ),
            "eks-integration": to_json(karpenter_iam.eks_integration_policy(p, region, account, cluster_name)),
            "interruption": self.queue.arn.apply(lambda arn: to_json(karpenter_iam.interruption_policy(arn))),
            "resource-discovery": to_json(karpenter_iam.resource_discovery_policy(p, region, account)),
        }
        assert tuple(documents) == karpenter_iam.CONTROLLER_POLICIES
        attachments = []
        for key, document in documents.items():
            policy = aws.iam.Policy(
                f"{cluster_name}-{name}-{key}",
                description=f"Karpenter controller of {cluster_name}: {key} (gpupools)",
                policy=document,
                opts=pulumi.ResourceOptions(parent=self.role),
            )
            attachments.append(
                aws.iam.RolePolicyAttachment(
                    f"{name}-{key}", role=self.role.name, policy_arn=policy.arn, opts=pulumi.ResourceOptions(parent=self.role)
                )
            )

        # The queue's name as the provider made it (an output): Karpenter polls this queue.
        self.values = helm_values(
            cluster_name, region, self.queue.name, self.role.arn, node_overlay, reserved_capacity, node_repair, capacity_buffer
        )
        self.crd_release = k8s.helm.v3.Release(
            f"{name}-crd",
            name=CRD_RELEASE_NAME,
            chart=KARPENTER_CRD_CHART,
            version=KARPENTER_VERSION,
            namespace=NAMESPACE,
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on_of(opts)),
        )
        self.release = k8s.helm.v3.Release(
            name,
            name=RELEASE_NAME,
            chart=KARPENTER_CHART,
            version=KARPENTER_VERSION,
            namespace=NAMESPACE,
            skip_crds=True,
            values=self.values,
            # The controller needs its permissions and queue before it starts, and the CRDs.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[*depends_on_of(opts), self.crd_release, self.queue, *attachments]
            ),
        )
        self.register_outputs({"roleArn": self.role.arn, "queueName": self.queue.name, "chartVersion": KARPENTER_VERSION})
