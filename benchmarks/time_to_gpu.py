"""Time to GPU, measured in the sim: from a pending GPU pod to its node and to the pod running, under
the stack's real provisioner, and the same with the pool's Spot unavailable.

For every example stack (each provisioner the stacks use: cluster-autoscaler on AKS and EKS, EKS
Karpenter, AKS NAP), this starts the stack's sim cluster (``gpupools.sim.cluster.up``: the real control
plane, the stack's objects, and its real autoscaler: Karpenter v1.14.1 with its KWOK provider and the
stack's NodePools, or cluster-autoscaler 1.36.1 with its KWOK provider, the stack's node groups, flags
and priority expander) and, ``--runs`` times:

* **Spot**: a one-GPU Job (``gpupools.jobs.gpu_job``) for the stack's first GPU pool; measured are the
  seconds from the Job's creation to the decision (Karpenter's NodeClaim; under cluster-autoscaler the
  Node its KWOK provider creates in the scale-up itself), to the Node object, and to the pod running
  (scheduler, KWOK);
* **on-demand fallback**: the same for the stack's second GPU pool after ``spot --unavailable`` for
  it (the restart of the provider is not counted). Under Karpenter the decision is made with the
  pool's Spot offerings gone; under cluster-autoscaler the pool's Spot node never becomes Ready and the
  autoscaler waits out the stack's own ``maxNodeProvisionTime`` before its expander picks the
  on-demand group, so this case runs ``--fallback-runs`` times (default 1: it takes the stack's
  10-15 minutes per run).

* **warm**: the stack again, with ``warm: {nodes: 1}`` on its first GPU pool (under Karpenter the
  first without sharing; ``gpuPools[].warm``, docs/warm.md): once the warm node exists and is idle, the same one-GPU Job. The pod lands on a
  node that has booted already, so no boot is added; the seconds are the scheduler's (and, with
  placeholder pods, a preemption). ``--warm-runs`` times (default ``--runs``; 0 skips it).

Between runs the pool's nodes are removed (Karpenter: its NodeClaims deleted, as ``kubectl delete
nodeclaim`` would; cluster-autoscaler: its Nodes deleted, as a scale-in to zero would) so each run
starts from zero nodes. What the sim cannot include is the cloud's boot: an instance or VM launched
to kubelet Ready, and the device plugin making ``nvidia.com/gpu`` allocatable. Those are added from
``gpupools.fallback_model.Timers`` (stated assumptions there), and the sum is printed as an estimate.
Nor can it reproduce a Spot launch that fails *after* the decision (Karpenter's InsufficientCapacity
path): the KWOK provider never fails a launch; ``benchmarks/fallback_time.py`` models that path.

Run from the repository root (Go on PATH; the first run builds the sim, cached afterwards)::

    python benchmarks/time_to_gpu.py
    python benchmarks/time_to_gpu.py --runs 5 --stack aws-karpenter-dev
    python benchmarks/time_to_gpu.py --stack aws-dev --fallback-runs 0    # cluster-autoscaler, Spot only
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

from gpupools.conventions import CAPACITY_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL, CapacityType  # noqa: E402
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


def one_launch(client: Any, stack_objects: Any, pool: Any, name: str, timeout: float = 180.0) -> dict[str, Any]:
    """Seconds from the Job's creation to the decision (NodeClaim; under cluster-autoscaler the Node),
    Node and running pod; the node's capacity type."""
    job = gpu_job(
        name,
        IMAGE,
        cloud=stack_objects.spec.cloud,
        namespace=NAMESPACE,
        pool=pool.name,
        extra_taints=pool.taints,
        command=["sleep", "1"],
    )
    karpenter = stack_objects.spec.provisioner.node_pools  # Karpenter, NAP or EKS Auto Mode's Karpenter
    started = now()
    client.apply(job)
    claim_at = None
    seen: dict[str, float] = {}
    """When each of the pool's Nodes first appeared: under cluster-autoscaler with Spot unavailable the
    first is a Spot node that never becomes Ready, so the decision and Node times are those of the node
    the pod ran on, and the others are the Spot groups tried before it."""

    def pod() -> dict[str, Any] | None:
        pods = client.list("v1", "Pod", namespace=NAMESPACE, label_selector=f"job-name={name}")
        return pods[0] if pods else None

    while True:
        if (
            claim_at is None
            and karpenter
            and any(c["metadata"]["labels"].get(POOL_LABEL) == pool.name for c in client.list("karpenter.sh/v1", "NodeClaim"))
        ):
            claim_at = now() - started
        for candidate in client.list("v1", "Node", label_selector=f"{POOL_LABEL}={pool.name}"):
            seen.setdefault(candidate["metadata"]["name"], now() - started)
        current = pod()
        if current and (current.get("status") or {}).get("phase") in ("Running", "Succeeded"):
            running_at = now() - started
            node = client.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": current["spec"]["nodeName"]}})
            break
        if now() - started > timeout:
            raise TimeoutError(f"{name}: no node for pool {pool.name} after {timeout:.0f} s")
        time.sleep(POLL)
    client.delete(job, propagation="Background")
    labels = node["metadata"]["labels"]
    node_at = seen.get(node["metadata"]["name"], running_at)
    return {
        "claim": claim_at if claim_at is not None else node_at,
        "node": node_at,
        "running": running_at,
        "tried": len(seen) - 1 if not karpenter else 0,
        "capacity": labels.get(KARPENTER_CAPACITY_TYPE_LABEL) or labels.get(CAPACITY_TYPE_LABEL, "?"),
    }


def empty_pool(client: Any, pool: str, karpenter: bool) -> None:
    """Delete the pool's NodeClaims (Karpenter terminates their nodes), or under cluster-autoscaler its
    Nodes, and wait until they are gone."""
    if not karpenter:
        for node in client.list("v1", "Node", label_selector=f"{POOL_LABEL}={pool}"):
            client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node["metadata"]["name"]}})
        _wait(lambda: not client.list("v1", "Node", label_selector=f"{POOL_LABEL}={pool}"))
        return
    for claim in client.list("karpenter.sh/v1", "NodeClaim"):
        if claim["metadata"]["labels"].get(POOL_LABEL) == pool:
            client.delete(claim)
    _wait(lambda: not [c for c in client.list("karpenter.sh/v1", "NodeClaim") if c["metadata"]["labels"].get(POOL_LABEL) == pool])


def provisioner_name(provisioner: Provisioner) -> str:
    """The table's provisioner column: ``Karpenter`` (on AKS: NAP's), ``EKS Auto Mode
    (Karpenter)`` or ``cluster-autoscaler``."""
    return {
        Provisioner.KARPENTER: "Karpenter",
        Provisioner.AUTO_MODE: "EKS Auto Mode (Karpenter)",
        Provisioner.CLUSTER_AUTOSCALER: "cluster-autoscaler",
    }[provisioner]


def measure(stack: str, runs: int, fallback_runs: int) -> list[dict[str, Any]]:
    from gpupools.sim import autoscaler, cluster, spot

    build = _build()
    result = cluster.up(stack, build=build, progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    rows = []
    try:
        client = result.state.client()
        spec = result.objects.spec
        karpenter = spec.provisioner.node_pools
        gpu = [p for p in spec.pools if p.role is Role.GPU and not p.reservations]
        first, second = gpu[0], gpu[-1]
        # Under cluster-autoscaler the fallback waits out maxNodeProvisionTime once per Spot group of the
        # pool (one per zone on EKS: gpupools.fallback_model): allow that, then five minutes.
        spot_groups = (
            1
            if karpenter
            else len(
                [
                    g
                    for g in autoscaler.scaling_groups(result.objects)
                    if g.group.pool == second.name and g.group.capacity is CapacityType.SPOT
                ]
            )
        )
        fallback_timeout = 180.0 if karpenter else spot_groups * minutes(spec.autoscaler.max_node_provision_time) * 60 + 300
        cases = [("Spot", first, runs, 180.0)]
        if fallback_runs:
            spot.set_spot(result.state, build, result.objects, second.name, available=False)
            cases.append(("on-demand fallback (Spot unavailable)", second, fallback_runs, fallback_timeout))
        for case, pool, count, timeout in cases:
            samples = []
            for index in range(count):
                samples.append(one_launch(client, result.objects, pool, f"ttg-{pool.name}-{index}", timeout))
                empty_pool(client, pool.name, karpenter)
            row = {
                "stack": stack,
                "case": case,
                "pool": pool.name,
                "cloud": spec.cloud,
                "provisioner": provisioner_name(spec.provisioner),
                "provision_time": None if karpenter else spec.autoscaler.max_node_provision_time,
                "samples": samples,
            }
            rows.append(row)
            print(table([row], header=False), file=sys.stderr, flush=True)
    finally:
        cluster.down(stack)
    return rows


def measure_warm(stack: str, runs: int) -> dict[str, Any]:
    """The warm case (module docstring): ``runs`` launches onto an idle warm node of the first GPU pool."""
    import copy

    from gpupools.sim import cluster
    from gpupools.testing import stack_config

    values = stack_config(stack, ROOT)
    pools = copy.deepcopy(values["gpupools:gpuPools"])
    # Under Karpenter the first pool without sharing: the KWOK provider's Node shows physical GPUs, not
    # the NodeOverlay's slots, so a whole-node chunk of a shared pool never fits (tests/sim/test_warm.py).
    karpenter = values.get("gpupools:provisioner") in (Provisioner.KARPENTER.value, Provisioner.AUTO_MODE.value)
    index = next(i for i, p in enumerate(pools) if not (karpenter and p.get("sharing")))
    pools[index]["warm"] = {"nodes": 1}
    result = cluster.up(
        stack,
        build=_build(),
        overrides={"gpupools:gpuPools": pools},
        progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True),
    )
    try:
        client = result.state.client()
        spec = result.objects.spec
        pool = next(p for p in spec.pools if p.role is Role.GPU and p.warm is not None)
        samples = []
        for index in range(runs):
            _wait(lambda: idle_node(client, pool.name), timeout=300.0)
            samples.append(one_launch(client, result.objects, pool, f"ttg-warm-{pool.name}-{index}", 120.0))
        return {
            "stack": stack,
            "case": "warm (1 node kept)",
            "pool": pool.name,
            "cloud": spec.cloud,
            "provisioner": provisioner_name(spec.provisioner),
            "provision_time": None,
            "samples": samples,
            "warm": True,
        }
    finally:
        cluster.down(stack)


def idle_node(client: Any, pool: str) -> bool:
    """A node of ``pool`` with no pod on it but DaemonSet pods and the pool's placeholders."""
    nodes = {n["metadata"]["name"] for n in client.list("v1", "Node", label_selector=f"{POOL_LABEL}={pool}")}
    busy = set()
    for pod in client.list("v1", "Pod"):
        owners = pod["metadata"].get("ownerReferences") or []
        placeholder = pod["metadata"]["namespace"] == "gpupools-warm"
        done = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if not placeholder and not done and not any(o["kind"] == "DaemonSet" for o in owners):
            busy.add(pod["spec"].get("nodeName"))
    return bool(nodes - busy)


def _build() -> Any:
    from gpupools.sim import build

    found = build.cached()
    if found is None:
        found = build.build(out=sys.stderr)
    return found


def minutes(duration: str) -> int:
    """``"10m"`` -> 10 (the config's canonical form of a duration)."""
    return int(duration.removesuffix("m"))


def boot_seconds(cloud: Cloud) -> float:
    timers = Timers()
    return (timers.ec2_node_ready if cloud is Cloud.AWS else timers.aks_node_ready) + timers.device_plugin_ready


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s"


def table(rows: list[dict[str, Any]], header: bool = True) -> str:
    lines = (
        [
            "| stack | provisioner | case | pod to decision | pod to Node | pod to running (sim) | capacity bought "
            "| + boot (model) | estimated time to GPU |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        if header
        else []
    )
    for row in rows:
        samples = row["samples"]
        running = statistics.median(s["running"] for s in samples)
        boot = 0.0 if row.get("warm") else boot_seconds(row["cloud"])
        capacity = ", ".join(sorted({s["capacity"] for s in samples}))
        tried = max(s.get("tried", 0) for s in samples)
        case = row["case"] + (
            f" after maxNodeProvisionTime {row['provision_time']} x {tried} Spot group{'s' if tried != 1 else ''}"
            if row["provision_time"] and "fallback" in row["case"]
            else ""
        )
        # Warm: the node existed before the pod; there is no decision or new Node to time.
        decision = "none (node kept)" if row.get("warm") else median([s["claim"] for s in samples])
        node = "none (node kept)" if row.get("warm") else median([s["node"] for s in samples])
        lines.append(
            f"| {row['stack']} | {row['provisioner']} | {case}, pool {row['pool']} | {decision} "
            f"| {node} | {running:.1f} s | {capacity} | {boot:.0f} s | {running + boot:.0f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from gpupools.synth import committed_stacks
    from gpupools.testing import stack_config

    parser = argparse.ArgumentParser(prog="python benchmarks/time_to_gpu.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="launches per case (median printed); default 3")
    parser.add_argument(
        "--fallback-runs",
        type=int,
        help="launches of the fallback case (default: --runs under Karpenter, 1 under cluster-autoscaler, whose "
        "fallback waits out the stack's maxNodeProvisionTime); 0 skips it",
    )
    parser.add_argument("--stack", action="append", help="only these stacks (default: every example stack)")
    parser.add_argument("--warm-runs", type=int, help="launches onto a warm node (default: --runs); 0 skips the warm case")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if args.fallback_runs is not None and args.fallback_runs < 0:
        parser.error(f"--fallback-runs must be at least 0, got {args.fallback_runs}")
    measured = args.stack or committed_stacks(ROOT)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpupools-ttg-") as state:
        os.environ.setdefault("GPUPOOLS_SIM_STATE", state)
        for stack in measured:
            karpenter = stack_config(stack, ROOT).get("gpupools:provisioner") in (
                Provisioner.KARPENTER.value,
                Provisioner.AUTO_MODE.value,
            )
            fallback_runs = args.fallback_runs if args.fallback_runs is not None else (args.runs if karpenter else 1)
            print(f"measuring {stack} ({args.runs} runs, {fallback_runs} of the fallback)", file=sys.stderr, flush=True)
            rows += measure(stack, args.runs, fallback_runs)
            warm_runs = args.runs if args.warm_runs is None else args.warm_runs
            if warm_runs:
                rows.append(measure_warm(stack, warm_runs))
    print(table(rows))
    timers = Timers()
    print(
        f"\nMedians of {args.runs} runs. Boot (model, gpupools.fallback_model.Timers, assumptions): EKS {timers.ec2_node_ready:.0f} s, "
        f"AKS {timers.aks_node_ready:.0f} s to kubelet Ready, + {timers.device_plugin_ready:.0f} s device plugin. The decision column "
        f"is what fallback_model calls Karpenter's batch step ({timers.karpenter_batch_idle:.0f} s typical, {timers.karpenter_batch_max:.0f} s worst) "
        f"and cluster-autoscaler's scan ({timers.scan_interval:.0f} s interval)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
