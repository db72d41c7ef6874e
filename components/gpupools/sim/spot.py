"""``python -m gpupools.sim spot STACK --pool NAME --unavailable|--available``: a Spot shortage of one
pool, for the provisioner the sim runs.

Under Karpenter (EKS Karpenter, AKS NAP) the shortage is what it is for Karpenter's scheduler: the
pool's sizes have no Spot offering. The KWOK provider forces every offering of its instance-types
file available (sigs.k8s.io/karpenter v1.14.1 ``kwok/cloudprovider/helpers.go``,
``setDefaultOptions``) and reads the file once, at start; so the sim rewrites the file without the
Spot offerings of the pool's sizes and restarts the provider (``gpupools.sim.karpenter``). Nodes
already running stay; the next launch for the pool buys what its NodePool allows next.

Under cluster-autoscaler there is nothing to make fail: cluster-autoscaler cannot be built here
(docs/sim.md), so ``spot`` refuses with that reason.
"""

from __future__ import annotations

import argparse

from gpupools.sim import karpenter, objects, processes
from gpupools.sim.build import Build
from gpupools.sim.cluster import BadInputError, check_stack
from gpupools.sim.control_plane import ClusterState, SimError, running_state


def spot_pools(stack_objects: objects.StackObjects) -> list[str]:
    """The pools whose NodePools allow Spot."""
    pools = []
    for nodepool in karpenter.nodepools(stack_objects.manifests):
        template = nodepool["spec"]["template"]
        if "spot" in karpenter._requirement(nodepool, "karpenter.sh/capacity-type"):
            pools.append(str(((template.get("metadata") or {}).get("labels") or {}).get("gpupools.io/pool", "")))
    return sorted(p for p in pools if p)


def set_spot(state: ClusterState, build: Build, stack_objects: objects.StackObjects, pool: str, *, available: bool) -> list[str]:
    """Mark ``pool``'s Spot capacity (un)available and restart Karpenter with the new offerings;
    returns the pools now without Spot. BadInputError for a pool that buys no Spot under Karpenter."""
    if not karpenter.uses_karpenter(stack_objects):
        raise SimError(
            f"stack {stack_objects.stack} uses cluster-autoscaler, which the sim cannot run (its module is not served "
            "by the Go module proxy; docs/sim.md): there is no autoscaler whose Spot purchases could fail"
        )
    offered = spot_pools(stack_objects)
    if pool not in offered:
        raise BadInputError(
            f"pool {pool!r} of stack {stack_objects.stack} buys no Spot capacity (pools with Spot: {', '.join(offered)})"
        )
    record = processes.records(state).get(karpenter.NAME)
    current = {p for p in (record.extra.get("spotUnavailable", "") if record else "").split(",") if p}
    wanted = sorted(current - {pool} if available else current | {pool})
    karpenter.stop(state)
    karpenter.start(state, build, stack_objects, wanted)
    return wanted


def spot(stack: str, pool: str, *, available: bool) -> list[str]:
    """``spot`` on ``stack``'s running sim cluster (see the module docstring)."""
    from gpupools.sim import build as builds

    check_stack(stack)
    state = running_state(stack)
    build = builds.cached()
    if build is None:
        raise SimError("no cached build of the sim's binaries: run scripts/build-sim")
    return set_spot(state, build, objects.load(stack), pool, available=available)


def add_parser(commands: argparse._SubParsersAction) -> None:
    """The ``spot`` subcommand of ``python -m gpupools.sim``."""
    parser = commands.add_parser(
        "spot",
        help="make a pool's Spot capacity unavailable (or available again) for the stack's provisioner",
        description="Under Karpenter: rewrite the KWOK provider's instance types without (or with) the Spot offerings of "
        "POOL's sizes and restart it, so the next launch for the pool buys what its NodePool allows next.",
    )
    parser.add_argument("stack", help="stack name")
    parser.add_argument("--pool", required=True, help="a pool of the stack that buys Spot")
    state = parser.add_mutually_exclusive_group(required=True)
    state.add_argument("--unavailable", dest="available", action="store_false", help="no Spot offerings for the pool")
    state.add_argument("--available", dest="available", action="store_true", help="the pool's Spot offerings again")


def run(args: argparse.Namespace) -> None:
    without = spot(args.stack, args.pool, available=args.available)
    print(f"Spot unavailable for: {', '.join(without) or 'no pool'} (Karpenter restarted with the new offerings)")
