"""What the pools can hold at max, in the units Kueue counts: the quota of every flavour.

A Kueue ClusterQueue admits a workload only while the sum of what admitted workloads request stays
within its ``nominalQuota`` per flavour and resource ("``nominalQuota`` is the quantity of this resource
that is available for a ClusterQueue at a specific time", kubernetes-sigs/kueue v0.19.2
``site/content/en/docs/concepts/cluster_queue.md``).
So the quota of a flavour is what its nodes hold when the flavour's pools are at their maximum:

* ``nvidia.com/gpu``: nodes at max x **GPU slots** per node (``NodePoolInfo.gpu_slots_per_node``:
  physical GPUs x ``sharing`` replicas), the unit pods request on a shared pool;
* ``cpu``: nodes at max x vCPUs, ``memory``: nodes at max x memory (MiB), from the size catalogs
  (``gpupools.catalog``). A pool's types share one shape; where they do not, the smallest of them
  counts, so the quota never promises more than every node of the pool has;
* on EKS ``efa: true`` pools, ``vpc.amazonaws.com/efa``: nodes at max x EFA interfaces, and
  ``hugepages-2Mi``: nodes at max x the huge pages the EFA driver pre-allocates
  (``conventions.EFA_HUGEPAGES_2MI``), the two resources an EFA job requests beside its GPUs. Kueue
  admits a workload only if every resource it requests is covered ("resource vpc.amazonaws.com/efa
  unavailable in ClusterQueue" otherwise, the Kueue scheduler's flavour assignment), so a queue of
  an EFA stack covers both; every other flavour has 0 of them.

"At max" is the fleet's **ceiling** (``gpupools.capacity``: every group at its max at once, a
Karpenter NodePool's limit once), node for node: ``group_quotas`` takes each group's nodes from
``capacity.group_nodes``, the function the synth table, the diff and the budget take theirs from.
So the ``nvidia.com/gpu`` quotas add up to the ceiling's GPU slots (``tests/test_capacity.py``).

Node capacity, not allocatable: the kubelet and system daemons take a slice of every node, which
the catalogs do not know per image; the scheduler has the last word on a node, and with the
ProvisioningRequest check the autoscaler confirms the nodes before a workload is admitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from gpupools.capacity import Scenario, group_nodes
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.catalog.sizes import size_facts
from gpupools.conventions import EFA_HUGEPAGES_2MI, EFA_RESOURCE, GPU_RESOURCE, HUGEPAGES_2MI_RESOURCE, Role
from gpupools.errors import ConfigError
from gpupools.pricing.estimate import CapacityGroup
from gpupools.quantity import canonical

CPU = "cpu"
MEMORY = "memory"
RESOURCES = (CPU, MEMORY, GPU_RESOURCE)
"""The resources a flavour's quota covers, in ``coveredResources`` order."""

EFA_RESOURCES = (EFA_RESOURCE, HUGEPAGES_2MI_RESOURCE)
"""Covered as well when a flavour has EFA nodes (module docstring), after ``RESOURCES``."""

EFA_HUGEPAGES_2MI_MIB = EFA_HUGEPAGES_2MI * 2
"""The EFA driver's huge pages of one node, in MiB (2 MiB each)."""


def memory_mib(size: str) -> int | None:
    """Memory of an EC2 instance type or Azure VM size in MiB; ``None`` if no catalog knows it."""
    if size in INSTANCE_TYPES:
        return INSTANCE_TYPES[size].memory_mib
    for catalog in (GPU_SIZES, CPU_SIZES):
        if size in catalog:
            return catalog[size].memory_gib * 1024
    return None


@dataclass(frozen=True)
class Quota:
    """Resources in Kueue's units: vCPUs, MiB of memory, GPU slots, EFA interfaces, MiB of 2 MiB
    huge pages."""

    cpu: int = 0
    memory_mib: int = 0
    gpus: int = 0
    efa: int = 0
    hugepages_2mi_mib: int = 0

    def _values(self) -> tuple[int, int, int, int, int]:
        return (self.cpu, self.memory_mib, self.gpus, self.efa, self.hugepages_2mi_mib)

    def __add__(self, other: Quota) -> Quota:
        return Quota(*(a + b for a, b in zip(self._values(), other._values(), strict=True)))

    def __sub__(self, other: Quota) -> Quota:
        return Quota(*(a - b for a, b in zip(self._values(), other._values(), strict=True)))

    def times(self, nodes: int) -> Quota:
        return Quota(*(a * nodes for a in self._values()))

    def share(self, part: int, whole: int) -> Quota:
        """``part``/``whole`` of every resource, rounded down (a team's share of a flavour)."""
        return Quota(*(a * part // whole for a in self._values()))

    def at_most(self, other: Quota) -> Quota:
        """Every resource capped at ``other``'s."""
        return Quota(*(min(a, b) for a, b in zip(self._values(), other._values(), strict=True)))

    def quantities(self, resources: Sequence[str] = RESOURCES) -> dict[str, str]:
        """Kubernetes quantities per resource name, in the canonical form the API server returns
        (``gpupools.quantity``: Kueue's controller rewrites any other when it adds its finalizer): ``{"cpu": "48",
        "memory": "192Gi", ...}`` (196,608 MiB), ``1536Mi`` stays, ``0Mi`` is ``0``, ``1000`` CPUs ``1k``."""
        values = {
            CPU: f"{self.cpu}",
            MEMORY: f"{self.memory_mib}Mi",
            GPU_RESOURCE: f"{self.gpus}",
            EFA_RESOURCE: f"{self.efa}",
            HUGEPAGES_2MI_RESOURCE: f"{self.hugepages_2mi_mib}Mi",
        }
        return {name: canonical(values[name]) for name in resources}


def total(quotas: Iterable[Quota]) -> Quota:
    result = Quota()
    for quota in quotas:
        result = result + quota
    return result


def node_quota(instance_types: Sequence[str], gpu_slots_per_node: int, path: str, efa_interfaces: int = 0) -> Quota:
    """One node of a pool: the smallest vCPU count and memory among its types, its GPU slots and,
    on an EFA pool, its EFA interfaces and the EFA driver's huge pages.

    Raises:
        ConfigError: a type no catalog knows (its capacity cannot be stated).
    """
    vcpus, memory = [], []
    for size in instance_types:
        facts, mib = size_facts(size), memory_mib(size)
        if facts is None or mib is None:
            raise ConfigError(path, "must be sizes the catalog knows, so the queue's quota is the pool's real capacity", size)
        vcpus.append(facts[1])
        memory.append(mib)
    if not vcpus:
        raise ConfigError(path, "must list at least one instance type", list(instance_types))
    hugepages = EFA_HUGEPAGES_2MI_MIB if efa_interfaces else 0
    return Quota(cpu=min(vcpus), memory_mib=min(memory), gpus=gpu_slots_per_node, efa=efa_interfaces, hugepages_2mi_mib=hugepages)


def group_quotas(
    groups: Sequence[CapacityGroup],
    slots_per_node: Mapping[str, int],
    path: str = "queueing",
    efa_per_node: Mapping[str, int] | None = None,
) -> dict[tuple[str, str], Quota]:
    """Per ``(pool, capacity type value)``, what its nodes hold at max; groups that share another
    group's limit (``CapacityGroup.shares_limit``) and the system pool are left out.

    Args:
        groups: capacity groups (``groups_of_pools`` or ``groups_of_spec``).
        slots_per_node: GPU slots per node per pool name (0 or absent for CPU pools).
        efa_per_node: EFA interfaces per node per pool name (0 or absent without EFA); default none.
    """
    efa = efa_per_node or {}
    result: dict[tuple[str, str], Quota] = {}
    for group, nodes in zip(groups, group_nodes(groups, Scenario.CEILING), strict=True):
        if group.role is Role.SYSTEM or group.shares_limit:
            continue
        node = node_quota(
            group.instance_types, slots_per_node.get(group.pool, 0), f"{path}.{group.pool}.instanceTypes", efa.get(group.pool, 0)
        )
        key = (group.pool, group.capacity.value)
        result[key] = result.get(key, Quota()) + node.times(nodes)
    return result


def pool_quotas(
    groups: Sequence[CapacityGroup],
    slots_per_node: Mapping[str, int],
    path: str = "queueing",
    efa_per_node: Mapping[str, int] | None = None,
) -> dict[str, Quota]:
    """Per pool name, what all its capacity groups hold at max (``group_quotas`` summed per pool)."""
    result: dict[str, Quota] = {}
    for (pool, _), quota in group_quotas(groups, slots_per_node, path, efa_per_node).items():
        result[pool] = result.get(pool, Quota()) + quota
    return result


def ceiling_nodes(groups: Sequence[CapacityGroup]) -> int:
    """Nodes of every non-system group in the fleet's ceiling (``gpupools.capacity``)."""
    return sum(n for g, n in zip(groups, group_nodes(groups, Scenario.CEILING), strict=True) if g.role is not Role.SYSTEM)
