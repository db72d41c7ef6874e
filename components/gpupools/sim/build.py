"""Pinned builds of the sim's binaries from the Go module proxy, cached per version.

``python -m gpupools.sim.build`` (``scripts/build-sim``) builds, from the Go modules pinned in the
checkout's ``sim/`` directory (one ``go.mod`` + ``go.sum`` per module, the only place versions are
written):

* ``sim/etcd``: ``etcd`` (go.etcd.io/etcd/server/v3);
* ``sim/cp``: ``kube-apiserver``, ``kube-controller-manager``, ``kube-scheduler`` (k8s.io/kubernetes,
  with every staging module replaced by its published v0.X.Y) and ``kwok``, the KWOK controller
  (sigs.k8s.io/kwok);
* ``sim/kueue``: ``kueue``, Kueue's manager (sigs.k8s.io/kueue ``cmd/kueue``; k8s.io/* 0.36 and
  controller-runtime 0.24, its own module graph);
* ``sim/karpenter``: ``karpenter-kwok``, Karpenter's core with its KWOK cloud provider
  (sigs.k8s.io/karpenter ``kwok``; k8s.io/* 0.35 and controller-runtime 0.23, so a module of its own);
* ``sim/crds``: no binary; the CustomResourceDefinitions the example stacks need, copied from the
  module zips, and KWOK's node and pod stages from the kwok module.

Every binary is built with ``CGO_ENABLED=0 go build -p 2 -trimpath`` and stamped with its version
through ``-ldflags -X`` (the variables Kubernetes' own ``hack/lib/version.sh`` and KWOK's
``hack/releases.sh`` set), so ``/version`` answers ``v1.36.3``, not ``v0.0.0-master``.

The output goes to ``<cache>/sim/<kubernetes version>-<key>/`` with ``<cache>`` the ``GPUPOOLS_CACHE``
environment variable or ``~/.cache/gpupools``; ``<key>`` hashes the Go version, the platform, every
``go.mod``/``go.sum`` of ``sim/`` and ``RECIPE`` (the flags below). A directory with its ``build.json``
written is complete: a second run returns at once. Progress lines come at least every
``PROGRESS_SECONDS`` while ``go build`` runs (packages compiled so far, elapsed time).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Sequence, TypeVar

from gpupools import _cli
from gpupools.sim import layout

RECIPE = "3"
"""Bump when the build commands or ldflags change, so every cache key changes with them."""

PROGRESS_SECONDS = 15.0
"""At most this long between two progress lines while a build runs."""

PARALLEL = "2"
"""``go build -p``: the machines this runs on have two cores, shared."""

KUBE_MODULE_DIR = "cp"
ETCD_MODULE_DIR = "etcd"
CRD_MODULE_DIR = "crds"
KUEUE_MODULE_DIR = "kueue"
KARPENTER_MODULE_DIR = "karpenter"
MODULE_DIRS = (ETCD_MODULE_DIR, KUBE_MODULE_DIR, CRD_MODULE_DIR, KUEUE_MODULE_DIR, KARPENTER_MODULE_DIR)

KUBE_BINARIES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kwok": "sigs.k8s.io/kwok/cmd/kwok",
}
"""Binary name -> main package, all from the ``sim/cp`` module (one module graph, one build)."""

ETCD_PACKAGE = "go.etcd.io/etcd/server/v3"
KUEUE_MODULE = "sigs.k8s.io/kueue"
KUEUE_PACKAGE = "sigs.k8s.io/kueue/cmd/kueue"
KARPENTER_MODULE = "sigs.k8s.io/karpenter"
KARPENTER_PACKAGE = "sigs.k8s.io/karpenter/kwok"
BINARIES = ("etcd", *KUBE_BINARIES, "kueue", "karpenter-kwok")

CONTROLLER_FILES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "karpenter": (
        KARPENTER_MODULE_DIR,
        KARPENTER_MODULE,
        ("kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",),
    ),
}
"""Controller -> (module directory, module, files) copied from the module zip the binary is built
from into ``controllers/<controller>/``: the CRD of the node class Karpenter's KWOK provider resolves
(``KWOKNodeClass``). Kueue's webhook configurations come from its rendered chart (``gpupools.sim.kueue``)."""

CRD_FILES: dict[str, tuple[str, ...]] = {
    "sigs.k8s.io/kueue": tuple(
        f"config/components/crd/bases/kueue.x-k8s.io_{plural}.yaml"
        for plural in (
            "admissionchecks",
            "clusterqueues",
            "cohorts",
            "localqueues",
            "multikueueclusters",
            "multikueueconfigs",
            "provisioningrequestconfigs",
            "resourceflavors",
            "topologies",
            "workloadpriorityclasses",
            "workloads",
        )
    ),
    "github.com/aws/karpenter-provider-aws": tuple(
        f"pkg/apis/crds/{name}.yaml"
        for name in (
            "karpenter.sh_nodepools",
            "karpenter.sh_nodeclaims",
            "karpenter.sh_nodeoverlays",
            "karpenter.k8s.aws_ec2nodeclasses",
        )
    ),
    "github.com/Azure/karpenter-provider-azure": tuple(
        f"pkg/apis/crds/{name}.yaml"
        for name in (
            "karpenter.sh_nodepools",
            "karpenter.sh_nodeclaims",
            "karpenter.sh_nodeoverlays",
            "karpenter.azure.com_aksnodeclasses",
        )
    ),
    "github.com/prometheus-operator/prometheus-operator": (
        "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
    ),
    "k8s.io/autoscaler/cluster-autoscaler/apis": ("config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",),
}
"""Module -> CRD files copied out of its zip (at the version ``sim/crds/go.mod`` pins) into
``crds/<module directory name>/``: a module's files stay together because the AWS and Azure Karpenter
providers each ship their own ``karpenter.sh_nodepools.yaml``."""

KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
"""KWOK's own stages, as ``kwokctl`` configures its controller by default (``node-fast``,
``node-heartbeat-with-lease``, ``pod-fast``): nodes become Ready and keep a lease, bound pods become
Running, Job pods complete, deleted pods go away."""


class BuildError(RuntimeError):
    """A build step failed; the message names the step and ends with the tool's own output."""


@dataclass(frozen=True)
class CachedBuild:
    """A complete cached build: its directory and the module versions that went into it."""

    root: Path
    versions: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.root / "bin"


def recorded_versions(root: Path) -> dict[str, str] | None:
    """The module versions a complete build in ``root`` recorded (its ``build.json``, written last by
    ``finish_build``), or ``None`` when ``root`` holds no complete build."""
    record = root / "build.json"
    if not record.exists():
        return None
    return dict(json.loads(record.read_text())["versions"])


@dataclass(frozen=True)
class Build(CachedBuild):
    """The sim's control-plane build: where its files are and what went into it."""

    @property
    def crds(self) -> Path:
        return self.root / "crds"

    @property
    def stages(self) -> Path:
        return self.root / "kwok-stages.yaml"

    @property
    def controllers(self) -> Path:
        return self.root / "controllers"

    def binary(self, name: str) -> Path:
        return self.bin / name

    @property
    def kubernetes_version(self) -> str:
        return self.versions["k8s.io/kubernetes"]


T = TypeVar("T")


@contextlib.contextmanager
def exclusive(root: Path, label: str, out: IO[str]) -> Iterator[None]:
    """Hold ``<root>.lock`` (``flock``) for the duration: one build of a directory at a time.

    A second process that asks for the same build (CI starting a build in the background while a
    test session's fixture asks for it; two pytest workers) waits here, saying so every
    ``PROGRESS_SECONDS``, instead of building the same directory twice and removing the other's
    ``.partial`` under it. The lock is the kernel's: it goes with the process that held it, so a
    build killed half-way leaves nothing to clean up."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with (root.parent / (root.name + ".lock")).open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            started = time.monotonic()
            out.write(f"[{label}] another process is building {root}; waiting for it (its log: {root}.partial/build.log)\n")
            out.flush()
            said = started
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(1)
                if time.monotonic() - said >= PROGRESS_SECONDS:
                    said = time.monotonic()
                    out.write(f"[{label}] still waiting for the other build of {root.name}, {int(said - started)}s\n")
                    out.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def once(label: str, root: Path, force: bool, out: IO[str], found: Callable[[dict[str, str]], T], make: Callable[[], T]) -> T:
    """The build in ``root``: ``found(versions)`` when a complete one is there (``build.json``), else
    ``make()`` under ``exclusive`` (checking again once the lock is held: the process it waited for
    may have finished the same build). ``force`` makes anew whatever is there."""
    recorded = recorded_versions(root)
    if recorded is None or force:
        with exclusive(root, label, out):
            recorded = recorded_versions(root)
            if recorded is None or force:
                return make()
    out.write(f"[{label}] cached: {root}\n")
    out.flush()
    return found(recorded)


def go_env() -> dict[str, str]:
    """The environment every ``go`` command runs with: static binaries, the pinned toolchain only
    (``GOTOOLCHAIN=local``: never download another Go), modules resolved from go.mod/go.sum."""
    env = dict(os.environ)
    env.update({"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"})
    return env


def go_binary() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH): the sim builds its control plane from Go modules")
    return go


def go_version() -> str:
    result = subprocess.run([go_binary(), "env", "GOVERSION"], capture_output=True, text=True, env=go_env(), check=True)
    return result.stdout.strip()


def module_requirements(module: Path) -> dict[str, str]:
    """``module path -> version`` of every ``require`` line of one ``go.mod`` (direct and indirect)."""
    versions: dict[str, str] = {}
    in_block = False
    for raw in (module / "go.mod").read_text().splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("require ("):
            in_block = True
        elif in_block and line == ")":
            in_block = False
        elif in_block or line.startswith("require "):
            fields = line.removeprefix("require ").split()
            if len(fields) == 2:
                versions[fields[0]] = fields[1]
    return versions


def required_versions(module_root: Path) -> dict[str, str]:
    """The pinned version of what the sim builds or reads: etcd from ``sim/etcd``, Kubernetes and
    KWOK from ``sim/cp``, the CRD sources from ``sim/crds`` (each from the module that uses it: the
    Kubernetes module also requires an older etcd server, as a library, which is not the one built)."""
    pins = {
        ETCD_MODULE_DIR: (ETCD_PACKAGE,),
        KUBE_MODULE_DIR: ("k8s.io/kubernetes", "sigs.k8s.io/kwok"),
        CRD_MODULE_DIR: tuple(CRD_FILES),
        KUEUE_MODULE_DIR: (KUEUE_MODULE,),
        KARPENTER_MODULE_DIR: (KARPENTER_MODULE,),
    }
    versions = {}
    for directory, paths in pins.items():
        requirements = module_requirements(module_root / directory)
        for path in paths:
            versions[path] = requirements[path]
    return versions


def keyed_text(path: Path) -> str:
    """What of a ``go.mod`` or ``go.sum`` goes into a cache key: a ``go.sum`` whole, a ``go.mod`` without
    its comments (the notes on why each pin change nothing that is built); empty when absent."""
    text = path.read_text() if path.exists() else ""
    if path.name != "go.mod":
        return text
    return "\n".join(line.split("//", 1)[0].rstrip() for line in text.splitlines() if line.split("//", 1)[0].strip())


def cache_key(module_root: Path, go: str) -> str:
    """A hash of everything that changes the output: Go version, platform, recipe, module files
    (``go.mod`` without its comments)."""
    digest = hashlib.sha256()
    digest.update(f"{go}\n{sys.platform}\n{platform.machine()}\nrecipe {RECIPE}\n".encode())
    for name in MODULE_DIRS:
        for file in ("go.mod", "go.sum"):
            path = module_root / name / file
            digest.update(f"{name}/{file}\n".encode())
            text = keyed_text(path)
            digest.update(text.encode())
    return digest.hexdigest()[:12]


def build_dir(module_root: Path | None = None, go: str | None = None) -> Path:
    """``<cache>/sim/<kubernetes version>-<key>`` for the pinned modules (whether built or not)."""
    module_root = module_root or layout.module_root()
    go = go or go_version()
    kube = required_versions(module_root).get("k8s.io/kubernetes", "unknown")
    return layout.cache_root() / "sim" / f"{kube}-{cache_key(module_root, go)}"


def cached(module_root: Path | None = None) -> Build | None:
    """The complete build for the pinned versions, or None when it has not been built yet."""
    root = build_dir(module_root)
    versions = recorded_versions(root)
    return None if versions is None else Build(root=root, versions=versions)


def ldflags_kubernetes(version: str) -> str:
    """``-X`` flags for component-base and client-go's version variables (what
    kubernetes ``hack/lib/version.sh`` ``kube::version::ldflags`` sets), with ``-s -w`` (no symbol
    tables: a third of the size)."""
    major, minor = version.removeprefix("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion={version}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


def ldflags_kwok(version: str, kube_version: str) -> str:
    """``-X`` flags of KWOK's ``hack/releases.sh``: its own version and the Kubernetes version it reports."""
    return f"-X sigs.k8s.io/kwok/pkg/consts.Version={version.removeprefix('v')} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion={kube_version.removeprefix('v')}"


KARPENTER_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
"""The label that names a reserved offering's capacity reservation: what karpenter-provider-aws v1.14.1
sets ``cloudprovider.ReservationIDLabel`` to in its ``init`` (``pkg/apis/v1/doc.go``,
``LabelCapacityReservationID`` in ``pkg/apis/v1/labels.go``). Karpenter's core keys its reservations
by this label (sigs.k8s.io/karpenter v1.14.1 ``pkg/cloudprovider/types.go``, ``Offering.ReservationID``;
``pkg/controllers/provisioning/scheduling/reservationmanager.go``) and its KWOK provider leaves it
empty, so a reserved offering there has no stable ID (a random one per call: the reservation manager
then panics on an ID it never counted). The sim's Karpenter gets the AWS provider's label
(``gpupools.sim.karpenter``: reserved offerings of an EKS pool's reservations)."""


def ldflags_controllers(kueue: str, karpenter: str) -> tuple[str, str]:
    """``-X`` flags of Kueue's Makefile (``pkg/version.GitVersion``) and Karpenter's
    (``pkg/operator.Version``), so each reports the pinned version in its logs and metrics; and for
    Karpenter the AWS provider's reservation-ID label (``KARPENTER_RESERVATION_ID_LABEL``: a package
    variable with no initializer, which ``-X`` may set)."""
    return (
        f"-s -w -X {KUEUE_MODULE}/pkg/version.GitVersion={kueue}",
        f"-s -w -X {KARPENTER_MODULE}/pkg/operator.Version={karpenter} "
        f"-X {KARPENTER_MODULE}/pkg/cloudprovider.ReservationIDLabel={KARPENTER_RESERVATION_ID_LABEL}",
    )


def copy_controller_files(module_root: Path, target: Path) -> list[Path]:
    """Copy ``CONTROLLER_FILES`` out of the module zips into ``target/<controller>/``."""
    copied = []
    for controller, (directory, path, files) in CONTROLLER_FILES.items():
        source = module_dir(module_root / directory, path)
        destination = target / controller
        destination.mkdir(parents=True, exist_ok=True)
        for file in files:
            copied.append(Path(shutil.copyfile(source / file, destination / Path(file).name)))
    return copied


def _progress(label: str, stream: IO[str], log: IO[str], out: IO[str]) -> None:
    """Copy ``go build -v`` output to ``log`` and print a summary line at least every PROGRESS_SECONDS."""
    started = time.monotonic()
    lines = 0
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(PROGRESS_SECONDS):
            out.write(
                f"[build-sim] {label}: {lines} packages compiled so far (Go's build cache supplies the rest), {int(time.monotonic() - started)}s\n"
            )
            out.flush()

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        for line in stream:
            lines += 1
            log.write(line)
    finally:
        done.set()
        beat.join()


def go_build(
    label: str, module: Path, output: Path, packages: Sequence[str], ldflags: str, log_path: Path, out: IO[str]
) -> float:
    """Run one ``go build`` in ``module``; returns the seconds it took. Raises BuildError with the
    tail of its output when it fails."""
    command = [go_binary(), "build", "-v", "-p", PARALLEL, "-trimpath", "-ldflags", ldflags, "-o", str(output), *packages]
    out.write(f"[build-sim] {label}: go build {' '.join(packages)}\n")
    out.flush()
    started = time.monotonic()
    with log_path.open("a") as log:
        log.write(f"$ {' '.join(command)}\n")
        process = subprocess.Popen(command, cwd=module, env=go_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert process.stdout is not None
        _progress(label, process.stdout, log, out)
        status = process.wait()
    seconds = time.monotonic() - started
    if status != 0:
        tail = "\n".join(log_path.read_text().splitlines()[-30:])
        raise BuildError(f"{label}: go build failed (exit {status}); the end of {log_path}:\n{tail}")
    out.write(f"[build-sim] {label}: built in {seconds:.0f}s\n")
    out.flush()
    return seconds


def module_dir(module: Path, path: str) -> Path:
    """Where ``go mod download`` put ``path`` at the version ``module``'s go.mod requires (checked against go.sum)."""
    result = subprocess.run(
        [go_binary(), "mod", "download", "-json", path], cwd=module, env=go_env(), capture_output=True, text=True
    )
    data = json.loads(result.stdout or "{}")
    if result.returncode != 0 or "Error" in data or "Dir" not in data:
        raise BuildError(f"go mod download {path} (in {module.name}/) failed: {data.get('Error') or result.stderr.strip()}")
    return Path(data["Dir"])


def copy_crds(module_root: Path, target: Path) -> list[Path]:
    """Copy ``CRD_FILES`` out of the module zips into ``target/<module's last path element>/``."""
    copied = []
    for path, files in CRD_FILES.items():
        source = module_dir(module_root / CRD_MODULE_DIR, path)
        destination = target / path.rsplit("/", 1)[-1]
        destination.mkdir(parents=True, exist_ok=True)
        for file in files:
            copied.append(Path(shutil.copyfile(source / file, destination / Path(file).name)))
    return copied


def write_stages(module_root: Path, target: Path) -> None:
    """Concatenate KWOK's stages (from the kwok module the build uses) into one config file."""
    source = module_dir(module_root / KUBE_MODULE_DIR, "sigs.k8s.io/kwok")
    documents = [(source / stage).read_text().strip() for stage in KWOK_STAGES]
    target.write_text("---\n" + "\n---\n".join(documents) + "\n")


def build(module_root: Path | None = None, *, out: IO[str] = sys.stdout, force: bool = False) -> Build:
    """Build (or find) the pinned binaries; returns the complete build. See the module docstring."""
    module_root = module_root or layout.module_root()
    go = go_version()
    root = build_dir(module_root, go)
    return once(
        "build-sim",
        root,
        force,
        out,
        lambda versions: Build(root=root, versions=versions),
        lambda: _build(module_root, go, root, out),
    )


def _build(module_root: Path, go: str, root: Path, out: IO[str]) -> Build:
    versions = required_versions(module_root)
    kube = versions["k8s.io/kubernetes"]
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    log_path = staging / "build.log"
    out.write(
        f"[build-sim] {go}: building Kubernetes {kube}, etcd {versions[ETCD_PACKAGE]}, KWOK {versions['sigs.k8s.io/kwok']}, "
        f"Kueue {versions[KUEUE_MODULE]}, Karpenter {versions[KARPENTER_MODULE]} into {root}\n"
    )
    out.write(
        f"[build-sim] the first build compiles about 2,500 packages (tens of minutes on two cores); its log is {log_path}\n"
    )
    out.flush()
    started = time.monotonic()
    seconds = {
        "etcd": go_build("etcd", module_root / ETCD_MODULE_DIR, staging / "bin" / "etcd", [ETCD_PACKAGE], "-s -w", log_path, out),
        "kubernetes": go_build(
            "kube-apiserver, kube-controller-manager, kube-scheduler, kwok",
            module_root / KUBE_MODULE_DIR,
            staging / "bin",
            list(KUBE_BINARIES.values()),
            ldflags_kubernetes(kube) + " " + ldflags_kwok(versions["sigs.k8s.io/kwok"], kube),
            log_path,
            out,
        ),
    }
    kueue_flags, karpenter_flags = ldflags_controllers(versions[KUEUE_MODULE], versions[KARPENTER_MODULE])
    seconds["kueue"] = go_build(
        "kueue", module_root / KUEUE_MODULE_DIR, staging / "bin" / "kueue", [KUEUE_PACKAGE], kueue_flags, log_path, out
    )
    seconds["karpenter"] = go_build(
        "karpenter (KWOK provider)",
        module_root / KARPENTER_MODULE_DIR,
        staging / "bin" / "karpenter-kwok",
        [KARPENTER_PACKAGE],
        karpenter_flags,
        log_path,
        out,
    )
    copy_controller_files(module_root, staging / "controllers")
    copy_crds(module_root, staging / "crds")
    write_stages(module_root, staging / "kwok-stages.yaml")
    finish_build("build-sim", staging, root, {"go": go, "versions": versions}, seconds, started, out)
    return Build(root=root, versions=versions)


def finish_build(
    label: str, staging: Path, root: Path, record: dict[str, Any], seconds: dict[str, float], started: float, out: IO[str]
) -> None:
    """End a build: write ``build.json`` into ``staging`` (``record``, the Go version and the module
    versions, plus the seconds of each step and the total), put ``staging`` in ``root``'s place (an
    older build there is removed first: a build is complete or absent, never half-written) and say
    where the binaries are."""
    total = time.monotonic() - started
    rounded = {**{step: round(value) for step, value in seconds.items()}, "total": round(total)}
    (staging / "build.json").write_text(json.dumps({**record, "seconds": rounded}, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    out.write(f"[{label}] done in {total:.0f}s: {root / 'bin'}\n")
    out.flush()


def build_main(
    prog: str, description: str, argv: Sequence[str] | None, build_dir: Callable[[], Path], build: Callable[..., object]
) -> int:
    """The command line of a cached build (``--force``, ``--print-dir``); exit status 1 on a ``BuildError``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--force", action="store_true", help="rebuild even when the cached build exists")
    parser.add_argument("--print-dir", action="store_true", help="print the build directory for the pinned versions and exit")
    args = _cli.parse_args(parser, argv)
    try:
        if args.print_dir:
            print(build_dir())
            return 0
        build(force=args.force)
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(
        "python -m gpupools.sim.build",
        "Build the sim's etcd, Kubernetes control plane, KWOK controller, Kueue and Karpenter (KWOK provider) from the Go "
        "modules pinned in sim/, cached per version (GPUPOOLS_CACHE, default ~/.cache/gpupools).",
        argv,
        build_dir,
        build,
    )


if __name__ == "__main__":
    sys.exit(main())
