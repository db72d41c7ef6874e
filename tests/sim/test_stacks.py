"""Every example stack's Kubernetes half on the real control plane (the session's, ``conftest.py``).

Per stack, in this order: the CRDs the stack needs are installed, one KWOK node is added per node
group (every pool, every capacity type it buys, shaped as the cloud makes it), and every object
the stack program registers is applied (server-side, dry run first). Then:

* every object is on the server, custom resources included, and a broken one is refused;
* each DaemonSet (device plugin, DCGM exporter, MPS daemon, EFA plugin) runs on exactly the nodes it
  serves, as the real DaemonSet controller decides; what it "serves" comes from the stack's
  config (the pools' GPU driver, sharing and EFA settings), not from the DaemonSet's own selectors;
* a GPU Job built by ``gpupools.jobs.gpu_job`` (and a gang job from ``gang_job``) is scheduled by
  the real scheduler onto its pool; pods without tolerations never land on a GPU node;
* adding a pool to the config changes no existing DaemonSet (its generation and its pods stay);
* deleting the objects completes (namespaces terminate, nothing is stuck on a finalizer).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest
from gpupools.conventions import ROLE_LABEL, CapacityType
from gpupools.jobs import gpu_job
from gpupools.queueing.workloads import gang_job
from gpupools.sim import cluster, node_shapes, objects
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import Client, KubeError, wait_for
from gpupools.specs import PoolSpec, Provisioner, SharingMode
from gpupools.testing import PROJECT_ROOT, stack_config

from tests.examples import EXAMPLE_STACKS

pytestmark = pytest.mark.sim

STACKS = list(EXAMPLE_STACKS)
WORKLOADS = "sim-workloads"
DEVICE_PLUGIN = "nvidia-device-plugin"
IMAGE = "registry.invalid/cuda:sim"
"""Never pulled: KWOK runs no container."""


@dataclass
class Deployed:
    stack: str
    objects: objects.StackObjects
    groups: list[node_shapes.NodeGroup]
    state: ClusterState
    client: Client
    nodes: dict[str, str] = field(default_factory=dict)
    """node name -> pool"""
    extra: list[dict[str, Any]] = field(default_factory=list)
    """objects applied by tests (deleted with the stack's)"""


@pytest.fixture(scope="module", params=STACKS)
def deployed(request: pytest.FixtureRequest, session_cluster: ClusterState, sim_build: Build) -> Iterator[Deployed]:
    stack = request.param
    stack_objects = objects.load(stack)
    client = session_cluster.client()
    objects.install_crds(client, objects.crds_for(stack_objects, sim_build.crds))
    groups = cluster.groups_for(stack_objects)
    deployed = Deployed(stack, stack_objects, groups, session_cluster, client)
    for group in groups:
        for name in cluster.add_nodes(session_cluster, [group], 1):
            deployed.nodes[name] = group.pool
    objects.apply(client, stack_objects.manifests)
    cluster.wait_settled(client)
    yield deployed
    # Whatever a failed test left behind, so the next stack starts from an empty cluster.
    for manifest in [*deployed.extra, *stack_objects.manifests]:
        with contextlib.suppress(KubeError):
            client.delete(manifest)
    client.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}})
    for name in deployed.nodes:
        client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def pool_spec(deployed: Deployed, name: str) -> PoolSpec:
    return next(p for p in deployed.objects.spec.pools if p.name == name)


def served_pools(deployed: Deployed, daemonset: str) -> set[str]:
    """The pools a DaemonSet of the stack must run on, from the stack's config alone."""
    pools = deployed.objects.spec.pools
    if daemonset == "nvidia-device-plugin":
        return {p.name for p in pools if p.needs_device_plugin}
    if daemonset.startswith("dcgm-exporter-"):
        pool = daemonset.removeprefix("dcgm-exporter-")
        return {pool} if pool_spec(deployed, pool).needs_device_plugin else set()
    if daemonset == "aws-efa-k8s-device-plugin":
        return {p.name for p in pools if p.efa}
    if "mps" in daemonset:
        return {p.name for p in pools if p.sharing.mode is SharingMode.MPS and p.needs_device_plugin}
    raise AssertionError(f"no rule in this test for DaemonSet {daemonset}: say which pools it serves")


def pods_of(client: Client, namespace: str, owner_kind: str, owner: str) -> list[dict[str, Any]]:
    return [
        pod
        for pod in client.list("v1", "Pod", namespace)
        if any(ref.get("kind") == owner_kind and ref.get("name") == owner for ref in pod["metadata"].get("ownerReferences") or [])
    ]


def daemonset_pods_once_placed(
    client: Client, namespace: str, name: str, nodes: set[str], timeout: float = 60
) -> list[dict[str, Any]]:
    """The DaemonSet's pods once they are Running on exactly ``nodes``, or as they are after ``timeout``.

    The controller acts on node events; on a loaded machine a node it counted out for a moment (the node
    lifecycle controller's start-up taint, ``cluster.STARTUP_TAINTS``) gets its pod a little later. What
    it last placed is what the caller asserts."""
    seen: list[list[dict[str, Any]]] = []

    def placed() -> bool:
        seen.append(pods_of(client, namespace, "DaemonSet", name))
        pods = seen[-1]
        return {p["spec"].get("nodeName") for p in pods} == nodes and all(p["status"].get("phase") == "Running" for p in pods)

    with contextlib.suppress(TimeoutError):
        wait_for(placed, timeout=timeout, what=f"{name}'s pods")
    return seen[-1]


def ensure_namespace(deployed: Deployed) -> None:
    deployed.client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}})


def scheduled_nodes(client: Client, namespace: str, job: str, pods: int) -> list[str]:
    """The nodes of the Job's pods once it has ``pods`` of them, all bound (the Job controller creates
    them in slow-start batches, so fewer may exist for a moment); else []."""
    found = pods_of(client, namespace, "Job", job)
    if len(found) < pods or not all(p["spec"].get("nodeName") for p in found):
        return []
    return [p["spec"]["nodeName"] for p in found]


def test_every_object_is_accepted_by_the_api_server(deployed: Deployed) -> None:
    missing = [objects.describe(m) for m in deployed.objects.manifests if deployed.client.get(m) is None]
    assert missing == []
    custom = [
        m
        for m in deployed.objects.manifests
        if "." in str(m["apiVersion"]).partition("/")[0] and not str(m["apiVersion"]).endswith(".k8s.io/v1")
    ]
    kinds = {m["kind"] for m in custom}
    if deployed.objects.spec.provisioner.value == "karpenter":
        assert "NodePool" in kinds
    if deployed.objects.spec.queueing.enabled:
        assert {"ClusterQueue", "LocalQueue", "ResourceFlavor"} <= kinds


def test_a_broken_object_is_refused_by_the_dry_run(deployed: Deployed) -> None:
    daemonset = next((m for m in deployed.objects.manifests if m["kind"] == "DaemonSet"), None)
    if daemonset is None:  # EKS Auto Mode: no DaemonSet of gpupools'; a NodePool outside its CRD's weight range
        nodepool = next(m for m in deployed.objects.manifests if m["kind"] == "NodePool")
        broken_pool = {**nodepool, "metadata": {"name": "broken-np"}, "spec": {**nodepool["spec"], "weight": 1000}}
        with pytest.raises(objects.ApplyError, match="broken-np"):
            objects.apply(deployed.client, [broken_pool])
        assert deployed.client.get(broken_pool) is None
        return
    broken = {**daemonset, "metadata": {**daemonset["metadata"], "name": "broken-ds"}}
    spec = dict(broken["spec"])
    template = {
        **spec["template"],
        "spec": {**spec["template"]["spec"], "tolerations": [{"key": "x", "operator": "Equals", "value": "y"}]},
    }
    broken["spec"] = {**spec, "template": template}
    with pytest.raises(objects.ApplyError, match="broken-ds"):
        objects.apply(deployed.client, [broken])
    assert deployed.client.get(broken) is None


def test_each_daemonset_runs_on_exactly_the_nodes_it_serves(deployed: Deployed) -> None:
    daemonsets = [m for m in deployed.objects.manifests if m["kind"] == "DaemonSet"]
    spec = deployed.objects.spec
    if spec.provisioner is Provisioner.AUTO_MODE or spec.cluster.automatic:
        # EKS Auto Mode runs the device plugin itself; AKS Automatic's managed GPU pools run AKS's plugin
        # and exporter (gpupools.azure.automatic): gpupools deploys no DaemonSet on either.
        assert not daemonsets, f"{deployed.stack}: the cloud runs the GPU stack, gpupools deploys no DaemonSet there"
        return
    assert daemonsets
    for manifest in daemonsets:
        name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
        expected = {node for node, pool in deployed.nodes.items() if pool in served_pools(deployed, name)}
        pods = daemonset_pods_once_placed(deployed.client, namespace, name, expected)
        placed = {p["spec"].get("nodeName") for p in pods}
        assert placed == expected, f"{name}: runs on {sorted(map(str, placed))}, serves {sorted(expected)}"
        assert all(p["status"].get("phase") == "Running" for p in pods), name


def test_a_gpu_job_lands_on_its_pool(deployed: Deployed) -> None:
    ensure_namespace(deployed)
    cloud = deployed.objects.spec.cloud.value
    for pool in deployed.objects.spec.gpu_pools:
        job = gpu_job(f"sim-{pool.name}", IMAGE, cloud=cloud, pool=pool.name, extra_taints=pool.taints, namespace=WORKLOADS)
        deployed.extra.append(job)
        deployed.client.apply(job)
        nodes = wait_for(
            lambda job=job: scheduled_nodes(deployed.client, WORKLOADS, job["metadata"]["name"], 1),
            timeout=60,
            what=f"{job['metadata']['name']} scheduled",
        )
        assert [deployed.nodes.get(n) for n in nodes] == [pool.name]


def test_pods_without_tolerations_never_land_on_gpu_nodes(deployed: Deployed) -> None:
    ensure_namespace(deployed)
    roles = {
        n["metadata"]["name"]: n["metadata"]["labels"].get(ROLE_LABEL)
        for n in deployed.client.list("v1", "Node")
        if n["metadata"]["name"] in deployed.nodes
    }
    pods = []
    for index in range(12):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"cpu-{index}", "namespace": WORKLOADS},
            "spec": {"containers": [{"name": "c", "image": IMAGE, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]},
        }
        deployed.extra.append(pod)
        deployed.client.apply(pod)
        pods.append(pod)

    def all_scheduled() -> list[str]:
        placed = [(deployed.client.get(p) or {}).get("spec", {}).get("nodeName") for p in pods]
        return [str(n) for n in placed] if all(placed) else []

    placed = wait_for(all_scheduled, timeout=60, what="CPU pods scheduled")
    assert {roles.get(n) for n in placed} - {"system", "cpu"} == set(), placed


def test_a_gang_job_lands_on_its_pool(deployed: Deployed) -> None:
    spec = deployed.objects.spec
    if not spec.queueing.enabled:
        pytest.skip("gang jobs go through Kueue; this stack has no gpupools:queueing")
    pool = next(p for p in spec.gpu_pools if p.efa) if any(p.efa for p in spec.gpu_pools) else spec.gpu_pools[0]
    groups = node_shapes.groups_of(deployed.groups, pool.name, CapacityType.ON_DEMAND)
    for name in cluster.add_nodes(deployed.state, groups, 1):
        deployed.nodes[name] = pool.name
    gpus = next(g for g in deployed.groups if g.pool == pool.name).resources.gpus
    ensure_namespace(deployed)
    manifests = gang_job(
        "sim-gang",
        image=IMAGE,
        script=["train.py"],
        nodes=2,
        gpus_per_node=gpus,
        namespace=WORKLOADS,
        pool=pool.name,
        extra_taints=pool.taints,
    )
    for manifest in manifests:
        if manifest["kind"] == "Job":
            # gang_job submits the Job suspended; Kueue un-suspends it when it admits the whole
            # gang. Kueue does not run in this tier (issue 32 adds it), so the test admits it:
            # what is checked here is where the real scheduler puts the pods.
            assert manifest["spec"]["suspend"] is True
            manifest = {**manifest, "spec": {**manifest["spec"], "suspend": False}}
        deployed.extra.append(manifest)
        deployed.client.apply(manifest)
    nodes = wait_for(
        lambda: scheduled_nodes(deployed.client, WORKLOADS, "sim-gang", 2), timeout=60, what="the gang job's pods scheduled"
    )
    assert len(nodes) == 2 and len(set(nodes)) == 2
    assert {deployed.nodes.get(n) for n in nodes} == {pool.name}


def added_pool(deployed: Deployed) -> dict[str, Any]:
    """One more GPU pool, of the shape of the stack's first one."""
    first = deployed.objects.spec.gpu_pools[0]
    pool: dict[str, Any] = {"name": "extra", "instanceTypes": list(first.instance_types), "maxSize": first.max_size}
    if first.zones:
        pool["zones"] = list(first.zones)
    return pool


def test_adding_a_pool_changes_no_existing_daemonset(deployed: Deployed) -> None:
    client = deployed.client
    # Settled first: an earlier test's nodes (the gang job's) may still be getting their DaemonSet
    # pods, which would show as changed pods below (CI saw it on aws-training-dev's EFA pool).
    cluster.wait_settled(client)
    before = {}
    for manifest in (m for m in deployed.objects.manifests if m["kind"] == "DaemonSet"):
        live = client.get(manifest)
        assert live is not None
        pods = pods_of(client, manifest["metadata"]["namespace"], "DaemonSet", manifest["metadata"]["name"])
        before[manifest["metadata"]["name"]] = (live["metadata"]["generation"], sorted(p["metadata"]["uid"] for p in pods))
    config = stack_config(deployed.stack, PROJECT_ROOT)
    grown = objects.load(deployed.stack, overrides={"gpupools:gpuPools": [*config["gpupools:gpuPools"], added_pool(deployed)]})
    new = [m for m in grown.manifests if all(objects.describe(m) != objects.describe(o) for o in deployed.objects.manifests)]
    deployed.extra.extend(new)
    objects.apply(client, grown.manifests)
    cluster.wait_settled(client)
    changed = {}
    for name, (generation, pods) in before.items():
        manifest = next(m for m in deployed.objects.manifests if m["kind"] == "DaemonSet" and m["metadata"]["name"] == name)
        live = client.get(manifest) or {}
        now = pods_of(client, manifest["metadata"]["namespace"], "DaemonSet", name)
        if live["metadata"]["generation"] != generation or sorted(p["metadata"]["uid"] for p in now) != pods:
            changed[name] = f"generation {generation} -> {live['metadata']['generation']}"
    # Put the stack's own objects back, so the deletion test starts from the stack as configured.
    objects.apply(client, deployed.objects.manifests)
    if set(changed) == {DEVICE_PLUGIN}:
        # Known on the current code, and the only DaemonSet it may be: the device plugin selects
        # its nodes by a list of pool names, so a new pool rewrites its pod template and the real
        # DaemonSet controller replaces its pods on every GPU node. Issue 28 moves it to a label.
        pytest.xfail(f"{DEVICE_PLUGIN} selects pools by name (issue 28): {changed[DEVICE_PLUGIN]}")
    assert changed == {}


def test_deleting_the_objects_completes(deployed: Deployed) -> None:
    client = deployed.client
    everything = [*deployed.extra, *deployed.objects.manifests]
    if deployed.extra:
        client.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}})
    objects.delete(client, everything, timeout=180)
    assert wait_for(
        lambda: client.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}}) is None,
        timeout=120,
        what=f"namespace {WORKLOADS} gone",
    )
    namespaces = [m for m in deployed.objects.manifests if m["kind"] == "Namespace"]
    assert all(client.get(m) is None for m in namespaces)
