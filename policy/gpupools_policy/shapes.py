"""Reading node pools, taints and tolerations out of resource properties, as the engine sends them.

Pure functions over plain data: a resource is its type token and its properties (engine camelCase
keys, ``{"vmSize": ..., "nodeTaints": [...]}``). Nothing here imports ``pulumi_policy``; the
adapters in ``gpupools_policy.pack`` turn the SDK's argument objects into these shapes.

During ``pulumi preview`` a property computed from another resource's output is *unknown*. The
adapters replace such values with :data:`UNKNOWN`; every reader here treats an unknown value as
"cannot tell" and never as a violation (the engine runs the policies again during ``pulumi up``,
when the values are known).

Resource shapes understood:

- ``azure-native:containerservice:AgentPool`` (any API version): one pool.
- ``azure-native:containerservice:ManagedCluster`` (any API version): one pool per entry of
  ``agentPoolProfiles`` (the inline pools, typically the System pool).
- ``aws:eks/nodeGroup:NodeGroup``: one managed node group (also the ones ``pulumi_eks`` creates).
- ``kubernetes:karpenter.sh/v1:NodePool`` (EKS Karpenter, AKS NAP): ``nodepool_pool`` reads one for
  the device-plugin rule (its template's labels and taints); the pool rules written for autoscaled
  groups (counts, sizes, Spot siblings) do not apply to it, so ``pools`` leaves it out.
- ``aws:ec2/launchTemplate:LaunchTemplate`` and ``kubernetes:apps/v1:DaemonSet`` are read by the
  rules directly.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import GPU_SIZES, RETIRED_SIZES
from gpupools.conventions import (
    AKS_SPOT_TAINT,
    GPU_RESOURCE,
    GPU_TAINT,
    POOL_LABEL,
    Taint,
    TaintEffect,
)


class _Unknown:
    """The type of :data:`UNKNOWN`."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown during preview>"


UNKNOWN: Any = _Unknown()
"""A property value that is not known yet (it depends on another resource's output)."""


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


AKS_AGENT_POOL = re.compile(r"^azure-native:containerservice(?:/v[0-9A-Za-z]+)?:AgentPool$")
AKS_CLUSTER = re.compile(r"^azure-native:containerservice(?:/v[0-9A-Za-z]+)?:ManagedCluster$")
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"

AZURE_GPU_FAMILY = re.compile(r"^Standard_N", re.IGNORECASE)
"""Azure's N family is the GPU family (NC, ND, NV, NG): a size the catalog does not list yet is
still recognised as a GPU size by its name."""

AWS_GPU_FAMILY = re.compile(r"^(?:g|gr|p)\d+[a-z-]*\.", re.IGNORECASE)
"""EC2's accelerated families with GPUs (``g4dn``, ``g5``, ``g6e``, ``gr6``, ``p4d``, ``p5`` ...):
used for instance types the catalog does not list."""

EKS_GPU_AMI = re.compile(r"(?:NVIDIA|_GPU)", re.IGNORECASE)
"""EKS AMI types that carry the NVIDIA driver: ``AL2023_x86_64_NVIDIA``,
``BOTTLEROCKET_x86_64_NVIDIA``, ``BOTTLEROCKET_ARM_64_NVIDIA`` and the older ``AL2_x86_64_GPU``."""

EKS_AMI_WITH_DEVICE_PLUGIN = re.compile(r"^BOTTLEROCKET_.*NVIDIA$", re.IGNORECASE)
"""Bottlerocket's NVIDIA variants run their own device plugin, so no DaemonSet needs to land there."""

AKS_GPU_DRIVER_NONE = "None"
"""AKS ``gpuProfile.driver`` of a pool whose driver (and so device plugin) the user brings: "AKS
installs no GPU software components: no driver, no device plugin, and no metrics exporter"
(azure-aks-docs ``articles/aks/aks-managed-gpu-nodes.md``, "Bring your own GPU driver")."""

EFFECTS_BY_SPELLING: dict[str, TaintEffect] = {
    **{effect.value: effect for effect in TaintEffect},
    **{effect.eks: effect for effect in TaintEffect},
}
"""Kubernetes (``NoSchedule``) and EKS API (``NO_SCHEDULE``) spellings of the taint effects."""

BLOCKING_EFFECTS = (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)
"""Effects that keep a pod without a matching toleration off a node (``PreferNoSchedule`` does not)."""


def is_gpu_vm_size(size: Any) -> bool:
    """True for an Azure GPU VM size: in the catalog (current or retired) or of the N family."""
    if not isinstance(size, str):
        return False
    return size in GPU_SIZES or size in RETIRED_SIZES or bool(AZURE_GPU_FAMILY.match(size))


def is_gpu_instance_type(instance_type: Any) -> bool:
    """True for an EC2 instance type with GPUs: the catalog's GPU count, else the family name."""
    if not isinstance(instance_type, str):
        return False
    known = INSTANCE_TYPES.get(instance_type)
    if known is not None:
        return known.gpus > 0
    return bool(AWS_GPU_FAMILY.match(instance_type))


def aws_shape(instance_type: str) -> Hashable:
    """(vCPU, memory MiB, GPUs) for a catalogued type, else the type name itself."""
    known = INSTANCE_TYPES.get(instance_type)
    return known.shape if known is not None else instance_type


def parse_aks_taint(text: Any) -> Taint | None:
    """``key=value:Effect`` or ``key:Effect`` (AKS ``nodeTaints``) -> Taint; None if malformed."""
    if not isinstance(text, str) or ":" not in text:
        return None
    key_value, _, effect_text = text.rpartition(":")
    effect = EFFECTS_BY_SPELLING.get(effect_text.strip())
    if effect is None:
        return None
    key, _, value = key_value.partition("=")
    if not key:
        return None
    return Taint(key=key.strip(), value=value.strip(), effect=effect)


def parse_eks_taint(item: Any) -> Taint | None:
    """``{key, value, effect: NO_SCHEDULE}`` (EKS ``taints``) -> Taint; None if malformed or unknown."""
    if not isinstance(item, Mapping):
        return None
    key, value, effect_text = item.get("key"), item.get("value", ""), item.get("effect")
    effect = EFFECTS_BY_SPELLING.get(effect_text) if isinstance(effect_text, str) else None
    if not isinstance(key, str) or not key or effect is None:
        return None
    return Taint(key=key, value=value if isinstance(value, str) else "", effect=effect)


def is_gpu_taint(taint: Taint) -> bool:
    """The GPU taint: key ``nvidia.com/gpu`` with a blocking effect. Any value is accepted (the
    ExtendedResourceToleration admission plugin tolerates the key with operator Exists); gpupools
    writes ``nvidia.com/gpu=present:NoSchedule``."""
    return taint.key == GPU_TAINT.key and taint.effect in BLOCKING_EFFECTS


def as_number(value: Any) -> float | None:
    """A number from an engine value (numbers arrive as floats; bools are not numbers); else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def is_true(value: Any) -> bool:
    """True for ``True`` and for the string ``"true"`` (pulumi-aws types some flags as strings)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def sequence(value: Any) -> Sequence[Any]:
    """``value`` if it is a list-like of items (not a string), else an empty tuple."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return value
    return ()


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class Pool:
    """One node pool (AKS agent pool or EKS managed node group), as the rules see it.

    Attributes:
        cloud: ``aks`` or ``eks``.
        name: the pool's cloud name (``agentPoolName`` / ``nodeGroupName``), else the logical name.
        path: the property path of the pool inside its resource: ``""`` for a standalone pool,
            ``agentPoolProfiles[0]`` for an inline AKS pool. Messages prefix their fields with it.
        gpu: GPU VM size / instance type / NVIDIA AMI. None when that cannot be known yet.
        spot: a Spot pool (AKS ``scaleSetPriority: Spot``, EKS ``capacityType: SPOT``).
        declared_taints: the taints the program declares (malformed entries left out).
        taints: the taints nodes will carry: the declared ones plus, on AKS Spot pools, the Spot
            taint AKS adds itself.
        taints_known: False when the taint list is unknown during preview.
        labels: the node labels the program declares (unknown values left out).
        autoscaled: AKS ``enableAutoScaling``; EKS ``minSize < maxSize``. None if unknown.
        min_size / max_size: the autoscaler's bounds (None when absent, UNKNOWN when unknown).
        count_path: the property path of the count the autoscaler owns (relative to the resource).
        shape: what "same shape" compares: the VM size, or the set of instance shapes.
        cluster: what "same cluster" compares; UNKNOWN matches any cluster.
        ships_device_plugin: the node image runs its own device plugin (Bottlerocket NVIDIA).
        own_gpu_stack: the pool's GPU software is the user's: an AKS agent pool with
            ``gpuProfile.driver: None`` (AKS installs no driver, so a device plugin from the stack
            could not work there; the GPU Operator brings both). gpupools' ``gpuDriver: none``.
    """

    cloud: str
    name: str
    path: str
    gpu: bool | None
    spot: bool
    declared_taints: tuple[Taint, ...]
    taints: tuple[Taint, ...]
    taints_known: bool
    labels: Mapping[str, str]
    autoscaled: bool | None
    min_size: Any
    max_size: Any
    count_path: str
    shape: Hashable
    cluster: Hashable
    ships_device_plugin: bool = False
    own_gpu_stack: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def field_prefix(self) -> str:
        return f"{self.path}." if self.path else ""

    @property
    def pool_label(self) -> str | None:
        value = self.labels.get(POOL_LABEL)
        return value if isinstance(value, str) else None

    def describe(self) -> str:
        kind = {"aks": "AKS agent pool", "eks": "EKS node group"}.get(self.cloud, "Karpenter NodePool")
        where = f" ({self.path})" if self.path else ""
        return f"{kind} '{self.name}'{where}"


def _pool_name(props: Mapping[str, Any], keys: Sequence[str], default: str) -> str:
    """The first of ``keys`` that holds a known, non-empty string, else ``default`` (the logical name)."""
    for key in keys:
        value = props.get(key)
        if isinstance(value, str) and value:
            return value
    return default


def _string_labels(value: Any) -> dict[str, str]:
    return {k: v for k, v in mapping(value).items() if isinstance(k, str) and isinstance(v, str)}


def _aks_pool(props: Mapping[str, Any], name: str, path: str, cluster: Hashable) -> Pool:
    vm_size = props.get("vmSize")
    gpu = None if is_unknown(vm_size) else is_gpu_vm_size(vm_size)
    spot = props.get("scaleSetPriority") == "Spot"
    raw_taints = props.get("nodeTaints")
    taints_known = not is_unknown(raw_taints) and not any(is_unknown(t) for t in sequence(raw_taints))
    declared = tuple(t for t in (parse_aks_taint(x) for x in sequence(raw_taints)) if t is not None)
    taints = declared + ((AKS_SPOT_TAINT,) if spot and AKS_SPOT_TAINT not in declared else ())
    autoscale = props.get("enableAutoScaling")
    return Pool(
        cloud="aks",
        name=_pool_name(props, ("agentPoolName", "name"), name),
        path=path,
        gpu=gpu,
        spot=spot,
        declared_taints=declared,
        taints=taints,
        taints_known=taints_known,
        labels=_string_labels(props.get("nodeLabels")),
        autoscaled=None if is_unknown(autoscale) else autoscale is True,
        min_size=props.get("minCount"),
        max_size=props.get("maxCount"),
        count_path=f"{path}.count" if path else "count",
        shape=vm_size if isinstance(vm_size, str) else UNKNOWN,
        cluster=cluster,
        own_gpu_stack=mapping(props.get("gpuProfile")).get("driver") == AKS_GPU_DRIVER_NONE,
        raw=props,
    )


def _aks_cluster_key(props: Mapping[str, Any]) -> Hashable:
    group, cluster = props.get("resourceGroupName"), props.get("resourceName")
    if not isinstance(group, str) or not isinstance(cluster, str):
        return UNKNOWN
    return ("aks", group.lower(), cluster.lower())


def _eks_pool(props: Mapping[str, Any], name: str) -> Pool:
    ami_type = props.get("amiType")
    types = [t for t in sequence(props.get("instanceTypes")) if isinstance(t, str)]
    if is_unknown(ami_type) or is_unknown(props.get("instanceTypes")):
        gpu: bool | None = None
    else:
        gpu = (isinstance(ami_type, str) and bool(EKS_GPU_AMI.search(ami_type))) or any(map(is_gpu_instance_type, types))
    raw_taints = props.get("taints")
    taints_known = not is_unknown(raw_taints) and not any(is_unknown(t) for t in sequence(raw_taints))
    declared = tuple(t for t in (parse_eks_taint(x) for x in sequence(raw_taints)) if t is not None)
    scaling = mapping(props.get("scalingConfig"))
    low, high = as_number(scaling.get("minSize")), as_number(scaling.get("maxSize"))
    autoscaled = None if low is None or high is None else low < high
    cluster = props.get("clusterName")
    return Pool(
        cloud="eks",
        name=_pool_name(props, ("nodeGroupName",), name),
        path="",
        gpu=gpu,
        spot=props.get("capacityType") == "SPOT",
        declared_taints=declared,
        taints=declared,
        taints_known=taints_known,
        labels=_string_labels(props.get("labels")),
        autoscaled=autoscaled,
        min_size=scaling.get("minSize") if "minSize" in scaling else None,
        max_size=scaling.get("maxSize") if "maxSize" in scaling else None,
        count_path="scalingConfig.desiredSize",
        shape=frozenset(aws_shape(t) for t in types) if types else UNKNOWN,
        cluster=("eks", cluster) if isinstance(cluster, str) else UNKNOWN,
        ships_device_plugin=isinstance(ami_type, str) and bool(EKS_AMI_WITH_DEVICE_PLUGIN.match(ami_type)),
        raw=props,
    )


def pools(resource_type: str, props: Mapping[str, Any], name: str = "") -> list[Pool]:
    """The node pools a resource declares: one for an AgentPool or NodeGroup, one per inline
    profile for a ManagedCluster, none for anything else."""
    if AKS_AGENT_POOL.match(resource_type):
        return [_aks_pool(props, name, "", _aks_cluster_key(props))]
    if AKS_CLUSTER.match(resource_type):
        group, cluster_name = props.get("resourceGroupName"), props.get("resourceName")
        cluster: Hashable = (
            ("aks", group.lower(), cluster_name.lower()) if isinstance(group, str) and isinstance(cluster_name, str) else UNKNOWN
        )
        return [
            _aks_pool(mapping(profile), f"{name}[{index}]", f"agentPoolProfiles[{index}]", cluster)
            for index, profile in enumerate(sequence(props.get("agentPoolProfiles")))
            if isinstance(profile, Mapping)
        ]
    if resource_type == EKS_NODE_GROUP:
        return [_eks_pool(props, name)]
    return []


def nodepool_pool(props: Mapping[str, Any], name: str, gpu: bool) -> Pool:
    """A Karpenter NodePool as a ``Pool`` (cloud ``karpenter``): its name, its template's labels and
    taints (Kubernetes spellings), Spot when its capacity types allow it. Karpenter adds no taint of
    its own to the nodes it launches, on EKS or on AKS NAP, so the template's taints are the nodes'."""
    spec = mapping(props.get("spec"))
    template = mapping(spec.get("template"))
    template_spec = mapping(template.get("spec"))
    raw_taints = template_spec.get("taints")
    taints_known = not is_unknown(raw_taints) and not any(is_unknown(t) for t in sequence(raw_taints))
    declared = tuple(t for t in (parse_eks_taint(x) for x in sequence(raw_taints)) if t is not None)
    capacity = [
        mapping(r).get("values")
        for r in sequence(template_spec.get("requirements"))
        if mapping(r).get("key") == "karpenter.sh/capacity-type"
    ]
    metadata_name = mapping(props.get("metadata")).get("name")
    return Pool(
        cloud="karpenter",
        name=metadata_name if isinstance(metadata_name, str) else name,
        path="",
        gpu=gpu,
        spot=any("spot" in sequence(values) for values in capacity),
        declared_taints=declared,
        taints=declared,
        taints_known=taints_known,
        labels=_string_labels(mapping(template.get("metadata")).get("labels")),
        autoscaled=None,
        min_size=None,
        max_size=None,
        count_path="",
        shape=UNKNOWN,
        cluster=UNKNOWN,
        raw=props,
    )


def gpu_pools(resource_type: str, props: Mapping[str, Any], name: str = "") -> list[Pool]:
    """The pools of a resource that are (known to be) GPU pools."""
    return [pool for pool in pools(resource_type, props, name) if pool.gpu]


# --- tolerations ---------------------------------------------------------------------------------


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Kubernetes' matching rule (``ToleratesTaint`` in k8s.io/api core/v1 helpers):

    - an empty effect matches every effect, otherwise the effects must be equal;
    - an empty key with operator ``Exists`` matches every taint, otherwise the keys must be equal;
    - operator ``Exists`` matches any value; ``Equal`` (the default) needs the same value.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect.value:
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if not key:
        return operator == "Exists"
    if key != taint.key:
        return False
    if operator == "Exists":
        return True
    if operator != "Equal":
        return False
    return (toleration.get("value") or "") == taint.value


def pod_template_spec(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.template.spec`` of a workload object, or an empty mapping."""
    return mapping(mapping(mapping(props.get("spec")).get("template")).get("spec"))


def containers(props: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    spec = pod_template_spec(props)
    for key in ("initContainers", "containers"):
        for item in sequence(spec.get(key)):
            if isinstance(item, Mapping):
                yield item


DEVICE_PLUGIN_IMAGE = re.compile(r"(?:^|/)k8s-device-plugin(?:[:@]|$)")
"""The NVIDIA device plugin image (``nvcr.io/nvidia/k8s-device-plugin:v0.x``)."""


def is_device_plugin(resource_type: str, props: Mapping[str, Any]) -> bool:
    """A DaemonSet running NVIDIA's device plugin (by image), or named like one."""
    if resource_type != DAEMON_SET:
        return False
    for container in containers(props):
        image = container.get("image")
        if isinstance(image, str) and DEVICE_PLUGIN_IMAGE.search(image):
            return True
    name = mapping(props.get("metadata")).get("name")
    return isinstance(name, str) and "nvidia-device-plugin" in name


def tolerations(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The pod template's tolerations (unknown or malformed entries left out)."""
    return [t for t in sequence(pod_template_spec(props).get("tolerations")) if isinstance(t, Mapping)]


__all__ = [
    "AKS_AGENT_POOL",
    "AKS_CLUSTER",
    "BLOCKING_EFFECTS",
    "DAEMON_SET",
    "EKS_NODE_GROUP",
    "GPU_RESOURCE",
    "LAUNCH_TEMPLATE",
    "UNKNOWN",
    "Pool",
    "as_number",
    "gpu_pools",
    "is_device_plugin",
    "is_gpu_instance_type",
    "is_gpu_taint",
    "is_gpu_vm_size",
    "is_true",
    "is_unknown",
    "parse_aks_taint",
    "parse_eks_taint",
    "pools",
    "tolerates",
    "tolerations",
]
