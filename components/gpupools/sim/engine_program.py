"""The Kubernetes half of a stack as a Pulumi program of its own, attached to an existing cluster.

``facts(stack)`` runs the stack program once on the recording runtime (``gpupools.sim.objects.load``,
the same ``__main__.py``, components and config as ``pulumi up``) and keeps what its Kubernetes half
is built from: the validated ``StackSpec`` and the ``NodePoolInfo`` list the stack hands its
Kubernetes components (the system pool first, then every pool or node group its cloud components
planned). The list is taken where every stack passes it on, ``dcgm_exporter.for_stack``: the stack
programs call it in each of their four modes with ``[system pool, *pools]``.

``kubernetes_half(facts, provider)`` then composes the library's Kubernetes components over those
pools with ``provider`` (a ``pulumi_kubernetes.Provider`` for the cluster), the way each stack
program composes them over the cluster it created (``stacks/azure.py``, ``stacks/aws.py``):

* NAP and Karpenter (``gpupools:provisioner: karpenter``): ``NapNodePools`` / ``KarpenterNodePools``
  (AKSNodeClass / EC2NodeClass and a NodePool per pool) from the spec, ordered by price like the stack;
  EKS Auto Mode (``auto-mode``): ``AutoModeNodePools`` (a NodeClass and a NodePool per pool, the
  system pool's too);
* the NVIDIA device plugin over the served pools, the EFA device plugin over EFA groups (EKS);
* the DCGM exporter (``gpupools:gpuMetrics``), the priority expander (cluster-autoscaler modes);
* the Kueue queues (``gpupools:queueing``): ``KueueQueues`` with the stack's flavour order;
* the smoke-test Jobs (``gpupools:smokeTest``);
* the warm buffers and their schedules (``gpuPools[].warm``): ``WarmCapacity``.

Not in it: the Helm releases (Kueue, cluster-autoscaler, Karpenter): their charts are fetched from
registries this machine cannot reach; in the sim those controllers run as local processes. The CRDs
they would install come from ``sim up`` (``gpupools.sim.objects.crds_for``). And the cloud half
(cluster, node pools, IAM, the AKS access gate, which authenticates with the AKS exec plugin).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import pulumi

from gpupools.conventions import Role
from gpupools.pools import NodePoolInfo
from gpupools.sim import objects
from gpupools.specs import Cloud, GpuDriver, Provisioner, StackSpec


@dataclass(frozen=True)
class StackFacts:
    """What the Kubernetes half of ``stack`` is built from (see the module docstring)."""

    stack: str
    spec: StackSpec
    region: str
    pools: tuple[NodePoolInfo, ...]
    """The ``NodePoolInfo`` list the stack gives its Kubernetes components: the system pool first."""
    remote_hostengine: bool
    """What the stack passes ``dcgm_exporter.for_stack`` as ``remote_hostengine`` (EKS with the node
    monitoring agent: the exporter uses the agent's DCGM host engine)."""
    karpenter_role: str
    """EKS Karpenter or Auto Mode: the node role's name, as the stack's ``EC2NodeClass``/``NodeClass``
    ``spec.role`` has it; else empty."""
    skipped: tuple[str, ...]

    @property
    def system_pool(self) -> NodePoolInfo:
        return self.pools[0]

    @property
    def karpenter(self) -> bool:
        """NodePools buy the nodes: Karpenter, NAP or EKS Auto Mode."""
        return self.spec.provisioner.node_pools


def _provisioning_request_crd(spec: StackSpec, on_cluster: pulumi.ResourceOptions) -> None:
    """The vendored ProvisioningRequest CRD the EKS stack's ``ClusterAutoscaler`` registers beside its
    Helm release (``gpupools.aws.autoscaler.create_provisioning_request_crd``): the release is not in
    this half, the CRD (a plain Kubernetes object) is, from the same file and image tag."""
    import pulumi_kubernetes as k8s

    from gpupools.aws.autoscaler import PROVISIONING_REQUEST_CRD_NAME
    from gpupools.kubernetes.crds import provisioning_request_crd
    from gpupools.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS

    manifest = provisioning_request_crd(CLUSTER_AUTOSCALER_IMAGE_TAGS[spec.cluster.kubernetes_version])
    k8s.apiextensions.v1.CustomResourceDefinition(
        PROVISIONING_REQUEST_CRD_NAME, metadata=manifest["metadata"], spec=manifest["spec"], opts=on_cluster
    )


def _warm_capacity(facts: StackFacts, pools: Sequence[NodePoolInfo], on_cluster: pulumi.ResourceOptions) -> None:
    """The stack's ``WarmCapacity`` (``gpuPools[].warm``) with the mechanism its stack program picks
    (``stacks/aws.py``, ``stacks/azure.py``: ``gpupools.warm.mechanism``). Under EKS
    cluster-autoscaler a CapacityBuffer's CRD is the vendored one of the image's tag that the stack's
    ``ClusterAutoscaler`` registers beside its release (``create_capacity_buffer_crd``): the release
    is not in this half, the CRD is. Under Karpenter it comes with the ``karpenter-crd`` chart, which
    ``sim up`` installs (``gpupools.sim.objects.crds_for``)."""
    from gpupools.aws.autoscaler import create_capacity_buffer_crd
    from gpupools.kubernetes.warm import WarmCapacity
    from gpupools.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS
    from gpupools.warm import Mechanism, mechanism

    spec = facts.spec
    if not any(pool.warm for pool in spec.gpu_pools):
        return
    image_tag = CLUSTER_AUTOSCALER_IMAGE_TAGS.get(spec.cluster.kubernetes_version)
    kind = mechanism(spec.cloud, spec.provisioner, image_tag if spec.cloud is Cloud.AWS else None)
    after: list[pulumi.Resource] = []
    if spec.cloud is Cloud.AWS and not facts.karpenter and kind is Mechanism.CAPACITY_BUFFER and image_tag:
        after.append(create_capacity_buffer_crd(image_tag, on_cluster))
    gpu = [info for info in pools if info.role is Role.GPU]
    WarmCapacity("warm", spec.gpu_pools, gpu, kind, facts.system_pool, after=after, opts=on_cluster)


@contextmanager
def _pools_recorded(into: list[tuple[list[NodePoolInfo], bool]]) -> Iterator[None]:
    from gpupools.kubernetes import dcgm_exporter

    original = dcgm_exporter.for_stack

    def recording(
        metrics: Any, pools: Sequence[NodePoolInfo], opts: pulumi.ResourceOptions, remote_hostengine: bool = False
    ) -> Any:
        into.append((list(pools), remote_hostengine))
        return original(metrics, pools, opts, remote_hostengine=remote_hostengine)

    dcgm_exporter.for_stack = recording  # type: ignore[assignment]
    try:
        yield
    finally:
        dcgm_exporter.for_stack = original  # type: ignore[assignment]


def facts(stack: str, overrides: Mapping[str, Any] | None = None) -> StackFacts:
    """Run ``stack``'s program on the recording runtime and keep its spec and pools."""
    recorded: list[tuple[list[NodePoolInfo], bool]] = []
    with _pools_recorded(recorded):
        loaded = objects.load(stack, overrides=overrides)
    if len(recorded) != 1:
        raise RuntimeError(f"the {stack} program called dcgm_exporter.for_stack {len(recorded)} times, expected once")
    role = next(
        (
            str(m["spec"]["role"])
            for m in loaded.manifests
            if m["kind"] in ("EC2NodeClass", "NodeClass") and "role" in m.get("spec", {})
        ),
        "",
    )
    return StackFacts(
        stack=stack,
        spec=loaded.spec,
        region=loaded.region,
        pools=tuple(recorded[0][0]),
        remote_hostengine=recorded[0][1],
        karpenter_role=role,
        skipped=tuple(loaded.skipped),
    )


def _node_pools(facts: StackFacts, on_cluster: pulumi.ResourceOptions) -> tuple[list[NodePoolInfo], dict[str, int] | None]:
    """The pools besides the system pool, and the NodePool weights under NAP/Karpenter."""
    from gpupools.catalog.prices import price_table
    from gpupools.pricing.estimate import price_order

    spec = facts.spec
    if not facts.karpenter:
        return list(facts.pools[1:]), None
    order = price_order(spec.pools, price_table(spec.cloud), facts.region, auto_mode=spec.provisioner is Provisioner.AUTO_MODE)
    node_pools: Any
    if spec.cloud is Cloud.AZURE:
        from gpupools.azure import NapNodePools

        node_pools = NapNodePools(
            "nodepools",
            pools=spec.pools,
            location=facts.region,
            zones=spec.cluster.zones,
            consolidate_after=spec.autoscaler.scale_down_unneeded_time,
            order=order,
            maintenance=spec.maintenance,
            opts=on_cluster,
            # AKS Automatic: managed GPU pools and gpupools' system NodePool (gpupools.azure.automatic).
            automatic=spec.cluster.automatic,
            system_pool=spec.system_pool if spec.cluster.automatic else None,
        )
    elif spec.provisioner is Provisioner.AUTO_MODE:
        from gpupools.aws import AutoModeNodePools

        node_pools = AutoModeNodePools(
            "nodepools",
            pools=spec.gpu_pools,
            cpu_pools=spec.cpu_pools,
            cluster_name=spec.cluster.name,
            node_role_name=facts.karpenter_role,
            zones=facts.system_pool.zones,
            system_pool=spec.system_pool,
            consolidate_after=spec.autoscaler.scale_down_unneeded_time,
            order=order,
            maintenance=spec.maintenance,
            opts=on_cluster,
        )
    else:
        from gpupools.aws import KarpenterNodePools

        node_pools = KarpenterNodePools(
            "nodepools",
            pools=spec.pools,
            cluster_name=spec.cluster.name,
            node_role_name=facts.karpenter_role,
            # The cluster's zones, which EksCluster gives its system pool too.
            zones=facts.system_pool.zones,
            consolidate_after=spec.autoscaler.scale_down_unneeded_time,
            order=order,
            maintenance=spec.maintenance,
            keep_classes_of=spec.upgrade.from_version,
            opts=on_cluster,
        )
    weights = {info.name: node_pools.manifests[info.pool]["spec"]["weight"] for info in node_pools.pools}
    return list(node_pools.pools), weights


def kubernetes_half(facts: StackFacts, provider: pulumi.ProviderResource) -> None:
    """Register the stack's Kubernetes objects, through the library's components, on ``provider``."""
    from gpupools.catalog.prices import price_table
    from gpupools.kubernetes import EfaDevicePlugin, GpuSmokeTest, NvidiaDevicePlugin, PriorityExpander, dcgm_exporter
    from gpupools.kubernetes.device_plugin import served_pools
    from gpupools.pricing.estimate import stack_costs
    from gpupools.queueing import KueueQueues, flavours
    from gpupools.queueing.check import atomic_scale_up

    spec = facts.spec
    on_cluster = pulumi.ResourceOptions(provider=provider)
    pools, weights = _node_pools(facts, on_cluster)
    served = list(served_pools(pools))
    plugin = (
        NvidiaDevicePlugin("nvidia-device-plugin", served, version=spec.device_plugin.version, opts=on_cluster)
        if served
        else None
    )
    if spec.cloud is Cloud.AWS and any(p.efa_interfaces for p in pools):
        EfaDevicePlugin("efa-device-plugin", pools, opts=on_cluster)
    everything = [facts.system_pool, *pools]
    dcgm_exporter.for_stack(spec.gpu_metrics, everything, on_cluster, remote_hostengine=facts.remote_hostengine)
    prices = None
    if not facts.karpenter:
        prices, _, _ = stack_costs(everything, price_table(spec.cloud), facts.region, spec.cost)
        PriorityExpander("priority-expander", everything, opts=on_cluster, prices=prices)
    if spec.cloud is Cloud.AWS and not facts.karpenter and spec.queueing.enabled and atomic_scale_up(spec):
        _provisioning_request_crd(spec, on_cluster)
    if spec.queueing.enabled:
        KueueQueues(
            "queues",
            flavours(pools, prices=prices, weights=weights, only=spec.queueing.pools),
            namespaces=spec.queueing.namespaces,
            teams=spec.queueing.teams,
            atomic_scale_up=atomic_scale_up(spec),
            opts=on_cluster,
        )
    _warm_capacity(facts, pools, on_cluster)
    if spec.smoke_test.enabled:
        after = pulumi.ResourceOptions(provider=provider, depends_on=[plugin] if plugin else [])
        targets: dict[str, NodePoolInfo] = {}
        for info in pools:
            # gpupools' plugin serves INSTALL pools; AKS's serves MANAGED ones (AKS Automatic).
            if info.role is Role.GPU and info.gpu_driver in (GpuDriver.INSTALL, GpuDriver.MANAGED):
                current = targets.get(info.pool)
                if current is None or (current.capacity.value != "spot" and info.capacity.value == "spot"):
                    targets[info.pool] = info
        for pool, info in targets.items():
            GpuSmokeTest(f"smoke-test-{pool}", pool=info, opts=after)
