"""``GpuNodePool`` and ``CpuNodePool``: one ``gpuPools`` or ``cpuPools`` entry as standalone AKS agent pools.

Per entry, on an existing cluster (given by resource group and cluster name, so the component works
without ``AksCluster``):

- a **Spot** pool (``scaleSetPriority=Spot``, eviction ``Delete``, ``spotMaxPrice`` -1 unless
  configured), autoscaled from ``minSize`` (default 0) to ``maxSize``;
- unless ``onDemandFallback: false``, an **on-demand fallback** pool (``Regular``) of the same
  shape, autoscaled from 0 to ``onDemandMaxSize`` (default ``maxSize``). The priority expander
  ranks it below the Spot pool, so the autoscaler only buys it when Spot cannot be had;
- with ``spot: false``, a single on-demand pool from ``minSize`` to ``maxSize``;
- per ``reservations`` entry, first in the chain, a **reserved** pool: on-demand (``Regular``) in
  that Capacity Reservation Group (``capacityReservationGroupID``: "AKS will associate the specified
  agent pool with the Capacity Reservation Group", pulumi-azure-native 3.29 ``AgentPool``), labelled
  ``gpupools.io/capacity-type=reserved``, autoscaled from 0 to the reservation's ``count``, in the
  reservation's ``zone`` when given (else the pool's zones). The priority expander ranks it above
  Spot: the capacity is paid for whether used or not. ``count`` is the bound because past its
  reserved quantity Azure still places VMs in the group, as plain pay-as-you-go ones without the
  guarantee ("overallocation": learn.microsoft.com ``virtual-machines/capacity-reservation-overallocate``),
  which the figures would count as free; the pool's ``maxSize`` keeps bounding its Spot and
  on-demand pools. Without ``count`` (configs written before it) the bound stays ``maxSize``
  (``ReservationSpec.reserved_max``); the preflight's reservation row shows the quantity next to it.

Lifecycle rules built in (the AKS behaviour behind each is cited in the project's design notes):

- ``count`` belongs to the autoscaler, and a later ``pulumi up`` must never reset capacity. It is
  sent on create (AKS requires it: "Required parameter properties.count is missing") as
  ``minSize``. Every update of a pool is one PUT of the whole pool, ``count`` included, so on
  update the component sends the pool's *live* count, read at deploy time
  (``gpupools.azure.live_capacity``); only when that cannot be read (a pool about to be created,
  a failed read, or names given as outputs with no ``live_counts``) is ``count`` left to
  ``ignore_changes=["count"]``, which sends the stored count, live only because the project
  refreshes before every update (``Pulumi.yaml`` ``options.refresh: always``; see
  ``GpuNodePool``).
- The Spot label and taint AKS adds to every Spot pool are declared, so a refresh shows no diff.
- GPU sharing (``sharing``): a shared pool carries ``nvidia.com/device-plugin.config=<config>`` as a
  node label (the device plugin's config-manager picks the config from it); a MIG pool sends
  ``gpuInstanceProfile`` (create-only, so in the name digest: a new profile is a new pool). Every
  pool's scale set is tagged ``k8s.io_cluster-autoscaler_node-template_resources_nvidia.com_gpu`` with
  the ``nvidia.com/gpu`` one node advertises (GPUs x replicas or MIG instances; see
  ``autoscaler_template_tags`` for what reads it, and what is not documented).
- ``gpuDriver``: a GPU pool sends ``gpuProfile.driver`` ``Install`` (default) or, with
  ``gpuDriver: none``, ``None`` (``GPU_PROFILE_DRIVER``): AKS installs no driver and gpupools runs
  no device plugin there (the GPU Operator's pool). Create-only and in the name digest, so a changed
  driver is a new pool; ``install`` pools send exactly what they always did.
- ``proximityPlacement: true``: the component creates one proximity placement group per pool
  (``compute.ProximityPlacementGroup``, type ``Standard``, in the pool's zone with an ``intent``
  naming the pool's VM size, in the cluster's resource group; ``PPG_INTENT`` says why) and sends its ID as the agent pools' ``proximityPlacementGroupID``, which AKS
  cannot change on an existing pool (azure-aks-docs ``articles/aks/reduce-latency-ppg.md``,
  "Limitations": "A node pool can associate a proximity placement group at node pool create time
  only"; "A proximity placement group can map to only *one* availability zone"), so turning it on
  or off is a new pool name, like every create-only field. One group per pool, each in its pool's
  zone, is the design that page recommends. The Spot pool and its fallback share the group. InfiniBand needs more than
  this on AKS (see ``docs/aks.md``).
- Kubernetes version: with ``kubernetes_version`` (the stack passes ``gpupools:cluster.kubernetesVersion``)
  every pool sends ``orchestratorVersion``, so an upgrade reaches it: the cluster's PUT moves the
  control plane and the System pool first (every pool depends on the cluster), then each pool's own
  PUT moves it, one at a time along the chain. AKS reports the version on every pool
  (azure-rest-api-specs ``aks/stable/2025-09-01/examples/AgentPoolsGet.json``), so a pool that omits
  it would show a diff after every refresh, and the managed-cluster PUT needs every pool's version
  specified (``gpupools.azure.inline_pools``).
- ``upgradeSettings`` (``upgrade_settings``, from the pool's ``upgrade``) on every Regular pool
  (on-demand and reserved): by default no surge node, one node at a time, an hour to drain. Spot
  pools get none: AKS rejects ``maxSurge``/``maxUnavailable`` on Spot.
- Fields AKS cannot change in place are in ``replace_on_changes`` and in the name: the agent pool
  name is ``<pool><s|o><digest of those fields>`` (``gpupools.azure.naming``). A change makes a
  new name, and every ``AgentPool`` (and proximity placement group) registers
  ``delete_before_replace=False`` explicitly: pulumi-azure-native's ``Diff`` answers
  ``deleteBeforeReplace: true`` for a replacement of a resource whose name it did not pick
  ("All the parameters that are part of the resource path cause a replacement", ``diff.go``
  ``calculateDetailedDiff``; ``provider.go`` ``Diff``), and the engine follows the provider unless
  the program sets the option (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``: the goal's
  ``DeleteBeforeReplace`` wins when set; the Python SDK sends it only when not None,
  ``sdk/python/lib/pulumi/runtime/resource.py``). So the new pool exists before the old one drains,
  with no name clash (the names differ) and no capacity gap.
- Every pool operation of a cluster is chained with ``depends_on`` (Spot after ``after``, fallback
  after Spot): AKS rejects a second pool operation while one runs (``OperationNotAllowed``), and
  Pulumi would otherwise run them in parallel. Pass the previous pool's ``.last`` as ``after``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi
from pulumi_azure_native import authorization, compute, containerservice

from gpupools import config, rules, sharing, versions
from gpupools.azure.cluster import reservation_group_scope
from gpupools.azure.live_capacity import AgentPoolCounts
from gpupools.azure.naming import agent_pool_name, create_only_digest, scale_set_regex
from gpupools.azure.reservation_grant import warn_if_created_before_propagation
from gpupools.azure.upgrade import agent_pool_minutes, operation_timeout
from gpupools.catalog.azure_vm_sizes import GPU_SIZES
from gpupools.conventions import (
    AKS_CA_RESOURCES_TAG_PREFIX,
    AKS_SPOT_LABEL,
    AKS_SPOT_TAINT,
    GPU_RESOURCE,
    GPU_TAINT,
    CapacityType,
    Role,
    Taint,
    device_plugin_labels,
    pool_labels,
)
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.specs import Cloud, GpuDriver, GpuPoolSpec, ReservationSpec, SharingMode, UpgradeSpec, frozen_map

CREATE_ONLY_FIELDS: tuple[str, ...] = (
    "availabilityZones",
    "capacityReservationGroupID",
    "gpuInstanceProfile",
    "gpuProfile",
    "maxPods",
    "osDiskSizeGB",
    "osDiskType",
    "proximityPlacementGroupID",
    "scaleSetEvictionPolicy",
    "scaleSetPriority",
    "spotMaxPrice",
    "vmSize",
    "vnetSubnetID",
)
"""AgentPool properties (engine names) AKS cannot change in place. vmSize and gpuInstanceProfile
are already replacements in azure-native; the rest (Spot priority and price, eviction policy, OS
disk type and size, max pods, GPU driver, zones, subnet) would be attempted as an update and
rejected by AKS. All of them replace the pool, and all of them feed the name digest
(``proximityPlacementGroupID`` only on a ``proximityPlacement`` pool, as whether the pool has a
group: the ID is known only after deploy, and the key's absence keeps every other pool's name).
``capacityReservationGroupID`` is set only when a pool is added (AKS "Assign capacity reservation
groups to AKS node pools", learn.microsoft.com ``aks/use-capacity-reservation-groups``: the group is
given to ``az aks nodepool add --crg-id``; ``az aks nodepool update`` has no such option), and it is
in the digest of reserved pools only, so the names of pools without a reservation never change."""

PROXIMITY_PLACEMENT_GROUP_TYPE = "Standard"
"""``compute.ProximityPlacementGroup`` type: ``Standard`` (the other value, ``Ultra``, is not offered
for new groups; Azure REST API ``ProximityPlacementGroupType``)."""


def upgrade_settings(upgrade: UpgradeSpec) -> dict[str, Any]:
    """``upgradeSettings`` of a Regular (on-demand, reserved) pool from the pool's ``upgrade``
    (``UpgradeSpec``; default ``maxSurge: 0``, ``maxUnavailable: 1``, ``drainTimeoutInMinutes: 60``).
    AKS takes "an integer (e.g. '5') or a percentage (e.g. '50%')" for both counts (``maxUnavailable``
    "If not specified, the default is 0", ``maxSurge`` "the default is 10%"), and the drain timeout is
    "The amount of time ... to wait on eviction of pods and graceful termination per node. This
    eviction wait time honors waiting on pod disruption budgets. If this time is exceeded, the upgrade
    fails" (pulumi-azure-native 3.29 ``AgentPoolUpgradeSettingsArgs``). Why the defaults: a GPU surge
    node needs GPU quota the pool may not have and, for a reserved pool, capacity outside the
    reservation; one node at a time keeps the rest of the pool serving; a GPU job gets an hour to
    checkpoint. A pool at zero nodes upgrades with no node to drain. Spot pools get none (AKS rejects
    ``maxSurge``/``maxUnavailable`` on Spot). How long this makes an upgrade: ``gpupools.azure.upgrade``."""
    return {
        "max_surge": upgrade.max_surge,
        "max_unavailable": upgrade.max_unavailable,
        "drain_timeout_in_minutes": upgrade.drain_timeout_minutes,
    }


PROXIMITY_PLACEMENT_DIGEST_VALUE = "pool"
"""What the name digest holds for ``proximityPlacementGroupID``: the pool has its own group."""

CHILD_SUFFIX = {CapacityType.SPOT: "spot", CapacityType.ON_DEMAND: "ondemand", CapacityType.RESERVED: "reserved"}
"""The ``AgentPool`` child's logical name is ``<component>-<suffix>``; a reserved pool's also ends in
a digest of its group ID (one child per reservation)."""

COUNT_IGNORE: tuple[str, ...] = ("count",)
"""Engine path of the autoscaler-owned node count, ignored when its live value is unknown."""

OS_DISK_TYPE = containerservice.OSDiskType.MANAGED.value
"""Managed OS disks: valid on every GPU size whatever its cache disk (Ephemeral needs a cache disk
at least as large as the OS disk, which varies by size), and required by ``Deallocate`` scale-down
should anyone switch to it later. Set explicitly so AKS's size-dependent default never differs
between plan and reality."""

GPU_DRIVER = containerservice.GPUDriver.INSTALL.value
"""``gpuProfile.driver=Install``: AKS installs the NVIDIA driver; gpupools deploys the device plugin."""

GPU_PROFILE_DRIVER: Mapping[GpuDriver, str] = {
    GpuDriver.INSTALL: GPU_DRIVER,
    GpuDriver.NONE: containerservice.GPUDriver.NONE.value,
}
"""``gpuProfile.driver`` per ``gpuPools[].gpuDriver`` (pulumi-azure-native 3.29 ``GPUDriver``: ``Install``,
``None``). ``None``: AKS installs no driver ("Bring your own GPU driver", azure-aks-docs
``articles/aks/aks-managed-gpu-nodes.md``; ``nvidia-gpu-operator.md`` creates the pool with
``--gpu-driver none`` before installing the GPU Operator) and gpupools runs no device plugin there.
The field is create-only ("The managementMode, migStrategy, and driver fields under gpuProfile are
immutable after node pool creation"), and ``gpuProfile`` is in the name digest, so a changed driver
is a new pool. ``managed`` has no entry: ``gpupools.gpu_driver`` refuses it (the preview's
``gpuProfile.nvidia.managementMode`` is not in this API version, and the preview excludes the
cluster autoscaler)."""


def replace_on_changes(spec: GpuPoolSpec) -> list[str]:
    """``CREATE_ONLY_FIELDS`` as the AgentPool's ``replace_on_changes``; ``proximityPlacementGroupID``
    only on a ``proximityPlacement`` pool (no other pool sends it, and leaving it out keeps their
    registrations as they were)."""
    return [f for f in CREATE_ONLY_FIELDS if f != "proximityPlacementGroupID" or spec.proximity_placement]


@dataclass(frozen=True)
class AgentPoolPlan:
    """One agent pool to create: its AKS name, the ``AgentPool`` arguments, and its description.

    ``args`` holds every ``containerservice.AgentPool`` argument except ``resource_group_name``,
    ``resource_name_`` (the cluster) and ``vnet_subnet_id``, which the component adds.
    """

    name: str
    capacity: CapacityType
    args: Mapping[str, Any]
    info: NodePoolInfo


def ppg_intent(spec: GpuPoolSpec) -> compute.ProximityPlacementGroupPropertiesIntentArgs:
    """The proximity placement group's ``intent``: the pool's VM size. Compute refuses a zonal group
    without one: "The ``zone`` parameter can only be use with ``intent``, it can't be used alone" and
    "Providing an availability zone without an intent will result in an error when creating the
    proximity placement group" (MicrosoftDocs/azure-compute-docs
    ``articles/virtual-machines/co-location.md``); the ``intent.vmSizes`` field is "possible sizes of
    virtual machines that can be created in the proximity placement group" (pulumi-azure-native 3.29
    ``ProximityPlacementGroupPropertiesIntentArgs``, Compute API ``2024-11-01``). One size per pool, so
    the group's intent is exactly the size its scale sets use. Sent on zone-less groups too (a
    regional cluster), where it is allowed and costs nothing."""
    return compute.ProximityPlacementGroupPropertiesIntentArgs(vm_sizes=[spec.instance_types[0]])


def autoscaler_template_tags(gpu_slots_per_node: int) -> dict[str, str]:
    """The agent pool tag that tells cluster-autoscaler how many ``nvidia.com/gpu`` a node of this
    pool advertises when it has no node to look at (scale from zero).

    What is verified: AKS applies a node pool's tags to the pool's scale set (AgentPool ``tags``:
    "the tags to be persisted on the agent pool virtual machine scale set", pulumi-azure-native's
    API docs; AKS "Use Azure tags": node pool tags apply to the pool's resources), and
    cluster-autoscaler's Azure provider builds a scale set's template node from the size's GPU
    count and then overrides each resource named by a
    ``k8s.io_cluster-autoscaler_node-template_resources_<name>`` scale-set tag, ``_`` read as ``/``
    (kubernetes/autoscaler ``cluster-autoscaler/cloudprovider/azure/azure_template.go``,
    ``processVMSSTemplate`` -> ``extractAllocatableResourcesFromScaleSet``).

    What is not: AKS runs its own build of the autoscaler and does not document that it reads
    these tags (Azure/AKS #3427, time-slicing over-provisioning, is open). Sent on every GPU pool,
    so the tag always states the truth (GPUs per node without sharing) and never goes stale when
    sharing is turned off.
    """
    return {f"{AKS_CA_RESOURCES_TAG_PREFIX}{GPU_RESOURCE.replace('/', '_')}": str(gpu_slots_per_node)}


def _gpu_profile_driver(spec: GpuPoolSpec, path: str) -> str:
    """``gpuProfile.driver`` of a GPU pool (``GPU_PROFILE_DRIVER``); ``managed`` is a ConfigError."""
    if spec.gpu_driver not in GPU_PROFILE_DRIVER:
        raise ConfigError(
            path.rsplit(".", 1)[0] + ".gpuDriver",
            "must be install or none on an AKS agent pool (managed GPU node pools are a preview without the "
            "cluster autoscaler; see gpupools.gpu_driver)",
            spec.gpu_driver.value,
        )
    return GPU_PROFILE_DRIVER[spec.gpu_driver]


def _labels(spec: GpuPoolSpec, capacity: CapacityType) -> dict[str, str]:
    labels = {
        **pool_labels(spec.name, spec.role, capacity),
        **spec.labels,
        **sharing.node_labels(spec.sharing),
        **device_plugin_labels(spec.is_gpu, spec.needs_device_plugin),
    }
    if capacity is CapacityType.SPOT:
        labels[AKS_SPOT_LABEL[0]] = AKS_SPOT_LABEL[1]
    return dict(sorted(labels.items()))


def _taints(spec: GpuPoolSpec, capacity: CapacityType) -> tuple[Taint, ...]:
    taints = (GPU_TAINT, *spec.taints) if spec.is_gpu else spec.taints
    return (*taints, AKS_SPOT_TAINT) if capacity is CapacityType.SPOT else taints


def plan_agent_pool(
    spec: GpuPoolSpec,
    capacity: CapacityType,
    *,
    min_size: int,
    max_size: int,
    zones: Sequence[str],
    subnet_key: str | None,
    path: str = "pool.name",
    reservation: ReservationSpec | None = None,
) -> AgentPoolPlan:
    """The agent pool of ``spec`` for ``capacity`` (pure; no resources).

    Args:
        spec: a validated pool spec (``gpuPools`` or ``cpuPools``: a CPU pool gets no GPU taint,
            no ``gpuProfile``, and the ``cpu`` role label).
        capacity: Spot or on-demand.
        min_size, max_size: autoscaler bounds of this pool.
        zones: the zones it spans (sorted here, so reordering config never replaces a pool).
        subnet_key: the node subnet ID when known as a plain string; it is part of the name digest.
            An ``Output`` subnet ID cannot be hashed at plan time and is left out of the digest
            (a created node subnet only changes together with the whole cluster).
        path: the argument path for a naming ``ConfigError``.
        reservation: for ``CapacityType.RESERVED``, the Capacity Reservation Group (its ID is
            sent as ``capacity_reservation_group_id`` and feeds the name digest; its ``zone``, when
            given, is the pool's only zone).
    """
    if (capacity is CapacityType.RESERVED) != (reservation is not None):
        raise ValueError("a reservation is given exactly for CapacityType.RESERVED")
    if reservation is not None and reservation.zone is not None:
        zones = (reservation.zone,)
    size = spec.instance_types[0]
    gpus, gpu_model = (GPU_SIZES[size].gpus, GPU_SIZES[size].gpu_model) if spec.is_gpu else (0, "")
    gpu_profile = {"driver": _gpu_profile_driver(spec, path)} if spec.is_gpu else None
    zone_list = sorted(zones)
    spot = capacity is CapacityType.SPOT
    priority = (containerservice.ScaleSetPriority.SPOT if spot else containerservice.ScaleSetPriority.REGULAR).value
    eviction = containerservice.ScaleSetEvictionPolicy.DELETE.value if spot else None
    price = spec.spot_max_price if spot else None
    mig_profile = spec.sharing.mig_profile if spec.sharing.mode is SharingMode.MIG else None
    slots_per_gpu = sharing.slots_per_gpu(spec.sharing, GPU_SIZES[size].mig_profiles) if spec.is_gpu else 1
    create_only: dict[str, Any] = {
        "availabilityZones": zone_list,
        "gpuInstanceProfile": mig_profile,
        "gpuProfile": gpu_profile,
        "maxPods": None,
        "osDiskSizeGB": spec.disk_size_gb,
        "osDiskType": OS_DISK_TYPE,
        "scaleSetEvictionPolicy": eviction,
        "scaleSetPriority": priority,
        "spotMaxPrice": price,
        "vmSize": size,
        "vnetSubnetID": subnet_key,
    }
    if spec.proximity_placement:
        create_only["proximityPlacementGroupID"] = PROXIMITY_PLACEMENT_DIGEST_VALUE
    if reservation is not None:
        create_only["capacityReservationGroupID"] = reservation.id
    name = agent_pool_name(spec.name, capacity, create_only, path)
    labels = _labels(spec, capacity)
    taints = _taints(spec, capacity)
    args: dict[str, Any] = {
        "agent_pool_name": name,
        "mode": containerservice.AgentPoolMode.USER.value,
        "type": containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS.value,
        "os_type": containerservice.OSType.LINUX.value,
        "vm_size": size,
        "availability_zones": zone_list or None,
        "enable_auto_scaling": True,
        "min_count": min_size,
        "max_count": max_size,
        "count": min_size,
        "node_labels": labels,
        "node_taints": [str(t) for t in taints],
        "gpu_profile": gpu_profile,
        "enable_node_public_ip": False,
        "os_disk_size_gb": spec.disk_size_gb,
        "os_disk_type": OS_DISK_TYPE,
        "scale_down_mode": containerservice.ScaleDownMode.DELETE.value,
        "scale_set_priority": priority,
    }
    if spec.is_gpu:
        args["tags"] = autoscaler_template_tags(gpus * slots_per_gpu)
    if mig_profile is not None:
        args["gpu_instance_profile"] = mig_profile
    if spot:
        args["scale_set_eviction_policy"] = eviction
        args["spot_max_price"] = price
    else:
        args["upgrade_settings"] = upgrade_settings(spec.upgrade)
    if reservation is not None:
        args["capacity_reservation_group_id"] = reservation.id
    info = NodePoolInfo(
        name=name,
        pool=spec.name,
        role=spec.role,
        capacity=capacity,
        zones=tuple(zone_list),
        instance_types=(size,),
        min_size=min_size,
        max_size=max_size,
        labels=frozen_map(labels),
        taints=taints,
        gpus_per_node=gpus,
        gpu_model=gpu_model,
        needs_device_plugin=spec.needs_device_plugin,
        gpu_driver=spec.gpu_driver,
        autoscaler_group_regex=scale_set_regex(name),
        sharing=spec.sharing,
        slots_per_gpu=slots_per_gpu,
    )
    return AgentPoolPlan(name=name, capacity=capacity, args=args, info=info)


def plan_agent_pools(
    spec: GpuPoolSpec, cluster_zones: Sequence[str], subnet_key: str | None = None, path: str = "pool"
) -> list[AgentPoolPlan]:
    """The pools of one ``gpuPools`` entry, in creation order: one reserved pool per reservation,
    then Spot and fallback, or one on-demand."""
    zones = spec.zones or tuple(cluster_zones)
    at = f"{path}.name"
    reserved = [
        plan_agent_pool(
            spec,
            CapacityType.RESERVED,
            min_size=0,
            max_size=reservation.reserved_max(spec.max_size),
            zones=zones,
            subnet_key=subnet_key,
            path=at,
            reservation=reservation,
        )
        for reservation in spec.reservations
    ]
    if not spec.spot:
        return [
            *reserved,
            plan_agent_pool(
                spec,
                CapacityType.ON_DEMAND,
                min_size=spec.min_size,
                max_size=spec.max_size,
                zones=zones,
                subnet_key=subnet_key,
                path=at,
            ),
        ]
    plans = [
        *reserved,
        plan_agent_pool(
            spec, CapacityType.SPOT, min_size=spec.min_size, max_size=spec.max_size, zones=zones, subnet_key=subnet_key, path=at
        ),
    ]
    if spec.on_demand_fallback:
        plans.append(
            plan_agent_pool(
                spec,
                CapacityType.ON_DEMAND,
                min_size=0,
                max_size=spec.fallback_max_size,
                zones=zones,
                subnet_key=subnet_key,
                path=at,
            )
        )
    return plans


def resolve_gpu_pool(
    name: str,
    pool: GpuPoolSpec | Mapping[str, Any],
    cluster_zones: Sequence[str],
    role: Role = Role.GPU,
    component: str = "GpuNodePool",
) -> tuple[GpuPoolSpec, tuple[str, ...]]:
    """Validate ``GpuNodePool`` arguments; returns the spec and the cluster zones. Pure.

    A plain mapping is parsed like a ``gpuPools`` config entry; a spec is re-validated with the
    same rules, so library users get the same errors as stack configs.
    """
    prefix = f"{component}({name})"
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{component}.name", "must be a non-empty string", name)
    if isinstance(cluster_zones, str) or not isinstance(cluster_zones, Sequence):
        raise ConfigError(f"{prefix}.cluster_zones", 'must be a list of zone numbers such as ["1", "2", "3"]', cluster_zones)
    zones = tuple(cluster_zones)
    for index, zone in enumerate(zones):
        rules.check_zone(zone, Cloud.AZURE, f"{prefix}.cluster_zones[{index}]")
    rules.check_unique(zones, f"{prefix}.cluster_zones", "zones")
    if isinstance(pool, GpuPoolSpec):
        spec = pool
        if spec.role is not role:
            raise ConfigError(f"{prefix}.pool", f"must be a {role.value} pool spec", spec.role.value)
    elif isinstance(pool, Mapping):
        spec = config.parse_pool(pool, Cloud.AZURE, f"{prefix}.pool", role)
    else:
        raise ConfigError(f"{prefix}.pool", f"must be a PoolSpec or a {role.value}Pools mapping", type(pool).__name__)
    rules.check_gpu_pool(spec, Cloud.AZURE, f"{prefix}.pool", zones)
    return spec, zones


class GpuNodePool(pulumi.ComponentResource):
    """A GPU Spot agent pool and its on-demand fallback on an existing AKS cluster.

    Type token ``gpupools:index:GpuNodePool``. See the module docstring for what is created and why.

    Args:
        name: the component's logical name; children are ``<name>-spot``, ``<name>-ondemand`` and,
            per reservation, ``<name>-reserved-<digest of the group ID>``
            (stable across name rotation, so a create-only change is a replacement, not a new pool).
        pool: a ``GpuPoolSpec`` or a plain ``gpuPools`` entry (``{"name": "t4", "instanceTypes":
            ["Standard_NC4as_T4_v3"], "maxSize": 4}``), validated like stack config; errors name
            ``GpuNodePool(<name>).pool.<key>``.
        resource_group_name: the cluster's resource group.
        cluster_name: the AKS cluster's name.
        subnet_id: the node subnet (in the cluster's VNet; AKS requires every pool in one VNet).
            Default: none sent, leaving the choice to AKS (right for an AKS-managed VNet); pass the
            cluster's node subnet for a cluster on your own VNet. A plain string is part of the
            name digest; an ``Output`` is not (see ``plan_agent_pool``).
        cluster_zones: the cluster's zones, default ``("1", "2", "3")``; the pool's zones default
            to these and must be among them. Empty for regions without zones.
        after: the resource after which this component's first pool operation runs, normally the
            previous ``GpuNodePool``'s ``.last``. Default none (the first pool of the cluster).
        live_counts: where to read the pools' live node counts (``AksCluster.live_counts``).
            Default: an ``AgentPoolCounts`` of ``resource_group_name``/``cluster_name`` when both
            are plain strings, else none (counts then rest on ``ignore_changes`` and refresh).
        kubernetes_version: the pools' ``orchestratorVersion``, a Kubernetes minor AKS supports
            (``gpupools.versions``); pass the cluster's ``kubernetesVersion`` so upgrades reach the
            pools. Default None: not sent (AKS keeps the pool's version; use this only on a cluster
            whose upgrades something else manages).
        reservation_grants: the Contributor grants of the cluster's identity on the Capacity
            Reservation Groups' resource groups, by lowercased resource-group ID
            (``AksCluster.reservation_grants``). With them, a reserved pool this ``up`` creates logs a
            warning when its grant was under 60 minutes old as the pool's create began
            (``gpupools.azure.reservation_grant``). Default none: no warning.
        opts: resource options for the component (``providers`` reach the children).

    The count sent on update, and why: an update of an agent pool (a ``maxSize``, label or version
    change) is one PUT of the whole pool, ``count`` included (pulumi-azure-native
    ``provider/pkg/provider/provider.go``, ``Update`` -> ``defaultUpdate``, body from the inputs).

    * live count known: ``count`` is the live count and is not ignored, so the PUT carries exactly
      what AKS has, as ``az aks nodepool update`` does (see ``live_capacity``), whatever the state
      holds (``pulumi up --refresh=false`` too) and whatever the new ``minSize``/``maxSize``.
    * unknown: ``count`` is ``minSize`` and in ``ignore_changes``; Pulumi sends the stored count
      (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``, ``processIgnoreChanges``), which is
      the live one because every update starts with a refresh (``Pulumi.yaml``
      ``options.refresh: always``): azure-native's ``Read`` copies the changed ``count`` into the
      stored inputs (``provider.go``, ``Read``: ``applyDiff`` of the old and new output projections
      onto the old inputs).

    Pool names and create-only fields never depend on the count, so neither path replaces a pool.

    Raises:
        ConfigError: for invalid arguments, before anything is registered.

    Attributes:
        spec: the validated spec.
        agent_pools: the ``AgentPool`` resources, in creation order.
        last: the last ``AgentPool``; pass it as the next pool's ``after``.
        node_pools: one ``NodePoolInfo`` per agent pool (what the device plugin, priority expander and
            stack outputs derive from); the same name on every pool component of both clouds.
        pools: the same list (its name before ``node_pools``).
        proximity_placement_group: the pool's proximity placement group (``proximityPlacement:
            true``), else None.
    """

    TYPE = "gpupools:index:GpuNodePool"
    ROLE = Role.GPU

    spec: GpuPoolSpec
    agent_pools: list[containerservice.AgentPool]
    last: containerservice.AgentPool
    node_pools: list[NodePoolInfo]
    pools: list[NodePoolInfo]
    agent_pool_names: list[str]
    proximity_placement_group: compute.ProximityPlacementGroup | None

    def __init__(
        self,
        name: str,
        pool: GpuPoolSpec | Mapping[str, Any],
        *,
        resource_group_name: pulumi.Input[str],
        cluster_name: pulumi.Input[str],
        subnet_id: pulumi.Input[str] | None = None,
        cluster_zones: Sequence[str] = config.DEFAULT_AZURE_ZONES,
        after: pulumi.Resource | None = None,
        live_counts: AgentPoolCounts | None = None,
        kubernetes_version: str | None = None,
        reservation_grants: Mapping[str, authorization.RoleAssignment] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        component = type(self).__name__
        if kubernetes_version is not None:
            version_problem = versions.check_minor(kubernetes_version, Cloud.AZURE.value)
            if version_problem:
                raise ConfigError(f"{component}({name}).kubernetes_version", version_problem, kubernetes_version)
        spec, zones = resolve_gpu_pool(name, pool, cluster_zones, self.ROLE, component)
        if after is not None and not isinstance(after, pulumi.Resource):
            raise ConfigError(f"{component}({name}).after", "must be a Pulumi resource or None", type(after).__name__)
        subnet_key = subnet_id if isinstance(subnet_id, str) else None
        plans = plan_agent_pools(spec, zones, subnet_key, path=f"{component}({name}).pool")

        super().__init__(self.TYPE, name, {}, opts)
        self.spec = spec
        self.agent_pools = []
        counts = live_counts
        if counts is None and isinstance(resource_group_name, str) and isinstance(cluster_name, str):
            counts = AgentPoolCounts(resource_group_name, cluster_name, parent=self)
        self.proximity_placement_group = None
        placement: dict[str, Any] = {}
        if spec.proximity_placement:
            self.proximity_placement_group = compute.ProximityPlacementGroup(
                f"{name}-ppg",
                resource_group_name=resource_group_name,
                proximity_placement_group_type=PROXIMITY_PLACEMENT_GROUP_TYPE,
                zones=list(spec.zones or zones)[:1] or None,
                intent=ppg_intent(spec),
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=False),
            )
            placement = {"proximity_placement_group_id": self.proximity_placement_group.id}
        previous = after
        for plan in plans:
            suffix = CHILD_SUFFIX[plan.capacity]
            if plan.capacity is CapacityType.RESERVED:
                # Keyed by the group, so adding or reordering reservations never renames another's child.
                suffix += "-" + create_only_digest({"capacityReservationGroupID": plan.args["capacity_reservation_group_id"]})
            live = counts.count(plan.name) if counts is not None else None
            # An existing pool sends the count AKS has when the pool before it has finished.
            args = (
                dict(plan.args)
                if live is None or counts is None
                else {**plan.args, "count": counts.count_after(plan.name, previous)}
            )
            if kubernetes_version is not None:
                args["orchestrator_version"] = kubernetes_version
            agent_pool = containerservice.AgentPool(
                f"{name}-{suffix}",
                resource_group_name=resource_group_name,
                resource_name_=cluster_name,
                vnet_subnet_id=subnet_id,
                **args,
                **placement,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[previous] if previous is not None else None,
                    # An upgrade of the pool may take longer than the provider's 2 hours (upgrade.operation_timeout).
                    custom_timeouts=pulumi.CustomTimeouts(
                        update=operation_timeout(
                            agent_pool_minutes(
                                int(plan.args.get("max_count") or plan.args.get("count") or 0),
                                None if plan.capacity is CapacityType.SPOT else spec.upgrade,
                            )
                        )
                    ),
                    ignore_changes=list(COUNT_IGNORE) if live is None else None,
                    replace_on_changes=replace_on_changes(spec),
                    # Create the new pool before deleting the old one (module docstring).
                    delete_before_replace=False,
                ),
            )
            if plan.capacity is CapacityType.RESERVED and live is None and reservation_grants:
                # A pool this up creates: warn if its grant may not have reached AKS yet (reservation_grant).
                scope = reservation_group_scope(plan.args["capacity_reservation_group_id"])
                grant = reservation_grants.get(scope.lower())
                if grant is not None:
                    warn_if_created_before_propagation(agent_pool, plan.name, grant, scope, previous)
            self.agent_pools.append(agent_pool)
            previous = agent_pool
        self.last = self.agent_pools[-1]
        self.pools = [plan.info for plan in plans]
        self.node_pools = self.pools  # the name every pool component shares; pools stays
        self.agent_pool_names = [plan.name for plan in plans]
        self.register_outputs({"agentPoolNames": self.agent_pool_names, "nodePools": [p.to_output() for p in self.pools]})


class CpuNodePool(GpuNodePool):
    """A CPU Spot agent pool and its on-demand fallback: one ``cpuPools`` entry.

    Type token ``gpupools:index:CpuNodePool``. The same component as ``GpuNodePool`` (same
    arguments, lifecycle rules, live counts and chaining; pass the previous pool's ``.last`` as
    ``after``), with the CPU parts: role label ``gpupools.io/role=cpu``, no GPU taint, no
    ``gpuProfile``, no GPU label; Spot pools keep the Spot label and taint AKS adds. ``pool`` is a
    ``PoolSpec`` with ``role=Role.CPU`` or a plain ``cpuPools`` entry
    (``{"name": "general", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 20}``).
    """

    TYPE = "gpupools:index:CpuNodePool"
    ROLE = Role.CPU
