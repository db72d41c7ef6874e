"""What a pool's ``sharing`` means for its nodes, the device plugin and the autoscalers. Pure.

One ``SharingSpec`` per GPU pool decides four things, all derived here so the cloud components,
the device plugin and the synth table cannot disagree:

* the device plugin config the pool's nodes run (``config_name``), selected per node by the
  ``nvidia.com/device-plugin.config`` label the pool carries (``node_labels``);
* how many ``nvidia.com/gpu`` one physical GPU becomes (``slots_per_gpu``): ``replicas`` for
  time-slicing and MPS, the MIG instances per GPU of the profile for MIG, 1 without sharing;
* what the autoscalers' scale-from-zero templates advertise: GPUs per node x ``slots_per_gpu``;
* a short description for tables and outputs (``describe``).

Every mode keeps the resource name ``nvidia.com/gpu`` (``conventions.GPU_RESOURCE``): the plugin
runs with ``renameByDefault: false`` and MIG strategy ``single``, so a pod that requests
``nvidia.com/gpu: 1`` gets one slice, and cluster-autoscaler, which handles GPU readiness for
exactly that name (renamed ``.shared`` and ``mig-*`` resources break it: kubernetes/autoscaler
#8095), keeps working.
"""

from __future__ import annotations

from typing import Mapping

from gpupools.catalog.azure_vm_sizes import MIG_INSTANCES_PER_GPU
from gpupools.conventions import DEVICE_PLUGIN_CONFIG_LABEL
from gpupools.specs import SharingMode, SharingSpec

MIN_REPLICAS = 2
"""The device plugin rejects fewer (NVIDIA/k8s-device-plugin v0.20.0 ``api/config/v1/replicas.go``,
``ReplicatedResource.UnmarshalJSON``: "number of replicas must be >= 2")."""

MAX_REPLICAS = 48
"""MPS: the most clients one MPS server admits on Volta and newer GPUs, which every GPU in the
catalog is (``cmd/mps-control-daemon/mps/device.go``, ``maxClients``: 48, 16 before Volta); the
control daemon refuses more. Time-slicing: the plugin sets no upper bound; gpupools applies the
same 48, beyond which each pod gets a sliver of the GPU's time and shares its memory with 47 others."""

MIG_STRATEGY = "single"
"""The device plugin's MIG strategy for MIG pools: every GPU of an AKS MIG pool carries the same
profile (one ``gpuInstanceProfile`` per pool), the case ``single`` is for; it advertises each
instance as ``nvidia.com/gpu`` (AKS ``gpu-multi-instance.md``: "the GPU resources are displayed as
``nvidia.com/gpu``")."""

MODE_WORDS = {SharingMode.TIME_SLICING: "time-slicing", SharingMode.MPS: "mps", SharingMode.MIG: "mig"}
"""How each mode is spelled in config names and tables."""


def config_name(sharing: SharingSpec) -> str | None:
    """The device plugin config a shared pool's nodes run, or None for the default config.

    ``time-slicing-<replicas>``, ``mps-<replicas>`` or ``mig-single``: one config per distinct
    setting, so two pools with the same setting share a config. Each name is a valid label value and
    ConfigMap key (the config-manager reads the label and opens the file of that name).
    """
    if sharing.mode is SharingMode.NONE:
        return None
    if sharing.mode is SharingMode.MIG:
        return f"mig-{MIG_STRATEGY}"
    return f"{MODE_WORDS[sharing.mode]}-{sharing.replicas}"


def node_labels(sharing: SharingSpec) -> dict[str, str]:
    """``{nvidia.com/device-plugin.config: <config name>}`` for a shared pool, else empty."""
    name = config_name(sharing)
    return {DEVICE_PLUGIN_CONFIG_LABEL: name} if name else {}


def slots_per_gpu(sharing: SharingSpec, mig_instances: Mapping[str, int] = MIG_INSTANCES_PER_GPU) -> int:
    """``nvidia.com/gpu`` advertised per physical GPU: replicas, MIG instances per GPU, or 1."""
    if sharing.mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
        return sharing.replicas
    if sharing.mode is SharingMode.MIG:
        return mig_instances[str(sharing.mig_profile)]
    return 1


def describe(sharing: SharingSpec) -> str:
    """``time-slicing x4``, ``mps x4``, ``mig MIG1g``; empty without sharing."""
    if sharing.mode is SharingMode.NONE:
        return ""
    if sharing.mode is SharingMode.MIG:
        return f"mig {sharing.mig_profile}"
    return f"{MODE_WORDS[sharing.mode]} x{sharing.replicas}"
