"""The cross-language argument and output types of the gpupools component package.

Every class here is a ``TypedDict`` read by the Pulumi schema analyzer
(``pulumi.provider.experimental.analyzer`` in the pinned Python SDK): each field becomes a schema
property named in camelCase (``instance_types`` -> ``instanceTypes``, the analyzer's
``util.camel_case``), typed from its annotation, described by the string literal under it. Fields
are ``NotRequired`` where the Python API has a default, and the docstring states that default.

No ``from __future__ import annotations`` in this module, on purpose: the analyzer reads
``inspect.get_annotations`` without evaluating strings, so a postponed annotation would reach it
as a ``str`` and fail. For the same reason there are no unions here other than ``Optional``
("Union types are not supported", ``analyze_property``).

Values are checked by the same code as the Python API: a pool mapping goes through
``gpupools.config.parse_gpu_pool`` / ``parse_cpu_pool`` (see ``gpupools.xlang.convert``), a
cluster through ``config.parse_cluster``, and so on. These types only say what may cross a
language boundary; they repeat no rule.
"""

from typing import NotRequired, TypedDict

import pulumi

# -- nested pool types ------------------------------------------------------------------------


class TaintArgs(TypedDict):
    """A Kubernetes taint (``gpuPools[].taints[]``)."""

    key: str
    """The taint key."""
    value: str
    """The taint value; required and non-empty (cluster-autoscaler ignores value-less taints in scale-from-zero templates)."""
    effect: str
    """``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute`` (the Kubernetes spelling)."""


class ReplicasArgs(TypedDict):
    """Replicas of a shared GPU."""

    replicas: int
    """Pods per GPU (2-48)."""


class MigArgs(TypedDict):
    """A MIG partition (AKS)."""

    profile: str
    """The AKS ``gpuInstanceProfile``, ``MIG1g`` to ``MIG7g``."""


class SharingArgs(TypedDict, total=False):
    """How pods share a GPU (``gpuPools[].sharing``): exactly one of the three modes."""

    time_slicing: ReplicasArgs
    """CUDA time-slicing: each GPU advertised ``replicas`` times."""
    mps: ReplicasArgs
    """CUDA MPS: each GPU advertised ``replicas`` times, with the MPS control daemon."""
    mig: MigArgs
    """AKS only: hardware partitions of each GPU."""


class ReservationArgs(TypedDict):
    """A capacity reservation used before Spot (``gpuPools[].reservations[]``)."""

    id: str
    """AWS: an ODCR or Capacity Block ID (``cr-...``); Azure: a Capacity Reservation Group ARM ID."""
    zone: NotRequired[str]
    """The reservation's zone; default: the pool's zones."""
    kind: NotRequired[str]
    """AWS: ``odcr`` (default) or ``capacityBlock``."""
    count: NotRequired[int]
    """Instances reserved: the reserved group's maximum; default: the pool's ``maxSize``."""


class UpgradeArgs(TypedDict):
    """How AKS upgrades a pool's on-demand and reserved agent pools (``gpuPools[].upgrade``)."""

    max_surge: NotRequired[str]
    """Extra nodes during an upgrade, a count or a percentage (``"33%"``); default ``"0"``."""
    max_unavailable: NotRequired[str]
    """Nodes drained at once, a count or a percentage; default ``"1"``."""
    drain_timeout_minutes: NotRequired[int]
    """Per node, how long AKS waits for evictions before the upgrade fails; default 60."""


class WarmScheduleArgs(TypedDict):
    """When a warm pool's spare nodes are kept (``gpuPools[].warm.schedule``); outside it, none."""

    start: str
    """Quoted ``"HH:MM"`` in ``timeZone``: the buffer is set to ``nodes``."""
    end: str
    """Quoted ``"HH:MM"``, after ``start`` on the same day: the buffer is set to 0."""
    days: NotRequired[list[str]]
    """Week days (``Monday`` ... ``Sunday``); default every day."""
    time_zone: NotRequired[str]
    """An IANA time zone; default ``UTC``."""


class WarmArgs(TypedDict):
    """Spare GPU nodes kept ready (``gpuPools[].warm``, docs/warm.md). The stack program creates the
    buffer objects (``gpupools.kubernetes.warm.WarmCapacity``); a pool component only validates this."""

    nodes: int
    """Spare nodes kept, 1 to the pool's ``maxSize``."""
    schedule: NotRequired[WarmScheduleArgs]
    """When they are kept; default always."""


class PoolArgs(TypedDict):
    """One ``gpuPools`` or ``cpuPools`` entry, the same keys as the stack config (camelCase in other languages).

    Validated by ``gpupools.config.parse_gpu_pool`` (or ``parse_cpu_pool``) and the cloud's rules,
    so an error names the same rule as a bad ``Pulumi.<stack>.yaml``."""

    name: str
    """Short, lowercase letter then letters/digits; prefixes the pool's node pools/groups."""
    instance_types: list[str]
    """VM sizes (Azure: one) or EC2 instance types of one shape (AWS: one or more)."""
    max_size: int
    """The pool's node count bound, total across its zones."""
    min_size: NotRequired[int]
    """Default 0 (scale from zero)."""
    spot: NotRequired[bool]
    """Default true: Spot capacity first."""
    spot_max_price: NotRequired[float]
    """Azure only; default -1 (pay up to the on-demand price)."""
    on_demand_fallback: NotRequired[bool]
    """Default true (with spot): an on-demand pool of the same shape, ranked below Spot."""
    on_demand_max_size: NotRequired[int]
    """Default ``maxSize``; a total across zones."""
    zones: NotRequired[list[str]]
    """Default: the cluster's zones."""
    labels: NotRequired[dict[str, str]]
    """Extra node labels; default none."""
    taints: NotRequired[list[TaintArgs]]
    """Extra taints; default none (GPU pools always carry ``nvidia.com/gpu``)."""
    disk_size_gb: NotRequired[int]
    """OS disk size; default Azure 128, AWS 100 (GPU) / 80 (CPU)."""
    ami_type: NotRequired[str]
    """AWS only; default ``AL2023_x86_64_NVIDIA`` (GPU) / ``AL2023_x86_64_STANDARD`` (CPU)."""
    sharing: NotRequired[SharingArgs]
    """GPU sharing; default none (one pod per GPU)."""
    eviction_rate: NotRequired[float]
    """Expected share of Spot runs interrupted (0-1), for the cost model; default the stack's."""
    reservations: NotRequired[list[ReservationArgs]]
    """Capacity reservations used first; default none."""
    efa: NotRequired[bool]
    """AWS only; default false. EFA interfaces, a cluster placement group, one zone."""
    proximity_placement: NotRequired[bool]
    """Azure only; default false. A proximity placement group for the pool."""
    infiniband: NotRequired[bool]
    """Azure only; default false. Only RDMA (InfiniBand) ND sizes."""
    gpu_driver: NotRequired[str]
    """GPU pools only: ``install`` (default: the image or AKS installs the driver, gpupools runs the device plugin), ``none`` (bring your own, e.g. the NVIDIA GPU Operator) or ``managed`` (refused today; see docs/gpu-driver.md)."""
    upgrade: NotRequired[UpgradeArgs]
    """Azure only: the on-demand and reserved agent pools' upgrade settings; default no surge, one node at a time, 60 minutes to drain."""
    warm: NotRequired[WarmArgs]
    """GPU pools only: spare nodes kept ready on a schedule; default none. Validated here; the buffer objects are the stack program's (``WarmCapacity``)."""


# -- cluster-level types ----------------------------------------------------------------------


class ClusterArgs(TypedDict):
    """``gpupools:cluster``."""

    name: str
    """Lowercase letters, digits and '-'; the prefix of every resource name."""
    kubernetes_version: NotRequired[str]
    """``"<major>.<minor>"``; default the pinned ``gpupools.versions.DEFAULT_KUBERNETES_VERSION``."""
    zones: NotRequired[list[str]]
    """Azure default ``["1", "2", "3"]``; AWS default: the region's first three zones."""
    allow_local_accounts: NotRequired[bool]
    """Azure only; default false (Entra ID with Azure RBAC only)."""
    admin_group_object_ids: NotRequired[list[str]]
    """Azure only; Entra ID groups granted cluster-admin; default none."""
    api_allowed_cidrs: NotRequired[list[str]]
    """IPv4 CIDRs allowed to reach the API server's public endpoint; default none (open to every address)."""
    admins: NotRequired[list[str]]
    """AWS only; IAM role or user ARNs granted cluster-admin through EKS access entries; default none."""
    control_plane_logs: NotRequired[list[str]]
    """AWS only; EKS control plane log types to CloudWatch Logs; default ``["api", "audit", "authenticator"]``."""
    support_type: NotRequired[str]
    """AWS only; ``STANDARD`` (default: EKS upgrades a minor leaving standard support) or ``EXTENDED``."""
    permissions_boundary: NotRequired[str]
    """AWS only; an IAM policy ARN set as the permissions boundary of every IAM role the stack creates."""
    sku: NotRequired[str]
    """Azure only; ``Base`` (default) or ``Automatic`` (AKS Automatic: new clusters, Node Auto Provisioning)."""


class NetworkArgs(TypedDict, total=False):
    """``gpupools:network``; default a created network."""

    cidr: str
    """Address space of a created network; default ``10.40.0.0/16``."""
    subnet_id: str
    """Azure: bring your own node subnet (ARM ID)."""
    vpc_id: str
    """AWS: bring your own VPC (needs ``privateSubnetIds``)."""
    private_subnet_ids: list[str]
    """AWS: one private subnet per zone, in zone order."""
    dataplane: str
    """Azure: ``azure`` or ``cilium``; default AKS's own (``cilium`` under Node Auto Provisioning)."""


class SystemPoolArgs(TypedDict, total=False):
    """``gpupools:systemPool``: the on-demand pool for cluster-critical add-ons."""

    instance_types: list[str]
    """Azure exactly one size (default ``Standard_D4s_v5``); AWS one or more (default ``m6i.xlarge``)."""
    min_size: int
    """Default 2."""
    max_size: int
    """Default 4."""
    disk_size_gb: int
    """Default 128."""


class AutoscalerArgs(TypedDict, total=False):
    """``gpupools:autoscaler``: cluster-wide autoscaler timing."""

    max_node_provision_time: str
    """Default ``10m``: how long to wait for a Spot node before falling back."""
    scale_down_unneeded_time: str
    """Default ``10m``: how long an idle node lives."""


class MaintenanceArgs(TypedDict, total=False):
    """``gpupools:maintenance``: the weekly node-image window."""

    day: str
    """Default ``Sunday``."""
    start_time: str
    """``HH:MM`` in ``utcOffset``; default ``02:00``."""
    duration_hours: int
    """4-24; default 4."""
    utc_offset: str
    """``+HH:MM`` or ``-HH:MM``; default ``+00:00``."""
    termination_grace_period: str
    """Karpenter NodePools' ``terminationGracePeriod``; default none (running jobs are never force-deleted)."""


# -- pool descriptions (outputs, and inputs of the Kubernetes add-ons) -------------------------


class SharingInfo(TypedDict):
    """How a created pool's GPUs are shared."""

    mode: str
    """``none``, ``timeSlicing``, ``mps`` or ``mig``."""
    replicas: int
    """Pods per GPU (1 without time-slicing/MPS)."""
    mig_profile: NotRequired[str]
    """The MIG profile with ``mig``."""


class NodePoolInfo(TypedDict):
    """One created agent pool (AKS), node group (EKS) or NodePool (Karpenter/NAP), as
    ``gpupools.pools.NodePoolInfo`` describes it. Pool components output these; the device plugin,
    priority expander and smoke test take them."""

    name: str
    """The cloud's name for it (agent pool, node group or NodePool name)."""
    pool: str
    """The ``gpuPools``/``cpuPools`` entry it belongs to (``system`` for the system pool)."""
    role: str
    """``system``, ``gpu`` or ``cpu``."""
    capacity: str
    """``spot``, ``on-demand`` or ``reserved``."""
    zones: list[str]
    """The zones it spans."""
    instance_types: list[str]
    """Its VM sizes / instance types."""
    min_size: int
    """Autoscaler lower bound."""
    max_size: int
    """Autoscaler upper bound."""
    labels: dict[str, str]
    """Every node label gpupools sets on it."""
    taints: list[TaintArgs]
    """Every taint its nodes carry."""
    gpus_per_node: int
    """GPUs on one node (0 for CPU and system pools)."""
    gpu_model: str
    """e.g. ``nvidia-tesla-t4``; empty without GPUs."""
    autoscaler_group_regex: str
    """Anchored regex of the name cluster-autoscaler sees; empty for Karpenter NodePools."""
    needs_device_plugin: bool
    """False for CPU pools and images that ship their own plugin."""
    sharing: SharingInfo
    """How pods share the pool's GPUs."""
    slots_per_gpu: int
    """``nvidia.com/gpu`` advertised per physical GPU."""
    capacity_types: list[str]
    """Every capacity type a Karpenter NodePool may buy, preferred first; empty for one."""
    capacity_label: str
    """The node label carrying the capacity type."""
    limits: dict[str, str]
    """A Karpenter NodePool's ``spec.limits``; empty otherwise."""
    efa_interfaces: int
    """EFA interfaces per node (0 without EFA)."""
    gpu_driver: str
    """``install``, ``none`` or ``managed``."""
    reserved_nodes: int
    """A Karpenter NodePool's reserved nodes (``reservations[].count`` summed); 0 otherwise."""


# -- component args ---------------------------------------------------------------------------


class AksClusterArgs(TypedDict):
    """Arguments of ``AksCluster``."""

    cluster: ClusterArgs
    """``gpupools:cluster``."""
    system_pool: NotRequired[SystemPoolArgs]
    """``gpupools:systemPool``; default ``Standard_D4s_v5``, 2 to 4 nodes."""
    network: NotRequired[NetworkArgs]
    """``gpupools:network``; default a created VNet on ``10.40.0.0/16``."""
    autoscaler: NotRequired[AutoscalerArgs]
    """Autoscaler profile timing; default 10m / 10m."""
    location: NotRequired[pulumi.Input[str]]
    """Azure region; default the provider's ``azure-native:location``."""
    resource_group_name: NotRequired[pulumi.Input[str]]
    """An existing resource group; default a created ``<cluster>-rg``."""
    identity_id: NotRequired[pulumi.Input[str]]
    """An existing user-assigned identity (ARM ID) for the control plane; default a created one."""
    sku_tier: NotRequired[str]
    """``Standard`` (default), ``Free`` or ``Premium``."""
    kubelogin_login: NotRequired[str]
    """``azurecli`` (default) or ``devicecode``."""
    node_auto_provisioning: NotRequired[bool]
    """Default false. True: Node Auto Provisioning, a fixed-size system pool, no autoscaler profile."""
    capacity_reservation_group_ids: NotRequired[list[str]]
    """Capacity Reservation Groups (ARM IDs) the pools use; default none."""


class AzurePoolArgs(TypedDict):
    """Arguments of ``GpuNodePool`` and ``CpuNodePool`` (AKS agent pools on an existing cluster)."""

    pool: PoolArgs
    """The pool (a ``gpuPools`` / ``cpuPools`` entry)."""
    resource_group_name: pulumi.Input[str]
    """The cluster's resource group."""
    cluster_name: pulumi.Input[str]
    """The AKS cluster's name."""
    subnet_id: NotRequired[pulumi.Input[str]]
    """The node subnet; default the cluster's."""
    cluster_zones: NotRequired[list[str]]
    """The cluster's zones (a pool without ``zones`` uses them); default ``["1", "2", "3"]``."""
    kubernetes_version: NotRequired[str]
    """The pools' ``orchestratorVersion`` (pass the cluster's ``kubernetesVersion`` so upgrades reach them);
    default none sent."""


GpuNodePoolArgs = AzurePoolArgs
"""Arguments of ``GpuNodePool`` (an alias: the analyzer reads field docstrings from the class that
declares them, so a subclass without fields would lose every description)."""
CpuNodePoolArgs = AzurePoolArgs
"""Arguments of ``CpuNodePool``."""


class NapNodePoolsArgs(TypedDict):
    """Arguments of ``NapNodePools`` (AKS Node Auto Provisioning NodePools and AKSNodeClasses)."""

    pools: list[PoolArgs]
    """The GPU pools (``gpuPools`` entries)."""
    location: str
    """The cluster's Azure region (size facts and prices)."""
    zones: NotRequired[list[str]]
    """Zones NodePools may use; default ``["1", "2", "3"]``."""
    consolidate_after: NotRequired[str]
    """``disruption.consolidateAfter``; default ``10m``."""
    order: NotRequired[list[str]]
    """Pool names, most preferred first; default by size facts."""
    maintenance: NotRequired[MaintenanceArgs]
    """The disruption window; default Sunday 02:00 UTC, 4 hours."""
    cpu_pools: NotRequired[list[PoolArgs]]
    """``cpuPools`` entries; default none."""
    automatic: NotRequired[bool]
    """On an AKS Automatic cluster: GPU pools are AKS managed GPU pools; default false."""
    system_pool: NotRequired[SystemPoolArgs]
    """With ``automatic``: gpupools' system NodePool (for Kueue); default none."""


class NodeImageMaintenanceArgs(TypedDict):
    """Arguments of ``NodeImageMaintenance`` (the AKS ``aksManagedNodeOSUpgradeSchedule``)."""

    resource_group_name: pulumi.Input[str]
    """The cluster's resource group."""
    cluster_name: pulumi.Input[str]
    """The AKS cluster's name."""
    maintenance: NotRequired[MaintenanceArgs]
    """The window; default Sunday 02:00 UTC, 4 hours."""


class EksClusterArgs(TypedDict):
    """Arguments of ``EksCluster``."""

    cluster: ClusterArgs
    """``gpupools:cluster``."""
    network: NotRequired[NetworkArgs]
    """``gpupools:network``; default a created VPC on ``10.40.0.0/16``."""
    system_pool: NotRequired[SystemPoolArgs]
    """``gpupools:systemPool``; default ``m6i.xlarge``, 2 to 4 nodes."""
    nat: NotRequired[str]
    """NAT gateways of a created VPC: ``single`` (default) or ``one-per-zone``."""
    public_access_cidrs: NotRequired[list[str]]
    """CIDRs allowed to the public API endpoint; default anywhere."""
    region: NotRequired[str]
    """The stack's region; when given, zones are checked to belong to it."""
    private_subnet_tags: NotRequired[dict[str, str]]
    """Extra tags on created private subnets (Karpenter discovery); default none."""
    autoscaler_tags: NotRequired[bool]
    """Tag the system group's ASG for cluster-autoscaler; default true."""
    auto_mode: NotRequired[bool]
    """An EKS Auto Mode cluster (no node group; the pools are ``AutoModeNodePools``'); default false."""


class AwsNodeGroupArgs(TypedDict):
    """Arguments of ``GpuNodeGroup`` and ``CpuNodeGroup`` (EKS managed node groups on an existing cluster)."""

    pool: PoolArgs
    """The pool (a ``gpuPools`` / ``cpuPools`` entry)."""
    cluster_name: str
    """The EKS cluster's name (node group names derive from it)."""
    node_role_arn: pulumi.Input[str]
    """The node IAM role's ARN (with an ``EC2_LINUX`` access entry)."""
    subnet_ids_by_zone: dict[str, pulumi.Input[str]]
    """Zone name to private subnet ID."""
    kubernetes_version: NotRequired[str]
    """The node groups' Kubernetes minor; default the cluster's at create."""
    region: NotRequired[str]
    """The stack's region; when given, zones are checked to belong to it."""
    security_group_id: NotRequired[pulumi.Input[str]]
    """The cluster security group; required with ``efa: true``."""
    vpc_id: NotRequired[pulumi.Input[str]]
    """The cluster's VPC; required with ``efa: true``."""
    capacity_blocks: NotRequired[list[str]]
    """Reservation IDs of the pool that are Capacity Blocks for ML; default none."""


GpuNodeGroupArgs = AwsNodeGroupArgs
"""Arguments of ``GpuNodeGroup`` (an alias, as ``GpuNodePoolArgs``)."""
CpuNodeGroupArgs = AwsNodeGroupArgs
"""Arguments of ``CpuNodeGroup``."""


class KarpenterNodePoolsArgs(TypedDict):
    """Arguments of ``KarpenterNodePools`` (EKS Karpenter NodePools and EC2NodeClasses)."""

    pools: list[PoolArgs]
    """The GPU pools (``gpuPools`` entries)."""
    cluster_name: str
    """The EKS cluster's name (discovery selectors)."""
    node_role_name: pulumi.Input[str]
    """The node role's name (``EC2NodeClass.spec.role``)."""
    zones: list[str]
    """Zones NodePools may use."""
    consolidate_after: NotRequired[str]
    """``disruption.consolidateAfter``; default ``10m``."""
    order: NotRequired[list[str]]
    """Pool names, most preferred first; default by size facts."""
    maintenance: NotRequired[MaintenanceArgs]
    """The disruption window; default Sunday 02:00 UTC, 4 hours."""
    cpu_pools: NotRequired[list[PoolArgs]]
    """``cpuPools`` entries; default none."""


class AutoModeNodePoolsArgs(TypedDict):
    """Arguments of ``AutoModeNodePools`` (EKS Auto Mode NodeClasses and NodePools)."""

    pools: list[PoolArgs]
    """The GPU pools (``gpuPools`` entries)."""
    cluster_name: str
    """The EKS cluster's name (subnet and security group selectors)."""
    node_role_name: pulumi.Input[str]
    """The Auto Mode node role's name (``NodeClass.spec.role``)."""
    zones: list[str]
    """Zones NodePools may use."""
    system_pool: NotRequired[SystemPoolArgs]
    """``gpupools:systemPool``: a system NodePool; default none."""
    consolidate_after: NotRequired[str]
    """``disruption.consolidateAfter``; default ``10m``."""
    order: NotRequired[list[str]]
    """Pool names, most preferred first; default by size facts."""
    maintenance: NotRequired[MaintenanceArgs]
    """The disruption window; default Sunday 02:00 UTC, 4 hours."""
    cpu_pools: NotRequired[list[PoolArgs]]
    """``cpuPools`` entries; default none."""


class KarpenterArgs(TypedDict):
    """Arguments of ``Karpenter`` (controller, IAM, interruption queue, Helm releases)."""

    cluster_name: str
    """The EKS cluster's name."""
    region: str
    """The cluster's region."""
    node_role_arn: pulumi.Input[str]
    """The node role's ARN (``iam:PassRole`` is limited to it)."""
    oidc_provider_arn: pulumi.Input[str]
    """The cluster's IAM OIDC provider ARN (IRSA)."""
    oidc_provider_url: pulumi.Input[str]
    """The same provider's URL."""
    subnet_ids: list[pulumi.Input[str]]
    """The private subnets nodes go in."""
    security_group_id: pulumi.Input[str]
    """The cluster security group (tagged for discovery)."""
    tag_subnets: NotRequired[bool]
    """Tag ``subnetIds`` for discovery; default true."""
    node_overlay: NotRequired[bool]
    """Turn on the alpha NodeOverlay gate (shared GPU pools); default false."""
    reserved_capacity: NotRequired[bool]
    """Turn on the ReservedCapacity gate (pools with reservations); default false."""
    permissions_boundary: NotRequired[str]
    """The controller role's IAM permissions boundary (policy ARN); default none."""


class ClusterAutoscalerArgs(TypedDict):
    """Arguments of ``ClusterAutoscaler`` (EKS: IRSA role and the official chart)."""

    cluster_name: str
    """The EKS cluster's name."""
    region: str
    """The cluster's region."""
    kubernetes_version: str
    """The cluster's minor; selects the image tag."""
    oidc_provider_arn: pulumi.Input[str]
    """The cluster's IAM OIDC provider ARN (IRSA)."""
    oidc_provider_url: pulumi.Input[str]
    """The same provider's URL."""
    autoscaler: NotRequired[AutoscalerArgs]
    """Timing flags; default 10m / 10m."""
    namespace: NotRequired[str]
    """Default ``kube-system``."""
    permissions_boundary: NotRequired[str]
    """The IRSA role's IAM permissions boundary (policy ARN); default none."""


class NvidiaDevicePluginArgs(TypedDict):
    """Arguments of ``NvidiaDevicePlugin``."""

    pools: pulumi.Input[list[NodePoolInfo]]
    """The cluster's pools (pool components' ``nodePools``, combined); GPU pools needing the plugin are served. Must be known when the component is constructed."""
    version: NotRequired[str]
    """Image tag of ``nvcr.io/nvidia/k8s-device-plugin``; default the pinned one."""
    namespace: NotRequired[str]
    """Default ``kube-system``."""


class DcgmExporterArgs(TypedDict):
    """Arguments of ``DcgmExporter``."""

    pools: pulumi.Input[list[NodePoolInfo]]
    """The cluster's pools (pool components' ``nodePools``, combined); GPU pools without an exporter of their own (``gpuDriver: install``, not Bottlerocket) are served. Must be known when the component is constructed."""
    version: NotRequired[str]
    """Image tag of ``nvcr.io/nvidia/k8s/dcgm-exporter``; default the pinned one."""
    service_monitor: NotRequired[bool]
    """Default false. Also a Prometheus Operator ServiceMonitor (its CRD must be installed)."""
    service_monitor_labels: NotRequired[dict[str, str]]
    """Extra labels on the ServiceMonitor (kube-prometheus-stack selects ``release``); default none; only with ``serviceMonitor``."""
    namespace: NotRequired[str]
    """Default ``kube-system``."""


class EfaDevicePluginArgs(TypedDict):
    """Arguments of ``EfaDevicePlugin``."""

    pools: pulumi.Input[list[NodePoolInfo]]
    """The cluster's pools (pool components' ``nodePools``); those with EFA interfaces are served. Must be known when the component is constructed."""
    version: NotRequired[str]
    """Image tag of the AWS EFA device plugin; default the pinned one."""
    namespace: NotRequired[str]
    """Default ``kube-system``."""


class KueueArgs(TypedDict):
    """Arguments of ``Kueue``."""

    system_pool: pulumi.Input[NodePoolInfo]
    """The cluster's system pool (the cluster's ``systemNodePool``): the controller runs there, tolerating its taints. Must be known when the component is constructed."""
    namespaces: list[str]
    """The namespaces Kueue manages Jobs in (its webhooks act only there): every LocalQueue's namespace; at least one."""


class QueueTeamArgs(TypedDict):
    """One team of ``KueueQueues``: its own ClusterQueue in the cohort ``gpupools`` and LocalQueues."""

    name: str
    """The team's ClusterQueue and LocalQueue name (a DNS label, not ``gpupools``)."""
    namespaces: list[str]
    """Where the team's LocalQueues go (jobs label ``kueue.x-k8s.io/queue-name: <name>``)."""
    gpus: NotRequired[int]
    """GPU slots guaranteed to the team (its nominal quota, taken from the flavours in buying order); default 0: it only borrows."""


class KueueQueuesArgs(TypedDict):
    """Arguments of ``KueueQueues``. Give it ``dependsOn`` the ``Kueue`` component, so every object waits for Kueue's webhook."""

    pools: pulumi.Input[list[NodePoolInfo]]
    """The cluster's pools (pool components' ``nodePools``); each non-system pool becomes ResourceFlavors with quotas at its max. Must be known when the component is constructed."""
    namespaces: NotRequired[list[str]]
    """LocalQueues named ``gpupools`` (the shared ClusterQueue) in these namespaces, which the component creates; default none (then ``teams`` must name some)."""
    teams: NotRequired[list[QueueTeamArgs]]
    """Per-team ClusterQueues in the cohort ``gpupools``; default none."""
    atomic_scale_up: NotRequired[bool]
    """Default false. The ProvisioningRequest admission check (all-or-nothing scale-up); cluster-autoscaler only (run it with ProvisioningRequests enabled)."""
    prices: NotRequired[dict[str, float | None]]
    """cluster-autoscaler: the priority expander's USD per node-hour per pool name, so the flavour order is its order; default none (order by size facts)."""
    weights: NotRequired[dict[str, int]]
    """Karpenter/NAP: each NodePool's ``spec.weight`` by NodePool name; given, one flavour per NodePool; default none (cluster-autoscaler pools)."""
    only_pools: NotRequired[list[str]]
    """The ``gpuPools``/``cpuPools`` names the queues admit to; default every pool."""


class PriorityExpanderArgs(TypedDict):
    """Arguments of ``PriorityExpander``."""

    pools: pulumi.Input[list[NodePoolInfo]]
    """Every autoscaled pool of the cluster (the cluster's ``systemNodePool`` and the pool components' ``nodePools``). Must be known when the component is constructed."""
    namespace: NotRequired[str]
    """cluster-autoscaler's namespace; default ``kube-system``."""
    prices: NotRequired[dict[str, float | None]]
    """USD per node-hour per pool name; default none (order by size facts)."""


class WarmCapacityArgs(TypedDict):
    """Arguments of ``WarmCapacity`` (docs/warm.md)."""

    pools: pulumi.Input[list[NodePoolInfo]]
    """The groups or NodePools of the warm pools (the pool components' ``nodePools``). Must be known when the component is constructed."""
    warm: dict[str, WarmArgs]
    """Per pool name, its ``warm`` setting (validated as ``gpuPools[].warm``)."""
    mechanism: str
    """``CapacityBuffer`` (EKS cluster-autoscaler 1.35+ with the buffer flags, EKS Karpenter with its gate) or ``placeholder pods`` (AKS, NAP)."""
    system_pool: pulumi.Input[NodePoolInfo]
    """The cluster's ``systemNodePool``: where the schedule's CronJobs run."""


class GpuSmokeTestArgs(TypedDict):
    """Arguments of ``GpuSmokeTest``."""

    pool: pulumi.Input[NodePoolInfo]
    """The GPU pool to test (one of a pool component's ``nodePools``). Must be known when the component is constructed."""
    namespace: NotRequired[str]
    """Where the Job runs; default ``default``."""
