"""gpupools: Pulumi components for elastic GPU spot capacity on AKS and EKS.

Import the cloud packages directly: ``from gpupools.azure import GpuNodePool``,
``from gpupools.aws import GpuNodeGroup``, ``from gpupools.kubernetes import NvidiaDevicePlugin``.
Importing never registers a resource.
"""

from gpupools._version import __version__

__all__ = ["__version__"]
