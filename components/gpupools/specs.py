"""Frozen, validated specs: what ``gpupools.config`` produces and the components consume.

Specs are plain immutable values (hashable, comparable), so loading the same config twice gives
equal specs and the decision logic built on them can be property-tested without Pulumi.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Mapping

from gpupools.conventions import Role, Taint


class Cloud(str, Enum):
    """The managed Kubernetes service a stack targets."""

    AZURE = "azure"
    AWS = "aws"


class AmiType(str, Enum):
    """EKS AMI types gpupools node groups use (botocore ``eks`` model, ``AMITypes``).

    GPU pools: ``AL2023_x86_64_NVIDIA`` (default) ships the driver but not the device plugin, so
    gpupools deploys one; ``BOTTLEROCKET_x86_64_NVIDIA`` ships its own device plugin, so gpupools
    deploys none onto those nodes (two plugins registering ``nvidia.com/gpu`` on one node conflict).
    CPU pools: ``AL2023_x86_64_STANDARD`` (default), ``AL2023_ARM_64_STANDARD`` for Graviton
    types, and the Bottlerocket equivalents.
    """

    AL2023_NVIDIA = "AL2023_x86_64_NVIDIA"
    BOTTLEROCKET_NVIDIA = "BOTTLEROCKET_x86_64_NVIDIA"
    AL2023_STANDARD = "AL2023_x86_64_STANDARD"
    AL2023_ARM_STANDARD = "AL2023_ARM_64_STANDARD"
    BOTTLEROCKET = "BOTTLEROCKET_x86_64"
    BOTTLEROCKET_ARM = "BOTTLEROCKET_ARM_64"

    @property
    def ships_device_plugin(self) -> bool:
        return self is AmiType.BOTTLEROCKET_NVIDIA

    @property
    def is_gpu(self) -> bool:
        """True for the NVIDIA AMIs (GPU pools only)."""
        return self in (AmiType.AL2023_NVIDIA, AmiType.BOTTLEROCKET_NVIDIA)

    @property
    def architecture(self) -> str:
        """``arm64`` or ``x86_64``: the instance architecture the AMI boots on."""
        return "arm64" if "ARM_64" in self.value else "x86_64"


class Provisioner(str, Enum):
    """Who buys nodes for the pools (``gpupools:provisioner``).

    ``CLUSTER_AUTOSCALER`` (default): per pool a Spot node group (EKS: one per zone) and an on-demand
    fallback, cluster-autoscaler's priority expander tries Spot first. ``KARPENTER``: one
    ``karpenter.sh/v1`` NodePool per pool that allows Spot and on-demand at once (Karpenter tries
    Spot first and falls back to on-demand on a capacity error, without a provision timeout); on EKS
    gpupools installs Karpenter itself, on AKS it is Node Auto Provisioning (AKS runs Karpenter).
    ``AUTO_MODE`` (EKS only, new clusters): EKS Auto Mode runs Karpenter, the NVIDIA driver and device
    plugin, node repair and Spot interruption handling; gpupools writes one ``eks.amazonaws.com/v1``
    NodeClass and one NodePool per pool and nothing the cloud already runs.
    """

    CLUSTER_AUTOSCALER = "cluster-autoscaler"
    KARPENTER = "karpenter"
    AUTO_MODE = "auto-mode"

    @property
    def node_pools(self) -> bool:
        """True when ``karpenter.sh/v1`` NodePools buy the nodes: ``karpenter`` (EKS Karpenter, AKS
        NAP) and ``auto-mode`` (EKS Auto Mode runs Karpenter itself: ``gpupools.aws.auto_mode``)."""
        return self is not Provisioner.CLUSTER_AUTOSCALER


class SharingMode(str, Enum):
    """How the pods on one GPU pool share its GPUs (``gpuPools[].sharing``).

    ``NONE``: one pod per GPU. ``TIME_SLICING`` and ``MPS``: the NVIDIA device plugin advertises
    each GPU ``replicas`` times (CUDA time-slicing; CUDA MPS with a control daemon). ``MIG``: AKS
    partitions each GPU in hardware (the agent pool's ``gpuInstanceProfile``) and the plugin
    advertises every instance as a GPU (MIG strategy ``single``).
    """

    NONE = "none"
    TIME_SLICING = "timeSlicing"
    MPS = "mps"
    MIG = "mig"


class GpuDriver(str, Enum):
    """Who owns a GPU pool's NVIDIA driver and device plugin (``gpuPools[].gpuDriver``).

    ``INSTALL`` (default): the node image or the cloud installs the driver (AKS ``gpuProfile.driver:
    Install``, the EKS AL2023 NVIDIA AMI) and gpupools runs the device plugin (Bottlerocket NVIDIA
    images ship their own plugin, so gpupools' stays off them). ``NONE``: bring your own driver and
    plugin, for example the NVIDIA GPU Operator (AKS ``gpuProfile.driver: None``); gpupools runs no
    device plugin and no DCGM exporter there. ``MANAGED``: AKS managed GPU nodes (preview): AKS
    installs the driver, the device plugin and a DCGM exporter, so gpupools runs neither.
    """

    INSTALL = "install"
    NONE = "none"
    MANAGED = "managed"


@dataclass(frozen=True)
class ReservationSpec:
    """One ``gpuPools[].reservations`` entry: capacity already paid for, used before Spot.

    Attributes:
        id: AWS: an On-Demand Capacity Reservation or a Capacity Block for ML (``cr-`` and 17 hex
            digits; both are capacity reservations to EC2); Azure: a Capacity Reservation Group's
            ARM ID.
        zone: AWS: the reservation's Availability Zone (an AWS reservation is in one zone); may be
            left out when the pool has exactly one zone. Azure: optional (a group may hold
            reservations in several zones).
        capacity_block: AWS only: the reservation is a Capacity Block for ML (config ``kind:
            capacityBlock``), which EKS serves with a ``CAPACITY_BLOCK`` node group; default False (an
            On-Demand Capacity Reservation, config ``kind: odcr``). The two share one ID format, so the
            kind is stated rather than looked up.
        count: how many instances the reservation holds for the pool (config ``count``): the most
            nodes its reserved group (AKS agent pool, EKS node group) may have. Default ``None``:
            the pool's ``maxSize`` (``reserved_max``), what gpupools did before ``count`` existed,
            so a config without it keeps its groups unchanged; a launch past a reservation's real
            size does not stay in it (EC2 fails it and cluster-autoscaler backs off; Azure places
            the VM outside the reserved quantity at the pay-as-you-go rate), so set it.
    """

    id: str
    zone: str | None = None
    capacity_block: bool = False
    count: int | None = None

    def reserved_max(self, pool_max_size: int) -> int:
        """The most nodes of the reserved group: ``count``, or without it the pool's ``maxSize``."""
        return self.count if self.count is not None else pool_max_size


@dataclass(frozen=True)
class SharingSpec:
    """``gpuPools[].sharing``: at most one mode per pool.

    Attributes:
        mode: default ``NONE``.
        replicas: pods per GPU for ``TIME_SLICING`` and ``MPS`` (2-48, see ``rules.check_sharing``);
            1 otherwise.
        mig_profile: the AKS ``gpuInstanceProfile`` (``MIG1g`` ... ``MIG7g``) for ``MIG``; None otherwise.
    """

    mode: SharingMode = SharingMode.NONE
    replicas: int = 1
    mig_profile: str | None = None

    @property
    def shared(self) -> bool:
        return self.mode is not SharingMode.NONE


def frozen_map(items: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """A read-only, key-sorted copy of ``items``."""
    return MappingProxyType(dict(sorted((items or {}).items())))


@dataclass(frozen=True)
class ClusterSpec:
    """``gpupools:cluster``.

    Attributes:
        name: lowercase letters, digits and '-'; the prefix of every resource name.
        kubernetes_version: ``"<major>.<minor>"``; default in ``gpupools.versions``.
        zones: the zones pools spread over. Azure default ``("1", "2", "3")``; AWS default empty,
            meaning "the region's first three available zones", resolved at deploy time.
        allow_local_accounts: Azure only. Default False: Entra ID with Azure RBAC is the only way in.
        admin_group_object_ids: Azure only. Entra ID groups granted cluster-admin.
        api_allowed_cidrs: IPv4 CIDRs allowed to reach the Kubernetes API server's public endpoint
            (AKS ``apiServerAccessProfile.authorizedIPRanges``, EKS ``vpcConfig.publicAccessCidrs``).
            Default empty: the endpoint stays open to every address, as both clouds default, because
            a wrong list locks the deployer out of its own cluster; the preflight warns when it is empty.
        admins: AWS only. IAM role or user ARNs granted cluster-admin through EKS access entries, in
            addition to the identity that runs ``pulumi up``, so a CI role and engineers can all run
            the next one. Default empty.
        control_plane_logs: AWS only. EKS control plane log types sent to CloudWatch Logs
            (``api``, ``audit``, ``authenticator``, ``controllerManager``, ``scheduler``). Default
            ``api``, ``audit``, ``authenticator``: who called the API and what it changed, the logs an
            incident needs (terraform-aws-eks's default too); the other two are verbose and rarely read.
            CloudWatch bills ingestion and storage; an empty list turns logging off.
        support_type: AWS only. The cluster's ``upgradePolicy.supportType``: ``STANDARD`` (default)
            or ``EXTENDED``. With ``STANDARD`` EKS upgrades the control plane itself when its minor
            leaves standard support instead of billing extended support (six times the hourly
            cluster price); ``EXTENDED`` keeps the minor and pays.
        sku: Azure only. The cluster's ``sku.name``: ``Base`` (default) or ``Automatic`` (AKS
            Automatic: AKS runs the system pool, Node Auto Provisioning, the GPU driver and device
            plugin; new clusters only, ``gpupools.azure.automatic``).
        permissions_boundary: AWS only. The ARN of an IAM managed policy set as the permissions
            boundary of every IAM role the EKS stack creates (node role, cluster service role,
            cluster-autoscaler's or Karpenter's controller role). Default none. With it the deployer
            policy (``python -m gpupools.aws.deployer_policy --permissions-boundary``) can require the
            boundary on every role write, so a deployer cannot give any role it writes more than the
            boundary allows (``docs/safety.md``, "Deployer permissions").
    """

    name: str
    kubernetes_version: str
    zones: tuple[str, ...] = ()
    allow_local_accounts: bool = False
    admin_group_object_ids: tuple[str, ...] = ()
    api_allowed_cidrs: tuple[str, ...] = ()
    admins: tuple[str, ...] = ()
    control_plane_logs: tuple[str, ...] = ("api", "audit", "authenticator")
    support_type: str = "STANDARD"
    permissions_boundary: str | None = None
    sku: str = "Base"

    @property
    def automatic(self) -> bool:
        """``sku: Automatic``: an AKS Automatic cluster (``gpupools.azure.automatic``)."""
        return self.sku == AKS_AUTOMATIC


AKS_AUTOMATIC = "Automatic"
AKS_SKUS = ("Base", AKS_AUTOMATIC)
"""``cluster.sku`` values: pulumi-azure-native 3.29's ``ManagedClusterSKUName`` (API 2025-09-01)."""


@dataclass(frozen=True)
class NetworkSpec:
    """``gpupools:network``. Empty means "create a dedicated network with ``cidr``".

    Attributes:
        cidr: address space of a created network. Default ``10.40.0.0/16``.
        subnet_id: Azure, bring your own node subnet (ARM resource ID).
        vpc_id: AWS, bring your own VPC; needs ``private_subnet_ids``.
        private_subnet_ids: AWS, one private subnet per zone, in zone order.
        dataplane: Azure, the network dataplane: ``azure`` or ``cilium`` (Azure CNI Powered by
            Cilium). Default None: ``cilium`` under Node Auto Provisioning (the configuration the AKS
            NAP docs recommend), else AKS's own default (``azure``), so existing clusters see no
            change.
    """

    cidr: str = "10.40.0.0/16"
    subnet_id: str | None = None
    vpc_id: str | None = None
    private_subnet_ids: tuple[str, ...] = ()
    dataplane: str | None = None

    @property
    def bring_your_own(self) -> bool:
        return bool(self.subnet_id or self.vpc_id)


@dataclass(frozen=True)
class SystemPoolSpec:
    """``gpupools:systemPool``: the on-demand pool for cluster-critical add-ons.

    Attributes:
        instance_types: Azure exactly one VM size (default ``Standard_D4s_v5``: AKS system pools
            need at least 4 vCPUs); AWS one or more (default ``m6i.xlarge``).
        min_size: default 2 (AKS requires at least 2 for a system pool; 2 keeps add-ons available).
        max_size: default 4.
        disk_size_gb: root disk size, default 128.
    """

    instance_types: tuple[str, ...]
    min_size: int = 2
    max_size: int = 4
    disk_size_gb: int = 128

    def as_nodepool(self, ami_type: AmiType | None = None) -> PoolSpec:
        """The system pool as a Karpenter NodePool's pool (EKS Auto Mode, AKS Automatic): on-demand,
        the ``systemPool`` sizes, ``maxSize`` and disk; no minimum (a NodePool keeps none: its nodes
        come when system pods, Kueue's among them, are pending). ``ami_type``: AWS only (Auto Mode's
        NodeClass picks the image by it); None keeps ``PoolSpec``'s default, which Azure ignores."""
        pool = PoolSpec(
            name=Role.SYSTEM.value,
            instance_types=self.instance_types,
            max_size=self.max_size,
            spot=False,
            on_demand_fallback=False,
            disk_size_gb=self.disk_size_gb,
            role=Role.SYSTEM,
        )
        return pool if ami_type is None else replace(pool, ami_type=ami_type)


UPGRADE_VALUE = re.compile(r"^(\d+)(%?)\Z")
"""``maxSurge``/``maxUnavailable``: a whole number of nodes or a percentage of the pool ("This can
either be set to an integer (e.g. '5') or a percentage (e.g. '50%')", AKS
``AgentPoolUpgradeSettings``, REST API 2025-09-01)."""


def upgrade_nodes(value: str, pool_size: int) -> int:
    """Nodes that ``maxSurge``/``maxUnavailable`` ``value`` means for a pool of ``pool_size`` nodes:
    the number, or the percentage with "fractional nodes ... rounded up" (the same API text)."""
    match = UPGRADE_VALUE.match(value)
    if match is None:
        raise ValueError(f"not a node count or percentage: {value!r}")
    number = int(match.group(1))
    return -(-number * pool_size // 100) if match.group(2) else number


@dataclass(frozen=True)
class UpgradeSpec:
    """``gpuPools[].upgrade`` / ``cpuPools[].upgrade`` (Azure, cluster-autoscaler): how AKS upgrades
    the pool's Regular (on-demand and reserved) agent pools, sent as their ``upgradeSettings``.

    Attributes:
        max_surge: extra nodes during an upgrade, a count or a percentage; default ``"0"`` (a GPU
            surge node needs GPU quota the pool may not have, and a reserved pool's surge would fall
            outside its reservation).
        max_unavailable: nodes drained at once, a count or a percentage; default ``"1"`` (the rest
            of the pool keeps serving).
        drain_timeout_minutes: per node, how long AKS waits for evictions (PDBs honoured) before the
            upgrade fails; default 60 (AKS's own default is 30): a GPU job gets an hour to checkpoint.
    """

    max_surge: str = "0"
    max_unavailable: str = "1"
    drain_timeout_minutes: int = 60

    def nodes_at_once(self, pool_size: int) -> int:
        """Nodes upgraded in one batch of a pool of ``pool_size``: surge plus unavailable, at least one."""
        return max(1, upgrade_nodes(self.max_surge, pool_size) + upgrade_nodes(self.max_unavailable, pool_size))


@dataclass(frozen=True)
class WarmScheduleSpec:
    """``gpuPools[].warm.schedule``: when the warm buffer is kept (outside it the buffer is zero).

    Attributes:
        days: the week days it opens on (AKS spelling, ``WeekDay``); default every day.
        start: ``HH:MM`` in ``time_zone`` at which the buffer is set to ``WarmSpec.nodes``.
        end: ``HH:MM`` in ``time_zone`` at which it is set to zero; after ``start`` on the same day
            (a window that crosses midnight is two pools' worth of cron edges and is refused).
        time_zone: an IANA time zone (``Europe/Berlin``); default ``UTC``. The CronJobs carry it as
            ``spec.timeZone``, so daylight-saving changes are the controller's, not ours.
    """

    start: str
    end: str
    days: tuple[WeekDay, ...] = ()
    time_zone: str = "UTC"


@dataclass(frozen=True)
class WarmSpec:
    """``gpuPools[].warm``: spare GPU nodes of the pool kept ready for the next pod (``gpupools.warm``).

    Attributes:
        nodes: spare nodes kept (1 to the pool's ``maxSize``).
        schedule: when they are kept; default None: always.
    """

    nodes: int
    schedule: WarmScheduleSpec | None = None


@dataclass(frozen=True)
class PoolSpec:
    """One ``gpupools:gpuPools`` or ``gpupools:cpuPools`` entry: a Spot pool and, unless disabled,
    its on-demand fallback. ``role`` says which list it came from; everything else is shared, so
    one set of rules and one component per cloud serve both kinds.

    Attributes:
        name: short, a lowercase letter then letters/digits (AKS: at most 7, leaving room for the
            role letter and the 4-character replacement digest within AKS's 12).
        instance_types: Azure exactly one VM size; AWS several types, of one shape under
            cluster-autoscaler, of one GPU count and architecture under Karpenter (``rules.check_aws_gpu_types``).
        max_size: the pool's total across its zones.
        min_size: default 0, so an idle pool costs nothing.
        spot: default True.
        spot_max_price: Azure only; default -1 (pay up to the on-demand price, never evicted on price).
        on_demand_fallback: default True: an on-demand pool of the same shape, lower priority.
        on_demand_max_size: default ``max_size``; also a total across zones.
        zones: default the cluster's zones.
        labels: extra node labels.
        taints: extra taints (the GPU taint is always added).
        disk_size_gb: root disk size; default 128 on Azure (the AKS default), 100 on AWS.
        ami_type: AWS only; default ``AL2023_x86_64_NVIDIA`` for GPU pools and
            ``AL2023_x86_64_STANDARD`` for CPU pools.
        role: ``Role.GPU`` (``gpuPools``, default) or ``Role.CPU`` (``cpuPools``).
        sharing: how pods share the pool's GPUs; default none (one pod per GPU). Always none on a
            CPU pool.
        eviction_rate: GPU Spot pools only: this pool's share of Spot runs interrupted, 0 to 1, for
            the monthly estimate; default none (``gpupools:cost.evictionRate`` applies).
        reservations: capacity reservations the pool uses first (already paid for); default none.
            GPU pools only.
        efa: AWS only: EFA network interfaces and a cluster placement group for multi-node
            training; default False. GPU pools only.
        proximity_placement: Azure only: the pool's nodes in one proximity placement group;
            default False. GPU pools only.
        infiniband: Azure only: the pool runs InfiniBand (RDMA) jobs, so its size must be an
            InfiniBand-capable ND size (the size catalog's ``infiniband`` fact); default False. The
            IB network stack on the nodes is the user's (docs/aks.md). GPU pools only.
        gpu_driver: who owns the driver and device plugin; default ``GpuDriver.INSTALL``. GPU pools only.
        upgrade: Azure only: the ``upgradeSettings`` of the pool's Regular agent pools (``UpgradeSpec``);
            default ``UpgradeSpec()`` (no surge, one node at a time, 60 minutes to drain). Spot pools
            take none (AKS refuses surge settings on Spot).
        warm: spare nodes kept ready (``WarmSpec``); default None: none, the pool scales from zero.
            GPU pools only.
    """

    name: str
    instance_types: tuple[str, ...]
    max_size: int
    min_size: int = 0
    spot: bool = True
    spot_max_price: float = -1.0
    on_demand_fallback: bool = True
    on_demand_max_size: int | None = None
    zones: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=frozen_map)
    taints: tuple[Taint, ...] = ()
    disk_size_gb: int = 128
    ami_type: AmiType = AmiType.AL2023_NVIDIA
    role: Role = Role.GPU
    sharing: SharingSpec = SharingSpec()
    eviction_rate: float | None = None
    reservations: tuple[ReservationSpec, ...] = ()
    efa: bool = False
    proximity_placement: bool = False
    infiniband: bool = False
    gpu_driver: GpuDriver = GpuDriver.INSTALL
    upgrade: UpgradeSpec = UpgradeSpec()
    warm: WarmSpec | None = None

    def __hash__(self) -> int:
        return hash((self.name, self.role, self.instance_types, self.max_size, tuple(self.labels.items())))

    @property
    def is_gpu(self) -> bool:
        return self.role is Role.GPU

    @property
    def needs_device_plugin(self) -> bool:
        """True when gpupools runs the NVIDIA device plugin (and what serves the same pools) on this
        pool: a GPU pool whose driver setting is ``install`` and whose image does not ship its own
        plugin (Bottlerocket NVIDIA). ``gpuDriver: none`` leaves the plugin to the user (the GPU
        Operator), ``managed`` to the cloud. The one place this is decided: every component copies
        it into its ``NodePoolInfo.needs_device_plugin``."""
        return self.is_gpu and self.gpu_driver is GpuDriver.INSTALL and not self.ami_type.ships_device_plugin

    @property
    def fallback_max_size(self) -> int:
        """Max size of the on-demand fallback pool (``on_demand_max_size`` or ``max_size``)."""
        return self.max_size if self.on_demand_max_size is None else self.on_demand_max_size


GpuPoolSpec = PoolSpec
"""The name components and programs have used since the first release; a GPU pool is a ``PoolSpec``
with ``role=Role.GPU`` (the default)."""


@dataclass(frozen=True)
class DevicePluginSpec:
    """``gpupools:devicePlugin``. ``version`` is the image tag of nvcr.io/nvidia/k8s-device-plugin,
    default ``v0.20.0`` (the current upstream release, the one eksctl embeds)."""

    version: str = "v0.20.0"


@dataclass(frozen=True)
class AutoscalerSpec:
    """``gpupools:autoscaler``: cluster-wide autoscaler tuning, in the canonical ``<n>m`` form AKS
    echoes back (so a refresh shows no diff).

    Attributes:
        max_node_provision_time: default ``10m``. How long the autoscaler waits for a Spot node
            before it backs the group off and the priority expander falls back to on-demand. The
            upstream default, 15m, makes fallback slow; much lower risks giving up on GPU nodes
            that are still booting and pulling images.
        scale_down_unneeded_time: default ``10m`` (upstream default): how long an idle GPU node
            lives before removal.
    """

    max_node_provision_time: str = "10m"
    scale_down_unneeded_time: str = "10m"


@dataclass(frozen=True)
class UserSizeSpec:
    """One ``gpupools:catalog.instanceTypes`` entry: a size the offline catalog lacks
    (``gpupools.catalog.user_sizes``). ``gpus`` defaults to 0 (a CPU size), ``architecture`` to
    ``x86_64``, ``efa_interfaces`` (AWS) to 0."""

    name: str
    vcpus: int
    memory_gib: float
    gpus: int = 0
    gpu_model: str = ""
    architecture: str = "x86_64"
    efa_interfaces: int = 0


@dataclass(frozen=True)
class CatalogSpec:
    """``gpupools:catalog``: how the offline size catalog is applied to this stack.

    Attributes:
        allow_unlisted: sizes (VM sizes, instance types) the stack may use in its region although
            the price catalog's source does not list them there (``gpupools.rules.check_offered``):
            for a catalog that lags a cloud that has just opened a size in a region. Default none:
            a size the catalog says is not offered in the region is a config error, since the
            cloud would refuse it only at deploy time. The online preflight
            (``python -m gpupools.preflight``) asks the cloud itself and is the final word.
        instance_types: sizes the catalog lacks, declared with their facts (``UserSizeSpec``,
            ``gpupools.catalog.user_sizes``); default none.
    """

    allow_unlisted: tuple[str, ...] = ()
    instance_types: tuple[UserSizeSpec, ...] = ()


@dataclass(frozen=True)
class CostSpec:
    """``gpupools:cost``: the inputs of the monthly estimate and the budget (see ``gpupools.pricing``).

    Attributes:
        gpu_hours_per_month: GPU node-hours of work per month, spread evenly over the GPU pools;
            default none (no monthly estimate: only the per-hour figures, which need no guess).
        cpu_node_hours_per_month: CPU node-hours of work per month beyond the CPU pools' minimum,
            spread evenly over the CPU pools; default 0 (their idle nodes only). Part of the monthly
            estimate, which ``gpu_hours_per_month`` turns on.
        spot_share: share of those hours served by Spot, 0 to 1; default 1.0 (every hour on Spot,
            the point of gpupools). Lower it to fold in hours the on-demand fallbacks serve.
        budget_per_hour: USD; the fleet's ceiling (every pool and fallback at ``maxSize``) must not
            exceed it. Default none (no check).
        eviction_rate: share of Spot runs interrupted, 0 to 1 (the clouds publish it in bands:
            AWS Spot Instance Advisor "frequency of interruption", Azure Spot "eviction rate");
            default 0, no eviction adjustment (see ``gpupools.pricing.estimate.spot_hours_with_evictions``).
        redone_share: share of an interrupted run's work that is lost and run again, 0 to 1;
            default 0.5 (no checkpoints: a run interrupted at a random point loses half of it on average).
        pool_eviction_rates: per GPU pool, its own ``gpuPools[].evictionRate`` where set (it
            overrides ``eviction_rate``); filled by ``gpupools.config.parse``.
    """

    gpu_hours_per_month: float | None = None
    cpu_node_hours_per_month: float = 0.0
    spot_share: float = 1.0
    budget_per_hour: float | None = None
    eviction_rate: float = 0.0
    redone_share: float = 0.5
    pool_eviction_rates: Mapping[str, float] = field(default_factory=dict)

    def eviction_rate_of(self, pool: str) -> float:
        """The eviction rate of ``pool``: its own ``evictionRate``, else the stack's."""
        return self.pool_eviction_rates.get(pool, self.eviction_rate)


@dataclass(frozen=True)
class SmokeTestSpec:
    """``gpupools:smokeTest``: a one-shot CUDA Job per GPU pool. Default off, because it buys a
    GPU node when it runs."""

    enabled: bool = False


@dataclass(frozen=True)
class ReleaseUpgradeSpec:
    """``gpupools:upgrade``: what the first ``up`` after upgrading gpupools keeps. ``from_version``
    (default None: a stack this release created) names the release that last deployed the stack."""

    from_version: str | None = None


@dataclass(frozen=True)
class NodeRepairSpec:
    """``gpupools:nodeRepair``: GPU node health and auto-repair where the cloud offers it.

    ``enabled`` defaults per cloud and provisioner (``config.parse_node_repair``): on for EKS
    managed node groups (node auto repair is GA there: EKS user guide ``node-repair.adoc``), off
    under Karpenter (its ``NodeRepair`` gate is alpha in the pinned release), and on for AKS,
    where node auto-repair is always on and has no setting (``false`` is a config error there).
    ``gpupools.aws.node_repair`` says what it turns on.
    """

    enabled: bool = True


@dataclass(frozen=True)
class GpuMetricsSpec:
    """``gpupools:gpuMetrics``: NVIDIA's DCGM exporter on every GPU pool that lacks one
    (``gpupools.kubernetes.dcgm_exporter``). On by default: a GPU bill without utilisation is a
    guess. ``service_monitor`` adds a Prometheus Operator ServiceMonitor; off by default, because
    its CRD must already be installed and Pulumi cannot check that at preview.
    ``service_monitor_labels`` go on the ServiceMonitor, for the Prometheus that selects by label
    (kube-prometheus-stack selects its own ``release`` label by default)."""

    enabled: bool = True
    service_monitor: bool = False
    service_monitor_labels: Mapping[str, str] = field(default_factory=frozen_map)


@dataclass(frozen=True)
class TeamQueueSpec:
    """``gpupools:queueing.teams[]``: one team's Kueue ClusterQueue and its LocalQueues.

    Attributes:
        name: the team's ClusterQueue and LocalQueue name (a DNS label).
        namespaces: where its LocalQueues go (jobs label ``kueue.x-k8s.io/queue-name: <name>``).
        gpus: GPU slots the team is guaranteed (its nominal quota, taken from the pools in buying
            order); default 0: the team only borrows from the shared cohort.
    """

    name: str
    namespaces: tuple[str, ...]
    gpus: int = 0


@dataclass(frozen=True)
class QueueingSpec:
    """``gpupools:queueing``: Kueue on the pools (``gpupools.queueing``). Default off.

    Attributes:
        enabled: install Kueue and the queues.
        namespaces: LocalQueues named ``gpupools`` (the shared ClusterQueue) in these namespaces.
        teams: per-team ClusterQueues in one cohort (see ``TeamQueueSpec``).
        pools: the ``gpuPools``/``cpuPools`` names the queue admits to; empty means every pool.
        atomic_scale_up: the ProvisioningRequest admission check (all-or-nothing scale-up); None
            means the default: on under cluster-autoscaler, off under Karpenter/NAP (no
            ProvisioningRequest support there).
    """

    enabled: bool = False
    namespaces: tuple[str, ...] = ()
    teams: tuple[TeamQueueSpec, ...] = ()
    pools: tuple[str, ...] = ()
    atomic_scale_up: bool | None = None


class WeekDay(str, Enum):
    """Days of the week in AKS's spelling (pulumi-azure-native ``containerservice.WeekDay``; a test
    keeps the two equal). ``cron_day`` is the cron day-of-week (0 = Sunday)."""

    SUNDAY = "Sunday"
    MONDAY = "Monday"
    TUESDAY = "Tuesday"
    WEDNESDAY = "Wednesday"
    THURSDAY = "Thursday"
    FRIDAY = "Friday"
    SATURDAY = "Saturday"

    @property
    def cron_day(self) -> int:
        return list(WeekDay).index(self)


@dataclass(frozen=True)
class MaintenanceSpec:
    """``gpupools:maintenance``: the weekly window in which the platform may replace nodes for a new
    node image, and how long a replaced node waits for its pods. Used under ``provisioner:
    karpenter`` (EKS Karpenter and AKS Node Auto Provisioning) and on every AKS cluster (the
    node-OS and patch auto-upgrade windows, ``gpupools.azure.maintenance``); see ``gpupools.maintenance``.

    Attributes:
        day: the day the window starts on; default Sunday (the AKS docs' recommended weekly
            cadence for NAP nodes, "Every week on Sunday").
        start_time: ``HH:MM`` in ``utc_offset``; default ``02:00``.
        duration_hours: 4-24; default 4 (AKS: "a maintenance window of four hours or more for
            reliable operation"; the API accepts 4 to 24).
        utc_offset: ``+HH:MM`` or ``-HH:MM``; default ``+00:00``. Karpenter's budget schedules are
            always UTC, so gpupools converts the window to UTC for them.
        termination_grace_period: the NodePools' ``terminationGracePeriod``, a duration like ``24h``:
            how long a node being replaced waits for pods that block their eviction
            (``karpenter.sh/do-not-disrupt``, PDBs) before they are deleted. Default None: not set,
            so those pods are never force-deleted and a drifted node waits for its job to end (the
            setting "takes precedence over a pod's terminationGracePeriodSeconds and bypasses
            PodDisruptionBudgets and the karpenter.sh/do-not-disrupt annotation", AKS
            ``node-auto-provisioning-disruption.md``; kubernetes-sigs/karpenter NodePool CRD: "If left
            undefined, the controller will wait indefinitely for pods to be drained").
    """

    day: WeekDay = WeekDay.SUNDAY
    start_time: str = "02:00"
    duration_hours: int = 4
    utc_offset: str = "+00:00"
    termination_grace_period: str | None = None


@dataclass(frozen=True)
class StackSpec:
    """The whole validated stack configuration."""

    cloud: Cloud
    cluster: ClusterSpec
    network: NetworkSpec
    system_pool: SystemPoolSpec
    gpu_pools: tuple[PoolSpec, ...]
    device_plugin: DevicePluginSpec = DevicePluginSpec()
    autoscaler: AutoscalerSpec = AutoscalerSpec()
    smoke_test: SmokeTestSpec = SmokeTestSpec()
    upgrade: ReleaseUpgradeSpec = ReleaseUpgradeSpec()
    cpu_pools: tuple[PoolSpec, ...] = ()
    cost: CostSpec = CostSpec()
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER
    maintenance: MaintenanceSpec = MaintenanceSpec()
    node_repair: NodeRepairSpec = NodeRepairSpec()
    gpu_metrics: GpuMetricsSpec = GpuMetricsSpec()
    queueing: QueueingSpec = QueueingSpec()
    catalog: CatalogSpec = CatalogSpec()

    @property
    def pools(self) -> tuple[PoolSpec, ...]:
        """GPU pools, then CPU pools: the order their cloud resources are created in."""
        return (*self.gpu_pools, *self.cpu_pools)

    @property
    def node_auto_provisioning(self) -> bool:
        """AKS Node Auto Provisioning: ``provisioner: karpenter`` on Azure."""
        return self.cloud is Cloud.AZURE and self.provisioner is Provisioner.KARPENTER
