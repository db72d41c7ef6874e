"""EKS: the cluster with its system node group, GPU Spot node groups with on-demand fallback,
cluster-autoscaler scale-from-zero tags, and cluster-autoscaler itself.

Modules, one job each: ``cluster`` (``EksCluster``), ``node_group`` (``GpuNodeGroup``),
``autoscaler`` (``ClusterAutoscaler``), ``network`` (VPC layout), ``iam`` (roles and policy
documents), ``launch_template`` (IMDSv2, encrypted volumes), ``asg_tags`` (scale-from-zero tags),
``naming`` (node group and ASG names). Importing never registers a resource.
"""

from components.aws.autoscaler import ClusterAutoscaler
from components.aws.cluster import EksCluster
from components.aws.network import NatStrategy
from components.aws.node_group import CpuNodeGroup, GpuNodeGroup

__all__ = ["ClusterAutoscaler", "CpuNodeGroup", "EksCluster", "GpuNodeGroup", "NatStrategy"]
