"""How offline synth scales with fleet size, against the floor of the mock runtime itself.

For each cloud and each fleet size (default 1, 10 and 50 GPU pools over 3 zones, each pool a
Spot pool plus an on-demand fallback), this script builds a stack config programmatically from the
committed example stack (``Pulumi.azure-dev.yaml`` / ``Pulumi.aws-dev.yaml``), checks it with
``gpupools.config.parse``, and times, as the median of several repeats:

* **program**: the real stack program on the recording mock runtime (``run_stack``), i.e. config
  loading, validation, every component and resource of the library;
* **synth**: ``program`` plus building the desired-state document and the Kubernetes manifests and
  rendering both (what ``python -m gpupools.synth`` does apart from writing files);
* **floor**: the same registrations with no library code: every recorded registration replayed as
  a plain ``pulumi.CustomResource`` / ``ComponentResource`` / ``ProviderResource`` of the same type
  token, the same inputs (so the same sizes), the same parent, provider, ``depends_on`` and type
  aliases, on the same mock runtime with the same per-type fakes. Each is constructed through a
  one-line subclass, as generated SDK classes are, so the SDK records its source stack trace as it
  does for every real resource. The aliases matter: each
  pulumi-azure-native class registers one alias per API version (110 for ``AgentPool``, 113 for
  ``ManagedCluster``), and the SDK resolves every one of them on each registration; that cost
  belongs to the provider SDK, not to this library, so the floor pays it too.

Library, synth and floor runs are interleaved (one of each per repeat), so a busy machine slows
all three alike.

Each table is measured twice: with CPython's cyclic garbage collector paused, as
``python -m gpupools.synth`` runs, and with its default settings. The mock runtime keeps every
object of a run alive until the end, so with the default settings each full collection rescans a
heap that grows with the fleet, and the floor itself grows faster than linearly.

It prints seconds, registrations, the ratio program/floor and synth/floor, the time per
registration at each size, and the growth: the marginal cost of one more GPU pool between
consecutive sizes (the same at every size means time grows linearly with the fleet). Time per
registration is not flat even for the floor, because the mix changes with size: a pool adds
mostly the expensive registrations (azure-native agent pools with 110 aliases each; on EKS, 6
node groups and about 50 ASG tags), while the fixed part (network, cluster) is cheaper ones. Run from the repository root::

    python benchmarks/synth_scale.py                  # 1, 10, 50 pools, both clouds
    python benchmarks/synth_scale.py --sizes 1,10 --repeats 3 --cloud azure
    python benchmarks/synth_scale.py --profile        # cProfile of the largest program run

This is a measurement, not a test: nothing asserts the goal (ratio <= 1.5, linear growth).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import itertools
import os
import platform
import pstats
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pulumi  # noqa: E402
from gpupools.config import parse  # noqa: E402
from gpupools.synth import gc_paused  # noqa: E402
from gpupools.synth.document import desired_state, kubernetes_manifests, render_json, render_yaml  # noqa: E402
from gpupools.testing import Registration, run_program, run_stack, stack_config  # noqa: E402

STACKS = {"azure": "azure-dev", "aws": "aws-dev"}
POOL_TEMPLATE = {
    "azure": {"instanceTypes": ["Standard_NC4as_T4_v3"]},
    "aws": {"instanceTypes": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"]},
}


def fleet(cloud: str, pools: int) -> dict[str, Any]:
    """Config overrides for ``pools`` GPU pools over the example stack's 3 zones, validated by ``gpupools.config``."""
    gpu_pools = [
        {
            "name": f"p{i}",
            **POOL_TEMPLATE[cloud],
            "minSize": 0,
            "maxSize": 6,
            "onDemandMaxSize": 3,
            "labels": {"team": f"t{i % 7}"},
        }
        for i in range(pools)
    ]
    overrides = {"gpupools:gpuPools": gpu_pools}
    config = {**stack_config(STACKS[cloud]), **overrides}
    zones = config["gpupools:cluster"].get("zones", [])
    assert len(zones) == 3, f"{STACKS[cloud]} should spread pools over 3 zones, has {zones}"
    parse(config, region=config.get("aws:region"))
    return overrides


def record(stack: str, overrides: dict[str, Any]) -> tuple[list[Registration], dict[str, list[str]]]:
    """Run the stack once; its registrations and, per URN, the alias types the SDK classes registered."""
    import gpupools.testing as testing

    aliases: dict[str, list[str]] = {}
    original = testing.RecordingMonitor.RegisterResource

    def register(monitor: Any, request: Any) -> Any:
        response = original(monitor, request)
        aliases[response.urn] = [a.spec.type for a in request.aliases if a.HasField("spec") and a.spec.type]
        return response

    testing.RecordingMonitor.RegisterResource = register  # type: ignore[method-assign,assignment]
    try:
        run = run_stack(stack, overrides=overrides)
    finally:
        testing.RecordingMonitor.RegisterResource = original  # type: ignore[method-assign]
    return run.registrations, aliases


class PlainCustom(pulumi.CustomResource):
    """A custom resource of any type token, with nothing but the SDK base class behind it.

    Generated SDK classes are subclasses like this one; the Pulumi SDK looks for the third
    ``__init__`` frame (Resource, CustomResource, the concrete class) to record each resource's
    source stack trace, so a floor built from bare ``pulumi.CustomResource`` calls would skip that
    per-resource cost that every real resource pays.
    """

    def __init__(self, type_: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(type_, name, props, opts)


class PlainComponent(pulumi.ComponentResource):
    """A component of any type token (see ``PlainCustom``)."""

    def __init__(self, type_: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions, remote: bool) -> None:
        super().__init__(type_, name, props, opts, remote=remote)


class PlainProvider(pulumi.ProviderResource):
    """A provider of any package (see ``PlainCustom``)."""

    def __init__(self, package: str, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(package, name, props, opts)


def replay(registrations: list[Registration], aliases: dict[str, list[str]]) -> Callable[[], None]:
    """A program that registers exactly ``registrations`` with plain SDK resources and no library code."""

    def program() -> None:
        made: dict[str, pulumi.Resource] = {}
        for reg in registrations:
            provider = made.get(reg.provider.rpartition("::")[0]) if reg.provider else None
            opts = pulumi.ResourceOptions(
                parent=made.get(reg.parent),
                provider=provider if isinstance(provider, pulumi.ProviderResource) else None,
                depends_on=[made[d] for d in reg.dependencies if d in made],
                ignore_changes=reg.ignore_changes or None,
                replace_on_changes=reg.replace_on_changes or None,
                delete_before_replace=reg.options.get("deleteBeforeReplace"),
                aliases=[pulumi.Alias(type_=t) for t in aliases.get(reg.urn, [])] or None,
            )
            resource: pulumi.Resource
            if reg.type.startswith("pulumi:providers:"):
                resource = PlainProvider(reg.type.split(":")[2], reg.name, dict(reg.inputs), opts)
            elif reg.custom:
                resource = PlainCustom(reg.type, reg.name, dict(reg.inputs), opts)
            else:
                remote = not reg.type.startswith("gpupools:")
                component = PlainComponent(reg.type, reg.name, dict(reg.inputs), opts, remote)
                if not remote:
                    component.register_outputs({})
                resource = component
            made[reg.urn] = resource

    return program


def median_seconds(actions: list[Callable[[], Any]], repeats: int, pause_gc: bool) -> list[float]:
    """Median wall time of each action; the actions take turns within each repeat.

    With ``pause_gc`` every action runs with the cyclic garbage collector paused, as
    ``python -m gpupools.synth`` runs (``gpupools.synth.gc_paused``).
    """
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(repeats):
        for index, action in enumerate(actions):
            gc.collect()
            with gc_paused() if pause_gc else nullcontext():
                start = time.perf_counter()
                action()
                times[index].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


@dataclass
class Row:
    cloud: str
    pools: int
    registrations: int
    program: float
    synth: float
    floor: float

    @property
    def ratio(self) -> float:
        return self.program / self.floor

    @property
    def synth_ratio(self) -> float:
        return self.synth / self.floor

    def per_registration_ms(self, seconds: float) -> float:
        return 1000 * seconds / self.registrations


def measure(cloud: str, pools: int, repeats: int, pause_gc: bool) -> Row:
    stack = STACKS[cloud]
    overrides = fleet(cloud, pools)
    registrations, aliases = record(stack, overrides)  # also the warm-up
    floor_program = replay(registrations, aliases)
    floor_run = run_program(floor_program, stack=stack)  # warm-up of the floor
    assert sorted((r.type, r.name) for r in floor_run.registrations) == sorted((r.type, r.name) for r in registrations)

    def synth() -> None:
        run = run_stack(stack, overrides=overrides)
        render_json(desired_state(run, stack))
        render_yaml(kubernetes_manifests(run))

    program, synthesized, floor = median_seconds(
        [lambda: run_stack(stack, overrides=overrides), synth, lambda: run_program(floor_program, stack=stack)],
        repeats,
        pause_gc,
    )
    return Row(cloud, pools, len(registrations), program, synthesized, floor)


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    return f"{os.cpu_count()} CPU {platform.machine()} ({model or 'unknown CPU'}), Python {platform.python_version()}, pulumi {pulumi_version()}"


def pulumi_version() -> str:
    from importlib.metadata import version

    return version("pulumi")


def report(rows: list[Row]) -> str:
    header = (
        f"{'cloud':<6} {'pools':>5} {'regs':>5} {'program s':>10} {'synth s':>8} {'floor s':>8} "
        f"{'ratio':>6} {'synth/floor':>11} {'ms/reg':>7} {'floor ms/reg':>12}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r.cloud:<6} {r.pools:>5} {r.registrations:>5} {r.program:>10.3f} {r.synth:>8.3f} {r.floor:>8.3f} "
            f"{r.ratio:>6.2f} {r.synth_ratio:>11.2f} {r.per_registration_ms(r.program):>7.2f} {r.per_registration_ms(r.floor):>12.2f}"
        )
    lines.append("")
    lines.append("growth: marginal cost per added GPU pool between sizes (flat = linear in fleet size)")
    for cloud in sorted({r.cloud for r in rows}):
        mine = [r for r in rows if r.cloud == cloud]
        for small, big in itertools.pairwise(mine):
            pools = big.pools - small.pools
            regs = (big.registrations - small.registrations) / pools
            program_ms = 1000 * (big.program - small.program) / pools
            floor_ms = 1000 * (big.floor - small.floor) / pools
            lines.append(
                f"  {cloud:<6} {small.pools:>3} -> {big.pools:<3} pools: +{regs:.0f} registrations/pool, "
                f"program +{program_ms:.0f} ms/pool, floor +{floor_ms:.0f} ms/pool"
            )
    return "\n".join(lines)


def profile(cloud: str, pools: int) -> str:
    stack = STACKS[cloud]
    overrides = fleet(cloud, pools)
    run_stack(stack, overrides=overrides)
    profiler = cProfile.Profile()
    profiler.enable()
    run_stack(stack, overrides=overrides)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50", help="GPU pools per fleet, comma-separated (default 1,10,50)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement; the median is reported")
    parser.add_argument("--cloud", choices=["azure", "aws", "both"], default="both")
    parser.add_argument(
        "--gc",
        choices=["paused", "default", "both"],
        default="both",
        help="cyclic garbage collector during the runs: paused (as python -m gpupools.synth runs), "
        "CPython's default, or both tables (default)",
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the largest program run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    clouds = ["azure", "aws"] if args.cloud == "both" else [args.cloud]
    print(f"machine: {machine()}")
    print(f"median of {args.repeats} runs; each pool = Spot + on-demand over 3 zones\n")
    modes = {"paused": [True], "default": [False], "both": [True, False]}[args.gc]
    for pause_gc in modes:
        rows = []
        for cloud in clouds:
            for pools in sizes:
                rows.append(measure(cloud, pools, args.repeats, pause_gc))
                print(f"  measured {cloud} {pools} pools", file=sys.stderr)
        title = (
            "garbage collector paused (as python -m gpupools.synth runs)" if pause_gc else "CPython's default garbage collection"
        )
        print(f"{title}:\n")
        print(report(rows))
        print()
    if args.profile:
        for cloud in clouds:
            print(f"\ncProfile, {cloud}, {max(sizes)} pools:\n")
            print(profile(cloud, max(sizes)))


if __name__ == "__main__":
    main()
