"""Every example stack's Kubernetes half through the real Pulumi engine (``gpupools.sim.engine``).

The engine is the ``pulumi`` CLI and the pulumi-kubernetes provider built from the pinned Go modules
(``gpupools.sim.engine_build``), with a local file backend; the cluster is the session's control
plane (``conftest.py``). Per stack: the CRDs the stack needs and one KWOK node per node group (so the
provider's DaemonSet and Deployment awaits can finish), then, reading the engine's own summary and the
cluster:

* ``deploy`` creates every object the stack program registers (each on the server afterwards), and
  updates or deletes nothing;
* a second ``deploy`` reports every resource the same;
* ``preview --diff`` with one more GPU pool plans exactly the objects the config change adds (per
  Kubernetes type) and updates exactly the existing objects whose manifest changes, the priority
  expander's ConfigMap in place among them (the stacks' providers set ``enableConfigMapMutable``;
  without it pulumi-kubernetes replaces a changed ConfigMap: delete, then create), which the test
  works out from the two manifest sets, not from the engine;
* ``destroy`` deletes every resource and leaves none of the stack's objects in the cluster, except
  what the program marks ``retain_on_delete`` (Kueue's queue Namespaces after issue 28: they hold
  the teams' workloads); nothing stays Terminating or stuck on a finalizer.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
from gpupools.sim import cluster, control_plane, engine, engine_build, layout, objects, pki
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import Client, KubeError, wait_for
from gpupools.testing import PROJECT_ROOT, stack_config

from tests.examples import EXAMPLE_STACKS
from tests.sim.test_autoscalers import drop_finalizers

pytestmark = pytest.mark.sim

STACKS = list(EXAMPLE_STACKS)


@dataclass
class Engine:
    stack: str
    kubeconfig: Path
    client: Client
    build: engine_build.EngineBuild
    loaded: objects.StackObjects
    nodes: list[str]


def k8s_type(manifest: dict[str, Any]) -> str:
    """The Pulumi type token of a manifest (``kubernetes:apps/v1:DaemonSet``, ``kubernetes:core/v1:Namespace``)."""
    group, _, version = str(manifest["apiVersion"]).rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{manifest['kind']}"


@pytest.fixture(scope="module", params=STACKS)
def deployed_by_engine(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    session_cluster: ClusterState,
    sim_build: Build,
    engine_bin: engine_build.EngineBuild,
) -> Iterator[Engine]:
    stack = request.param
    with pytest.MonkeyPatch.context() as env:
        # The engine's state and output files go to a temporary directory, never a user's sim state.
        env.setenv(layout.STATE_ENV, str(tmp_path_factory.mktemp(f"engine-{stack}")))
        yield from _deployed(stack, session_cluster, sim_build, engine_bin)


def _deployed(
    stack: str,
    session_cluster: ClusterState,
    sim_build: Build,
    engine_bin: engine_build.EngineBuild,
    overrides: dict[str, Any] | None = None,
) -> Iterator[Engine]:
    loaded = objects.load(stack, overrides=overrides)
    client = session_cluster.client()
    objects.install_crds(client, objects.crds_for(loaded, sim_build.crds))
    # The engine creates every object: none of the stack's may be there yet. An earlier module's
    # leftovers may still carry the finalizers of a controller that no longer runs (Kueue's
    # kueue.x-k8s.io/resource-in-use): those are cleared, as an operator would, before the delete.
    leftovers = [m for m in loaded.manifests if client.get(m) is not None]
    for manifest in leftovers:
        drop_finalizers(client, manifest)
    objects.delete(client, leftovers)
    nodes = [name for group in cluster.groups_for(loaded) for name in cluster.add_nodes(session_cluster, [group], 1)]
    kubeconfig = control_plane.write_kubeconfig(
        session_cluster.path / f"engine-{stack}.kubeconfig",
        control_plane.kubeconfig(session_cluster.server, pki.Pki(session_cluster.path / "pki"), "admin", f"sim-{stack}"),
    )
    layout.cluster_dir(stack).mkdir(parents=True, exist_ok=True)
    yield Engine(stack, kubeconfig, client, engine_bin, loaded, nodes)
    # Whatever a failed test left, so the next stack starts from an empty cluster.
    for manifest in loaded.manifests:
        with contextlib.suppress(KubeError):
            client.delete(manifest)
    for name in nodes:
        client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def test_deploy_creates_every_object(deployed_by_engine: Engine) -> None:
    e = deployed_by_engine
    outcome = engine.deploy(e.stack, e.kubeconfig, build=e.build, echo=None)
    assert set(outcome.changes) == {"create"}, outcome.output
    # The engine's own summary names them: the Kubernetes objects plus the provider, components and stack.
    assert outcome.changes["create"] > len(e.loaded.manifests)
    assert f"{outcome.changes['create']} created" in outcome.output
    assert outcome.summary_file.read_text() == outcome.output
    missing = [objects.describe(m) for m in e.loaded.manifests if e.client.get(m) is None]
    assert missing == []
    managers = {
        objects.describe(m): {f.get("manager") for f in (e.client.get(m) or {})["metadata"].get("managedFields") or []}
        for m in e.loaded.manifests
    }
    # Server-side apply by the provider (its field manager is "pulumi-kubernetes-<random>"), not by the sim.
    assert all(any(str(name).startswith("pulumi-kubernetes") for name in names) for names in managers.values()), managers


def test_a_second_deploy_changes_nothing(deployed_by_engine: Engine) -> None:
    e = deployed_by_engine
    outcome = engine.deploy(e.stack, e.kubeconfig, build=e.build, echo=None)
    assert set(outcome.changes) == {"same"}, outcome.output
    assert outcome.changes["same"] > len(e.loaded.manifests)


def test_one_more_gpu_pool_previews_exactly_its_objects(deployed_by_engine: Engine) -> None:
    e = deployed_by_engine
    config = stack_config(e.stack, PROJECT_ROOT)
    first = e.loaded.spec.gpu_pools[0]
    pool: dict[str, Any] = {"name": "extra", "instanceTypes": list(first.instance_types), "maxSize": first.max_size}
    if first.zones:
        pool["zones"] = list(first.zones)
    overrides = {"gpupools:gpuPools": [*config["gpupools:gpuPools"], pool]}
    grown = objects.load(e.stack, overrides=overrides)
    old = {objects.describe(m): m for m in e.loaded.manifests}
    new = {objects.describe(m): m for m in grown.manifests}
    expected_creates = Counter(k8s_type(new[k]) for k in new.keys() - old.keys())
    changed = [k for k in new.keys() & old.keys() if new[k] != old[k]]
    # pulumi-kubernetes replaces a ConfigMap whose data changes unless the provider's
    # enableConfigMapMutable is set, which the stacks' providers do (and a Secret unless
    # enableSecretMutable, which they do not): forceNewProperties, provider/pkg/provider/diff.go, v4.25.0.
    replaced_kinds = ("Secret",)
    expected_updates = Counter(k8s_type(new[k]) for k in changed if new[k]["kind"] not in replaced_kinds)
    expected_replaces = Counter(k8s_type(new[k]) for k in changed if new[k]["kind"] in replaced_kinds)
    expected_deletes = Counter(k8s_type(old[k]) for k in old.keys() - new.keys())
    assert expected_creates, "one more GPU pool adds objects"

    outcome = engine.preview(e.stack, e.kubeconfig, build=e.build, overrides=overrides, echo=None)
    creates, updates, deletes, replaces = (
        Counter(t for t, op in outcome.steps if op == wanted and t.startswith("kubernetes:") and ":Provider" not in t)
        for wanted in ("create", "update", "delete", "replace")
    )
    assert creates == expected_creates, outcome.output
    assert updates == expected_updates, outcome.output
    assert deletes == expected_deletes, outcome.output
    assert replaces == expected_replaces, outcome.output
    if e.loaded.spec.provisioner.value == "cluster-autoscaler":
        # The priority expander gains the pool's tiers: an update in place, never a delete then create.
        assert updates["kubernetes:core/v1:ConfigMap"] >= 1, outcome.output
        assert replaces["kubernetes:core/v1:ConfigMap"] == 0, outcome.output
    # The preview changed nothing in the cluster.
    assert all(e.client.get(new[k]) is None for k in new.keys() - old.keys())


def test_destroy_removes_everything(deployed_by_engine: Engine) -> None:
    e = deployed_by_engine
    outcome = engine.destroy(e.stack, e.kubeconfig, build=e.build, echo=None)
    assert set(outcome.changes) == {"delete"}, outcome.output
    retained = {objects.describe(m) for m in e.loaded.manifests if m["kind"] == "Namespace" and _retained(e, m)}

    def left() -> list[str]:
        return [
            objects.describe(m) for m in e.loaded.manifests if e.client.get(m) is not None and objects.describe(m) not in retained
        ]

    wait_for(lambda: not left(), timeout=60, interval=1.0, what=f"the objects of {e.stack} to be gone")
    for name in retained:
        manifest = next(m for m in e.loaded.manifests if objects.describe(m) == name)
        live = e.client.get(manifest) or {}
        assert "deletionTimestamp" not in live["metadata"], f"{name} is retained, not left terminating"


def _retained(e: Engine, manifest: dict[str, Any]) -> bool:
    """Whether the stack program registers this object with ``retain_on_delete``."""
    name = manifest["metadata"]["name"]
    for registration in e.loaded.run.kubernetes_objects():
        metadata = registration.inputs.get("metadata") or {}
        if registration.type == "kubernetes:core/v1:Namespace" and metadata.get("name") == name:
            return bool(registration.options.get("retainOnDelete"))
    return False
