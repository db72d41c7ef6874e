"""The EKS stack: compose the components from the validated config.

    config.load()                       every rule checked before anything is registered
    EksCluster                          VPC, control plane, node role + access entry, system node group, CoreDNS add-on
    GpuNodeGroup per gpuPools entry     per zone a Spot group and its on-demand fallback, ASG tags
    CpuNodeGroup per cpuPools entry     the same with a standard AMI and no GPU parts
    ClusterAutoscaler                   IRSA role + official chart, priority expander on
    NvidiaDevicePlugin                  on the GPU groups whose AMI lacks a plugin (none: skipped)
    PriorityExpander                    Spot > on-demand > system, cheaper first, regexes on the groups' ASG names
    GpuSmokeTest per pool (optional)    on the pool's first Spot group

Stack outputs: ``clusterName``, ``kubeconfig`` (secret), ``nodePools`` (with prices), ``cost``.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components import config
from components.aws import ClusterAutoscaler, CpuNodeGroup, EksCluster, GpuNodeGroup
from components.catalog.prices import price_table
from components.conventions import CapacityType
from components.kubernetes import GpuSmokeTest, NvidiaDevicePlugin, PriorityExpander
from components.pools import NodePoolInfo
from components.pricing.estimate import stack_costs


def smoke_test_target(groups: list[NodePoolInfo]) -> NodePoolInfo:
    """The group a pool's smoke test runs on: its first Spot group, else its first group."""
    return next((g for g in groups if g.capacity is CapacityType.SPOT), groups[0])


def main() -> None:
    spec = config.load()
    region = pulumi.Config("aws").get("region") or aws.get_region().region

    cluster = EksCluster(
        spec.cluster.name,
        cluster=spec.cluster,
        network=spec.network,
        system_pool=spec.system_pool,
        region=region,
    )
    pools = [
        GpuNodeGroup(
            pool.name,
            pool=pool,
            cluster_name=cluster.cluster_name,
            # Read from the node role's access entry: the groups wait for the cluster and the entry.
            node_role_arn=cluster.node_role_arn,
            subnet_ids_by_zone=cluster.private_subnet_ids_by_zone,
            kubernetes_version=cluster.kubernetes_version,
            region=region,
            live_sizes=cluster.live_sizes,
            # Destroy the groups before the node role's policies (iam.NodeRole).
            opts=pulumi.ResourceOptions(depends_on=cluster.node_role_policy_attachments),
        )
        for pool in spec.gpu_pools
    ]
    cpu_pools = [
        CpuNodeGroup(
            pool.name,
            pool=pool,
            cluster_name=cluster.cluster_name,
            node_role_arn=cluster.node_role_arn,
            subnet_ids_by_zone=cluster.private_subnet_ids_by_zone,
            kubernetes_version=cluster.kubernetes_version,
            region=region,
            live_sizes=cluster.live_sizes,
            opts=pulumi.ResourceOptions(depends_on=cluster.node_role_policy_attachments),
        )
        for pool in spec.cpu_pools
    ]
    gpu_groups = [group for pool in pools for group in pool.groups]
    cpu_groups = [group for pool in cpu_pools for group in pool.groups]

    on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
    autoscaler = ClusterAutoscaler(
        "cluster-autoscaler",
        cluster_name=cluster.cluster_name,
        region=region,
        kubernetes_version=cluster.kubernetes_version,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_provider_url=cluster.oidc_provider_url,
        autoscaler=spec.autoscaler,
        # The release waits for its pod, which needs the system node group.
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster.system_node_group]),
    )
    served = [g for g in gpu_groups if g.needs_device_plugin]
    plugin = (
        NvidiaDevicePlugin("nvidia-device-plugin", served, version=spec.device_plugin.version, opts=on_cluster)
        if served
        else None
    )
    all_groups = [cluster.system_pool, *gpu_groups, *cpu_groups]
    prices, node_pools, cost = stack_costs(all_groups, price_table(spec.cloud), region, spec.cost)
    PriorityExpander("priority-expander", all_groups, opts=on_cluster, prices=prices)

    if spec.smoke_test.enabled:
        after = [autoscaler, *([plugin] if plugin else [])]
        for node_groups in pools:
            GpuSmokeTest(
                f"smoke-{node_groups.spec.name}",
                smoke_test_target(node_groups.groups),
                opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=after),
            )

    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", node_pools)
    pulumi.export("cost", cost)
