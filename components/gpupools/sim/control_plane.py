"""Start and stop a stack's sim control plane: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the KWOK controller, as local processes bound to 127.0.0.1 only.

The processes are started directly (no ``kwokctl``): each in its own session, so they outlive the
``up`` command and a terminal's Ctrl-C; their PIDs, ports and paths are recorded in the cluster's
state directory (``layout.cluster_dir``), which ``down`` reads to stop them and then removes.

Flags follow what each component needs on one machine and nothing more:

* etcd: client and peer URLs on 127.0.0.1, ``--unsafe-no-fsync`` (a throw-away cluster: fsync on
  every write is most of etcd's latency and buys nothing here).
* kube-apiserver: ``--bind-address=127.0.0.1``, TLS from ``pki``, client certificates for
  authentication, ``Node,RBAC`` authorization as on AKS and EKS, service accounts signed by the
  sim's key (``--service-account-issuer`` is required since 1.20).
* kube-apiserver, for an AKS Automatic stack (``baseline_pod_security``): the built-in PodSecurity
  admission plugin enforcing the ``baseline`` level in every namespace but ``kube-system``
  (``--admission-control-config-file``, ``POD_SECURITY_ADMISSION``), as Automatic does ("baseline Pod
  Security Standards in Enforce", AKS ``intro-aks-automatic.md``; the plugin and its
  ``PodSecurityConfiguration`` are upstream's, kubernetes.io "Apply Pod Security Standards at the
  Cluster Level"): a pod that breaks the standard is refused by the real API server.
* kube-controller-manager and kube-scheduler: their own kubeconfig and identity,
  ``--leader-elect=false`` (one replica), secure port on 127.0.0.1. The controller manager runs
  each controller as its own service account (``--use-service-account-credentials``, as kubeadm
  starts it): ``system:kube-controller-manager`` alone may not, for example, write EndpointSlices
  or patch nodes; the ``system:controller:*`` roles of the bootstrap policy may.
* KWOK: manages the nodes annotated ``kwok.x-k8s.io/node: fake`` (and only those) that are not
  labelled ``sim.gpupools.io/unavailable`` (``UNAVAILABLE_LABEL``: a node whose instance never boots,
  ``gpupools.sim.autoscaler``), with KWOK's own node and pod stages (``build.KWOK_STAGES``), and node
  leases so the node lifecycle controller sees them alive. KWOK v0.8.0 applies both selectors
  (``pkg/kwok/controllers/controller.go``: the label selector on its node watch, the annotation
  selector on what it receives).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from gpupools.sim import layout, pki
from gpupools.sim.build import Build
from gpupools.sim.kube import Client, wait_for

HOST = "127.0.0.1"
SERVICE_CIDR = "10.0.0.0/24"
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
"""The annotation KWOK's controller selects its nodes by (``--manage-nodes-with-annotation-selector``),
the one ``kwokctl`` uses; the sim's nodes carry it, so KWOK never touches anything else."""

POD_SECURITY_ADMISSION: dict[str, Any] = {
    "apiVersion": "apiserver.config.k8s.io/v1",
    "kind": "AdmissionConfiguration",
    "plugins": [
        {
            "name": "PodSecurity",
            "configuration": {
                "apiVersion": "pod-security.admission.config.k8s.io/v1",
                "kind": "PodSecurityConfiguration",
                "defaults": {
                    "enforce": "baseline",
                    "enforce-version": "latest",
                    "audit": "baseline",
                    "audit-version": "latest",
                    "warn": "baseline",
                    "warn-version": "latest",
                },
                "exemptions": {"usernames": [], "runtimeClasses": [], "namespaces": ["kube-system"]},
            },
        }
    ],
}
"""The admission configuration of an AKS Automatic stack's API server (module docstring)."""

UNAVAILABLE_LABEL = "sim.gpupools.io/unavailable"
"""A node with this label is never made Ready (``--manage-nodes-with-label-selector=!<label>``): the
sim's Spot shortage under cluster-autoscaler (``gpupools.sim.autoscaler``)."""

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
START_TIMEOUT = 120.0
"""Seconds each component gets to become ready (the API server's first start on two busy cores
takes 10-30 s: it installs its bootstrap RBAC and priority classes)."""


class SimError(RuntimeError):
    """A sim command cannot do what was asked; the message says why and what to do."""


@dataclass
class ClusterState:
    """What ``up`` records about a running cluster (``state.json`` in its directory)."""

    stack: str
    dir: str
    build: str
    kubernetes_version: str
    ports: dict[str, int]
    pids: dict[str, int] = field(default_factory=dict)
    kubeconfig: str = ""
    nodes: dict[str, int] = field(default_factory=dict)
    """Per node group, how many nodes ``nodes`` has made so far (names stay unique)."""

    @property
    def server(self) -> str:
        return f"https://{HOST}:{self.ports['kube-apiserver']}"

    @property
    def path(self) -> Path:
        return Path(self.dir)

    def save(self) -> None:
        (self.path / "state.json").write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    def client(self, identity: str = "admin") -> Client:
        files = pki.Pki(self.path / "pki")
        return Client(self.server, files.ca_cert, files.client_cert(identity), files.client_key(identity))

    def alive(self) -> dict[str, bool]:
        return {name: pid_alive(pid) for name, pid in self.pids.items()}


def load_state(stack: str) -> ClusterState | None:
    """The recorded state of ``stack``'s cluster, or None when there is none."""
    path = layout.cluster_dir(stack) / "state.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return ClusterState(**data)


def running_state(stack: str) -> ClusterState:
    """The state of ``stack``'s running cluster; SimError when it is not running."""
    state = load_state(stack)
    if state is None or not all(state.alive().values()) or not state.pids:
        raise SimError(f"no sim cluster of stack {stack} is running: start one with `python -m gpupools.sim up {stack}`")
    return state


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) still answers signal 0.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def port_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:``port``: a bind succeeds with ``SO_REUSEADDR``, as Go's
    listeners (etcd's, the API server's) bind, so a closed socket's TIME_WAIT does not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def choose_ports(api_port: int | None) -> dict[str, int]:
    """A port per listener; ``api_port`` when given (SimError when something already listens there)."""
    if api_port is not None and not port_free(api_port):
        raise SimError(f"port {api_port} on {HOST} is in use: stop what listens there or choose another with --port")
    ports: dict[str, int] = {}
    for name in ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
        if name == "kube-apiserver" and api_port is not None:
            ports[name] = api_port
            continue
        port = free_port()
        while port in ports.values() or port == api_port:
            port = free_port()
        ports[name] = port
    return ports


def kubeconfig(server: str, files: pki.Pki, identity: str, cluster: str) -> dict[str, Any]:
    """A kubeconfig for ``identity`` with the certificate paths (not inline data: nothing secret is copied)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority": str(files.ca_cert)}}],
        "users": [
            {
                "name": identity,
                "user": {"client-certificate": str(files.client_cert(identity)), "client-key": str(files.client_key(identity))},
            }
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": identity}}],
        "current-context": cluster,
    }


def write_kubeconfig(path: Path, config: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    path.chmod(0o600)
    return path


def commands(build: Build, state: ClusterState, files: pki.Pki, admission_config: Path | None = None) -> dict[str, list[str]]:
    """The command line of every component (see the module docstring for why each flag);
    ``admission_config``: the API server's ``--admission-control-config-file``, default none."""
    ports = state.ports
    base = state.path
    kubeconfigs = {name: str(base / f"{name}.kubeconfig") for name in ("kube-controller-manager", "kube-scheduler", "kwok")}
    admission = [f"--admission-control-config-file={admission_config}"] if admission_config is not None else []
    return {
        "etcd": [
            str(build.binary("etcd")),
            "--name=sim",
            f"--data-dir={base / 'etcd'}",
            f"--listen-client-urls=http://{HOST}:{ports['etcd']}",
            f"--advertise-client-urls=http://{HOST}:{ports['etcd']}",
            f"--listen-peer-urls=http://{HOST}:{ports['etcd-peer']}",
            f"--initial-advertise-peer-urls=http://{HOST}:{ports['etcd-peer']}",
            f"--initial-cluster=sim=http://{HOST}:{ports['etcd-peer']}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
        "kube-apiserver": [
            str(build.binary("kube-apiserver")),
            f"--bind-address={HOST}",
            f"--advertise-address={HOST}",
            f"--secure-port={ports['kube-apiserver']}",
            f"--etcd-servers=http://{HOST}:{ports['etcd']}",
            f"--tls-cert-file={files.server_cert}",
            f"--tls-private-key-file={files.server_key}",
            f"--client-ca-file={files.ca_cert}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-key-file={files.sa_pub}",
            f"--service-account-signing-key-file={files.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            *admission,
        ],
        "kube-controller-manager": [
            str(build.binary("kube-controller-manager")),
            f"--kubeconfig={kubeconfigs['kube-controller-manager']}",
            f"--bind-address={HOST}",
            f"--secure-port={ports['kube-controller-manager']}",
            f"--service-account-private-key-file={files.sa_key}",
            f"--root-ca-file={files.ca_cert}",
            "--use-service-account-credentials=true",
            "--leader-elect=false",
            "--controllers=*",
        ],
        "kube-scheduler": [
            str(build.binary("kube-scheduler")),
            f"--kubeconfig={kubeconfigs['kube-scheduler']}",
            f"--bind-address={HOST}",
            f"--secure-port={ports['kube-scheduler']}",
            "--leader-elect=false",
        ],
        "kwok": [
            str(build.binary("kwok")),
            f"--kubeconfig={kubeconfigs['kwok']}",
            f"--config={build.stages}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION[0]}={KWOK_ANNOTATION[1]}",
            f"--manage-nodes-with-label-selector=!{UNAVAILABLE_LABEL}",
            "--node-lease-duration-seconds=40",
            f"--server-address={HOST}:{ports['kwok']}",
        ],
    }


def _start(name: str, command: list[str], logs: Path) -> subprocess.Popen[bytes]:
    log = (logs / f"{name}.log").open("ab")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _log_tail(logs: Path, name: str, lines: int = 15) -> str:
    path = logs / f"{name}.log"
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _insecure() -> ssl.SSLContext:
    """For the /healthz of the controller manager and scheduler, served with their self-signed certificates."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _wait_ready(name: str, process: subprocess.Popen[bytes], ready: Any, logs: Path) -> None:
    """Wait until ``ready()`` is true; SimError with the component's log tail when it exits first or times out."""

    def check() -> bool:
        if process.poll() is not None:
            raise SimError(
                f"{name} exited with status {process.returncode} while starting; the end of its log:\n{_log_tail(logs, name)}"
            )
        return bool(ready())

    try:
        wait_for(check, timeout=START_TIMEOUT, interval=0.5, what=f"{name} to become ready")
    except TimeoutError as error:
        raise SimError(f"{error}; the end of its log ({logs / (name + '.log')}):\n{_log_tail(logs, name)}") from None


def start(stack: str, build: Build, *, api_port: int | None = None, baseline_pod_security: bool = False) -> ClusterState:
    """Start ``stack``'s control plane and wait until every component is ready; returns its state.
    ``baseline_pod_security``: the API server enforces the baseline Pod Security Standard
    (``POD_SECURITY_ADMISSION``, an AKS Automatic stack).

    SimError when it already runs, when ``api_port`` is taken, or when a component fails to start
    (with the end of its log); whatever was started is stopped again in that case.
    """
    existing = load_state(stack)
    if existing is not None:
        if existing.pids and all(existing.alive().values()):
            raise SimError(
                f"the sim cluster of stack {stack} is already running (API server {existing.server}); `down {stack}` stops it"
            )
        stop(existing)
    ports = choose_ports(api_port)
    directory = layout.cluster_dir(stack)
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "logs").mkdir(parents=True)
    state = ClusterState(
        stack=stack, dir=str(directory), build=str(build.root), kubernetes_version=build.kubernetes_version, ports=ports
    )
    files = pki.create(directory / "pki")
    for identity in ("kube-controller-manager", "kube-scheduler", "kwok"):
        write_kubeconfig(directory / f"{identity}.kubeconfig", kubeconfig(state.server, files, identity, f"sim-{stack}"))
    state.save()
    logs = directory / "logs"
    admission: Path | None = None
    if baseline_pod_security:
        admission = directory / "admission.yaml"
        admission.write_text(yaml.safe_dump(POD_SECURITY_ADMISSION, sort_keys=False))
    argv = commands(build, state, files, admission)
    admin = state.client()
    readiness = {
        "etcd": lambda: _http_ok(f"http://{HOST}:{state.ports['etcd']}/health"),
        "kube-apiserver": lambda: admin.request("GET", "/readyz") is not None,
        "kube-controller-manager": lambda: _http_ok(
            f"https://{HOST}:{state.ports['kube-controller-manager']}/healthz", _insecure()
        ),
        "kube-scheduler": lambda: _http_ok(f"https://{HOST}:{state.ports['kube-scheduler']}/healthz", _insecure()),
        "kwok": lambda: _http_ok(f"http://{HOST}:{state.ports['kwok']}/healthz"),
    }
    try:
        for name in COMPONENTS:
            process = _start(name, argv[name], logs)
            state.pids[name] = process.pid
            state.save()
            _wait_ready(name, process, readiness[name], logs)
        # The service-account controller (controller manager) makes `default` in every namespace:
        # until it exists no pod can be created, so it is the controller manager's real readiness.
        wait_for(
            lambda: admin.get(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}
            ),
            timeout=START_TIMEOUT,
            what="the default ServiceAccount (controller manager)",
        )
    except BaseException:
        stop(state)
        raise
    return state


def stop(state: ClusterState, *, timeout: float = 20.0) -> list[str]:
    """Stop every recorded process (TERM, then KILL after ``timeout``), in reverse start order, and
    remove the state directory. Returns the names of the processes that were running."""
    stopped = []
    for name in reversed(COMPONENTS):
        pid = state.pids.get(name)
        if pid is None or not pid_alive(pid):
            continue
        stopped.append(name)
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.2)
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        _reap(pid)
    shutil.rmtree(state.path, ignore_errors=True)
    return stopped


def _reap(pid: int) -> None:
    """Collect ``pid``'s exit status when this process started it (else it lingers as a zombie)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
