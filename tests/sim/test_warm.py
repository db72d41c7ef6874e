"""Warm GPU capacity (``gpuPools[].warm``, issue 41) in the sim, with each provisioner's real
autoscaler: cluster-autoscaler 1.36.1 (aws-dev: the stack's CapacityBuffer; azure-dev: AKS's
placeholder pods), Karpenter v1.14.1 (aws-karpenter-dev: CapacityBuffer behind its gate; azure-nap-dev and
azure-automatic-dev: placeholder pods).

Each stack's first GPU pool gets ``warm: {nodes: 1, schedule: {start: "00:00", end: "23:59"}}``
through the stack's own config. The schedule's CronJobs exist on the API server, but KWOK runs no
container, so the test does what each CronJob does (``gpupools.sim.warm.scale``: the patch its
command holds) after checking with the API server's RBAC that its ServiceAccount may do exactly that
and nothing next to it. Then, as the issue asks: after the open edge the pool has one warm node with
no workload pod on it; a GPU pod for the pool runs on that node without a new node being created
first; a replacement warm node follows; after the close edge the buffer is gone and the pool returns
to zero. ``scaleDownUnneededTime`` is 1m through the stack's config (as in the cluster-autoscaler
module); under cluster-autoscaler the autoscaler is restarted after the close edge to sidestep
``--scale-down-delay-after-add`` (10m), as ``test_cluster_autoscaler`` does.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Iterator

import pytest
from gpupools import warm
from gpupools.conventions import POOL_LABEL
from gpupools.jobs import gpu_job
from gpupools.sim import autoscaler, autoscaler_build, controllers
from gpupools.sim import warm as sim_warm
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import wait_for
from gpupools.specs import PoolSpec
from gpupools.testing import stack_config

from tests.sim.test_autoscalers import IMAGE, WORKLOADS, Running, gpu_pools, running

pytestmark = pytest.mark.sim

STACKS = ("aws-dev", "azure-dev", "aws-karpenter-dev", "aws-auto-dev", "azure-nap-dev", "azure-automatic-dev")
ALL_DAY = {"start": "00:00", "end": "23:59"}
WARM_TIMEOUT = 150.0
"""Seconds for the autoscaler to buy the warm node (cluster-autoscaler's 10 s loop, Karpenter's batch)."""
TAKE_TIMEOUT = 30.0
"""Seconds for the GPU pod to run on the warm node: the scheduler (and a preemption for placeholders)."""


def warm_index(values: dict[str, Any]) -> int:
    """The GPU pool that gets ``warm``: the first, except under Karpenter the first without sharing:
    Karpenter's KWOK provider writes the size's physical GPUs on the Node, not the NodeOverlay's
    slots (docs/sim.md, "What the node shows"), so a chunk of all of a shared node's slots never fits
    the node it bought and Karpenter buys another every buffer reconcile (30 s). On a real node the
    device plugin advertises the slots."""
    pools = values["gpupools:gpuPools"]
    if values.get("gpupools:provisioner") not in ("karpenter", "auto-mode"):
        return 0
    return next(i for i, p in enumerate(pools) if not p.get("sharing"))


def overrides(stack: str) -> dict[str, Any]:
    values = stack_config(stack)
    pools = copy.deepcopy(values["gpupools:gpuPools"])
    pools[warm_index(values)]["warm"] = {"nodes": 1, "schedule": ALL_DAY}
    autoscaler_section = {"scaleDownUnneededTime": "1m"}
    if values.get("gpupools:provisioner") not in ("karpenter", "auto-mode"):
        autoscaler_section["maxNodeProvisionTime"] = "1m"
    return {"gpupools:gpuPools": pools, "gpupools:autoscaler": autoscaler_section}


@pytest.fixture(scope="module", params=STACKS)
def warm_stack(request: pytest.FixtureRequest, session_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running(request.param, session_cluster, sim_build, overrides(request.param)) as run:
        yield run


def pool_nodes(run: Running, pool: str) -> list[dict[str, Any]]:
    return [n for n in run.client.list("v1", "Node") if n["metadata"].get("labels", {}).get(POOL_LABEL) == pool]


def workload_pods_on(run: Running, node: str) -> list[str]:
    """Pods bound to ``node`` that are not DaemonSet pods and not the pool's placeholders."""
    names = []
    for pod in run.client.list("v1", "Pod"):
        if pod["spec"].get("nodeName") != node:
            continue
        owners = pod["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "DaemonSet" for o in owners) or pod["metadata"]["namespace"] == warm.WARM_NAMESPACE:
            continue
        names.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
    return names


def gpu_pod(run: Running, pool: PoolSpec) -> dict[str, Any]:
    """A Pod with the pod template ``gpu_job`` gives a one-GPU job for ``pool``."""
    job = gpu_job(
        f"warm-{pool.name}",
        IMAGE,
        cloud=run.objects.spec.cloud,
        gpus=1,
        namespace=WORKLOADS,
        pool=pool.name,
        extra_taints=pool.taints,
        command=["sleep", "infinity"],
    )
    spec = dict(job["spec"]["template"]["spec"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"warm-{pool.name}", "namespace": WORKLOADS}, "spec": spec}


def test_warm_pool_lifecycle(warm_stack: Running, sim_build: Build) -> None:
    run = warm_stack
    [pool] = [p for p in gpu_pools(run) if p.warm is not None]
    buffer = sim_warm.target(run.objects, pool.name)
    kind = warm.Mechanism.CAPACITY_BUFFER if buffer["kind"] == "CapacityBuffer" else warm.Mechanism.PLACEHOLDER_PODS
    expected = warm.mechanism(run.objects.spec.cloud, run.objects.spec.provisioner, "v1.35.2")
    assert kind is expected

    # The schedule's RBAC, as the API server decides it: patch on this one object, nothing next to it.
    group, resource, _ = warm.scaled_target(kind)
    resource, _, sub = resource.partition("/")
    name = warm.object_name(pool.name)
    assert sim_warm.allowed(run.client, pool.name, name, resource, group, sub)
    assert not sim_warm.allowed(run.client, pool.name, "some-other-buffer", resource, group, sub)
    assert not sim_warm.allowed(
        run.client, pool.name, name, "deployments" if resource != "deployments" else "statefulsets", "apps"
    )

    # Created at 0 (scheduled): nothing bought until the open edge.
    assert not pool_nodes(run, pool.name)
    sim_warm.scale(run.client, run.objects, pool.name, "open")
    opened = time.monotonic()
    [warm_node] = wait_for(
        lambda: pool_nodes(run, pool.name) or None, timeout=WARM_TIMEOUT, interval=1, what=f"a warm node of pool {pool.name}"
    )
    warm_name = warm_node["metadata"]["name"]
    print(f"{run.stack}: warm node {warm_name} {time.monotonic() - opened:.1f}s after the open edge ({kind.value})")
    time.sleep(5)  # a second warm node, if the buffer were miscounted, would be bought by now
    assert [n["metadata"]["name"] for n in pool_nodes(run, pool.name)] == [warm_name]
    assert workload_pods_on(run, warm_name) == []

    # A GPU pod for the pool takes the warm node without a node being created first. A bare Pod of
    # gpu_job's pod template: KWOK completes a Job's pods at once, and the pod must hold the node.
    job = gpu_pod(run, pool)
    run.client.apply(job)
    submitted = time.monotonic()

    def runs() -> dict[str, Any] | None:
        pod = run.client.get(job)
        return pod if pod and (pod.get("status") or {}).get("phase") == "Running" else None

    pod = wait_for(runs, timeout=TAKE_TIMEOUT, interval=0.5, what="the GPU pod to run on the warm node")
    took = time.monotonic() - submitted
    assert pod["spec"]["nodeName"] == warm_name, "the pod ran on a node bought for it, not on the warm node"
    print(f"{run.stack}: GPU pod running on the warm node {took:.1f}s after submission")

    # The replacement warm node follows.
    wait_for(
        lambda: len(pool_nodes(run, pool.name)) == 2 or None, timeout=WARM_TIMEOUT, interval=1, what="the replacement warm node"
    )
    [replacement] = [n["metadata"]["name"] for n in pool_nodes(run, pool.name) if n["metadata"]["name"] != warm_name]
    assert workload_pods_on(run, replacement) == []

    # The close edge: the buffer goes to 0; with the job gone, the pool returns to zero.
    sim_warm.scale(run.client, run.objects, pool.name, "close")
    live = run.client.get(buffer)
    assert live["spec"]["replicas"] == 0
    run.client.delete(job)
    wait_for(lambda: run.client.get(job) is None, timeout=60, what="the GPU pod to go")
    if autoscaler.uses_cluster_autoscaler(run.objects):
        autoscaler.stop(run.state)
        ca = autoscaler_build.cached() or autoscaler_build.build()
        autoscaler.start(run.state, ca.binary, run.objects, controllers.autoscaler_plan(sim_build, run.objects))
    wait_for(lambda: not pool_nodes(run, pool.name) or None, timeout=300, interval=2, what=f"pool {pool.name} back to zero")
    assert not run.client.list("v1", "Pod", namespace=WORKLOADS)
