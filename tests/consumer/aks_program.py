"""A consumer's AKS program: a GPU Spot pool on an existing cluster, by names, with the device plugin
and the priority expander on the cluster's Kubernetes provider."""

from __future__ import annotations

import gpupools.azure
import gpupools.kubernetes
import pulumi
import pulumi_kubernetes as k8s

from components import network

POOL = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}


def program() -> None:
    provider = k8s.Provider("platform-aks", kubeconfig="{}")
    on_cluster = pulumi.ResourceOptions(provider=provider)
    pool = gpupools.azure.GpuNodePool(
        "t4", POOL, resource_group_name=network.AKS_RESOURCE_GROUP, cluster_name=network.AKS_CLUSTER
    )
    gpupools.kubernetes.NvidiaDevicePlugin("nvidia-device-plugin", pools=pool.pools, opts=on_cluster)
    gpupools.kubernetes.PriorityExpander("priority-expander", pools=pool.pools, opts=on_cluster)
    pulumi.export("agentPools", pool.agent_pool_names)
