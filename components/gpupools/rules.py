"""Validation rules on specs: the one implementation behind both entry points.

``gpupools.config`` calls these after parsing a stack's config; the components call them on the
specs library users hand them directly. Each rule raises one ``ConfigError`` naming the path, the
rule and the value, before any resource is registered.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Collection, Iterable, Mapping, Sequence

from gpupools import conventions, gpu_driver, sharing, versions
from gpupools.catalog import regions
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES, MIG_INSTANCES_PER_GPU, RETIRED_SIZES
from gpupools.errors import ConfigError
from gpupools.specs import (
    AmiType,
    AutoscalerSpec,
    Cloud,
    ClusterSpec,
    CostSpec,
    DevicePluginSpec,
    GpuPoolSpec,
    MaintenanceSpec,
    NetworkSpec,
    PoolSpec,
    Provisioner,
    SharingMode,
    SharingSpec,
    StackSpec,
    SystemPoolSpec,
    UpgradeSpec,
    upgrade_nodes,
)

CLUSTER_NAME_MAX = 20
"""Cluster names prefix every resource name; EKS node group names (at most 63 characters) are
``<cluster>-<pool>-<spot|od>-<zone>-<digest>``, so the cluster name gets 20."""

AKS_POOL_NAME_MAX = 12
"""AKS Linux pool names: lowercase alphanumeric, a letter first, 1-12 characters."""

AKS_ROTATION_SUFFIX = 5
"""Characters gpupools appends to an AKS GPU pool name: a role letter (``s`` Spot, ``o``
on-demand) and a 4-character digest of the fields AKS cannot change in place."""

AKS_GPU_POOL_NAME_MAX = AKS_POOL_NAME_MAX - AKS_ROTATION_SUFFIX
EKS_GPU_POOL_NAME_MAX = 16

AKS_MAX_NODES_PER_POOL = 1000
"""AKS: ``count`` 0-1000 for user pools (API docstring)."""

EKS_MAX_NODES_PER_GROUP = 450
"""EKS service quota "Nodes per managed node group" (default 450)."""

EKS_MANAGED_NODE_GROUPS_QUOTA = 30
"""EKS service quota "Managed node groups per cluster" (``L-6D54EA21``), default 30, adjustable
(Service Quotas, service code ``eks``). The preflight reads the account's applied value."""

EKS_DEFAULT_ZONES = 3
"""Zones a pool spreads over when neither it nor ``cluster.zones`` names any (``EksCluster``'s default)."""


def eks_node_group_count(spec: StackSpec) -> int:
    """The EKS managed node groups a cluster-autoscaler stack creates (0 under Karpenter, which
    creates only the system group's 1): the system group, and per pool one group per reservation
    plus, per zone, a Spot group and its on-demand fallback (or one on-demand group)
    (``gpupools.aws.node_group.plan_gpu_groups``). A replacement creates the new group before the
    old one is deleted, so a stack at the quota cannot replace a pool."""
    if spec.cloud is not Cloud.AWS:
        return 0
    if spec.provisioner is Provisioner.AUTO_MODE:
        return 0  # Auto Mode: NodePools only, the system pool too (gpupools.aws.auto_mode)
    if spec.provisioner is Provisioner.KARPENTER:
        return 1
    count = 1
    for pool in spec.pools:
        zones = len(pool.zones or spec.cluster.zones) or EKS_DEFAULT_ZONES
        tiers = 2 if pool.spot and pool.on_demand_fallback else 1
        count += len(pool.reservations) + zones * tiers
    return count


def node_group_quota_warning(spec: StackSpec, quota: int = EKS_MANAGED_NODE_GROUPS_QUOTA) -> str | None:
    """The warning for a stack past ``quota`` managed node groups, or None. A warning, not an error:
    the quota is adjustable, and the preflight checks the account's real value."""
    count = eks_node_group_count(spec)
    if count <= quota:
        return None
    return (
        f"gpupools:gpuPools: this stack creates {count} EKS managed node groups (the system group, per pool a "
        f"group per reservation and per zone a Spot and an on-demand group), more than EKS's default quota of "
        f"{quota} per cluster (L-6D54EA21, 'Managed node groups per cluster'): CreateNodegroup fails past the "
        "account's quota. Raise the quota (Service Quotas, service code eks) and check it with "
        "`python -m gpupools.preflight`, or use fewer zones, reservations or fallback groups"
    )


def aks_mig_from_zero_warnings(spec: StackSpec) -> list[str]:
    """One warning per AKS MIG pool that may sit at zero nodes (``minSize`` 0) under AKS's managed
    cluster-autoscaler: scaling a MIG pool up from zero is an open request (Azure/AKS #4216), so a
    pod may stay Pending while the pool is empty. A warning, not an error: AKS may ship it, and a
    pool kept at one node or warm is unaffected."""
    if spec.cloud is not Cloud.AZURE or spec.provisioner is not Provisioner.CLUSTER_AUTOSCALER:
        return []
    return [
        f"gpupools:gpuPools[{index}].sharing.mig: pool {pool.name} may not scale up from zero nodes: scaling a MIG "
        "pool up from zero under AKS's cluster-autoscaler is an open request (Azure/AKS #4216), so its pods can stay "
        "Pending while it is empty; keep minSize >= 1 or a warm node (warm.nodes) until AKS ships it"
        for index, pool in enumerate(spec.gpu_pools)
        if pool.sharing.mode is SharingMode.MIG and pool.min_size == 0 and pool.warm is None
    ]


AUTO_MODE_METRICS_WARNING = (
    "gpupools:gpuMetrics: no DCGM exporter is deployed under provisioner auto-mode: EKS Auto Mode runs the NVIDIA "
    "device plugin and its node monitoring agent itself and documents no DCGM exporter, and gpupools' exporter is "
    "placed on the nodes its device plugin serves (none on Auto Mode); GPU utilisation metrics need an exporter "
    "of your own (docs/auto-mode.md)"
)
"""Said when an Auto Mode stack keeps ``gpuMetrics.enabled`` (the default): the key would otherwise do nothing
silently."""


def stack_warnings(spec: StackSpec) -> list[str]:
    """What the stack program warns about (``pulumi.log.warn``) before registering anything: past
    EKS's node group quota (``node_group_quota_warning``), AKS MIG pools at zero
    (``aks_mig_from_zero_warnings``), GPU metrics on EKS Auto Mode (``AUTO_MODE_METRICS_WARNING``)."""
    quota = node_group_quota_warning(spec) if spec.cloud is Cloud.AWS else None
    metrics = spec.provisioner is Provisioner.AUTO_MODE and spec.gpu_metrics.enabled
    return [*([quota] if quota else []), *aks_mig_from_zero_warnings(spec), *([AUTO_MODE_METRICS_WARNING] if metrics else [])]


EKS_MAX_INSTANCE_TYPES = 20
"""EKS ``CreateNodegroup``: at most 20 instance types."""

ASG_MAX_TAGS = 50
"""Auto Scaling: at most 50 tags per group."""

EKS_ASG_OWN_TAGS = 5
"""Tags EKS itself puts on a managed node group's ASG (``eks:cluster-name``,
``eks:nodegroup-name``, ``k8s.io/cluster-autoscaler/enabled``,
``k8s.io/cluster-autoscaler/<cluster>``, ``kubernetes.io/cluster/<cluster>``)."""

EKS_MAX_TAINTS = 50
"""EKS ``CreateNodegroup``: at most 50 taints per node group."""

EKS_LABEL_MAX = 63
"""EKS ``CreateNodegroup`` (botocore's EKS model): label and taint keys of at most 63 characters, and
label values at least 1 (Kubernetes allows a 253-character key prefix and empty values; EKS does
not). Keys that fit also fit the 128-character ASG tag keys behind the 46-character
cluster-autoscaler prefix."""

SYSTEM_POOL_MIN_NODES = 2
"""The system pool's smallest ``minSize``: cluster add-ons need two nodes to stay available (and AKS
requires two for a System pool)."""

AKS_SYSTEM_POOL_MIN_VCPUS = 4
"""AKS system pools need a VM size with at least 4 vCPUs."""

DISK_GB_RANGE: Mapping[Cloud, tuple[int, int]] = {Cloud.AZURE: (30, 2048), Cloud.AWS: (20, 16384)}
"""``diskSizeGb`` bounds per cloud, in GiB, inclusive (the node's OS disk on AKS, the root volume on EKS)."""

CIDR_PREFIX_RANGE = (16, 22)
"""Prefix lengths a created network may have: /16 to /22 (room for the node subnets of three zones)."""

AUTOSCALER_MINUTES_MAX = 60
"""The longest ``gpupools:autoscaler`` duration gpupools accepts, in minutes."""

AZURE_ZONES = ("1", "2", "3")
AWS_ZONE = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]\Z")
AZURE_SUBNET_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
    r"virtualNetworks/[^/]+/subnets/[^/]+$",
    re.IGNORECASE,
)
AWS_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}\Z")
AWS_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}\Z")
CLUSTER_NAME = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?\Z")
POOL_NAME = re.compile(r"^[a-z][a-z0-9]*\Z")
RESERVED_POOL_NAME = conventions.Role.SYSTEM.value
"""The system pool's name on both clouds (the AKS System agent pool, the EKS node group, the Auto
Mode NodePool and NodeClass ``gpupools-system``, the ``gpupools.io/pool`` label of system nodes): a
GPU or CPU pool of that name would collide with it, or carry the system pool's label."""
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
DNS_LABEL_MAX = 63
"""RFC 1123 label: what Kubernetes requires of a namespace, a Job's name, and anything that ends up
in a label value or a hostname."""


def is_dns_label(value: object, max_length: int = DNS_LABEL_MAX) -> bool:
    """True for a string that is an RFC 1123 label of at most ``max_length`` characters."""
    return isinstance(value, str) and len(value) <= max_length and DNS_LABEL.match(value) is not None


LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
IMAGE_TAG = re.compile(r"^v\d+\.\d+\.\d+\Z")
MINUTES = re.compile(r"^[1-9]\d*m\Z")
AZURE_VM_SIZE = re.compile(r"^Standard_([A-Z]+)(\d+)")

RESERVED_CIDRS = {
    Cloud.AZURE: (ipaddress.ip_network("172.20.0.0/16"), ipaddress.ip_network("192.168.0.0/16")),
    Cloud.AWS: (ipaddress.ip_network("172.20.0.0/16"),),
}
"""Networks the node network must not overlap: the Kubernetes service CIDR gpupools sets
(172.20.0.0/16) and, on AKS, the overlay pod CIDR (192.168.0.0/16)."""


def fail(path: str, rule: str, value: object, hint: str | None = None) -> None:
    raise ConfigError(path, rule, value, hint)


def check_unique(values: Sequence[str], path: str, what: str) -> None:
    seen: set[str] = set()
    for index, value in enumerate(values):
        if value in seen:
            fail(f"{path}[{index}]", f"{what} must be unique", value)
        seen.add(value)


# --- Kubernetes syntax ---------------------------------------------------------------------------


def check_label_key(key: str, path: str) -> None:
    """A Kubernetes qualified name (``[prefix/]name``) outside the reserved prefixes."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        fail(path, "key prefix must be a DNS subdomain (lowercase, at most 253 characters)", key)
    if not name or len(name) > 63 or not LABEL_NAME.match(name):
        fail(
            path,
            "key name must be 1-63 characters, alphanumeric, '-', '_' or '.', starting and ending alphanumeric",
            key,
        )
    if conventions.is_reserved_key(key):
        fail(
            path,
            "key must not use a reserved prefix (" + ", ".join(p.rstrip("/") for p in conventions.RESERVED_LABEL_PREFIXES) + ")",
            key,
        )


def check_label_value(value: str, path: str, *, allow_empty: bool = True) -> None:
    if value == "" and allow_empty:
        return
    if len(value) > 63 or not LABEL_NAME.match(value):
        rule = "value must be at most 63 characters, alphanumeric, '-', '_' or '.', starting and ending alphanumeric"
        if not allow_empty:
            rule = "value must be non-empty (cluster-autoscaler ignores taints without a value), " + rule[9:]
        fail(path, rule, value)


def check_labels(labels: Mapping[str, str], path: str) -> None:
    for key, value in labels.items():
        check_label_key(key, f"{path}.{key}")
        check_label_value(value, f"{path}.{key}")


def check_taints(taints: Sequence[conventions.Taint], path: str) -> None:
    keys: set[tuple[str, str]] = set()
    for index, taint in enumerate(taints):
        at = f"{path}[{index}]"
        check_label_key(taint.key, f"{at}.key")
        if taint.key == conventions.GPU_TAINT.key:
            fail(f"{at}.key", "must not repeat the GPU taint gpupools always adds", taint.key)
        check_label_value(taint.value, f"{at}.value", allow_empty=False)
        if (taint.key, taint.effect.value) in keys:
            fail(f"{at}.key", "each key and effect may appear once", taint.key)
        keys.add((taint.key, taint.effect.value))


# --- cluster, network, autoscaler ----------------------------------------------------------------


def check_zone(zone: str, cloud: Cloud, path: str, region: str | None = None, allow_unlisted: Collection[str] = ()) -> None:
    """One zone of ``cloud``. On AWS a name the offline list (``regions.AWS_ZONES``) lacks for the
    region is refused unless it is in ``allow_unlisted`` (``gpupools:catalog.allowUnlisted``): AWS maps
    zone names per account in its older regions for accounts created before November 2025 (AWS Global
    Infrastructure, "AWS Availability Zones"), so an account may have ``us-west-1c`` where the list
    has ``a`` and ``b`` (third EKS review, t2). The online preflight asks the account."""
    if cloud is Cloud.AZURE and zone not in AZURE_ZONES:
        fail(path, 'must be an Azure availability zone number ("1", "2" or "3")', zone)
    if cloud is Cloud.AZURE and region and regions.azure_has_zones(region) is False:
        # Azure's regions list (regions.AZURE_REGIONS_WITHOUT_ZONES): AKS rejects a zonal pool there
        # only at deploy time, after the pools before it exist.
        fail(path, f"must be left out: {regions.normalize(cloud, region)} has no availability zones (leave out zones)", zone)
    if cloud is Cloud.AWS:
        if not AWS_ZONE.match(zone):
            fail(path, "must be an AWS availability zone name such as us-west-2a", zone)
        if region and not zone.startswith(region):
            fail(path, f"must be a zone of the stack's region ({region})", zone)
        known = regions.aws_zones(region) if region else ()
        if known and zone not in known and zone not in allow_unlisted:
            # regions.AWS_ZONES (DescribeAvailabilityZones as moto records it; the offline fakes answer
            # from it): a letter the region lacks fails only at CreateSubnet, after the VPC exists.
            fail(
                path,
                f"must be an availability zone of {region} ({', '.join(known)})",
                zone,
                "if your account names its zones otherwise (accounts before November 2025), add it to "
                "gpupools:catalog.allowUnlisted",
            )


def check_cluster(
    cluster: ClusterSpec, cloud: Cloud, path: str, region: str | None = None, allow_unlisted: Collection[str] = ()
) -> None:
    if not CLUSTER_NAME.match(cluster.name) or len(cluster.name) > CLUSTER_NAME_MAX:
        fail(
            f"{path}.name",
            f"must be lowercase letters, digits and '-', start with a letter, not end with '-', "
            f"at most {CLUSTER_NAME_MAX} characters",
            cluster.name,
        )
    version_problem = versions.check_minor(cluster.kubernetes_version, cloud.value)
    if version_problem:
        fail(f"{path}.kubernetesVersion", version_problem, cluster.kubernetes_version)
    for index, zone in enumerate(cluster.zones):
        check_zone(zone, cloud, f"{path}.zones[{index}]", region, allow_unlisted)
    check_unique(cluster.zones, f"{path}.zones", "zones")
    if cloud is Cloud.AWS and cluster.zones and len(cluster.zones) < 2:
        fail(f"{path}.zones", "EKS needs subnets in at least 2 zones", list(cluster.zones))
    if cloud is Cloud.AWS and (cluster.allow_local_accounts or cluster.admin_group_object_ids):
        fail(f"{path}.allowLocalAccounts", "is Azure only", cluster.allow_local_accounts)
    for index, cidr in enumerate(cluster.api_allowed_cidrs):
        check_api_cidr(cidr, f"{path}.apiAllowedCidrs[{index}]")
    check_unique(cluster.api_allowed_cidrs, f"{path}.apiAllowedCidrs", "CIDRs")
    if cloud is Cloud.AZURE and cluster.admins:
        fail(f"{path}.admins", "is AWS only; on Azure grant cluster-admin with adminGroupObjectIds", list(cluster.admins))
    for index, arn in enumerate(cluster.admins):
        if not IAM_PRINCIPAL_ARN.match(arn):
            fail(
                f"{path}.admins[{index}]",
                "must be an IAM role or user ARN (arn:<partition>:iam::<12-digit account>:role/<name> or :user/<name>)",
                arn,
            )
    check_unique(cluster.admins, f"{path}.admins", "ARNs")
    check_permissions_boundary(cluster, cloud, f"{path}.permissionsBoundary")
    if cloud is Cloud.AWS and len(cluster.api_allowed_cidrs) > EKS_MAX_PUBLIC_ACCESS_CIDRS:
        fail(
            f"{path}.apiAllowedCidrs",
            f"EKS takes at most {EKS_MAX_PUBLIC_ACCESS_CIDRS} public access CIDRs (service quota L-93A74D60, not adjustable)",
            len(cluster.api_allowed_cidrs),
        )
    if cloud is Cloud.AWS and not version_problem and versions.minor(cluster.kubernetes_version) not in versions.EKS_CORE_ADDONS:
        fail(
            f"{path}.kubernetesVersion",
            "has no pinned kube-proxy, VPC CNI and CoreDNS add-on versions (gpupools.versions.EKS_CORE_ADDONS)",
            cluster.kubernetes_version,
        )
    for index, log_type in enumerate(cluster.control_plane_logs):
        if log_type not in EKS_LOG_TYPES:
            fail(f"{path}.controlPlaneLogs[{index}]", "must be one of " + ", ".join(EKS_LOG_TYPES), log_type)
    check_unique(cluster.control_plane_logs, f"{path}.controlPlaneLogs", "log types")


EKS_MAX_PUBLIC_ACCESS_CIDRS = 40
"""EKS service quota "Public endpoint access CIDR ranges per cluster" (``L-93A74D60``): 40, not adjustable."""

EKS_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
"""EKS control plane log types (botocore ``eks`` ``LogType`` enum; a test keeps the two equal)."""

IAM_POLICY_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::(\d{12}|aws):policy/([\w+=,.@-]+/)*[\w+=,.@-]{1,128}\Z")
"""An IAM managed policy ARN (``arn:<partition>:iam::<account>:policy/<path><name>``, or ``aws`` for an
AWS managed policy): what ``CreateRole.PermissionsBoundary`` takes (IAM API reference: "The ARN of the
managed policy that is used to set the permissions boundary for the role"; names of letters, digits and ``+=,.@_-``,
paths of the same characters between slashes)."""


def check_permissions_boundary(cluster: ClusterSpec, cloud: Cloud, path: str) -> None:
    """``gpupools:cluster.permissionsBoundary``: AWS only, an IAM managed policy ARN."""
    boundary = cluster.permissions_boundary
    if boundary is None:
        return
    if cloud is not Cloud.AWS:
        fail(path, "is AWS only (a boundary on the IAM roles the EKS stack creates)", boundary)
    if not IAM_POLICY_ARN.match(boundary):
        fail(path, "must be an IAM managed policy ARN (arn:<partition>:iam::<12-digit account>:policy/<name>)", boundary)


IAM_PRINCIPAL_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::\d{12}:(role|user)/[\w+=,.@/-]{1,512}\Z")
"""An IAM role or user ARN, as EKS access entries take them (``CreateAccessEntry.principalArn``)."""


def check_api_cidr(cidr: str, path: str) -> None:
    """One ``apiAllowedCidrs`` entry: an IPv4 network in CIDR notation with no host bits set.

    A slash is required (``203.0.113.7/32``, not ``203.0.113.7``): EKS's ``publicAccessCidrs`` takes
    CIDR blocks only, and one spelling on both clouds keeps a stack portable.
    """
    try:
        network = ipaddress.ip_network(cidr, strict=True) if "/" in cidr else None
    except ValueError:
        network = None
    if not isinstance(network, ipaddress.IPv4Network):
        fail(path, "must be an IPv4 network in CIDR notation with no host bits set, such as 203.0.113.0/24", cidr)


def check_network(network: NetworkSpec, cloud: Cloud, zones: Sequence[str], path: str) -> None:
    try:
        cidr = ipaddress.ip_network(network.cidr, strict=True)
    except ValueError:
        fail(f"{path}.cidr", "must be an IPv4 network in CIDR notation with no host bits set", network.cidr)
        return
    if not isinstance(cidr, ipaddress.IPv4Network) or not cidr.is_private:
        fail(f"{path}.cidr", "must be a private IPv4 network (RFC 1918)", network.cidr)
    low_prefix, high_prefix = CIDR_PREFIX_RANGE
    if not low_prefix <= cidr.prefixlen <= high_prefix:
        fail(f"{path}.cidr", f"must have a prefix length from /{low_prefix} to /{high_prefix}", network.cidr)
    for reserved in RESERVED_CIDRS[cloud]:
        if cidr.overlaps(reserved):
            fail(
                f"{path}.cidr",
                f"must not overlap {reserved}, which gpupools uses for Kubernetes services or pods",
                network.cidr,
            )
    if cloud is Cloud.AZURE:
        if network.vpc_id or network.private_subnet_ids:
            fail(f"{path}.vpcId", "is AWS only; on Azure bring your own subnet with subnetId", network.vpc_id)
        if network.subnet_id is not None and not AZURE_SUBNET_ID.match(network.subnet_id):
            fail(
                f"{path}.subnetId",
                "must be a subnet resource ID (/subscriptions/<id>/resourceGroups/<rg>/providers/"
                "Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>)",
                network.subnet_id,
            )
    else:
        if network.subnet_id:
            fail(f"{path}.subnetId", "is Azure only; on AWS bring your own vpcId and privateSubnetIds", network.subnet_id)
        if network.vpc_id is not None and not AWS_VPC_ID.match(network.vpc_id):
            fail(f"{path}.vpcId", "must be a VPC ID (vpc-<hex>)", network.vpc_id)
        if bool(network.vpc_id) != bool(network.private_subnet_ids):
            fail(
                f"{path}.privateSubnetIds" if network.vpc_id else f"{path}.vpcId",
                "vpcId and privateSubnetIds go together (one private subnet per zone)",
                list(network.private_subnet_ids) if network.vpc_id else network.vpc_id,
            )
        for index, subnet in enumerate(network.private_subnet_ids):
            if not AWS_SUBNET_ID.match(subnet):
                fail(f"{path}.privateSubnetIds[{index}]", "must be a subnet ID (subnet-<hex>)", subnet)
        check_unique(network.private_subnet_ids, f"{path}.privateSubnetIds", "subnets")
        if network.private_subnet_ids and not zones:
            fail(
                f"{path}.privateSubnetIds",
                "needs gpupools:cluster.zones, naming the zone of each subnet in the same order",
                list(network.private_subnet_ids),
            )
        if network.private_subnet_ids and len(network.private_subnet_ids) != len(zones):
            fail(
                f"{path}.privateSubnetIds",
                f"must list one subnet per cluster zone ({len(zones)})",
                list(network.private_subnet_ids),
            )


def check_autoscaler(autoscaler: AutoscalerSpec, path: str) -> None:
    for key, value in (
        ("maxNodeProvisionTime", autoscaler.max_node_provision_time),
        ("scaleDownUnneededTime", autoscaler.scale_down_unneeded_time),
    ):
        if not MINUTES.match(value) or int(value[:-1]) > AUTOSCALER_MINUTES_MAX:
            fail(
                f"{path}.{key}",
                f"must be whole minutes from 1m to {AUTOSCALER_MINUTES_MAX}m, written like 10m (the form AKS echoes back)",
                value,
            )


def check_device_plugin(plugin: DevicePluginSpec, path: str) -> None:
    if not IMAGE_TAG.match(plugin.version):
        fail(f"{path}.version", "must be a release tag of nvcr.io/nvidia/k8s-device-plugin, like v0.20.0", plugin.version)


# --- pools ---------------------------------------------------------------------------------------


def _check_sizes(min_size: int, max_size: int, limit: int, path: str) -> None:
    if min_size < 0:
        fail(f"{path}.minSize", "must be >= 0", min_size)
    if max_size < 1:
        fail(f"{path}.maxSize", "must be >= 1", max_size)
    if max_size < min_size:
        fail(f"{path}.maxSize", f"must be >= minSize ({min_size})", max_size)
    if max_size > limit:
        fail(f"{path}.maxSize", f"must be <= {limit}, the cloud's limit for one pool", max_size)


def _azure_vcpus(size: str) -> int | None:
    match = AZURE_VM_SIZE.match(size)
    return int(match.group(2)) if match else None


def check_system_pool(pool: SystemPoolSpec, cloud: Cloud, path: str) -> None:
    types = pool.instance_types
    if not types:
        fail(f"{path}.instanceTypes", "must list at least one instance type", list(types))
    check_unique(types, f"{path}.instanceTypes", "instance types")
    if cloud is Cloud.AZURE:
        if len(types) != 1:
            fail(f"{path}.instanceTypes", "must list exactly one VM size on Azure (an AKS pool has one size)", list(types))
        size = types[0]
        check_spelling(size, [*GPU_SIZES, *CPU_SIZES, *RETIRED_SIZES], f"{path}.instanceTypes[0]", "VM size")
        if size in GPU_SIZES or size in RETIRED_SIZES:
            fail(f"{path}.instanceTypes[0]", "must not be a GPU size (GPU nodes belong in gpuPools)", size)
        vcpus = _azure_vcpus(size)
        if vcpus is None:
            fail(f"{path}.instanceTypes[0]", "must be an Azure VM size name like Standard_D4s_v5", size)
        elif vcpus < AKS_SYSTEM_POOL_MIN_VCPUS:
            fail(
                f"{path}.instanceTypes[0]",
                f"must have at least {AKS_SYSTEM_POOL_MIN_VCPUS} vCPUs (AKS system pool minimum)",
                size,
            )
        if size.startswith("Standard_B"):
            fail(f"{path}.instanceTypes[0]", "must not be a B-series size (not supported for AKS system pools)", size)
    else:
        for index, name in enumerate(types):
            facts = INSTANCE_TYPES.get(name)
            if facts is not None and facts.gpus:
                fail(f"{path}.instanceTypes[{index}]", "must not be a GPU type (GPU nodes belong in gpuPools)", name)
        if len(types) > EKS_MAX_INSTANCE_TYPES:
            fail(f"{path}.instanceTypes", f"must list at most {EKS_MAX_INSTANCE_TYPES} types (EKS limit)", list(types))
    if pool.min_size < SYSTEM_POOL_MIN_NODES:
        fail(
            f"{path}.minSize",
            f"must be >= {SYSTEM_POOL_MIN_NODES} (cluster add-ons need two nodes to stay available)",
            pool.min_size,
        )
    limit = AKS_MAX_NODES_PER_POOL if cloud is Cloud.AZURE else EKS_MAX_NODES_PER_GROUP
    _check_sizes(pool.min_size, pool.max_size, limit, path)
    check_disk(pool.disk_size_gb, cloud, f"{path}.diskSizeGb")


def check_disk(size: int, cloud: Cloud, path: str) -> None:
    low, high = DISK_GB_RANGE[cloud]
    if not low <= size <= high:
        fail(path, f"must be from {low} to {high} GiB", size)


def spelled_as(name: str, known: Iterable[str]) -> str | None:
    """The known name that equals ``name`` but for case (``standard_nc4as_t4_v3`` ->
    ``Standard_NC4as_T4_v3``, ``G5.xlarge`` -> ``g5.xlarge``), or ``None``."""
    folded = name.casefold()
    return next((candidate for candidate in sorted(known) if candidate.casefold() == folded), None)


def check_spelling(name: str, known: Iterable[str], path: str, what: str) -> None:
    """Fail with the right spelling when ``name`` is a known name in another case: the catalogs,
    labels and the priority expander's patterns all match names exactly, as the cloud lists them."""
    spelled = spelled_as(name, known)
    if spelled is not None and spelled != name:
        fail(path, f"must be spelled as the cloud lists the {what} (names match exactly)", name, f"did you mean {spelled}?")


USER_SIZES_KEY = "gpupools:catalog.instanceTypes"


def unknown_size_hint(name: str, known: Iterable[str]) -> str:
    """What an unknown size's error adds: the nearest known name if one is close, and how to declare
    a size the catalog lacks (a close name may be another size of the family, not a typo)."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.85)
    declare = f"declare it in {USER_SIZES_KEY} with its vcpus, memoryGib and gpus (docs/instance-types.md lists the known sizes)"
    return f"did you mean {close[0]}? If not, {declare}" if close else declare[0].upper() + declare[1:]


def check_azure_gpu_size(size: str, path: str) -> None:
    check_spelling(size, [*GPU_SIZES, *CPU_SIZES, *RETIRED_SIZES], path, "VM size")
    retired = RETIRED_SIZES.get(size)
    if retired is not None:
        fail(path, f"must not be a retired size (retired {retired.retired}); use {retired.replacement}", size)
    if size not in GPU_SIZES:
        close = difflib.get_close_matches(size, sorted(GPU_SIZES), n=1, cutoff=0.85)
        fail(
            path,
            "must be a GPU VM size gpupools knows (" + ", ".join(sorted(GPU_SIZES)) + ")",
            size,
            f"did you mean {close[0]}?"
            if close
            else "a non-GPU size cannot serve GPU pods"
            if size in CPU_SIZES
            else unknown_size_hint(size, GPU_SIZES),
        )


def check_azure_cpu_size(size: str, path: str) -> None:
    check_spelling(size, [*GPU_SIZES, *CPU_SIZES, *RETIRED_SIZES], path, "VM size")
    if size in GPU_SIZES or size in RETIRED_SIZES:
        fail(path, "must not be a GPU size in cpuPools: GPU nodes belong in gpuPools", size)
    if size not in CPU_SIZES:
        fail(
            path,
            "must be a general-purpose VM size gpupools knows (for example Standard_D8s_v5, Standard_D8ps_v5 for Arm64)",
            size,
            unknown_size_hint(size, CPU_SIZES),
        )


def check_aws_cpu_types(types: Sequence[str], ami_type: AmiType, path: str, karpenter: bool = False) -> None:
    """A CPU pool's EC2 types. Under cluster-autoscaler they share one shape (the scale-from-zero
    template is built from the first); under Karpenter only the architecture (one AMI boots them
    all): Karpenter sizes each node from the pending pods and the type's own facts
    (aws/karpenter-provider-aws ``pkg/providers/instancetype``), so ``[m6i.xlarge, m6i.2xlarge]`` is fine."""
    if len(types) > EKS_MAX_INSTANCE_TYPES:
        fail(path, f"must list at most {EKS_MAX_INSTANCE_TYPES} types (EKS limit)", list(types))
    first = None
    for index, name in enumerate(types):
        check_spelling(name, INSTANCE_TYPES, f"{path}[{index}]", "instance type")
        facts = INSTANCE_TYPES.get(name)
        if facts is None:
            fail(f"{path}[{index}]", "must be an instance type gpupools knows", name, unknown_size_hint(name, INSTANCE_TYPES))
            return
        if facts.gpus:
            fail(f"{path}[{index}]", "must not be a GPU type in cpuPools: GPU nodes belong in gpuPools", name)
        if first is None:
            first = facts
        elif karpenter and facts.arch != first.arch:
            fail(
                f"{path}[{index}]",
                f"must have the architecture of {first.name} ({first.arch}): one AMI boots every type of the pool",
                f"{name} ({facts.arch})",
            )
        elif not karpenter and facts.shape != first.shape:
            fail(
                f"{path}[{index}]",
                f"must have the shape of {first.name} ({first.vcpus} vCPU, {first.memory_mib} MiB, {first.arch}): "
                "cluster-autoscaler builds its scale-from-zero template from the first type, and one AMI boots them all",
                f"{name} ({facts.vcpus} vCPU, {facts.memory_mib} MiB, {facts.arch})",
            )
    if first is not None and first.arch != ami_type.architecture:
        arm = first.arch == "arm64"
        fail(
            f"{path}[0]",
            f"is {first.arch}, so amiType must be an {first.arch} AMI type "
            + ("(AL2023_ARM_64_STANDARD or BOTTLEROCKET_ARM_64)" if arm else "(AL2023_x86_64_STANDARD or BOTTLEROCKET_x86_64)"),
            f"{first.name} with {ami_type.value}",
        )


def check_aws_gpu_types(types: Sequence[str], path: str, karpenter: bool = False) -> None:
    """A GPU pool's EC2 types. Under cluster-autoscaler they share one shape (vCPU, memory, GPUs:
    the scale-from-zero template is built from the first). Under Karpenter sizes may differ
    (``[g6.xlarge, g6.2xlarge]``: Karpenter picks a type per launch from the pods and each type's own
    facts), but not the GPU count: the NodePool's GPU limit and a shared pool's NodeOverlay count GPUs
    per node (``gpupools.kubernetes.karpenter``), so one count keeps both exact."""
    if len(types) > EKS_MAX_INSTANCE_TYPES:
        fail(path, f"must list at most {EKS_MAX_INSTANCE_TYPES} types (EKS limit)", list(types))
    first = None
    for index, name in enumerate(types):
        check_spelling(name, INSTANCE_TYPES, f"{path}[{index}]", "instance type")
        facts = INSTANCE_TYPES.get(name)
        if facts is None:
            fail(f"{path}[{index}]", "must be an instance type gpupools knows", name, unknown_size_hint(name, INSTANCE_TYPES))
            return
        if facts.gpus == 0:
            fail(
                f"{path}[{index}]",
                "must have at least one whole NVIDIA GPU (cluster-autoscaler counts 0); CPU types belong in cpuPools",
                name,
            )
        if first is None:
            first = facts
        elif karpenter and (facts.gpus, facts.arch) != (first.gpus, first.arch):
            fail(
                f"{path}[{index}]",
                f"must have the GPU count and architecture of {first.name} ({first.gpus} GPU, {first.arch}): "
                "the NodePool's GPU limit and a shared pool's NodeOverlay count GPUs per node",
                f"{name} ({facts.gpus} GPU, {facts.arch})",
            )
        elif not karpenter and facts.shape != first.shape:
            fail(
                f"{path}[{index}]",
                f"must have the shape of {first.name} ({first.vcpus} vCPU, {first.memory_mib} MiB, "
                f"{first.gpus} GPU): cluster-autoscaler builds its scale-from-zero template from the first type",
                f"{name} ({facts.vcpus} vCPU, {facts.memory_mib} MiB, {facts.gpus} GPU)",
            )


def gpu_pool_label_count(pool: GpuPoolSpec) -> int:
    """Labels an EKS node group carries: GPU pools the conventions' four, the accelerator label and
    the device-plugin config label of a shared pool; CPU pools the conventions' three; plus extras."""
    if not pool.is_gpu:
        return 3 + len(pool.labels)
    # An EFA pool also carries vpc.amazonaws.com/efa.present (node_group.group_labels).
    return 5 + len(sharing.node_labels(pool.sharing)) + (1 if pool.efa else 0) + len(pool.labels)


def efa_types_note() -> str:
    """The EFA-capable types of the catalog, for error hints."""
    return ", ".join(name for name, facts in INSTANCE_TYPES.items() if facts.efa_supported)


def check_infiniband(pool: PoolSpec, cloud: Cloud, path: str) -> None:
    """``gpuPools[].infiniband`` (Azure): the pool's size must be InfiniBand-capable, the RDMA ND sizes
    (the size catalog's ``infiniband`` fact: the ``r`` of the Azure size name, Microsoft Learn "Azure
    virtual machine sizes naming conventions")."""
    if not pool.infiniband or cloud is not Cloud.AZURE:
        return
    from gpupools.catalog.azure_vm_sizes import infiniband_sizes

    capable = infiniband_sizes()
    for index, size in enumerate(pool.instance_types):
        if size not in capable:
            fail(
                f"{path}.instanceTypes[{index}]",
                "must be an InfiniBand-capable size with infiniband: true (" + ", ".join(capable) + ")",
                size,
            )


AUTO_MODE_GPU_FAMILIES = (
    "p6-b200", "p6-b300", "p5", "p5e", "p5en", "p4d", "p4de", "p3dn",
    "g7e", "g6", "gr6", "g6e", "g5g", "g5", "g4dn",
)  # fmt: skip
"""The NVIDIA families EKS Auto Mode launches (EKS user guide ``automode/automode-learn-instances.adoc``
at 06faff14, "Supported instance types": also g4ad (AMD), inf1/inf2 and trn1/trn1n/trn2, which are
not NVIDIA). g6f is not in that list."""

AUTO_MODE_SMALL_SIZES = ("nano", "micro", "small")
"""Auto Mode launches only instances "with more than 1 vCPU" and not of these sizes (same page)."""


def check_auto_mode_sizes(pool: PoolSpec, path: str) -> None:
    """Every size of a pool under ``provisioner: auto-mode`` is one Auto Mode launches: on GPU pools
    an ``AUTO_MODE_GPU_FAMILIES`` family, on every pool more than 1 vCPU and not nano, micro or small."""
    from gpupools.catalog.sizes import size_facts

    for index, size in enumerate(pool.instance_types):
        family, _, suffix = size.partition(".")
        if pool.is_gpu and family not in AUTO_MODE_GPU_FAMILIES:
            fail(
                f"{path}[{index}]",
                "is not a GPU family EKS Auto Mode launches (" + ", ".join(AUTO_MODE_GPU_FAMILIES) + ": EKS user guide, "
                "Auto Mode supported instance types); use one of them, or provisioner karpenter for this size",
                size,
            )
        facts = size_facts(size)
        if suffix in AUTO_MODE_SMALL_SIZES or (facts is not None and facts[1] <= 1):
            fail(f"{path}[{index}]", "is too small for EKS Auto Mode (it launches more than 1 vCPU, not nano/micro/small)", size)


def check_efa(pool: PoolSpec, cloud: Cloud, path: str, cluster_zones: Sequence[str], provisioner: Provisioner) -> None:
    """``gpuPools[].efa``: an AWS GPU pool of EFA-capable types with one EFA interface count, in
    exactly one zone, under cluster-autoscaler.

    * One zone: every instance that uses EFA must be in the same cluster placement group (Amazon EC2
      User Guide, "Elastic Fabric Adapter", "EFA limitations" / AWS Batch "Elastic Fabric Adapter":
      "All instances that use an EFA must be in the same cluster placement group"), and a cluster
      placement group lives in one Availability Zone (EC2 User Guide, "Placement strategies":
      "A cluster placement group is a logical grouping of instances within a single Availability
      Zone"). The zone is the pool's ``zones`` or, without them, the cluster's.
    * One launch template serves the pool, and it lists one network interface per EFA-capable
      network card, so the pool's types must agree on that count (``aws_instance_types.EFA_INTERFACES``).
    * Karpenter: gpupools configures EFA on managed node groups (launch template, placement group,
      security group). Karpenter v1.14.1's EC2NodeClass does have ``networkInterfaces``
      (``interface``/``efa-only``) and ``placementGroupSelector`` (tests/crds), but gpupools does not
      build them yet, so the pool is refused rather than created without EFA.
    """
    if not pool.efa:
        return
    at = f"{path}.efa"
    if cloud is not Cloud.AWS:
        fail(at, "is AWS only (on Azure use proximityPlacement with an InfiniBand size, see docs/aks.md)", True)
    if not pool.is_gpu:
        fail(at, "is for GPU pools only", True)
    if provisioner.node_pools:
        fail(
            at,
            f"is not supported with gpupools:provisioner {provisioner.value}: gpupools sets up EFA interfaces, the cluster "
            "placement group and the EFA security group on managed node groups only (Karpenter v1.14.1's EC2NodeClass "
            "networkInterfaces and placementGroupSelector are not wired yet); use provisioner cluster-autoscaler for "
            "this pool's stack",
            True,
        )
    counts: dict[int, str] = {}
    for index, name in enumerate(pool.instance_types):
        facts = INSTANCE_TYPES.get(name)
        if facts is None:
            continue  # reported by check_aws_gpu_types
        if not facts.efa_supported:
            fail(
                f"{path}.instanceTypes[{index}]",
                "must support EFA when efa is true (EC2 'EFA supported instance types')",
                name,
                "EFA-capable types gpupools knows: " + efa_types_note(),
            )
        counts.setdefault(facts.efa_interfaces, name)
    if len(counts) > 1:
        fail(
            f"{path}.instanceTypes",
            "must share one EFA interface count when efa is true (one launch template lists the interfaces): "
            + ", ".join(f"{name} {count}" for count, name in sorted(counts.items())),
            list(pool.instance_types),
        )
    zones = pool.zones or tuple(cluster_zones)
    if len(zones) != 1:
        fail(
            f"{path}.zones",
            "must name exactly one zone when efa is true (a cluster placement group is in one Availability Zone); "
            "set the pool's zones (or the cluster's) to one zone",
            list(zones) if zones else "the region's first 3 zones (default)",
        )


DRAIN_TIMEOUT_MINUTES = (1, 1440)
"""``upgrade.drainTimeoutMinutes`` bounds: the REST spec's ``drainTimeoutInMinutes`` (minimum 1,
maximum 1440; AKS ``AgentPoolUpgradeSettings``, API 2025-09-01)."""


def check_upgrade(pool: PoolSpec, path: str) -> None:
    """``upgrade`` (Azure): percentages at most 100%, not both ``maxSurge`` and ``maxUnavailable`` zero
    (nothing would ever be upgraded), the drain timeout in the API's range, and a pool that has a
    Regular agent pool to apply it to (a Spot pool without fallback or reservations has none: AKS
    refuses surge settings on Spot and upgrades it with "a cordon and an eviction notice, but no
    drain", AKS ``spot-node-pool.md``)."""
    upgrade = pool.upgrade
    if upgrade == UpgradeSpec():
        return
    at = f"{path}.upgrade"
    for key, value in (("maxSurge", upgrade.max_surge), ("maxUnavailable", upgrade.max_unavailable)):
        if value.endswith("%") and int(value[:-1]) > 100:
            fail(f"{at}.{key}", "must be a percentage of at most 100%", value)
    if upgrade_nodes(upgrade.max_surge, 100) == 0 and upgrade_nodes(upgrade.max_unavailable, 100) == 0:
        fail(
            f"{at}.maxUnavailable",
            "must be above 0 when maxSurge is 0 (AKS would have no node to upgrade with)",
            upgrade.max_unavailable,
        )
    low, high = DRAIN_TIMEOUT_MINUTES
    if not low <= upgrade.drain_timeout_minutes <= high:
        fail(f"{at}.drainTimeoutMinutes", f"must be {low} to {high} minutes (AKS's range)", upgrade.drain_timeout_minutes)
    if pool.spot and not pool.on_demand_fallback and not pool.reservations:
        fail(
            at,
            "has no agent pool to apply to: this pool is Spot only (no onDemandFallback, no reservations), and AKS refuses "
            "surge settings on Spot pools; leave it out",
            {"maxSurge": upgrade.max_surge, "maxUnavailable": upgrade.max_unavailable},
        )


def check_proximity_placement(pool: PoolSpec, cloud: Cloud, path: str, cluster_zones: Sequence[str]) -> None:
    """``gpuPools[].proximityPlacement``: an Azure GPU pool in one zone (or in none: a regional pool).

    A proximity placement group keeps VMs close within one datacenter (azure-aks-docs
    ``articles/aks/reduce-latency-ppg.md``, "Limitations": "A proximity placement group can map to
    only *one* availability zone"; "proximity placement groups require a node pool to use only
    *one* availability zone").
    """
    if not pool.proximity_placement:
        return
    at = f"{path}.proximityPlacement"
    if cloud is not Cloud.AZURE:
        fail(at, "is Azure only (on AWS use efa, which puts the pool in a cluster placement group)", True)
    if not pool.is_gpu:
        fail(at, "is for GPU pools only", True)
    zones = pool.zones or tuple(cluster_zones)
    if len(zones) > 1:
        fail(
            f"{path}.zones",
            "must name one zone when proximityPlacement is true (a proximity placement group is in one "
            "datacenter); set the pool's zones (or the cluster's) to one zone",
            list(zones),
        )


AWS_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}\Z")
"""An EC2 capacity reservation ID, as On-Demand Capacity Reservations and Capacity Blocks for ML both
have (EC2 API reference, ``CapacityReservation.CapacityReservationId``: "cr-1234567890abcdef0")."""

AZURE_RESERVATION_GROUP_ID = re.compile(
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w\._\(\)]{1,90}/providers/Microsoft\.Compute/"
    r"capacityReservationGroups/[-\w\._]{1,80}$",
    re.IGNORECASE,
)
"""A Capacity Reservation Group's ARM ID (AgentPool ``capacityReservationGroupID``: "AKS will associate the
specified agent pool with the Capacity Reservation Group"; ARM resource-group name rules: 1-90 of
letters, digits, ``-._()``)."""


RESERVATION_COUNT_RULE = "must be a whole number >= 1 (instances the reservation holds for the pool)"
"""``reservations[].count``: the reserved group's maximum (``ReservationSpec.reserved_max``)."""


def check_reservations(pool: PoolSpec, cloud: Cloud, path: str, zones: Sequence[str]) -> None:
    """``gpuPools[].reservations``: GPU pools only, IDs in the cloud's format and unique; on AWS each
    reservation in one of the pool's zones (``zone`` may be left out only when the pool has one zone:
    an AWS reservation lives in exactly one Availability Zone, EC2 ``CreateCapacityReservation``
    ``AvailabilityZone``). ``zones`` are the pool's zones (its own, else the cluster's; empty on AWS
    when they are resolved at deploy time)."""
    if not pool.reservations:
        return
    if not pool.is_gpu:
        fail(f"{path}.reservations", "is for GPU pools only", [r.id for r in pool.reservations])
    check_unique([r.id for r in pool.reservations], f"{path}.reservations", "reservation IDs")
    for index, reservation in enumerate(pool.reservations):
        at = f"{path}.reservations[{index}]"
        count = reservation.count
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            fail(f"{at}.count", RESERVATION_COUNT_RULE, count)
        if cloud is Cloud.AWS:
            if not AWS_RESERVATION_ID.match(reservation.id):
                fail(
                    f"{at}.id",
                    "must be an EC2 capacity reservation ID: cr- and 17 hex digits (an ODCR or a Capacity Block)",
                    reservation.id,
                )
            if reservation.zone is None:
                if len(zones) != 1:
                    fail(
                        f"{at}.zone",
                        "is required unless the pool has exactly one zone: an AWS reservation lives in one Availability Zone",
                        None,
                    )
            elif zones and reservation.zone not in zones:
                fail(f"{at}.zone", "must be one of the pool's zones (" + ", ".join(zones) + ")", reservation.zone)
        else:
            if reservation.capacity_block:
                fail(f"{at}.kind", "is AWS only (Capacity Blocks for ML are EC2 reservations)", "capacityBlock")
            if not AZURE_RESERVATION_GROUP_ID.match(reservation.id):
                fail(
                    f"{at}.id",
                    "must be a Capacity Reservation Group ARM ID: /subscriptions/<id>/resourceGroups/<group>/providers/"
                    "Microsoft.Compute/capacityReservationGroups/<name>",
                    reservation.id,
                )
            if reservation.zone is not None and zones and reservation.zone not in zones:
                fail(f"{at}.zone", "must be one of the pool's zones (" + ", ".join(zones) + ")", reservation.zone)


def check_sharing(pool: PoolSpec, cloud: Cloud, path: str) -> None:
    """``gpuPools[].sharing``: replicas within the plugin's limits, MIG only on AKS and on a size and
    profile that support it, and no sharing where gpupools' device plugin does not run."""
    spec: SharingSpec = pool.sharing
    at = f"{path}.sharing"
    if spec.mode is SharingMode.NONE:
        return
    if pool.ami_type.ships_device_plugin:
        fail(
            at,
            "is not available on Bottlerocket pools: sharing is set through gpupools' NVIDIA device plugin, and "
            "Bottlerocket runs its own (configure it with Bottlerocket's settings.kubelet-device-plugins instead)",
            pool.ami_type.value,
        )
    if spec.mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
        field = f"{at}.{spec.mode.value}.replicas"
        if isinstance(spec.replicas, bool) or not isinstance(spec.replicas, int):
            fail(field, "must be an integer", spec.replicas)
        if not sharing.MIN_REPLICAS <= spec.replicas <= sharing.MAX_REPLICAS:
            fail(
                field,
                f"must be from {sharing.MIN_REPLICAS} to {sharing.MAX_REPLICAS} (the device plugin rejects fewer than "
                f"{sharing.MIN_REPLICAS}; an MPS server admits at most {sharing.MAX_REPLICAS} clients per GPU, and "
                "gpupools caps time-slicing the same)",
                spec.replicas,
            )
        if spec.mig_profile is not None:
            fail(f"{at}.mig", "must not be combined with another mode (one mode per pool)", spec.mig_profile)
        return
    field = f"{at}.mig"
    if cloud is not Cloud.AZURE:
        fail(
            field,
            "is AKS only: on EKS, GPUs are partitioned only by NVIDIA's MIG manager (part of the GPU Operator), which "
            "gpupools does not deploy; use timeSlicing or mps, or a MIG-partitioned node group you manage yourself",
            spec.mig_profile,
        )
    if spec.replicas != 1:
        fail(f"{at}.mig", "must not be combined with another mode (one mode per pool)", spec.replicas)
    size = GPU_SIZES.get(pool.instance_types[0]) if pool.instance_types else None
    if size is not None and not size.mig_capable:
        capable = sorted(name for name, facts in GPU_SIZES.items() if facts.mig_capable)
        fail(
            field,
            f"needs a MIG-capable size (A100, H100 or H200: {', '.join(capable)}); {size.name} has {size.gpu_model} GPUs",
            spec.mig_profile,
        )
    profiles = size.mig_profiles if size is not None else MIG_INSTANCES_PER_GPU
    if spec.mig_profile not in profiles:
        fail(
            f"{field}.profile",
            "must be an AKS GPU instance profile of this size (" + ", ".join(profiles) + ")",
            spec.mig_profile,
        )


KARPENTER_MAX_NODES_PER_POOL = 1000
"""A sanity bound on ``maxSize`` under Karpenter, which has no per-pool node limit of its own (the
per-zone node group limits do not apply: there are no node groups)."""

KARPENTER_RESERVED_LABEL_DOMAINS: Mapping[Cloud, tuple[str, ...]] = {
    Cloud.AWS: ("karpenter.sh", "karpenter.k8s.aws"),
    Cloud.AZURE: ("karpenter.sh", "karpenter.azure.com", "kubernetes.azure.com"),
}
"""Label domains Karpenter keeps for itself: a NodePool whose template labels use them is rejected
(kubernetes-sigs/karpenter ``pkg/apis/v1/labels.go``, ``RestrictedLabelDomains``, which each
provider extends with its group: aws/karpenter-provider-aws ``karpenter.k8s.aws``,
Azure/karpenter-provider-azure ``karpenter.azure.com``). On AKS the provider's NodePool CRD also
refuses ``kubernetes.azure.com`` labels except a dozen AKS-defined ones (a CEL rule in its
``karpenter.sh_nodepools.yaml`` at v1.14.2); gpupools sets none of those, so the whole domain is refused."""


def check_karpenter_labels(pool: PoolSpec, path: str, cloud: Cloud = Cloud.AWS) -> None:
    """No pool label in a domain Karpenter reserves on the cloud (``KARPENTER_RESERVED_LABEL_DOMAINS``)."""
    domains = KARPENTER_RESERVED_LABEL_DOMAINS[cloud]
    for key in pool.labels:
        prefix = key.split("/", 1)[0] if "/" in key else ""
        if any(prefix == d or prefix.endswith("." + d) for d in domains):
            fail(f"{path}.labels.{key}", f"uses a label domain Karpenter reserves ({', '.join(domains)})", key)


def check_gpu_pool(
    pool: GpuPoolSpec,
    cloud: Cloud,
    path: str,
    cluster_zones: Sequence[str],
    region: str | None = None,
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    automatic: bool = False,
) -> None:
    """Every rule for one pool of either list (``pool.role``); ``cluster_zones`` empty on AWS means
    "resolved at deploy time". Under ``Provisioner.KARPENTER`` the rules that exist because of
    per-zone node groups and their Auto Scaling group tags (a node per zone, 50 ASG tags, 450 nodes
    per group) do not apply; Karpenter's reserved label domains do."""
    karpenter = provisioner.node_pools
    name_max = AKS_GPU_POOL_NAME_MAX if cloud is Cloud.AZURE else EKS_GPU_POOL_NAME_MAX
    if not POOL_NAME.match(pool.name) or len(pool.name) > name_max:
        why = (
            f"at most {name_max} characters: AKS allows 12 and gpupools appends a role letter and a 4-character digest"
            if cloud is Cloud.AZURE
            else f"at most {name_max} characters"
        )
        fail(f"{path}.name", f"must be a lowercase letter followed by lowercase letters or digits, {why}", pool.name)
    if pool.name == RESERVED_POOL_NAME and pool.role is not conventions.Role.SYSTEM:
        fail(f"{path}.name", "is reserved for the system pool (systemPool); choose another name", pool.name)
    types = pool.instance_types
    if not types:
        fail(f"{path}.instanceTypes", "must list at least one instance type", list(types))
    check_unique(types, f"{path}.instanceTypes", "instance types")
    if pool.eviction_rate is not None:
        check_eviction_rate(pool.eviction_rate, f"{path}.evictionRate")
        if not pool.spot:
            fail(f"{path}.evictionRate", "is for Spot pools only (this pool has spot: false); remove it", pool.eviction_rate)
    if cloud is Cloud.AZURE:
        if len(types) != 1:
            fail(f"{path}.instanceTypes", "must list exactly one VM size on Azure (an AKS pool has one size)", list(types))
        if pool.is_gpu:
            if types[0] in CPU_SIZES:
                fail(f"{path}.instanceTypes[0]", "must be a GPU VM size: CPU nodes belong in cpuPools", types[0])
            check_azure_gpu_size(types[0], f"{path}.instanceTypes[0]")
        else:
            check_azure_cpu_size(types[0], f"{path}.instanceTypes[0]")
    elif pool.is_gpu:
        if not pool.ami_type.is_gpu:
            fail(
                f"{path}.amiType",
                "must be an NVIDIA AMI type in gpuPools (AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA)",
                pool.ami_type.value,
            )
        check_aws_gpu_types(types, f"{path}.instanceTypes", karpenter)
    else:
        if pool.ami_type.is_gpu:
            fail(
                f"{path}.amiType",
                "must not be an NVIDIA AMI type in cpuPools (AL2023_x86_64_STANDARD, AL2023_ARM_64_STANDARD, "
                "BOTTLEROCKET_x86_64 or BOTTLEROCKET_ARM_64)",
                pool.ami_type.value,
            )
        check_aws_cpu_types(types, pool.ami_type, f"{path}.instanceTypes", karpenter)

    zones = pool.zones or tuple(cluster_zones)
    for index, zone in enumerate(pool.zones):
        # One of the cluster's zones was checked with them (and gpupools:catalog.allowUnlisted).
        check_zone(zone, cloud, f"{path}.zones[{index}]", None if zone in cluster_zones else region)
        if cluster_zones and zone not in cluster_zones:
            fail(f"{path}.zones[{index}]", "must be one of the cluster's zones (" + ", ".join(cluster_zones) + ")", zone)
    check_unique(pool.zones, f"{path}.zones", "zones")
    if cloud is Cloud.AWS and pool.zones and not cluster_zones:
        fail(f"{path}.zones", "needs gpupools:cluster.zones set (pool zones must be cluster zones)", list(pool.zones))

    if karpenter:
        _check_sizes(pool.min_size, pool.max_size, KARPENTER_MAX_NODES_PER_POOL, path)
        check_karpenter_labels(pool, path, cloud)
    elif cloud is Cloud.AZURE:
        _check_sizes(pool.min_size, pool.max_size, AKS_MAX_NODES_PER_POOL, path)
    else:
        zone_count = len(zones) or 3
        _check_sizes(pool.min_size, pool.max_size, EKS_MAX_NODES_PER_GROUP * zone_count, path)
        if pool.max_size < zone_count:
            fail(
                f"{path}.maxSize",
                f"must be >= the number of zones ({zone_count}): EKS gets one node group per zone and each needs room for a node",
                pool.max_size,
            )

    if not pool.spot and pool.on_demand_fallback:
        fail(f"{path}.onDemandFallback", "must be false when spot is false (the pool is already on-demand)", True)
    if pool.on_demand_max_size is not None:
        if not pool.on_demand_fallback:
            fail(f"{path}.onDemandMaxSize", "is only used with onDemandFallback: true", pool.on_demand_max_size)
        limit = AKS_MAX_NODES_PER_POOL if cloud is Cloud.AZURE else EKS_MAX_NODES_PER_GROUP * (len(zones) or 3)
        if not 1 <= pool.on_demand_max_size <= limit:
            fail(f"{path}.onDemandMaxSize", f"must be from 1 to {limit}", pool.on_demand_max_size)
        if cloud is Cloud.AWS and pool.on_demand_max_size < (len(zones) or 3):
            fail(
                f"{path}.onDemandMaxSize",
                f"must be >= the number of zones ({len(zones) or 3}), one node group per zone",
                pool.on_demand_max_size,
            )

    if cloud is Cloud.AZURE:
        price = pool.spot_max_price
        if price != -1 and (price <= 0 or round(price, 5) != price):
            fail(
                f"{path}.spotMaxPrice",
                "must be -1 (up to the on-demand price) or a positive price with at most 5 decimals",
                price,
            )
        if price != -1 and not pool.spot:
            fail(f"{path}.spotMaxPrice", "is only used with spot: true", price)
    elif pool.spot_max_price != -1:
        fail(
            f"{path}.spotMaxPrice",
            "is Azure only (EKS Spot pays the current Spot price, capped at on-demand)",
            pool.spot_max_price,
        )

    if cloud is Cloud.AZURE and pool.ami_type not in (AmiType.AL2023_NVIDIA, AmiType.AL2023_STANDARD):
        fail(f"{path}.amiType", "is AWS only", pool.ami_type.value)

    check_labels(pool.labels, f"{path}.labels")
    if conventions.DEVICE_PLUGIN_CONFIG_LABEL in pool.labels:
        fail(
            f"{path}.labels.{conventions.DEVICE_PLUGIN_CONFIG_LABEL}",
            "is set by gpupools from the pool's sharing (a name the device plugin's ConfigMap does not hold stops the "
            "plugin from starting); use sharing instead",
            pool.labels[conventions.DEVICE_PLUGIN_CONFIG_LABEL],
        )
    check_taints(pool.taints, f"{path}.taints")
    check_disk(pool.disk_size_gb, cloud, f"{path}.diskSizeGb")
    gpu_driver.check_gpu_driver(pool, cloud, path, provisioner, automatic)
    check_sharing(pool, cloud, path)
    check_reservations(pool, cloud, path, zones)
    check_infiniband(pool, cloud, path)
    check_efa(pool, cloud, path, cluster_zones, provisioner)
    if provisioner is Provisioner.AUTO_MODE:
        check_auto_mode_sizes(pool, f"{path}.instanceTypes")
    check_proximity_placement(pool, cloud, path, cluster_zones)
    check_upgrade(pool, path)
    from gpupools.warm import check_warm

    check_warm(pool, path)

    if cloud is Cloud.AWS:
        check_eks_labels_and_taints(pool, path)
        own_taints = 1 if pool.is_gpu else 0
        if len(pool.taints) + own_taints > EKS_MAX_TAINTS:
            fail(
                f"{path}.taints",
                f"must hold at most {EKS_MAX_TAINTS - own_taints} taints (EKS allows {EKS_MAX_TAINTS}"
                + (", one is the GPU taint)" if own_taints else ")"),
                len(pool.taints),
            )
        # Resource tags: vpc.amazonaws.com/efa and hugepages-2Mi on EFA pools, ephemeral-storage on every group.
        resource_tags = (2 if pool.efa else 0) + 1
        tags = gpu_pool_label_count(pool) + len(pool.taints) + own_taints + own_taints + resource_tags + EKS_ASG_OWN_TAGS
        if tags > ASG_MAX_TAGS and not karpenter:
            fail(
                f"{path}.labels",
                f"labels and taints must fit the {ASG_MAX_TAGS} tags an Auto Scaling group allows "
                f"(each becomes a cluster-autoscaler node-template tag; EKS uses {EKS_ASG_OWN_TAGS}, "
                f"this pool needs {tags})",
                len(pool.labels),
            )


def check_eks_labels_and_taints(pool: GpuPoolSpec, path: str) -> None:
    """EKS's own limits on labels and taints (``EKS_LABEL_MAX``, no empty label values), and no
    pool label that gpupools sets itself on EKS node groups (the conventions' labels and the
    accelerator label): a different value would break the device plugin's affinity or the
    autoscaler's GPU detection."""
    reserved = set(conventions.pool_labels(pool.name, conventions.Role.GPU, conventions.CapacityType.SPOT))
    reserved.add(conventions.EKS_ACCELERATOR_LABEL)  # reserved on CPU pools too: it tells the autoscaler "GPU node"
    for key, value in pool.labels.items():
        if key in reserved:
            fail(f"{path}.labels.{key}", "is set by gpupools; leave it out", key)
        if len(key) > EKS_LABEL_MAX:
            fail(f"{path}.labels.{key}", f"key must be at most {EKS_LABEL_MAX} characters on EKS", key)
        if value == "":
            fail(f"{path}.labels.{key}", "value must not be empty on EKS", value)
    for index, taint in enumerate(pool.taints):
        if len(taint.key) > EKS_LABEL_MAX:
            fail(f"{path}.taints[{index}].key", f"must be at most {EKS_LABEL_MAX} characters on EKS", taint.key)


def check_gpu_pools(
    pools: Sequence[GpuPoolSpec],
    cloud: Cloud,
    path: str,
    cluster_zones: Sequence[str],
    region: str | None,
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    automatic: bool = False,
) -> None:
    if not pools:
        fail(path, "must list at least one GPU pool", [])
    for index, pool in enumerate(pools):
        check_gpu_pool(pool, cloud, f"{path}[{index}]", cluster_zones, region, provisioner, automatic)
    check_unique([p.name for p in pools], path, "pool names")


def check_cpu_pools(
    pools: Sequence[PoolSpec],
    gpu_pools: Sequence[PoolSpec],
    cloud: Cloud,
    path: str,
    cluster_zones: Sequence[str],
    region: str | None,
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER,
    automatic: bool = False,
) -> None:
    """``cpuPools``: optional; each entry by the same rules, names unique across both lists (they
    name agent pools and node groups in one namespace, and workloads select by ``gpupools.io/pool``)."""
    gpu_names = {p.name for p in gpu_pools}
    for index, pool in enumerate(pools):
        check_gpu_pool(pool, cloud, f"{path}[{index}]", cluster_zones, region, provisioner, automatic)
        if pool.name in gpu_names:
            fail(f"{path}[{index}].name", "must not repeat a gpuPools name (pool names are unique across both lists)", pool.name)
    check_unique([p.name for p in pools], path, "pool names")


def check_region(cloud: Cloud, region: str | None) -> None:
    """``aws:region`` / ``azure-native:location``: a public region of the cloud
    (``gpupools.catalog.regions``), with the nearest one suggested. ``None`` (not set) passes:
    Azure requires it where the stack reads it, AWS falls back to the provider's default region."""
    if region is not None and not regions.is_known(cloud, region):
        fail(regions.REGION_KEYS[cloud], regions.unknown_region_rule(cloud, region), region)


def check_stack(spec: StackSpec, region: str | None = None) -> None:
    """Every rule for a whole stack, paths in ``gpupools:`` config form; the region first, since
    the zone rules compare zones with it."""
    check_region(spec.cloud, region)
    check_cluster(spec.cluster, spec.cloud, "gpupools:cluster", region, spec.catalog.allow_unlisted)
    check_network(spec.network, spec.cloud, spec.cluster.zones, "gpupools:network")
    zones = spec.cluster.zones
    check_system_pool(spec.system_pool, spec.cloud, "gpupools:systemPool")
    automatic = spec.cluster.automatic
    check_gpu_pools(spec.gpu_pools, spec.cloud, "gpupools:gpuPools", zones, region, spec.provisioner, automatic)
    check_cpu_pools(spec.cpu_pools, spec.gpu_pools, spec.cloud, "gpupools:cpuPools", zones, region, spec.provisioner, automatic)
    check_device_plugin(spec.device_plugin, "gpupools:devicePlugin")
    check_autoscaler(spec.autoscaler, "gpupools:autoscaler")
    check_cost(spec.cost, "gpupools:cost")
    check_maintenance(spec.maintenance, "gpupools:maintenance")
    from gpupools.warm import check_warm_namespace

    queue_namespaces = [*spec.queueing.namespaces, *(ns for team in spec.queueing.teams for ns in team.namespaces)]
    check_warm_namespace(queue_namespaces, any(p.warm for p in spec.gpu_pools), "gpupools:queueing.namespaces")
    check_offered(spec, region)


LISTING_SHOWN = 5
"""How many regions that list a size an error names (then how many more)."""


def listing_regions(listing: Sequence[str], region: str) -> str:
    """``listing`` for an error: the regions sharing ``region``'s geography prefix first (AWS
    ``eu-``, Azure names have none: alphabetical), at most ``LISTING_SHOWN``, then ``and N more``."""
    prefix = region.split("-")[0] + "-" if "-" in region else None
    ordered = sorted(listing, key=lambda name: (not (prefix and name.startswith(prefix)), name))
    shown = ", ".join(ordered[:LISTING_SHOWN])
    more = len(ordered) - LISTING_SHOWN
    return shown + (f" and {more} more" if more > 0 else "") if ordered else "none"


def check_offered(spec: StackSpec, region: str | None) -> None:
    """Every size of the stack's pools is offered in its region, as far as the price catalog's
    source knows (``PriceTable.not_offered``): a size it lists no row of there is one error naming
    the path, the region and the regions that do list it, before anything is registered (the
    cloud would refuse it only when the pool is created, after the cluster exists). Sizes in
    ``gpupools:catalog.allowUnlisted`` pass: the override for a catalog that lags the cloud; the
    online preflight asks the cloud itself and is the final word. A listed size must be one of the
    stack's sizes (a typo there would silently allow nothing)."""
    from gpupools.catalog.prices import price_table

    sizes = [
        ("gpupools:systemPool.instanceTypes", spec.system_pool.instance_types),
        *((f"gpupools:gpuPools[{i}].instanceTypes", p.instance_types) for i, p in enumerate(spec.gpu_pools)),
        *((f"gpupools:cpuPools[{i}].instanceTypes", p.instance_types) for i, p in enumerate(spec.cpu_pools)),
    ]
    used = {size for _, types in sizes for size in types}
    zones = {*spec.cluster.zones, *(zone for pool in spec.pools for zone in pool.zones)}
    for index, size in enumerate(spec.catalog.allow_unlisted):
        if size not in used and size not in zones:
            fail(
                f"gpupools:catalog.allowUnlisted[{index}]",
                "must name a size one of the stack's pools uses, or one of its zones",
                size,
            )
    if not region:
        return
    table = price_table(spec.cloud)
    # Declared sizes have no price rows anywhere: the stack vouches for them (the preflight asks the cloud).
    allowed = set(spec.catalog.allow_unlisted) | {size.name for size in spec.catalog.instance_types}
    for path, types in sizes:
        for index, size in enumerate(types):
            reason = table.not_offered(region, size)
            if reason is None or size in allowed:
                continue
            listing = listing_regions(table.regions_listing(size), regions.normalize(spec.cloud, region))
            fail(
                f"{path}[{index}]",
                f"must be a size offered in {regions.normalize(spec.cloud, region)} ({reason}); regions that list it: "
                f"{listing}. If the catalog lags the cloud, add it to gpupools:catalog.allowUnlisted; the online "
                "preflight (python -m gpupools.preflight) is the final word",
                size,
            )


def check_cost(cost: CostSpec, path: str) -> None:
    """``gpupools:cost``: hours not negative, a share from 0 to 1, a positive budget."""
    if cost.gpu_hours_per_month is not None and cost.gpu_hours_per_month < 0:
        fail(f"{path}.gpuHoursPerMonth", "must be >= 0", cost.gpu_hours_per_month)
    if not 0.0 <= cost.spot_share <= 1.0:
        fail(f"{path}.spotShare", "must be from 0 to 1 (the share of GPU hours served by Spot)", cost.spot_share)
    if cost.budget_per_hour is not None and cost.budget_per_hour <= 0:
        fail(f"{path}.budgetPerHour", "must be > 0 (USD per hour)", cost.budget_per_hour)
    check_eviction_rate(cost.eviction_rate, f"{path}.evictionRate")
    if not 0.0 <= cost.redone_share <= 1.0:
        fail(f"{path}.redoneShare", "must be between 0 and 1 (share of an interrupted run that is redone)", cost.redone_share)


def check_eviction_rate(rate: float, path: str) -> None:
    """An eviction rate is a share: from 0 to 1 (``gpupools.pricing.estimate.spot_hours_with_evictions``)."""
    if not 0.0 <= rate <= 1.0:
        fail(path, "must be between 0 and 1 (share of Spot runs interrupted; 0.05 for 5%)", rate)


MAINTENANCE_MIN_HOURS = 4
MAINTENANCE_MAX_HOURS = 24
"""AKS maintenance windows last 4 to 24 hours (pulumi-azure-native ``containerservice.MaintenanceWindowArgs``
``duration_hours``: "Length of maintenance window range from 4 to 24 hours"), and AKS recommends "a maintenance
window of four hours or more" for NAP (``node-auto-provisioning-upgrade-image.md``); EKS uses the same bounds."""

UTC_OFFSET_RANGE = (-12 * 60, 14 * 60)
"""UTC offsets in use run from -12:00 to +14:00."""

GRACE_PERIOD = re.compile(r"^([1-9]\d*)(m|h)\Z")
GRACE_PERIOD_MAX_HOURS = 7 * 24
"""``terminationGracePeriod``: whole minutes or hours (the NodePool CRD takes ``^([0-9]+(s|m|h))+$``), at most a
week, so a node replaced in one weekly window is gone before the next one opens."""


def check_maintenance(spec: MaintenanceSpec, path: str) -> None:
    """``gpupools:maintenance``: a weekly window AKS accepts (``HH:MM``, 4-24 hours, ``+HH:MM`` offset) and a
    grace period the NodePool CRD accepts."""
    from gpupools import maintenance

    if not maintenance.START_TIME.match(spec.start_time):
        fail(f"{path}.startTime", 'must be a time of day "HH:MM" from 00:00 to 23:59', spec.start_time)
    hours = spec.duration_hours
    if isinstance(hours, bool) or not isinstance(hours, int):
        fail(f"{path}.durationHours", "must be an integer", hours)
    if hours < MAINTENANCE_MIN_HOURS:
        fail(
            f"{path}.durationHours",
            f"must be >= {MAINTENANCE_MIN_HOURS}",
            hours,
            "the shortest AKS maintenance window, and AKS's advice for node image roll-outs",
        )
    if hours > MAINTENANCE_MAX_HOURS:
        fail(f"{path}.durationHours", f"must be <= {MAINTENANCE_MAX_HOURS}", hours, "the longest AKS maintenance window")
    if not maintenance.UTC_OFFSET.match(spec.utc_offset) or int(spec.utc_offset[4:6]) > 59:
        fail(f"{path}.utcOffset", 'must be "+HH:MM" or "-HH:MM", like +00:00, +05:30 or -07:00', spec.utc_offset)
    low, high = UTC_OFFSET_RANGE
    if not low <= maintenance.offset_minutes(spec.utc_offset) <= high:
        fail(f"{path}.utcOffset", "must be from -12:00 to +14:00", spec.utc_offset)
    if spec.termination_grace_period is None:
        return
    match = GRACE_PERIOD.match(spec.termination_grace_period)
    if match is None:
        fail(
            f"{path}.terminationGracePeriod",
            "must be whole minutes or hours, written like 90m or 24h",
            spec.termination_grace_period,
        )
        return
    minutes = int(match.group(1)) * (60 if match.group(2) == "h" else 1)
    if minutes > GRACE_PERIOD_MAX_HOURS * 60:
        fail(
            f"{path}.terminationGracePeriod",
            f"must be at most {GRACE_PERIOD_MAX_HOURS}h (a week: a node replaced in one window must be gone before the next)",
            spec.termination_grace_period,
        )


# --- a Kubernetes version change an existing EKS cluster accepts -----------------------------------

VERSION_PATH = "gpupools:cluster.kubernetesVersion"

RELEASE_HELD_GROUP = (
    "let it reach 0 nodes (the autoscaler scales an idle group down; or drain its nodes; a Capacity Block's "
    "group is scaled to 0 by EKS before the block ends) or remove its reservation from the pool, run "
    "`pulumi up` with the current kubernetesVersion so the group rolls to {live}, then change kubernetesVersion; "
    "a group this stack does not manage: `aws eks update-nodegroup-version`"
)
"""How to release a node group that lags the control plane (``version_change_error``)."""


def version_change_error(
    wanted: str, live: str, group_versions: Mapping[str, str | None], path: str = VERSION_PATH
) -> ConfigError | None:
    """Why the control plane cannot move from the live minor ``live`` to ``wanted`` (the config's),
    or None when it can (or nothing changes). ``group_versions``: every managed node group of the
    cluster and its Kubernetes version (``DescribeNodegroup``'s ``nodegroup.version``), read only for
    an upgrade.

    * ``wanted`` older than ``live``: EKS cannot downgrade (``UpdateClusterVersion`` takes the next
      minor only). The usual cause is EKS's own upgrade of a minor at the end of its standard
      support (``upgradePolicy.supportType: STANDARD``, gpupools' default): the config then lags the
      cluster and must follow it.
    * ``wanted`` newer: "If your cluster has managed node groups attached to it, all of your node
      groups' Kubernetes versions must match the cluster's Kubernetes version in order to update the
      cluster to a new Kubernetes version" (botocore ``eks`` ``UpdateClusterVersion``, EKS API
      reference). A reserved group running nodes is held at its version (``gpupools.aws.node_group.ROLL_AT_ZERO_PATHS``),
      so the first ``up`` after a minor change can leave it one behind; the next change then fails at
      ``UpdateClusterVersion`` after the plan started. Said here, naming each lagging group.

    >>> version_change_error("1.35", "1.35", {}) is None, version_change_error("1.36", "1.35", {"a": "1.35"}) is None
    (True, True)
    >>> print(version_change_error("1.34", "1.35", {}))  # doctest: +ELLIPSIS
    gpupools:cluster.kubernetesVersion: must not be older than the live cluster's 1.35 ...
    """
    wanted_key, live_key = versions.minor_key(versions.minor(wanted)), versions.minor_key(versions.minor(live))
    if wanted_key < live_key:
        return ConfigError(
            path,
            f"must not be older than the live cluster's {versions.minor(live)} (EKS cannot downgrade; with supportType "
            "STANDARD it upgrades a minor whose standard support ended): set it to "
            f'"{versions.minor(live)}"',
            wanted,
        )
    if wanted_key == live_key:
        return None
    lagging = {
        name: version
        for name, version in sorted(group_versions.items())
        if version and versions.minor(version) != versions.minor(live)
    }
    if not lagging:
        return None
    groups = ", ".join(f"{name} (at {version})" for name, version in lagging.items())
    return ConfigError(
        path,
        f"cannot move the control plane from {versions.minor(live)} while managed node groups are at another version "
        f"(EKS UpdateClusterVersion requires every node group at the cluster's version): {groups}; for each, "
        + RELEASE_HELD_GROUP.format(live=versions.minor(live)),
        wanted,
    )
