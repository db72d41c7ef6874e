"""``python -m gpupools.sim spot STACK --pool NAME --unavailable|--available``: a Spot shortage of one
pool, for the provisioner the sim runs.

Under Karpenter (EKS Karpenter, AKS NAP) the shortage is what it is for Karpenter's scheduler: the
pool's sizes have no Spot offering. The KWOK provider forces every offering of its instance-types
file available (sigs.k8s.io/karpenter v1.14.1 ``kwok/cloudprovider/helpers.go``,
``setDefaultOptions``) and reads the file once, at start; so the sim rewrites the file without the
Spot offerings of the pool's sizes and restarts the provider (``gpupools.sim.karpenter``). Nodes
already running stay; the next launch for the pool buys what its NodePool allows next.

Under cluster-autoscaler the pool's Spot groups' new nodes never become Ready, as a cloud's Spot
instances that never boot (``gpupools.sim.autoscaler``): the real autoscaler waits out the stack's
``maxNodeProvisionTime`` and backs the group off; the on-demand scale-up that should follow does not
come yet while the never-ready node exists (docs/sim.md).
"""

from __future__ import annotations

import argparse
from typing import Sequence

from gpupools import _cli
from gpupools.conventions import CapacityType
from gpupools.sim import autoscaler, autoscaler_build, controllers, karpenter, node_shapes, objects, processes
from gpupools.sim.build import Build
from gpupools.sim.cluster import BadInputError, check_stack
from gpupools.sim.control_plane import ClusterState, SimError, running_state


def spot_pools(stack_objects: objects.StackObjects) -> list[str]:
    """The pools that buy Spot: whose NodePools allow it (Karpenter), or that have Spot node groups
    (cluster-autoscaler)."""
    if autoscaler.uses_cluster_autoscaler(stack_objects):
        return sorted({g.group.pool for g in autoscaler.scaling_groups(stack_objects) if g.group.capacity is CapacityType.SPOT})
    pools = []
    for nodepool in karpenter.nodepools(stack_objects.manifests):
        template = nodepool["spec"]["template"]
        if "spot" in karpenter._requirement(nodepool, "karpenter.sh/capacity-type"):
            pools.append(str(((template.get("metadata") or {}).get("labels") or {}).get("gpupools.io/pool", "")))
    return sorted(p for p in pools if p)


def set_spot(state: ClusterState, build: Build, stack_objects: objects.StackObjects, pool: str, *, available: bool) -> list[str]:
    """Mark ``pool``'s Spot capacity (un)available and restart the stack's provisioner with it;
    returns the pools now without Spot. BadInputError for an unknown pool or one that buys no Spot."""
    pools = sorted({g.pool for g in node_shapes.node_groups(stack_objects.run, stack_objects.spec, stack_objects.region)})
    if pool not in pools:
        raise BadInputError(f"unknown pool {pool!r} in stack {stack_objects.stack} (pools: {', '.join(pools)})")
    offered = spot_pools(stack_objects)
    if pool not in offered:
        raise BadInputError(
            f"pool {pool!r} of stack {stack_objects.stack} buys no Spot capacity (pools with Spot: {', '.join(offered) or 'none'})"
        )
    name, key = (
        (autoscaler.NAME, "unavailable")
        if autoscaler.uses_cluster_autoscaler(stack_objects)
        else (karpenter.NAME, "spotUnavailable")
    )
    record = processes.records(state).get(name)
    current = {p for p in (record.extra.get(key, "") if record else "").split(",") if p}
    wanted = sorted(current - {pool} if available else current | {pool})
    if name == autoscaler.NAME:
        autoscaler.stop(state)
        ca = autoscaler_build.cached() or autoscaler_build.build()
        autoscaler.start(state, ca.binary, stack_objects, controllers.autoscaler_plan(build, stack_objects), wanted)
    else:
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
        "POOL's sizes and restart it, so the next launch for the pool buys what its NodePool allows next. Under "
        "cluster-autoscaler: POOL's new Spot nodes never become Ready, so the autoscaler times out and backs the Spot "
        "group off after maxNodeProvisionTime (the on-demand fallback after it does not work in the sim yet; docs/sim.md).",
    )
    _cli.add_stack(parser)
    _cli.add_pool(parser, "a pool of the stack that buys Spot")
    state = parser.add_mutually_exclusive_group(required=True)
    state.add_argument("--unavailable", dest="available", action="store_false", help="no Spot offerings for the pool")
    state.add_argument("--available", dest="available", action="store_true", help="the pool's Spot offerings again")


def message(pool: str, available: bool, without: Sequence[str]) -> str:
    """What ``spot`` prints: the pool's new state, then which pools are still without Spot, or that
    every pool has it again (once said as "Spot unavailable for: no pool", issue 39)."""
    state = "available again" if available else "unavailable"
    others = sorted(set(without) - {pool})
    rest = f"; Spot still unavailable for: {', '.join(others)}" if others else "; Spot available for every other pool"
    return f"Spot capacity of pool {pool} is {state}{rest} (the stack's provisioner restarted with it)"


def run(args: argparse.Namespace) -> None:
    without = spot(args.stack, args.pool, available=args.available)
    print(message(args.pool, args.available, without))
