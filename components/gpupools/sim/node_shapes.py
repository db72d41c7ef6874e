"""The shape of a node of each of a stack's node groups, as the cloud would make it: labels, taints,
allocatable resources. Pure: no cluster, no Pulumi engine.

Where the facts come from (the same ones the stack uses, never copied literals):

* **The group**, from what the stack program registers for the cloud (the recording runtime's
  record of a ``pulumi up``): an AKS ``AgentPool`` or the ``ManagedCluster``'s inline system pool
  (``nodeLabels``, ``nodeTaints``, ``scaleSetPriority``, ``vmSize``, ``availabilityZones``), an EKS
  ``NodeGroup`` (``labels``, ``taints``, ``capacityType``, ``instanceTypes``, its subnet's zone), or a
  Karpenter ``NodePool`` (template labels and taints, requirements). These are what the cloud puts
  on the node verbatim.
* **What the cloud adds** (constants below, each with its source): AKS's reserved labels, EKS
  managed node group labels, the labels Karpenter (EKS) and Node Auto Provisioning (AKS) set.
* **Allocatable resources**, from the size catalog (``gpupools.catalog``): vCPUs, memory, GPUs; GPU
  slots are GPUs x ``sharing.slots_per_gpu`` of the pool's ``sharing`` (what the device plugin
  advertises with the pool's config); EFA interfaces from the catalog on EFA groups. Allocatable
  is the full size (the clouds reserve some CPU and memory for the system; cluster-autoscaler's
  scale-from-zero templates ignore that too). ``pods: 110`` is the kubelet default.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from gpupools import sharing as sharing_rules
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.conventions import (
    CAPACITY_TYPE_LABEL,
    EFA_HUGEPAGES_2MI,
    EFA_PRESENT_LABEL,
    EFA_RESOURCE,
    GPU_RESOURCE,
    HUGEPAGES_2MI_RESOURCE,
    KARPENTER_CAPACITY_TYPE_LABEL,
    KARPENTER_NODEPOOL_LABEL,
    POOL_LABEL,
    ROLE_LABEL,
    CapacityType,
    Taint,
    TaintEffect,
)
from gpupools.specs import StackSpec
from gpupools.testing import Run, fakes
from gpupools.testing.manifests import to_manifest

MAX_PODS = 110
"""Pods per node: the kubelet's default ``maxPods``."""

AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EKS_SUBNET = "aws:ec2/subnet:Subnet"
KARPENTER_NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"

AKS_NODE_LABELS = (
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "kubernetes.azure.com/mode",
    "kubernetes.azure.com/role",
    "kubernetes.azure.com/os-sku",
    "kubernetes.azure.com/accelerator",
)
"""Labels AKS puts on every node of an agent pool (Azure/AKS docs ``articles/aks/use-labels.md``,
"Reserved system labels"; the first two are also what cluster-autoscaler's Azure provider predicts
for a scale-from-zero template, ``cloudprovider/azure/azure_template.go``): the pool's name (twice,
the unprefixed one is legacy), ``mode`` (``system``/``user``), ``role=agent``, the OS SKU, and
``accelerator=nvidia`` on NVIDIA sizes. ``kubernetes.azure.com/scalesetpriority=spot`` and the Spot
taint come with the pool (gpupools declares both, ``conventions.AKS_SPOT_LABEL``)."""

EKS_NODE_LABELS = ("eks.amazonaws.com/nodegroup", "eks.amazonaws.com/capacityType", "eks.amazonaws.com/nodegroup-image")
"""Labels EKS puts on every managed node group node (EKS user guide ``managed-node-groups.adoc``
and cluster-autoscaler's AWS provider, which adds them to templates from DescribeNodegroup,
``cloudprovider/aws/aws_manager.go``): the node group's name, ``SPOT``/``ON_DEMAND``/``CAPACITY_BLOCK``,
the AMI (the last is not simulated: its value exists only once EKS resolves the AMI)."""

AZURE_NAP_LABELS = ("kubernetes.azure.com/mode", "kubernetes.azure.com/scalesetpriority", "karpenter.azure.com/aksnodeclass")
"""Labels Node Auto Provisioning (karpenter-provider-azure v1.14.2, ``pkg/apis/v1beta1/labels.go``)
writes besides Karpenter's own: ``mode=user``, ``scalesetpriority`` ``spot`` or ``regular`` ("regular
is never written by AKS as a label but we write it to make scheduling easier"), the node class."""

EKS_KARPENTER_LABELS = ("karpenter.k8s.aws/ec2nodeclass",)
"""Karpenter on EKS (aws/karpenter-provider-aws v1.14.1, ``pkg/apis/v1/labels.go``) labels each node
with its EC2NodeClass, besides the well-known ones Karpenter core sets."""

KARPENTER_CAPACITY = {"spot": CapacityType.SPOT, "on-demand": CapacityType.ON_DEMAND, "reserved": CapacityType.RESERVED}
EKS_CAPACITY = {"SPOT": CapacityType.SPOT, "ON_DEMAND": CapacityType.ON_DEMAND, "CAPACITY_BLOCK": CapacityType.RESERVED}


@dataclass(frozen=True)
class Resources:
    """A node's allocatable resources (and capacity: the same here)."""

    cpu: int
    memory_mib: int
    gpus: int = 0
    efa: int = 0
    arch: str = "amd64"

    def as_quantities(self) -> dict[str, str]:
        quantities = {"cpu": str(self.cpu), "memory": f"{self.memory_mib}Mi", "pods": str(MAX_PODS), "ephemeral-storage": "100Gi"}
        if self.gpus:
            quantities[GPU_RESOURCE] = str(self.gpus)
        if self.efa:
            # An EFA node also has the huge pages the EFA driver pre-allocates (EKS user guide,
            # ml/node-efa.adoc: "pre-allocate 5128 2MiB Huge Pages, which you can request as resources").
            quantities[EFA_RESOURCE] = str(self.efa)
            quantities[HUGEPAGES_2MI_RESOURCE] = f"{EFA_HUGEPAGES_2MI * 2}Mi"
        return quantities


@dataclass(frozen=True)
class NodeGroup:
    """One group of identical nodes: an AKS agent pool, an EKS node group, or a Karpenter NodePool
    with one capacity type (a NodePool allowing Spot and on-demand is two of these).

    Attributes:
        name: the cloud's name for the group (agent pool, node group, NodePool).
        pool: the gpupools pool (``gpupools.io/pool``), ``system`` for the system pool.
        role: ``gpupools.io/role`` (``system``, ``gpu``, ``cpu``).
        capacity: what a node of this group is bought as.
        provider: ``aks``, ``eks``, ``karpenter-eks`` or ``karpenter-aks`` (node names and cloud labels).
        zones: the zones its nodes spread over, round-robin, in the Kubernetes label form.
        region: ``topology.kubernetes.io/region``.
        instance_type: the size every node of the group gets (the first of an EKS group's types:
            they share one shape, which cluster-autoscaler's template is built from too).
        labels: every label but the per-node ones (hostname, zone).
        taints: every taint.
        resources: allocatable resources.
        min_size: the group's minimum node count as the stack registers it (AKS ``minCount``, EKS
            ``scalingConfig.minSize``; 0 for Karpenter NodePools, which have none).
        max_size: its maximum (AKS ``maxCount``, EKS ``scalingConfig.maxSize``; 0 for NodePools).
    """

    name: str
    pool: str
    role: str
    capacity: CapacityType
    provider: str
    zones: tuple[str, ...]
    region: str
    instance_type: str
    resources: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    min_size: int = 0
    max_size: int = 0


def _taint(text: str) -> Taint:
    """``key=value:Effect`` (AKS ``nodeTaints``) -> Taint."""
    key_value, _, effect = text.rpartition(":")
    key, _, value = key_value.partition("=")
    return Taint(key=key, value=value, effect=TaintEffect(effect))


def _eks_taint(raw: Mapping[str, Any]) -> Taint:
    effect = {e.eks: e for e in TaintEffect}[str(raw["effect"])]
    return Taint(key=str(raw["key"]), value=str(raw.get("value", "")), effect=effect)


def resources_of(instance_type: str, gpu_slots_per_gpu: int = 1, efa: bool = False) -> Resources:
    """Allocatable resources of a size from the catalog; KeyError naming the size when no catalog has it."""
    if instance_type in INSTANCE_TYPES:
        ec2 = INSTANCE_TYPES[instance_type]
        return Resources(
            cpu=ec2.vcpus,
            memory_mib=ec2.memory_mib,
            gpus=ec2.gpus * gpu_slots_per_gpu,
            efa=ec2.efa_interfaces if efa else 0,
            arch="arm64" if ec2.arch == "arm64" else "amd64",
        )
    if instance_type in GPU_SIZES:
        gpu = GPU_SIZES[instance_type]
        return Resources(cpu=gpu.vcpus, memory_mib=gpu.memory_gib * 1024, gpus=gpu.gpus * gpu_slots_per_gpu)
    if instance_type in CPU_SIZES:
        cpu = CPU_SIZES[instance_type]
        return Resources(cpu=cpu.vcpus, memory_mib=cpu.memory_gib * 1024, arch="arm64" if cpu.arch == "arm64" else "amd64")
    raise KeyError(f"{instance_type} is in no size catalog (gpupools.catalog)")


def _slots(spec: StackSpec, pool: str) -> int:
    for candidate in spec.pools:
        if candidate.name == pool:
            return sharing_rules.slots_per_gpu(candidate.sharing)
    return 1


def _is_nvidia(instance_type: str) -> bool:
    return GPU_SIZES.get(instance_type) is not None or getattr(INSTANCE_TYPES.get(instance_type), "gpus", 0) > 0


def aks_groups(run: Run, spec: StackSpec) -> list[NodeGroup]:
    """The inline system pool and every standalone agent pool of an AKS stack."""
    clusters = run.of_type(AKS_CLUSTER)
    if not clusters:
        return []
    location = str(clusters[0].inputs.get("location", ""))
    profiles = [(dict(p), "system") for p in clusters[0].inputs.get("agentPoolProfiles") or []]
    profiles += [(dict(r.inputs), "user") for r in run.of_type(AKS_AGENT_POOL)]
    groups = []
    for profile, default_mode in profiles:
        name = str(profile.get("agentPoolName") or profile.get("name"))
        size = str(profile["vmSize"])
        labels = dict(profile.get("nodeLabels") or {})
        pool = labels.get(POOL_LABEL, name)
        mode = str(profile.get("mode") or default_mode).lower()
        arch = resources_of(size).arch
        cloud_labels = {
            "kubernetes.azure.com/agentpool": name,
            "agentpool": name,
            "kubernetes.azure.com/mode": mode,
            "kubernetes.azure.com/role": "agent",
            "kubernetes.azure.com/os-sku": str(profile.get("osSKU") or "Ubuntu"),
            "node.kubernetes.io/instance-type": size,
            "beta.kubernetes.io/instance-type": size,
            "topology.kubernetes.io/region": location,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch,
        }
        if _is_nvidia(size):
            cloud_labels["kubernetes.azure.com/accelerator"] = "nvidia"
        capacity = CapacityType(
            labels.get(CAPACITY_TYPE_LABEL, "spot" if profile.get("scaleSetPriority") == "Spot" else "on-demand")
        )
        zones = tuple(f"{location}-{z}" for z in profile.get("availabilityZones") or []) or (f"{location}-0",)
        groups.append(
            NodeGroup(
                name=name,
                pool=pool,
                role=labels.get(ROLE_LABEL, "system"),
                capacity=capacity,
                provider="aks",
                zones=zones,
                region=location,
                instance_type=size,
                labels={**cloud_labels, **labels},
                taints=tuple(_taint(t) for t in profile.get("nodeTaints") or []),
                resources=resources_of(size, _slots(spec, pool)),
                min_size=int(profile.get("minCount") or 0),
                max_size=int(profile.get("maxCount") or profile.get("count") or 0),
            )
        )
    return groups


def _subnet_zones(run: Run) -> dict[str, str]:
    """Subnet ID -> zone, with the IDs the recording runtime gave the subnets (its own fakes)."""
    make_id = fakes.OUTPUTS[EKS_SUBNET]
    return {str(make_id(r.name, r.inputs)["__id"]): str(r.inputs.get("availabilityZone", "")) for r in run.of_type(EKS_SUBNET)}


def _launch_template_types(run: Run) -> dict[str, str]:
    """Launch template ID -> its instance type, with the IDs the recording runtime gave the templates
    (its own fakes). A Capacity Block group names its type there only: EKS rejects it on the group
    (EKS user guide ``ml/capacity-blocks-mng``; ``gpupools.aws.reservations``)."""
    make_id = fakes.OUTPUTS[EKS_LAUNCH_TEMPLATE]
    return {
        str(make_id(r.name, r.inputs)["__id"]): str(r.inputs["instanceType"])
        for r in run.of_type(EKS_LAUNCH_TEMPLATE)
        if r.inputs.get("instanceType")
    }


def eks_groups(run: Run, spec: StackSpec, region: str) -> list[NodeGroup]:
    """Every managed node group of an EKS stack (the system group included)."""
    zones_of = _subnet_zones(run)
    template_types = _launch_template_types(run)
    groups = []
    for registration in run.of_type(EKS_NODE_GROUP):
        inputs = registration.inputs
        name = str(inputs.get("nodeGroupName") or registration.name)
        template_id = str((inputs.get("launchTemplate") or {}).get("id", ""))
        types = [str(t) for t in inputs.get("instanceTypes") or []] or [template_types[template_id]]
        labels = {str(k): str(v) for k, v in (inputs.get("labels") or {}).items()}
        pool = labels.get(POOL_LABEL, name)
        capacity_type = str(inputs.get("capacityType") or "ON_DEMAND")
        resources = resources_of(types[0], _slots(spec, pool), efa=labels.get(EFA_PRESENT_LABEL) == "true")
        zones = tuple(sorted({zones_of.get(str(s), "") for s in inputs.get("subnetIds") or []} - {""})) or (f"{region}a",)
        cloud_labels = {
            "eks.amazonaws.com/nodegroup": name,
            "eks.amazonaws.com/capacityType": capacity_type,
            # eks.amazonaws.com/nodegroup-image (the AMI ID) is left off: EKS resolves it at deploy
            # time from amiType and the release version, the stack holds no such fact, and nothing
            # gpupools registers selects on it.
            "node.kubernetes.io/instance-type": types[0],
            "beta.kubernetes.io/instance-type": types[0],
            "topology.kubernetes.io/region": region,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": resources.arch,
        }
        groups.append(
            NodeGroup(
                name=name,
                pool=pool,
                role=labels.get(ROLE_LABEL, "system"),
                capacity=CapacityType(
                    labels.get(CAPACITY_TYPE_LABEL, EKS_CAPACITY.get(capacity_type, CapacityType.ON_DEMAND).value)
                ),
                provider="eks",
                zones=zones,
                region=region,
                instance_type=types[0],
                labels={**cloud_labels, **labels},
                taints=tuple(_eks_taint(t) for t in inputs.get("taints") or []),
                resources=resources,
                min_size=int((inputs.get("scalingConfig") or {}).get("minSize") or 0),
                max_size=int((inputs.get("scalingConfig") or {}).get("maxSize") or 0),
            )
        )
    return groups


def _requirement(requirements: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    for requirement in requirements:
        if requirement.get("key") == key and requirement.get("operator") == "In":
            return [str(v) for v in requirement.get("values") or []]
    return []


def karpenter_groups(run: Run, spec: StackSpec, region: str, cloud: str) -> list[NodeGroup]:
    """One group per (NodePool, allowed capacity type) of a Karpenter (EKS) or NAP (AKS) stack."""
    groups = []
    for registration in run.of_type(KARPENTER_NODEPOOL):
        nodepool = to_manifest(registration, redact=False)
        name = nodepool["metadata"]["name"]
        template = nodepool["spec"]["template"]
        requirements = template["spec"].get("requirements") or []
        template_labels = {str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()}
        pool = template_labels.get(POOL_LABEL, name)
        size = _requirement(requirements, "node.kubernetes.io/instance-type")[0]
        resources = resources_of(size, _slots(spec, pool))
        # A requirement with one allowed value ends up as that label on the node: Karpenter resolves
        # custom keys into NodeClaim labels (sigs.k8s.io/karpenter v1.14.1,
        # pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go, resolveCustomLabelsFromRequirements)
        # and sets well-known ones (instance type, zone, capacity type, the providers' SKU labels)
        # from the instance it launched, which must satisfy the requirement.
        single = {
            str(r["key"]): str(r["values"][0])
            for r in requirements
            if r.get("operator") == "In" and len(r.get("values") or []) == 1
        }
        node_class = str(template["spec"]["nodeClassRef"]["name"])
        for capacity in _requirement(requirements, KARPENTER_CAPACITY_TYPE_LABEL) or ["on-demand"]:
            labels = {
                **single,
                KARPENTER_NODEPOOL_LABEL: name,
                KARPENTER_CAPACITY_TYPE_LABEL: capacity,
                "karpenter.sh/registered": "true",
                "karpenter.sh/initialized": "true",
                "node.kubernetes.io/instance-type": size,
                "topology.kubernetes.io/region": region,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": resources.arch,
            }
            if cloud == "azure":
                labels.update(
                    {
                        "kubernetes.azure.com/mode": "user",
                        "kubernetes.azure.com/scalesetpriority": "spot" if capacity == "spot" else "regular",
                        "karpenter.azure.com/aksnodeclass": node_class,
                    }
                )
                if _is_nvidia(size):
                    labels["kubernetes.azure.com/accelerator"] = "nvidia"
            else:
                labels["karpenter.k8s.aws/ec2nodeclass"] = node_class
            labels.update(template_labels)
            groups.append(
                NodeGroup(
                    name=name,
                    pool=pool,
                    role=template_labels.get(ROLE_LABEL, "gpu"),
                    capacity=KARPENTER_CAPACITY[capacity],
                    provider=f"karpenter-{'aks' if cloud == 'azure' else 'eks'}",
                    zones=tuple(_requirement(requirements, "topology.kubernetes.io/zone")) or (f"{region}-1",),
                    region=region,
                    instance_type=size,
                    labels=labels,
                    taints=tuple(
                        Taint(str(t["key"]), str(t.get("value", "")), TaintEffect(str(t["effect"])))
                        for t in template["spec"].get("taints") or []
                    ),
                    resources=resources,
                )
            )
    return groups


def node_groups(run: Run, spec: StackSpec, region: str) -> list[NodeGroup]:
    """Every node group of the stack's run, cloud groups first, then Karpenter NodePools."""
    groups = aks_groups(run, spec) if spec.cloud.value == "azure" else eks_groups(run, spec, region)
    return groups + karpenter_groups(run, spec, region, spec.cloud.value)


def groups_of(groups: Iterable[NodeGroup], pool: str, capacity: CapacityType | None = None) -> list[NodeGroup]:
    """The groups of ``pool`` with ``capacity`` (None: the pool's first capacity, in buying order
    reserved, Spot, on-demand)."""
    of_pool = [g for g in groups if g.pool == pool]
    if capacity is None and of_pool:
        order = [CapacityType.RESERVED, CapacityType.SPOT, CapacityType.ON_DEMAND]
        capacity = min((g.capacity for g in of_pool), key=order.index)
    return [g for g in of_pool if g.capacity is capacity]


def node_name(group: NodeGroup, index: int) -> str:
    """A node name of the form the cloud gives it, stable for (group, index): AKS agent pools
    ``aks-<pool>-<8 digits>-vmss<6 digits>`` (the scale set's instance), Node Auto Provisioning
    ``aks-<nodepool>-<5 characters>``, EKS (node groups and Karpenter) the instance's private DNS
    name ``ip-<a>-<b>-<c>-<d>.<region>.compute.internal``."""
    digest = hash_text(f"{group.provider}/{group.name}/{group.capacity.value}")
    if group.provider == "aks":
        return f"aks-{group.name}-{digest % 10**8:08d}-vmss{index:06d}"
    if group.provider == "karpenter-aks":
        suffix = "".join(
            "abcdefghijklmnopqrstuvwxyz0123456789"[(hash_text(f"{group.name}/{group.capacity.value}/{index}") >> (6 * i)) % 36]
            for i in range(5)
        )
        return f"aks-{group.name}-{suffix}"
    return f"ip-10-{digest % 200 + 10}-{index // 250}-{index % 250 + 4}.{group.region}.compute.internal"


def hash_text(text: str) -> int:
    """A stable (process-independent) integer hash of ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def node_manifest(group: NodeGroup, index: int, kwok_annotation: tuple[str, str]) -> dict[str, Any]:
    """The Node object of node ``index`` of ``group``: labels, taints and allocatable as the cloud's,
    plus the annotation that hands it to KWOK."""
    name = node_name(group, index)
    zone = group.zones[index % len(group.zones)]
    quantities = group.resources.as_quantities()
    labels = {**group.labels, "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    if group.provider == "aks":
        labels["failure-domain.beta.kubernetes.io/zone"] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": dict(sorted(labels.items())),
            "annotations": {kwok_annotation[0]: kwok_annotation[1]},
        },
        "spec": {
            "providerID": f"kwok://{name}",
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in group.taints],
        },
        "status": {"allocatable": quantities, "capacity": quantities},
    }


def round_robin(groups: Sequence[NodeGroup], count: int) -> list[NodeGroup]:
    """``count`` picks spread round-robin over ``groups`` (an EKS pool has one group per zone: its
    nodes spread over the zones, as the autoscaler's zone balancing would spread them)."""
    return list(itertools.islice(itertools.cycle(groups), count))
