"""The upgrade from 0.2.0 through the real engine, for the Kubernetes half of every stack 0.2.0 had
(issue 46; the cloud half and the checks on it: ``tests/test_upgrade_from_0_2.py``).

Per stack, on the session's control plane, with the ``pulumi`` CLI and pulumi-kubernetes built from
the pinned modules and a local file backend:

1. ``up`` of 0.2.0's Kubernetes half: ``tests.upgrade.replay`` registers what 0.2.0's own program
   registered (its code from git, its stack file), with the URNs that program's ``up`` made;
2. on the Karpenter stack, each 0.2 EC2NodeClass gets the finalizer karpenter-provider-aws's
   node class controller adds to every class (``karpenter.k8s.aws/termination``, v1.14.1
   ``pkg/controllers/nodeclass/controller.go``: ``controllerutil.AddFinalizer`` on reconcile; it is
   removed in ``finalize`` only when no NodeClaim uses the class). That controller is AWS-only and
   does not run in the sim, and nothing here removes the finalizer: as on EKS with a node of the
   class still running a ``do-not-disrupt`` job, a delete of the class would wait;
3. ``preview`` of this checkout's program without ``gpupools:upgrade.fromVersion``: on the Karpenter
   stack the engine plans the deletes of the old classes (review T3; not run: it would wait);
4. ``up`` of this checkout's program with the key (CHANGELOG "Upgrading from 0.2.0"): it completes,
   deletes no node class and leaves the old classes in place;
5. a second ``up`` changes nothing;
6. on the Karpenter stack, an ``up`` without the key forgets the old classes (``retainOnDelete`` in
   state) and they stay in the cluster, untouched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from gpupools.sim import cluster, control_plane, engine_build, objects, pki
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import Client

from tests.test_upgrade_from_0_2 import NODE_CLASSES, UPGRADE_STEP, VERSION
from tests.upgrade import recorded, replay
from tests.upgrade.recorded import Recorded

pytestmark = pytest.mark.sim

if not recorded.have_history():
    pytest.skip("no git history here: the released program is read from it", allow_module_level=True)
STACKS = recorded.released_stacks(VERSION)
KARPENTER_STACK = "aws-karpenter-dev"
CLASS_FINALIZER = "karpenter.k8s.aws/termination"


class Upgrade:
    """One stack's upgrade: its replay workspace (``replay.Workspace``) and the three recordings."""

    def __init__(self, stack: str, kubeconfig: Path, state: Path, build: engine_build.EngineBuild, client: Client) -> None:
        self.stack, self.client = stack, client
        self.released = recorded.record_release(VERSION, stack)
        config = recorded.released_config(VERSION, stack)
        self.upgraded = recorded.record_head(stack, {**config, **UPGRADE_STEP})
        self.without_step = recorded.record_head(stack, config)
        self.workspace = replay.Workspace(stack, kubeconfig, state, build)

    def up(self, resources: tuple[Recorded, ...]) -> tuple[dict[str, int], replay.Steps]:
        return self.workspace.up(resources)

    def preview(self, resources: tuple[Recorded, ...]) -> replay.Steps:
        return self.workspace.preview(resources)

    def state(self) -> dict[str, Any]:
        return self.workspace.state()


@pytest.fixture(scope="module", params=STACKS)
def upgrade(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    session_cluster: ClusterState,
    sim_build: Build,
    engine_bin: engine_build.EngineBuild,
) -> Iterator[Upgrade]:
    stack = request.param
    loaded = objects.load(stack, overrides={**recorded.released_config(VERSION, stack), **UPGRADE_STEP})
    client = session_cluster.client()
    objects.install_crds(client, objects.crds_for(loaded, sim_build.crds))
    kubeconfig = control_plane.write_kubeconfig(
        session_cluster.path / f"upgrade-{stack}.kubeconfig",
        control_plane.kubeconfig(session_cluster.server, pki.Pki(session_cluster.path / "pki"), "admin", f"upgrade-{stack}"),
    )
    run = Upgrade(stack, kubeconfig, tmp_path_factory.mktemp(f"upgrade-{stack}"), engine_bin, client)
    every = [replay.manifest_of(r) for r in replay.kubernetes_objects((*run.released, *run.upgraded))]
    replay.clear(client, every)
    nodes = [name for group in cluster.groups_for(loaded) for name in cluster.add_nodes(session_cluster, [group], 1)]
    yield run
    replay.clear(client, every)
    for name in nodes:
        client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def _old_classes(run: Upgrade) -> list[dict[str, Any]]:
    """0.2.0's EC2NodeClasses (the stacks' AKSNodeClasses keep their names: nothing to hold)."""
    return [replay.manifest_of(r) for r in run.released if r.type == EC2_NODE_CLASS]


def test_the_upgrade_runs_through_the_engine_in_one_up(upgrade: Upgrade) -> None:
    run = upgrade
    changes, _ = run.up(run.released)
    assert set(changes) == {"create"}, changes
    assert all(run.client.get(replay.manifest_of(r)) is not None for r in replay.kubernetes_objects(run.released))

    held = _old_classes(run)
    for manifest in held:
        run.client.request(
            "PATCH",
            run.client.object_path(manifest),
            {"metadata": {"finalizers": [CLASS_FINALIZER]}},
            content_type="application/merge-patch+json",
        )
    class_urns = {r.urn for r in run.released if r.type == EC2_NODE_CLASS}
    every_class = {r.urn for r in run.released if r.type in NODE_CLASSES}

    # Without the upgrade step the engine plans the old classes' deletes (T3).
    planned = {
        urn for urn, op in run.preview(run.without_step) if urn in class_urns and op in ("delete", "replace", "delete-replaced")
    }
    assert planned == class_urns, planned

    # With it: no node class is deleted or replaced, so nothing waits, and the up completes.
    steps = run.preview(run.upgraded)
    touching = [(urn, op) for urn, op in steps if op in ("delete", "replace", "delete-replaced") and urn in every_class]
    assert not touching, touching
    changes, steps = run.up(run.upgraded)
    assert not [urn for urn, op in steps if op in ("delete", "replace") and urn in every_class], steps
    for r in replay.kubernetes_objects(run.upgraded):
        live = run.client.get(replay.manifest_of(r))
        assert live is not None and "deletionTimestamp" not in live["metadata"], f"{r.type} {r.name}"
    for manifest in held:
        live = run.client.get(manifest) or {}
        assert live and "deletionTimestamp" not in live["metadata"], manifest

    # A second up changes nothing.
    changes, _ = run.up(run.upgraded)
    assert set(changes) == {"same"}, changes


def test_without_the_key_the_old_classes_are_forgotten_not_deleted(upgrade: Upgrade) -> None:
    run = upgrade
    if run.stack != KARPENTER_STACK:
        pytest.skip(f"{run.stack} keeps its node classes' names across the upgrade")
    held = _old_classes(run)
    assert len(held) == 3
    state = run.state()
    class_urns = {r.urn for r in run.released if r.type == EC2_NODE_CLASS}
    # Checked before the up: a class not retained would be deleted, and the delete would wait.
    assert all(state[urn].get("retainOnDelete") for urn in class_urns), {u: state[u].get("retainOnDelete") for u in class_urns}
    _, steps = run.up(run.without_step)
    assert {urn for urn, op in steps if op == "delete"} == class_urns, steps
    assert not class_urns & set(run.state()), "the old classes are still in the state"
    for manifest in held:
        live = run.client.get(manifest) or {}
        assert live and "deletionTimestamp" not in live["metadata"] and live["metadata"].get("finalizers") == [CLASS_FINALIZER], (
            manifest
        )
