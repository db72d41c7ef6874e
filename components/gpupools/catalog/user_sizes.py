"""Sizes a stack declares itself (``gpupools:catalog.instanceTypes``): instance types and VM sizes the
offline catalog lacks, with the facts gpupools needs of them.

``install(cloud, sizes, path)`` puts each into the catalog of its cloud (``INSTANCE_TYPES`` on AWS,
``GPU_SIZES`` or ``CPU_SIZES`` on Azure), so every part of the program that sizes a node (the
scale-from-zero templates, Karpenter's NodePool limits, Kueue's quotas, the sim's nodes) sees it as
it sees a catalog size. The config loader calls it first, before any pool is read, and each call
first takes out what the previous one put in: one stack program loads one config, and a test run
that loads many starts each from the catalog as shipped.

A declared size has no price (``gpupools.catalog.prices``): it counts as offered in the stack's
region (``rules.check_offered``; the online preflight asks the cloud), its pool has no cost
estimate, and a budget cannot be checked with it. A name the catalog already has is refused: its
facts are the catalog's, checked against the cloud's own lists.
"""

from __future__ import annotations

from typing import Any, MutableMapping, Sequence

from gpupools.catalog.aws_instance_types import INSTANCE_TYPES, Ec2InstanceType
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES, RETIRED_SIZES, AzureCpuSize, AzureGpuSize
from gpupools.errors import ConfigError
from gpupools.specs import Cloud, UserSizeSpec

_installed: list[tuple[MutableMapping[str, Any], str]] = []
"""What the last ``install`` added, to take out on the next."""


def declared() -> frozenset[str]:
    """The names the last ``install`` added (they have no price and no region listing)."""
    return frozenset(name for _, name in _installed)


def uninstall() -> None:
    """Take out every size the last ``install`` added."""
    while _installed:
        catalog, name = _installed.pop()
        catalog.pop(name, None)


def install(cloud: Cloud, sizes: Sequence[UserSizeSpec], path: str = "gpupools:catalog.instanceTypes") -> None:
    """Put ``sizes`` into ``cloud``'s catalog (module docstring); ConfigError naming the entry for a
    name the catalog knows, a name given twice, or a fact that does not fit the cloud."""
    uninstall()
    known: set[str] = set(INSTANCE_TYPES) if cloud is Cloud.AWS else {*GPU_SIZES, *CPU_SIZES, *RETIRED_SIZES}
    seen: set[str] = set()
    for index, size in enumerate(sizes):
        at = f"{path}[{index}]"
        if size.name in known:
            raise ConfigError(f"{at}.name", "must be a size the catalog does not know (the catalog's facts are used)", size.name)
        if size.name in seen:
            raise ConfigError(f"{at}.name", "must be unique", size.name)
        seen.add(size.name)
        for key, value, least in (
            ("vcpus", size.vcpus, 1),
            ("memoryGib", size.memory_gib, 1),
            ("gpus", size.gpus, 0),
            ("efaInterfaces", size.efa_interfaces, 0),
        ):
            if value < least:
                raise ConfigError(f"{at}.{key}", f"must be >= {least}", value)
        if size.gpus and not size.gpu_model:
            raise ConfigError(f"{at}.gpuModel", "is required for a size with GPUs (e.g. nvidia-a10g)", size.name)
    for size in sizes:
        memory_mib = round(size.memory_gib * 1024)
        if cloud is Cloud.AWS:
            entry: Any = Ec2InstanceType(
                size.name, size.vcpus, memory_mib, size.gpus, size.gpu_model, size.architecture, size.efa_interfaces
            )
            _put(INSTANCE_TYPES, size.name, entry)
        elif size.gpus:
            _put(GPU_SIZES, size.name, AzureGpuSize(size.name, size.vcpus, round(size.memory_gib), size.gpus, size.gpu_model))
        else:
            _put(CPU_SIZES, size.name, AzureCpuSize(size.name, size.vcpus, round(size.memory_gib), size.architecture))


def _put(catalog: MutableMapping[str, Any], name: str, entry: Any) -> None:
    catalog[name] = entry
    _installed.append((catalog, name))
