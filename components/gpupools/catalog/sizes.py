"""Size facts across both clouds' catalogs, for code that only needs GPUs and vCPUs of a size."""

from __future__ import annotations

from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES


def size_facts(size: str) -> tuple[int, int] | None:
    """``(gpus, vcpus)`` of an EC2 instance type or Azure VM size; ``None`` if no catalog knows it."""
    for catalog in (INSTANCE_TYPES, GPU_SIZES, CPU_SIZES):
        facts = catalog.get(size)
        if facts is not None:
            return (getattr(facts, "gpus", 0), facts.vcpus)
    return None
