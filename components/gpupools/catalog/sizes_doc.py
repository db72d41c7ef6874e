"""``docs/instance-types.md``: every size the offline catalog knows, generated from the catalogs.

``python -m gpupools.catalog.sizes_doc`` prints the page; ``--write PAGE`` writes it, ``--check PAGE``
exits 1 when PAGE differs.

A size not listed is declared in the stack file (``gpupools:catalog.instanceTypes``, with its vCPUs,
memory and GPUs); the page says so. ``tests/test_sizes_doc.py`` fails when the committed page
differs from ``render()``::

    python -m gpupools.catalog.sizes_doc --write docs/instance-types.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Sequence

from gpupools.catalog import user_sizes
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES, RETIRED_SIZES

HEADER = """# Instance types

The sizes gpupools knows offline, with the facts it sizes nodes, quotas and scale-from-zero
templates from. A size not listed here is refused by name, with the nearest listed name when one is
close; to use it, declare it in the stack file with its facts (the offline catalog has no price
for it, so its pool has no cost estimate):

```yaml
config:
  gpupools:catalog:
    instanceTypes:
      - {name: c6i.4xlarge, vcpus: 16, memoryGib: 32}
      - {name: gr6.4xlarge, vcpus: 16, memoryGib: 128, gpus: 1, gpuModel: nvidia-l4}
```

See `gpupools:catalog.instanceTypes` in the [configuration reference](configuration.md). This page
is generated from `components/gpupools/catalog/` (`python -m gpupools.catalog.sizes_doc --write
docs/instance-types.md`); a test fails when it differs.
"""


def _table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def render() -> str:
    """The page (see the module docstring); sizes a stack declared are not part of it."""
    declared = user_sizes.declared()
    aws = sorted((t for t in INSTANCE_TYPES.values() if t.name not in declared), key=lambda t: (t.gpus == 0, t.name))
    lines = [HEADER, "## EKS: EC2 instance types", ""]
    lines += _table(
        ("type", "vCPU", "memory (GiB)", "GPUs", "GPU", "architecture", "EFA interfaces"),
        (
            (f"`{t.name}`", t.vcpus, f"{t.memory_mib / 1024:g}", t.gpus, t.gpu_model or "-", t.arch, t.efa_interfaces or "-")
            for t in aws
        ),
    )
    lines += ["", "## AKS: GPU VM sizes", ""]
    lines += _table(
        ("size", "vCPU", "memory (GiB)", "GPUs", "GPU", "MIG", "InfiniBand"),
        (
            (
                f"`{s.name}`",
                s.vcpus,
                s.memory_gib,
                s.gpus,
                s.gpu_model,
                "yes" if s.mig_capable else "-",
                "yes" if s.infiniband else "-",
            )
            for s in sorted(GPU_SIZES.values(), key=lambda s: s.name)
            if s.name not in declared
        ),
    )
    lines += ["", "## AKS: general-purpose VM sizes (`cpuPools`)", ""]
    lines += _table(
        ("size", "vCPU", "memory (GiB)", "architecture"),
        (
            (f"`{s.name}`", s.vcpus, s.memory_gib, s.arch)
            for s in sorted(CPU_SIZES.values(), key=lambda s: s.name)
            if s.name not in declared
        ),
    )
    lines += ["", "## AKS: retired GPU sizes (refused, with the size to use)", ""]
    lines += _table(
        ("size", "retired", "use"),
        ((f"`{r.name}`", r.retired, f"`{r.replacement}`") for r in sorted(RETIRED_SIZES.values(), key=lambda r: r.name)),
    )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpupools.catalog.sizes_doc", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="PAGE", type=Path, help="write the page (docs/instance-types.md)")
    group.add_argument("--check", metavar="PAGE", type=Path, help="exit 1 when PAGE differs from the catalogs")
    args = parser.parse_args(argv)
    page = render()
    if not args.write and not args.check:
        sys.stdout.write(page)
        return 0
    if args.write:
        args.write.write_text(page)
        return 0
    if args.check.read_text() == page:
        return 0
    print(f"{args.check} is out of date: run python -m gpupools.catalog.sizes_doc --write {args.check}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
