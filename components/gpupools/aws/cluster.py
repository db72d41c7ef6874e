"""``EksCluster``: the EKS control plane, its network, the node role and the on-demand system node group.

What it creates, and why:

* **Network.** A dedicated VPC (``network.create_network``: a private subnet per zone behind NAT,
  small public subnets for the NAT gateways and load balancers) or, with ``network.vpcId`` and
  ``network.privateSubnetIds``, the caller's VPC and one private subnet per zone (zone order = cluster
  zone order). Zones: ``cluster.zones``, else the region's first three available zones that need
  no opt-in (local and wavelength zones excluded).
* **Control plane** through ``pulumi_eks.Cluster`` with an explicit ``name`` (the cluster name is
  then known before deploy, so node group names derive from it), no default node group,
  authentication mode ``API`` (access entries only; no ``aws-auth`` ConfigMap to drift), an IAM OIDC
  provider for IRSA, no pulumi-eks security groups (managed node groups use the cluster security
  group EKS creates), the service CIDR 172.20.0.0/16 (which the config rules keep clear of the node
  network), and the control plane's ENIs in the private subnets.
* **Endpoint: private and public.** Private so node and pod traffic to the API server stays in the
  VPC; public so ``pulumi up`` (running wherever CI or an engineer runs it) can reach the API to
  install the autoscaler and device plugin. Access is still authenticated by IAM; the public
  endpoint takes ``gpupools:cluster.apiAllowedCidrs`` (``vpcConfig.publicAccessCidrs``; default
  empty: anywhere, sent as ``0.0.0.0/0`` so that emptying the list reopens the endpoint; the
  preflight warns about an open endpoint).
* **Who is admin.** The identity that creates the cluster (pulumi-eks sets
  ``bootstrapClusterCreatorAdminPermissions``), and every ARN in ``gpupools:cluster.admins``: an
  access entry and the ``AmazonEKSClusterAdminPolicy`` association each (``create_admin_access``),
  so a CI role and the engineers can all run the next ``up``.
* **Version changes an existing cluster accepts** (``live_capacity.check_live_version``, before
  anything is registered): a ``kubernetesVersion`` older than the live control plane (EKS upgraded it
  at the end of standard support) or an upgrade while a managed node group lags the control plane
  (a reserved group held at its version) is one ``ConfigError`` naming the groups and the way out.
* **Control plane logs** (``gpupools:cluster.controlPlaneLogs``, default ``api``, ``audit``,
  ``authenticator``) and the **upgrade policy** (``gpupools:cluster.supportType``, default
  ``STANDARD``: no extended-support billing; EKS upgrades a minor that leaves standard support).
* **Add-ons pinned**: kube-proxy and the VPC CNI (through pulumi-eks) and CoreDNS at the versions
  ``gpupools.versions.EKS_CORE_ADDONS`` pins for the minor, so an ``up`` without a config change
  never rolls them.
* **Cluster service role**: always this component's (``iam.create_cluster_service_role``), aliased
  to the one pulumi-eks made for stacks before 0.3.0, because pulumi-eks's own takes no permissions
  boundary. Whether ``gpupools:cluster.permissionsBoundary`` is set or not, the role keeps its URN,
  so adding or removing a boundary is an in-place change of that role
  (``PutRolePermissionsBoundary`` / ``DeleteRolePermissionsBoundary``), never a new role: a new
  role ARN would replace the cluster (``role_arn`` is ``ForceNew`` in terraform-provider-aws
  ``internal/service/eks/cluster.go``), and the engine would delete the OIDC provider and then fail
  on ``DeleteCluster`` with node groups attached (third EKS review, T2).
* **Permissions boundary** (``gpupools:cluster.permissionsBoundary``): on the node role, the service
  role and the controllers' roles.
* **Node role** with the worker, CNI, ECR read-only and SSM managed policies (every node group
  depends on the attachments, so ``pulumi destroy`` removes the groups first), and its **access
  entry** (type ``EC2_LINUX``), created before any node group so EKS finds it rather than creating
  its own; the entry is then explicit and owned by this stack. ``node_role_arn`` is read from the
  entry, so anything built from it waits for the cluster and the entry.
* **System node group**: on-demand, ``AL2023_x86_64_STANDARD``, across all zones, sized from
  ``systemPool``, labelled ``gpupools.io/role=system`` (the autoscaler and other add-ons select it),
  with the same launch template rules as GPU groups (IMDSv2 only, encrypted gp3, no SSH), created
  at ``minSize`` and updated with its live size afterwards (``node_group.create_managed_node_group``),
  and scale-from-zero tags on its ASG like every group.
* **CoreDNS** as an EKS managed add-on after the system node group, at the version pinned for the
  cluster's minor (``create_coredns_addon``), so a Kubernetes upgrade upgrades it too.
* **Kubeconfig** (``aws eks get-token``; the AWS CLI must be installed where Pulumi runs) as a
  secret output, and a ``kubernetes.Provider`` built from it with ``cluster_identifier`` set to the
  cluster's OIDC issuer URL: the provider is replaced only when the cluster itself is (a replaced
  cluster gets a new issuer, a changed kubeconfig does not), so token or format changes never
  replace every Kubernetes object.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from gpupools import config, rules
from gpupools.aws import naming
from gpupools.aws.asg_tags import create_asg_tags, node_template_tags, resource_tags
from gpupools.aws.auto_mode import AutoModeNodeRole, auto_mode_cluster_args, auto_mode_cluster_policies
from gpupools.aws.iam import create_cluster_service_role, create_node_role
from gpupools.aws.launch_template import create_launch_template
from gpupools.aws.live_capacity import NodeGroupSizes, check_live_version
from gpupools.aws.network import NatStrategy, create_network
from gpupools.aws.node_group import autoscaling_group_name, create_managed_node_group, depends_on_of
from gpupools.conventions import POOL_LABEL, CapacityType, Role, pool_labels
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.specs import Cloud, ClusterSpec, NetworkSpec, SystemPoolSpec, frozen_map
from gpupools.versions import EKS_CORE_ADDONS, EksCoreAddons, minor

TYPE = "gpupools:index:EksCluster"

SYSTEM_POOL = "system"
"""The ``gpupools.io/pool`` value of the system node group."""

SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
"""Amazon Linux 2023, EKS-optimized (AL2 AMIs end with Kubernetes 1.32)."""

SERVICE_CIDR = "172.20.0.0/16"
"""Kubernetes service addresses; ``rules.RESERVED_CIDRS`` keeps the node network clear of it."""

DEFAULT_ZONE_COUNT = 3
"""Zones used when ``cluster.zones`` is empty: three, the usual balance of resilience and NAT cost."""

NODE_ACCESS_ENTRY_TYPE = "EC2_LINUX"


COREDNS_ADDON = "coredns"
COREDNS_RESOLVE_CONFLICTS = "OVERWRITE"
"""On create: adopt the self-managed CoreDNS that EKS installs with every cluster
(``bootstrapSelfManagedAddons`` defaults to true) and set EKS's defaults ("Overwrite - If the
self-managed version of the add-on is installed on your cluster ... Amazon EKS changes the value to
the Amazon EKS default value": EKS API reference, ``CreateAddon.resolveConflicts``). On update: the
add-on's configuration belongs to this stack, so a version upgrade resets edits made outside it
(``UpdateAddon.resolveConflicts``; the same defaults as pulumi-eks's own CoreDNS add-on)."""

COREDNS_PRESERVE = True
"""``DeleteAddon.preserve``: "Specifying this option preserves the add-on software on your cluster
but Amazon EKS stops managing any settings for the add-on" (botocore ``eks`` ``DeleteAddonRequest``);
without it "the add-on software is deleted from your cluster" (EKS user guide
``workloads/eks-add-ons.adoc``). terraform-provider-aws sends it only on delete
(``internal/service/eks/addon.go``, ``resourceAddonDelete``; the attribute is neither ``ForceNew`` nor
part of ``UpdateAddon``), so setting it on an existing add-on is a state-only update. pulumi-eks sets
it on its own kube-proxy add-on (``nodejs/eks/cluster/cluster.ts``)."""


def create_coredns_addon(
    name: str,
    cluster_name: str,
    kubernetes_version: str,
    system_node_group: aws.eks.NodeGroup,
    parent: pulumi.Resource,
) -> aws.eks.Addon:
    """CoreDNS as an EKS managed add-on, at the version pinned for ``kubernetes_version``
    (``gpupools.versions.EKS_CORE_ADDONS``), created after the system node group.

    Why gpupools manages it: pulumi-eks creates its CoreDNS add-on only for a cluster with its
    default node group, Fargate or Auto Mode (``nodejs/eks/cluster/cluster.ts``: "We can only
    enable the coredns addon if we have a node group to place it on"), and ``EksCluster`` skips the
    default node group; the self-managed CoreDNS that EKS bootstraps is never upgraded with the
    control plane. As a managed add-on whose version follows ``kubernetes_version``, a minor upgrade
    upgrades CoreDNS in the same ``pulumi up``.

    Why after the system node group: the add-on waits until its pods run (the provider waits for
    status ``ACTIVE``), and on a new cluster the system group's nodes are the only ones they can run
    on (every GPU group is tainted and starts at zero). Passing pulumi-eks's ``corednsAddonOptions``
    instead would create it inside ``eks.Cluster``, before any node group exists.

    Version: pinned per minor, not EKS's default (``DescribeAddonVersions``' ``defaultVersion``,
    which EKS moves when it publishes a build), so a later ``pulumi up`` without a config change
    never rolls CoreDNS; the preflight checks that EKS offers the pin.

    ``preserve=True`` (``COREDNS_PRESERVE``): deleting the add-on resource leaves CoreDNS running.
    Whatever still runs in the cluster while ``pulumi destroy`` works through it keeps its DNS until
    the cluster itself goes; what must outlive CoreDNS (Karpenter) also depends on the add-on
    (``stacks/aws.py``), so destroy deletes it only after them.
    """
    return aws.eks.Addon(
        f"{name}-coredns",
        cluster_name=cluster_name,
        addon_name=COREDNS_ADDON,
        addon_version=core_addons(kubernetes_version).coredns,
        resolve_conflicts_on_create=COREDNS_RESOLVE_CONFLICTS,
        resolve_conflicts_on_update=COREDNS_RESOLVE_CONFLICTS,
        preserve=COREDNS_PRESERVE,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[system_node_group]),
    )


def core_addon_args(addons: EksCoreAddons) -> dict[str, Any]:
    """The VPC CNI and kube-proxy add-ons of a cluster with node groups, pinned
    (``versions.EKS_CORE_ADDONS``): pulumi-eks otherwise resolves the newest build."""
    return {
        "vpc_cni_options": eks.VpcCniOptionsArgs(addon_version=addons.vpc_cni),
        "kube_proxy_addon_options": eks.KubeProxyAddonOptionsArgs(version=addons.kube_proxy),
    }


def core_addons(kubernetes_version: str) -> EksCoreAddons:
    """The pinned kube-proxy, VPC CNI and CoreDNS versions of ``kubernetes_version``'s minor.

    Raises:
        ConfigError: a minor without pins (``check_cluster`` accepts only minors that have them).
    """
    pins = EKS_CORE_ADDONS.get(minor(kubernetes_version))
    if pins is None:
        raise ConfigError(
            "gpupools:cluster.kubernetesVersion",
            "has no pinned kube-proxy, VPC CNI and CoreDNS add-on versions (gpupools.versions.EKS_CORE_ADDONS has "
            + ", ".join(EKS_CORE_ADDONS)
            + ")",
            kubernetes_version,
        )
    return pins


CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
"""The EKS access policy every ``gpupools:cluster.admins`` entry gets: ``cluster-admin`` on the whole
cluster (EKS user guide, "Review access policy permissions": ``AmazonEKSClusterAdminPolicy``), the
same access pulumi-eks gives the identity that creates the cluster
(``bootstrapClusterCreatorAdminPermissions``), so whoever is listed can run the next ``pulumi up``."""

ADMIN_ACCESS_ENTRY_TYPE = "STANDARD"
"""``CreateAccessEntry.type`` of an IAM role or user that is not a node (botocore ``eks``)."""


def admin_policy_arn(principal_arn: str) -> str:
    """``arn:<partition>:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy`` in the
    principal's own partition (``aws``, ``aws-cn``, ``aws-us-gov``: taken from its ARN, no API call).

    >>> admin_policy_arn("arn:aws:iam::123456789012:role/ci")
    'arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy'
    """
    partition = principal_arn.split(":")[1]
    return f"arn:{partition}:eks::aws:cluster-access-policy/{CLUSTER_ADMIN_POLICY}"


def admin_resource_name(name: str, principal_arn: str) -> str:
    """``<name>-admin-<8 hex digits of the ARN's SHA-256>``: stable when the list is reordered or an
    entry is added or removed (a positional name would replace every later entry)."""
    return f"{name}-admin-{hashlib.sha256(principal_arn.encode()).hexdigest()[:8]}"


def create_admin_access(
    name: str,
    cluster_name: pulumi.Input[str],
    admins: Sequence[str],
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource],
) -> list[aws.eks.AccessPolicyAssociation]:
    """An access entry and a cluster-wide ``AmazonEKSClusterAdminPolicy`` association per admin
    ARN (``gpupools:cluster.admins``). The cluster's authentication mode is ``API``, so these are
    the only way in besides the creator's bootstrap entry (EKS user guide, "Grant IAM users access
    to Kubernetes with EKS access entries")."""
    associations = []
    for principal in admins:
        resource = admin_resource_name(name, principal)
        entry = aws.eks.AccessEntry(
            resource,
            cluster_name=cluster_name,
            principal_arn=principal,
            type=ADMIN_ACCESS_ENTRY_TYPE,
            opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)),
        )
        associations.append(
            aws.eks.AccessPolicyAssociation(
                resource,
                cluster_name=cluster_name,
                principal_arn=entry.principal_arn,
                policy_arn=admin_policy_arn(principal),
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=pulumi.ResourceOptions(parent=parent),
            )
        )
    return associations


OPEN_ENDPOINT = ("0.0.0.0/0",)
"""``vpcConfig.publicAccessCidrs`` of an endpoint open to every address: EKS's default ("The default
value is ``0.0.0.0/0``", botocore ``eks`` ``VpcConfigRequest`` and ``VpcConfigResponse``, so
``DescribeCluster`` returns exactly this for an unrestricted endpoint of an IPv4 cluster)."""


def public_access(cidrs: Sequence[str]) -> list[str]:
    """The public endpoint's allow-list to send: ``cidrs``, or ``OPEN_ENDPOINT`` when empty.

    Sent explicitly rather than left out: the provider's ``public_access_cidrs`` is Optional and
    Computed (terraform-provider-aws ``internal/service/eks/cluster.go``), so an omitted list keeps
    whatever the cluster has, and emptying ``gpupools:cluster.apiAllowedCidrs`` on an existing
    cluster would leave the old allow-list in place. ``OPEN_ENDPOINT`` is what EKS reports for an
    open endpoint, so it never shows a diff.

    >>> public_access([]), public_access(["203.0.113.0/24"])
    (['0.0.0.0/0'], ['203.0.113.0/24'])
    """
    return list(cidrs) or list(OPEN_ENDPOINT)


ENABLE_CONFIG_MAP_MUTABLE = True
"""The Kubernetes provider's ``enableConfigMapMutable``: without it pulumi-kubernetes replaces a
ConfigMap whose ``data`` changes (``provider/pkg/provider/diff.go``, ``forceNewProperties``: ``.data``
and ``.binaryData`` force a new object unless ``enableConfigMapMutable`` is set and the ConfigMap is
not ``immutable``, v4.32.0), and the priority expander's ConfigMap, with its fixed name, is then
deleted and created again each time a pool is added or removed: cluster-autoscaler reads no
priorities in between. Turning it on for an existing provider is an in-place update of the provider,
never a replacement (``provider.go``, ``DiffConfig``: only ``clusterIdentifier``, a changed active
cluster, a computed kubeconfig or ``renderYamlToDirectory`` replace it; with ``clusterIdentifier``
unchanged nothing does). pulumi-eks offers the same switch for its own provider, to update the
``aws-auth`` ConfigMap "in place over a replace operation" (``nodejs/eks/cluster/cluster.ts``,
``enableConfigMapMutable``)."""


def default_zones(count: int = DEFAULT_ZONE_COUNT) -> tuple[str, ...]:
    """The region's first ``count`` available zones that need no opt-in (an invoke, resolved at deploy)."""
    result = aws.get_availability_zones(
        state="available",
        filters=[{"name": "opt-in-status", "values": ["opt-in-not-required"]}],
    )
    return tuple(sorted(result.names)[:count])


@dataclass(frozen=True)
class SystemNodes:
    """The system node group of a cluster with node groups, its CoreDNS add-on and its ``NodePoolInfo``."""

    node_group: aws.eks.NodeGroup
    coredns: aws.eks.Addon
    pool: NodePoolInfo


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster ready for GPU node groups: network, control plane, node role and its access
    entry, the on-demand system node group, a secret kubeconfig and a Kubernetes provider.

    Args:
        name: the component's name; prefixes child resource names (the stack uses the cluster name).
        cluster: ``gpupools:cluster`` as a ``ClusterSpec`` or plain mapping (``name`` required;
            ``kubernetesVersion`` default ``gpupools.versions.DEFAULT_KUBERNETES_VERSION``;
            ``zones`` default: the region's first three).
        network: ``gpupools:network`` as a ``NetworkSpec`` or mapping; default a new VPC on 10.40.0.0/16.
        system_pool: ``gpupools:systemPool`` as a ``SystemPoolSpec`` or mapping; default
            ``m6i.xlarge``, 2 to 4 nodes, 128 GiB disks.
        nat: NAT gateways of a created VPC; default ``NatStrategy.SINGLE`` (see ``network``).
        public_access_cidrs: CIDRs allowed to reach the public API endpoint; default
            ``cluster.apiAllowedCidrs``, and when that is empty anywhere (``0.0.0.0/0``, EKS's default,
            sent explicitly: ``public_access``).
        region: the stack's region; when given, zones are checked to belong to it.
        private_subnet_tags: extra tags on the private subnets of a created VPC (Karpenter's
            discovery tag); default none. A brought VPC's subnets are not touched here.
        auto_mode: an EKS Auto Mode cluster (``gpupools:provisioner: auto-mode``; ``gpupools.aws.auto_mode``):
            compute, block storage and load balancing on with no built-in node pool, the add-ons
            stated off, the Auto Mode policies on the cluster role, and the Auto Mode node role with
            its ``EC2`` access entry instead of the node role, system node group and CoreDNS add-on
            (``system_node_group``, ``coredns`` and ``system_pool`` are then None: the system pool is
            a NodePool of ``AutoModeNodePools``). Default False. New clusters only: turning it on
            for an existing cluster flips ``bootstrapSelfManagedAddons``, which replaces the cluster.
        autoscaler_tags: tag the system group's Auto Scaling group with cluster-autoscaler's
            ``node-template`` labels (``asg_tags``); default True. Pass False when no
            cluster-autoscaler runs (``gpupools:provisioner: karpenter``): the tags would only be
            read by an autoscaler that is not there, and they cost the deployer
            ``autoscaling:CreateOrUpdateTags``.
        opts: resource options.

    Attributes:
        cluster_name: the EKS cluster name (plain).
        kubernetes_version: the control plane's minor version.
        zones: the cluster's zones, in order.
        live_sizes: the reader of this cluster's node groups' live desired sizes (pass it to
            ``GpuNodeGroup(live_sizes=...)`` to share its listing).
        vpc_id: the VPC.
        egress: a created VPC's NAT gateways, private route tables and associations (empty for a
            brought VPC): ``depends_on`` of everything that needs egress until it is deleted
            (``network`` module docstring). The system node group depends on it.
        private_subnet_ids_by_zone: zone to private subnet ID (for ``GpuNodeGroup``).
        node_role: the node IAM role.
        node_role_arn: its ARN, read from the access entry (see the module docstring).
        eks_cluster: the ``pulumi_eks.Cluster``.
        oidc_provider_arn, oidc_provider_url: the cluster's IAM OIDC provider (for IRSA).
        kubeconfig: the kubeconfig JSON, secret.
        provider: the ``kubernetes.Provider`` for this cluster.
        system_node_group: the system ``aws.eks.NodeGroup``.
        coredns: the CoreDNS ``aws.eks.Addon``: ``depends_on`` of whatever needs cluster DNS until it
            is deleted (the Karpenter release, and through it every NodePool and EC2NodeClass).
        system_pool: the system node group as a ``NodePoolInfo``.
        admin_access: the ``AccessPolicyAssociation`` of each ``cluster.admins`` ARN (after its entry).

    Raises:
        ConfigError: naming the argument, before anything is registered.
    """

    cluster_name: str
    kubernetes_version: str
    zones: tuple[str, ...]
    live_sizes: NodeGroupSizes
    vpc_id: pulumi.Output[str]
    private_subnet_ids_by_zone: dict[str, pulumi.Output[str]]
    node_role: aws.iam.Role
    node_role_arn: pulumi.Output[str]
    eks_cluster: eks.Cluster
    oidc_provider_arn: pulumi.Output[str]
    oidc_provider_url: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    system_node_group: aws.eks.NodeGroup | None
    coredns: aws.eks.Addon | None
    system_pool: NodePoolInfo | None

    def __init__(
        self,
        name: str,
        cluster: ClusterSpec | Mapping[str, Any],
        network: NetworkSpec | Mapping[str, Any] | None = None,
        system_pool: SystemPoolSpec | Mapping[str, Any] | None = None,
        nat: NatStrategy = NatStrategy.SINGLE,
        public_access_cidrs: Sequence[str] | None = None,
        region: str | None = None,
        private_subnet_tags: Mapping[str, str] | None = None,
        autoscaler_tags: bool = True,
        auto_mode: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        path = f"EksCluster({name})"
        cluster_spec = (
            cluster if isinstance(cluster, ClusterSpec) else config.parse_cluster(cluster, Cloud.AWS, f"{path}.cluster")
        )
        network_spec = (
            network if isinstance(network, NetworkSpec) else config.parse_network(network, Cloud.AWS, f"{path}.network")
        )
        system_spec = (
            system_pool
            if isinstance(system_pool, SystemPoolSpec)
            else config.parse_system_pool(system_pool, Cloud.AWS, f"{path}.system_pool")
        )
        rules.check_cluster(cluster_spec, Cloud.AWS, f"{path}.cluster", region)
        rules.check_network(network_spec, Cloud.AWS, cluster_spec.zones, f"{path}.network")
        rules.check_system_pool(system_spec, Cloud.AWS, f"{path}.system_pool")
        if not isinstance(nat, NatStrategy):
            raise ConfigError(f"{path}.nat", "must be a NatStrategy (" + ", ".join(n.value for n in NatStrategy) + ")", nat)

        addons = core_addons(cluster_spec.kubernetes_version)
        # An existing cluster: EKS neither downgrades (its own end-of-support upgrade may have moved
        # the cluster past the config) nor upgrades past a lagging node group. Said before registering.
        check_live_version(
            cluster_spec.name,
            cluster_spec.kubernetes_version,
            rules.VERSION_PATH if isinstance(cluster, ClusterSpec) else f"{path}.cluster.kubernetesVersion",
            # An existing cluster is never switched into or out of Auto Mode (a replacement).
            auto_mode=auto_mode,
        )
        cidrs = list(public_access_cidrs if public_access_cidrs is not None else cluster_spec.api_allowed_cidrs)
        for index, cidr in enumerate(cidrs):
            rules.check_api_cidr(cidr, f"{path}.public_access_cidrs[{index}]")
        zones = cluster_spec.zones or default_zones()
        if len(zones) < 2:
            raise ConfigError(f"{path}.cluster.zones", "EKS needs subnets in at least 2 zones; the region offers", list(zones))
        cluster_name = cluster_spec.name
        labels = pool_labels(SYSTEM_POOL, Role.SYSTEM, CapacityType.ON_DEMAND)
        system_name = naming.system_node_group_name(
            cluster_name,
            {
                "instanceTypes": list(system_spec.instance_types),
                "amiType": SYSTEM_AMI_TYPE,
                "capacityType": "ON_DEMAND",
                "zones": list(zones),
            },
            f"{path}.system_pool",
        )

        super().__init__(TYPE, name, None, opts)
        self.cluster_name = cluster_name
        self.kubernetes_version = cluster_spec.kubernetes_version
        self.zones = tuple(zones)
        self.live_sizes = NodeGroupSizes(cluster_name, parent=self)

        self.egress: list[pulumi.Resource] = []
        if network_spec.bring_your_own:
            self.vpc_id = pulumi.Output.from_input(network_spec.vpc_id or "")
            private_ids: list[pulumi.Output[str]] = [pulumi.Output.from_input(s) for s in network_spec.private_subnet_ids]
        else:
            created = create_network(
                cluster_name, network_spec.cidr, zones, nat, parent=self, private_subnet_tags=private_subnet_tags
            )
            self.vpc_id = created.vpc_id
            private_ids = created.private_subnet_ids
            self.egress = created.egress
        self.private_subnet_ids_by_zone = dict(zip(zones, private_ids, strict=True))

        boundary = cluster_spec.permissions_boundary
        # Always ours (module docstring): pulumi-eks's own service role takes no permissions boundary,
        # and a role that moved between the two with the boundary would replace the cluster.
        eks_name = f"{name}-eks"
        service_role, service_role_policy = create_cluster_service_role(eks_name, boundary, parent=self)
        service_role_policies: list[pulumi.Resource] = [service_role_policy]
        if auto_mode:
            service_role_policies += auto_mode_cluster_policies(eks_name, service_role, parent=self)
        else:
            node_role = create_node_role(name, parent=self, permissions_boundary=boundary)
            self.node_role = node_role.role
            self.node_role_policy_attachments = list(node_role.policy_attachments)

        self.eks_cluster = eks.Cluster(
            eks_name,
            name=cluster_name,
            service_role=service_role,
            version=cluster_spec.kubernetes_version,
            vpc_id=self.vpc_id,
            private_subnet_ids=private_ids,
            endpoint_private_access=True,
            endpoint_public_access=True,
            public_access_cidrs=public_access(cidrs),
            authentication_mode=eks.AuthenticationMode.API,
            enabled_cluster_log_types=list(cluster_spec.control_plane_logs),
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type=cluster_spec.support_type),
            **(auto_mode_cluster_args() if auto_mode else core_addon_args(addons)),
            create_oidc_provider=True,
            skip_default_node_group=True,
            skip_default_security_groups=True,
            kubernetes_service_ip_address_range=SERVICE_CIDR,
            # The service role's policies before the cluster is created and after it is deleted.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*depends_on_of(opts), *service_role_policies]),
        )
        self.oidc_provider_arn = self.eks_cluster.oidc_provider_arn
        self.oidc_provider_url = self.eks_cluster.oidc_provider_url
        if auto_mode:
            self._auto_mode_rest(name, cluster_name, cluster_spec, boundary)
            return

        access_entry = aws.eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=cluster_name,
            principal_arn=self.node_role.arn,
            type=NODE_ACCESS_ENTRY_TYPE,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks_cluster]),
        )
        self.node_role_arn = access_entry.principal_arn

        self._api_access(name, cluster_name, cluster_spec)

        launch_template = create_launch_template(
            f"{name}-system-launch-template",
            cluster_name=cluster_name,
            ami_type=SYSTEM_AMI_TYPE,
            disk_size_gb=system_spec.disk_size_gb,
            tags={"Name": f"{cluster_name}-{SYSTEM_POOL}", POOL_LABEL: SYSTEM_POOL},
            parent=self,
        )
        self.system_node_group = create_managed_node_group(
            f"{name}-system",
            cluster_name=access_entry.cluster_name,
            node_group_name=system_name,
            node_role_arn=self.node_role_arn,
            subnet_ids=private_ids,
            capacity=CapacityType.ON_DEMAND,
            ami_type=SYSTEM_AMI_TYPE,
            instance_types=system_spec.instance_types,
            min_size=system_spec.min_size,
            max_size=system_spec.max_size,
            labels=labels,
            taints=(),
            launch_template=launch_template,
            kubernetes_version=cluster_spec.kubernetes_version,
            tags={POOL_LABEL: SYSTEM_POOL},
            parent=self,
            live_desired_size=self.live_sizes.desired(system_name),
            # Nodes join and pull images through NAT; destroy keeps egress until the group is gone.
            depends_on=[*self.node_role_policy_attachments, *self.egress],
        )
        self.coredns = create_coredns_addon(
            name, cluster_name, cluster_spec.kubernetes_version, self.system_node_group, parent=self
        )
        if autoscaler_tags:
            create_asg_tags(
                f"{name}-system",
                autoscaling_group_name(self.system_node_group, f"{name}-system"),
                node_template_tags(labels, (), 0) + resource_tags(system_spec.disk_size_gb),
                parent=self,
            )
        self.system_pool = NodePoolInfo(
            name=system_name,
            pool=SYSTEM_POOL,
            role=Role.SYSTEM,
            capacity=CapacityType.ON_DEMAND,
            zones=self.zones,
            instance_types=system_spec.instance_types,
            min_size=system_spec.min_size,
            max_size=system_spec.max_size,
            labels=frozen_map(labels),
            autoscaler_group_regex=naming.asg_name_regex(system_name),
        )
        self.register_outputs(
            {
                "clusterName": cluster_name,
                "kubeconfig": self.kubeconfig,
                "oidcProviderArn": self.oidc_provider_arn,
                "systemNodeGroup": system_name,
            }
        )

    def system_nodes(self) -> SystemNodes:
        """The system node group, CoreDNS add-on and system pool; RuntimeError on an Auto Mode cluster,
        which has none of them (its system pool is ``AutoModeNodePools``')."""
        if self.system_node_group is None or self.coredns is None or self.system_pool is None:
            raise RuntimeError(f"EKS cluster {self.cluster_name} runs EKS Auto Mode: it has no system node group")
        return SystemNodes(self.system_node_group, self.coredns, self.system_pool)

    def _api_access(self, name: str, cluster_name: str, cluster_spec: ClusterSpec) -> None:
        """The admins' access entries, the secret kubeconfig and the Kubernetes provider."""
        self.admin_access = create_admin_access(
            name, cluster_name, cluster_spec.admins, parent=self, depends_on=[self.eks_cluster]
        )
        self.kubeconfig = pulumi.Output.secret(self.eks_cluster.kubeconfig_json)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            cluster_identifier=self.eks_cluster.oidc_provider_url,
            # ConfigMaps (the priority expander's) are updated in place, not deleted and re-created.
            enable_config_map_mutable=ENABLE_CONFIG_MAP_MUTABLE,
            # An admin running the next `up` reaches the API through its entry: objects wait for it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.admin_access)),
        )

    def _auto_mode_rest(self, name: str, cluster_name: str, cluster_spec: ClusterSpec, boundary: str | None) -> None:
        """An Auto Mode cluster's API access and node role (``auto_mode``): no node group, no CoreDNS
        add-on; the system pool is ``AutoModeNodePools``'."""
        self._api_access(name, cluster_name, cluster_spec)
        node_role = AutoModeNodeRole(name, cluster_name, self, boundary, depends_on=[self.eks_cluster])
        self.node_role = node_role.role
        self.node_role_policy_attachments = list(node_role.policy_attachments)
        self.node_role_arn = node_role.access_entry.principal_arn
        self.node_access_policy = node_role.access_policy
        self.system_node_group = None
        self.coredns = None
        self.system_pool = None
        self.register_outputs(
            {"clusterName": cluster_name, "kubeconfig": self.kubeconfig, "oidcProviderArn": self.oidc_provider_arn}
        )
