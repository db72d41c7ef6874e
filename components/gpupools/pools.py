"""A cloud-neutral description of one node pool as created: what the Kubernetes side derives from.

The cloud components (``gpupools.azure``, ``gpupools.aws``) return one ``NodePoolInfo`` per
pool or node group they create. The device plugin's tolerations and affinity, the priority
expander's regexes, the smoke test, the stack's ``nodePools`` output and the synth summary are all
computed from these, never from copied literals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from gpupools import sharing as sharing_rules
from gpupools.conventions import CAPACITY_TYPE_LABEL, CapacityType, Role, Taint
from gpupools.specs import GpuDriver, SharingSpec, frozen_map


@dataclass(frozen=True)
class NodePoolInfo:
    """One created pool (AKS agent pool) or node group (one EKS managed node group per zone).

    Attributes:
        name: the cloud's name for it (AKS agent pool name, EKS node group name).
        pool: the ``gpuPools`` entry it belongs to (``system`` for the system pool).
        role: system or gpu.
        capacity: spot or on-demand.
        zones: the zones it spans (an AKS pool spans several, an EKS group one).
        instance_types: its VM sizes / instance types.
        min_size, max_size: autoscaler bounds.
        labels: every node label gpupools sets on it (conventions and extras).
        taints: every taint its nodes carry, including ones the cloud adds (the AKS Spot taint).
        gpus_per_node: GPUs on one node (0 for the system pool).
        gpu_model: e.g. ``nvidia-tesla-t4``; a pool of several models lists them, comma-separated
            (``nvidia-a10g,nvidia-l4``); empty for the system pool.
        autoscaler_group_regex: an anchored regex matching the name cluster-autoscaler sees for
            this pool (AKS: the scale set ``aks-<pool>-<digits>-vmss``; EKS: the ASG
            ``eks-<nodegroup>-<uuid>``); the priority expander lists these.
        needs_device_plugin: whether gpupools runs the NVIDIA device plugin there: False for CPU
            pools, where the node image ships its own plugin (Bottlerocket NVIDIA) and where
            ``gpu_driver`` is not ``INSTALL``. Components set it from ``PoolSpec.needs_device_plugin``.
        sharing: how pods share this pool's GPUs (default none); the device plugin derives the
            pool's config from it.
        slots_per_gpu: ``nvidia.com/gpu`` advertised per physical GPU (``sharing.slots_per_gpu``);
            1 without sharing.
        capacity_types: every capacity type the pool may buy, preferred first; empty means just
            ``capacity`` (a node group or agent pool has one). A Karpenter NodePool allowing Spot
            and on-demand lists both, with ``capacity`` the preferred one (Spot).
        capacity_label: the node label that carries the capacity type: ``gpupools.io/capacity-type``
            (set by gpupools on its node groups and agent pools), or ``karpenter.sh/capacity-type``
            on nodes Karpenter launches (set by Karpenter itself, not in ``labels``).
        limits: a Karpenter NodePool's ``spec.limits`` (``cpu``, ``nodes``, ``nvidia.com/gpu``);
            empty for node groups and agent pools, whose bound is ``max_size``.
        efa_interfaces: EFA interfaces on each node (EKS ``efa: true`` pools); 0 without EFA.
            The EFA device plugin serves the pools where it is above 0.
        gpu_driver: who owns the pool's driver and device plugin (``gpuPools[].gpuDriver``); default
            ``GpuDriver.INSTALL``. Not ``INSTALL`` means gpupools runs no device plugin there.
        reserved_nodes: for a Karpenter NodePool that allows ``reserved``, the nodes its reservations
            hold (``reservations[].count`` summed, ``ReservationSpec.reserved_max``); 0 otherwise
            (a node group's own ``max_size`` says it).
        auto_mode: an EKS Auto Mode NodePool (``gpupools.aws.auto_mode``): its nodes pay the Auto
            Mode fee on top of their EC2 price (``gpupools.pricing.estimate``); False otherwise.
    """

    name: str
    pool: str
    role: Role
    capacity: CapacityType
    zones: tuple[str, ...]
    instance_types: tuple[str, ...]
    min_size: int
    max_size: int
    labels: Mapping[str, str] = field(default_factory=frozen_map)
    taints: tuple[Taint, ...] = ()
    gpus_per_node: int = 0
    gpu_model: str = ""
    autoscaler_group_regex: str = ""
    needs_device_plugin: bool = True
    sharing: SharingSpec = field(default_factory=SharingSpec)
    slots_per_gpu: int = 1
    capacity_types: tuple[CapacityType, ...] = ()
    capacity_label: str = CAPACITY_TYPE_LABEL
    limits: Mapping[str, str] = field(default_factory=frozen_map)
    efa_interfaces: int = 0
    gpu_driver: GpuDriver = GpuDriver.INSTALL
    reserved_nodes: int = 0
    auto_mode: bool = False

    @property
    def gpu_slots_per_node(self) -> int:
        """Schedulable ``nvidia.com/gpu`` on one node: GPUs per node x slots per GPU. This, not the
        physical count, is what the scale-from-zero templates advertise."""
        return self.gpus_per_node * self.slots_per_gpu

    def __hash__(self) -> int:
        return hash((self.name, self.pool, self.role, self.capacity, self.zones))

    def matches_group(self, group_name: str) -> bool:
        """True if cluster-autoscaler's name for a node group matches this pool's regex."""
        return re.fullmatch(self.autoscaler_group_regex, group_name) is not None

    def to_output(self) -> dict[str, Any]:
        """The stack's ``nodePools`` entry (plain JSON-able data)."""
        return {
            "name": self.name,
            "pool": self.pool,
            "role": self.role.value,
            "capacityType": self.capacity.value,
            "zones": list(self.zones),
            "instanceTypes": list(self.instance_types),
            "minSize": self.min_size,
            "maxSize": self.max_size,
            "gpusPerNode": self.gpus_per_node,
            "gpuModel": self.gpu_model,
            "gpuSlotsPerNode": self.gpu_slots_per_node,
            "sharing": sharing_rules.describe(self.sharing),
            # Karpenter NodePools only, so the output of node groups and agent pools is unchanged.
            **({"capacityTypes": [c.value for c in self.capacity_types], "limits": dict(self.limits)} if self.limits else {}),
        }
