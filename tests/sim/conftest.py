"""The control-plane tier: one real local control plane for the whole pytest session.

Run with ``scripts/test-sim`` (it builds the pinned binaries first, cached). These tests carry the
``sim`` marker and are deselected from the fast suite (``pyproject.toml`` ``addopts``). Without Go
on PATH they are skipped with that reason; with Go and no cached build, the session builds first.
"""

from __future__ import annotations

import shutil
from typing import Iterator

import pytest
from gpupools.sim import build as builds
from gpupools.sim import control_plane, engine_build

SESSION_CLUSTER = "pytest-session"
"""The state-directory name of the session's control plane (not a stack: stacks come and go on it)."""


@pytest.fixture(scope="session")
def sim_build() -> builds.Build:
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the control-plane tier builds kube-apiserver and friends from Go modules")
    return builds.cached() or builds.build()


@pytest.fixture(scope="session")
def session_cluster(sim_build: builds.Build) -> Iterator[control_plane.ClusterState]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK: started once, stopped at the end."""
    state = control_plane.start(SESSION_CLUSTER, sim_build)
    try:
        yield state
    finally:
        control_plane.stop(state)


@pytest.fixture(scope="session")
def engine_bin(sim_build: builds.Build) -> engine_build.EngineBuild:
    """The ``pulumi`` CLI and pulumi-kubernetes provider built from the pinned Go modules (cached)."""
    return engine_build.cached() or engine_build.build()
