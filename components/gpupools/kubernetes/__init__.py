"""Kubernetes-side components, deployed through the cluster's explicit Kubernetes provider.

* ``NvidiaDevicePlugin``: the NVIDIA device plugin DaemonSet, tolerating every taint of the GPU
  pools it serves and required onto their GPU nodes only.
* ``DcgmExporter``: NVIDIA's DCGM exporter (GPU metrics), a DaemonSet and a scrape Service per
  GPU pool that has no exporter of its own.
* ``EfaDevicePlugin``: the AWS EFA device plugin DaemonSet on the EKS pools with ``efa: true``.
* ``PriorityExpander``: cluster-autoscaler's priority expander ConfigMap (Spot > on-demand >
  system), with ``priority_tiers`` the pure decision behind it.
* ``GpuSmokeTest``: an optional Job that runs CUDA on one GPU of one pool.
* ``karpenter``: pure builders of Karpenter ``karpenter.sh/v1`` NodePools from pools, shared by
  EKS (``gpupools.aws.KarpenterNodePools``) and AKS Node Auto Provisioning.

Each takes the pools as ``gpupools.pools.NodePoolInfo`` (what the cloud components return) and
the provider through ``opts``. Importing registers nothing.
"""

from gpupools.kubernetes.dcgm_exporter import DcgmExporter
from gpupools.kubernetes.device_plugin import NvidiaDevicePlugin
from gpupools.kubernetes.efa_device_plugin import EfaDevicePlugin
from gpupools.kubernetes.priority_expander import PriorityExpander, priority_tiers
from gpupools.kubernetes.smoke_test import GpuSmokeTest

__all__ = ["DcgmExporter", "EfaDevicePlugin", "GpuSmokeTest", "NvidiaDevicePlugin", "PriorityExpander", "priority_tiers"]
