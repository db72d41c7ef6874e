"""Pinned builds of the Pulumi engine the sim deploys with, cached per version.

``python -m gpupools.sim.engine_build`` builds, from the Go modules pinned in the checkout's ``sim/``:

* ``sim/engine``: the ``pulumi`` CLI (``github.com/pulumi/pulumi/pkg/v3/cmd/pulumi``) at the version
  its ``go.mod`` requires, stamped through ``-ldflags -X .../sdk/v3/go/common/version.Version`` (what
  pulumi's ``.goreleaser.yml`` sets). The Python Automation API asks the CLI for its version and
  refuses one older than its own minimum; the CLI may be newer than the ``pulumi`` Python SDK.
* ``sim/kubernetes``: the pulumi-kubernetes provider ``pulumi-resource-kubernetes``. Its ``main.go``
  embeds ``schema-embed.json`` and ``terraform-mapping-embed.json``, which upstream gitignores
  (``.gitignore`` of pulumi/pulumi-kubernetes) and so are absent from the module zip: the build
  copies the provider module out of the (read-only) module cache, writes both files from the
  committed ``schema.json`` (with ``version`` set, what ``cmd/pulumi-resource-kubernetes/generate.go``
  does) and ``terraform-mapping.json`` (minified), drops the module's ``replace .../sdk/v4 => ../sdk``
  (a path only its repository has) in favour of the ``sdk/v4`` version ``sim/kubernetes/go.mod``
  pins, and builds there. The version is stamped with ``-X .../provider/v4/pkg/version.Version``.
* ``pulumi-resource-pulumi-python``: the shell shim the engine starts for Python dynamic providers
  (the access gate is one), copied from the ``sdk/v3`` module zip's ``python/dist/``.

The output goes to ``<cache>/sim/engine/<pulumi version>-<key>/bin``; ``<key>`` hashes the Go
version, the platform, ``RECIPE`` and both modules' ``go.mod``/``go.sum``. A directory with its
``build.json`` written is complete. The seconds each step took are recorded there.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence

from gpupools.sim import build as builds
from gpupools.sim import layout

RECIPE = "1"
"""Bump when the build commands or ldflags change."""

ENGINE_MODULE_DIR = "engine"
PROVIDER_MODULE_DIR = "kubernetes"
MODULE_DIRS = (ENGINE_MODULE_DIR, PROVIDER_MODULE_DIR)

PULUMI_PKG = "github.com/pulumi/pulumi/pkg/v3"
PULUMI_SDK = "github.com/pulumi/pulumi/sdk/v3"
PROVIDER = "github.com/pulumi/pulumi-kubernetes/provider/v4"
PROVIDER_SDK = "github.com/pulumi/pulumi-kubernetes/sdk/v4"

PROVIDER_VERSION = "4.25.0"
"""The release the pinned provider pseudo-version is: ``v4.0.0-20260115033456-f47bc2d6f199`` is the
commit tagged ``v4.25.0`` (the provider's module path has no ``provider/v4.25.0`` tag, so the proxy
serves it as a pseudo-version). The Python ``pulumi-kubernetes`` SDK of the environment may be newer:
the engine uses the provider binary found on PATH whatever version the SDK asks for."""

DYNAMIC_SHIM = "pulumi-resource-pulumi-python"


@dataclass(frozen=True)
class EngineBuild(builds.CachedBuild):
    """The engine's build: ``pulumi``, ``pulumi-resource-kubernetes`` and the dynamic-provider shim in ``bin``."""

    @property
    def pulumi_version(self) -> str:
        return self.versions[PULUMI_PKG].removeprefix("v")


def required_versions(module_root: Path) -> dict[str, str]:
    engine = builds.module_requirements(module_root / ENGINE_MODULE_DIR)
    provider = builds.module_requirements(module_root / PROVIDER_MODULE_DIR)
    return {
        PULUMI_PKG: engine[PULUMI_PKG],
        PULUMI_SDK: engine[PULUMI_SDK],
        PROVIDER: provider[PROVIDER],
        PROVIDER_SDK: provider[PROVIDER_SDK],
        "pulumi-kubernetes": PROVIDER_VERSION,
    }


def cache_key(module_root: Path, go: str) -> str:
    digest = hashlib.sha256(f"{go}\n{sys.platform}\n{platform.machine()}\nrecipe {RECIPE}\n".encode())
    for name in MODULE_DIRS:
        for file in ("go.mod", "go.sum"):
            text = builds.keyed_text(module_root / name / file)
            digest.update(f"{name}/{file}\n{text}".encode())
    return digest.hexdigest()[:12]


def build_dir(module_root: Path | None = None, go: str | None = None) -> Path:
    module_root = module_root or layout.module_root()
    go = go or builds.go_version()
    version = required_versions(module_root)[PULUMI_PKG]
    return layout.cache_root() / "sim" / "engine" / f"{version}-{cache_key(module_root, go)}"


def cached(module_root: Path | None = None) -> EngineBuild | None:
    root = build_dir(module_root)
    versions = builds.recorded_versions(root)
    return None if versions is None else EngineBuild(root=root, versions=versions)


def embed_files(command_dir: Path, version: str) -> None:
    """``schema-embed.json`` (``schema.json`` with ``version``) and ``terraform-mapping-embed.json``
    (minified), as the provider's ``generate.go`` writes them."""
    schema = json.loads((command_dir / "schema.json").read_text())
    schema["version"] = version
    (command_dir / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((command_dir / "terraform-mapping.json").read_text())
    (command_dir / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


def provider_source(module_root: Path, target: Path, sdk_version: str) -> Path:
    """A writable copy of the pinned provider module with the generated files and the sdk pin."""
    source = builds.module_dir(module_root / PROVIDER_MODULE_DIR, PROVIDER)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    embed_files(target / "cmd" / "pulumi-resource-kubernetes", PROVIDER_VERSION)
    edit = [builds.go_binary(), "mod", "edit", f"-dropreplace={PROVIDER_SDK}", f"-require={PROVIDER_SDK}@{sdk_version}"]
    result = subprocess.run(edit, cwd=target, env=builds.go_env(), capture_output=True, text=True)
    if result.returncode != 0:
        raise builds.BuildError(f"go mod edit in the provider copy failed: {result.stderr.strip()}")
    return target


def build(module_root: Path | None = None, *, out: IO[str] = sys.stdout, force: bool = False) -> EngineBuild:
    """Build (or find) ``pulumi``, ``pulumi-resource-kubernetes`` and the dynamic-provider shim."""
    module_root = module_root or layout.module_root()
    go = builds.go_version()
    root = build_dir(module_root, go)
    return builds.once(
        "build-engine",
        root,
        force,
        out,
        lambda versions: EngineBuild(root=root, versions=versions),
        lambda: _build(module_root, go, root, out),
    )


def _build(module_root: Path, go: str, root: Path, out: IO[str]) -> EngineBuild:
    versions = required_versions(module_root)
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    log_path = staging / "build.log"
    out.write(
        f"[build-engine] {go}: building the pulumi CLI {versions[PULUMI_PKG]} and pulumi-kubernetes {PROVIDER_VERSION} "
        f"into {root}; the first build compiles about 1,500 packages; its log is {log_path}\n"
    )
    out.flush()
    started = time.monotonic()
    cli_version = versions[PULUMI_PKG]
    seconds = {
        "pulumi": builds.go_build(
            "pulumi",
            module_root / ENGINE_MODULE_DIR,
            staging / "bin" / "pulumi",
            [f"{PULUMI_PKG}/cmd/pulumi"],
            f"-s -w -X {PULUMI_SDK}/go/common/version.Version={cli_version}",
            log_path,
            out,
        )
    }
    source = provider_source(module_root, staging / "provider-src", versions[PROVIDER_SDK])
    seconds["pulumi-resource-kubernetes"] = builds.go_build(
        "pulumi-resource-kubernetes",
        source,
        staging / "bin" / "pulumi-resource-kubernetes",
        ["./cmd/pulumi-resource-kubernetes"],
        f"-s -w -X {PROVIDER}/pkg/version.Version={PROVIDER_VERSION}",
        log_path,
        out,
    )
    shutil.rmtree(source)
    sdk = builds.module_dir(module_root / ENGINE_MODULE_DIR, PULUMI_SDK)
    shim = staging / "bin" / DYNAMIC_SHIM
    shutil.copyfile(sdk / "python" / "dist" / DYNAMIC_SHIM, shim)
    shim.chmod(0o755)
    builds.finish_build("build-engine", staging, root, {"go": go, "versions": versions}, seconds, started, out)
    return EngineBuild(root=root, versions=versions)


def main(argv: Sequence[str] | None = None) -> int:
    return builds.build_main(
        "python -m gpupools.sim.engine_build",
        "Build the pulumi CLI and the pulumi-kubernetes provider from the Go modules pinned in sim/engine and "
        "sim/kubernetes, cached per version (GPUPOOLS_CACHE, default ~/.cache/gpupools).",
        argv,
        build_dir,
        build,
    )


if __name__ == "__main__":
    sys.exit(main())
