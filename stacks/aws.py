"""The EKS stack: compose the components from the validated config.

    config.load()                       every rule checked before anything is registered
    EksCluster                          VPC, control plane, node role + access entry, system node group, CoreDNS add-on
    GpuNodeGroup per gpuPools entry     a group per capacity reservation, per zone a Spot group and its
                                        on-demand fallback, ASG tags; node auto repair on (gpupools:nodeRepair)
    node monitoring agent add-on        with gpupools:nodeRepair: the GPU health conditions repair acts on
    CpuNodeGroup per cpuPools entry     the same with a standard AMI and no GPU parts
    ClusterAutoscaler                   IRSA role + official chart, priority expander on
    NvidiaDevicePlugin                  on the GPU groups whose AMI lacks a plugin (none: skipped)
    EfaDevicePlugin                     on the groups of efa: true pools (none: skipped)
    DcgmExporter (gpuMetrics)           a DCGM exporter DaemonSet and scrape Service per GPU pool the plugin serves
    PriorityExpander                    reserved > Spot > on-demand > system, cheaper first, regexes on the groups' ASG names
    GpuSmokeTest per pool (optional)    on the pool's first Spot group
    Kueue, KueueQueues (optional)       gpupools:queueing: the chart, flavours in the expander's order,
                                        queues; the autoscaler serves ProvisioningRequests (atomic check)

With ``gpupools:provisioner: karpenter`` the pools are Karpenter's instead, and neither node groups
nor cluster-autoscaler exist:

    EksCluster                          the same (system node group, node role + access entry)
    Karpenter                           IRSA role, interruption queue + rules, discovery tags, CRD + controller charts
                                        (NodeRepair gate with gpupools:nodeRepair.enabled: true, and the agent add-on)
    KarpenterNodePools                  EC2NodeClasses, one NodePool per gpuPools/cpuPools entry (Drifted only in
                                        the gpupools:maintenance window), a NodeOverlay per shared GPU pool
    NvidiaDevicePlugin                  on the GPU NodePools' nodes whose AMI lacks a plugin
    DcgmExporter (gpuMetrics)           a DCGM exporter DaemonSet and scrape Service per such NodePool
    GpuSmokeTest per pool (optional)    on the pool's NodePool, Spot preferred
    Kueue, KueueQueues (optional)       gpupools:queueing: a flavour per NodePool in weight order, no
                                        ProvisioningRequests (Karpenter does not serve them)

Stack outputs: ``clusterName``, ``kubeconfig`` (secret), ``nodePools`` (with prices), ``cost``.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
from gpupools import config, rules
from gpupools.aws import ClusterAutoscaler, CpuNodeGroup, EksCluster, GpuNodeGroup
from gpupools.aws.auto_mode import AutoModeNodePools
from gpupools.aws.karpenter import DISCOVERY_TAG, Karpenter
from gpupools.aws.karpenter_nodes import KarpenterNodePools
from gpupools.aws.node_repair import create_node_monitoring_agent
from gpupools.catalog.prices import price_table
from gpupools.conventions import CapacityType, Role
from gpupools.kubernetes import EfaDevicePlugin, GpuSmokeTest, NvidiaDevicePlugin, PriorityExpander, dcgm_exporter
from gpupools.kubernetes.device_plugin import served_pools
from gpupools.kubernetes.karpenter import overlay
from gpupools.kubernetes.warm import WarmCapacity
from gpupools.pools import NodePoolInfo
from gpupools.pricing.estimate import auto_mode_fee_warning, price_order, stack_costs
from gpupools.pricing.warm import with_warm_costs
from gpupools.queueing import install as install_queueing
from gpupools.queueing.check import atomic_scale_up
from gpupools.specs import Cloud, GpuDriver, Provisioner, StackSpec
from gpupools.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS
from gpupools.warm import mechanism as warm_mechanism


def smoke_test_target(groups: list[NodePoolInfo]) -> NodePoolInfo:
    """The group a pool's smoke test runs on: its first Spot group, else its first group."""
    return next((g for g in groups if g.capacity is CapacityType.SPOT), groups[0])


def main() -> None:
    spec = config.load()
    # Past EKS's default node group quota: said before anything is registered (the preflight reads the real quota).
    for warning in rules.stack_warnings(spec):
        pulumi.log.warn(warning)
    region = pulumi.Config("aws").get("region") or aws.get_region().region
    karpenter = spec.provisioner.node_pools  # Karpenter's NodePools: gpupools' Karpenter or EKS Auto Mode's
    auto_mode = spec.provisioner is Provisioner.AUTO_MODE

    cluster = EksCluster(
        spec.cluster.name,
        cluster=spec.cluster,
        network=spec.network,
        system_pool=spec.system_pool,
        region=region,
        # Karpenter finds the subnets of a created VPC by this tag; brought subnets get aws.ec2.Tag.
        private_subnet_tags={DISCOVERY_TAG: spec.cluster.name} if karpenter else None,
        # No cluster-autoscaler under Karpenter, so no node-template tags on the system group's ASG.
        autoscaler_tags=not karpenter,
        auto_mode=auto_mode,
    )
    if auto_mode:
        auto_mode_pools(spec, cluster, region)
    elif karpenter:
        karpenter_mode(spec, cluster, region)
    else:
        autoscaler_mode(spec, cluster, region)


def node_monitoring_agent(cluster: EksCluster, pools: list[NodePoolInfo]) -> None:
    """The EKS node monitoring agent add-on (``gpupools.aws.node_repair``): the GPU health
    conditions node auto repair acts on. After the system node group, the only nodes its pods can
    run on while the GPU pools are at zero (the provider waits for the add-on to be ACTIVE)."""
    system = cluster.system_nodes()
    create_node_monitoring_agent(
        "node-monitoring-agent",
        cluster.cluster_name,
        pools,
        opts=pulumi.ResourceOptions(depends_on=[system.node_group]),
    )


def karpenter_mode(spec: StackSpec, cluster: EksCluster, region: str) -> None:
    """Karpenter, its node classes and NodePools; the device plugin and smoke tests on them."""
    system = cluster.system_nodes()
    karpenter = Karpenter(
        "karpenter",
        cluster_name=cluster.cluster_name,
        region=region,
        node_role_arn=cluster.node_role_arn,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_provider_url=cluster.oidc_provider_url,
        subnet_ids=list(cluster.private_subnet_ids_by_zone.values()),
        security_group_id=cluster.eks_cluster.cluster_security_group_id,
        tag_subnets=spec.network.bring_your_own,
        # Shared GPU pools get a NodeOverlay, which Karpenter reads only with its alpha gate on.
        node_overlay=overlay.any_overlay(spec.pools),
        # NodePools that allow `reserved`: the gate stated, reservation interruption warnings routed.
        reserved_capacity=any(pool.reservations for pool in spec.pools),
        # gpupools:nodeRepair (off by default here: the gate is alpha); the agent add-on below reports GPU health.
        node_repair=spec.node_repair.enabled,
        permissions_boundary=spec.cluster.permissions_boundary,
        # Warm pools are CapacityBuffers, which Karpenter serves behind its alpha gate (gpupools.warm).
        capacity_buffer=any(pool.warm for pool in spec.gpu_pools),
        # The controller's pods need the system node group to schedule on, and egress (EC2, IAM, SQS)
        # until its NodeClaims and EC2NodeClasses are gone: destroy deletes the NAT gateway and the
        # private routes only after the release and everything that depends on it (network module).
        # Likewise CoreDNS: destroy deletes the add-on only after the release, its NodePools and
        # EC2NodeClasses (the controller itself resolves through the VPC: karpenter.DNS_POLICY).
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[system.node_group, system.coredns, *cluster.egress]),
    )
    node_pools = KarpenterNodePools(
        "nodepools",
        pools=spec.pools,
        cluster_name=cluster.cluster_name,
        node_role_name=cluster.node_role.name,
        zones=cluster.zones,
        consolidate_after=spec.autoscaler.scale_down_unneeded_time,
        # Cheapest node-hour first where the price catalog knows every pool (else size facts).
        order=price_order(spec.pools, price_table(spec.cloud), region),
        maintenance=spec.maintenance,
        keep_classes_of=spec.upgrade.from_version,
        # Custom resources after the release that installs their CRDs and the controller.
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[karpenter.release]),
    )
    if spec.node_repair.enabled:
        node_monitoring_agent(cluster, node_pools.pools)
    if any(pool.warm for pool in spec.gpu_pools):
        WarmCapacity(
            "warm",
            spec.gpu_pools,
            node_pools.pools,
            warm_mechanism(Cloud.AWS, Provisioner.KARPENTER),
            system.pool,
            # The CRD comes with the karpenter-crd release; the buffers name the pools' NodePools' labels.
            after=[karpenter.crd_release, node_pools],
            opts=pulumi.ResourceOptions(provider=cluster.provider),
        )
    served = list(served_pools(node_pools.pools))
    on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
    plugin = (
        NvidiaDevicePlugin("nvidia-device-plugin", served, version=spec.device_plugin.version, opts=on_cluster)
        if served
        else None
    )
    # With node repair the agent's dcgm-server already runs a host engine on every GPU node: share it.
    dcgm_exporter.for_stack(
        spec.gpu_metrics, [system.pool, *node_pools.pools], on_cluster, remote_hostengine=spec.node_repair.enabled
    )
    if spec.smoke_test.enabled:
        after = [node_pools, *([plugin] if plugin else [])]
        for info in node_pools.pools:
            # Not on gpuDriver: none pools: their device plugin is installed after this stack, by the user.
            if info.role is Role.GPU and info.gpu_driver is GpuDriver.INSTALL:
                GpuSmokeTest(f"smoke-{info.pool}", info, opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=after))
    install_queueing(
        spec,
        system.pool,
        node_pools.pools,
        cluster.provider,
        after=[system.node_group],
        weights={info.name: node_pools.manifests[info.pool]["spec"]["weight"] for info in node_pools.pools},
    )

    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    _, outputs, cost = stack_costs([system.pool, *node_pools.pools], price_table(spec.cloud), region, spec.cost, karpenter=True)
    pulumi.export("nodePools", outputs)
    pulumi.export("cost", with_warm_costs(cost, spec, region))
    if node_pools.kept_classes:
        # gpupools:upgrade.fromVersion: the old classes left for `kubectl delete ec2nodeclass ... --wait=false`.
        pulumi.export("keptNodeClasses", node_pools.kept_classes)


def auto_mode_pools(spec: StackSpec, cluster: EksCluster, region: str) -> None:
    """EKS Auto Mode: a NodeClass and a NodePool per pool, the system pool's too; nothing the cloud
    runs itself (no device plugin, node-monitoring add-on, autoscaler or Karpenter release)."""
    on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
    node_pools = AutoModeNodePools(
        "nodepools",
        pools=spec.gpu_pools,
        cpu_pools=spec.cpu_pools,
        cluster_name=cluster.cluster_name,
        node_role_name=cluster.node_role.name,
        zones=cluster.zones,
        system_pool=spec.system_pool,
        consolidate_after=spec.autoscaler.scale_down_unneeded_time,
        # EC2 price plus the Auto Mode fee where the catalog has every pool's fee (else EC2 prices alone).
        order=price_order(spec.pools, price_table(spec.cloud), region, auto_mode=True),
        maintenance=spec.maintenance,
        # The node role's access policy first: a NodeClaim of a role without it never joins.
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster.node_access_policy]),
    )
    assert node_pools.system_pool is not None
    system_pool = node_pools.system_pool
    # The Auto Mode fee of a size the catalog lacks is left out of the costs and weights: said, not taken as 0.
    fee_warning = auto_mode_fee_warning(
        price_table(spec.cloud), region, [size for info in (system_pool, *node_pools.pools) for size in info.instance_types]
    )
    if fee_warning:
        pulumi.log.warn(fee_warning)
    if any(pool.warm for pool in spec.gpu_pools):
        WarmCapacity(
            "warm",
            spec.gpu_pools,
            node_pools.pools,
            warm_mechanism(Cloud.AWS, Provisioner.AUTO_MODE),
            system_pool,
            after=[node_pools],
            opts=on_cluster,
        )
    # Auto Mode's nodes run no node-monitoring agent host engine gpupools can share: the exporter runs its own.
    dcgm_exporter.for_stack(spec.gpu_metrics, [system_pool, *node_pools.pools], on_cluster, remote_hostengine=False)
    if spec.smoke_test.enabled:
        for info in node_pools.pools:
            if info.role is Role.GPU:
                GpuSmokeTest(
                    f"smoke-{info.pool}", info, opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[node_pools])
                )
    install_queueing(
        spec,
        system_pool,
        node_pools.pools,
        cluster.provider,
        after=[node_pools],
        weights={info.name: node_pools.manifests[info.pool]["spec"]["weight"] for info in node_pools.pools},
    )

    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    _, outputs, cost = stack_costs([system_pool, *node_pools.pools], price_table(spec.cloud), region, spec.cost, karpenter=True)
    pulumi.export("nodePools", outputs)
    pulumi.export("cost", with_warm_costs(cost, spec, region))


def autoscaler_mode(spec: StackSpec, cluster: EksCluster, region: str) -> None:
    """Per-zone Spot and on-demand node groups, cluster-autoscaler and its priority expander."""
    system = cluster.system_nodes()
    pools, cpu_pools = (
        [
            component(
                pool.name,
                pool=pool,
                cluster_name=cluster.cluster_name,
                # Read from the node role's access entry: the groups wait for the cluster and the entry.
                node_role_arn=cluster.node_role_arn,
                subnet_ids_by_zone=cluster.private_subnet_ids_by_zone,
                kubernetes_version=cluster.kubernetes_version,
                region=region,
                live_sizes=cluster.live_sizes,
                # EFA pools: their interfaces carry the cluster security group and an EFA group in the VPC.
                security_group_id=cluster.eks_cluster.cluster_security_group_id,
                vpc_id=cluster.vpc_id,
                # gpupools:nodeRepair: nodeRepairConfig on GPU groups only (CPU pools keep EKS's default, off).
                node_repair=spec.node_repair.enabled and component is GpuNodeGroup,
                # Destroy the groups before the node role's policies (iam.NodeRole) and the egress
                # their nodes join through (network module).
                opts=pulumi.ResourceOptions(depends_on=[*cluster.node_role_policy_attachments, *cluster.egress]),
            )
            for pool in entries
        ]
        for component, entries in ((GpuNodeGroup, spec.gpu_pools), (CpuNodeGroup, spec.cpu_pools))
    )
    gpu_groups = [group for pool in pools for group in pool.groups]
    cpu_groups = [group for pool in cpu_pools for group in pool.groups]
    if spec.node_repair.enabled:
        node_monitoring_agent(cluster, gpu_groups)

    on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
    warm = warm_mechanism(
        Cloud.AWS, Provisioner.CLUSTER_AUTOSCALER, CLUSTER_AUTOSCALER_IMAGE_TAGS.get(spec.cluster.kubernetes_version)
    )
    any_warm = any(pool.warm for pool in spec.gpu_pools)
    autoscaler = ClusterAutoscaler(
        "cluster-autoscaler",
        cluster_name=cluster.cluster_name,
        region=region,
        kubernetes_version=cluster.kubernetes_version,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_provider_url=cluster.oidc_provider_url,
        autoscaler=spec.autoscaler,
        # Kueue's all-or-nothing scale-up: the flags and the ProvisioningRequest CRD.
        provisioning_requests=spec.queueing.enabled and atomic_scale_up(spec),
        permissions_boundary=spec.cluster.permissions_boundary,
        # Warm pools as CapacityBuffers where the pinned image serves them (gpupools.warm.mechanism).
        capacity_buffers=any_warm and warm.value == "CapacityBuffer",
        # The release waits for its pod, which needs the system node group.
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[system.node_group]),
    )
    served = list(served_pools(gpu_groups))
    plugin = (
        NvidiaDevicePlugin("nvidia-device-plugin", served, version=spec.device_plugin.version, opts=on_cluster)
        if served
        else None
    )
    if any(g.efa_interfaces for g in gpu_groups):
        EfaDevicePlugin("efa-device-plugin", gpu_groups, opts=on_cluster)
    all_groups = [system.pool, *gpu_groups, *cpu_groups]
    dcgm_exporter.for_stack(spec.gpu_metrics, all_groups, on_cluster, remote_hostengine=spec.node_repair.enabled)
    prices, node_pools, cost = stack_costs(all_groups, price_table(spec.cloud), region, spec.cost)
    PriorityExpander("priority-expander", all_groups, opts=on_cluster, prices=prices)
    if any_warm:
        WarmCapacity("warm", spec.gpu_pools, gpu_groups, warm, system.pool, after=[autoscaler], opts=on_cluster)
    # Kueue starts after the ProvisioningRequest CRD (the autoscaler component) and orders its
    # flavours with the expander's prices.
    install_queueing(
        spec,
        system.pool,
        [*gpu_groups, *cpu_groups],
        cluster.provider,
        after=[system.node_group, autoscaler],
        prices=prices,
    )

    if spec.smoke_test.enabled:
        after = [autoscaler, *([plugin] if plugin else [])]
        # Not on gpuDriver: none pools: their device plugin is installed after this stack, by the user.
        for node_groups in (p for p in pools if p.spec.gpu_driver is GpuDriver.INSTALL):
            GpuSmokeTest(
                f"smoke-{node_groups.spec.name}",
                smoke_test_target(node_groups.groups),
                opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=after),
            )

    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", node_pools)
    pulumi.export("cost", with_warm_costs(cost, spec, region))
