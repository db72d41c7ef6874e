"""Issue 47, 5.: an AKS Automatic stack (``azure-automatic-dev``) on a control plane of its own whose
API server enforces the baseline Pod Security Standard in every namespace but ``kube-system``, as
Automatic does (``gpupools.sim.control_plane.POD_SECURITY_ADMISSION``: the upstream PodSecurity
admission plugin, not a model of it). The stack's NAP NodePools run under the real Karpenter with its
KWOK provider, standing in for the NAP AKS runs, with no System agent pool: gpupools' system NodePool
is one of them.

Checked here: the enforcement is real (a pod with a ``hostPath`` volume, what gpupools' device plugin
needs, is refused by the API server; the same pod without it is not), and under it a gang job through
the stack's Kueue queue is admitted and both pods run on Spot nodes of the GPU pool. Spot from zero,
the on-demand fallback and idle removal on this stack are the Karpenter module's
(``test_autoscalers.KARPENTER_STACKS``); a warm pool keeping its node is ``test_warm``'s.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

import pytest
from gpupools.conventions import KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL
from gpupools.sim import control_plane
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import KubeError

from tests.sim.test_autoscalers import IMAGE, WORKLOADS, Running, gang_under_karpenter, running

pytestmark = pytest.mark.sim

STACK = "azure-automatic-dev"
OVERRIDES = {"gpupools:autoscaler": {"scaleDownUnneededTime": "1m"}}


@pytest.fixture(scope="module")
def automatic_stack(sim_build: Build) -> Iterator[Running]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    state: ClusterState = control_plane.start(f"pytest-automatic-{worker}", sim_build, baseline_pod_security=True)
    try:
        with running(STACK, state, sim_build, OVERRIDES) as run:
            yield run
    finally:
        control_plane.stop(state)


def pod(name: str, host_path: bool) -> dict[str, Any]:
    volumes = [{"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}] if host_path else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": WORKLOADS},
        "spec": {
            "containers": [
                {"name": "main", "image": IMAGE, "volumeMounts": [{"name": v["name"], "mountPath": "/p"} for v in volumes]}
            ],
            "volumes": volumes,
        },
    }


def test_the_api_server_refuses_what_the_baseline_standard_forbids(automatic_stack: Running) -> None:
    run = automatic_stack
    assert run.objects.spec.cluster.automatic
    with pytest.raises(KubeError) as refused:
        run.client.create(pod("host-path", host_path=True))
    assert "violates PodSecurity" in str(refused.value) and "hostPath" in str(refused.value)
    created = run.client.create(pod("no-host-path", host_path=False))
    try:
        assert created["metadata"]["name"] == "no-host-path"
    finally:
        run.client.delete(pod("no-host-path", host_path=False))


def test_the_stack_runs_no_daemonset(automatic_stack: Running) -> None:
    # AKS runs the device plugin and the DCGM exporter on managed GPU pools: gpupools deploys neither.
    assert [d["metadata"]["name"] for d in automatic_stack.client.list("apps/v1", "DaemonSet")] == []


def test_a_gang_job_through_kueue_gets_spot_nodes_of_its_pool_under_the_standard(automatic_stack: Running) -> None:
    pool, nodes = gang_under_karpenter(automatic_stack, "automatic-gang")
    assert nodes
    for labels in nodes:
        assert labels[POOL_LABEL] == pool.name
        assert labels[KARPENTER_CAPACITY_TYPE_LABEL] == "spot"
        assert labels["node.kubernetes.io/instance-type"] in pool.instance_types
