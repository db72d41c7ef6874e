"""Azure GPU VM sizes that AKS GPU pools may use, and the retired ones to reject.

Sources: Microsoft Learn "Sizes for virtual machines in Azure" pages of the NCasT4_v3,
NC A100 v4, NC H100 v5, ND H100 v5, ND H200 v5, NDasr A100 v4 and NDm A100 v4 series (vCPU,
memory, GPU count and model), AKS "Use GPUs for compute-intensive workloads" (minimum recommended
size Standard_NC4as_T4_v3; NVv4/AMD not supported), AKS "Multi-instance GPU" (MIG on A100, H100
and H200 sizes), and the retirement notices: NCv3 (V100) retired 2025-09-30, successor NC A100 v4;
NC (K80), NCv2 (P100), ND (P40) and NV (M60) retired in 2023.

MIG facts (``MIG_INSTANCES_PER_GPU``): AKS "Create a multi-instance GPU node pool"
(MicrosoftDocs/azure-aks-docs ``articles/aks/gpu-multi-instance.md``: MIG on the A100, H100 and H200
series; the pool's ``gpuInstanceProfile`` is one of MIG1g, MIG2g, MIG3g, MIG4g, MIG7g and cannot be
changed after creation; 1g gives 7 instances per GPU, 2g 3, 3g 2, 4g 1, 7g 1, so a
``Standard_ND96asr_v4`` with MIG1g advertises 56 = 8 x 7), and NVIDIA's MIG User Guide ("Supported
GPUs": A100, H100 and H200 all have 7 compute slices; "Supported MIG Profiles": the same instance
counts per profile on each of them).

InfiniBand (``AzureGpuSize.infiniband``): Microsoft Learn "Azure virtual machine sizes naming
conventions" (the additive feature ``r``: "RDMA capable"), and the series pages: ND A100 v4 and NDm
A100 v4 "200 Gb/s HDR InfiniBand" per GPU, ND H100 v5 and ND H200 v5 "400 Gb/s NDR InfiniBand" per
GPU; the NC and NCasT4 sizes here have none. On AKS the IB fabric is usable from pods only with more
than a node pool: the NVIDIA Network Operator (Mellanox OFED/DOCA drivers, an RDMA device plugin)
as Azure/aks-rdma-infiniband documents; see ``docs/aks.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

MIG_INSTANCES_PER_GPU: Mapping[str, int] = MappingProxyType({"MIG1g": 7, "MIG2g": 3, "MIG3g": 2, "MIG4g": 1, "MIG7g": 1})
"""AKS ``gpuInstanceProfile`` -> GPU instances MIG creates on each GPU of a 7-slice GPU (A100, H100,
H200). With the device plugin's ``single`` MIG strategy each instance is advertised as one
``nvidia.com/gpu``."""


@dataclass(frozen=True)
class AzureGpuSize:
    """Facts about one Azure GPU VM size."""

    name: str
    vcpus: int
    memory_gib: int
    gpus: int
    gpu_model: str
    mig_capable: bool = False
    infiniband: bool = False
    """An InfiniBand (RDMA) network between VMs of this size: the ``r`` in the size name."""

    @property
    def mig_profiles(self) -> Mapping[str, int]:
        """The AKS MIG profiles this size supports, each with its instances per GPU (empty without MIG)."""
        return MIG_INSTANCES_PER_GPU if self.mig_capable else MappingProxyType({})


@dataclass(frozen=True)
class RetiredSize:
    """A retired GPU size and the current size to use instead."""

    name: str
    retired: str
    replacement: str


def _sizes(*rows: AzureGpuSize) -> dict[str, AzureGpuSize]:
    return {row.name: row for row in rows}


GPU_SIZES: dict[str, AzureGpuSize] = _sizes(
    # NCasT4_v3: NVIDIA T4 16 GB
    AzureGpuSize("Standard_NC4as_T4_v3", 4, 28, 1, "nvidia-tesla-t4"),
    AzureGpuSize("Standard_NC8as_T4_v3", 8, 56, 1, "nvidia-tesla-t4"),
    AzureGpuSize("Standard_NC16as_T4_v3", 16, 110, 1, "nvidia-tesla-t4"),
    AzureGpuSize("Standard_NC64as_T4_v3", 64, 440, 4, "nvidia-tesla-t4"),
    # NC A100 v4: NVIDIA A100 80 GB PCIe
    AzureGpuSize("Standard_NC24ads_A100_v4", 24, 220, 1, "nvidia-a100-80gb", mig_capable=True),
    AzureGpuSize("Standard_NC48ads_A100_v4", 48, 440, 2, "nvidia-a100-80gb", mig_capable=True),
    AzureGpuSize("Standard_NC96ads_A100_v4", 96, 880, 4, "nvidia-a100-80gb", mig_capable=True),
    # NC H100 v5: NVIDIA H100 NVL 94 GB
    AzureGpuSize("Standard_NC40ads_H100_v5", 40, 320, 1, "nvidia-h100-nvl", mig_capable=True),
    AzureGpuSize("Standard_NC80adis_H100_v5", 80, 640, 2, "nvidia-h100-nvl", mig_capable=True),
    # ND A100 v4 (40 GB) and NDm A100 v4 (80 GB), 8 GPUs
    AzureGpuSize("Standard_ND96asr_v4", 96, 900, 8, "nvidia-a100-40gb", mig_capable=True, infiniband=True),
    AzureGpuSize("Standard_ND96amsr_A100_v4", 96, 1900, 8, "nvidia-a100-80gb", mig_capable=True, infiniband=True),
    # ND H100 v5 and ND H200 v5, 8 GPUs
    AzureGpuSize("Standard_ND96isr_H100_v5", 96, 1900, 8, "nvidia-h100-80gb", mig_capable=True, infiniband=True),
    AzureGpuSize("Standard_ND96isr_H200_v5", 96, 1850, 8, "nvidia-h200-141gb", mig_capable=True, infiniband=True),
)
"""Current GPU sizes, by exact (case-sensitive) Azure name."""


def infiniband_sizes() -> tuple[str, ...]:
    """The GPU sizes with InfiniBand, in catalog order."""
    return tuple(name for name, size in GPU_SIZES.items() if size.infiniband)


def _retired(replacement: str, retired: str, *names: str) -> dict[str, RetiredSize]:
    return {n: RetiredSize(n, retired, replacement) for n in names}


RETIRED_SIZES: dict[str, RetiredSize] = {
    **_retired(
        "Standard_NC24ads_A100_v4",
        "2025-09-30",
        "Standard_NC6s_v3",
        "Standard_NC12s_v3",
        "Standard_NC24s_v3",
        "Standard_NC24rs_v3",
    ),
    **_retired("Standard_NC4as_T4_v3", "2023", "Standard_NC6", "Standard_NC12", "Standard_NC24", "Standard_NC24r"),
    **_retired(
        "Standard_NC24ads_A100_v4",
        "2023",
        "Standard_NC6s_v2",
        "Standard_NC12s_v2",
        "Standard_NC24s_v2",
        "Standard_NC24rs_v2",
    ),
    **_retired("Standard_NC24ads_A100_v4", "2023", "Standard_ND6s", "Standard_ND12s", "Standard_ND24s", "Standard_ND24rs"),
    **_retired("Standard_NC4as_T4_v3", "2023", "Standard_NV6", "Standard_NV12", "Standard_NV24"),
}
"""Retired GPU sizes (AKS cannot create pools of them any more) and a current replacement."""


@dataclass(frozen=True)
class AzureCpuSize:
    """Facts about one Azure general-purpose VM size (for ``cpuPools``)."""

    name: str
    vcpus: int
    memory_gib: int
    arch: str = "x86_64"


CPU_SIZES: dict[str, AzureCpuSize] = {
    row.name: row
    for row in (
        # Dsv5 / Ddsv5 (Intel), Dasv5 (AMD): 4 GiB per vCPU
        *(AzureCpuSize(f"Standard_D{n}s_v5", n, 4 * n) for n in (2, 4, 8, 16, 32)),
        *(AzureCpuSize(f"Standard_D{n}ds_v5", n, 4 * n) for n in (4, 8, 16, 32)),
        *(AzureCpuSize(f"Standard_D{n}as_v5", n, 4 * n) for n in (4, 8, 16, 32)),
        # Dsv6 (Intel): 4 GiB per vCPU
        *(AzureCpuSize(f"Standard_D{n}s_v6", n, 4 * n) for n in (4, 8, 16, 32)),
        # Esv5 (memory optimized): 8 GiB per vCPU
        *(AzureCpuSize(f"Standard_E{n}s_v5", n, 8 * n) for n in (4, 8, 16, 32)),
        # Fsv2 (compute optimized): 2 GiB per vCPU
        *(AzureCpuSize(f"Standard_F{n}s_v2", n, 2 * n) for n in (4, 8, 16, 32)),
        # Dpsv5 / Dpdsv5 (Ampere Altra, arm64): 4 GiB per vCPU; AKS runs Arm64 node pools on them
        *(AzureCpuSize(f"Standard_D{n}ps_v5", n, 4 * n, "arm64") for n in (4, 8, 16, 32)),
        *(AzureCpuSize(f"Standard_D{n}pds_v5", n, 4 * n, "arm64") for n in (4, 8, 16, 32)),
    )
}
"""General-purpose sizes for ``cpuPools`` (Microsoft Learn size pages of the Dsv5, Ddsv5, Dasv5,
Dsv6, Esv5, Fsv2, Dpsv5 and Dpdsv5 series: vCPU and memory; the ``p`` sizes are Arm64). A size not
listed here is refused with a pointer to this table, as GPU sizes are."""
