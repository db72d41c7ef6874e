"""A consumer's EKS program: a GPU Spot node group (with on-demand fallback) per zone on an existing
cluster, with the device plugin and the priority expander."""

from __future__ import annotations

import gpupools.aws
import gpupools.kubernetes
import pulumi
import pulumi_kubernetes as k8s

from components import network

POOL = {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "maxSize": 4}


def program() -> None:
    provider = k8s.Provider("platform-eks", kubeconfig="{}")
    on_cluster = pulumi.ResourceOptions(provider=provider)
    group = gpupools.aws.GpuNodeGroup(
        "t4",
        POOL,
        cluster_name=network.EKS_CLUSTER,
        node_role_arn=network.EKS_NODE_ROLE_ARN,
        subnet_ids_by_zone=network.EKS_SUBNETS,
        region=network.EKS_REGION,
    )
    gpupools.kubernetes.NvidiaDevicePlugin("nvidia-device-plugin", pools=group.groups, opts=on_cluster)
    gpupools.kubernetes.PriorityExpander("priority-expander", pools=group.groups, opts=on_cluster)
    pulumi.export("nodeGroups", sorted(group.node_groups))
