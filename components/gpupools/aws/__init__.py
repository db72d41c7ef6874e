"""EKS: the cluster with its system node group, GPU Spot node groups with on-demand fallback,
cluster-autoscaler scale-from-zero tags, and cluster-autoscaler itself.

Modules, one job each: ``cluster`` (``EksCluster``), ``node_group`` (``GpuNodeGroup``),
``autoscaler`` (``ClusterAutoscaler``), ``network`` (VPC layout), ``iam`` (roles and policy
documents), ``launch_template`` (IMDSv2, encrypted volumes), ``asg_tags`` (scale-from-zero tags),
``naming`` (node group and ASG names); with ``provisioner: karpenter``, ``karpenter``
(``Karpenter``: controller, IRSA role, interruption queue), ``karpenter_iam`` (its policy
documents) and ``karpenter_nodes`` (``KarpenterNodePools``: EC2NodeClasses and NodePools); with
``provisioner: auto-mode``, ``auto_mode`` (``AutoModeNodePools``: Auto Mode NodeClasses and
NodePools, the Auto Mode node role). Importing never registers a resource.
"""

from gpupools.aws.auto_mode import AutoModeNodePools
from gpupools.aws.autoscaler import ClusterAutoscaler
from gpupools.aws.cluster import EksCluster
from gpupools.aws.karpenter import Karpenter
from gpupools.aws.karpenter_nodes import KarpenterNodePools
from gpupools.aws.network import NatStrategy
from gpupools.aws.node_group import CpuNodeGroup, GpuNodeGroup

__all__ = [
    "AutoModeNodePools",
    "ClusterAutoscaler",
    "CpuNodeGroup",
    "EksCluster",
    "GpuNodeGroup",
    "Karpenter",
    "KarpenterNodePools",
    "NatStrategy",
]
