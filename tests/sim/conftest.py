"""The control-plane tier: one real local control plane for the whole pytest session.

Run with ``scripts/test-sim`` (it builds the pinned binaries first, cached). These tests carry the
``sim`` marker and are deselected from the fast suite (``pyproject.toml`` ``addopts``). Without Go
on PATH they are skipped with that reason; with Go and no cached build, the session builds first.

``scripts/test-sim`` runs the tier on pytest-xdist workers, a test file per worker at a time
(``--dist loadfile``: a module's stack fixtures stay in one process): each worker is a session of its
own with its own control plane (``pytest-session-gw0``, ``pytest-session-gw1``, ...), so no two
modules ever share a cluster at once. The tests wait on controllers' timers far more than they compute, so
workers beside each other finish the tier in about the time of the longest share.

The tests that need the Pulumi engine (``engine_bin``) carry the ``engine`` marker, and
``scripts/test-sim`` runs them after all the others, as a second pytest run (``-m "sim and engine"``):
xdist hands out the largest test files first, and the engine's are the largest, so in one run a worker
would sit waiting for the engine's build. When CI builds the engine in the background beside the tier
(``.ci/run``), the other tests run meanwhile and the first engine test waits for that build
(``gpupools.sim.build.exclusive``) instead of building it a second time.
"""

from __future__ import annotations

import os
import shutil
from typing import Iterator

import pytest
from gpupools.sim import build as builds
from gpupools.sim import control_plane, engine_build

SESSION_CLUSTER = "pytest-session"
"""The state-directory name of the session's control plane (not a stack: stacks come and go on it);
each xdist worker's has its worker id appended."""


def session_cluster_name() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"{SESSION_CLUSTER}-{worker}" if worker else SESSION_CLUSTER


def needs_the_engine(item: pytest.Item) -> bool:
    return "engine_bin" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs the engine carries the ``engine`` marker (before ``-m`` selects) and runs
    after all the others (stable otherwise): see the module docstring."""
    for item in items:
        if needs_the_engine(item):
            item.add_marker(pytest.mark.engine)
    items.sort(key=needs_the_engine)


@pytest.fixture(scope="session")
def sim_build() -> builds.Build:
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the control-plane tier builds kube-apiserver and friends from Go modules")
    return builds.cached() or builds.build()


@pytest.fixture(scope="session")
def session_cluster(sim_build: builds.Build) -> Iterator[control_plane.ClusterState]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK: started once, stopped at the end."""
    state = control_plane.start(session_cluster_name(), sim_build)
    try:
        yield state
    finally:
        control_plane.stop(state)


@pytest.fixture(scope="session")
def engine_bin(sim_build: builds.Build) -> engine_build.EngineBuild:
    """The ``pulumi`` CLI and pulumi-kubernetes provider built from the pinned Go modules (cached)."""
    return engine_build.cached() or engine_build.build()
