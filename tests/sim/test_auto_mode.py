"""Issue 47, 5.: an EKS Auto Mode stack (``aws-auto-dev``) with Kueue, on a control plane of its own:
the stack's NodePools run under the real Karpenter with its KWOK provider, standing in for the
controller AWS runs (``gpupools.sim.karpenter``: no Karpenter chart, Karpenter's default settings, the
NodeClass CRD from the pinned schema). A gang job through the stack's queue is admitted by Kueue
(no admission check: Karpenter does not act on ProvisioningRequests) and Karpenter buys Spot nodes of
the pool for both pods, labelled as Auto Mode labels its nodes.

Spot from zero, the on-demand fallback and the idle removal on this stack are the Karpenter module's
(``test_autoscalers.KARPENTER_STACKS``); a warm pool keeping its node is ``test_warm``'s.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest
from gpupools.conventions import KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL
from gpupools.sim import control_plane
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.specs import Provisioner

from tests.sim.test_autoscalers import Running, gang_under_karpenter, running

pytestmark = pytest.mark.sim

STACK = "aws-auto-dev"
QUEUED = {"gpupools:queueing": {"enabled": True, "namespaces": ["ml"]}, "gpupools:autoscaler": {"scaleDownUnneededTime": "1m"}}


@pytest.fixture(scope="module")
def auto_mode_stack(sim_build: Build) -> Iterator[Running]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    state: ClusterState = control_plane.start(f"pytest-auto-mode-{worker}", sim_build)
    try:
        with running(STACK, state, sim_build, QUEUED) as run:
            yield run
    finally:
        control_plane.stop(state)


def test_the_node_class_crd_is_served_and_holds_the_stacks_classes(auto_mode_stack: Running) -> None:
    run = auto_mode_stack
    assert run.objects.spec.provisioner is Provisioner.AUTO_MODE
    classes = run.client.list("eks.amazonaws.com/v1", "NodeClass")
    expected = ["gpupools-system", *(f"gpupools-{p.name}" for p in run.objects.spec.pools)]
    assert sorted(c["metadata"]["name"] for c in classes) == sorted(expected)


def test_a_gang_job_through_kueue_gets_spot_nodes_of_its_pool_from_zero(auto_mode_stack: Running) -> None:
    pool, nodes = gang_under_karpenter(auto_mode_stack, "auto-gang")
    assert nodes
    for labels in nodes:
        assert labels[POOL_LABEL] == pool.name
        assert labels[KARPENTER_CAPACITY_TYPE_LABEL] == "spot"
        assert labels["node.kubernetes.io/instance-type"] in pool.instance_types
        # Auto Mode's label spelling (EKS user guide create-node-pool: "different labels than Karpenter").
        assert labels["eks.amazonaws.com/compute-type"] == "auto"
        assert labels["eks.amazonaws.com/instance-gpu-manufacturer"] == "nvidia"
        assert not any(k.startswith("karpenter.k8s.aws/") for k in labels)
