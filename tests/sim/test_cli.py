"""``python -m gpupools.sim`` end to end, as a user runs it: up, a second up, nodes, status, down.

Runs in its own state directory (``GPUPOOLS_SIM_STATE``), so a user's running sim clusters are
never touched; the builds are the cached ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gpupools.sim import control_plane
from gpupools.sim.build import Build
from gpupools.sim.kube import Client
from gpupools.testing import PROJECT_ROOT

pytestmark = pytest.mark.sim

STACK = "azure-dev"


def sim(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpupools.sim", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def client_from(kubeconfig: Path) -> Client:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    return Client(
        cluster["server"], Path(cluster["certificate-authority"]), Path(user["client-certificate"]), Path(user["client-key"])
    )


def test_up_nodes_status_down(sim_build: Build, tmp_path: Path) -> None:
    env = {**os.environ, "GPUPOOLS_SIM_STATE": str(tmp_path / "state"), "PYTHONPATH": str(PROJECT_ROOT / "components")}
    kubeconfig = tmp_path / "kubeconfig"
    up = sim("up", STACK, "--kubeconfig", str(kubeconfig), env=env)
    assert up.returncode == 0, up.stderr
    assert f"kubeconfig: {kubeconfig}" in up.stdout
    state_file = tmp_path / "state" / STACK / "state.json"
    state = json.loads(state_file.read_text())
    try:
        client = client_from(kubeconfig)
        version = client.request("GET", "/version")
        # A real API server at the pinned version, stamped by the build (not v0.0.0-master).
        assert version["gitVersion"] == sim_build.kubernetes_version
        assert (version["major"], version["minor"]) == ("1", sim_build.kubernetes_version.split(".")[1])

        again = sim("up", STACK, env=env)
        assert again.returncode == 1
        assert "already running" in again.stderr

        added = sim("nodes", STACK, "--pool", "t4", "--count", "2", "--capacity", "spot", env=env)
        assert added.returncode == 0, added.stderr
        names = added.stdout.split()
        assert len(names) == 2
        for name in names:
            node = client.request("GET", f"/api/v1/nodes/{name}")
            assert node["metadata"]["labels"]["kubernetes.azure.com/scalesetpriority"] == "spot"

        unknown = sim("nodes", STACK, "--pool", "h100", "--count", "1", env=env)
        assert unknown.returncode == 2 and "unknown pool 'h100'" in unknown.stderr

        # azure-dev scales with cluster-autoscaler, which the sim runs: `spot` restarts it with the pool's
        # Spot groups unavailable; a misspelt pool is one error naming the stack's pools.
        unavailable = sim("spot", STACK, "--pool", "t4", "--unavailable", env=env)
        assert unavailable.returncode == 0, unavailable.stderr
        assert "Spot capacity of pool t4 is unavailable" in unavailable.stdout
        misspelt = sim("spot", STACK, "--pool", "tt4", "--unavailable", env=env)
        assert misspelt.returncode == 2 and "unknown pool 'tt4'" in misspelt.stderr, misspelt.stderr

        status = sim("status", STACK, "--json", env=env)
        assert status.returncode == 0, status.stderr
        rows = {row["pool"]: row for row in json.loads(status.stdout)["pools"]}
        assert rows["t4"]["nodes"] == {"spot": 2}
        # Each T4 node runs the device plugin and the T4 pool's DCGM exporter (DaemonSet pods, present in
        # the API), which `status` does not count as the pool's workload: no workload pods, so none counted.
        on_t4 = [
            pod
            for pod in client.list("v1", "Pod")
            if pod["spec"].get("nodeName") in names and pod["status"].get("phase") == "Running"
        ]
        assert len(on_t4) == 4 and all(pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet" for pod in on_t4)
        assert rows["t4"]["pods"] == {}
        assert rows["system"]["nodes"] == {"on-demand": 2}
    finally:
        down = sim("down", STACK, env=env)
    assert down.returncode == 0, down.stderr
    assert not state_file.parent.exists()
    for name, pid in state["pids"].items():
        assert not control_plane.pid_alive(pid), name
    for name, port in state["ports"].items():
        assert control_plane.port_free(port), f"{name} still listens on {port}"


def test_a_port_in_use_is_reported(sim_build: Build, tmp_path: Path) -> None:
    import socket

    env = {**os.environ, "GPUPOOLS_SIM_STATE": str(tmp_path / "state"), "PYTHONPATH": str(PROJECT_ROOT / "components")}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = sim("up", STACK, "--port", str(port), env=env)
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr
    assert not (tmp_path / "state" / STACK).exists()
