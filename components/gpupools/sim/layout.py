"""Where the sim keeps things: the pinned Go modules, the build cache, each stack's running cluster.

* ``module_root()``: the checkout's ``sim/`` directory (``go.mod``/``go.sum`` per module). The sim
  builds from a checkout of this repository; a wheel carries no Go module files.
* ``cache_root()``: ``$GPUPOOLS_CACHE``, else ``~/.cache/gpupools`` (``$XDG_CACHE_HOME/gpupools``
  when that is set). Builds go to ``<cache>/sim/<version>-<key>/``, never into the checkout.
* ``cluster_dir(stack)``: ``<cache>/sim/clusters/<stack>/`` (``$GPUPOOLS_SIM_STATE/<stack>/`` when
  that is set: tests keep their clusters apart from a user's): the running cluster's state (PIDs,
  ports, certificates, etcd data, logs, the default kubeconfig). ``down`` removes it.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "GPUPOOLS_CACHE"
"""Environment variable that moves the cache (builds and cluster state) elsewhere."""


def checkout_root() -> Path:
    """The repository this package runs from (``components/gpupools/sim`` three levels down)."""
    return Path(__file__).resolve().parents[3]


def module_root() -> Path:
    """The ``sim/`` directory with the pinned Go modules; FileNotFoundError outside a checkout."""
    root = checkout_root() / "sim"
    if not (root / "cp" / "go.mod").is_file():
        raise FileNotFoundError(f"no pinned Go modules at {root}: the sim builds from a checkout of the gpupools repository")
    return root


def cache_root() -> Path:
    """``$GPUPOOLS_CACHE``, else ``$XDG_CACHE_HOME/gpupools``, else ``~/.cache/gpupools``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "gpupools"


STATE_ENV = "GPUPOOLS_SIM_STATE"
"""Environment variable that moves the clusters' state directories (not the builds)."""


def clusters_root() -> Path:
    explicit = os.environ.get(STATE_ENV)
    return Path(explicit).expanduser() if explicit else cache_root() / "sim" / "clusters"


def cluster_dir(stack: str) -> Path:
    """The state directory of ``stack``'s sim cluster (it exists only while the cluster does)."""
    return clusters_root() / stack
