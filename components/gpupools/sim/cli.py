"""``python -m gpupools.sim``: the command line of the sim (see ``gpupools.sim``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from gpupools import _cli
from gpupools.conventions import CapacityType
from gpupools.sim import engine_cli, spot

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
"""argparse's own status for bad usage; also an unknown stack, pool or capacity type."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.sim",
        description="The stack's Kubernetes half on a real local control plane (etcd, kube-apiserver, kube-controller-manager, "
        "kube-scheduler on 127.0.0.1) with KWOK nodes shaped like the stack's pools. The binaries are built from the Go "
        "modules pinned in sim/ on first use (scripts/build-sim) and cached.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up = commands.add_parser(
        "up",
        help="start the stack's sim cluster, install CRDs, add the system pool's nodes, apply the stack's objects",
        description="Start STACK's sim cluster and apply every Kubernetes object the stack program registers "
        "(server-side apply, dry run first). Returns once its DaemonSets are ready; the cluster runs until `down`.",
    )
    _cli.add_stack(up)
    up.add_argument(
        "--kubeconfig", type=Path, help="where to write the kubeconfig (default: in the sim's state directory; printed)"
    )
    up.add_argument("--port", type=int, help="the API server's port on 127.0.0.1 (default: a free one)")
    nodes = commands.add_parser(
        "nodes",
        help="add nodes of a pool, with the labels, taints and resources the cloud gives them",
        description="Add COUNT simulated nodes of POOL's node group(s) of the given capacity type to STACK's running sim cluster.",
    )
    _cli.add_stack(nodes)
    _cli.add_pool(nodes, "a pool of the stack (gpuPools/cpuPools name, or system)")
    nodes.add_argument("--count", required=True, type=int, help="how many nodes to add")
    nodes.add_argument(
        "--capacity",
        choices=[c.value for c in CapacityType],
        help="capacity type of the nodes (default: the pool's first in buying order: reserved, spot, on-demand)",
    )
    status = commands.add_parser("status", help="nodes per pool and capacity type, pods pending and running per pool")
    _cli.add_stack(status)
    status.add_argument("--json", action="store_true", help="print JSON instead of the table")
    spot.add_parser(commands)
    down = commands.add_parser("down", help="stop every process of the stack's sim cluster and remove its state")
    _cli.add_stack(down)
    engine_cli.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (2 for bad input, 1 when the sim cannot do it)."""
    args = _cli.parse_args(_parser(), argv)
    from gpupools.errors import ConfigError
    from gpupools.sim import cluster
    from gpupools.sim.build import BuildError
    from gpupools.sim.control_plane import SimError
    from gpupools.synth import config_error_in

    try:
        if args.command == "up":
            result = cluster.up(args.stack, kubeconfig=args.kubeconfig, api_port=args.port)
            print(f"sim cluster of {args.stack} is up: Kubernetes {result.state.kubernetes_version} at {result.state.server}")
            print(f"kubeconfig: {result.kubeconfig}")
        elif args.command == "nodes":
            capacity = CapacityType(args.capacity) if args.capacity else None
            for name in cluster.nodes(args.stack, args.pool, args.count, capacity):
                print(name)
        elif args.command == "status":
            data = cluster.status(args.stack)
            sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n" if args.json else cluster.render_status(data))
        elif args.command == "spot":
            spot.run(args)
        elif args.command == "down":
            stopped = cluster.down(args.stack)
            print(f"stopped {', '.join(stopped)}" if stopped else f"no sim cluster of stack {args.stack} was running")
        elif args.command in engine_cli.COMMANDS:
            engine_cli.run(args)
    except cluster.BadInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (SimError, BuildError, TimeoutError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as error:
        config_error = config_error_in(error)
        if config_error is None and not isinstance(error, ConfigError):
            raise
        print(str(config_error or error), file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0
