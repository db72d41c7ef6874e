"""The AKS stack: compose the components from the validated config.

``Pulumi.<stack>.yaml`` -> ``gpupools.config.load()`` -> ``AksCluster`` (System pool, network,
identity, kubeconfig, Kubernetes provider) -> one ``GpuNodePool`` per ``gpuPools`` entry and one
``CpuNodePool`` per ``cpuPools`` entry, every agent pool operation chained after the previous one -> the NVIDIA device plugin over every GPU pool,
the DCGM exporter over every GPU pool without one (``gpupools:gpuMetrics``), the priority expander over every pool (Spot above on-demand above system, the cheaper first), and the optional smoke
test -> stack outputs ``clusterName``, ``kubeconfig`` (secret), ``nodePools`` (with prices) and ``cost``.

With ``gpupools:provisioner: karpenter`` the cluster runs Node Auto Provisioning instead, and there
are no GPU or CPU agent pools, no autoscaler profile and no priority expander:

    AksCluster                          nodeProvisioningProfile mode Auto, fixed-size System pool, Cilium
    NodeImageMaintenance                aksManagedNodeOSUpgradeSchedule (and the patch channel's
                                        aksManagedAutoUpgradeSchedule) from gpupools:maintenance, in both modes
    NapNodePools                        an AKSNodeClass and a NodePool per gpuPools/cpuPools entry,
                                        Drifted disruptions only inside the same window
    NvidiaDevicePlugin                  on the GPU NodePools' nodes (NAP installs the driver, not the plugin)
    DcgmExporter (gpuMetrics)           a DCGM exporter DaemonSet and scrape Service per GPU NodePool
    GpuSmokeTest per pool (optional)    on the pool's NodePool, Spot preferred

With ``gpupools:cluster.sku: Automatic`` (AKS Automatic, ``gpupools.azure.automatic``) the same NAP
mode without what AKS runs there: no System agent pool (a system NodePool for Kueue instead), no
network, no device plugin or DCGM exporter (GPU pools are AKS managed GPU pools).

With ``gpupools:queueing`` on, in either mode, Kueue (chart on the System pool) and KueueQueues:
flavours in the priority expander's order (NodePool weights under NAP), quotas at max, and under the
managed cluster-autoscaler the ProvisioningRequest admission check.
"""

from __future__ import annotations

import pulumi
from gpupools import config, rules
from gpupools.azure import AksCluster, CpuNodePool, GpuNodePool, NapNodePools, NodeImageMaintenance
from gpupools.azure.upgrade import upgrade_estimate
from gpupools.catalog.prices import price_table
from gpupools.conventions import CapacityType
from gpupools.errors import ConfigError
from gpupools.kubernetes import GpuSmokeTest, NvidiaDevicePlugin, PriorityExpander, dcgm_exporter
from gpupools.kubernetes.device_plugin import served_pools
from gpupools.kubernetes.warm import WarmCapacity
from gpupools.pools import NodePoolInfo
from gpupools.pricing.estimate import price_order, stack_costs
from gpupools.pricing.warm import with_warm_costs
from gpupools.queueing import install as install_queueing
from gpupools.queueing.check import atomic_scale_up
from gpupools.specs import Cloud, GpuDriver, StackSpec
from gpupools.warm import Mechanism


def load_location() -> str:
    """``azure-native:location``: the region of every resource. Required, so nothing lands in a
    region nobody chose."""
    location = pulumi.Config("azure-native").get("location")
    if not location:
        raise ConfigError("azure-native:location", "is required: the Azure region (e.g. eastus)", location)
    return location


def smoke_test_target(pools: list[NodePoolInfo]) -> NodePoolInfo:
    """The pool a ``gpuPools`` entry's smoke test runs on: its Spot pool, else its only pool."""
    spot = [p for p in pools if p.capacity is CapacityType.SPOT]
    return spot[0] if spot else pools[0]


def main() -> None:
    spec = config.load()
    for warning in rules.stack_warnings(spec):  # AKS MIG pools at zero (Azure/AKS #4216)
        pulumi.log.warn(warning)
    location = load_location()
    cluster_name = spec.cluster.name

    cluster = AksCluster(
        cluster_name,
        cluster=spec.cluster,
        network=spec.network,
        system_pool=spec.system_pool,
        autoscaler=spec.autoscaler,
        location=location,
        node_auto_provisioning=spec.node_auto_provisioning,
        # Contributor on each Capacity Reservation Group's resource group for the control-plane identity.
        capacity_reservation_group_ids=sorted({r.id for pool in spec.gpu_pools for r in pool.reservations}),
        queueing=spec.queueing.enabled,
        # With the ProvisioningRequest check, the access gate also waits until AKS serves that API.
        atomic_scale_up=spec.queueing.enabled and atomic_scale_up(spec),
        system_pool_path="gpupools:systemPool",
        network_path="gpupools:network",
        # cluster.sku Automatic: AKS runs the system pool, NAP, the network and the GPU stack (gpupools.azure.automatic).
        cluster_path="gpupools:cluster",
    )
    # When AKS may reimage nodes and move patch versions: both modes (gpupools.azure.maintenance).
    NodeImageMaintenance(
        f"{spec.cluster.name}-maintenance",
        resource_group_name=cluster.resource_group_name,
        cluster_name=cluster.name,
        maintenance=spec.maintenance,
    )
    if spec.node_auto_provisioning:
        nap_mode(spec, cluster, location)
    else:
        autoscaler_mode(spec, cluster, location)


def warm_pools(
    spec: StackSpec, infos: list[NodePoolInfo], system: NodePoolInfo, cluster: AksCluster, after: list[pulumi.Resource]
) -> None:
    """Placeholder pods for the warm pools (``gpupools.warm``): AKS's managed autoscaler and NAP
    expose no CapacityBuffer switch. After the pools they select."""
    if not any(pool.warm for pool in spec.gpu_pools):
        return
    assert spec.cloud is Cloud.AZURE
    WarmCapacity(
        "warm",
        spec.gpu_pools,
        infos,
        Mechanism.PLACEHOLDER_PODS,
        system,
        after=after,
        opts=pulumi.ResourceOptions(provider=cluster.provider),
    )


def nap_mode(spec: StackSpec, cluster: AksCluster, location: str) -> None:
    """The node-image maintenance window, an AKSNodeClass and a NodePool per pool; the device plugin
    and smoke tests on them."""
    # NodeImageMaintenance (main) says when NAP picks up a new node image; the NodePools' budgets say
    # when it may replace nodes.
    on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
    node_pools = NapNodePools(
        "nodepools",
        pools=spec.pools,
        location=location,
        zones=spec.cluster.zones,
        consolidate_after=spec.autoscaler.scale_down_unneeded_time,
        # Cheapest node-hour first where the price catalog knows every pool (else size facts).
        order=price_order(spec.pools, price_table(spec.cloud), location),
        maintenance=spec.maintenance,
        # `pulumi destroy` deletes the cluster, and AKS its NAP nodes with it: no NodePool drain to wait on.
        deleted_with=cluster.managed_cluster,
        opts=on_cluster,
        # AKS Automatic: managed GPU pools, and a system NodePool for Kueue (AKS's system nodes are its own).
        automatic=spec.cluster.automatic,
        system_pool=spec.system_pool if spec.cluster.automatic else None,
    )
    system = node_pools.system_pool or cluster.system_pool
    served = list(served_pools(node_pools.pools))
    plugin = (
        NvidiaDevicePlugin("nvidia-device-plugin", served, version=spec.device_plugin.version, opts=on_cluster)
        if served
        else None
    )
    warm_pools(spec, node_pools.pools, system, cluster, [node_pools])
    # None on Automatic: managed GPU pools run AKS's own exporter (gpupools.azure.automatic).
    dcgm_exporter.for_stack(spec.gpu_metrics, [system, *node_pools.pools], on_cluster)
    if spec.smoke_test.enabled:
        after = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[node_pools, *([plugin] if plugin else [])])
        # The pools whose device plugin is gpupools' or AKS's (managed GPU on Automatic): each advertises GPUs.
        managed = [p for p in node_pools.pools if p.gpu_driver is GpuDriver.MANAGED]
        for info in [*served, *managed]:
            GpuSmokeTest(f"smoke-test-{info.pool}", pool=info, opts=after)
    install_queueing(
        spec,
        system,
        node_pools.pools,
        cluster.provider,
        weights={info.name: node_pools.manifests[info.pool]["spec"]["weight"] for info in node_pools.pools},
    )

    _, outputs, cost = stack_costs([system, *node_pools.pools], price_table(spec.cloud), location, spec.cost, karpenter=True)
    pulumi.export("clusterName", cluster.name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", outputs)
    pulumi.export("cost", with_warm_costs(cost, spec, location))
    # The up moves the control plane and the System pool; NAP nodes follow by drift in the maintenance window.
    pulumi.export("upgrade", upgrade_estimate(system, [], {}))


def autoscaler_mode(spec: StackSpec, cluster: AksCluster, location: str) -> None:
    """A Spot and an on-demand agent pool per pool, chained; the priority expander over them."""
    cluster_name = spec.cluster.name

    # A brought subnet is a plain string and becomes part of each pool's name digest.
    subnet_id = spec.network.subnet_id or cluster.subnet_id
    # GPU pools, then CPU pools, in one chain: AKS runs one agent pool operation at a time per cluster.
    created: dict[type, list[GpuNodePool]] = {GpuNodePool: [], CpuNodePool: []}
    # The chain starts at the cluster: in an upgrade the control plane and System pool move first, and
    # the first pool's live count is read once the cluster's operation has finished.
    after: pulumi.Resource | None = cluster.managed_cluster
    for component, entries in ((GpuNodePool, spec.gpu_pools), (CpuNodePool, spec.cpu_pools)):
        for pool in entries:
            node_pool = component(
                f"{cluster_name}-{pool.name}",
                pool,
                resource_group_name=cluster.resource_group_name,
                cluster_name=cluster.name,
                subnet_id=subnet_id,
                cluster_zones=spec.cluster.zones,
                after=after,
                live_counts=cluster.live_counts,
                kubernetes_version=spec.cluster.kubernetes_version,
                # A reserved pool created in the same up as its grant warns (gpupools.azure.reservation_grant).
                reservation_grants=cluster.reservation_grants,
            )
            created[component].append(node_pool)
            after = node_pool.last
    gpu_pools, cpu_pools = created[GpuNodePool], created[CpuNodePool]

    gpu_infos = [info for gpu_pool in gpu_pools for info in gpu_pool.pools]
    cpu_infos = [info for cpu_pool in cpu_pools for info in cpu_pool.pools]
    k8s_opts = pulumi.ResourceOptions(provider=cluster.provider)
    # No plugin when every GPU pool brings its own (gpuDriver: none): the component refuses zero pools.
    plugin = (
        NvidiaDevicePlugin("nvidia-device-plugin", pools=gpu_infos, version=spec.device_plugin.version, opts=k8s_opts)
        if served_pools(gpu_infos)
        else None
    )
    all_pools = [cluster.system_pool, *gpu_infos, *cpu_infos]
    dcgm_exporter.for_stack(spec.gpu_metrics, all_pools, k8s_opts)
    prices, node_pools, cost = stack_costs(all_pools, price_table(spec.cloud), location, spec.cost)
    PriorityExpander("priority-expander", pools=all_pools, opts=k8s_opts, prices=prices)
    # Each buffer after its own pool only, and Kueue after no pool: removing or replacing pools
    # (`destroy --target-dependents` on pool components, step 3 of the switch to NAP) takes only
    # their own buffers, never the queues (third AKS review, NM5). Kueue sets its ProvisioningRequest
    # controller up only if the API is served when it starts: the cluster's provider waits for the
    # access gate, which waits for that API with atomicScaleUp (kubernetes_access.gate_served).
    warm_pools(spec, gpu_infos, cluster.system_pool, cluster, [gpu_pool for gpu_pool in gpu_pools if gpu_pool.spec.warm])
    install_queueing(spec, cluster.system_pool, [*gpu_infos, *cpu_infos], cluster.provider, prices=prices)
    if spec.smoke_test.enabled:
        # After the plugin (no GPU is advertised without it) and after every pool exists.
        after_all = pulumi.ResourceOptions(
            provider=cluster.provider, depends_on=[*([plugin] if plugin else []), *[p.last for p in gpu_pools]]
        )
        # Not on gpuDriver: none pools: their driver and plugin are installed after this stack, by the user.
        for gpu_pool in (p for p in gpu_pools if p.spec.gpu_driver is GpuDriver.INSTALL):
            GpuSmokeTest(f"smoke-test-{gpu_pool.spec.name}", pool=smoke_test_target(gpu_pool.pools), opts=after_all)

    pulumi.export("clusterName", cluster.name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", node_pools)
    pulumi.export("cost", with_warm_costs(cost, spec, location))
    # How long a Kubernetes minor upgrade can take at worst, against the deploy job's limit (docs/aks.md).
    pools = [*gpu_infos, *cpu_infos]
    pulumi.export("upgrade", upgrade_estimate(cluster.system_pool, pools, {p.name: p.upgrade for p in spec.pools}))
