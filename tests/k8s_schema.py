"""Kubernetes-side test helpers: schema validation, scheduling semantics, example pools.

* ``validate_manifest``: strict OpenAPI validation with kubernetes-validate at a Kubernetes minor.
* ``affinity_matches`` / ``untolerated``: a small, independent model of how the scheduler reads
  required node affinity and tolerations (written from the Kubernetes API reference, not from
  the code under test), to ask "would this pod land on a node with these labels and taints?".
* ``aks_*`` / ``eks_*``: ``NodePoolInfo`` values shaped like the ones the cloud components
  return, and ``node_labels`` for a node of such a pool.
* ``run_with_provider``: run a program on the recording runtime with an explicit Kubernetes
  provider, keeping a ``ConfigError`` so a test can also look at what was registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
from gpupools.conventions import (
    AKS_SPOT_LABEL,
    AKS_SPOT_TAINT,
    AKS_SYSTEM_TAINT,
    EKS_ACCELERATOR_LABEL,
    EKS_CAPACITY_TYPE_LABEL,
    GPU_TAINT,
    CapacityType,
    Role,
    Taint,
    device_plugin_labels,
    pool_labels,
)
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.sharing import node_labels as sharing_labels
from gpupools.sharing import slots_per_gpu
from gpupools.specs import SharingSpec
from gpupools.testing import Registration, Run, run_program
from gpupools.versions import VERSION_TABLES, minor_key

# --- schema ---------------------------------------------------------------------------------------


def validate_manifest(manifest: Mapping[str, Any], k8s_version: str = "1.35") -> None:
    """Validate ``manifest`` strictly (unknown fields are errors) against the schema of exactly
    ``k8s_version`` (a minor like ``1.34`` or a full version). Raises
    ``kubernetes_validate.ValidationError`` on a schema error, ``AssertionError`` if the package
    has no schema for that minor (it would silently fall back to an older one)."""
    full = k8s_version if k8s_version.count(".") == 2 else f"{k8s_version}.0"
    used = kubernetes_validate.validate(dict(manifest), full, strict=True)
    minor = ".".join(full.split(".")[:2])
    assert used == minor, f"kubernetes-validate used the {used} schema for {minor}"


def validate_all_versions(manifest: Mapping[str, Any]) -> None:
    """``validate_manifest`` at every Kubernetes minor in the version tables (supported now or recently)."""
    for version in sorted({r.minor for table in VERSION_TABLES.values() for r in table.releases}, key=minor_key):
        validate_manifest(manifest, version)


# --- scheduling semantics -------------------------------------------------------------------------


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` (operators In, NotIn, Exists, DoesNotExist) against node labels."""
    key, operator = requirement["key"], requirement["operator"]
    values = requirement.get("values", [])
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError(f"operator {operator} not modelled")


def affinity_matches(affinity: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` satisfies the pod's required node affinity: the
    ``nodeSelectorTerms`` are ORed, the ``matchExpressions`` in a term ANDed; no required
    affinity matches every node; an empty term list matches none."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(
        all(requirement_matches(r, labels) for r in term.get("matchExpressions", [])) for term in required["nodeSelectorTerms"]
    )


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``: an empty effect matches every effect, an empty
    key with ``Exists`` every key; ``Equal`` (the default) compares values."""
    effect = toleration.get("effect", "")
    if effect and effect != taint.effect.value:
        return False
    key = toleration.get("key", "")
    operator = toleration.get("operator", "Equal")
    if key == "" and operator == "Exists":
        return True
    if key != taint.key:
        return False
    if operator == "Exists":
        return True
    return bool(toleration.get("value", "") == taint.value)


def untolerated(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Taint]) -> list[Taint]:
    """The taints no toleration tolerates (empty: the pod may land)."""
    return [t for t in taints if not any(tolerates(tol, t) for tol in tolerations)]


# --- example pools --------------------------------------------------------------------------------

UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def aks_system_pool() -> NodePoolInfo:
    """The AKS system pool: on-demand, ``CriticalAddonsOnly`` taint."""
    return NodePoolInfo(
        name="system",
        pool="system",
        role=Role.SYSTEM,
        capacity=CapacityType.ON_DEMAND,
        zones=("1", "2", "3"),
        instance_types=("Standard_D4s_v5",),
        min_size=2,
        max_size=4,
        labels=pool_labels("system", Role.SYSTEM, CapacityType.ON_DEMAND),
        taints=(AKS_SYSTEM_TAINT,),
        autoscaler_group_regex=r"^aks-system-\d{8}-vmss$",
    )


def aks_gpu_pool(
    pool: str = "t4",
    capacity: CapacityType = CapacityType.SPOT,
    *,
    suffix: str = "a1b2",
    extra_taints: Sequence[Taint] = (),
    extra_labels: Mapping[str, str] | None = None,
    size: str = "Standard_NC4as_T4_v3",
    sharing: SharingSpec = SharingSpec(),
) -> NodePoolInfo:
    """An AKS GPU pool: name ``<pool><s|o|r><digest>``, GPU taint, extras, and on Spot the taint
    and label AKS adds; with ``sharing``, the device plugin config label."""
    spot = capacity is CapacityType.SPOT
    token = {CapacityType.SPOT: "s", CapacityType.ON_DEMAND: "o", CapacityType.RESERVED: "r"}[capacity]
    name = f"{pool}{token}{suffix}"
    labels = {**pool_labels(pool, Role.GPU, capacity), **(extra_labels or {}), **sharing_labels(sharing)}
    taints = [GPU_TAINT, *extra_taints]
    if spot:
        labels[AKS_SPOT_LABEL[0]] = AKS_SPOT_LABEL[1]
        taints.append(AKS_SPOT_TAINT)
    return NodePoolInfo(
        name=name,
        pool=pool,
        role=Role.GPU,
        capacity=capacity,
        zones=("1", "2", "3"),
        instance_types=(size,),
        min_size=0,
        max_size=4,
        labels=labels,
        taints=tuple(taints),
        gpus_per_node=1,
        gpu_model="nvidia-tesla-t4",
        autoscaler_group_regex=rf"^aks-{name}-\d{{8}}-vmss$",
        sharing=sharing,
        slots_per_gpu=slots_per_gpu(sharing),
    )


def eks_system_group(cluster: str = "ml-dev") -> NodePoolInfo:
    """The EKS system node group: on-demand, untainted."""
    name = f"{cluster}-system"
    return NodePoolInfo(
        name=name,
        pool="system",
        role=Role.SYSTEM,
        capacity=CapacityType.ON_DEMAND,
        zones=("us-west-2a", "us-west-2b", "us-west-2c"),
        instance_types=("m6i.large",),
        min_size=2,
        max_size=4,
        labels=pool_labels("system", Role.SYSTEM, CapacityType.ON_DEMAND),
        autoscaler_group_regex=rf"^eks-{name}-{UUID}$",
    )


def eks_gpu_group(
    pool: str = "t4",
    capacity: CapacityType = CapacityType.SPOT,
    zone: str = "us-west-2a",
    *,
    cluster: str = "ml-dev",
    extra_taints: Sequence[Taint] = (),
    bottlerocket: bool = False,
    sharing: SharingSpec = SharingSpec(),
) -> NodePoolInfo:
    """One EKS GPU managed node group (one zone): name ``<cluster>-<pool>-<spot|od|rsv>-<zone>``,
    GPU taint plus extras, the accelerator label; Bottlerocket groups need no device plugin; with
    ``sharing``, the device plugin config label."""
    token = {CapacityType.SPOT: "spot", CapacityType.ON_DEMAND: "od", CapacityType.RESERVED: "rsv"}[capacity]
    name = f"{cluster}-{pool}-{token}-{zone}"
    labels = {
        **pool_labels(pool, Role.GPU, capacity),
        EKS_ACCELERATOR_LABEL: "nvidia-tesla-t4",
        **sharing_labels(sharing),
        **device_plugin_labels(True, not bottlerocket),
    }
    return NodePoolInfo(
        name=name,
        pool=pool,
        role=Role.GPU,
        capacity=capacity,
        zones=(zone,),
        instance_types=("g4dn.xlarge", "g5.xlarge"),
        min_size=0,
        max_size=3,
        labels=labels,
        taints=(GPU_TAINT, *extra_taints),
        gpus_per_node=1,
        gpu_model="nvidia-tesla-t4",
        autoscaler_group_regex=rf"^eks-{name}-{UUID}$",
        needs_device_plugin=not bottlerocket,
        sharing=sharing,
        slots_per_gpu=slots_per_gpu(sharing),
    )


def node_labels(pool: NodePoolInfo) -> dict[str, str]:
    """The labels a node of ``pool`` carries: the pool's own plus what the platform adds."""
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": f"{pool.name}-node-0",
        "node.kubernetes.io/instance-type": pool.instance_types[0],
        "topology.kubernetes.io/zone": pool.zones[0],
    }
    if pool.autoscaler_group_regex.startswith("^eks-"):
        labels[EKS_CAPACITY_TYPE_LABEL] = "SPOT" if pool.capacity is CapacityType.SPOT else "ON_DEMAND"
        labels["eks.amazonaws.com/nodegroup"] = pool.name
    else:
        labels["kubernetes.azure.com/agentpool"] = pool.name
    labels.update(pool.labels)
    return labels


# --- running components ---------------------------------------------------------------------------

PROVIDER_NAME = "k8s"


@dataclass
class ProviderRun:
    """What ``run_with_provider`` saw: the run, what the build returned, a ConfigError if raised."""

    run: Run
    result: Any = None
    error: ConfigError | None = None
    ours: list[Registration] = field(default_factory=list)

    def provider_ref(self) -> str:
        """``<urn>::<id>`` of the explicit provider, the form children record."""
        [provider] = self.run.of_type("pulumi:providers:kubernetes")
        return f"{provider.urn}::{provider.name}-id"


def run_with_provider(build: Callable[[pulumi.ResourceOptions], Any]) -> ProviderRun:
    """Run ``build(opts)`` on the recording runtime, ``opts`` carrying an explicit Kubernetes
    provider (``kubeconfig="{}"``, ``cluster_identifier="c"``). A ``ConfigError`` is caught and
    returned; ``ours`` lists the registrations of gpupools types and Kubernetes objects."""
    seen = ProviderRun(run=Run(registrations=[]))

    def program() -> None:
        provider = k8s.Provider(PROVIDER_NAME, kubeconfig="{}", cluster_identifier="c")
        try:
            seen.result = build(pulumi.ResourceOptions(provider=provider))
        except ConfigError as error:
            seen.error = error

    seen.run = run_program(program)
    seen.ours = [
        r for r in seen.run.registrations if r.type.startswith("gpupools:") or (r.type.startswith("kubernetes:") and r.custom)
    ]
    return seen
