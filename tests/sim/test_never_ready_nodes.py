"""Issue 48, 4.: ``sim deploy`` after ``sim spot --unavailable`` no longer times out on a DaemonSet pod
of a never-Ready node: the nodes of unavailable Spot groups are removed first
(``engine_cli.remove_never_ready_nodes``), taking their pods with them.

On the session's control plane: a node labelled ``sim.gpupools.io/unavailable`` (which KWOK leaves
NotReady) and a DaemonSet that tolerates everything, as the NVIDIA device plugin does. Its pod on the
node never runs; after an update of the DaemonSet the old one stays Terminating (no kubelet), and the
DaemonSet is not rolled out. Once the node is removed, the DaemonSet is rolled out by the real
DaemonSet controller, as the engine's await (kstatus) wants it."""

from __future__ import annotations

from typing import Any

import pytest
from gpupools.sim import engine_cli
from gpupools.sim.control_plane import KWOK_ANNOTATION, UNAVAILABLE_LABEL, ClusterState
from gpupools.sim.kube import wait_for

pytestmark = pytest.mark.sim

NAMESPACE = "default"
NODE = "sim-never-ready-0"
RESOURCES = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def daemonset(revision: str) -> dict[str, Any]:
    labels = {"app": "sim-tolerates-all"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "sim-tolerates-all", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {"revision": revision}},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"sim.gpupools.io/test": "never-ready"},
                    "containers": [{"name": "c", "image": "registry.invalid/pause:sim"}],
                },
            },
        },
    }


def rolled_out(state: dict[str, Any]) -> bool:
    """kstatus's rule for a DaemonSet (the API server leaves zero counts out)."""
    status = state.get("status") or {}
    if status.get("observedGeneration") != (state.get("metadata") or {}).get("generation"):
        return False
    desired = status.get("desiredNumberScheduled", 0)
    return status.get("updatedNumberScheduled", 0) == desired and status.get("numberAvailable", 0) == desired


def test_a_never_ready_node_is_removed_and_the_daemonset_rolls_out(session_cluster: ClusterState) -> None:
    client = session_cluster.client()
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
            "labels": {UNAVAILABLE_LABEL: "true", "sim.gpupools.io/test": "never-ready"},
        },
        # Registered with room for pods, as a cloud node's kubelet reports it (the scheduler binds by it).
        "status": {"capacity": RESOURCES, "allocatable": RESOURCES},
    }
    ds = daemonset("1")
    try:
        client.create(node)
        client.apply(ds)
        pod = wait_for(
            lambda: next((p for p in client.list("v1", "Pod", namespace=NAMESPACE) if p["spec"].get("nodeName") == NODE), None),
            timeout=60,
            what="the DaemonSet's pod on the never-Ready node",
        )
        client.apply(daemonset("2"))
        wait_for(
            lambda: (client.get(pod) or {}).get("metadata", {}).get("deletionTimestamp"), timeout=60, what="the old pod deleted"
        )
        assert not rolled_out(client.get(ds) or {}), "rolled out while the node is there: nothing was tested"
        assert client.get(pod) is not None, "the old pod went without a kubelet: nothing was tested"

        assert engine_cli.remove_never_ready_nodes(client) == [NODE]
        assert client.get(node) is None
        wait_for(lambda: client.get(pod) is None, timeout=30, what="the stuck pod gone")
        wait_for(lambda: rolled_out(client.get(ds) or {}), timeout=60, what="the DaemonSet rolled out")
    finally:
        client.delete(ds)
        client.delete(node)
