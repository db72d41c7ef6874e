"""The stacks' own provisioner and Kueue, running, on the session's control plane (``conftest.py``).

Karpenter stacks (``aws-karpenter-dev``: EKS Karpenter; ``aws-auto-dev``: EKS Auto Mode; ``azure-nap-dev``: AKS Node Auto
Provisioning; ``azure-automatic-dev``: AKS Automatic, its NAP NodePools): the real Karpenter v1.14.1 with its KWOK provider runs against the stack's NodePools
(``gpupools.sim.karpenter``). What is asserted comes from the stack's config (pool names, sizes,
Spot/on-demand, sharing, the scale-down time), never from what Karpenter did:

* a GPU Job of each GPU pool, with no node of that pool, gets a node of that pool's NodePool, of
  one of the pool's sizes, bought as Spot, and its pod runs;
* with the pool's Spot unavailable (``spot --unavailable``), the next Job's node is on-demand;
* four one-slot pods of a time-sliced pool (4 slots per GPU) share NodeClaims: one claim takes more
  slot requests than its size has GPUs, so the stack's NodeOverlay is applied (the NodeOverlay feature gate as the stack's chart sets it);
* an emptied node is removed after the stack's ``consolidateAfter``: ``gpupools:autoscaler.scaleDownUnneededTime``,
  shortened from the stacks' 10m to its minimum, 1m, through the stack's own config (the only
  change, made for the whole module so the tier stays short).

Kueue (``aws-training-dev``): Kueue v0.19.2 with the stack's ResourceFlavors, ClusterQueue and
LocalQueue. A gang Job within the ClusterQueue's quota gets its quota reserved and Kueue creates the
ProvisioningRequest of the stack's admission check (class ``best-effort-atomic-scale-up``); one
beyond every flavor's quota is held, suspended. The last step, ``Admitted`` once cluster-autoscaler
has provisioned the request, is ``test_cluster_autoscaler.py``'s.
"""

from __future__ import annotations

import contextlib
import copy
import http.client
import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from gpupools.conventions import KARPENTER_CAPACITY_TYPE_LABEL, KARPENTER_NODEPOOL_LABEL, POOL_LABEL
from gpupools.jobs import gpu_job
from gpupools.queueing.workloads import gang_job
from gpupools.sharing import slots_per_gpu
from gpupools.sim import autoscaler, charts, cluster, controllers, karpenter, kueue, node_shapes, objects, processes, spot
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import Client, KubeError, wait_for
from gpupools.specs import PoolSpec, Role

from tests.sim import listeners

pytestmark = pytest.mark.sim

KARPENTER_STACKS = ("aws-karpenter-dev", "aws-auto-dev", "azure-nap-dev", "azure-automatic-dev")
KUEUE_STACK = "aws-training-dev"
SCALE_DOWN = "1m"
"""``gpupools:autoscaler.scaleDownUnneededTime`` for the Karpenter stacks here (their files say 10m;
1m is the config's minimum)."""
PODEVENTS_DEDUPE_SECONDS = 10  # karpenter pkg/controllers/nodeclaim/podevents: dedupeTimeout
IMAGE = "registry.invalid/cuda:sim"
WORKLOADS = "sim-autoscaling"
LAUNCH_TIMEOUT = 90.0
"""Seconds for Karpenter to launch a node and the pod to run (measured: 2-5 s; the batch window is 1-10 s)."""


@dataclass
class Running:
    stack: str
    objects: objects.StackObjects
    state: ClusterState
    build: Build
    client: Client
    manifests: list[dict[str, Any]] = field(default_factory=list)
    system_nodes: list[str] = field(default_factory=list)


def _queue_namespaces(stack_objects: objects.StackObjects) -> tuple[str, ...]:
    queueing = stack_objects.spec.queueing
    return tuple(queueing.namespaces) + tuple(n for team in queueing.teams for n in team.namespaces) if queueing.enabled else ()


def _workloads(client: Client, stack_objects: objects.StackObjects) -> list[dict[str, Any]]:
    if not kueue.uses_kueue(stack_objects):
        return []
    found = []
    for namespace in _queue_namespaces(stack_objects):
        with contextlib.suppress(KubeError):  # the Workload CRD is installed with the stack's CRDs
            found += client.list("kueue.x-k8s.io/v1beta2", "Workload", namespace=namespace)
    return found


def _delete_workloads(client: Client, stack_objects: objects.StackObjects) -> None:
    for namespace in _queue_namespaces(stack_objects):
        for job in client.list("batch/v1", "Job", namespace=namespace):
            client.delete(job, propagation="Background")
    for workload in _workloads(client, stack_objects):
        client.delete(workload)
    wait_for(lambda: not _workloads(client, stack_objects), timeout=60, what="the queue namespaces' Workloads to go")


def drop_finalizers(client: Client, manifest: dict[str, Any]) -> None:
    with contextlib.suppress(KubeError):
        client.request(
            "PATCH",
            client.object_path(manifest),
            {"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json",
        )


def clear_leftovers(client: Client, stack_objects: objects.StackObjects) -> list[str]:
    """What an earlier module on the session's cluster left of this stack: its objects still
    Terminating (their controller stopped before removing its finalizer, e.g. Kueue's
    ``kueue.x-k8s.io/resource-in-use`` on a ClusterQueue) and Workloads in its queue namespaces (an
    admitted one would count against this module's ClusterQueue of the same name). Each loses its
    finalizers and is deleted; returns their names. A fresh ``sim up`` has none: the session's
    shared cluster is the only place they can come from."""
    cleared = []
    for workload in _workloads(client, stack_objects):
        drop_finalizers(client, workload)
        client.delete(workload)
        cleared.append(objects.describe(workload))
    for manifest in stack_objects.manifests:
        live = client.get(manifest) if manifest["kind"] != "Namespace" else None
        if live and live["metadata"].get("deletionTimestamp"):
            drop_finalizers(client, manifest)
            cleared.append(objects.describe(manifest))
    wait_for(
        lambda: (
            not _workloads(client, stack_objects)
            and not any(
                (live := client.get(m)) and live["metadata"].get("deletionTimestamp")
                for m in stack_objects.manifests
                if m["kind"] != "Namespace"
            )
        ),
        timeout=60,
        what="an earlier module's leftovers to go",
    )
    return cleared


@contextlib.contextmanager
def running(
    stack: str, state: ClusterState, build: Build, overrides: dict[str, Any] | None = None, root: Path | None = None
) -> Iterator[Running]:
    """``stack``'s objects and controllers on the session cluster, as ``sim up`` starts them; removed after.
    ``root``: the project holding ``Pulumi.<stack>.yaml``; default this project."""
    stack_objects = objects.load(stack, root=root, overrides=overrides)
    client = state.client()
    objects.install_crds(client, objects.crds_for(stack_objects, build.crds))
    clear_leftovers(client, stack_objects)
    system = node_shapes.groups_of(cluster.groups_for(stack_objects), cluster.SYSTEM_POOL)
    names = cluster.add_nodes(state, system, 1, cluster.membership(stack_objects))
    manifests = controllers.prepare(client, build, stack_objects)
    objects.apply(client, manifests)
    client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}})
    run = Running(stack, stack_objects, state, build, client, manifests, names)
    try:
        controllers.start(state, build, stack_objects, lambda _: None)
        yield run
    finally:
        client.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}})
        # NodePools first, while Karpenter runs: it removes their NodeClaims and nodes (finalizers).
        # Only a stack with NodePools waits for that: another stack has no Karpenter to remove any.
        nodepools = karpenter.kwok_nodepools(manifests)
        for manifest in nodepools:
            with contextlib.suppress(KubeError):
                client.delete(manifest)
        if nodepools:
            with contextlib.suppress(TimeoutError, KubeError):
                wait_for(lambda: not client.list("karpenter.sh/v1", "NodeClaim"), timeout=120, what="NodeClaims to go")
        # The queue namespaces' Workloads go first, while Kueue runs: an admitted one left behind would
        # count against the next module's ClusterQueue of the same name when its Kueue starts.
        with contextlib.suppress(TimeoutError, KubeError):
            _delete_workloads(client, stack_objects)
        # The stack's objects go while the controllers still run: Kueue removes its finalizers
        # (kueue.x-k8s.io/resource-in-use) only while it runs, and an object left Terminating would
        # meet the next module's create of the same object.
        with contextlib.suppress(TimeoutError, KubeError):
            objects.delete(client, manifests)
        controllers.stop(state)
        # Nodes cluster-autoscaler bought (its KWOK provider names their group in an annotation).
        for node in client.list("v1", "Node"):
            if autoscaler.NG_NAME in (node["metadata"].get("annotations") or {}) and node["metadata"]["name"] not in names:
                with contextlib.suppress(KubeError):
                    client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node["metadata"]["name"]}})
        for manifest in reversed(manifests):
            with contextlib.suppress(KubeError):
                client.delete(manifest)
        for name in names:
            client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


@pytest.fixture(scope="module", params=KARPENTER_STACKS)
def karpenter_stack(request: pytest.FixtureRequest, session_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running(
        request.param, session_cluster, sim_build, {"gpupools:autoscaler": {"scaleDownUnneededTime": SCALE_DOWN}}
    ) as run:
        yield run


def pool_gang(
    name: str, pool: PoolSpec, namespace: str, *, nodes: int, gpus_per_node: int, efa_per_node: int = 0
) -> list[dict[str, Any]]:
    """``gang_job`` for ``pool`` (its name and extra taints) in ``namespace``: the sim's image and script."""
    return gang_job(
        name,
        image=IMAGE,
        script=["train.py"],
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        namespace=namespace,
        pool=pool.name,
        extra_taints=pool.taints,
        efa_per_node=efa_per_node,
    )


def gang_under_karpenter(run: Running, name: str) -> tuple[PoolSpec, list[dict[str, str]]]:
    """Submit a two-node gang Job of the first GPU pool through the stack's first queue namespace,
    wait until Kueue admitted its Workload (no admission check: Karpenter does not act on
    ProvisioningRequests) and both pods ran; returns the pool and the labels of every node the pods
    ran on (KWOK completes a Job pod at once, so the second rank may reuse the first's node). The
    Job is deleted after."""
    from gpupools.sim import kueue

    from tests.sim.test_cluster_autoscaler import gang_pods_running

    namespace = run.objects.spec.queueing.namespaces[0]
    pool = gpu_pools(run)[0]
    shape = node_shapes.resources_of(pool.instance_types[0])
    job = pool_gang(name, pool, namespace, nodes=2, gpus_per_node=shape.gpus)
    try:
        for manifest in job:
            run.client.apply(manifest)
        with explained(run, namespace):
            pods = gang_pods_running(run, namespace, name, LAUNCH_TIMEOUT * 2)
        workloads = run.client.list("kueue.x-k8s.io/v1beta2", "Workload", namespace=namespace)
        assert kueue.admitted(
            [w for w in workloads if any(o.get("name") == name for o in w["metadata"].get("ownerReferences") or [])]
        )
        nodes = {p["spec"]["nodeName"] for p in pods}
        return pool, [
            run.client.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})["metadata"]["labels"]
            for node in nodes
        ]
    finally:
        for manifest in job:
            with contextlib.suppress(KubeError):
                run.client.delete(manifest, propagation="Foreground")


def gpu_pools(run: Running) -> list[PoolSpec]:
    return [p for p in run.objects.spec.pools if p.role is Role.GPU]


def nodepool_of(run: Running, pool: str) -> dict[str, Any]:
    for nodepool in karpenter.nodepools(run.manifests):
        if nodepool["spec"]["template"]["metadata"]["labels"].get(POOL_LABEL) == pool:
            return nodepool
    raise AssertionError(f"stack {run.stack} has no NodePool for pool {pool}")


def submit(run: Running, pool: PoolSpec, name: str, gpus: int = 1) -> dict[str, Any]:
    job = gpu_job(
        name,
        IMAGE,
        cloud=run.objects.spec.cloud,
        gpus=gpus,
        namespace=WORKLOADS,
        pool=pool.name,
        extra_taints=pool.taints,
        command=["sleep", "infinity"],
    )
    run.client.apply(job)
    return job


def pod_of(run: Running, job: str) -> dict[str, Any] | None:
    pods = run.client.list("v1", "Pod", namespace=WORKLOADS, label_selector=f"job-name={job}")
    return pods[0] if pods else None


def running_node(run: Running, job: str) -> dict[str, Any]:
    """The node of ``job``'s pod once the pod has run (the real scheduler bound it; KWOK ran it, and
    completes Job pods at once: KWOK's ``pod-complete`` stage)."""

    def ready() -> dict[str, Any] | None:
        pod = pod_of(run, job)
        if pod and (pod.get("status") or {}).get("phase") in ("Running", "Succeeded"):
            return run.client.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": pod["spec"]["nodeName"]}})
        return None

    node: dict[str, Any] = wait_for(ready, timeout=LAUNCH_TIMEOUT, what=f"job {job}'s pod to run on a node Karpenter made")
    return node


def delete_job(run: Running, job: dict[str, Any]) -> None:
    run.client.delete(job, propagation="Foreground")
    wait_for(lambda: pod_of(run, job["metadata"]["name"]) is None, timeout=60, what="the job's pods to go")


def test_gpu_pod_gets_a_spot_node_of_its_pool_from_zero(karpenter_stack: Running) -> None:
    run = karpenter_stack
    for pool in gpu_pools(run):
        assert pool.spot, f"{run.stack} pool {pool.name}: the example stacks' GPU pools buy Spot first"
        job = submit(run, pool, f"zero-{pool.name}")
        node = running_node(run, f"zero-{pool.name}")
        labels = node["metadata"]["labels"]
        assert labels[KARPENTER_NODEPOOL_LABEL] == nodepool_of(run, pool.name)["metadata"]["name"]
        assert labels[POOL_LABEL] == pool.name
        assert labels["node.kubernetes.io/instance-type"] in pool.instance_types
        assert labels[KARPENTER_CAPACITY_TYPE_LABEL] == "spot"
        delete_job(run, job)


def test_spot_unavailable_the_on_demand_fallback_serves(karpenter_stack: Running) -> None:
    run = karpenter_stack
    pool = gpu_pools(run)[0]
    assert pool.on_demand_fallback
    # A node of the pool left by an earlier test would take the pod (as it would in the cloud):
    # remove them as an operator would (`kubectl delete nodeclaim`), not waiting out consolidateAfter.
    empty_pool(run, nodepool_of(run, pool.name)["metadata"]["name"])
    try:
        assert spot.set_spot(run.state, run.build, run.objects, pool.name, available=False) == [pool.name]
        job = submit(run, pool, f"fallback-{pool.name}")
        labels = running_node(run, f"fallback-{pool.name}")["metadata"]["labels"]
        assert labels[POOL_LABEL] == pool.name
        assert labels[KARPENTER_CAPACITY_TYPE_LABEL] == "on-demand"
        delete_job(run, job)
    finally:
        spot.set_spot(run.state, run.build, run.objects, pool.name, available=True)


def nodeclaims_of(run: Running, nodepool: str) -> list[dict[str, Any]]:
    return run.client.list("karpenter.sh/v1", "NodeClaim", label_selector=f"{KARPENTER_NODEPOOL_LABEL}={nodepool}")


def empty_pool(run: Running, nodepool: str) -> None:
    """Delete the NodePool's NodeClaims (Karpenter drains and removes their nodes) and wait until they are gone."""
    for claim in nodeclaims_of(run, nodepool):
        run.client.delete(claim)
    wait_for(lambda: not nodeclaims_of(run, nodepool), timeout=120, interval=1, what=f"NodePool {nodepool}'s NodeClaims to go")


def test_a_shared_pool_packs_its_slots_per_node(karpenter_stack: Running) -> None:
    run = karpenter_stack
    shared = [p for p in gpu_pools(run) if slots_per_gpu(p.sharing) > 1]
    if not shared:
        pytest.skip(f"{run.stack} has no time-sliced or MPS pool")
    pool = shared[0]
    nodepool = nodepool_of(run, pool.name)["metadata"]["name"]
    empty_pool(run, nodepool)
    slots = slots_per_gpu(pool.sharing)
    gpus = min(node_shapes.resources_of(size).gpus for size in pool.instance_types)
    jobs = [submit(run, pool, f"slot-{pool.name}-{i}") for i in range(slots * gpus)]
    claims = wait_for(lambda: nodeclaims_of(run, nodepool), timeout=LAUNCH_TIMEOUT, what="a NodeClaim for the slot pods")
    time.sleep(15)  # more than Karpenter's batch window (10 s at most): a second claim would exist by now
    claims = nodeclaims_of(run, nodepool)
    # Without the overlay a NodeClaim of these sizes holds at most `gpus` GPU requests, so each pod
    # would need its own node. (The Job controller creates the pods over a few seconds, so they may
    # fall into more than one of Karpenter's batches: the count of claims is not asserted exactly.)
    packed = max(int(c["spec"]["resources"]["requests"].get("nvidia.com/gpu", "0")) for c in claims)
    assert packed > gpus, f"no NodeClaim of pool {pool.name} took more than {gpus} slot requests: the NodeOverlay is not applied"
    assert len(claims) < len(jobs), f"{len(jobs)} one-slot pods of pool {pool.name} took {len(claims)} nodes"
    for job in jobs:
        run.client.delete(job, propagation="Foreground")


def test_an_idle_node_is_removed_after_the_stacks_scale_down_time(karpenter_stack: Running) -> None:
    run = karpenter_stack
    pool = gpu_pools(run)[-1]
    nodepool = nodepool_of(run, pool.name)
    assert nodepool["spec"]["disruption"]["consolidateAfter"] == SCALE_DOWN
    job = submit(run, pool, f"idle-{pool.name}")
    node = running_node(run, f"idle-{pool.name}")["metadata"]["name"]
    # consolidateAfter runs from the NodeClaim's status.lastPodEventTime: the pod's bind, or its
    # deletion timestamp, but a pod event less than 10 s after the last one is not written
    # (karpenter v1.14.1 pkg/controllers/nodeclaim/podevents/controller.go, dedupeTimeout). So the
    # clock may have started at the bind, up to 10 s before the delete: the earliest removal allowed
    # is consolidateAfter - 10 s after the delete call.
    emptied = time.monotonic()
    delete_job(run, job)

    def gone() -> bool:
        return run.client.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}) is None

    wait_for(gone, timeout=180, interval=2, what=f"node {node} to be removed after consolidateAfter {SCALE_DOWN}")
    waited = time.monotonic() - emptied
    assert waited >= 60 - PODEVENTS_DEDUPE_SECONDS, (
        f"node {node} was removed {waited:.0f}s after its pod was deleted, before consolidateAfter {SCALE_DOWN}"
    )


def whoami(state: ClusterState, kubeconfig: str) -> str:
    """The user the token of ``kubeconfig`` authenticates as (a SelfSubjectReview to the sim's API
    server: Karpenter's kubeconfig names the relay inside its network namespace, the token is the same)."""
    config = yaml.safe_load(Path(kubeconfig).read_text())
    token = config["users"][0]["user"]["token"]
    context = ssl.create_default_context(cafile=config["clusters"][0]["cluster"]["certificate-authority"])
    server = urllib.parse.urlsplit(state.server)
    connection = http.client.HTTPSConnection(server.hostname or "", server.port, context=context, timeout=10)
    body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body, headers)
    return str(json.loads(connection.getresponse().read())["status"]["userInfo"]["username"])


def test_karpenter_runs_as_its_charts_service_account(karpenter_stack: Running) -> None:
    """EKS: the chart's ServiceAccount (``serviceAccount.name`` of the stack's release); NAP and EKS Auto
    Mode: no chart (the cloud runs Karpenter), admin."""
    record = processes.records(karpenter_stack.state)[karpenter.NAME]
    releases = charts.releases(karpenter_stack.objects.run.registrations, karpenter.CHART)
    if not releases:
        assert (
            karpenter_stack.stack in ("azure-nap-dev", "azure-automatic-dev", "aws-auto-dev")
            and record.extra["identity"] == "admin"
        )
        return
    account = releases[0].inputs["values"]["serviceAccount"]["name"]
    assert record.extra["identity"] == f"ServiceAccount kube-system/{account}"
    assert whoami(karpenter_stack.state, record.env["KUBECONFIG"]) == f"system:serviceaccount:kube-system:{account}"


def test_without_a_rule_of_its_charts_clusterrole_karpenter_cannot_launch(karpenter_stack: Running) -> None:
    """The chart's RBAC is what Karpenter has: with ``create`` on NodeClaims cut from the chart's
    ``karpenter-core`` ClusterRole, a pending pod gets no NodeClaim and Karpenter's log shows the API
    server's refusal; the rule restored, the pod gets its node."""
    if not charts.releases(karpenter_stack.objects.run.registrations, karpenter.CHART):
        pytest.skip("NAP and EKS Auto Mode: no chart, Karpenter runs as admin")
    plan = karpenter.plan(karpenter_stack.objects, karpenter_stack.build)
    role = next(o for o in plan.objects if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-core"))
    cut = copy.deepcopy(role)
    for rule in cut["rules"]:
        if "nodeclaims" in rule["resources"] and "create" in rule["verbs"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != "create"]
    assert cut != role
    log = karpenter_stack.state.path / "logs" / f"{karpenter.NAME}.log"
    offset = log.stat().st_size
    pool = gpu_pools(karpenter_stack)[0]
    empty_pool(karpenter_stack, nodepool_of(karpenter_stack, pool.name)["metadata"]["name"])
    karpenter_stack.client.apply(cut)
    job = submit(karpenter_stack, pool, "rbac-cut")
    try:

        def refused() -> bool:
            text = log.read_bytes()[offset:].decode(errors="replace")
            return 'cannot create resource \\"nodeclaims\\"' in text or 'cannot create resource "nodeclaims"' in text

        wait_for(refused, timeout=LAUNCH_TIMEOUT, interval=1, what="Karpenter's NodeClaim create to be refused")
        assert not nodeclaims_of(karpenter_stack, nodepool_of(karpenter_stack, pool.name)["metadata"]["name"])
    finally:
        karpenter_stack.client.apply(role)
    running_node(karpenter_stack, job["metadata"]["name"])
    delete_job(karpenter_stack, job)


@pytest.fixture(scope="module")
def kueue_stack(session_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running(KUEUE_STACK, session_cluster, sim_build) as run:
        yield run


def _conditions(obj: dict[str, Any]) -> str:
    return "; ".join(
        f"{c.get('type')}={c.get('status')} ({c.get('reason')}: {c.get('message', '')[:160]})"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def kueue_state(run: Running, namespace: str) -> str:
    """What Kueue shows for the queue objects and ``namespace``'s Workloads and ProvisioningRequests,
    and the end of Kueue's log: the text a timeout in a Kueue test carries, so a failure in CI says
    which step Kueue did not take."""
    lines = []
    for api_version, kind, ns in (
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", None),
        ("kueue.x-k8s.io/v1beta2", "AdmissionCheck", None),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue", namespace),
        ("kueue.x-k8s.io/v1beta2", "Workload", namespace),
        ("autoscaling.x-k8s.io/v1", "ProvisioningRequest", namespace),
    ):
        try:
            found = run.client.list(api_version, kind, namespace=ns)
        except (OSError, KubeError) as error:
            lines.append(f"{kind}: cannot list ({error})")
            continue
        for obj in found:
            meta = obj["metadata"]
            deleting = " (deleting)" if meta.get("deletionTimestamp") else ""
            lines.append(f"{kind} {meta['name']}{deleting}: {_conditions(obj) or 'no conditions'}")
        if not found:
            lines.append(f"{kind}: none")
    log = processes.records(run.state).get(kueue.NAME)
    logs = run.state.path / "logs" / f"{kueue.NAME}.log"
    if log is not None and logs.exists():
        lines += ["end of Kueue's log:", *logs.read_text(errors="replace").splitlines()[-25:]]
    return "\n".join(lines)


@contextlib.contextmanager
def explained(run: Running, namespace: str) -> Iterator[None]:
    """Re-raise a TimeoutError with ``kueue_state``."""
    try:
        yield
    except TimeoutError as error:
        raise TimeoutError(f"{error}\n{kueue_state(run, namespace)}") from error


def workload_of(run: Running, namespace: str, job: str) -> dict[str, Any] | None:
    for workload in run.client.list("kueue.x-k8s.io/v1beta2", "Workload", namespace=namespace):
        if any(o.get("name") == job for o in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


def test_kueue_runs_as_its_charts_service_account_with_its_webhooks(kueue_stack: Running) -> None:
    record = processes.records(kueue_stack.state)[kueue.NAME]
    assert record.extra["identity"] == "ServiceAccount kueue-system/kueue-controller-manager"
    assert whoami(kueue_stack.state, record.env["KUBECONFIG"]) == "system:serviceaccount:kueue-system:kueue-controller-manager"
    # The chart's webhook configurations, scoped to the stack's queue namespaces as the chart scopes them.
    live = kueue_stack.client.get(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "kueue-mutating-webhook-configuration"},
        }
    )
    assert live is not None
    job = next(w for w in live["webhooks"] if w["name"] == "mjob.kb.io")
    assert job["namespaceSelector"]["matchExpressions"][0]["values"] == list(kueue_stack.objects.spec.queueing.namespaces)
    assert job["clientConfig"]["url"].startswith("https://127.0.0.1:")


def _reserved_and_requested(run: Running, namespace: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    reserved = wait_for(
        lambda: (w := workload_of(run, namespace, "within")) and kueue.quota_reserved([w]) and w,
        timeout=60,
        what="Kueue to reserve quota for the job within quota",
    )
    requests = wait_for(
        lambda: run.client.list("autoscaling.x-k8s.io/v1", "ProvisioningRequest", namespace=namespace),
        timeout=60,
        what="Kueue's admission check to create a ProvisioningRequest",
    )
    return reserved, requests


def test_kueue_reserves_quota_within_it_and_holds_a_job_beyond_it(kueue_stack: Running) -> None:
    run = kueue_stack
    queueing = run.objects.spec.queueing
    assert queueing.enabled
    namespace = queueing.namespaces[0]
    gpu_pool = gpu_pools(run)[0]
    per_node = node_shapes.resources_of(gpu_pool.instance_types[0]).gpus
    largest_flavor = max(p.max_size for p in gpu_pools(run)) * max(
        node_shapes.resources_of(s).gpus for p in gpu_pools(run) for s in p.instance_types
    )
    within = pool_gang("within", gpu_pool, namespace, nodes=2, gpus_per_node=per_node)
    beyond_nodes = largest_flavor // per_node + 1
    beyond = pool_gang("beyond", gpu_pool, namespace, nodes=beyond_nodes, gpus_per_node=per_node)
    try:
        for manifest in [*within, *beyond]:
            run.client.apply(manifest)
        with explained(run, namespace):
            reserved, requests = _reserved_and_requested(run, namespace)
        assert {r["spec"]["provisioningClassName"] for r in requests} == {"best-effort-atomic-scale-up.autoscaling.x-k8s.io"}
        assert reserved
        held = wait_for(lambda: workload_of(run, namespace, "beyond"), timeout=60, what="the Workload of the job beyond quota")
        time.sleep(5)
        held = workload_of(run, namespace, "beyond") or held
        assert not kueue.quota_reserved([held])
        job = run.client.get(next(m for m in beyond if m["kind"] == "Job"))
        assert job["spec"]["suspend"] is True
    finally:
        for manifest in [*within, *beyond]:
            with contextlib.suppress(KubeError):
                run.client.delete(manifest, propagation="Foreground")


def sim_processes(state: ClusterState) -> dict[str, list[int]]:
    """Every process the sim started, by component: the control plane's and each controller's
    process group (Karpenter's group holds its relay and the Karpenter binary)."""
    leaders = {**state.pids, **{name: c.pid for name, c in processes.records(state).items()}}
    return {name: listeners.process_group(pid) for name, pid in leaders.items()}


def assert_listens_on_loopback_only(state: ClusterState, expected: set[str]) -> None:
    """No process of the sim listens outside 127.0.0.0/8 and ::1 where anything but ``lo`` could reach
    it: in the host's network namespace every listener is on loopback; a process in a namespace of its
    own (Karpenter) has no interface there but ``lo``."""
    host = listeners.network_namespace("self")
    started = sim_processes(state)
    assert expected <= set(started), f"the sim runs {sorted(started)}, expected at least {sorted(expected)}"
    for name, pids in started.items():
        found = [listener for pid in pids for listener in listeners.listeners(pid)]
        if name == karpenter.RELAY:
            assert not found, f"Karpenter's host relay listens on a Unix socket only, found TCP {found}"
        else:
            assert found, f"{name} (PIDs {pids}) listens on no TCP port: the check would prove nothing"
        for pid in pids:
            if listeners.network_namespace(pid) != host:
                assert listeners.interfaces(pid) == ["lo"], f"{name} (PID {pid}) is in a namespace with other interfaces"
                continue
            outside = [f"{s.address}:{s.port}" for s in listeners.listeners(pid) if not s.address.is_loopback]
            assert not outside, f"{name} (PID {pid}) listens outside loopback in the host's namespace: {outside}"


def test_karpenter_stack_listens_on_loopback_only(karpenter_stack: Running) -> None:
    assert_listens_on_loopback_only(
        karpenter_stack.state,
        {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", karpenter.NAME, karpenter.RELAY},
    )
    # Karpenter itself binds ":<port>" (every interface; gpupools.sim.relay): only its own namespace may hold it.
    karpenter_pids = sim_processes(karpenter_stack.state)[karpenter.NAME]
    host = listeners.network_namespace("self")
    assert all(listeners.network_namespace(pid) != host for pid in karpenter_pids)


CLUSTER_AUTOSCALER_STACK = "aws-dev"


@pytest.fixture(scope="module")
def cluster_autoscaler_stack(session_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running(CLUSTER_AUTOSCALER_STACK, session_cluster, sim_build) as run:
        yield run


def test_cluster_autoscaler_stack_listens_on_loopback_only(cluster_autoscaler_stack: Running) -> None:
    """A cluster-autoscaler stack: the control plane, KWOK and cluster-autoscaler (``--address`` on 127.0.0.1)."""
    assert not karpenter.uses_karpenter(cluster_autoscaler_stack.objects)
    expected = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", autoscaler.NAME}
    assert_listens_on_loopback_only(cluster_autoscaler_stack.state, expected)
