"""The controllers a sim cluster runs beside its control plane (Karpenter, Kueue): started as local
processes, recorded in the cluster's state directory (``controllers.json``), stopped by name or all
at once (``down`` stops them before the control plane).

Each runs in its own session (like the control plane's components) with its log in the cluster's
``logs/`` directory; its record keeps its PID, ports and the files it was started with, so a
restart (``spot`` rewrites Karpenter's instance types) starts it again the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from gpupools.sim import control_plane, pki
from gpupools.sim.control_plane import ClusterState, SimError, _log_tail, _reap, pid_alive
from gpupools.sim.kube import wait_for

RECORDS = "controllers.json"
START_TIMEOUT = 120.0
"""Seconds a controller gets to answer its health probe (Kueue and Karpenter start their caches
first: 5-30 s on two busy cores)."""


@dataclass
class Controller:
    """One running controller: its command line, environment additions, ports and PID."""

    name: str
    argv: list[str]
    env: dict[str, str]
    ports: dict[str, int]
    pid: int = 0
    extra: dict[str, str] = field(default_factory=dict)
    """Controller-specific facts a restart needs (files it reads, the stack it serves)."""


def admin_kubeconfig(state: ClusterState) -> Path:
    """A kubeconfig with the sim's admin identity (``admin.kubeconfig`` in the state directory), for
    the controllers a stack has no chart for: AKS's managed cluster-autoscaler, which runs in AKS's
    control plane under AKS's identity. Controllers with a chart run as its ServiceAccount
    (``gpupools.sim.charts``)."""
    path = state.path / "admin.kubeconfig"
    if not path.exists():
        files = pki.Pki(state.path / "pki")
        control_plane.write_kubeconfig(path, control_plane.kubeconfig(state.server, files, "admin", f"sim-{state.stack}"))
    return path


def _path(state: ClusterState) -> Path:
    return state.path / RECORDS


def records(state: ClusterState) -> dict[str, Controller]:
    path = _path(state)
    if not path.exists():
        return {}
    return {name: Controller(**data) for name, data in json.loads(path.read_text()).items()}


def _save(state: ClusterState, controllers: Mapping[str, Controller]) -> None:
    _path(state).write_text(json.dumps({n: asdict(c) for n, c in controllers.items()}, indent=2, sort_keys=True) + "\n")


def start(state: ClusterState, controller: Controller, ready: Callable[[], bool]) -> Controller:
    """Start ``controller`` (its log: ``logs/<name>.log``) and wait until ``ready()``; SimError with
    the end of its log when it exits first or does not become ready in START_TIMEOUT."""
    logs = state.path / "logs"
    log = (logs / f"{controller.name}.log").open("ab")
    process = subprocess.Popen(
        controller.argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **controller.env},
    )
    controller.pid = process.pid
    saved = records(state)
    saved[controller.name] = controller
    _save(state, saved)

    def check() -> bool:
        if process.poll() is not None:
            raise SimError(
                f"{controller.name} exited with status {process.returncode} while starting; the end of its log:\n"
                f"{_log_tail(logs, controller.name)}"
            )
        return ready()

    try:
        wait_for(check, timeout=START_TIMEOUT, interval=0.5, what=f"{controller.name} to become ready")
    except TimeoutError as error:
        stop(state, controller.name)
        raise SimError(f"{error}; the end of its log:\n{_log_tail(logs, controller.name)}") from None
    return controller


def stop(state: ClusterState, name: str, *, timeout: float = 20.0, first_signal: signal.Signals = signal.SIGTERM) -> bool:
    """Stop one recorded controller (``first_signal``, TERM by default, then KILL after ``timeout``);
    True when it was running."""
    saved = records(state)
    controller = saved.pop(name, None)
    _save(state, saved)
    if controller is None or not pid_alive(controller.pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(controller.pid, first_signal)
    deadline = time.monotonic() + timeout
    while pid_alive(controller.pid) and time.monotonic() < deadline:
        _reap(controller.pid)
        time.sleep(0.2)
    if pid_alive(controller.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(controller.pid, signal.SIGKILL)
    _reap(controller.pid)
    return True


def stop_all(state: ClusterState) -> list[str]:
    """Stop every recorded controller; the names of those that were running."""
    return [name for name in list(records(state)) if stop(state, name)]
