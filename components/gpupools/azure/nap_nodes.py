"""``NapNodePools``: AKS Node Auto Provisioning (NAP) node classes and NodePools, one of each per pool.

With ``nodeProvisioningProfile.mode: Auto`` AKS runs Karpenter (Azure/karpenter-provider-azure) as a
managed component and serves its CRDs; gpupools creates only the custom resources:

* **AKSNodeClass** (``karpenter.azure.com/v1beta1``, the storage version of provider v1.14.2 and the
  version the AKS docs write, "Configure AKSNodeClass resources for node auto-provisioning"), one
  per pool and named after it:

  - ``imageFamily: Ubuntu``, the image AKS gives the cluster-autoscaler mode's agent pools when no
    ``osSKU`` is set, so a stack that switches provisioner keeps its OS; every GPU size gpupools
    accepts is listed for Ubuntu in the provider's ``pkg/utils/supported-gpus.yaml`` (pinned by a
    test), which NAP filters GPU sizes by;
  - ``osDiskSizeGB`` from the pool's ``diskSizeGb``;
  - on GPU pools ``gpu.mode: Driver``: NAP installs the NVIDIA driver (the CRD's default, stated),
    and gpupools deploys the device plugin, which NAP does not (the provider's own GPU e2e suite
    deploys one); with ``gpuDriver: none`` ``gpu.mode: None`` ("GPU driver installation is skipped
    — use this when managing GPU drivers via a GPU Operator", the CRD's field description, enum
    ``Driver``/``None``) and no gpupools device plugin. The class is per pool, so the mode is the
    pool's own; a changed mode drifts the pool's nodes (replaced within the maintenance window);
  - ``tags`` naming the pool on the VMs (Azure tag names cannot hold ``/``, so ``gpupools-pool``);
  - no ``vnetSubnetID``: NAP then uses the cluster's node subnet, the System pool's ("If you don't
    specify a subnet, Karpenter uses the default subnet configured during Karpenter installation",
    AKS "Overview of networking configurations for NAP"), which is also the subnet the control-plane
    identity holds Network Contributor on. Changing a class's subnet later is unsupported there.

* **NodePool** (``karpenter.sh/v1``) per pool from the shared builder
  (``gpupools.kubernetes.karpenter.nodepool``: capacity types, labels, taints, limits, disruption,
  weight), with the AKS specifics:

  - zone values ``<region>-<zone>`` (``eastus-1``), the form Karpenter's Azure provider writes to
    ``topology.kubernetes.io/zone`` (``pkg/utils/zones/zones.go``, ``MakeAKSLabelZoneFromARMZone``);
    a regional cluster (no ``cluster.zones``) gets no zone requirement;
  - on GPU pools the Azure SKU selector labels the provider computes for every size
    (``pkg/providers/instancetype/instancetype.go``): ``karpenter.azure.com/sku-family In [N]``,
    ``sku-gpu-manufacturer In [nvidia]``, ``sku-gpu-count In [<GPUs>]`` and, where the size name
    carries an accelerator segment (``Standard_NC4as_T4_v3`` -> ``T4``; ``Standard_ND96asr_v4`` has
    none), ``sku-gpu-name``. The provider sets that label from Azure/skewer's size-name parse (an
    upper-case letter and digits between underscores), so a ``sku-gpu-name`` requirement on a size
    without the segment would match no size at all; ``sku_gpu_name`` follows the same rule;
  - Spot: ``karpenter.sh/capacity-type`` as on EKS. NAP buys Spot VMs with eviction ``Delete`` and
    max price -1 (``pkg/providers/instance/vminstance.go``) and adds no Spot taint, so the pools
    carry only gpupools' taints.

Both kinds are registered on the cluster's Kubernetes provider, which waits for the cluster (AKS
enables NAP, CRDs included, within the cluster operation: its docs check ``kubectl get crds`` right
after ``az aks update --node-provisioning-mode Auto``) and for the ``KubernetesAccessGate``, which
waits (bounded) until the deployer may create both kinds and the API server serves both (``KINDS``
below; ``gpupools.azure.kubernetes_access``), since pulumi-kubernetes retries a create that meets
NoMatch only a few times (``access_gate`` docstring). No priority expander: NodePool weights order the
pools (price order where every pool is priced, else size facts). ``pools`` describes each NodePool as
a ``NodePoolInfo`` for the device plugin, smoke tests and outputs.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import pulumi

from gpupools.azure.automatic import MANAGED_GPU_TAG, SYSTEM_NODEPOOL_WEIGHT
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.catalog.prices import normalize_region
from gpupools.config import DEFAULT_AZURE_ZONES, NAP_RESERVATIONS_WHY
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import KubernetesKind
from gpupools.kubernetes.karpenter import nodepool
from gpupools.kubernetes.karpenter.nodepool import NodeClassRef, NodeShape
from gpupools.pool_args import DEFAULT_CONSOLIDATE_AFTER, PoolArg, nodepool_arguments, pool_specs
from gpupools.pools import NodePoolInfo
from gpupools.specs import Cloud, GpuDriver, MaintenanceSpec, PoolSpec, Provisioner, SharingMode, SystemPoolSpec

TYPE = "gpupools:index:NapNodePools"

NODE_CLASS_API_VERSION = "karpenter.azure.com/v1beta1"
NODE_CLASS_KIND = "AKSNodeClass"
NODE_CLASS_GROUP = "karpenter.azure.com"
AKS_NODE_CLASS = KubernetesKind(NODE_CLASS_GROUP, "v1beta1", NODE_CLASS_KIND, "aksnodeclasses", namespaced=False)
"""Cluster-scoped, resource ``aksnodeclasses`` (the provider's ``karpenter.azure.com_aksnodeclasses.yaml``,
``tests/crds``)."""

KINDS = (nodepool.NODE_POOL, AKS_NODE_CLASS)
"""What it creates (``KubernetesAccessGate`` checks them, and waits until AKS serves them)."""

IMAGE_FAMILY = "Ubuntu"
GPU_MODE = "Driver"
GPU_MODES: Mapping[GpuDriver, str] = {GpuDriver.INSTALL: GPU_MODE, GpuDriver.NONE: "None"}
"""AKSNodeClass ``spec.gpu.mode`` per ``gpuPools[].gpuDriver`` (the pinned CRD's enum: ``Driver``,
``None``); ``managed`` has no mode there and is refused (``gpupools.gpu_driver``)."""
POOL_TAG = "gpupools-pool"

SKU_FAMILY_LABEL = "karpenter.azure.com/sku-family"
SKU_GPU_MANUFACTURER_LABEL = "karpenter.azure.com/sku-gpu-manufacturer"
SKU_GPU_COUNT_LABEL = "karpenter.azure.com/sku-gpu-count"
SKU_GPU_NAME_LABEL = "karpenter.azure.com/sku-gpu-name"
"""Azure/karpenter-provider-azure ``pkg/apis/v1beta1/labels.go`` (v1.14.2)."""

NVIDIA = "nvidia"

NAP_SHARING_WHY = (
    "Karpenter plans a node's physical GPUs, not the replicas the device plugin advertises "
    "(kubernetes-sigs/karpenter #729), so k pending pods buy k nodes; the NodeOverlay that fixes it on EKS needs "
    "Karpenter's alpha NodeOverlay feature gate, which AKS sets for NAP and gpupools cannot confirm"
)
"""Why NAP pools carry no time-slicing or MPS (``config.NAP_SHARING_RULE`` says the same for the config)."""

_ACCELERATOR = re.compile(r"^Standard_[A-Z][A-Za-z]*\d+[a-z]*_([A-Z]\d+)_v\d+\Z")
_FAMILY = re.compile(r"^Standard_([A-Z])")


def sku_gpu_name(size: str) -> str | None:
    """The accelerator segment of an Azure size name (``Standard_NC24ads_A100_v4`` -> ``A100``), the
    value NAP gives ``karpenter.azure.com/sku-gpu-name``; None when the name has none."""
    match = _ACCELERATOR.match(size)
    return match.group(1) if match else None


def sku_family(size: str) -> str:
    """The size family letter (``Standard_NC4as_T4_v3`` -> ``N``), NAP's ``sku-family`` value."""
    match = _FAMILY.match(size)
    if match is None:
        raise ConfigError("instanceTypes", "must be an Azure VM size name (Standard_<family>...)", size)
    return match.group(1)


def zone_values(location: str, zones: Sequence[str]) -> list[str]:
    """``topology.kubernetes.io/zone`` values of AKS zones: ``<region>-<zone>``, region lower-cased."""
    region = normalize_region(location)
    return [f"{region}-{zone}" for zone in zones]


def node_shape(pool: PoolSpec) -> NodeShape:
    """Size facts of the pool's one VM size, from the Azure catalogs."""
    [size] = pool.instance_types
    if size in GPU_SIZES:
        facts = GPU_SIZES[size]
        return NodeShape(vcpus=facts.vcpus, gpus=facts.gpus, gpu_model=facts.gpu_model)
    cpu = CPU_SIZES[size]
    return NodeShape(vcpus=cpu.vcpus, architecture=nodepool.ARCHITECTURES[cpu.arch])


def sku_requirements(pool: PoolSpec, shape: NodeShape) -> list[dict[str, Any]]:
    """The Azure SKU selector requirements of a GPU pool (module docstring); none on CPU pools."""
    if not pool.is_gpu:
        return []
    [size] = pool.instance_types
    result = [
        nodepool.requirement(SKU_FAMILY_LABEL, [sku_family(size)]),
        nodepool.requirement(SKU_GPU_MANUFACTURER_LABEL, [NVIDIA]),
        nodepool.requirement(SKU_GPU_COUNT_LABEL, [str(shape.gpus)]),
    ]
    name = sku_gpu_name(size)
    if name is not None:
        result.append(nodepool.requirement(SKU_GPU_NAME_LABEL, [name]))
    return result


def node_class_spec(pool: PoolSpec) -> dict[str, Any]:
    """The AKSNodeClass ``spec`` of one pool (module docstring). A ``gpuDriver: managed`` pool (AKS
    Automatic only, ``gpupools.azure.automatic``) is an AKS managed GPU pool: ``gpu.mode: Driver``,
    as AKS's managed GPU examples leave the agent pool's driver setting at its default, and the tag
    ``EnableManagedGPUExperience: "true"`` on its VMs."""
    tags = {POOL_TAG: pool.name}
    spec: dict[str, Any] = {"imageFamily": IMAGE_FAMILY, "osDiskSizeGB": pool.disk_size_gb, "tags": tags}
    if pool.is_gpu:
        if pool.gpu_driver is GpuDriver.MANAGED:
            tags[MANAGED_GPU_TAG] = "true"
            spec["gpu"] = {"mode": GPU_MODE}
            return spec
        if pool.gpu_driver not in GPU_MODES:
            raise ConfigError("gpuDriver", "must be install or none under NAP (see gpupools.gpu_driver)", pool.gpu_driver.value)
        spec["gpu"] = {"mode": GPU_MODES[pool.gpu_driver]}
    return spec


def system_pool_info(system: SystemPoolSpec, location: str, zones: Sequence[str]) -> NodePoolInfo:
    """gpupools' system NodePool on an AKS Automatic cluster, as the Kubernetes side sees it
    (``SystemPoolSpec.as_nodepool``): where Kueue and gpupools' own controllers run."""
    pool = system.as_nodepool()
    return nodepool.node_pool_info(pool.name, pool, node_shape(pool), zone_values(location, zones), needs_device_plugin=False)


def check_nap_pool(pool: PoolSpec, path: str) -> None:
    """What NAP cannot do, for a pool that passed the pool rules under Karpenter
    (``pool_args.pool_spec``): the spec form of ``config.check_provisioner_keys``: no ``minSize``
    above 0, no ``onDemandMaxSize``, ``spotMaxPrice`` -1, no sharing, no reservations."""
    if pool.min_size != 0:
        raise ConfigError(f"{path}.min_size", "must be 0: Karpenter keeps no minimum", pool.min_size)
    if pool.on_demand_max_size is not None:
        raise ConfigError(
            f"{path}.on_demand_max_size",
            "has no meaning under NAP: one NodePool's limits cap both capacity types",
            pool.on_demand_max_size,
        )
    if pool.spot_max_price != -1:
        raise ConfigError(f"{path}.spot_max_price", "must be -1: NAP buys Spot VMs with a max price of -1", pool.spot_max_price)
    if pool.sharing.mode is SharingMode.MIG:
        raise ConfigError(
            f"{path}.sharing", "must not be MIG under NAP: an AKSNodeClass has no gpuInstanceProfile", pool.sharing.mode.value
        )
    if pool.sharing.shared:
        raise ConfigError(f"{path}.sharing", "must be none under NAP: " + NAP_SHARING_WHY, pool.sharing.mode.value)
    if pool.reservations:
        raise ConfigError(
            f"{path}.reservations", "must be empty under NAP: " + NAP_RESERVATIONS_WHY, [r.id for r in pool.reservations]
        )


class NapNodePools(pulumi.ComponentResource):
    """An AKSNodeClass and a NodePool per pool for AKS Node Auto Provisioning (module docstring).

    Args:
        name: the component's name.
        pools: the pools: ``PoolSpec``s (``config.load``'s, GPU and CPU) or plain ``gpuPools`` mappings
            (``{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}``), validated
            like stack config (``gpupools.pool_args``).
        location: the cluster's Azure region (for the zone label values).
        zones: the cluster's zones (``["1", "2", "3"]``); a pool's own ``zones`` narrow them; empty
            for a regional cluster (no zone requirement).
        consolidate_after: ``disruption.consolidateAfter`` (``autoscaler.scaleDownUnneededTime``).
        order: pool names, most preferred first, for the weights; default ``nodepool.default_order``.
        maintenance: ``gpupools:maintenance`` (``MaintenanceSpec``): the window in which NodePools allow
            ``Drifted`` disruptions, and their ``terminationGracePeriod``; default ``MaintenanceSpec()``.
        cpu_pools: plain ``cpuPools`` mappings (or CPU ``PoolSpec``s); default none.
        deleted_with: the ``ManagedCluster``: a destroy that deletes it does not delete the NodePools
            and AKSNodeClasses first (Pulumi's ``deletedWith``: "the provider's Delete method will not
            be called for this resource if the specified resource is being deleted as well"). Deleting
            an AKS cluster deletes its node resource group, NAP's VMs included; deleting each NodePool
            first waits for its nodes to drain, which a ``do-not-disrupt`` or PDB-protected pod holds
            forever without a ``terminationGracePeriod`` (third AKS review, B5'). A pool removed from
            the config is still deleted, drain included. Default None (the library's own use decides).
        opts: ``provider`` the cluster's Kubernetes provider.
        automatic: default False. True on an AKS Automatic cluster (``gpupools.azure.automatic``): GPU
            pools are ``gpuDriver: managed`` (AKS managed GPU) or ``none``.
        system_pool: with ``automatic``, gpupools' system NodePool (``systemPool`` sizes, on-demand,
            untainted, no minimum, the lowest weight) for Kueue and gpupools' own controllers; default
            none.

    Attributes:
        node_pools: one ``NodePoolInfo`` per GPU and CPU NodePool (the name every pool component
            uses); ``pools`` is the same list. system_pool: the system NodePool's, or None.
        manifests: NodePool manifests by pool name (the system NodePool's included).
        node_classes: AKSNodeClass manifests by pool name.
    """

    node_pools: list[NodePoolInfo]
    pools: list[NodePoolInfo]
    manifests: dict[str, dict[str, Any]]
    node_classes: dict[str, dict[str, Any]]
    system_pool: NodePoolInfo | None

    def __init__(
        self,
        name: str,
        pools: Sequence[PoolArg],
        location: str,
        zones: Sequence[str] = DEFAULT_AZURE_ZONES,
        consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER,
        order: Sequence[str] | None = None,
        maintenance: MaintenanceSpec | None = None,
        cpu_pools: Sequence[PoolArg] = (),
        deleted_with: pulumi.Resource | None = None,
        opts: pulumi.ResourceOptions | None = None,
        automatic: bool = False,
        system_pool: SystemPoolSpec | None = None,
    ) -> None:
        path = f"NapNodePools({name})"
        window = nodepool_arguments(path, maintenance, consolidate_after)
        if not location:
            raise ConfigError(f"{path}.location", "must be the cluster's Azure region", location)
        if system_pool is not None and not automatic:
            raise ConfigError(
                f"{path}.system_pool",
                "is for automatic clusters only: a Base cluster's System pool is the AksCluster's agent pool",
                system_pool.instance_types,
            )
        user_pools = pool_specs(
            pools,
            Cloud.AZURE,
            path,
            cpu_pools=cpu_pools,
            zones=zones,
            provisioner=Provisioner.KARPENTER,
            check=check_nap_pool,
            automatic=automatic,
        )
        shapes = {pool.name: node_shape(pool) for pool in user_pools}
        weights = nodepool.pool_weights(user_pools, shapes, order, path)
        system = system_pool.as_nodepool() if system_pool is not None else None
        if system is not None:
            shapes[system.name] = node_shape(system)
            weights[system.name] = SYSTEM_NODEPOOL_WEIGHT
        specs = [*([system] if system else []), *user_pools]
        self.node_classes = {
            pool.name: {
                "apiVersion": NODE_CLASS_API_VERSION,
                "kind": NODE_CLASS_KIND,
                "metadata": {"name": pool.name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
                "spec": node_class_spec(pool),
            }
            for pool in specs
        }
        self.manifests = {}
        self.pools = []
        self.node_pools = self.pools  # the name every pool component shares; pools stays
        self.system_pool = None
        for pool in specs:
            pool_zones = zone_values(location, pool.zones or tuple(zones)) or None
            self.manifests[pool.name] = nodepool.node_pool(
                pool.name,
                pool,
                node_class_ref=NodeClassRef(NODE_CLASS_GROUP, NODE_CLASS_KIND, pool.name),
                shape=shapes[pool.name],
                zones=pool_zones,
                consolidate_after=consolidate_after,
                weight=weights[pool.name],
                window=window,
                extra_requirements=sku_requirements(pool, shapes[pool.name]),
            )
            info = nodepool.node_pool_info(pool.name, pool, shapes[pool.name], pool_zones or (), pool.needs_device_plugin)
            if pool is system:
                self.system_pool = info
            else:
                self.pools.append(info)

        super().__init__(TYPE, name, None, opts)
        for pool in specs:
            # Both wait, on delete, as long as the pool's nodes may take to drain (nodepool.delete_timeout).
            node_class = nodepool.apply(
                f"{name}-{pool.name}-class",
                self.node_classes[pool.name],
                pulumi.ResourceOptions(parent=self, deleted_with=deleted_with),
                window,
            )
            nodepool.apply(
                f"{name}-{pool.name}",
                self.manifests[pool.name],
                pulumi.ResourceOptions(parent=self, depends_on=[node_class], deleted_with=deleted_with),
                window,
            )
        self.register_outputs({"nodePools": sorted(self.manifests), "nodeClasses": sorted(self.node_classes)})
