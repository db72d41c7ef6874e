"""AKS: a cluster with one on-demand System pool, and GPU Spot pools with on-demand fallback.

- ``AksCluster``: the ``ManagedCluster`` (one inline System pool, Entra ID + Azure RBAC, workload
  identity, Azure CNI Overlay, priority-expander autoscaler profile), its network and identity, the
  kubeconfig as a secret and a Kubernetes provider.
- ``GpuNodePool``: one ``gpuPools`` entry as standalone ``AgentPool``s on any existing cluster;
  ``CpuNodePool`` the same for a ``cpuPools`` entry.
- ``NapNodePools``: with ``AksCluster(node_auto_provisioning=True)``, an AKSNodeClass and a Karpenter
  NodePool per pool for AKS Node Auto Provisioning instead of agent pools.
- ``NodeImageMaintenance``: the ``aksManagedNodeOSUpgradeSchedule`` maintenance window of a NAP cluster.

Pure helpers live beside them: ``naming`` (rotating agent pool names), ``autoscaler_profile``
(canonical profile strings), ``network`` (subnet layout), ``kubeconfig`` (kubelogin login mode).
"""

from gpupools.azure.autoscaler_profile import autoscaler_profile
from gpupools.azure.cluster import AksCluster
from gpupools.azure.maintenance import NodeImageMaintenance
from gpupools.azure.naming import agent_pool_name, scale_set_regex
from gpupools.azure.nap_nodes import NapNodePools
from gpupools.azure.node_pool import CREATE_ONLY_FIELDS, CpuNodePool, GpuNodePool, plan_agent_pools

__all__ = [
    "CREATE_ONLY_FIELDS",
    "AksCluster",
    "CpuNodePool",
    "GpuNodePool",
    "NapNodePools",
    "NodeImageMaintenance",
    "agent_pool_name",
    "autoscaler_profile",
    "plan_agent_pools",
    "scale_set_regex",
]
