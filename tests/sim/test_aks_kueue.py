"""Issue 48, 4.: an AKS stack with Kueue and its defaults admits a gang job through AKS's managed
cluster-autoscaler in the sim. Its own module: a module-scoped stack fixture keeps its controllers
running until the module ends, and two stacks' autoscalers must not share the session's cluster."""

from __future__ import annotations

import os
from typing import Iterator

import pytest
from gpupools.sim import control_plane
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState

from tests.sim.test_autoscalers import Running, running
from tests.sim.test_cluster_autoscaler import SHORT, admit_gang

pytestmark = pytest.mark.sim

AKS_QUEUEING = {**SHORT, "gpupools:queueing": {"enabled": True, "namespaces": ["ml"]}}
"""azure-dev with Kueue and its defaults: under the managed cluster-autoscaler ``atomicScaleUp`` is on."""


@pytest.fixture(scope="module")
def own_cluster(sim_build: Build) -> Iterator[ClusterState]:
    """A control plane of this module's own: on the worker's shared one, what earlier modules leave
    (Kueue's cluster-scoped queues and flavours of another stack, nodes of the same pools) kept the
    request from being provisioned in CI's full tier, while the module alone passed."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    state = control_plane.start(f"pytest-aks-kueue-{worker}", sim_build)
    try:
        yield state
    finally:
        control_plane.stop(state)


@pytest.fixture(scope="module")
def kueue_aks_stack(own_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running("azure-dev", own_cluster, sim_build, AKS_QUEUEING) as run:
        yield run


def test_an_aks_stack_with_kueue_admits_a_gang_job_through_the_managed_autoscaler(kueue_aks_stack: Running) -> None:
    """Issue 48, 4.: AKS's managed autoscaler serves ProvisioningRequests (``autoscaler.AKS_PROVISIONING_REQUESTS``),
    so the default ``atomicScaleUp`` stands on AKS; the sim now runs the autoscaler that way. Before,
    the request never got a status and Kueue never admitted the job."""
    run = kueue_aks_stack
    assert run.objects.spec.queueing.atomic_scale_up is None  # the default, not set by the test
    assert any(r["kind"] == "AdmissionCheck" for r in run.objects.manifests)
    admit_gang(run, efa=False)
