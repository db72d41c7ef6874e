"""Modelled time from a Spot capacity error to a usable on-demand GPU node, per provisioner and cloud.

Prints a Markdown table from ``gpupools.fallback_model`` (the pure model, with the source of
every timer), and with ``--steps`` every step of every path with its source. Nothing is measured
and nothing talks to a cloud: the documented timers are upstream defaults, the rest are stated
assumptions you can replace with your own numbers. Run from the repository root::

    python benchmarks/fallback_time.py
    python benchmarks/fallback_time.py --max-node-provision-time 15m      # AKS's own default
    python benchmarks/fallback_time.py --set aks_node_ready=300 --steps
    python benchmarks/fallback_time.py --eks-spot-groups 1    # an EKS pool in one zone
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpupools.fallback_model import EKS_SPOT_GROUPS, Fallback, Timers, fallbacks, human  # noqa: E402
from gpupools.specs import AutoscalerSpec  # noqa: E402

NAMES = {"cluster-autoscaler": "cluster-autoscaler", "karpenter": "Karpenter", "nap": "NAP (Karpenter)"}
CASES = {"sync": "synchronous (in the response / scaling activity)", "async": "asynchronous (inside the operation)"}


def table(paths: list[Fallback]) -> str:
    lines = [
        "| provisioner | cloud | Spot capacity error | error to on-demand request (typical / worst) | Spot request to usable on-demand GPU node (typical / worst) |",
        "|---|---|---|---|---|",
    ]
    for path in paths:
        lines.append(
            f"| {NAMES[path.provisioner.value]} | {path.cloud.upper()} | {CASES[path.failure.value]} "
            f"| {human(path.reaction_typical)} / {human(path.reaction_worst)} | {human(path.typical)} / {human(path.worst)} |"
        )
    return "\n".join(lines)


def steps(paths: list[Fallback]) -> str:
    out = []
    for path in paths:
        out.append(f"\n{NAMES[path.provisioner.value]} on {path.cloud.upper()}, {path.failure.value} error:")
        for step in path.steps:
            mark = "  <- the cloud reports the error" if step.error else "  <- on-demand asked for" if step.decides else ""
            out.append(
                f"  {human(step.typical):>7} / {human(step.worst):>7}  {step.what}{mark}\n                     [{step.source}]"
            )
    return "\n".join(out)


def parse_overrides(pairs: list[str]) -> dict[str, float]:
    fields = {f.name for f in dataclasses.fields(Timers)} - {"max_node_provision_time"}  # set by --max-node-provision-time
    overrides = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in fields:
            raise SystemExit(f"--set {pair}: unknown timer {name!r}; one of {', '.join(sorted(fields))}")
        overrides[name] = float(value)
    return overrides


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--max-node-provision-time",
        default=AutoscalerSpec.max_node_provision_time,
        help="gpupools:autoscaler.maxNodeProvisionTime (default: gpupools' default)",
    )
    parser.add_argument(
        "--eks-spot-groups",
        type=int,
        default=EKS_SPOT_GROUPS,
        help=f"Spot groups of the EKS pool, one per zone (default {EKS_SPOT_GROUPS}, the example stacks' zones): "
        "cluster-autoscaler tries them one after another before on-demand",
    )
    parser.add_argument("--set", action="append", default=[], metavar="TIMER=SECONDS", help="override a timer of the model")
    parser.add_argument("--steps", action="store_true", help="also print every step with its source")
    args = parser.parse_args(argv)
    spec = AutoscalerSpec(max_node_provision_time=args.max_node_provision_time)
    if args.eks_spot_groups < 1:
        parser.error(f"--eks-spot-groups must be at least 1, got {args.eks_spot_groups}")
    paths = fallbacks(Timers.for_autoscaler(spec, **parse_overrides(args.set)), args.eks_spot_groups)
    print(table(paths))
    if args.steps:
        print(steps(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
