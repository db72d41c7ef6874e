"""``gpuPools[].gpuDriver``: who owns a GPU pool's NVIDIA driver and device plugin, and its rules.

``install`` (default) is what gpupools has always built: the node image or the cloud installs the
driver and gpupools runs the device plugin. ``none`` means bring your own, typically the NVIDIA GPU
Operator; ``managed`` would leave driver and plugin to AKS's managed GPU node pools. The decision of
which pools gpupools' device plugin serves is ``PoolSpec.needs_device_plugin`` (copied into every
``NodePoolInfo``) and ``gpupools.kubernetes.device_plugin.is_served``; this module holds only the
rules of the config, each one ``ConfigError`` naming the key:

* ``managed`` is refused everywhere gpupools can build a pool today, for a different reason on each
  path (``MANAGED_WHY``):

  - EKS (either provisioner): there is no such mode. The AL2023 NVIDIA AMI ships the driver, the
    Bottlerocket NVIDIA AMI ships driver and plugin (set ``amiType``).
  - AKS agent pools (cluster-autoscaler): AKS managed GPU node pools are a preview whose docs say
    "Cluster autoscaler isn't supported on managed GPU node pools during preview. Scale these pools
    manually." (azure-aks-docs ``articles/aks/aks-managed-gpu-nodes.md``, Limitations), and every
    gpupools agent pool is autoscaled (Spot from ``minSize``, fallback from 0). The field itself,
    ``gpuProfile.nvidia.managementMode``, is also absent from the API version pulumi-azure-native
    3.29 pins (its ``containerservice.GPUProfileArgs`` has only ``driver``).
  - AKS Node Auto Provisioning: the AKSNodeClass of Azure/karpenter-provider-azure v1.14.2
    (``karpenter.azure.com/v1beta1``, pinned in ``tests/crds``) has ``spec.gpu.mode`` with only
    ``Driver`` and ``None``: there is no managed mode to ask for.

* ``none`` or ``managed`` with ``sharing``: time-slicing, MPS and the MIG strategy are configured
  through gpupools' device plugin, which does not run on such a pool (configure sharing in the GPU
  Operator's device plugin instead).
* ``none`` on a Bottlerocket NVIDIA pool: the image carries the driver and its own device plugin
  (AWS "Use the NVIDIA GPU Operator" guidance: disable the operator's driver, toolkit and device
  plugin there), so gpupools runs no plugin on it already and there is no driver to leave out.
* A CPU pool with a driver setting other than ``install`` (library users; the config loader
  already refuses the key in ``cpuPools``).
"""

from __future__ import annotations

from gpupools.errors import ConfigError
from gpupools.specs import Cloud, GpuDriver, PoolSpec, Provisioner

MANAGED_WHY = {
    (Cloud.AWS, Provisioner.CLUSTER_AUTOSCALER): (
        "is AKS only (AKS managed GPU node pools); EKS has no managed driver mode: the AL2023 NVIDIA AMI ships the "
        "driver (gpuDriver install), a BOTTLEROCKET_x86_64_NVIDIA amiType ships driver and device plugin, and "
        "gpuDriver none leaves the device plugin to your GPU Operator"
    ),
    (Cloud.AZURE, Provisioner.CLUSTER_AUTOSCALER): (
        "is not available on cluster-autoscaler agent pools: AKS managed GPU node pools (gpuProfile.nvidia."
        "managementMode: Managed, preview) do not support the cluster autoscaler (\"Cluster autoscaler isn't supported "
        'on managed GPU node pools during preview", AKS docs aks-managed-gpu-nodes) and every gpupools pool is '
        "autoscaled; pulumi-azure-native 3.29's GPUProfileArgs also has only driver, no nvidia.managementMode. "
        "Use install, or none with the GPU Operator"
    ),
    (Cloud.AZURE, Provisioner.KARPENTER): (
        "is not available with provisioner karpenter on azure: the AKSNodeClass of Azure/karpenter-provider-azure "
        "v1.14.2 (karpenter.azure.com/v1beta1) has gpu.mode Driver or None only, no managed GPU mode. "
        "Use install, or none with the GPU Operator"
    ),
}
"""Why ``gpuDriver: managed`` is refused, per cloud and provisioner (module docstring)."""
MANAGED_WHY[(Cloud.AWS, Provisioner.KARPENTER)] = MANAGED_WHY[(Cloud.AWS, Provisioner.CLUSTER_AUTOSCALER)]
MANAGED_WHY[(Cloud.AWS, Provisioner.AUTO_MODE)] = (
    "has no meaning with provisioner auto-mode: EKS Auto Mode installs the NVIDIA driver and device plugin on its nodes "
    "itself; leave gpuDriver out"
)

SHARING_WHY = (
    "needs gpuDriver install: time-slicing, MPS and MIG are configured through gpupools' NVIDIA device plugin, which "
    "does not run on a gpuDriver {driver} pool; configure sharing in the device plugin that runs there instead "
    "(the GPU Operator's devicePlugin.config)"
)

BOTTLEROCKET_WHY = (
    "must not be none on a Bottlerocket NVIDIA pool: the image ships the NVIDIA driver and its own device plugin, so "
    "gpupools runs no plugin there already and there is no driver to leave out; for the GPU Operator use amiType "
    "AL2023_x86_64_NVIDIA with gpuDriver none (operator driver and toolkit disabled)"
)


AUTOMATIC_INSTALL_WHY = (
    "must be managed (the default) or none with cluster.sku Automatic: gpupools' device plugin needs a hostPath volume, "
    "which the baseline Pod Security Standard AKS Automatic enforces forbids ('HostPath volumes are forbidden', AKS "
    "deployment-safeguards.md), and the namespace exclusion that would let it run is an update of the cluster's existing "
    "deploymentSafeguards resource, which pulumi-azure-native can only create (docs/aks-automatic.md)"
)
"""Why an AKS Automatic GPU pool cannot be ``gpuDriver: install`` (``gpupools.azure.automatic``)."""


def check_gpu_driver(pool: PoolSpec, cloud: Cloud, path: str, provisioner: Provisioner, automatic: bool = False) -> None:
    """The ``gpuDriver`` rules of one pool (module docstring); ``path`` is the pool's config path.
    ``automatic``: an AKS Automatic cluster, where a GPU pool is ``managed`` (AKS managed GPU, through
    the AKSNodeClass tag ``gpupools.azure.automatic`` sets) or ``none``, never ``install``."""
    driver = pool.gpu_driver
    at = f"{path}.gpuDriver"
    if automatic and pool.is_gpu and driver is GpuDriver.INSTALL:
        raise ConfigError(at, AUTOMATIC_INSTALL_WHY, driver.value)
    if driver is GpuDriver.INSTALL:
        return
    if not pool.is_gpu:
        raise ConfigError(at, "is for GPU pools only (a CPU pool has no GPU driver)", driver.value)
    if driver is GpuDriver.MANAGED and automatic and cloud is Cloud.AZURE and provisioner is Provisioner.KARPENTER:
        pass  # AKS Automatic: the AKS managed GPU experience (gpupools.azure.automatic)
    elif driver is GpuDriver.MANAGED:
        raise ConfigError(at, MANAGED_WHY[(cloud, provisioner)], driver.value)
    if pool.ami_type.ships_device_plugin:
        raise ConfigError(at, BOTTLEROCKET_WHY, driver.value)
    if pool.sharing.shared:
        raise ConfigError(f"{path}.sharing", SHARING_WHY.format(driver=driver.value), pool.sharing.mode.value)
