"""The AWS preflight: read-only calls with the caller's own credentials (boto3's default chain, which
honours ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, SSO, web identity and the rest).

=============  ================================================================================
check          how
=============  ================================================================================
offered        ``ec2:DescribeInstanceTypeOfferings`` with ``LocationType=availability-zone``:
               every instance type of a pool in every zone of the pool. Zones not set in the
               config are the region's first three that need no opt-in, found the way the stack
               finds them (``gpupools.aws.cluster.default_zones``).
quota          Service Quotas ``GetServiceQuota`` (``GetAWSDefaultServiceQuota`` when no applied
               value exists) for each vCPU quota the pools draw on, Spot and On-Demand apart:
               the sum over pools of max nodes x vCPUs (``ec2:DescribeInstanceTypes``).
version        ``eks:DescribeClusterVersions``: the minor is listed, and not ``UNSUPPORTED``.
               With ``gpupools:nodeRepair`` on, a second row: ``eks:DescribeAddonVersions`` of
               ``eks-node-monitoring-agent`` for the minor lists the pinned
               ``NODE_MONITORING_AGENT_ADDON_VERSION`` (``addon_version``).
live version   (a ``version`` row) for a cluster that exists, ``eks:DescribeCluster``, and for an upgrade
               ``eks:ListNodegroups`` + ``eks:DescribeNodegroup``: ✗ when the config is older than the
               cluster (EKS's end-of-support upgrade; no downgrade) or a managed node group is at another
               version than the control plane (``UpdateClusterVersion`` refuses), naming the groups.
core add-ons   (rows of kind ``version``) ``eks:DescribeAddonVersions`` of ``kube-proxy``, ``vpc-cni`` and
               ``coredns`` for the minor lists the version pinned in ``versions.EKS_CORE_ADDONS``.
node groups    (a ``quota`` row) Service Quotas ``L-6D54EA21`` of service ``eks``, "Managed node
               groups per cluster" (default 30): the stack's groups (``rules.eks_node_group_count``).
access         who can reach the API: ``?`` when ``cluster.apiAllowedCidrs`` is empty (the public
               endpoint answers any address) or when the caller is listed in ``cluster.admins``
               (the creator gets an entry from pulumi-eks already; a second one fails), ✓ with an
               allow-list; FOUND lists the CIDRs and the admins besides the creator.
permissions    ``iam:SimulatePrincipalPolicy`` for the caller (``sts:GetCallerIdentity``; an
               assumed role is simulated as its role) on the actions ``pulumi up`` starts with,
               those of the stack's provisioner included (``required_actions``).
spot-role      ``gpupools:provisioner: karpenter`` with a Spot pool only: ``iam:GetRole`` of
               ``AWSServiceRoleForEC2Spot``. Without it Karpenter's Spot launches fail with
               ``ServiceLinkedRoleCreationNotPermitted`` (its controller policy may not create
               the role), and Karpenter then marks Spot unavailable and buys on-demand without
               an error (aws/karpenter-provider-aws v1.14.1 ``pkg/providers/instance/instance.go``:
               ``MarkCapacityTypeUnavailable(karpv1.CapacityTypeSpot)``; ``troubleshooting.md``,
               "Missing Service Linked Role"). The ✗ row names the fix.
reservation    per ``gpuPools[].reservations`` entry, ``ec2:DescribeCapacityReservations`` of its
               ID (``reservation_check``): ✗ when it is not found, not ``active`` or
               ``scheduled``, of an instance type the pool does not use, in another zone, or of
               another kind than the config's ``kind`` (``capacity-block`` vs ``default``); ``?``
               when it ends (a Capacity Block always does; so may an ODCR) within
               ``report.RESERVATION_END_WARNING`` (14 days);
               FOUND shows state, type, zone, free/total instances and the end.
=============  ================================================================================

A call the endpoint cannot answer (access denied, an API it lacks, no credentials) gives ``?`` rows
with the reason, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpupools import rules
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.conventions import CapacityType
from gpupools.preflight.demand import PoolDemand, stack_demands, zone_pairs
from gpupools.preflight.report import NO_POOL, NO_ZONE, RESERVATION_END_WARNING, Check, CheckKind, Status, unknown
from gpupools.preflight.sdk import AWS_MODULES, require
from gpupools.preflight.stack import Target
from gpupools.rules import VERSION_PATH, version_change_error
from gpupools.specs import PoolSpec, Provisioner, ReservationSpec, StackSpec
from gpupools.versions import (
    EKS_CORE_ADDONS,
    NODE_MONITORING_AGENT_ADDON,
    NODE_MONITORING_AGENT_ADDON_VERSION,
    minor,
    minor_key,
)

ClientFactory = Callable[[str], Any]
"""``name -> botocore client`` (``ec2``, ``service-quotas``, ``eks``, ``iam``, ``sts``)."""

DEFAULT_ZONE_COUNT = 3
"""As ``gpupools.aws.cluster.DEFAULT_ZONE_COUNT``: zones used when ``cluster.zones`` is empty."""


# --- vCPU quotas ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quota:
    """One EC2 vCPU quota (service code ``ec2``)."""

    code: str
    name: str


STANDARD_ON_DEMAND = Quota("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances")
STANDARD_SPOT = Quota("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests")
G_VT_ON_DEMAND = Quota("L-DB2E81BA", "Running On-Demand G and VT instances")
G_VT_SPOT = Quota("L-3819A6DF", "All G and VT Spot Instance Requests")
P_ON_DEMAND = Quota("L-417A185B", "Running On-Demand P instances")
P_SPOT = Quota("L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests")
P5_SPOT = Quota("L-C4BD4855", "All P5 Spot Instance Requests")
"""The EC2 vCPU quotas by instance family letter. AWS publishes no machine-readable family -> code
map; these codes are the ones the Service Quotas console lists under those names, as recorded by
meadowrun (``src/meadowrun/aws_integration/quotas.py``, ``_QUOTA_TO_INSTANCE_FAMILY``: standard
letters ``acdhimrtz``, ``g``/``vt``, ``p``) and SkyPilot's AWS quota tooling (P5 Spot ``L-C4BD4855``,
separate from P4/P3/P2 Spot). Each row shows the ``QuotaName`` the API returns, so a code that
ever pointed elsewhere would be visible in the table."""

NODE_GROUP_QUOTA = Quota("L-6D54EA21", "Managed node groups per cluster")
"""EKS's per-cluster node group quota (service code ``eks``; ``rules.EKS_MANAGED_NODE_GROUPS_QUOTA``)."""

STANDARD_FAMILIES = frozenset("acdhimrtz")


def instance_family(instance_type: str) -> str:
    """The letters before the generation digit: ``g4dn.xlarge`` -> ``g``, ``vt1.3xlarge`` -> ``vt``."""
    match = re.match(r"[a-z]+", instance_type.lower())
    return match.group() if match else ""


def quota_for(instance_type: str, capacity: CapacityType) -> Quota | None:
    """The vCPU quota ``instance_type`` counts against for ``capacity``; ``None`` if not known here."""
    family = instance_family(instance_type)
    spot = capacity is CapacityType.SPOT
    if family in STANDARD_FAMILIES:
        return STANDARD_SPOT if spot else STANDARD_ON_DEMAND
    if family in ("g", "vt"):
        return G_VT_SPOT if spot else G_VT_ON_DEMAND
    if family == "p":
        if not spot:
            return P_ON_DEMAND
        return P5_SPOT if instance_type.lower().startswith("p5") else P_SPOT
    return None


@dataclass
class QuotaNeed:
    """The vCPUs one quota must cover, and where they come from (``gpu1 6x4``)."""

    quota: Quota
    vcpus: int = 0
    parts: list[str] | None = None

    def add(self, pool: str, nodes: int, vcpus: int) -> None:
        self.vcpus += nodes * vcpus
        self.parts = [*(self.parts or []), f"{pool} {nodes}x{vcpus}"]

    @property
    def needed(self) -> str:
        return f"{self.vcpus} vCPU = " + " + ".join(self.parts or [])


def quota_needs(demands: Sequence[PoolDemand], vcpus: dict[str, int]) -> tuple[dict[str, QuotaNeed], list[str]]:
    """vCPUs per quota at every pool's maximum; also the instance types without a known quota.

    A pool may get all its nodes from any of its types, so each quota its types touch must cover
    the whole pool at its largest type.
    """
    needs: dict[str, QuotaNeed] = {}
    unmapped: list[str] = []
    for demand in demands:
        size = max(vcpus[t] for t in demand.instance_types)
        quotas = {}
        for instance_type in demand.instance_types:
            quota = quota_for(instance_type, demand.capacity)
            if quota is None:
                unmapped.append(instance_type)
            else:
                quotas[quota.code] = quota
        for quota in quotas.values():
            needs.setdefault(quota.code, QuotaNeed(quota)).add(demand.pool, demand.max_nodes, size)
    return needs, unmapped


# --- permissions ---------------------------------------------------------------------------------

NETWORK_ACTIONS = (
    "ec2:CreateVpc",
    "ec2:CreateSubnet",
    "ec2:CreateInternetGateway",
    "ec2:AllocateAddress",
    "ec2:CreateNatGateway",
    "ec2:CreateRouteTable",
)
"""The created VPC (``gpupools.aws.network``); not needed with ``network.vpcId``."""

DEPLOY_ACTIONS = (
    "ec2:CreateLaunchTemplate",
    "eks:CreateCluster",
    "eks:CreateNodegroup",
    "eks:CreateAccessEntry",
    "eks:CreateAddon",
    "iam:CreateRole",
    "iam:AttachRolePolicy",
    "iam:PassRole",
    "iam:CreateOpenIDConnectProvider",
)
"""The first call of each resource type every EKS stack creates (``tests/snapshots/aws-dev.json``):
launch templates, the cluster (pulumi-eks, with its OIDC provider for IRSA and its add-ons), the
system node group, the node role's access entry, the IAM roles and policies. ``iam:PassRole``
because CreateCluster and CreateNodegroup hand roles to EKS."""

AUTOSCALER_ACTIONS = ("autoscaling:CreateOrUpdateTags", "iam:PutRolePolicy")
"""``gpupools:provisioner: cluster-autoscaler``: the node-template tags on the groups' ASGs and the
autoscaler role's inline policy."""

KARPENTER_ACTIONS = (
    "ec2:CreateTags",
    "sqs:CreateQueue",
    "sqs:SetQueueAttributes",
    "events:PutRule",
    "events:PutTargets",
    "iam:CreatePolicy",
    "iam:RemoveRoleFromInstanceProfile",
)
"""``gpupools:provisioner: karpenter`` (``tests/snapshots/aws-karpenter-dev.json``): the discovery
tag on the cluster security group, the interruption queue and its policy, the EventBridge rules and
their targets, the controller's managed policies, and taking the node role out of the instance
profiles Karpenter made (what the node role's delete does first)."""

AUTO_MODE_ACTIONS = ("eks:AssociateAccessPolicy", "iam:RemoveRoleFromInstanceProfile")
"""``gpupools:provisioner: auto-mode``: the Auto Mode node role's ``EC2`` access entry gets the
``AmazonEKSAutoNodePolicy`` access policy (``gpupools.aws.auto_mode``), and the node role's delete
takes it out of the instance profile Auto Mode made for it
(``deployer_policy.auto_mode_instance_profile_arns``); the rest are ``DEPLOY_ACTIONS`` but
``NODE_GROUP_DEPLOY_ACTIONS``."""

NODE_GROUP_DEPLOY_ACTIONS = ("ec2:CreateLaunchTemplate", "eks:CreateNodegroup", "eks:CreateAddon")
"""The ``DEPLOY_ACTIONS`` of launch templates, node groups and add-ons, which an Auto Mode stack has
none of (and its deployer policy does not grant: ``deployer_policy.NODE_GROUP_EKS_ACTIONS``)."""


RESERVATION_ACTIONS = ("ec2:DescribeCapacityReservations",)
"""A stack with ``gpuPools[].reservations``: the reads of the reservation rows."""


def required_actions(spec: StackSpec) -> tuple[str, ...]:
    """The actions the permission rows simulate for ``spec``: its network, the common EKS
    resources and those of its provisioner (and the reservation reads, when it has reservations)."""
    provisioner: tuple[str, ...] = {
        Provisioner.CLUSTER_AUTOSCALER: AUTOSCALER_ACTIONS,
        Provisioner.KARPENTER: KARPENTER_ACTIONS,
        Provisioner.AUTO_MODE: AUTO_MODE_ACTIONS,
    }[spec.provisioner]
    reservations = RESERVATION_ACTIONS if any(p.reservations for p in spec.pools) else ()
    deploy: tuple[str, ...] = DEPLOY_ACTIONS
    if spec.provisioner is Provisioner.AUTO_MODE:
        deploy = tuple(a for a in DEPLOY_ACTIONS if a not in NODE_GROUP_DEPLOY_ACTIONS)
    return (*(() if spec.network.vpc_id else NETWORK_ACTIONS), *deploy, *provisioner, *reservations)


EC2_IDS = {
    "vpc": "vpc-00000000000000000",
    "subnet": "subnet-00000000000000000",
    "internet-gateway": "igw-00000000000000000",
    "elastic-ip": "eipalloc-00000000000000000",
    "natgateway": "nat-00000000000000000",
    "route-table": "rtb-00000000000000000",
    "placement-group": "gpupools-efa-00000000",
    "security-group": "sg-00000000000000000",
    "security-group-rule": "sgr-00000000000000000",
}
"""The resource IDs network and EFA actions are simulated on (EC2's ID formats; nothing is created)."""


def simulation_resources(action: str, spec: StackSpec, account: str, partition: str, region: str) -> tuple[str, ...]:
    """The resource ARN an action is simulated on, of the resource type IAM authorizes it on (IAM
    service authorization reference), as ``pulumi up`` would touch it: one of the stack's own roles
    or policies, a Karpenter instance profile of its cluster, its EKS cluster, or an EKS OIDC issuer
    (the deployer policy scopes these actions to them: ``gpupools.aws.deployer_policy``); empty
    (``*``) for every other action."""
    from gpupools.aws import deployer_policy
    from gpupools.aws.karpenter import queue_name_prefix

    cluster = spec.cluster.name
    iam = f"arn:{partition}:iam::{account}"
    if spec.provisioner is Provisioner.AUTO_MODE:
        auto_mode = _auto_mode_simulation_resource(action, cluster, account, partition, region)
        if auto_mode:
            return auto_mode
    if action in ("iam:CreateRole", "iam:AttachRolePolicy", "iam:PassRole"):
        return (f"{iam}:role/{cluster}-node-role-0000000",)
    if action == "iam:PutRolePolicy":
        return (f"{iam}:role/{cluster}-{deployer_policy.AUTOSCALER_COMPONENT}-role-0000000",)
    if action == "iam:CreatePolicy":
        return (f"{iam}:policy/{cluster}-{deployer_policy.KARPENTER_COMPONENT}-node-lifecycle-0000000",)
    if action == "iam:RemoveRoleFromInstanceProfile":
        # Karpenter v1.14.1's path and name (deployer_policy.karpenter_instance_profile_arns).
        uid = "00000000-0000-0000-0000-000000000000"
        return (f"{iam}:instance-profile/karpenter/{region}/{cluster}/{uid}/{cluster}_1234567890",)
    if action == "iam:CreateOpenIDConnectProvider":
        return (f"{iam}:oidc-provider/oidc.eks.{region}.amazonaws.com/id/0",)
    if action in deployer_policy.EKS_CLUSTER_ACTIONS:
        return (f"arn:{partition}:eks:{region}:{account}:cluster/{cluster}",)
    if action == deployer_policy.LAUNCH_TEMPLATE_CREATE:
        return (f"arn:{partition}:ec2:{region}:{account}:launch-template/lt-00000000000000000",)
    if action == "ec2:CreateTags":  # Karpenter's discovery tag on the cluster security group
        return (f"arn:{partition}:ec2:{region}:{account}:security-group/sg-00000000000000000",)
    if action in deployer_policy.NETWORK_RESOURCE_TYPES:
        # One ARN per resource type IAM authorizes it on: the created one's and the stack's existing ones.
        return tuple(
            f"arn:{partition}:ec2:{region}:{account}:{kind}/{EC2_IDS[kind]}"
            for kind in deployer_policy.NETWORK_RESOURCE_TYPES[action]
        )
    if action in deployer_policy.AUTOSCALING_TAG_WRITES:
        group = f"eks-{cluster}-system-00000000-0000-0000-0000-000000000000"
        return (f"arn:{partition}:autoscaling:{region}:{account}:autoScalingGroup:0:autoScalingGroupName/{group}",)
    karpenter = f"{queue_name_prefix(cluster)}00000000000000000000000000"
    if action.startswith("sqs:"):
        return (f"arn:{partition}:sqs:{region}:{account}:{karpenter}",)
    if action.startswith("events:"):
        return (f"arn:{partition}:events:{region}:{account}:rule/{karpenter}",)
    return ()


def _auto_mode_simulation_resource(action: str, cluster: str, account: str, partition: str, region: str) -> tuple[str, ...]:
    """``simulation_resources`` of the actions whose resource differs under Auto Mode (empty for the
    others): the role writes on the Auto Mode node role (``<cluster>-auto-node-role-...``; there is no
    ``<cluster>-node-role-*``), ``iam:PassRole`` of the service role (the one role the deployer passes:
    ``deployer_policy.passed_role_arns``), the node access entry's access policy, and the instance
    profile Auto Mode made for the node role (``instance-profile/eks*``)."""
    from gpupools.aws import deployer_policy
    from gpupools.aws.iam import service_role_name

    iam = f"arn:{partition}:iam::{account}"
    node_role = f"{cluster}-{deployer_policy.AUTO_MODE_NODE_ROLE}-0000000"
    if action in ("iam:CreateRole", "iam:AttachRolePolicy"):
        return (f"{iam}:role/{node_role}",)
    if action == "iam:PassRole":
        return (f"{iam}:role/{service_role_name(cluster + '-eks')}-0000000",)
    if action == "eks:AssociateAccessPolicy":
        # access-entry/<cluster>/<identity type>/<identity account>/<identity name>/<uuid> (service reference)
        uuid = "00000000-0000-0000-0000-000000000000"
        return (f"arn:{partition}:eks:{region}:{account}:access-entry/{cluster}/role/{account}/{node_role}/{uuid}",)
    if action == "iam:RemoveRoleFromInstanceProfile":
        return (f"{iam}:instance-profile/eks-00000000-0000-0000-0000-000000000000",)
    return ()


def simulation_context(
    partition: str,
    account: str,
    cluster_name: str,
    permissions_boundary: str | None = None,
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
) -> list[dict[str, Any]]:
    """The condition values of the scoped calls: the node role passed to EKS, a node policy
    attached (under Auto Mode the Auto Mode node role's ``AmazonEKSWorkerNodeMinimalPolicy``: the
    other provisioners' node policies are not among what its policy attaches), the caller's account
    (the policy's ``${aws:PrincipalAccount}`` variable), the stack tag a launch template is created with
    and its Auto Scaling groups' ownership tag (simulation reads no resource's tags: they are given as
    context) and, for a stack with ``gpupools:cluster.permissionsBoundary``, the boundary the roles
    carry."""
    from gpupools.aws.auto_mode import NODE_MANAGED_POLICIES as AUTO_MODE_NODE_POLICIES
    from gpupools.aws.iam import ownership_tag
    from gpupools.aws.stack_tag import STACK_TAG

    node_policy = AUTO_MODE_NODE_POLICIES[0] if provisioner is Provisioner.AUTO_MODE else "AmazonEKSWorkerNodePolicy"
    entries = [
        {"ContextKeyName": f"aws:RequestTag/{STACK_TAG}", "ContextKeyValues": [cluster_name], "ContextKeyType": "string"},
        # The stack's network and EFA resources carry the stack tag; the cluster security group EKS's.
        {"ContextKeyName": f"aws:ResourceTag/{STACK_TAG}", "ContextKeyValues": [cluster_name], "ContextKeyType": "string"},
        {
            "ContextKeyName": "aws:ResourceTag/aws:eks:cluster-name",
            "ContextKeyValues": [cluster_name],
            "ContextKeyType": "string",
        },
        {"ContextKeyName": "aws:TagKeys", "ContextKeyValues": ["karpenter.sh/discovery"], "ContextKeyType": "stringList"},
        {
            "ContextKeyName": f"autoscaling:ResourceTag/{ownership_tag(cluster_name)}",
            "ContextKeyValues": ["owned"],
            "ContextKeyType": "string",
        },
        {"ContextKeyName": "aws:PrincipalAccount", "ContextKeyValues": [account], "ContextKeyType": "string"},
        {"ContextKeyName": "iam:PassedToService", "ContextKeyValues": ["eks.amazonaws.com"], "ContextKeyType": "string"},
        {
            "ContextKeyName": "iam:PolicyARN",
            "ContextKeyValues": [f"arn:{partition}:iam::aws:policy/{node_policy}"],
            "ContextKeyType": "string",
        },
    ]
    if permissions_boundary:
        entries.append(
            {"ContextKeyName": "iam:PermissionsBoundary", "ContextKeyValues": [permissions_boundary], "ContextKeyType": "string"}
        )
    return entries


# --- capacity reservations -----------------------------------------------------------------------

USABLE_STATES = ("active", "scheduled")
"""Reservation states the stack can rely on: ``active`` now, ``scheduled`` from its start date (a
Capacity Block or future-dated ODCR; EC2 API ``CapacityReservation.State``). Every other state
(``expired``, ``cancelled``, ``pending``, ``failed``, ``payment-pending``, ``payment-failed``,
``assessing``, ``delayed``, ``unsupported``) gives no capacity."""


def reservation_zone(pool: PoolSpec, reservation: ReservationSpec, cluster_zones: Sequence[str]) -> str | None:
    """The zone a reservation must be in: its configured ``zone``, else the pool's only zone
    (``rules.check_reservations`` allows leaving it out only then)."""
    if reservation.zone is not None:
        return reservation.zone
    zones = pool.zones or tuple(cluster_zones)
    return zones[0] if len(zones) == 1 else None


def reservation_check(
    pool: PoolSpec, reservation: ReservationSpec, zone: str | None, answer: Mapping[str, Any], now: datetime
) -> Check:
    """One ``reservation`` row from a ``DescribeCapacityReservations`` entry (pure)."""
    state = str(answer.get("State", "unknown"))
    instance_type = str(answer.get("InstanceType", "?"))
    found_zone = str(answer.get("AvailabilityZone", "?"))
    kind = str(answer.get("ReservationType") or "default")
    available, total = answer.get("AvailableInstanceCount", 0), answer.get("TotalInstanceCount", 0)
    end = answer.get("EndDate")
    start = answer.get("StartDate")
    found = f"{reservation.id} {state} {kind} {instance_type} {found_zone} {available}/{total} free"
    if state == "scheduled" and isinstance(start, datetime):
        found += f", starts {start:%Y-%m-%d %H:%M}Z"
    problems = []
    if state not in USABLE_STATES:
        problems.append(f"state {state} gives no capacity")
    if instance_type not in pool.instance_types:
        problems.append(f"{instance_type} is not one of the pool's types")
    if zone is not None and found_zone != zone:
        problems.append(f"in {found_zone}, not {zone}")
    if reservation.capacity_block != (kind == "capacity-block"):
        # The node groups are built from the config's kind (a Capacity Block needs CAPACITY_BLOCK groups).
        said = "capacityBlock" if reservation.capacity_block else "odcr"
        problems.append(f"the config says kind {said}, EC2 says {kind}")
    warning = ""
    if isinstance(end, datetime):
        left = end.astimezone(timezone.utc) - now
        found += f", ends {end.astimezone(timezone.utc):%Y-%m-%d %H:%M}Z"
        if left <= RESERVATION_END_WARNING and not problems:
            warning = f" (in {max(left.days, 0)} d: the pool then runs on Spot/on-demand)"
    needed = f"active or scheduled, {'/'.join(pool.instance_types)}" + (f", {zone}" if zone else "")
    if problems:
        return Check(CheckKind.RESERVATION, pool.name, zone or NO_ZONE, found + ": " + "; ".join(problems), needed, Status.FAILED)
    status = Status.UNKNOWN if warning else Status.OK
    return Check(CheckKind.RESERVATION, pool.name, zone or NO_ZONE, found + warning, needed, status)


SPOT_SERVICE_LINKED_ROLE = "AWSServiceRoleForEC2Spot"
"""The EC2 Spot service-linked role's name (EC2 user guide, "Service-linked role for Spot Instance
requests"), made by ``spot.amazonaws.com``."""

SPOT_ROLE_FIX = "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"
"""Karpenter's fix (v1.14.1 ``website/content/en/docs/troubleshooting.md``, "Missing Service Linked Role")."""


def principal_arn(caller_arn: str, role_arn: Callable[[str], str | None]) -> str | None:
    """The IAM principal to simulate for ``sts:GetCallerIdentity``'s ARN.

    An assumed-role session (``arn:aws:sts::<acct>:assumed-role/<role>/<session>``) is simulated as
    its role; the role's ARN carries its path, which the session ARN drops, so it is looked up
    (``role_arn``) and built path-less when that is denied. Users are simulated as themselves; the
    root user and federated users cannot be simulated (``None``).
    """
    match = re.fullmatch(r"arn:(aws[\w-]*):sts::(\d+):assumed-role/([^/]+)/.+", caller_arn)
    if match:
        partition, account, role = match.groups()
        return role_arn(role) or f"arn:{partition}:iam::{account}:role/{role}"
    if re.fullmatch(r"arn:aws[\w-]*:iam::\d+:user/.+", caller_arn):
        return caller_arn
    return None


# --- the checks ----------------------------------------------------------------------------------


def reason(error: BaseException) -> str:
    """A one-line reason for a ``?`` row: the error code and the first line of the message."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        err = response.get("Error") or {}
        code = err.get("Code") or "error"
        message = str(err.get("Message") or "").splitlines()[0:1]
        operation = getattr(error, "operation_name", "")
        text = f"{operation} {code}" + (f": {message[0]}" if message and not message[0].startswith("<") else "")
        return text.strip()[:160]
    first = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {first}"[:160]


class AwsPreflight:
    """The AWS checks of one stack. ``clients`` makes botocore clients (default: boto3's chain)."""

    def __init__(self, target: Target, clients: ClientFactory | None = None) -> None:
        self.target = target
        self.region = target.region
        self.clients = clients or default_clients(target.region)
        self._caller: tuple[str, str | None] | None = None
        require("AWS", AWS_MODULES)
        import botocore.exceptions
        import botocore.parsers

        # ResponseParserError is not a BotoCoreError: an endpoint answering an API it lacks with an
        # HTML error page (as moto does) raises it from the parser.
        self.errors: tuple[type[BaseException], ...] = (
            botocore.exceptions.BotoCoreError,
            botocore.exceptions.ClientError,
            botocore.parsers.ResponseParserError,
        )

    def run(self) -> list[Check]:
        spec = self.target.spec
        zones, zone_reason = self.cluster_zones()
        demands = stack_demands(spec, zones or ())
        checks: list[Check] = []
        checks += self.offered(demands, zone_reason)
        checks += self.quotas(demands)
        checks += self.version()
        checks += self.live_version()
        checks += self.addon_version()
        checks += self.core_addons()
        checks += self.node_group_quota()
        checks += self.access()
        checks += self.permissions()
        checks += self.spot_role()
        checks += self.reservations(zones or ())
        return checks

    # zones and offerings

    def region_zones(self) -> list[str]:
        """The region's available zones that need no opt-in, sorted (``default_zones``' query)."""
        response = self.clients("ec2").describe_availability_zones(
            Filters=[
                {"Name": "state", "Values": ["available"]},
                {"Name": "opt-in-status", "Values": ["opt-in-not-required"]},
            ]
        )
        return sorted(z["ZoneName"] for z in response["AvailabilityZones"])

    def cluster_zones(self) -> tuple[tuple[str, ...] | None, str]:
        if self.target.spec.cluster.zones:
            return self.target.spec.cluster.zones, ""
        try:
            return tuple(self.region_zones()[:DEFAULT_ZONE_COUNT]), ""
        except self.errors as error:
            return None, reason(error)

    def offerings(self, instance_types: Iterable[str]) -> dict[str, set[str]]:
        """``instance type -> zones`` where this account is offered it."""
        found: dict[str, set[str]] = {t: set() for t in instance_types}
        paginator = self.clients("ec2").get_paginator("describe_instance_type_offerings")
        pages = paginator.paginate(LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": sorted(found)}])
        for page in pages:
            for offering in page["InstanceTypeOfferings"]:
                found.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        return found

    def offered(self, demands: Sequence[PoolDemand], zone_reason: str) -> list[Check]:
        if zone_reason:
            pools = sorted({d.pool for d in demands}, key=[d.pool for d in demands].index)
            return [
                unknown(
                    CheckKind.OFFERED, p, "(first 3)", "the region's default zones", "DescribeAvailabilityZones: " + zone_reason
                )
                for p in pools
            ]
        pairs = zone_pairs(demands)
        types = {t for _, instance_types, _ in pairs for t in instance_types}
        try:
            where = self.offerings(types)
        except self.errors as error:
            return [unknown(CheckKind.OFFERED, p, z, ", ".join(ts), reason(error)) for p, ts, z in pairs]
        checks = []
        for pool, instance_types, zone in pairs:
            missing = [t for t in instance_types if zone not in where.get(t, set())]
            offered = [t for t in instance_types if t not in missing]
            found = ", ".join(offered) if offered else "none"
            if missing:
                found += " (not offered: " + ", ".join(missing) + ")"
            status = Status.FAILED if missing else Status.OK
            checks.append(Check(CheckKind.OFFERED, pool, zone, found, ", ".join(instance_types), status))
        return checks

    # quotas

    def vcpus(self, instance_types: Iterable[str]) -> dict[str, int]:
        """vCPUs per type from ``DescribeInstanceTypes``, else the catalogue; types neither knows are left out."""
        wanted = sorted(set(instance_types))
        known = {t: INSTANCE_TYPES[t].vcpus for t in wanted if t in INSTANCE_TYPES}
        try:
            response = self.clients("ec2").describe_instance_types(InstanceTypes=wanted)
        except self.errors:
            return known
        for item in response["InstanceTypes"]:
            known[item["InstanceType"]] = int(item["VCpuInfo"]["DefaultVCpus"])
        return known

    def quota_value(self, quota: Quota) -> tuple[float, str]:
        """The applied value (``GetServiceQuota``), else the default (``GetAWSDefaultServiceQuota``):
        Service Quotas returns no applied value for some quotas ("If the applied quota value is not
        available for a quota, the quota is not retrieved", GetServiceQuota API reference)."""
        client = self.clients("service-quotas")
        try:
            response = client.get_service_quota(ServiceCode="ec2", QuotaCode=quota.code)
        except client.exceptions.NoSuchResourceException:
            response = client.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=quota.code)
        item = response["Quota"]
        return float(item["Value"]), str(item.get("QuotaName") or quota.name)

    def quotas(self, demands: Sequence[PoolDemand]) -> list[Check]:
        vcpus = self.vcpus(t for d in demands for t in d.instance_types)
        known = [d for d in demands if all(t in vcpus for t in d.instance_types)]
        checks = [
            unknown(
                CheckKind.QUOTA,
                d.pool,
                NO_ZONE,
                f"{d.capacity.value} vCPUs",
                "vCPUs of " + ", ".join(d.instance_types) + " unknown",
            )
            for d in demands
            if d not in known
        ]
        needs, unmapped = quota_needs(known, vcpus)
        for instance_type in sorted(set(unmapped)):
            pools = ", ".join(sorted({d.pool for d in known if instance_type in d.instance_types}))
            checks.append(
                unknown(CheckKind.QUOTA, pools, NO_ZONE, f"{instance_type} vCPUs", "no EC2 vCPU quota code known for its family")
            )
        for need in needs.values():
            pools = ", ".join(dict.fromkeys(part.split()[0] for part in need.parts or []))
            try:
                value, name = self.quota_value(need.quota)
            except self.errors as error:
                found = f"{need.quota.name} ({need.quota.code}): no answer: {reason(error)}"
                checks.append(Check(CheckKind.QUOTA, pools, NO_ZONE, found, need.needed, Status.UNKNOWN))
                continue
            found = f"{name} ({need.quota.code}): {value:g} vCPU"
            status = Status.OK if value >= need.vcpus else Status.FAILED
            checks.append(Check(CheckKind.QUOTA, pools, NO_ZONE, found, need.needed, status))
        return checks

    # Kubernetes version

    def cluster_versions(self) -> list[dict[str, Any]]:
        client = self.clients("eks")
        versions: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            response = client.describe_cluster_versions(**({"nextToken": token} if token else {}))
            versions.extend(response.get("clusterVersions", []))
            token = response.get("nextToken")
            if not token:
                return versions

    def version(self) -> list[Check]:
        wanted = minor(self.target.spec.cluster.kubernetes_version)
        needed = f"EKS {wanted}"
        try:
            versions = self.cluster_versions()
        except self.errors as error:
            return [unknown(CheckKind.VERSION, NO_POOL, NO_ZONE, needed, reason(error))]
        match = next((v for v in versions if v.get("clusterVersion") == wanted), None)
        if match is None:
            offered = ", ".join(sorted({str(v.get("clusterVersion")) for v in versions}, key=_version_key)) or "none"
            return [
                Check(
                    CheckKind.VERSION,
                    NO_POOL,
                    NO_ZONE,
                    f"not offered in {self.region} (offered: {offered})",
                    needed,
                    Status.FAILED,
                )
            ]
        support = str(match.get("versionStatus") or match.get("status") or "").upper().replace("-", "_")
        status = Status.FAILED if support == "UNSUPPORTED" else Status.OK
        found = f"{wanted}: " + (support.lower().replace("_", " ") or "listed")
        return [Check(CheckKind.VERSION, NO_POOL, NO_ZONE, found, needed, status)]

    def live_version(self) -> list[Check]:
        """An existing cluster: can the control plane go to the config's minor? (``eks:DescribeCluster``;
        for an upgrade ``eks:ListNodegroups`` and ``eks:DescribeNodegroup`` per group.) ✗ when the config
        is older than the cluster (EKS upgraded it at the end of standard support, and cannot downgrade)
        or when a managed node group is at another version than the control plane (``UpdateClusterVersion``
        would refuse): ``rules.version_change_error``, the program's own check. No row
        for a cluster that does not exist yet."""
        spec = self.target.spec
        wanted = minor(spec.cluster.kubernetes_version)
        needed = f"EKS {wanted} from the live version"
        client = self.clients("eks")
        try:
            live = str(client.describe_cluster(name=spec.cluster.name)["cluster"]["version"])
        except self.errors as error:
            if getattr(error, "response", {}).get("Error", {}).get("Code") == "ResourceNotFoundException":
                return []
            return [unknown(CheckKind.VERSION, NO_POOL, NO_ZONE, needed, reason(error))]
        groups: dict[str, str | None] = {}
        if minor_key(wanted) > minor_key(minor(live)):
            try:
                for page in client.get_paginator("list_nodegroups").paginate(clusterName=spec.cluster.name):
                    for group in page.get("nodegroups", []):
                        described = client.describe_nodegroup(clusterName=spec.cluster.name, nodegroupName=group)
                        groups[group] = described["nodegroup"].get("version")
            except self.errors as error:
                return [unknown(CheckKind.VERSION, NO_POOL, NO_ZONE, needed, reason(error))]
        refused = version_change_error(wanted, live, groups, VERSION_PATH)
        if refused is not None:
            return [Check(CheckKind.VERSION, NO_POOL, NO_ZONE, f"cluster at {live}: {refused.rule}", needed, Status.FAILED)]
        found = f"cluster at {live}" + (f", node groups at {minor(live)}" if groups else "")
        return [Check(CheckKind.VERSION, NO_POOL, NO_ZONE, found, needed, Status.OK)]

    def addon_versions(self, addon: str, kubernetes_version: str) -> list[str]:
        """Every version of ``addon`` EKS offers for ``kubernetes_version`` (``DescribeAddonVersions``)."""
        client = self.clients("eks")
        found: list[str] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"addonName": addon, "kubernetesVersion": kubernetes_version}
            if token:
                kwargs["nextToken"] = token
            response = client.describe_addon_versions(**kwargs)
            for item in response.get("addons", []):
                found += [str(v.get("addonVersion")) for v in item.get("addonVersions", [])]
            token = response.get("nextToken")
            if not token:
                return found

    def addon_version(self) -> list[Check]:
        """With ``gpupools:nodeRepair`` on: is the pinned node monitoring agent add-on version
        offered for the cluster's minor? (``CreateAddon`` would reject it otherwise, after the
        cluster and node groups exist.) None with node repair off."""
        spec = self.target.spec
        if not spec.node_repair.enabled:
            return []
        wanted = minor(spec.cluster.kubernetes_version)
        needed = f"{NODE_MONITORING_AGENT_ADDON} {NODE_MONITORING_AGENT_ADDON_VERSION} on EKS {wanted}"
        try:
            offered = self.addon_versions(NODE_MONITORING_AGENT_ADDON, wanted)
        except self.errors as error:
            why = reason(error)
            return [
                unknown(
                    CheckKind.VERSION,
                    NO_POOL,
                    NO_ZONE,
                    needed,
                    why if "AddonVersions" in why else "DescribeAddonVersions: " + why,
                )
            ]
        if NODE_MONITORING_AGENT_ADDON_VERSION in offered:
            return [
                Check(CheckKind.VERSION, NO_POOL, NO_ZONE, f"{NODE_MONITORING_AGENT_ADDON_VERSION}: offered", needed, Status.OK)
            ]
        newest = ", ".join(sorted(set(offered), key=lambda v: [int(n) for n in re.findall(r"\d+", v)], reverse=True)[:3])
        found = f"not offered for EKS {wanted} (offered: {newest or 'none'}); bump NODE_MONITORING_AGENT_ADDON_VERSION or set gpupools:nodeRepair.enabled: false"
        return [Check(CheckKind.VERSION, NO_POOL, NO_ZONE, found, needed, Status.FAILED)]

    def core_addons(self) -> list[Check]:
        """kube-proxy, the VPC CNI and CoreDNS: is each version pinned for the cluster's minor
        (``gpupools.versions.EKS_CORE_ADDONS``) offered by ``DescribeAddonVersions``? One row each;
        ✗ names the newest offered builds to bump to."""
        wanted = minor(self.target.spec.cluster.kubernetes_version)
        pins = EKS_CORE_ADDONS.get(wanted)
        if pins is None:
            return []
        checks = []
        for addon, version in (("kube-proxy", pins.kube_proxy), ("vpc-cni", pins.vpc_cni), ("coredns", pins.coredns)):
            needed = f"{addon} {version} on EKS {wanted}"
            try:
                offered = self.addon_versions(addon, wanted)
            except self.errors as error:
                checks.append(unknown(CheckKind.VERSION, NO_POOL, NO_ZONE, needed, reason(error)))
                continue
            if version in offered:
                checks.append(Check(CheckKind.VERSION, NO_POOL, NO_ZONE, f"{version}: offered", needed, Status.OK))
                continue
            newest = ", ".join(sorted(set(offered), key=lambda v: [int(n) for n in re.findall(r"\d+", v)], reverse=True)[:3])
            newest = newest or "none"
            found = f"not offered (newest: {newest}); bump EKS_CORE_ADDONS in gpupools.versions"
            checks.append(Check(CheckKind.VERSION, NO_POOL, NO_ZONE, found, needed, Status.FAILED))
        return checks

    def node_group_quota(self) -> list[Check]:
        """``quota`` row for EKS's "Managed node groups per cluster" (``L-6D54EA21``): the groups
        the stack creates (``rules.eks_node_group_count``) against the account's applied value."""
        count = rules.eks_node_group_count(self.target.spec)
        needed = f"{count} managed node groups"
        client = self.clients("service-quotas")
        try:
            try:
                response = client.get_service_quota(ServiceCode="eks", QuotaCode=NODE_GROUP_QUOTA.code)
            except client.exceptions.NoSuchResourceException:
                response = client.get_aws_default_service_quota(ServiceCode="eks", QuotaCode=NODE_GROUP_QUOTA.code)
        except self.errors as error:
            return [unknown(CheckKind.QUOTA, NO_POOL, NO_ZONE, needed, reason(error))]
        value = float(response["Quota"]["Value"])
        status = Status.OK if count <= value else Status.FAILED
        found = f"{NODE_GROUP_QUOTA.name}: {value:g}" + ("" if status is Status.OK else "; raise it (Service Quotas, eks)")
        return [Check(CheckKind.QUOTA, NO_POOL, NO_ZONE, found, needed, status)]

    def access(self) -> list[Check]:
        """``access`` row: who can reach the cluster's API, from the config. ✓ with an allow-list,
        ``?`` when ``apiAllowedCidrs`` is empty (the public endpoint answers every address) and ✗
        when the caller is listed in ``admins`` (pulumi-eks already gives the cluster's creator an
        access entry, ``bootstrapClusterCreatorAdminPermissions``, so a second entry for the same
        principal fails with ``ResourceInUseException``)."""
        cluster = self.target.spec.cluster
        admins = ", ".join(cluster.admins) or "none"
        needed = "API endpoint allow-list and admins"
        who = f"admins: the identity that creates the cluster + {len(cluster.admins)} ({admins})"
        try:
            _, principal = self.caller()
        except self.errors as error:
            # The caller is unknown: say why, with what the config alone tells.
            cidrs = ", ".join(cluster.api_allowed_cidrs) or "0.0.0.0/0 (set gpupools:cluster.apiAllowedCidrs)"
            return [unknown(CheckKind.ACCESS, NO_POOL, NO_ZONE, needed, f"{reason(error)}; public endpoint: {cidrs}; {who}")]
        if principal and principal in cluster.admins:
            found = f"{principal} is in gpupools:cluster.admins; remove it if it creates the cluster (it gets an entry already)"
            return [Check(CheckKind.ACCESS, NO_POOL, NO_ZONE, found, needed, Status.UNKNOWN)]
        if not cluster.api_allowed_cidrs:
            found = f"public endpoint open to 0.0.0.0/0 (set gpupools:cluster.apiAllowedCidrs); {who}"
            return [Check(CheckKind.ACCESS, NO_POOL, NO_ZONE, found, needed, Status.UNKNOWN)]
        found = f"public endpoint: {', '.join(cluster.api_allowed_cidrs)}; {who}"
        return [Check(CheckKind.ACCESS, NO_POOL, NO_ZONE, found, needed, Status.OK)]

    # permissions

    def caller(self) -> tuple[str, str | None]:
        """The caller's ARN (``sts:GetCallerIdentity``) and the principal to simulate for it
        (``principal_arn``), asked once per run (the access and permissions rows share it)."""
        if self._caller is None:
            arn = str(self.clients("sts").get_caller_identity()["Arn"])
            self._caller = (arn, principal_arn(arn, self.role_arn))
        return self._caller

    def role_arn(self, role: str) -> str | None:
        try:
            return str(self.clients("iam").get_role(RoleName=role)["Role"]["Arn"])
        except self.errors:
            return None

    def simulate(self, principal: str, actions: Sequence[str]) -> dict[str, str]:
        """``action -> EvalDecision`` (``allowed``, ``implicitDeny``, ``explicitDeny``). The IAM
        actions the deployer policy scopes to the stack's own roles and policies are simulated on an
        ARN of that shape with the condition values ``pulumi up`` sends (``simulation_request``);
        ``*`` would match none of the scoped statements."""
        decisions: dict[str, str] = {}
        account = principal.split(":")[4]
        partition = principal.split(":")[1]
        groups: dict[tuple[str, ...], list[str]] = {}
        for action in actions:
            groups.setdefault(simulation_resources(action, self.target.spec, account, partition, self.target.region), []).append(
                action
            )
        for resources, group in groups.items():
            decisions.update(self._simulate(principal, group, resources, partition))
        return decisions

    def _simulate(self, principal: str, actions: Sequence[str], resources: tuple[str, ...], partition: str) -> dict[str, str]:
        client = self.clients("iam")
        decisions: dict[str, str] = {}
        marker: str | None = None
        while True:
            kwargs: dict[str, Any] = {"PolicySourceArn": principal, "ActionNames": list(actions)}
            if resources:
                kwargs["ResourceArns"] = list(resources)
                spec = self.target.spec
                kwargs["ContextEntries"] = simulation_context(
                    partition, principal.split(":")[4], spec.cluster.name, spec.cluster.permissions_boundary, spec.provisioner
                )
            if marker:
                kwargs["Marker"] = marker
            response = client.simulate_principal_policy(**kwargs)
            for result in response["EvaluationResults"]:
                decisions[result["EvalActionName"]] = result["EvalDecision"]
            marker = response.get("Marker") if response.get("IsTruncated") else None
            if not marker:
                return decisions

    def permissions(self) -> list[Check]:
        actions = required_actions(self.target.spec)
        services = list(dict.fromkeys(a.split(":")[0] for a in actions))
        by_service = {s: [a for a in actions if a.startswith(s + ":")] for s in services}

        def needed(service: str) -> str:
            count = len(by_service[service])
            return f"{service}: {count} action{'s' if count > 1 else ''}"

        try:
            caller, principal = self.caller()
            if principal is None:
                why = f"{caller} cannot be simulated (only IAM users and assumed roles can)"
                return [unknown(CheckKind.PERMISSIONS, NO_POOL, NO_ZONE, needed(s), why) for s in services]
            decisions = self.simulate(principal, actions)
        except self.errors as error:
            return [unknown(CheckKind.PERMISSIONS, NO_POOL, NO_ZONE, needed(s), reason(error)) for s in services]
        checks = []
        for service in services:
            denied = [a for a in by_service[service] if decisions.get(a) != "allowed"]
            if denied:
                found = "denied: " + ", ".join(f"{a.split(':')[1]} ({decisions.get(a, 'not evaluated')})" for a in denied)
            else:
                found = f"all {len(by_service[service])} allowed"
            status = Status.FAILED if denied else Status.OK
            checks.append(Check(CheckKind.PERMISSIONS, NO_POOL, NO_ZONE, found, needed(service), status))
        return checks

    # the Spot service-linked role (Karpenter)

    def spot_role(self) -> list[Check]:
        """One ``spot-role`` row when Karpenter (also EKS Auto Mode's) provisions and a pool allows Spot,
        else none. On Auto Mode whether the role is needed is not documented; the row stays, as for
        Karpenter, since a missing role fails every Spot launch of a Karpenter-based provisioner."""
        spec = self.target.spec
        spot_pools = [p.name for p in spec.pools if p.spot]
        if not spec.provisioner.node_pools or not spot_pools:
            return []
        pools = ", ".join(spot_pools)
        needed = f"{SPOT_SERVICE_LINKED_ROLE} (Karpenter buys Spot)"
        client = self.clients("iam")
        try:
            role = client.get_role(RoleName=SPOT_SERVICE_LINKED_ROLE)["Role"]
        except client.exceptions.NoSuchEntityException:
            found = f"missing: Karpenter would buy on-demand only; create it: {SPOT_ROLE_FIX}"
            return [Check(CheckKind.SPOT_ROLE, pools, NO_ZONE, found, needed, Status.FAILED)]
        except self.errors as error:
            return [unknown(CheckKind.SPOT_ROLE, pools, NO_ZONE, needed, reason(error))]
        return [Check(CheckKind.SPOT_ROLE, pools, NO_ZONE, f"present ({role.get('Path', '/')})", needed, Status.OK)]

    # capacity reservations

    def reservations(self, cluster_zones: Sequence[str], now: datetime | None = None) -> list[Check]:
        """One ``reservation`` row per ``gpuPools[].reservations`` entry (module docstring). One call
        per ID: a single unknown ID fails a call naming several (``InvalidCapacityReservationId.NotFound``)."""
        now = now or datetime.now(timezone.utc)
        checks = []
        for pool in self.target.spec.pools:
            for reservation in pool.reservations:
                zone = reservation_zone(pool, reservation, cluster_zones)
                needed = f"active or scheduled, {'/'.join(pool.instance_types)}" + (f", {zone}" if zone else "")
                try:
                    response = self.clients("ec2").describe_capacity_reservations(CapacityReservationIds=[reservation.id])
                    answers = response.get("CapacityReservations") or []
                except self.errors as error:
                    code = (getattr(error, "response", None) or {}).get("Error", {}).get("Code", "")
                    if code.startswith("InvalidCapacityReservationId"):
                        found = f"{reservation.id}: not found in {self.region} for this account ({code})"
                        checks.append(Check(CheckKind.RESERVATION, pool.name, zone or NO_ZONE, found, needed, Status.FAILED))
                    else:
                        why = reason(error)
                        why = why if why.startswith("DescribeCapacityReservations") else "DescribeCapacityReservations: " + why
                        checks.append(unknown(CheckKind.RESERVATION, pool.name, zone or NO_ZONE, needed, why))
                    continue
                if not answers:
                    found = f"{reservation.id}: not found in {self.region} for this account"
                    checks.append(Check(CheckKind.RESERVATION, pool.name, zone or NO_ZONE, found, needed, Status.FAILED))
                    continue
                checks.append(reservation_check(pool, reservation, zone, answers[0], now))
        return checks


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def default_clients(region: str) -> ClientFactory:
    """boto3 clients for ``region`` from the default credential chain (which honours
    ``AWS_ENDPOINT_URL``, ``AWS_MAX_ATTEMPTS`` and ``AWS_RETRY_MODE``), with bounded timeouts."""
    modules = require("AWS", ("boto3", "botocore.config"))
    session = modules["boto3"].session.Session(region_name=region)
    config = modules["botocore.config"].Config(connect_timeout=10, read_timeout=30)
    cache: dict[str, Any] = {}

    def client(name: str) -> Any:
        if name not in cache:
            cache[name] = session.client(name, config=config)
        return cache[name]

    return client
