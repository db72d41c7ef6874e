"""The queueing stacks' Kueue objects as Kueue itself takes them (issue 39), on the session's control
plane (``conftest.py``) with the stack's controllers running (``test_autoscalers.running``).

* ``aws-training-dev``: once Kueue has taken the stack's ClusterQueue (its finalizer
  ``kueue.x-k8s.io/resource-in-use`` is on: Kueue adds it with a full ``Update``, kubernetes-sigs/kueue
  v0.19.2 ``pkg/controller/core/clusterqueue_controller.go``), the object on the server has the
  quotas it was written with. That ``Update`` re-serializes every quantity with apimachinery's
  ``Quantity.String()``, so a non-canonical quota (``4194304Mi``) came back changed (``4Ti``) and
  every ``pulumi up`` after the first showed the ClusterQueue updated.
* ``azure-dev`` with ``gpupools:queueing`` on (its default ``atomicScaleUp`` under cluster-autoscaler):
  the ClusterQueue becomes ``Active``. Its ProvisioningRequest admission check needs the
  ProvisioningRequest API, which AKS's managed autoscaler installs and the stack does not; the sim
  installs it (``objects.managed_provisioning_request_crd``). Without it Kueue reports the check
  inactive and the ClusterQueue with it.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import wait_for

from tests.sim.test_autoscalers import KUEUE_STACK, running

pytestmark = pytest.mark.sim


def cluster_queues(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == "ClusterQueue"]


FINALIZER = "kueue.x-k8s.io/resource-in-use"


def test_kueue_returns_the_cluster_queue_as_the_stack_writes_it(session_cluster: ClusterState, sim_build: Build) -> None:
    with running(KUEUE_STACK, session_cluster, sim_build) as run:
        queues = cluster_queues(run.manifests)
        assert queues
        for queue in queues:

            def taken(queue: dict[str, Any] = queue) -> dict[str, Any] | None:
                live = run.client.get(queue) or {}
                return live if FINALIZER in (live.get("metadata") or {}).get("finalizers", []) else None

            # 180 s: once, on a loaded two-core machine right after test_autoscalers' Kueue module, Kueue
            # took longer than 60 s to start and reconcile; alone it takes a few seconds.
            live = wait_for(taken, timeout=180, what=f"Kueue to take ClusterQueue {queue['metadata']['name']}")
            assert live["spec"]["resourceGroups"] == queue["spec"]["resourceGroups"], queue["metadata"]["name"]


def _active(run_client: Any, name: str) -> bool:
    live = run_client.get({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}}) or {}
    return any(
        c.get("type") == "Active" and c.get("status") == "True" for c in (live.get("status") or {}).get("conditions") or []
    )


def test_an_aks_queueing_stacks_cluster_queue_is_active(session_cluster: ClusterState, sim_build: Build) -> None:
    overrides = {"gpupools:queueing": {"enabled": True, "namespaces": ["ml"]}}
    with running("azure-dev", session_cluster, sim_build, overrides) as run:
        checks = [m for m in run.manifests if m["kind"] == "AdmissionCheck"]
        assert [c["spec"]["controllerName"] for c in checks] == ["kueue.x-k8s.io/provisioning-request"]
        for queue in cluster_queues(run.manifests):
            name = queue["metadata"]["name"]
            wait_for(lambda name=name: _active(run.client, name), timeout=60, what=f"ClusterQueue {name} to be Active")
