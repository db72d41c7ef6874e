"""gpupools: Pulumi components for elastic GPU spot capacity on AKS and EKS.

Import the cloud packages directly: ``from components.azure import GpuNodePool``,
``from components.aws import GpuNodeGroup``, ``from components.kubernetes import NvidiaDevicePlugin``.
Importing never registers a resource.
"""

__version__ = "0.1.0"
