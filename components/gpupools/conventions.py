"""Every taint and label key/value that gpupools writes, in one place.

Anything that tolerates or selects these (device plugin, smoke test, workload helpers, priority
expander, cluster-autoscaler node-template tags) derives from this module and from the pools that
were actually created, never from copied literals.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class TaintEffect(str, Enum):
    """Kubernetes taint effects, in Kubernetes spelling (EKS's API spells them ``NO_SCHEDULE``)."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"

    @property
    def eks(self) -> str:
        """The EKS API spelling (``NO_SCHEDULE``, ``PREFER_NO_SCHEDULE``, ``NO_EXECUTE``)."""
        return {
            TaintEffect.NO_SCHEDULE: "NO_SCHEDULE",
            TaintEffect.PREFER_NO_SCHEDULE: "PREFER_NO_SCHEDULE",
            TaintEffect.NO_EXECUTE: "NO_EXECUTE",
        }[self]


class Role(str, Enum):
    """What a pool is for: the system pool hosts cluster add-ons, GPU pools host GPU workloads,
    CPU pools host the CPU work around them (data preparation, pipeline controllers, front-ends)."""

    SYSTEM = "system"
    GPU = "gpu"
    CPU = "cpu"


class CapacityType(str, Enum):
    """How a pool's nodes are bought; one cloud-neutral spelling for workloads to select on."""

    SPOT = "spot"
    ON_DEMAND = "on-demand"
    RESERVED = "reserved"
    """Capacity already paid for (an AWS ODCR or Capacity Block, an Azure Capacity Reservation Group),
    bought first; the same value as Karpenter's ``karpenter.sh/capacity-type=reserved``."""


@dataclass(frozen=True, order=True)
class Taint:
    """A Kubernetes taint. Every taint gpupools writes has a value (cluster-autoscaler on AWS
    ignores taints without one when it builds a scale-from-zero template)."""

    key: str
    value: str
    effect: TaintEffect

    def __str__(self) -> str:
        """``key=value:Effect``, the form AKS ``nodeTaints`` take."""
        return f"{self.key}={self.value}:{self.effect.value}"

    def toleration(self) -> dict[str, str]:
        """The exact toleration (operator ``Equal``) for this taint, as a pod-spec dict."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect.value}


LABEL_PREFIX = "gpupools.io"
"""The label prefix this project owns."""

POOL_LABEL = f"{LABEL_PREFIX}/pool"
"""``gpupools.io/pool=<pool name>`` on every pool."""

ROLE_LABEL = f"{LABEL_PREFIX}/role"
"""``gpupools.io/role=system|gpu|cpu`` on every pool."""

CAPACITY_TYPE_LABEL = f"{LABEL_PREFIX}/capacity-type"
"""``gpupools.io/capacity-type=spot|on-demand`` on every pool: one cloud-neutral key for workloads."""

DEVICE_PLUGIN_LABEL = f"{LABEL_PREFIX}/device-plugin"
EXTERNAL_DEVICE_PLUGIN = "external"
"""``gpupools.io/device-plugin=external`` on every GPU pool whose nodes get their NVIDIA device plugin
from elsewhere (a Bottlerocket image, the GPU Operator of a ``gpuDriver: none`` pool): gpupools' plugin
selects GPU nodes by label and excludes these, so its pod template never lists pools
(``gpupools.kubernetes.device_plugin``). Absent on every other pool."""

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
"""``nvidia.com/gpu.present=true`` on every GPU pool, so NVIDIA's own charts schedule without NFD."""

EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"
"""``vpc.amazonaws.com/efa.present=true`` on every EKS node group of an ``efa: true`` pool: the EFA
device plugin selects it (the label terraform-aws-eks puts on its EFA node groups,
``tests/eks-managed-node-group/main.tf``)."""

EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""The extended resource the AWS EFA device plugin advertises, one per EFA interface."""

HUGEPAGES_2MI_RESOURCE = "hugepages-2Mi"
"""2 MiB huge pages, which an EFA job requests beside ``vpc.amazonaws.com/efa``."""

EFA_HUGEPAGES_2MI = 5128
"""2 MiB huge pages the EFA driver pre-allocates on every EFA instance (EKS user guide
``ml/node-efa.adoc``: "Amazon EC2 instances with the EFA driver installed pre-allocate 5128 2MiB Huge
Pages, which you can request as resources"; its NCCL example requests ``hugepages-2Mi: 5120Mi``)."""

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource the NVIDIA device plugin advertises. Every sharing mode gpupools configures
keeps this name (``renameByDefault: false``; MIG strategy ``single``), so pods request it as usual
and cluster-autoscaler's GPU handling, which knows only this name, keeps working."""

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""The node label the device plugin's config-manager reads to pick a named config from its
ConfigMap (NVIDIA/k8s-device-plugin ``cmd/config-manager/main.go``, ``DefaultConfigLabel``). gpupools
puts it on every GPU pool with ``sharing``, as a label of the pool itself, so it is on the node
before the plugin starts; nodes without it get the default config."""

GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect=TaintEffect.NO_SCHEDULE)
"""On every GPU pool, spot and on-demand. The key is the extended resource's name, so the
ExtendedResourceToleration admission plugin (on by default on EKS) adds the toleration to any pod
that requests ``nvidia.com/gpu``; value ``present`` matches GKE and NVIDIA's own defaults."""

AKS_SPOT_TAINT = Taint(key="kubernetes.azure.com/scalesetpriority", value="spot", effect=TaintEffect.NO_SCHEDULE)
"""Added by AKS to every Spot pool (a system taint that cannot be removed). Declared on our Spot
pools so a ``pulumi refresh`` shows no diff, and tolerated by the device plugin."""

AKS_SPOT_LABEL = ("kubernetes.azure.com/scalesetpriority", "spot")
"""Added by AKS to every Spot pool; declared for the same reason as the taint."""

AKS_SYSTEM_TAINT = Taint(key="CriticalAddonsOnly", value="true", effect=TaintEffect.NO_SCHEDULE)
"""On the AKS system pool: keeps workloads off it. The only NoSchedule taint AKS allows there."""

EKS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
"""cluster-autoscaler's AWS GPU label (``GPULabel``): without it the autoscaler treats a node whose
device plugin has not yet advertised GPUs as ready and over-scales."""

EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"
"""Added by EKS to managed node group nodes (``SPOT`` / ``ON_DEMAND``)."""

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""Kueue's label that submits a Job (or JobSet, RayJob, ...) to a LocalQueue (Kueue
``concepts/local_queue.md``); ``gpu_job`` and ``gang_job`` write it."""

KARPENTER_CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
"""Set by Karpenter (and AKS Node Auto Provisioning) on every node it launches, ``spot`` or
``on-demand`` (also ``reserved``, which gpupools never allows): the same values as
``gpupools.io/capacity-type``. A Karpenter NodePool that allows both capacity types cannot carry a
static capacity label, so under Karpenter this is the capacity key workloads select on
(aws/karpenter-provider-aws ``concepts/scheduling.md``, "Well-Known Labels")."""

KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
"""Set by Karpenter on every node it launches (the NodePool's name). Karpenter's own chart keeps
the controller off such nodes with ``karpenter.sh/nodepool DoesNotExist``."""

DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
"""Pod annotation: Karpenter does not voluntarily disrupt the pod's node while it runs ("true"), or for
a duration after it starts ("30m"); aws/karpenter-provider-aws v1.14.1 ``concepts/disruption.md``,
"Pod-Level Controls". Set through ``scheduling.do_not_disrupt()``."""

CA_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template"
"""Prefix of the cluster-autoscaler scale-from-zero ASG tags on EKS."""

AKS_CA_RESOURCES_TAG_PREFIX = "k8s.io_cluster-autoscaler_node-template_resources_"
"""Prefix of cluster-autoscaler's scale-set resource tags on Azure (``nodeResourcesTagName`` in
kubernetes/autoscaler ``cluster-autoscaler/cloudprovider/azure/azure_util.go``; Azure tag names
cannot hold ``/``, so the resource name's ``/`` is written ``_``)."""

RESERVED_LABEL_PREFIXES = (
    "kubernetes.io/",
    "k8s.io/",
    "kubernetes.azure.com/",
    "eks.amazonaws.com/",
    f"{LABEL_PREFIX}/",
)
"""Label (and taint) key prefixes users may not set on pools: the first four belong to Kubernetes
and the clouds (AKS rejects them; EKS rejects ``kubernetes.io``/``k8s.io``/``eks.amazonaws.com``),
the last one is ours and written from config. The ``node-role.kubernetes.io`` and
``node-restriction.kubernetes.io`` subdomains fall under ``kubernetes.io/``."""

RESERVED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "kubernetes.azure.com", "eks.amazonaws.com")
"""Domains (and their subdomains) reserved like the prefixes above."""


def pool_labels(pool: str, role: Role, capacity: CapacityType) -> dict[str, str]:
    """The labels every pool carries, and for GPU pools the NVIDIA presence label."""
    labels = {
        POOL_LABEL: pool,
        ROLE_LABEL: role.value,
        CAPACITY_TYPE_LABEL: capacity.value,
    }
    if role is Role.GPU:
        labels[GPU_PRESENT_LABEL] = "true"
    return labels


def device_plugin_labels(is_gpu: bool, needs_device_plugin: bool) -> dict[str, str]:
    """``{DEVICE_PLUGIN_LABEL: EXTERNAL_DEVICE_PLUGIN}`` for a GPU pool gpupools' device plugin does not
    serve, else nothing."""
    return {DEVICE_PLUGIN_LABEL: EXTERNAL_DEVICE_PLUGIN} if is_gpu and not needs_device_plugin else {}


def is_reserved_key(key: str) -> bool:
    """True if a label or taint key uses a prefix gpupools or the platforms reserve."""
    prefix, _, _ = key.rpartition("/")
    if not prefix:
        return False
    if key.startswith(RESERVED_LABEL_PREFIXES):
        return True
    return any(prefix == d or prefix.endswith("." + d) for d in RESERVED_LABEL_DOMAINS)
