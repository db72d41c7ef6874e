"""A consumer's AKS Node Auto Provisioning program: NAP NodePools from plain pool mappings, and the
device plugin on the GPU ones."""

from __future__ import annotations

import gpupools.azure
import gpupools.kubernetes
import pulumi
import pulumi_kubernetes as k8s

from components import network

POOLS = [{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}]


def program() -> None:
    provider = k8s.Provider("platform-nap", kubeconfig="{}")
    on_cluster = pulumi.ResourceOptions(provider=provider)
    node_pools = gpupools.azure.NapNodePools("nap", pools=POOLS, location=network.AKS_LOCATION, opts=on_cluster)
    served = [info for info in node_pools.pools if info.needs_device_plugin]
    gpupools.kubernetes.NvidiaDevicePlugin("nvidia-device-plugin", pools=served, opts=on_cluster)
