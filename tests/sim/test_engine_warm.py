"""A scheduled warm buffer (``gpuPools[].warm``, issue 41) through the real Pulumi engine, create to destroy.

The program creates a scheduled buffer at 0 and leaves its count to the schedule's CronJobs
(``ignoreChanges: ["spec.replicas"]``, ``gpupools.kubernetes.warm``), so that the next ``pulumi up``
inside the schedule's hours does not take the warm nodes away. Unit tests see the option on the
registration; this runs it through the pinned ``pulumi`` CLI and pulumi-kubernetes provider
(``gpupools.sim.engine``) on the session's control plane, for both buffer kinds:

* ``aws-dev`` (EKS, cluster-autoscaler 1.35+): a ``CapacityBuffer`` (a custom resource, whose
  ``spec`` is one input object: the ignored path is inside it);
* ``azure-dev`` (AKS, managed cluster-autoscaler): the placeholder ``Deployment``, scaled through its
  ``scale`` subresource as ``kubectl patch --subresource=scale`` does.

Per stack: ``deploy`` creates the buffer at 0; the open edge's patch (``gpupools.sim.warm.scale``, the
merge patch the CronJob's command holds; KWOK runs no container) sets the count; a second ``deploy``
with one more taint on the pool (the buffer's pods now tolerate it: an update of the placeholder
Deployment, of the CapacityBuffer's PodTemplate) leaves that count, because pulumi-kubernetes drops
an ignored field that another field manager owns from its server-side apply
(``handleSSAIgnoreFields``, ``provider/pkg/await/await.go`` at the pinned provider); ``destroy``
removes the buffer, its CronJobs and its namespace.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

import pytest
from gpupools import warm
from gpupools.conventions import POOL_LABEL
from gpupools.sim import engine, engine_build, layout
from gpupools.sim import warm as sim_warm
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import wait_for
from gpupools.testing import stack_config

from tests.sim.test_engine import Engine, _deployed

pytestmark = pytest.mark.sim

STACKS = ("aws-dev", "azure-dev")
SCHEDULE = {"days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"], "start": "08:00", "end": "18:00"}


TAINT = {"key": "team", "value": "vision", "effect": "NoSchedule"}
"""The taint the second deploy adds to the warm pool."""


def overrides(stack: str, *, tainted: bool = False) -> dict[str, Any]:
    """The stack with a scheduled warm node on its first GPU pool (and ``TAINT`` on it)."""
    pools = copy.deepcopy(stack_config(stack)["gpupools:gpuPools"])
    pools[0]["warm"] = {"nodes": 1, "schedule": SCHEDULE}
    if tainted:
        pools[0]["taints"] = [*pools[0].get("taints", []), TAINT]
    return {"gpupools:gpuPools": pools}


def pod_spec(e: Engine, pool: str) -> dict[str, Any]:
    """The live pod spec of the pool's buffer pods (the Deployment's template, or the PodTemplate's)."""
    for manifest in e.loaded.manifests:
        ours = manifest["metadata"].get("namespace") == warm.WARM_NAMESPACE
        if ours and manifest["kind"] in ("Deployment", "PodTemplate") and manifest["metadata"]["name"] == warm.object_name(pool):
            live = e.client.get(manifest)
            assert live is not None, f"{manifest['kind']} {warm.object_name(pool)} is not on the server"
            return dict(live["template"]["spec"] if manifest["kind"] == "PodTemplate" else live["spec"]["template"]["spec"])
    raise AssertionError(f"{e.stack} has no buffer pod template for {pool}")


@pytest.fixture(scope="module", params=STACKS)
def warm_by_engine(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    session_cluster: ClusterState,
    sim_build: Build,
    engine_bin: engine_build.EngineBuild,
) -> Iterator[Engine]:
    stack = request.param
    with pytest.MonkeyPatch.context() as env:
        env.setenv(layout.STATE_ENV, str(tmp_path_factory.mktemp(f"engine-warm-{stack}")))
        yield from _deployed(stack, session_cluster, sim_build, engine_bin, overrides(stack))


def test_a_scheduled_buffer_keeps_the_cronjobs_count_through_the_next_deploy_and_goes_on_destroy(
    warm_by_engine: Engine,
) -> None:
    e = warm_by_engine
    pool = e.loaded.spec.gpu_pools[0].name
    buffer = sim_warm.target(e.loaded, pool)
    expected_kind = "CapacityBuffer" if e.stack == "aws-dev" else "Deployment"
    assert buffer["kind"] == expected_kind, f"{e.stack}: the buffer is a {buffer['kind']}"

    created = engine.deploy(e.stack, e.kubeconfig, build=e.build, overrides=overrides(e.stack), echo=None)
    assert set(created.changes) == {"create"}, created.output
    assert e.client.get(buffer)["spec"]["replicas"] == 0, "a scheduled buffer is created at 0"

    opened = sim_warm.cron_job_patch(e.loaded, pool, "open")["spec"]["replicas"]
    assert opened == 1  # the stack's warm.nodes
    sim_warm.scale(e.client, e.loaded, pool, "open")
    assert e.client.get(buffer)["spec"]["replicas"] == opened

    toleration = {"key": TAINT["key"], "operator": "Equal", "value": TAINT["value"], "effect": TAINT["effect"]}
    assert toleration not in pod_spec(e, pool).get("tolerations", [])
    again = engine.deploy(e.stack, e.kubeconfig, build=e.build, overrides=overrides(e.stack, tainted=True), echo=None)
    assert again.changes.get("update"), again.output
    assert toleration in pod_spec(e, pool)["tolerations"], "the second deploy did not update the buffer's pods"
    assert e.client.get(buffer)["spec"]["replicas"] == opened, "the second deploy took the open edge's count away"

    destroyed = engine.destroy(e.stack, e.kubeconfig, build=e.build, echo=None)
    assert set(destroyed.changes) == {"delete"}, destroyed.output
    warm_objects = [m for m in e.loaded.manifests if m["metadata"].get("namespace") == warm.WARM_NAMESPACE]
    assert {m["kind"] for m in warm_objects} >= {expected_kind, "CronJob"}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": warm.WARM_NAMESPACE}}
    wait_for(
        lambda: all(e.client.get(m) is None for m in [*warm_objects, namespace]),
        timeout=90,
        interval=1.0,
        what=f"{e.stack}'s warm objects and namespace to be gone",
    )


ALWAYS_ON = "azure-dev"
"""The placeholder Deployment's stack (AKS's managed cluster-autoscaler)."""


def always_on(stack: str) -> dict[str, Any]:
    """The stack with an always-on warm node (no schedule: created at ``nodes``) on its first GPU pool."""
    pools = copy.deepcopy(stack_config(stack)["gpupools:gpuPools"])
    pools[0]["warm"] = {"nodes": 1}
    return {"gpupools:gpuPools": pools}


@pytest.fixture(scope="module")
def always_on_by_engine(
    tmp_path_factory: pytest.TempPathFactory,
    session_cluster: ClusterState,
    sim_build: Build,
    engine_bin: engine_build.EngineBuild,
) -> Iterator[Engine]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv(layout.STATE_ENV, str(tmp_path_factory.mktemp(f"engine-always-on-{ALWAYS_ON}")))
        yield from _deployed(ALWAYS_ON, session_cluster, sim_build, engine_bin, always_on(ALWAYS_ON))


def test_an_always_on_buffer_whose_pool_has_no_node_does_not_hold_the_up(always_on_by_engine: Engine) -> None:
    """Third AKS review, NM4: the placeholder Deployment is created at ``warm.nodes`` and its pods
    need a node of the pool; here the pool has none (as in a Spot shortage, without quota, at
    ``maxSize``). The ``up`` completes with the placeholder not Available: pulumi-kubernetes did not
    wait for it (``pulumi.com/skipAwait``). Without the annotation it waits 10 minutes for
    ``Available`` and fails the ``up`` (``provider/pkg/await/deployment.go``)."""
    e = always_on_by_engine
    pool = e.loaded.spec.gpu_pools[0].name
    # Every node of the pool on this worker's cluster: this module's and any an earlier module left.
    for node in e.client.list("v1", "Node", label_selector=f"{POOL_LABEL}={pool}"):
        e.client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node["metadata"]["name"]}})
    buffer = sim_warm.target(e.loaded, pool)
    assert buffer["kind"] == "Deployment" and buffer["metadata"]["annotations"] == warm.SKIP_AWAIT
    created = engine.deploy(e.stack, e.kubeconfig, build=e.build, overrides=always_on(e.stack), echo=None)
    assert set(created.changes) == {"create"}, created.output
    live = e.client.get(buffer) or {}
    assert live["spec"]["replicas"] == 1, "an always-on buffer is created at warm.nodes"
    assert not (live.get("status") or {}).get("availableReplicas"), "the placeholder found a node: nothing was tested"
    engine.destroy(e.stack, e.kubeconfig, build=e.build, echo=None)
