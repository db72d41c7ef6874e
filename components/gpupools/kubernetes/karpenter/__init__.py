"""Karpenter custom resources that do not depend on the cloud: ``karpenter.sh/v1`` NodePools.

``nodepool`` turns one gpupools pool (a ``PoolSpec`` of ``gpuPools`` or ``cpuPools``) into a NodePool
manifest and the ``NodePoolInfo`` the Kubernetes side derives from. It is pure (no resources) and
takes everything cloud-specific as arguments (the node class reference, the zone values, the node
shape and extra requirements), so EKS (``EC2NodeClass``) and AKS Node Auto Provisioning
(``AKSNodeClass``) build their NodePools with the same function. ``overlay`` builds the NodeOverlay
that tells Karpenter how many GPU slots a node of a shared pool advertises (EKS). Importing
registers nothing.
"""

from gpupools.kubernetes.karpenter.nodepool import (
    NodeClassRef,
    NodeShape,
    capacity_types,
    default_order,
    node_pool,
    node_pool_info,
    weights,
)

__all__ = ["NodeClassRef", "NodeShape", "capacity_types", "default_order", "node_pool", "node_pool_info", "weights"]
