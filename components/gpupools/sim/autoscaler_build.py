"""Pinned build of cluster-autoscaler (its KWOK cloud provider) and Helm for the sim, cached per version.

``python -m gpupools.sim.autoscaler_build`` (``scripts/build-autoscaler``) builds, from the module
graph ``sim/autoscaler/go.mod`` pins:

* ``cluster-autoscaler``: ``k8s.io/autoscaler/cluster-autoscaler`` at the pseudo-version of the commit
  of upstream tag ``cluster-autoscaler-1.36.1``, with the ``kwok`` build tag, which compiles only the
  KWOK cloud provider (``cloudprovider/router/router_kwok.go`` in that source); the version stamped as
  upstream's Makefile does (``-X .../version.ClusterAutoscalerVersion``);
* ``helm``: Helm v4.2.4 (``helm.sh/helm/v4/cmd/helm``), which renders the stack's charts
  (``gpupools.sim.charts``). It is in the same module graph because it agrees with
  cluster-autoscaler on the libraries they share (k8s.io/* 0.36, golang.org/x/net 0.56): Go compiles
  those packages once for both.

It also keeps the cluster-autoscaler chart (``charts/``): chart 9.59.0, the version
``gpupools.versions`` pins, from the file ``--chart FILE`` or ``GPUPOOLS_CLUSTER_AUTOSCALER_CHART`` names
(a ``git archive`` of kubernetes/autoscaler ``charts/cluster-autoscaler`` at the commit that set
``version: 9.59.0``, b70816209e5a), checked against ``CHART_SHA256``: the chart repository is not
reachable from every machine, and the project holds no upstream chart.

Where the source comes from, in order:

1. **The Go module proxy**, when it serves the module at the pin (``go mod download``).
2. **An extract of the same tag** (a ``git archive`` of the repository's ``cluster-autoscaler/``
   directory under the prefix ``cluster-autoscaler-1.36.1/``), named by ``--source FILE`` or
   ``GPUPOOLS_CLUSTER_AUTOSCALER_SOURCE``. Some module proxies answer 403 for this module (every
   version); its sha256 must equal ``SOURCE_SHA256`` or the build stops. The extract is unpacked into
   the build's staging directory, and a temporary copy of ``sim/autoscaler/go.mod`` replaces the
   module and its ``apis`` module with the unpacked directories; every other dependency still comes
   from the module proxy, checked against ``sim/autoscaler/go.sum``.

The project holds no upstream source: the extract is an input named at build time. Which source was
used is printed and recorded in ``build.json`` (``source``).

The output goes to ``<cache>/sim/autoscaler/<version>-<key>/bin/cluster-autoscaler``; ``<key>`` hashes
the Go version, the platform, ``RECIPE`` and ``sim/autoscaler``'s ``go.mod``/``go.sum``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence

from gpupools import _cli
from gpupools.sim import build as builds
from gpupools.sim import layout
from gpupools.versions import CLUSTER_AUTOSCALER_CHART_VERSION

RECIPE = "2"
"""Bump when the build command or ldflags change."""

MODULE_DIR = "autoscaler"
MODULE = "k8s.io/autoscaler/cluster-autoscaler"
APIS_MODULE = f"{MODULE}/apis"
BUILD_TAGS = "kwok"
UPSTREAM_TAG = "cluster-autoscaler-1.36.1"
VERSION = "1.36.1"
"""What the binary reports (upstream's Makefile stamps the tag's version the same way)."""

SOURCE_ENV = "GPUPOOLS_CLUSTER_AUTOSCALER_SOURCE"
SOURCE_SHA256 = "1e7d5ff1ecdbb82d54a1124a8d0b89f066bc8c739cff21211ca81460dd50a537"
"""sha256 of the ``git archive`` extract of tag ``cluster-autoscaler-1.36.1`` (commit 35e8a280425c)."""
SOURCE_PREFIX = f"{UPSTREAM_TAG}/"
BINARY = "cluster-autoscaler"

HELM_MODULE = "helm.sh/helm/v4"
HELM_PACKAGE = f"{HELM_MODULE}/cmd/helm"

CHART_ENV = "GPUPOOLS_CLUSTER_AUTOSCALER_CHART"
CHART_SHA256 = "2159e38bdfc6d3799eb9c414be7ac02b959de5b6743ded5e289e29dc78bd900d"
"""sha256 of the chart 9.59.0 archive (``git archive`` of ``charts/cluster-autoscaler`` at b70816209e5a,
prefix ``cluster-autoscaler/``)."""
CHART_FILE = f"cluster-autoscaler-{CLUSTER_AUTOSCALER_CHART_VERSION}.tgz"


@dataclass(frozen=True)
class AutoscalerBuild(builds.CachedBuild):
    """cluster-autoscaler's build: ``bin/cluster-autoscaler`` and the versions (and source) it came from."""

    @property
    def binary(self) -> Path:
        return self.bin / BINARY

    @property
    def helm(self) -> Path:
        return self.bin / "helm"

    @property
    def chart(self) -> Path:
        """The cluster-autoscaler chart archive (``helm template`` reads it as it is)."""
        return self.root / "charts" / CHART_FILE


def pinned_version(module_root: Path) -> str:
    return builds.module_requirements(module_root / MODULE_DIR)[MODULE]


def cache_key(module_root: Path, go: str) -> str:
    digest = hashlib.sha256(f"{go}\n{sys.platform}\n{platform.machine()}\nrecipe {RECIPE}\n".encode())
    for file in ("go.mod", "go.sum"):
        text = builds.keyed_text(module_root / MODULE_DIR / file)
        digest.update(f"{file}\n{text}".encode())
    return digest.hexdigest()[:12]


def build_dir(module_root: Path | None = None, go: str | None = None) -> Path:
    module_root = module_root or layout.module_root()
    go = go or builds.go_version()
    return layout.cache_root() / "sim" / "autoscaler" / f"{VERSION}-{cache_key(module_root, go)}"


def cached(module_root: Path | None = None) -> AutoscalerBuild | None:
    root = build_dir(module_root)
    versions = builds.recorded_versions(root)
    return None if versions is None else AutoscalerBuild(root=root, versions=versions)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checked_chart(path: Path | None, target: Path) -> Path:
    """Copy the chart archive into ``target`` after checking it against ``CHART_SHA256``."""
    if path is None:
        raise builds.BuildError(
            f"the cluster-autoscaler chart {CLUSTER_AUTOSCALER_CHART_VERSION} is needed: pass its archive with --chart FILE "
            f"or {CHART_ENV}=FILE (sha256 {CHART_SHA256})"
        )
    if not path.is_file():
        raise builds.BuildError(f"cluster-autoscaler chart {path}: no such file")
    actual = sha256_of(path)
    if actual != CHART_SHA256:
        raise builds.BuildError(f"cluster-autoscaler chart {path}: sha256 {actual} is not the pinned {CHART_SHA256}")
    target.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(path, target / CHART_FILE))


def unpack_source(archive: Path, target: Path) -> Path:
    """Check ``archive`` against ``SOURCE_SHA256`` and unpack it into ``target``; returns the module
    directory. Raises BuildError on a checksum mismatch or a member outside ``SOURCE_PREFIX``."""
    if not archive.is_file():
        raise builds.BuildError(f"cluster-autoscaler source {archive}: no such file")
    actual = sha256_of(archive)
    if actual != SOURCE_SHA256:
        raise builds.BuildError(
            f"cluster-autoscaler source {archive}: sha256 {actual} is not the pinned {SOURCE_SHA256} "
            f"(a git archive of tag {UPSTREAM_TAG}'s cluster-autoscaler/ directory under the prefix {SOURCE_PREFIX})"
        )
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not member.name.startswith(SOURCE_PREFIX) and member.name.rstrip("/") != SOURCE_PREFIX.rstrip("/"):
                raise builds.BuildError(f"cluster-autoscaler source {archive}: member {member.name!r} is outside {SOURCE_PREFIX}")
        tar.extractall(target, filter="data")
    return target / SOURCE_PREFIX.rstrip("/")


def module_copy(module_root: Path, target: Path) -> Path:
    """A writable copy of ``sim/autoscaler`` (``go build -mod=mod`` may add go.sum lines; the checkout stays as it is)."""
    target.mkdir(parents=True, exist_ok=True)
    for file in ("go.mod", "go.sum"):
        shutil.copyfile(module_root / MODULE_DIR / file, target / file)
    return target


def proxy_serves(module: Path, version: str) -> tuple[bool, str]:
    """Whether ``go mod download`` gets the module at ``version``; with the proxy's answer when not."""
    result = subprocess.run(
        [builds.go_binary(), "mod", "download", "-json", f"{MODULE}@{version}"],
        cwd=module,
        env=builds.go_env(),
        capture_output=True,
        text=True,
    )
    if result.returncode == 0:
        return True, ""
    answer = next((line.strip() for line in result.stdout.splitlines() if '"Error"' in line), result.stderr.strip())
    return False, answer


def use_extract(module: Path, source_dir: Path) -> None:
    """Point the module copy's requirements at the unpacked directories (module and ``apis``)."""
    edit = [
        builds.go_binary(),
        "mod",
        "edit",
        f"-replace={MODULE}={source_dir}",
        f"-replace={APIS_MODULE}={source_dir / 'apis'}",
    ]
    result = subprocess.run(edit, cwd=module, env=builds.go_env(), capture_output=True, text=True)
    if result.returncode != 0:
        raise builds.BuildError(f"go mod edit in the autoscaler module copy failed: {result.stderr.strip()}")


def from_env(explicit: Path | None, variable: str) -> Path | None:
    """``explicit``, else the path the environment variable ``variable`` names, else None."""
    if explicit is not None:
        return explicit
    value = os.environ.get(variable, "").strip()
    return Path(value).expanduser() if value else None


def build(
    module_root: Path | None = None,
    *,
    out: IO[str] = sys.stdout,
    force: bool = False,
    source: Path | None = None,
    chart: Path | None = None,
) -> AutoscalerBuild:
    """Build (or find) cluster-autoscaler; see the module docstring for where its source comes from."""
    module_root = module_root or layout.module_root()
    go = builds.go_version()
    root = build_dir(module_root, go)
    return builds.once(
        "build-autoscaler",
        root,
        force,
        out,
        lambda versions: AutoscalerBuild(root=root, versions=versions),
        lambda: _build(module_root, go, root, out, source, chart),
    )


def _build(module_root: Path, go: str, root: Path, out: IO[str], source: Path | None, chart: Path | None) -> AutoscalerBuild:
    version = pinned_version(module_root)
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    checked_chart(from_env(chart, CHART_ENV), staging / "charts")
    module = module_copy(module_root, staging / "module")
    served, answer = proxy_serves(module, version)
    if served:
        origin = f"the Go module proxy ({MODULE}@{version})"
    else:
        archive = from_env(source, SOURCE_ENV)
        if archive is None:
            raise builds.BuildError(
                f"the Go module proxy does not serve {MODULE}@{version} ({answer}); pass an extract of tag {UPSTREAM_TAG} "
                f"with --source FILE or {SOURCE_ENV}=FILE (sha256 {SOURCE_SHA256})"
            )
        source_dir = unpack_source(archive, staging / "src")
        use_extract(module, source_dir)
        origin = f"the extract {archive} (sha256 checked; the module proxy does not serve {MODULE}@{version})"
    log_path = staging / "build.log"
    out.write(
        f"[build-autoscaler] {go}: building cluster-autoscaler {VERSION} ({version}, -tags {BUILD_TAGS}) from {origin} "
        f"and Helm {builds.module_requirements(module)[HELM_MODULE]} into {root}; the first build compiles about 1,800 "
        f"packages; its log is {log_path}\n"
    )
    out.flush()
    started = time.monotonic()
    seconds = {
        BINARY: builds.go_build(
            "cluster-autoscaler",
            module,
            staging / "bin" / BINARY,
            ["-tags", BUILD_TAGS, MODULE],
            f"-s -w -X {MODULE}/version.ClusterAutoscalerVersion={VERSION}",
            log_path,
            out,
        )
    }
    helm_version = builds.module_requirements(module)[HELM_MODULE]
    seconds["helm"] = builds.go_build(
        "helm",
        module,
        staging / "bin" / "helm",
        [HELM_PACKAGE],
        f"-s -w -X {HELM_MODULE}/internal/version.version={helm_version}",
        log_path,
        out,
    )
    shutil.rmtree(staging / "src", ignore_errors=True)
    shutil.rmtree(module)
    versions = {MODULE: version, "cluster-autoscaler": VERSION, HELM_MODULE: helm_version, "chart": CHART_FILE}
    builds.finish_build(
        "build-autoscaler", staging, root, {"go": go, "versions": versions, "source": origin}, seconds, started, out
    )
    return AutoscalerBuild(root=root, versions=versions)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.sim.autoscaler_build",
        description=f"Build cluster-autoscaler {VERSION} (KWOK cloud provider) from the Go module pinned in sim/autoscaler, "
        "cached per version (GPUPOOLS_CACHE, default ~/.cache/gpupools).",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when the cached build exists")
    parser.add_argument("--print-dir", action="store_true", help="print the build directory for the pinned version and exit")
    parser.add_argument(
        "--source",
        type=Path,
        help=f"an extract of tag {UPSTREAM_TAG} to build from when the module proxy does not serve the module "
        f"(default: ${SOURCE_ENV}); its sha256 must be {SOURCE_SHA256}",
    )
    parser.add_argument(
        "--chart",
        type=Path,
        help=f"the cluster-autoscaler chart {CLUSTER_AUTOSCALER_CHART_VERSION} archive (default: ${CHART_ENV}); "
        f"its sha256 must be {CHART_SHA256}",
    )
    args = _cli.parse_args(parser, argv)
    try:
        if args.print_dir:
            print(build_dir())
            return 0
        build(force=args.force, source=args.source, chart=args.chart)
    except builds.BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
