"""Third AKS review, B5': ``pulumi destroy`` of a NAP stack finishes, through the real engine.

The stack's Kubernetes half is replayed (``tests.upgrade.replay``: this checkout's registrations of
``azure-nap-dev`` with their URNs and options, the ``ManagedCluster`` as a component of its own URN)
and ``up``-ed on the session's control plane. Each AKSNodeClass then gets the finalizer
karpenter-provider-azure's node class controller keeps on a class while NodeClaims use it
(``karpenter.azure.com/termination``); nothing here removes it, as on AKS while a node of the pool
runs a ``do-not-disrupt`` pod and the NodePool has no ``terminationGracePeriod``: a delete of that
class would wait for ever (the provider's delete timeout, then a failed ``destroy``, then the next).

``destroy`` completes: the NodePools and AKSNodeClasses are registered ``deletedWith`` the
ManagedCluster, which the same ``destroy`` deletes, so the engine never calls their delete
(pulumi/pulumi ``pkg/resource/deploy/step_generator.go``: a resource whose ``deletedWith`` is being
deleted too gets no delete call). On AKS the cluster's delete takes the node resource group, NAP's
VMs included. The held classes are therefore still in the sim's cluster afterwards, untouched.
"""

from __future__ import annotations

from typing import Iterator

import pytest
from gpupools.sim import cluster, control_plane, engine_build, objects, pki
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import Client
from gpupools.testing import stack_config

from tests.upgrade import recorded, replay
from tests.upgrade.recorded import Recorded

pytestmark = pytest.mark.sim

STACK = "azure-nap-dev"
CLASS = "kubernetes:karpenter.azure.com/v1beta1:AKSNodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
CLASS_FINALIZER = "karpenter.azure.com/termination"


@pytest.fixture(scope="module")
def nap(
    tmp_path_factory: pytest.TempPathFactory,
    session_cluster: ClusterState,
    sim_build: Build,
    engine_bin: engine_build.EngineBuild,
) -> Iterator[tuple[replay.Workspace, Client, tuple[Recorded, ...]]]:
    loaded = objects.load(STACK)
    client = session_cluster.client()
    objects.install_crds(client, objects.crds_for(loaded, sim_build.crds))
    resources = recorded.record_head(STACK, stack_config(STACK))
    every = [replay.manifest_of(r) for r in replay.kubernetes_objects(resources)]
    replay.clear(client, every)
    nodes = [name for group in cluster.groups_for(loaded) for name in cluster.add_nodes(session_cluster, [group], 1)]
    kubeconfig = control_plane.write_kubeconfig(
        session_cluster.path / f"nap-destroy-{STACK}.kubeconfig",
        control_plane.kubeconfig(session_cluster.server, pki.Pki(session_cluster.path / "pki"), "admin", f"nap-destroy-{STACK}"),
    )
    yield replay.Workspace(STACK, kubeconfig, tmp_path_factory.mktemp("nap-destroy"), engine_bin), client, resources
    replay.clear(client, every)
    for name in nodes:
        client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def test_destroy_of_a_nap_stack_does_not_wait_on_its_node_pools(
    nap: tuple[replay.Workspace, Client, tuple[Recorded, ...]],
) -> None:
    workspace, client, resources = nap
    changes, _ = workspace.up(resources)
    assert set(changes) == {"create"}, changes
    held = [r for r in resources if r.type == CLASS]
    pools = [r for r in resources if r.type == NODE_POOL]
    assert held and pools
    cluster_urn = next(r.urn for r in resources if r.type == "azure-native:containerservice:ManagedCluster")
    assert {r.options.get("deletedWith") for r in (*held, *pools)} == {cluster_urn}
    for r in held:
        client.request(
            "PATCH",
            client.object_path(replay.manifest_of(r)),
            {"metadata": {"finalizers": [CLASS_FINALIZER]}},
            content_type="application/merge-patch+json",
        )

    changes, steps = workspace.destroy()
    assert set(changes) == {"delete"}, changes
    assert not workspace.state(), "the destroy left resources in the state"
    # The engine deleted the cluster and skipped the pools' deletes: the held classes are untouched.
    for r in held:
        live = client.get(replay.manifest_of(r)) or {}
        assert live and "deletionTimestamp" not in live["metadata"], r.name
    assert any(urn == cluster_urn and op == "delete" for urn, op in steps), steps
