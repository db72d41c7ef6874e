"""Time to GPU, measured in the sim: from a pending GPU pod to its node and to the pod running, under
the stack's real provisioner, and the same with the pool's Spot unavailable.

For every example stack whose provisioner the sim runs (Karpenter: EKS Karpenter and AKS NAP), this
starts the stack's sim cluster (``gpupools.sim.cluster.up``: the real control plane, the stack's
objects, Karpenter v1.14.1 with its KWOK provider and the stack's NodePools) and, ``--runs`` times:

* **Spot**: a one-GPU Job (``gpupools.jobs.gpu_job``) for the stack's first GPU pool; measured are the
  seconds from the Job's creation to Karpenter's NodeClaim (the decision), to the Node object (the
  launch as the KWOK provider makes it), and to the pod running (scheduler, KWOK);
* **on-demand fallback**: the same for the stack's second GPU pool after ``spot --unavailable`` for
  it (the restart of the provider is not counted): the decision with the pool's Spot offerings gone.

Between runs the pool's NodeClaims are deleted (as ``kubectl delete nodeclaim`` would) so each run
starts from zero nodes. What the sim cannot include is the cloud's boot: an instance or VM launched
to kubelet Ready, and the device plugin making ``nvidia.com/gpu`` allocatable. Those are added from
``gpupools.fallback_model.Timers`` (stated assumptions there), and the sum is printed as an estimate.
Nor can it reproduce a Spot launch that fails *after* the decision (Karpenter's InsufficientCapacity
path): the KWOK provider never fails a launch; ``benchmarks/fallback_time.py`` models that path.

cluster-autoscaler stacks are listed as not measured: cluster-autoscaler cannot be built here (its Go
module is not served by the module proxy; docs/sim.md).

Run from the repository root (Go on PATH; the first run builds the sim, cached afterwards)::

    python benchmarks/time_to_gpu.py
    python benchmarks/time_to_gpu.py --runs 5 --stack aws-karpenter-dev
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (ROOT, ROOT / "components"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from gpupools.conventions import KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL  # noqa: E402
from gpupools.fallback_model import Timers  # noqa: E402
from gpupools.jobs import gpu_job  # noqa: E402
from gpupools.specs import Cloud, Provisioner, Role  # noqa: E402

NAMESPACE = "default"
IMAGE = "registry.invalid/cuda:sim"
POLL = 0.1
"""Seconds between two looks at the API server: the resolution of every figure."""


def now() -> float:
    return time.monotonic()


def _wait(condition: Any, timeout: float = 120.0) -> Any:
    deadline = now() + timeout
    while now() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL)
    raise TimeoutError("timed out")


def one_launch(client: Any, stack_objects: Any, pool: Any, name: str) -> dict[str, Any]:
    """Seconds from the Job's creation to NodeClaim, Node and running pod; the node's capacity type."""
    job = gpu_job(
        name,
        IMAGE,
        cloud=stack_objects.spec.cloud,
        namespace=NAMESPACE,
        pool=pool.name,
        extra_taints=pool.taints,
        command=["sleep", "1"],
    )
    started = now()
    client.apply(job)
    claim_at = node_at = None

    def pod() -> dict[str, Any] | None:
        pods = client.list("v1", "Pod", namespace=NAMESPACE, label_selector=f"job-name={name}")
        return pods[0] if pods else None

    while True:
        if claim_at is None and any(
            c["metadata"]["labels"].get(POOL_LABEL) == pool.name for c in client.list("karpenter.sh/v1", "NodeClaim")
        ):
            claim_at = now() - started
        if node_at is None and any(n["metadata"]["labels"].get(POOL_LABEL) == pool.name for n in client.list("v1", "Node")):
            node_at = now() - started
        current = pod()
        if current and (current.get("status") or {}).get("phase") in ("Running", "Succeeded"):
            running_at = now() - started
            node = client.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": current["spec"]["nodeName"]}})
            break
        if now() - started > 180:
            raise TimeoutError(f"{name}: no node for pool {pool.name} after 180 s")
        time.sleep(POLL)
    client.delete(job, propagation="Background")
    return {
        "claim": claim_at if claim_at is not None else running_at,
        "node": node_at if node_at is not None else running_at,
        "running": running_at,
        "capacity": node["metadata"]["labels"].get(KARPENTER_CAPACITY_TYPE_LABEL, "?"),
    }


def empty_pool(client: Any, pool: str) -> None:
    """Delete the pool's NodeClaims (Karpenter terminates their nodes) and wait until they are gone."""
    for claim in client.list("karpenter.sh/v1", "NodeClaim"):
        if claim["metadata"]["labels"].get(POOL_LABEL) == pool:
            client.delete(claim)
    _wait(lambda: not [c for c in client.list("karpenter.sh/v1", "NodeClaim") if c["metadata"]["labels"].get(POOL_LABEL) == pool])


def measure(stack: str, runs: int) -> list[dict[str, Any]]:
    from gpupools.sim import cluster, spot

    build = _build()
    result = cluster.up(stack, build=build, progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    rows = []
    try:
        client = result.state.client()
        gpu = [p for p in result.objects.spec.pools if p.role is Role.GPU]
        first, second = gpu[0], gpu[-1]
        spot.set_spot(result.state, build, result.objects, second.name, available=False)
        for case, pool in (("Spot", first), ("on-demand fallback (Spot unavailable)", second)):
            samples = []
            for index in range(runs):
                samples.append(one_launch(client, result.objects, pool, f"ttg-{pool.name}-{index}"))
                empty_pool(client, pool.name)
            rows.append({"stack": stack, "case": case, "pool": pool.name, "cloud": result.objects.spec.cloud, "samples": samples})
    finally:
        cluster.down(stack)
    return rows


def _build() -> Any:
    from gpupools.sim import build

    found = build.cached()
    if found is None:
        found = build.build(out=sys.stderr)
    return found


def boot_seconds(cloud: Cloud) -> float:
    timers = Timers()
    return (timers.ec2_node_ready if cloud is Cloud.AWS else timers.aks_node_ready) + timers.device_plugin_ready


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s"


def table(rows: list[dict[str, Any]], skipped: list[str]) -> str:
    lines = [
        "| stack | case | pod to NodeClaim (decision) | pod to Node | pod to running (sim) | capacity bought | + boot (model) | estimated time to GPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        samples = row["samples"]
        running = statistics.median(s["running"] for s in samples)
        boot = boot_seconds(row["cloud"])
        capacity = ", ".join(sorted({s["capacity"] for s in samples}))
        lines.append(
            f"| {row['stack']} | {row['case']}, pool {row['pool']} | {median([s['claim'] for s in samples])} | {median([s['node'] for s in samples])} "
            f"| {running:.1f} s | {capacity} | {boot:.0f} s | {running + boot:.0f} s |"
        )
    for stack in skipped:
        lines.append(f"| {stack} | not measured: cluster-autoscaler cannot be built here (docs/sim.md) | | | | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from gpupools.synth import committed_stacks
    from gpupools.testing import stack_config

    parser = argparse.ArgumentParser(prog="python benchmarks/time_to_gpu.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="launches per case (median printed); default 3")
    parser.add_argument("--stack", action="append", help="only these stacks (default: every example stack)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    stacks = args.stack or committed_stacks(ROOT)
    measured, skipped = [], []
    for stack in stacks:
        provisioner = stack_config(stack, ROOT).get("gpupools:provisioner", Provisioner.CLUSTER_AUTOSCALER.value)
        (measured if provisioner == Provisioner.KARPENTER.value else skipped).append(stack)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpupools-ttg-") as state:
        os.environ.setdefault("GPUPOOLS_SIM_STATE", state)
        for stack in measured:
            print(f"measuring {stack} ({args.runs} runs per case)", file=sys.stderr, flush=True)
            rows += measure(stack, args.runs)
    print(table(rows, skipped))
    timers = Timers()
    print(
        f"\nMedians of {args.runs} runs. Boot (model, gpupools.fallback_model.Timers, assumptions): EKS {timers.ec2_node_ready:.0f} s, "
        f"AKS {timers.aks_node_ready:.0f} s to kubelet Ready, + {timers.device_plugin_ready:.0f} s device plugin. The decision column "
        f"is what fallback_model calls Karpenter's batch step ({timers.karpenter_batch_idle:.0f} s typical, {timers.karpenter_batch_max:.0f} s worst)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
