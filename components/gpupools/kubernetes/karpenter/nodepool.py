"""One gpupools pool as a Karpenter ``karpenter.sh/v1`` NodePool (builds dicts; only ``apply`` registers one).

What a NodePool says, and why (aws/karpenter-provider-aws ``website/content/en/docs/concepts/nodepools.md``
and ``disruption.md`` at v1.14.1, the pinned release):

* **requirements**: ``node.kubernetes.io/instance-type In <instanceTypes>``, ``topology.kubernetes.io/zone
  In <zones>``, ``kubernetes.io/arch In [<arch>]`` and ``karpenter.sh/capacity-type``: ``[spot,
  on-demand]`` for a Spot pool with ``onDemandFallback`` (the default), ``[spot]`` without the
  fallback, ``[on-demand]`` for ``spot: false``. One NodePool with both capacity types is the
  fallback: "If a NodePool is compatible with multiple capacity types, Karpenter will prioritize
  ``reserved`` capacity, followed by ``spot``, then finally ``on-demand``. If there are no other
  possible offerings available for a higher priority capacity type, Karpenter will attempt to
  fallback to a lower priority capacity type, generally within milliseconds" (``nodepools.md``,
  Capacity Type). A separate, lower-weight on-demand NodePool would not do it: Karpenter does not
  move to another NodePool on a capacity error (aws/karpenter-provider-aws #8885). ``reserved`` comes
  first for an EKS pool with ``reservations`` (``reserved=True``; its EC2NodeClass selects them, see
  ``gpupools.aws.reservations``), and only then: a NodePool that allows ``reserved`` without reservations
  selected by its node class would never get a reserved offering.
* **labels** (``spec.template.metadata.labels``): the conventions' pool labels (``gpupools.io/pool``,
  ``gpupools.io/role``, ``nvidia.com/gpu.present`` on GPU pools), the pool's extra labels and, on a
  shared pool, ``nvidia.com/device-plugin.config``. Not ``gpupools.io/capacity-type``: one NodePool
  launches both capacity types, so a static value would be wrong on half the nodes; Karpenter labels
  each node ``karpenter.sh/capacity-type`` with the same values, and the workload helpers prefer
  Spot on either key.
* **taints**: the GPU taint on GPU pools plus the pool's extra taints; none added on CPU pools.
* **limits** that enforce ``maxSize``: ``nodes: <maxSize>`` (the exact bound), ``cpu: <maxSize x
  vCPUs of the largest type>`` and on GPU pools ``nvidia.com/gpu: <maxSize x GPU slots per node>``.
  The GPU limit counts what a node advertises (physical GPUs x ``sharing`` replicas), the unit pods
  request, so it never binds before ``nodes`` whether Karpenter counts a node's GPUs from its
  instance type or from its advertised capacity. Limits are strings ("the Kubernetes API will
  coerce this into a string, so we recommend against using integers to avoid GitOps skew").
* **disruption**: ``consolidationPolicy: WhenEmpty`` ("Karpenter will only consider nodes for
  consolidation that contain no workload pods"), so a GPU node with a running pod is never
  consolidated; ``consolidateAfter`` from ``gpupools:autoscaler.scaleDownUnneededTime`` (how long
  an empty node lives, the same meaning); budgets ``nodes: 10%`` (Karpenter's default, stated) and
  the ``Drifted`` budgets of ``gpupools:maintenance`` (``gpupools.maintenance.drift_budgets``):
  ``nodes: 1`` always, so a new image rolls one node of a pool at a time, and ``nodes: 0`` from the
  window's end for the rest of the week, so drift (a new image, an AMI pin change, any template
  change) replaces nodes only inside the window. Drift ignores ``WhenEmpty``: it is its own
  disruption method, run before consolidation (``disruption.md``, "Automated Graceful Methods").
  ``expireAfter: Never``: a node that has a running training job is not force-expired after 720h
  (Karpenter's default); nodes go when empty, or are replaced on drift inside the window.
* **terminationGracePeriod** (``spec.template.spec``): only when ``gpupools:maintenance.terminationGracePeriod``
  is configured; by default none. Once set, it "takes precedence over a pod's terminationGracePeriodSeconds
  and bypasses PodDisruptionBudgets and the karpenter.sh/do-not-disrupt annotation"
  (MicrosoftDocs/azure-aks-docs ``articles/aks/node-auto-provisioning-disruption.md``), and drift may
  start on a node with such pods ("When configured, a node may be disrupted via drift even if there
  are pods with blocking PDBs or the ``karpenter.sh/do-not-disrupt`` annotation", ``disruption.md``,
  "TerminationGracePeriod"): a weekly node image would then kill every GPU job older than the
  grace period. Unset, "the controller will wait indefinitely for pods to be drained" (the NodePool
  CRD): ``do-not-disrupt`` and PDBs protect running jobs, drift waits until they end, and a node
  that always runs a protected job keeps its image until the job ends (or AKS's 90-day forced
  image, ``gpupools.azure.maintenance``). docs/karpenter-nap.md says what that means for image age.
  Changing it drifts existing nodes (``disruption.md``), which the window then schedules.
* **weight**: higher is preferred when a pod fits several NodePools (``gpu_workload()`` without a
  pool fits every GPU pool). ``weights(order)`` turns an explicit preference order into weights
  100, 99, ...; ``default_order`` orders by size facts (fewest GPUs, then fewest vCPUs, then name:
  the smallest node that fits), and a price order from the cost catalog can replace it.

Sharing: a NodePool sees physical GPUs. Karpenter simulates scheduling against the instance type's
``nvidia.com/gpu`` count, so for a time-sliced or MPS pool it would plan one pod per physical GPU
(kubernetes-sigs/karpenter #729, aws/karpenter-provider-aws #3376). On EKS a NodeOverlay per shared
pool declares the advertised slots (``gpupools.kubernetes.karpenter.overlay``); under AKS NAP,
whose feature gates gpupools cannot set, shared pools are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools import maintenance, sharing
from gpupools.conventions import (
    CAPACITY_TYPE_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    KARPENTER_CAPACITY_TYPE_LABEL,
    CapacityType,
    Taint,
    device_plugin_labels,
    pool_labels,
)
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import KubernetesKind
from gpupools.pools import NodePoolInfo
from gpupools.specs import MaintenanceSpec, PoolSpec, frozen_map

API_VERSION = "karpenter.sh/v1"
KIND = "NodePool"
NODE_POOL = KubernetesKind("karpenter.sh", "v1", KIND, "nodepools", namespaced=False)
"""The NodePool kind: cluster-scoped, resource ``nodepools`` (the CRD ``karpenter.sh_nodepools.yaml``
of both providers, ``tests/crds``)."""

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
ARCH_LABEL = "kubernetes.io/arch"
"""Well-known labels Karpenter schedules on (``concepts/scheduling.md``, "Well-Known Labels")."""

ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
"""EC2/AMI architecture names to the ``kubernetes.io/arch`` values."""

CONSOLIDATION_POLICY = "WhenEmpty"
EXPIRE_AFTER = "Never"
BUDGETS: tuple[dict[str, Any], ...] = ({"nodes": "10%"},)
"""The budget of every reason (Karpenter's default, stated); the ``Drifted`` ones come from the
maintenance window (module docstring)."""

WEIGHT_MAX = 100
"""``spec.weight`` range is 1-100 in the NodePool CRD."""


@dataclass(frozen=True)
class NodeClassRef:
    """``spec.template.spec.nodeClassRef``: which cloud node class launches the nodes.

    EKS: ``group=karpenter.k8s.aws, kind=EC2NodeClass``; AKS NAP: ``group=karpenter.azure.com,
    kind=AKSNodeClass``."""

    group: str
    kind: str
    name: str

    def to_dict(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class NodeShape:
    """Size facts of a pool's nodes, from the cloud's catalog.

    Attributes:
        vcpus: vCPUs of the largest instance type (the CPU limit's unit per node).
        gpus: physical GPUs per node (0 on CPU pools).
        gpu_model: for the ``nodePools`` output; comma-separated when the types differ.
        architecture: the ``kubernetes.io/arch`` value, ``amd64`` or ``arm64``.
    """

    vcpus: int
    gpus: int = 0
    gpu_model: str = ""
    architecture: str = "amd64"


def capacity_types(pool: PoolSpec, reserved: bool = False) -> tuple[CapacityType, ...]:
    """The capacity types a pool's NodePool allows, in Karpenter's order of preference: ``reserved``
    when ``reserved`` (an EKS pool with ``reservations``), then ``spot`` + ``onDemandFallback``."""
    first = (CapacityType.RESERVED,) if reserved else ()
    if pool.spot and pool.on_demand_fallback:
        return (*first, CapacityType.SPOT, CapacityType.ON_DEMAND)
    if pool.spot:
        return (*first, CapacityType.SPOT)
    return (*first, CapacityType.ON_DEMAND)


def template_labels(pool: PoolSpec) -> dict[str, str]:
    """The node labels a pool's NodePool sets (module docstring: no static capacity label)."""
    labels = pool_labels(pool.name, pool.role, CapacityType.SPOT)
    del labels[CAPACITY_TYPE_LABEL]
    external = device_plugin_labels(pool.is_gpu, pool.needs_device_plugin)
    return dict(sorted({**labels, **sharing.node_labels(pool.sharing), **pool.labels, **external}.items()))


def template_taints(pool: PoolSpec) -> tuple[Taint, ...]:
    """The GPU taint on GPU pools, then the pool's own taints."""
    return ((GPU_TAINT,) if pool.is_gpu else ()) + tuple(pool.taints)


def limits(pool: PoolSpec, shape: NodeShape) -> dict[str, str]:
    """``spec.limits`` enforcing ``maxSize`` (module docstring)."""
    result = {"cpu": str(pool.max_size * shape.vcpus), "nodes": str(pool.max_size)}
    if pool.is_gpu:
        result[GPU_RESOURCE] = str(pool.max_size * shape.gpus * sharing.slots_per_gpu(pool.sharing))
    return result


def disruption(consolidate_after: str, window: MaintenanceSpec = MaintenanceSpec()) -> dict[str, Any]:
    """``spec.disruption``: empty nodes only, after ``consolidate_after`` (a duration like ``10m``);
    drifted nodes only inside ``window``, one at a time."""
    return {
        "consolidationPolicy": CONSOLIDATION_POLICY,
        "consolidateAfter": consolidate_after,
        "budgets": [*(dict(b) for b in BUDGETS), *maintenance.drift_budgets(window)],
    }


def requirement(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def requirements(
    pool: PoolSpec,
    shape: NodeShape,
    zones: Sequence[str] | None,
    extra: Sequence[Mapping[str, Any]] = (),
    reserved: bool = False,
) -> list[dict[str, Any]]:
    """Instance types, zones (none when ``zones`` is None), architecture and capacity types (with
    ``reserved`` first when ``reserved``), then ``extra`` (cloud-specific)."""
    return [
        requirement(INSTANCE_TYPE_LABEL, pool.instance_types),
        *([requirement(ZONE_LABEL, zones)] if zones is not None else []),
        requirement(ARCH_LABEL, [shape.architecture]),
        requirement(KARPENTER_CAPACITY_TYPE_LABEL, [c.value for c in capacity_types(pool, reserved)]),
        *(dict(r) for r in extra),
    ]


def default_order(pools: Sequence[PoolSpec], shapes: Mapping[str, NodeShape]) -> list[str]:
    """Pool names, most preferred first, by size facts: fewest GPUs per node, then fewest vCPUs, then
    name (the smallest node that fits a pod that fits several pools). ``shapes`` is keyed by pool name."""
    return [p.name for p in sorted(pools, key=lambda p: (shapes[p.name].gpus, shapes[p.name].vcpus, p.name))]


def weights(order: Sequence[str], path: str = "weights.order") -> dict[str, int]:
    """``spec.weight`` per pool name from a preference order, most preferred first: 100, 99, ...

    Raises:
        ConfigError: a name repeats, or more than 100 pools (the CRD's weight range is 1-100).
    """
    if len(set(order)) != len(order):
        raise ConfigError(path, "must name each pool once", list(order))
    if len(order) > WEIGHT_MAX:
        raise ConfigError(path, f"must hold at most {WEIGHT_MAX} pools (NodePool weights are 1-{WEIGHT_MAX})", len(order))
    return {name: WEIGHT_MAX - index for index, name in enumerate(order)}


def pool_weights(
    pools: Sequence[PoolSpec], shapes: Mapping[str, NodeShape], order: Sequence[str] | None, path: str
) -> dict[str, int]:
    """The weight of every pool: ``order`` (most preferred first) when given, else ``default_order``.

    Raises:
        ConfigError: no pools, or ``order`` does not name every pool exactly once.
    """
    if not pools:
        raise ConfigError(f"{path}.pools", "must list at least one pool", [])
    preference = list(order) if order is not None else default_order(pools, shapes)
    if sorted(preference) != sorted(p.name for p in pools):
        raise ConfigError(f"{path}.order", "must name every pool exactly once", preference)
    return weights(preference, f"{path}.order")


def node_pool(
    name: str,
    pool: PoolSpec,
    *,
    node_class_ref: NodeClassRef,
    shape: NodeShape,
    zones: Sequence[str] | None,
    consolidate_after: str,
    weight: int,
    extra_requirements: Sequence[Mapping[str, Any]] = (),
    window: MaintenanceSpec = MaintenanceSpec(),
    reserved: bool = False,
    expire_after: str = EXPIRE_AFTER,
    termination_grace_period: str | None = None,
) -> dict[str, Any]:
    """The NodePool manifest of one pool.

    Args:
        name: ``metadata.name`` (the stacks use the pool name).
        pool: the ``gpuPools``/``cpuPools`` entry.
        node_class_ref: the cloud's node class.
        shape: the pool's node size facts.
        zones: values of ``topology.kubernetes.io/zone`` on the cloud (EKS ``us-west-2a``; AKS
            ``eastus-1``); None for no zone requirement (a regional AKS cluster), never empty.
        consolidate_after: ``disruption.consolidateAfter``.
        weight: 1-100, from ``weights``.
        extra_requirements: appended (e.g. AKS SKU selector labels).
        window: ``gpupools:maintenance``: the drift window and ``terminationGracePeriod``;
            default ``MaintenanceSpec()`` (Sunday 02:00 UTC for 4 hours, 24h).
        reserved: allow ``karpenter.sh/capacity-type`` ``reserved`` first (an EKS pool whose
            EC2NodeClass selects its capacity reservations); default False.
        expire_after: ``template.spec.expireAfter``; default ``Never`` (module docstring). EKS Auto
            Mode caps a node's life at 21 days (``gpupools.aws.auto_mode``).
        termination_grace_period: ``template.spec.terminationGracePeriod`` when ``window`` has none;
            default none (unset). Auto Mode states its 24h default explicitly.
    """
    if not 1 <= weight <= WEIGHT_MAX:
        raise ConfigError(f"node_pool({name}).weight", f"must be from 1 to {WEIGHT_MAX}", weight)
    if zones is not None and not zones:
        raise ConfigError(f"node_pool({name}).zones", "must list at least one zone", list(zones))
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "gpupools"}},
        "spec": {
            "weight": weight,
            "template": {
                "metadata": {"labels": template_labels(pool)},
                "spec": {
                    "nodeClassRef": node_class_ref.to_dict(),
                    "requirements": requirements(pool, shape, zones, extra_requirements, reserved),
                    "taints": [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in template_taints(pool)],
                    "expireAfter": expire_after,
                    **(
                        {}
                        if (grace := window.termination_grace_period or termination_grace_period) is None
                        else {"terminationGracePeriod": grace}
                    ),
                },
            },
            "disruption": disruption(consolidate_after, window),
            "limits": limits(pool, shape),
        },
    }


def node_pool_info(
    name: str, pool: PoolSpec, shape: NodeShape, zones: Sequence[str], needs_device_plugin: bool, reserved: bool = False
) -> NodePoolInfo:
    """The pool as the Kubernetes side sees it: the device plugin's affinity and tolerations, the
    smoke test, the ``nodePools`` output and the synth table derive from this, as from node groups.

    ``capacity`` is the first *priced* type (Spot, else on-demand): its price and its place in the
    priority order are those of what it buys once its reservations are full; ``capacity_types``
    lists ``reserved`` first when ``reserved``, and ``reserved_nodes`` says how many nodes the
    reservations hold (``gpupools.capacity`` fills them first, under the NodePool's one limit)."""
    types = capacity_types(pool, reserved)
    return NodePoolInfo(
        name=name,
        pool=pool.name,
        role=pool.role,
        capacity=next(t for t in types if t is not CapacityType.RESERVED),
        zones=tuple(zones),
        instance_types=pool.instance_types,
        min_size=0,
        max_size=pool.max_size,
        labels=frozen_map(template_labels(pool)),
        taints=template_taints(pool),
        gpus_per_node=shape.gpus,
        gpu_model=shape.gpu_model,
        needs_device_plugin=pool.is_gpu and needs_device_plugin,
        gpu_driver=pool.gpu_driver,
        sharing=pool.sharing,
        slots_per_gpu=sharing.slots_per_gpu(pool.sharing),
        capacity_types=types,
        capacity_label=KARPENTER_CAPACITY_TYPE_LABEL,
        limits=frozen_map(limits(pool, shape)),
        reserved_nodes=sum(r.reserved_max(pool.max_size) for r in pool.reservations) if reserved else 0,
    )


DELETE_TIMEOUT = "30m"
"""How long ``pulumi destroy`` (or removing a pool) waits for a NodePool or node class to go: 30
minutes instead of pulumi-kubernetes' default wait (10 minutes), which a GPU node's drain can outlast.

Why deletes take that long: pulumi-kubernetes deletes with foreground propagation (its default,
overridable with the ``pulumi.com/deletionPropagationPolicy`` annotation), so a NodePool stays
until the NodeClaims it owns are gone, and Karpenter's termination finalizer removes a NodeClaim
only after it has tainted and drained the node, evicting pods through the Eviction API (PDBs and
each pod's ``terminationGracePeriodSeconds`` respected), and the instance is terminated
(aws/karpenter-provider-aws v1.14.1 ``website/content/en/docs/concepts/disruption.md``,
"Termination Controller"). GPU pods drain slowly: a training job writes its checkpoint, an
inference server finishes its requests, and the replacement node (when the pool stays) pulls
multi-GB images first. A node class waits until no NodeClaim uses it and then rechecks only
every 10 minutes (``pkg/controllers/nodeclass/controller.go``, ``finalize``: ``RequeueAfter:
time.Minute * 10``), so its delete can take a drain plus 10 minutes. 30 minutes covers a drain of
up to about 15 minutes, the node class's recheck and the instance's termination; a delete that
finishes sooner returns sooner (the timeout only bounds the wait). A drain blocked for longer (a
``karpenter.sh/do-not-disrupt`` pod, a PDB that allows no eviction) makes the delete fail with a
timeout, and a second ``pulumi destroy`` continues the wait; Pulumi never removes the finalizer.
With a configured ``terminationGracePeriod`` the wait is bounded by it, and ``delete_timeout`` adds
it to the timeout.

The same value for AKS Node Auto Provisioning: its NodePools are Karpenter's (the same core
NodePool/NodeClaim termination); the ``AKSNodeClass`` finalizer of karpenter-provider-azure was not
checked here and gets the same bound."""


DELETE_MARGIN_MINUTES = 30
"""Added to a configured ``terminationGracePeriod`` for a delete's timeout: the instance's termination
and the node class's 10-minute recheck after the grace period has run out (``DELETE_TIMEOUT``)."""


def delete_timeout(window: MaintenanceSpec | None) -> str:
    """How long deleting a NodePool, or its node class, may wait: ``DELETE_TIMEOUT`` without a
    configured ``terminationGracePeriod``, else the grace period plus ``DELETE_MARGIN_MINUTES``
    (``24h`` -> ``1470m``), so a delete outlasts the longest wait its nodes may need. Without a grace
    period a node with a ``do-not-disrupt`` pod or a blocking PDB is never force-drained: the delete
    then times out after ``DELETE_TIMEOUT`` and ``pulumi destroy`` says which NodePool still waits
    (docs/karpenter-nap.md, "Destroying a stack with running jobs")."""
    if window is None or window.termination_grace_period is None:
        return DELETE_TIMEOUT
    value, unit = int(window.termination_grace_period[:-1]), window.termination_grace_period[-1]
    minutes = value * 60 if unit == "h" else value
    return f"{minutes + DELETE_MARGIN_MINUTES}m"


def apply(
    resource_name: str,
    manifest: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    window: MaintenanceSpec | None = None,
) -> k8s.apiextensions.CustomResource:
    """Register a custom resource manifest (a NodePool or a node class) as it is, under
    ``resource_name``, with a delete timeout of ``delete_timeout(window)`` (``window``: the
    NodePools' ``gpupools:maintenance``; None: ``DELETE_TIMEOUT``). ``manifest["spec"]`` may be an
    output (an EC2NodeClass names the node role)."""
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(delete=delete_timeout(window)))
        ),
    )
