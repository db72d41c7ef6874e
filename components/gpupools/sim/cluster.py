"""The sim's operations on one stack's cluster: ``up``, ``nodes``, ``status``, ``down``.

The command line (``gpupools.sim.cli``) and the control-plane tests both call these, so what the
tests observe is what a user runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gpupools.conventions import CAPACITY_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL, CapacityType, Role
from gpupools.sim import build as builds
from gpupools.sim import control_plane, controllers, node_shapes, objects, pki
from gpupools.sim.control_plane import ClusterState, SimError
from gpupools.sim.kube import Client, wait_for
from gpupools.specs import Provisioner

SYSTEM_POOL = "system"
READY_TIMEOUT = 120.0
"""Seconds for nodes to turn Ready and DaemonSets to settle after a change."""


def say(message: str) -> None:
    print(message, flush=True)


@dataclass
class UpResult:
    state: ClusterState
    kubeconfig: Path
    objects: objects.StackObjects
    crds: list[str] = field(default_factory=list)


def check_stack(stack: str, root: Path | None = None) -> None:
    """SimError (bad input) when ``stack`` has no ``Pulumi.<stack>.yaml``."""
    from gpupools.synth import committed_stacks, default_root

    root = root or default_root()
    stacks = committed_stacks(root)
    if stack not in stacks:
        raise BadInputError(f"unknown stack {stack!r}: no Pulumi.{stack}.yaml in {root} (stacks: {', '.join(stacks) or 'none'})")


class BadInputError(SimError):
    """The command's arguments name something that does not exist (exit status 2)."""


def groups_for(stack_objects: objects.StackObjects) -> list[node_shapes.NodeGroup]:
    return node_shapes.node_groups(stack_objects.run, stack_objects.spec, stack_objects.region)


def pick_groups(
    groups: Sequence[node_shapes.NodeGroup], stack: str, pool: str, capacity: CapacityType | None
) -> list[node_shapes.NodeGroup]:
    """The groups ``nodes`` adds to; BadInput naming the pools or capacity types that do exist."""
    pools = sorted({g.pool for g in groups})
    if pool not in pools:
        raise BadInputError(f"unknown pool {pool!r} in stack {stack} (pools: {', '.join(pools)})")
    chosen = node_shapes.groups_of(groups, pool, capacity)
    if not chosen:
        offered = sorted({g.capacity.value for g in groups if g.pool == pool})
        raise BadInputError(
            f"pool {pool} of stack {stack} buys no {capacity.value if capacity else ''} capacity (it buys: {', '.join(offered)})"
        )
    return chosen


def add_nodes(
    state: ClusterState,
    groups: Sequence[node_shapes.NodeGroup],
    count: int,
    adopt: Callable[[node_shapes.NodeGroup, dict[str, Any]], None] | None = None,
) -> list[str]:
    """Create ``count`` nodes over ``groups`` (round-robin) and wait until KWOK reports them Ready.
    ``adopt`` edits each node's manifest before it is created (cluster-autoscaler's group membership)."""
    client = state.client()
    created = []
    for group in node_shapes.round_robin(groups, count):
        key = f"{group.name}/{group.capacity.value}"
        index = state.nodes.get(key, 0)
        state.nodes[key] = index + 1
        manifest = node_shapes.node_manifest(group, index, control_plane.KWOK_ANNOTATION)
        if adopt is not None:
            adopt(group, manifest)
        client.create(manifest)
        created.append(manifest["metadata"]["name"])
    state.save()
    wait_for(
        lambda: all(_node_ready(client, name) for name in created),
        timeout=READY_TIMEOUT,
        what=f"nodes {', '.join(created)} to be Ready",
    )
    return created


STARTUP_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
"""The node lifecycle controller taints a node it has not yet seen Ready with ``not-ready:NoSchedule``
(TaintNodesByCondition) and lifts it on its next pass (``--node-monitor-period``, 5 s), so for a few
seconds a node can report ``Ready=True`` and still carry it. The DaemonSet controller adds no toleration
for the ``NoSchedule`` one (``AddOrUpdateDaemonPodTolerations`` in kubernetes pkg/controller/daemon/util
tolerates ``not-ready``/``unreachable`` only with ``NoExecute``), so a DaemonSet applied in that window
counts the node out and reports itself ready on the others."""


def _node_ready(client: Client, name: str) -> bool:
    """Ready=True and none of the lifecycle controller's start-up taints left."""
    node = client.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}) or {}
    conditions = (node.get("status") or {}).get("conditions") or []
    taints = (node.get("spec") or {}).get("taints") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) and not any(
        t.get("key") in STARTUP_TAINTS for t in taints
    )


def daemonsets_settled(client: Client) -> bool:
    """Every DaemonSet's controller has seen its latest spec and all its scheduled pods are ready."""
    for daemonset in client.list("apps/v1", "DaemonSet"):
        status = daemonset.get("status") or {}
        if status.get("observedGeneration", 0) < daemonset["metadata"].get("generation", 1):
            return False
        desired = status.get("desiredNumberScheduled", 0)
        if status.get("numberReady", 0) != desired or status.get("updatedNumberScheduled", 0) != desired:
            return False
    return True


def wait_settled(client: Client) -> None:
    wait_for(lambda: daemonsets_settled(client), timeout=READY_TIMEOUT, what="every DaemonSet to be ready on the nodes it serves")


def up(
    stack: str,
    *,
    kubeconfig: Path | None = None,
    api_port: int | None = None,
    build: builds.Build | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] = say,
) -> UpResult:
    """Start ``stack``'s sim cluster, install CRDs, add the system pool's nodes, apply the stack's
    objects, and wait until its DaemonSets are ready. Whatever was started is stopped on failure."""
    check_stack(stack)
    existing = control_plane.load_state(stack)
    if existing is not None and existing.pids and all(existing.alive().values()):
        raise SimError(
            f"the sim cluster of stack {stack} is already running (API server {existing.server}); `down {stack}` stops it"
        )
    progress(f"running the {stack} program (the same code as `pulumi up`, on the recording runtime)")
    stack_objects = objects.load(stack, overrides=overrides)
    build = build or builds.cached()
    if build is None:
        progress("no cached build of the pinned control plane: building it (scripts/build-sim)")
        build = builds.build()
    crds = objects.crds_for(stack_objects, build.crds)
    progress(
        f"starting etcd, kube-apiserver {build.kubernetes_version}, kube-controller-manager, kube-scheduler, kwok on 127.0.0.1"
    )
    automatic = stack_objects.spec.cluster.automatic
    state = control_plane.start(stack, build, api_port=api_port, baseline_pod_security=automatic)
    try:
        client = state.client()
        if crds:
            progress(f"installing {len(crds)} CRDs: {', '.join(sorted({c.family for c in crds}))}")
            objects.install_crds(client, crds)
        groups = groups_for(stack_objects)
        system = node_shapes.groups_of(groups, SYSTEM_POOL)
        # EKS Auto Mode and AKS Automatic: gpupools' system pool is a NodePool, which keeps no minimum;
        # Karpenter launches its nodes when a system pod is pending (gpupools.aws.auto_mode,
        # gpupools.azure.automatic), so none is added here.
        node_pool_system = stack_objects.spec.provisioner is Provisioner.AUTO_MODE or automatic
        count = 0 if node_pool_system else stack_objects.spec.system_pool.min_size
        names = add_nodes(state, system, count, membership(stack_objects))
        progress(
            "no node of the system pool: a NodePool, launched by Karpenter when a system pod is pending"
            if node_pool_system
            else f"{len(names)} nodes of the system pool: {', '.join(names)}"
        )
        if automatic:
            progress("the API server enforces the baseline Pod Security Standard outside kube-system, as AKS Automatic does")
        progress(f"applying {len(stack_objects.manifests)} objects (server-side apply, dry run first)")
        objects.apply(client, controllers.prepare(client, build, stack_objects))
        for line in stack_objects.skipped:
            progress(f"skipped {line}")
        wait_settled(client)
        controllers.start(state, build, stack_objects, progress)
        path = kubeconfig or (state.path / "kubeconfig")
        control_plane.write_kubeconfig(path, control_plane.kubeconfig(state.server, _pki(state), "admin", f"sim-{stack}"))
        state.kubeconfig = str(path)
        state.save()
    except BaseException:
        controllers.stop(state)
        control_plane.stop(state)
        raise
    return UpResult(state=state, kubeconfig=path, objects=stack_objects, crds=[c.name for c in crds])


def membership(stack_objects: objects.StackObjects) -> Callable[[node_shapes.NodeGroup, dict[str, Any]], None] | None:
    """Under cluster-autoscaler, what makes a node an instance of its group's scaling group (as a
    cloud's instance is a member of its scale set): ``gpupools.sim.autoscaler.adopt``; None for other
    provisioners."""
    from gpupools.sim import autoscaler

    if not autoscaler.uses_cluster_autoscaler(stack_objects):
        return None
    return autoscaler.adopt


def _pki(state: ClusterState) -> pki.Pki:
    return pki.Pki(state.path / "pki")


def nodes(stack: str, pool: str, count: int, capacity: CapacityType | None = None) -> list[str]:
    """Add ``count`` nodes of ``pool`` (its ``capacity`` groups) to ``stack``'s running sim cluster."""
    check_stack(stack)
    if count < 1:
        raise BadInputError(f"--count must be at least 1, got {count}")
    stack_objects = objects.load(stack)
    groups = groups_for(stack_objects)
    chosen = pick_groups(groups, stack, pool, capacity)
    state = control_plane.running_state(stack)
    created = add_nodes(state, chosen, count, membership(stack_objects))
    wait_settled(state.client())
    return created


def node_capacity(node: Mapping[str, Any]) -> str:
    labels = node["metadata"].get("labels") or {}
    return str(labels.get(KARPENTER_CAPACITY_TYPE_LABEL) or labels.get(CAPACITY_TYPE_LABEL) or "unknown")


def is_daemonset_pod(pod: Mapping[str, Any]) -> bool:
    """True for a pod a DaemonSet owns (an ``ownerReferences`` entry of kind ``DaemonSet``, which
    the DaemonSet controller sets on every pod it creates): the node's add-ons (device plugin,
    exporters, CNI), one per node, not the pool's workload."""
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(owner.get("kind") == "DaemonSet" for owner in owners)


def summarize(
    node_list: Sequence[Mapping[str, Any]], pod_list: Sequence[Mapping[str, Any]], pools: Sequence[str] = ()
) -> dict[str, Any]:
    """Nodes per pool and capacity type; workload pods running and pending per pool (a pod's pool is
    its node's; an unscheduled pod's is the ``gpupools.io/pool`` it selects, else ``-``). DaemonSet
    pods are not counted (``is_daemonset_pod``). ``pools``: the stack's pools, each listed even with
    no node and no pod, so an idle pool shows as 0 rather than missing."""
    pool_of_node = {}
    node_counts: Counter[tuple[str, str]] = Counter()
    for node in node_list:
        labels = node["metadata"].get("labels") or {}
        pool = str(labels.get(POOL_LABEL, "-"))
        pool_of_node[node["metadata"]["name"]] = pool
        node_counts[(pool, node_capacity(node))] += 1
    pod_counts: Counter[tuple[str, str]] = Counter()
    for pod in pod_list:
        if is_daemonset_pod(pod):
            continue
        spec = pod.get("spec") or {}
        phase = str((pod.get("status") or {}).get("phase", "Pending"))
        bound = spec.get("nodeName")
        pool = pool_of_node.get(str(bound), "-") if bound else str((spec.get("nodeSelector") or {}).get(POOL_LABEL, "-"))
        state = "running" if phase == "Running" else "pending" if phase == "Pending" else phase.lower()
        pod_counts[(pool, state)] += 1
    listed = sorted(set(pools) | {p for p, _ in node_counts} | {p for p, _ in pod_counts})
    return {
        "pools": [
            {
                "pool": pool,
                "nodes": {capacity: n for (p, capacity), n in sorted(node_counts.items()) if p == pool},
                "pods": {state: n for (p, state), n in sorted(pod_counts.items()) if p == pool},
            }
            for pool in listed
        ]
    }


def stack_pools(stack: str, root: Path | None = None) -> list[str]:
    """The pool names a stack's nodes carry in ``gpupools.io/pool``: ``system`` and every
    ``gpuPools``/``cpuPools`` entry, read from ``Pulumi.<stack>.yaml`` (no synthesis)."""
    from gpupools.config import load_file
    from gpupools.synth import default_root

    spec = load_file((root or default_root()) / f"Pulumi.{stack}.yaml")
    return [Role.SYSTEM.value, *(pool.name for pool in spec.pools)]  # the system pool is "system" on both clouds


def status(stack: str) -> dict[str, Any]:
    check_stack(stack)
    state = control_plane.running_state(stack)
    client = state.client()
    summary = summarize(client.list("v1", "Node"), client.list("v1", "Pod"), stack_pools(stack))
    version = client.request("GET", "/version")
    return {
        "stack": stack,
        "server": state.server,
        "kubernetesVersion": version.get("gitVersion"),
        "kubeconfig": state.kubeconfig,
        **summary,
        "controllers": controller_notes(state),
    }


def controller_notes(state: ClusterState) -> list[dict[str, Any]]:
    """Each running controller with the identity it runs as and what of its chart or flags could not
    apply locally (recorded when it started)."""
    from gpupools.sim import processes

    return [
        {
            "name": name,
            "identity": record.extra.get("identity", "admin"),
            "notes": [n for n in record.extra.get("notes", "").split("\n") if n],
        }
        for name, record in sorted(processes.records(state).items())
    ]


def down(stack: str) -> list[str]:
    """Stop ``stack``'s sim processes and remove its state; the names of what was stopped."""
    check_stack(stack)
    state = control_plane.load_state(stack)
    if state is None:
        return []
    return controllers.stop(state) + control_plane.stop(state)


def render_status(data: Mapping[str, Any]) -> str:
    lines = [
        f"stack {data['stack']}: Kubernetes {data['kubernetesVersion']} at {data['server']}",
        f"kubeconfig: {data['kubeconfig']}",
    ]
    lines.append(f"{'pool':<12} {'nodes (capacity type)':<34} pods (workloads; DaemonSet pods not counted)")
    for row in data["pools"]:
        node_text = ", ".join(f"{n} {c}" for c, n in row["nodes"].items()) or "0"
        pod_text = ", ".join(f"{n} {s}" for s, n in row["pods"].items()) or "0"
        lines.append(f"{row['pool']:<12} {node_text:<34} {pod_text}")
    for controller in data.get("controllers", []):
        lines.append(f"controller {controller['name']}: runs as {controller['identity']}")
        lines.extend(f"  - {note}" for note in controller["notes"])
    return "\n".join(lines) + "\n"
