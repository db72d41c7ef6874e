"""The sim's pure parts (no control plane): node shapes, the build's pins and cache key, the command
line's bad-input errors, ports, the status summary. The control-plane tier is ``tests/sim``."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import GPU_SIZES
from gpupools.conventions import CapacityType
from gpupools.sim import build, cli, cluster, control_plane, node_shapes, objects
from gpupools.testing import PROJECT_ROOT


@pytest.fixture(scope="module")
def azure_dev() -> objects.StackObjects:
    return objects.load("azure-dev")


@pytest.fixture(scope="module")
def aws_dev() -> objects.StackObjects:
    return objects.load("aws-dev")


def stack_file(stack: str) -> dict:
    return yaml.safe_load((PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]


def test_an_aks_spot_gpu_node_is_shaped_as_aks_makes_it(azure_dev: objects.StackObjects) -> None:
    groups = cluster.groups_for(azure_dev)
    [group] = node_shapes.groups_of(groups, "t4", CapacityType.SPOT)
    # The agent pool's name is what AKS calls it (the AgentPool's agentPoolName), not the pool's.
    [registration] = [
        r for r in azure_dev.run.of_type(node_shapes.AKS_AGENT_POOL) if r.inputs["scaleSetPriority"] == "Spot" and "t4" in r.name
    ]
    node = node_shapes.node_manifest(group, 0, control_plane.KWOK_ANNOTATION)
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.azure.com/agentpool"] == registration.inputs["agentPoolName"] == labels["agentpool"]
    assert labels["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert labels["kubernetes.azure.com/accelerator"] == "nvidia"
    assert labels["kubernetes.azure.com/mode"] == "user"
    assert labels["node.kubernetes.io/instance-type"] == "Standard_NC4as_T4_v3"
    assert labels["topology.kubernetes.io/zone"] == "eastus-1"
    assert labels["team"] == stack_file("azure-dev")["gpupools:gpuPools"][0]["labels"]["team"]
    taints = {(t["key"], t["value"], t["effect"]) for t in node["spec"]["taints"]}
    assert ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule") in taints
    assert ("nvidia.com/gpu", "present", "NoSchedule") in taints
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(GPU_SIZES["Standard_NC4as_T4_v3"].gpus)
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert node["metadata"]["name"].startswith(f"aks-{registration.inputs['agentPoolName']}-")


def test_the_aks_system_pool_node_carries_the_critical_addons_taint(azure_dev: objects.StackObjects) -> None:
    [group] = node_shapes.groups_of(cluster.groups_for(azure_dev), "system")
    node = node_shapes.node_manifest(group, 1, control_plane.KWOK_ANNOTATION)
    assert node["metadata"]["labels"]["kubernetes.azure.com/mode"] == "system"
    assert node["spec"]["taints"] == [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}]
    assert "nvidia.com/gpu" not in node["status"]["allocatable"]


def test_an_eks_time_sliced_node_advertises_gpus_times_replicas(aws_dev: objects.StackObjects) -> None:
    pool = stack_file("aws-dev")["gpupools:gpuPools"][0]
    replicas = pool["sharing"]["timeSlicing"]["replicas"]
    groups = node_shapes.groups_of(cluster.groups_for(aws_dev), pool["name"], CapacityType.SPOT)
    # One managed node group per zone, as the stack creates them.
    assert sorted(g.zones[0] for g in groups) == stack_file("aws-dev")["gpupools:cluster"]["zones"]
    node = node_shapes.node_manifest(groups[0], 0, control_plane.KWOK_ANNOTATION)
    labels = node["metadata"]["labels"]
    registration = next(r for r in aws_dev.run.of_type(node_shapes.EKS_NODE_GROUP) if r.inputs["nodeGroupName"] == groups[0].name)
    assert labels["eks.amazonaws.com/nodegroup"] == registration.inputs["nodeGroupName"]
    assert labels["eks.amazonaws.com/capacityType"] == "SPOT"
    assert labels["topology.kubernetes.io/zone"] == groups[0].zones[0]
    first_type = pool["instanceTypes"][0]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(INSTANCE_TYPES[first_type].gpus * replicas)
    assert node["status"]["allocatable"]["cpu"] == str(INSTANCE_TYPES[first_type].vcpus)
    assert node["metadata"]["name"].endswith(".us-west-2.compute.internal")


def test_an_efa_group_advertises_its_efa_interfaces() -> None:
    training = objects.load("aws-training-dev")
    [group] = node_shapes.groups_of(cluster.groups_for(training), "h100", CapacityType.RESERVED)
    assert group.labels["eks.amazonaws.com/capacityType"] == "CAPACITY_BLOCK"
    node = node_shapes.node_manifest(group, 0, control_plane.KWOK_ANNOTATION)
    assert node["status"]["allocatable"]["vpc.amazonaws.com/efa"] == str(INSTANCE_TYPES["p5.48xlarge"].efa_interfaces)


def test_a_karpenter_nodepool_gives_a_group_per_capacity_type() -> None:
    nap = objects.load("azure-nap-dev")
    groups = [g for g in cluster.groups_for(nap) if g.pool == "t4"]
    assert sorted(g.capacity.value for g in groups) == ["on-demand", "spot"]
    by_capacity = {
        g.capacity: node_shapes.node_manifest(g, 0, control_plane.KWOK_ANNOTATION)["metadata"]["labels"] for g in groups
    }
    assert by_capacity[CapacityType.SPOT]["karpenter.sh/capacity-type"] == "spot"
    assert by_capacity[CapacityType.SPOT]["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert by_capacity[CapacityType.ON_DEMAND]["kubernetes.azure.com/scalesetpriority"] == "regular"
    assert by_capacity[CapacityType.ON_DEMAND]["karpenter.sh/nodepool"] == "t4"


def test_node_names_are_unique_per_group_and_index(aws_dev: objects.StackObjects) -> None:
    groups = cluster.groups_for(aws_dev)
    names = [node_shapes.node_name(g, i) for g in groups for i in range(3)]
    assert len(names) == len(set(names))


def test_the_crds_are_the_families_the_stack_uses(tmp_path: Path) -> None:
    families = {
        "kueue": [
            ("kueue.x-k8s.io", k)
            for k in ("AdmissionCheck", "ClusterQueue", "LocalQueue", "ProvisioningRequestConfig", "ResourceFlavor")
        ],
        "karpenter-provider-aws": [
            ("karpenter.sh", "NodePool"),
            ("karpenter.sh", "NodeOverlay"),
            ("karpenter.k8s.aws", "EC2NodeClass"),
        ],
        "karpenter-provider-azure": [
            ("karpenter.sh", "NodePool"),
            ("karpenter.sh", "NodeOverlay"),
            ("karpenter.azure.com", "AKSNodeClass"),
        ],
        "apis": [("autoscaling.x-k8s.io", "ProvisioningRequest")],
    }
    for family, kinds in families.items():
        (tmp_path / family).mkdir()
        for group, kind in kinds:
            crd = {
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{kind.lower()}s.{group}"},
                "spec": {"group": group, "names": {"kind": kind}},
            }
            (tmp_path / family / f"{group}_{kind}.yaml").write_text(yaml.safe_dump(crd))
    nap = objects.crds_for(objects.load("azure-nap-dev"), tmp_path)
    assert {c.family for c in nap} == {"karpenter-provider-azure"}
    training_objects = objects.load("aws-training-dev")
    training = objects.crds_for(training_objects, tmp_path)
    # The ProvisioningRequest CRD is the stack's own object (vendored, gpupools.kubernetes.crds), not installed by the sim.
    assert {c.family for c in training} == {"kueue"}
    assert any(
        m["kind"] == "CustomResourceDefinition" and m["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
        for m in training_objects.manifests
    )
    # AKS under cluster-autoscaler: only the ProvisioningRequest API AKS's managed autoscaler serves.
    assert [c.kind for c in objects.crds_for(objects.load("azure-dev"), tmp_path)] == ["ProvisioningRequest"]
    eks = objects.crds_for(objects.load("aws-karpenter-dev"), tmp_path)
    assert {c.family for c in eks} == {"karpenter-provider-aws"}


def test_helm_releases_are_reported_not_dropped(aws_dev: objects.StackObjects) -> None:
    assert any(s.startswith("kubernetes:helm.sh/v3:Release") for s in aws_dev.skipped)
    assert all(not m["apiVersion"].startswith("helm.sh") for m in aws_dev.manifests)


def test_the_pinned_versions_come_from_the_module_files() -> None:
    versions = build.required_versions(PROJECT_ROOT / "sim")
    assert versions["k8s.io/kubernetes"] == "v1.36.3"
    assert versions["sigs.k8s.io/kwok"] == "v0.8.0"
    assert versions["go.etcd.io/etcd/server/v3"].startswith("v3.6.")
    assert versions["sigs.k8s.io/kueue"] == "v0.19.2"
    # Every staging module is replaced by its published version matching k8s.io/kubernetes.
    gomod = (PROJECT_ROOT / "sim" / "cp" / "go.mod").read_text()
    kubernetes_gomod_staging = ("api", "apiserver", "client-go", "component-base", "kube-scheduler", "kubelet", "streaming")
    for name in kubernetes_gomod_staging:
        assert f"k8s.io/{name} => k8s.io/{name} v0.36.3" in gomod


def test_the_cache_key_follows_the_module_files(tmp_path: Path) -> None:
    for name in build.MODULE_DIRS:
        (tmp_path / name).mkdir()
        for file in ("go.mod", "go.sum"):
            (tmp_path / name / file).write_bytes((PROJECT_ROOT / "sim" / name / file).read_bytes())
    before = build.cache_key(tmp_path, "go1.26.8")
    assert build.cache_key(tmp_path, "go1.26.8") == before
    assert build.cache_key(tmp_path, "go1.27.0") != before
    with (tmp_path / "cp" / "go.mod").open("a") as gomod:
        gomod.write("// a note on a pin changes nothing built\n")
    assert build.cache_key(tmp_path, "go1.26.8") == before
    with (tmp_path / "cp" / "go.sum").open("a") as gosum:
        gosum.write("example.com/x v1.0.0 h1:AAAA=\n")
    assert build.cache_key(tmp_path, "go1.26.8") != before


def test_the_build_stamps_the_kubernetes_version() -> None:
    flags = build.ldflags_kubernetes("v1.36.3")
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.3" in flags
    assert "-X k8s.io/component-base/version.gitMinor=36" in flags
    assert "-X k8s.io/client-go/pkg/version.gitMajor=1" in flags


def test_a_finished_build_replaces_the_old_one_and_records_what_went_in(tmp_path: Path) -> None:
    root, staging = tmp_path / "v1", tmp_path / "v1.partial"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "stale").write_text("")
    (staging / "bin").mkdir(parents=True)
    (staging / "bin" / "kube-apiserver").write_text("")
    assert build.recorded_versions(root) is None  # an old build without its record is not complete
    out = io.StringIO()
    build.finish_build(
        "build-sim", staging, root, {"go": "go1.26", "versions": {"k8s.io/kubernetes": "v1"}}, {"etcd": 70.4}, 0.0, out
    )
    assert not staging.exists() and sorted(p.name for p in (root / "bin").iterdir()) == ["kube-apiserver"]
    record = json.loads((root / "build.json").read_text())
    assert record["go"] == "go1.26" and record["seconds"]["etcd"] == 70 and record["seconds"]["total"] > 0
    assert build.recorded_versions(root) == {"k8s.io/kubernetes": "v1"}
    assert out.getvalue().startswith("[build-sim] done in ") and str(root / "bin") in out.getvalue()


HOLD_THE_LOCK = """
import sys, time
from pathlib import Path
from gpupools.sim import build
root = Path(sys.argv[1])
with build.exclusive(root, "build-sim", sys.stdout):
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    (root / "bin").mkdir(parents=True)
    (root / "build.json").write_text('{"versions": {"k8s.io/kubernetes": "v2"}}')
"""


def test_a_build_another_process_is_making_is_waited_for_not_made_twice(tmp_path: Path) -> None:
    root = tmp_path / "v2"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(root), "2"],
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(PROJECT_ROOT / "components")},
    )
    assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
    made: list[str] = []
    out = io.StringIO()
    found = build.once("build-sim", root, False, out, lambda versions: versions, lambda: made.append("again") or {})
    assert holder.wait() == 0
    assert made == [] and found == {"k8s.io/kubernetes": "v2"}  # the other process's build, not a second one
    assert "another process is building" in out.getvalue() and out.getvalue().rstrip().endswith(f"cached: {root}")
    # Nobody holds it now: force makes anew at once, and a missing build is made.
    assert build.once("build-sim", root, True, io.StringIO(), lambda v: v, lambda: {"made": "forced"}) == {"made": "forced"}
    fresh = tmp_path / "v3"
    assert build.once("build-sim", fresh, False, io.StringIO(), lambda v: v, lambda: {"made": "fresh"}) == {"made": "fresh"}


def test_the_cache_goes_where_gpupools_cache_says(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gpupools.sim import layout

    monkeypatch.setenv("GPUPOOLS_CACHE", str(tmp_path))
    monkeypatch.delenv("GPUPOOLS_SIM_STATE", raising=False)
    assert layout.cluster_dir("azure-dev") == tmp_path / "sim" / "clusters" / "azure-dev"
    monkeypatch.delenv("GPUPOOLS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert layout.cache_root() == tmp_path / "xdg" / "gpupools"


def test_a_port_in_use_is_refused_at_once() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(control_plane.SimError, match=f"port {port} on 127.0.0.1 is in use"):
            control_plane.choose_ports(port)
    ports = control_plane.choose_ports(None)
    assert len(set(ports.values())) == len(ports)


def test_status_counts_nodes_and_pods_per_pool() -> None:
    def node(name: str, pool: str, capacity: str, karpenter: bool = False) -> dict:
        key = "karpenter.sh/capacity-type" if karpenter else "gpupools.io/capacity-type"
        return {"metadata": {"name": name, "labels": {"gpupools.io/pool": pool, key: capacity}}}

    nodes = [
        node("a", "t4", "spot"),
        node("b", "t4", "on-demand"),
        node("c", "gpu1", "spot", karpenter=True),
        node("d", "system", "on-demand"),
    ]
    pods = [
        {"spec": {"nodeName": "a"}, "status": {"phase": "Running"}},
        {"spec": {"nodeName": "a"}, "status": {"phase": "Running"}},
        {"spec": {"nodeName": "c"}, "status": {"phase": "Pending"}},
        {"spec": {"nodeSelector": {"gpupools.io/pool": "a100"}}, "status": {"phase": "Pending"}},
        {"spec": {}, "status": {"phase": "Pending"}},
    ]
    rows = {row["pool"]: row for row in cluster.summarize(nodes, pods)["pools"]}
    assert rows["t4"] == {"pool": "t4", "nodes": {"on-demand": 1, "spot": 1}, "pods": {"running": 2}}
    assert rows["gpu1"]["pods"] == {"pending": 1}
    assert rows["a100"] == {"pool": "a100", "nodes": {}, "pods": {"pending": 1}}
    assert rows["-"]["pods"] == {"pending": 1}
    assert rows["system"]["nodes"] == {"on-demand": 1}


def test_status_counts_workload_pods_only_and_lists_every_pool_of_the_stack() -> None:
    """A DaemonSet's pod (device plugin, DCGM exporter: one per node) is not the pool's workload:
    the DaemonSet controller sets ``ownerReferences`` ``{kind: DaemonSet, controller: true}`` on
    every pod it creates (kubernetes ``pkg/controller/daemon/daemon_controller.go``, ``syncNodes``:
    ``dsc.podControl.CreatePods(ctx, ds.Namespace, podTemplate, ds, metav1.NewControllerRef(ds, controllerKind))``). Idle pools used to be missing from the table."""
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-device-plugin", "uid": "u1", "controller": True}
    job_owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u2", "controller": True}
    nodes = [{"metadata": {"name": "a", "labels": {"gpupools.io/pool": "t4", "gpupools.io/capacity-type": "spot"}}}]
    pods = [
        {"metadata": {"ownerReferences": [owner]}, "spec": {"nodeName": "a"}, "status": {"phase": "Running"}},
        {"metadata": {"ownerReferences": [job_owner]}, "spec": {"nodeName": "a"}, "status": {"phase": "Running"}},
    ]
    pools = cluster.stack_pools("azure-dev")
    assert pools == ["system", "t4", "a100", "general"]
    rows = {row["pool"]: row for row in cluster.summarize(nodes, pods, pools)["pools"]}
    assert rows["t4"] == {"pool": "t4", "nodes": {"spot": 1}, "pods": {"running": 1}}
    assert rows["a100"] == {"pool": "a100", "nodes": {}, "pods": {}} and set(rows) == set(pools)
    data = {"stack": "azure-dev", "kubernetesVersion": "v1.35.0", "server": "https://127.0.0.1:6443", "kubeconfig": "k"}
    table = cluster.render_status({**data, **cluster.summarize(nodes, pods, pools)})
    assert "a100         0                                  0" in table and "DaemonSet pods not counted" in table


def run_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(PROJECT_ROOT / "components"),
        "GPUPOOLS_SIM_STATE": str(tmp_path),
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-m", "gpupools.sim", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_cli_help_lists_the_commands(tmp_path: Path) -> None:
    result = run_cli("--help", tmp_path=tmp_path)
    assert result.returncode == 0
    for command in ("up", "nodes", "status", "down"):
        assert command in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nodes", "nope-dev", "--pool", "t4", "--count", "1"), "unknown stack 'nope-dev'"),
        (
            ("nodes", "azure-dev", "--pool", "h100", "--count", "1"),
            "unknown pool 'h100' in stack azure-dev (pools: a100, general, system, t4)",
        ),
        (
            ("nodes", "azure-dev", "--pool", "t4", "--count", "1", "--capacity", "reserved"),
            "pool t4 of stack azure-dev buys no reserved capacity (it buys: on-demand, spot)",
        ),
        (("nodes", "azure-dev", "--pool", "t4", "--count", "0"), "--count must be at least 1, got 0"),
        (("nodes", "azure-dev", "--pool", "t4", "--count", "1", "--capacity", "preemptible"), "invalid choice: 'preemptible'"),
        (("status", "nope-dev"), "unknown stack 'nope-dev'"),
        (("up", "azure-dev", "--kubeconfg", "x"), "unrecognized arguments: --kubeconfg"),
    ],
)
def test_bad_input_is_one_clear_error(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = run_cli(*args, tmp_path=tmp_path)
    assert result.returncode == cli.EXIT_BAD_INPUT, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_nodes_and_status_of_a_stopped_cluster_say_so(tmp_path: Path) -> None:
    result = run_cli("status", "azure-dev", tmp_path=tmp_path)
    assert result.returncode == cli.EXIT_FAILED
    assert "no sim cluster of stack azure-dev is running" in result.stderr
    down = run_cli("down", "azure-dev", tmp_path=tmp_path)
    assert down.returncode == 0
    assert "no sim cluster of stack azure-dev was running" in down.stdout


def test_listed_objects_carry_their_kind_so_they_can_be_deleted_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API server's list of a built-in type leaves ``apiVersion`` and ``kind`` out of its items
    (a teardown that deleted the Jobs it listed failed with ``KeyError: 'apiVersion'``)."""
    from gpupools.sim.kube import Client, Resource

    client = Client("https://127.0.0.1:1", Path("ca"), Path("cert"), Path("key"))
    client._resources[("batch/v1", "Job")] = Resource("batch/v1", "Job", "jobs", True)
    asked: list[tuple[str, str]] = []

    def request(method: str, path: str, body: object = None, **_: object) -> dict[str, object]:
        asked.append((method, path))
        return {"kind": "JobList", "items": [{"metadata": {"name": "gang", "namespace": "ml"}}]} if method == "GET" else {}

    monkeypatch.setattr(client, "request", request)
    [job] = client.list("batch/v1", "Job", namespace="ml")
    assert (job["apiVersion"], job["kind"], job["metadata"]["name"]) == ("batch/v1", "Job", "gang")
    assert client.delete(job) and asked[-1] == ("DELETE", "/apis/batch/v1/namespaces/ml/jobs/gang")
