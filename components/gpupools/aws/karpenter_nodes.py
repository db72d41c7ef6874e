"""``KarpenterNodePools``: the EC2NodeClasses and one ``karpenter.sh/v1`` NodePool per pool on EKS.

* **EC2NodeClass** (``karpenter.k8s.aws/v1``), one per pool and named after it (``gpu1``), like
  AKS NAP's AKSNodeClass: the name never encodes what a pool may change (disk size, image family,
  reservations), so such a change is an in-place update of the class, and Karpenter replaces the
  pool's nodes by drift within the maintenance window: ``blockDeviceMappings`` are in the class's
  static hash (``NodeClassDrift``), a new image alias is ``AMIDrift``, a reservation taken out is
  ``CapacityReservationDrift`` (aws/karpenter-provider-aws v1.14.1 ``pkg/apis/v1/ec2nodeclass.go``,
  ``Hash``; ``pkg/cloudprovider/drift.go``). A name that encoded them (``nvidia-al2023-100g``, up to
  0.2.x) made every such change a new class and a delete of the old one, and that delete waits while
  any NodeClaim uses the class (``pkg/controllers/nodeclass/controller.go``, ``finalize``): the nodes
  drift only in the window, so the ``pulumi up`` failed after its delete timeout, and every later
  one too (second EKS review, N3). ``pulumi.com/skipAwait`` would not help: pulumi-kubernetes honours
  it on delete only for a few built-in kinds (``provider/pkg/metadata/overrides.go``,
  ``allowsSkipAwaitWithDelete``, v4.32.0 and HEAD). Each class has:

  - ``amiSelectorTerms: [{alias: al2023@<pinned>}]`` (``bottlerocket@<pinned>`` for Bottlerocket
    pools). With an alias, Karpenter resolves the NVIDIA variant for GPU instance types and the
    arm64 one for Graviton (``pkg/providers/amifamily/al2023.go``), so GPU and CPU pools' classes
    share the alias; pinned, so AMIs move only with the pin
    (``gpupools.versions.AL2023_AMI_ALIAS``).
  - the same secure defaults as the managed node groups' launch templates
    (``launch_template``): IMDSv2 required with hop limit 1, encrypted gp3 volumes deleted with the
    instance, the root volume ``/dev/xvda`` sized from ``diskSizeGb`` on AL2023; on Bottlerocket an
    encrypted 4 GiB OS volume (Karpenter's own default for it,
    ``pkg/providers/amifamily/bottlerocket.go``) and the data volume ``/dev/xvdb`` of ``diskSizeGb``.
    No SSH key: nodes are reached through SSM.
  - ``role``: the cluster's node role (its access entry exists), subnets and security groups by
    ``karpenter.sh/discovery=<cluster>``.
  - with ``reservations``, ``capacityReservationSelectorTerms`` selecting them by ID, one term each
    (``gpupools.aws.reservations``);
    its NodePool allows ``reserved`` first, and is preferred over the pools without reservations
    (weights: ``reserved_first``).

* **NodePool** per pool (``gpupools.kubernetes.karpenter.nodepool``: requirements, labels,
  taints, limits, disruption, weight), named after the pool, referencing its node class; its
  ``Drifted`` budgets and ``terminationGracePeriod`` from ``gpupools:maintenance`` (the window in UTC).

* **NodeOverlay** (``karpenter.sh/v1alpha1``) per time-sliced or MPS pool
  (``gpupools.kubernetes.karpenter.overlay``): ``nvidia.com/gpu`` = GPUs x replicas, so Karpenter
  buys ceil(pods / slots per node) nodes for pending pods, not one per pod. It takes effect only
  with the ``NodeOverlay`` feature gate, which ``Karpenter(node_overlay=True)`` sets.

Both are registered after the Karpenter release (``opts.depends_on``), so their CRDs exist, and
deleted before it on destroy, so the controller is still there to drain and terminate the nodes.
``pools`` describes each NodePool as a ``NodePoolInfo`` for the device plugin, smoke tests and
outputs; Bottlerocket GPU pools are marked as shipping their own device plugin, and ``gpuDriver:
none`` pools (same AL2023 NVIDIA AMI: EKS has no driver-less NVIDIA variant) as having the user's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools.aws.karpenter import DISCOVERY_TAG
from gpupools.aws.launch_template import BOTTLEROCKET_DATA_DEVICE, IMDS_HOP_LIMIT, ROOT_DEVICE, VOLUME_TYPE
from gpupools.aws.node_group import check_cluster_name, depends_on_of
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import KubernetesKind
from gpupools.kubernetes.karpenter import nodepool, overlay
from gpupools.kubernetes.karpenter.nodepool import NodeClassRef, NodeShape
from gpupools.pool_args import DEFAULT_CONSOLIDATE_AFTER, PoolArg, nodepool_arguments, pool_specs
from gpupools.pools import NodePoolInfo
from gpupools.specs import AmiType, Cloud, MaintenanceSpec, PoolSpec, Provisioner
from gpupools.versions import AL2023_AMI_ALIAS, BOTTLEROCKET_AMI_ALIAS

TYPE = "gpupools:index:KarpenterNodePools"

NODE_CLASS_API_VERSION = "karpenter.k8s.aws/v1"
NODE_CLASS_KIND = "EC2NodeClass"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
EC2_NODE_CLASS = KubernetesKind(NODE_CLASS_GROUP, "v1", NODE_CLASS_KIND, "ec2nodeclasses", namespaced=False)
"""Cluster-scoped, resource ``ec2nodeclasses`` (``karpenter.k8s.aws_ec2nodeclasses.yaml``, ``tests/crds``)."""

KINDS = (nodepool.NODE_POOL, EC2_NODE_CLASS, overlay.NODE_OVERLAY)
"""What it creates."""

BOTTLEROCKET_OS_VOLUME = "4Gi"
"""Karpenter's default Bottlerocket OS volume size, kept (only the data volume is sized from config)."""


@dataclass(frozen=True)
class NodeClassPlan:
    """One pool's EC2NodeClass: its name (the pool's), image alias, disk size and reservations."""

    name: str
    alias: str
    bottlerocket: bool
    disk_size_gb: int
    reservation_ids: tuple[str, ...] = ()


def node_class_plan(pool: PoolSpec) -> NodeClassPlan:
    """The node class of a pool's NodePool: its own, named after the pool, so a change of disk size,
    image family or reservations updates it in place (module docstring)."""
    bottlerocket = pool.ami_type in (AmiType.BOTTLEROCKET_NVIDIA, AmiType.BOTTLEROCKET, AmiType.BOTTLEROCKET_ARM)
    return NodeClassPlan(
        name=pool.name,
        alias=BOTTLEROCKET_AMI_ALIAS if bottlerocket else AL2023_AMI_ALIAS,
        bottlerocket=bottlerocket,
        disk_size_gb=pool.disk_size_gb,
        reservation_ids=tuple(r.id for r in pool.reservations),
    )


RELEASED_CLASS_RULES = ("0.2.0",)
"""Releases whose node classes ``released_node_class_plans`` can name (``gpupools:upgrade.fromVersion``)."""


def released_node_class_plans(pools: Sequence[PoolSpec], version: str) -> list[NodeClassPlan]:
    """The EC2NodeClasses release ``version`` made for ``pools``. 0.2.x named a class after what it
    set and shared it between pools: ``<nvidia|standard>-<al2023|bottlerocket>-<disk>g`` (``8b33421``,
    ``aws/karpenter_nodes.py``, ``node_class_plan``)."""
    if version not in RELEASED_CLASS_RULES:
        raise ValueError(f"no node class rule for release {version!r} (known: {', '.join(RELEASED_CLASS_RULES)})")
    plans = set()
    for pool in pools:
        bottlerocket = pool.ami_type in (AmiType.BOTTLEROCKET_NVIDIA, AmiType.BOTTLEROCKET, AmiType.BOTTLEROCKET_ARM)
        family = "bottlerocket" if bottlerocket else "al2023"
        flavour = "nvidia" if pool.ami_type.is_gpu else "standard"
        plans.add(
            NodeClassPlan(
                name=f"{flavour}-{family}-{pool.disk_size_gb}g",
                alias=BOTTLEROCKET_AMI_ALIAS if bottlerocket else AL2023_AMI_ALIAS,
                bottlerocket=bottlerocket,
                disk_size_gb=pool.disk_size_gb,
            )
        )
    return sorted(plans, key=lambda p: p.name)


def reserved_first(order: Sequence[str], pools: Sequence[PoolSpec]) -> list[str]:
    """``order`` with the pools that have reservations moved to the front (stable otherwise): a pod
    that fits several NodePools goes to one whose reserved capacity costs nothing extra. Within the
    NodePool, Karpenter itself then takes ``reserved`` before Spot and on-demand."""
    reserved = {p.name for p in pools if p.reservations}
    return sorted(order, key=lambda name: name not in reserved)


def _ebs(size: str) -> dict[str, Any]:
    return {"volumeSize": size, "volumeType": VOLUME_TYPE, "encrypted": True, "deleteOnTermination": True}


def node_class_spec(plan: NodeClassPlan, cluster_name: str, role_name: str) -> dict[str, Any]:
    """The EC2NodeClass ``spec`` (module docstring)."""
    disk = f"{plan.disk_size_gb}Gi"
    devices = (
        [
            {"deviceName": ROOT_DEVICE, "ebs": _ebs(BOTTLEROCKET_OS_VOLUME)},
            {"deviceName": BOTTLEROCKET_DATA_DEVICE, "ebs": _ebs(disk)},
        ]
        if plan.bottlerocket
        else [{"deviceName": ROOT_DEVICE, "ebs": _ebs(disk)}]
    )
    discovery = [{"tags": {DISCOVERY_TAG: cluster_name}}]
    return {
        "role": role_name,
        "amiSelectorTerms": [{"alias": plan.alias}],
        "subnetSelectorTerms": discovery,
        "securityGroupSelectorTerms": discovery,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
            "httpTokens": "required",
        },
        "blockDeviceMappings": devices,
        # One term per reservation, by ID alone: the CRD makes ``id`` exclusive with the other fields.
        **({"capacityReservationSelectorTerms": [{"id": rid} for rid in plan.reservation_ids]} if plan.reservation_ids else {}),
        "tags": {"gpupools.io/node-class": plan.name},
    }


def node_shape(pool: PoolSpec) -> NodeShape:
    """Size facts from the EC2 catalog: the largest type's vCPUs, GPUs, models, architecture."""
    facts = [INSTANCE_TYPES[name] for name in pool.instance_types]
    models = sorted({f.gpu_model for f in facts if f.gpu_model})
    return NodeShape(
        vcpus=max(f.vcpus for f in facts),
        gpus=max(f.gpus for f in facts),
        gpu_model=",".join(models),
        architecture=nodepool.ARCHITECTURES[pool.ami_type.architecture],
    )


def check_karpenter_pool(pool: PoolSpec, path: str) -> None:
    """What Karpenter cannot do, for a pool that passed the pool rules under Karpenter (the spec
    form of ``config.check_provisioner_keys``): no ``minSize`` above 0, no ``onDemandMaxSize``."""
    if pool.min_size != 0:
        raise ConfigError(f"{path}.min_size", "must be 0: Karpenter keeps no minimum", pool.min_size)
    if pool.on_demand_max_size is not None:
        raise ConfigError(
            f"{path}.on_demand_max_size",
            "has no meaning under Karpenter: one NodePool's limits cap both capacity types",
            pool.on_demand_max_size,
        )


class KarpenterNodePools(pulumi.ComponentResource):
    """EC2NodeClasses and a NodePool per pool (see the module docstring).

    Args:
        name: the component's name.
        pools: the pools: ``PoolSpec``s (``config.load``'s, GPU and CPU) or plain ``gpuPools`` mappings
            (``{"name": "gpu", "instanceTypes": ["g5.xlarge", "g6.xlarge"], "maxSize": 4}``), validated
            like stack config under ``provisioner: karpenter`` (``gpupools.pool_args``).
        cluster_name: for the discovery selectors.
        node_role_name: the node role's name (``EC2NodeClass.spec.role``).
        zones: the zones NodePools may use (a pool's own ``zones`` narrow them).
        consolidate_after: ``disruption.consolidateAfter`` (``autoscaler.scaleDownUnneededTime``).
        order: pool names, most preferred first, for the NodePools' weights; default
            ``nodepool.default_order`` (by size facts). Pass a price order to prefer the cheapest.
            Pools with reservations move to the front either way (``reserved_first``).
        maintenance: ``gpupools:maintenance`` (``MaintenanceSpec``): the window in which NodePools allow
            ``Drifted`` disruptions, and their ``terminationGracePeriod``; default ``MaintenanceSpec()``.
        cpu_pools: plain ``cpuPools`` mappings (or CPU ``PoolSpec``s); default none.
        keep_classes_of: a release (``"0.2.0"``) whose EC2NodeClasses this stack still has: they are
            registered under their old names and URNs as they are (``ignoreChanges`` on everything
            but their identity) with ``retainOnDelete``, so this ``up`` does not delete them and wait
            for their nodes (Karpenter's class finalizer holds a class while a NodeClaim uses it,
            ``pkg/controllers/nodeclass/controller.go``, ``finalize``). Default None: a new stack
            gets none. Once dropped, Pulumi forgets them without deleting; ``kubectl delete
            ec2nodeclass <name> --wait=false`` lets Karpenter remove each when its nodes are gone.
        opts: ``provider`` the cluster's Kubernetes provider, ``depends_on`` the Karpenter release.

    Attributes:
        node_pools: one ``NodePoolInfo`` per NodePool (the name every pool component uses);
            ``pools`` is the same list.
        manifests: the NodePool manifests by pool name.
        node_classes: the EC2NodeClass plans by name (each pool's name).
        overlays: the NodeOverlay manifests of the shared GPU pools, by pool name.
        kept_classes: the names of the released node classes kept (``keep_classes_of``).
    """

    node_pools: list[NodePoolInfo]
    pools: list[NodePoolInfo]
    manifests: dict[str, dict[str, Any]]
    node_classes: dict[str, NodeClassPlan]
    overlays: dict[str, dict[str, Any]]
    kept_classes: list[str]

    def __init__(
        self,
        name: str,
        pools: Sequence[PoolArg],
        cluster_name: str,
        node_role_name: pulumi.Input[str],
        zones: Sequence[str],
        consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER,
        order: Sequence[str] | None = None,
        maintenance: MaintenanceSpec | None = None,
        cpu_pools: Sequence[PoolArg] = (),
        keep_classes_of: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        path = f"KarpenterNodePools({name})"
        window = nodepool_arguments(path, maintenance, consolidate_after)
        check_cluster_name(cluster_name, f"{path}.cluster_name")
        pools = pool_specs(
            pools,
            Cloud.AWS,
            path,
            cpu_pools=cpu_pools,
            # The cluster's zones: a pool's own zones are checked against them (a reserved pool names its zone).
            zones=tuple(zones),
            provisioner=Provisioner.KARPENTER,
            check=check_karpenter_pool,
        )
        shapes = {pool.name: node_shape(pool) for pool in pools}
        preference = reserved_first(order if order is not None else nodepool.default_order(pools, shapes), pools)
        weights = nodepool.pool_weights(pools, shapes, preference, path)
        plans = {pool.name: node_class_plan(pool) for pool in pools}
        kept = released_node_class_plans(pools, keep_classes_of) if keep_classes_of else []
        clash = sorted({p.name for p in kept} & {p.name for p in plans.values()})
        if clash:
            raise ConfigError(
                f"{path}.keep_classes_of",
                f"must not keep a {keep_classes_of} node class named like a pool ({clash[0]}): rename the pool",
                keep_classes_of,
            )

        super().__init__(TYPE, name, None, opts)
        after = depends_on_of(opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=after)
        classes: dict[str, k8s.apiextensions.CustomResource] = {}
        self.node_classes = {}
        for plan in sorted(set(plans.values()), key=lambda p: p.name):
            self.node_classes[plan.name] = plan
            manifest = {
                "apiVersion": NODE_CLASS_API_VERSION,
                "kind": NODE_CLASS_KIND,
                "metadata": {"name": plan.name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
                "spec": pulumi.Output.from_input(node_role_name).apply(
                    lambda role, plan=plan: node_class_spec(plan, cluster_name, role)  # type: ignore[misc]
                ),
            }
            # Through nodepool.apply for its delete timeout: an EC2NodeClass waits for its nodes' drain.
            classes[plan.name] = nodepool.apply(f"{name}-{plan.name}-class", manifest, child, window)
        self.kept_classes = [plan.name for plan in kept]
        for plan in kept:
            # The old URN (0.2.x registered "<component>-<class>"), the old object; never updated or deleted.
            k8s.apiextensions.CustomResource(
                f"{name}-{plan.name}",
                api_version=NODE_CLASS_API_VERSION,
                kind=NODE_CLASS_KIND,
                metadata={"name": plan.name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
                spec=pulumi.Output.from_input(node_role_name).apply(
                    lambda role, plan=plan: node_class_spec(plan, cluster_name, role)  # type: ignore[misc]
                ),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(retain_on_delete=True, ignore_changes=["spec", "metadata.labels"])
                ),
            )
        self.manifests = {}
        self.overlays = {}
        self.pools = []
        self.node_pools = self.pools  # the name every pool component shares; pools stays
        for pool in pools:
            zones_of_pool = pool.zones or tuple(zones)
            plan = plans[pool.name]
            manifest = nodepool.node_pool(
                pool.name,
                pool,
                node_class_ref=NodeClassRef(NODE_CLASS_GROUP, NODE_CLASS_KIND, plan.name),
                shape=shapes[pool.name],
                zones=zones_of_pool,
                consolidate_after=consolidate_after,
                weight=weights[pool.name],
                window=window,
                reserved=bool(pool.reservations),
            )
            self.manifests[pool.name] = manifest
            nodepool.apply(
                f"{name}-{pool.name}",
                manifest,
                pulumi.ResourceOptions(parent=self, depends_on=[*after, classes[plan.name]]),
                window,
            )
            if overlay.needs_overlay(pool):
                self.overlays[pool.name] = overlay.node_overlay(pool.name, pool, shapes[pool.name])
                nodepool.apply(f"{name}-{pool.name}-overlay", self.overlays[pool.name], child)
            self.pools.append(
                nodepool.node_pool_info(
                    pool.name,
                    pool,
                    shapes[pool.name],
                    zones_of_pool,
                    needs_device_plugin=pool.needs_device_plugin,
                    reserved=bool(pool.reservations),
                )
            )
        self.register_outputs(
            {
                "nodePools": sorted(self.manifests),
                "nodeClasses": sorted(self.node_classes),
                "nodeOverlays": sorted(self.overlays),
                "keptNodeClasses": self.kept_classes,
            }
        )
