"""Issue 48, 4.: an AKS stack with Kueue and its defaults admits a gang job through AKS's managed
cluster-autoscaler in the sim. Its own module: a module-scoped stack fixture keeps its controllers
running until the module ends, and two stacks' autoscalers must not share the session's cluster."""

from __future__ import annotations

from typing import Iterator

import pytest
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.engine_cli import remove_never_ready_nodes

from tests.sim.test_autoscalers import Running, gpu_pools, running
from tests.sim.test_cluster_autoscaler import SHORT, admit_gang, remove_nodes_of

pytestmark = pytest.mark.sim

AKS_QUEUEING = {**SHORT, "gpupools:queueing": {"enabled": True, "namespaces": ["ml"]}}
"""azure-dev with Kueue and its defaults: under the managed cluster-autoscaler ``atomicScaleUp`` is on."""


@pytest.fixture(scope="module")
def kueue_aks_stack(session_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running("azure-dev", session_cluster, sim_build, AKS_QUEUEING) as run:
        yield run


def test_an_aks_stack_with_kueue_admits_a_gang_job_through_the_managed_autoscaler(kueue_aks_stack: Running) -> None:
    """Issue 48, 4.: AKS's managed autoscaler serves ProvisioningRequests (``autoscaler.AKS_PROVISIONING_REQUESTS``),
    so the default ``atomicScaleUp`` stands on AKS; the sim now runs the autoscaler that way. Before,
    the request never got a status and Kueue never admitted the job."""
    run = kueue_aks_stack
    assert run.objects.spec.queueing.atomic_scale_up is None  # the default, not set by the test
    assert any(r["kind"] == "AdmissionCheck" for r in run.objects.manifests)
    # azure-dev's pools as an operator scaling them to zero leaves them: an earlier module on this
    # worker's cluster (the Spot fallback) may have left a never-Ready Spot node and an on-demand
    # node of the pool, which take the groups' room for the gang (CI saw "Capacity is not found").
    remove_never_ready_nodes(run.client)
    for pool in gpu_pools(run):
        remove_nodes_of(run, pool.name)
    admit_gang(run, efa=False)
