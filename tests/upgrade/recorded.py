"""Every resource a stack program registers, recorded for a released commit and for this checkout.

A released commit is exported with ``git archive`` into a temporary directory and its own program
runs there on its own recording runtime (``_dump_release.py`` in a subprocess: the two versions'
``gpupools`` packages cannot share one interpreter). This checkout's program runs in process, with
the aliases of every registration resolved to URNs the way the engine resolves them.

Both runs take the **released** stack file: an upgrade changes the library, not the user's config.

URNs are normalised to the engine's spelling: the recording runtime puts the root stack's type
into the type chain of a top-level resource (``pulumi:pulumi:Stack$gpupools:index:EksCluster``);
the engine never does (pulumi/pulumi ``sdk/go/common/resource/urn.go``, ``NewURN``: the parent
type is prefixed only for a parent that is not the root stack).
"""

from __future__ import annotations

import atexit
import functools
import json
import runpy
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from gpupools.testing import PROJECT_ROOT, RecordingMonitor, run_program

from tests.test_eks_lifecycle import alias_urns

RELEASES = {"0.2.0": "8b334214747202d74383ac84a3b3c9d282f05d99"}
"""Released versions and the commit whose code each is (CHANGELOG.md, "[0.3.0]": 0.2.0 was not
tagged; ``8b33421`` is the code its section describes)."""

PROJECT = "gpupools"
ROOT_TYPE_PREFIX = "pulumi:pulumi:Stack$"


@dataclass(frozen=True)
class Recorded:
    """One registration: what the engine keeps in state for it, and the aliases it offers."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    options: dict[str, Any]
    provider: str
    aliases: tuple[str, ...] = field(default=())

    @property
    def protected(self) -> bool:
        return bool(self.options.get("protect"))

    @property
    def retained(self) -> bool:
        return bool(self.options.get("retainOnDelete"))


def normalise(urn: str) -> str:
    """The engine's spelling of a recorded URN (module docstring); provider references keep their ``::<id>``."""
    return urn.replace("::" + ROOT_TYPE_PREFIX, "::", 1) if urn.startswith("urn:pulumi:") else urn


def _recorded(raw: dict[str, Any]) -> Recorded:
    return Recorded(
        urn=normalise(raw["urn"]),
        type=raw["type"],
        name=raw["name"],
        parent=normalise(raw["parent"]),
        custom=bool(raw["custom"]),
        inputs=raw["inputs"],
        options={**raw["options"], "dependencies": [normalise(d) for d in raw["options"].get("dependencies", [])]},
        provider=normalise(raw["provider"]),
        aliases=tuple(normalise(a) for a in raw.get("aliases", ())),
    )


def have_history() -> bool:
    """Whether this checkout has the git history the released commits are read from (a source
    archive or an installed package has not)."""
    found = subprocess.run(["git", "cat-file", "-e", f"{RELEASES['0.2.0']}^{{commit}}"], cwd=PROJECT_ROOT, capture_output=True)
    return found.returncode == 0


@functools.cache
def release_tree(version: str) -> Path:
    """The released commit's files, exported once per process into a temporary directory, removed
    when the process exits (every test worker exported its own: 100+ were left behind before)."""
    root = Path(tempfile.mkdtemp(prefix=f"gpupools-{version}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    archive = subprocess.run(["git", "archive", RELEASES[version]], cwd=PROJECT_ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


def released_stacks(version: str) -> tuple[str, ...]:
    """The example stacks the release had (``Pulumi.<stack>.yaml`` beside its ``Pulumi.yaml``)."""
    return tuple(sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in release_tree(version).glob("Pulumi.*.yaml")))


def released_config(version: str, stack: str) -> dict[str, Any]:
    """The stack's config as the release's stack file has it (``config:`` of ``Pulumi.<stack>.yaml``)."""
    document = yaml.safe_load((release_tree(version) / f"Pulumi.{stack}.yaml").read_text()) or {}
    return dict(document.get("config") or {})


@functools.cache
def record_release(version: str, stack: str) -> tuple[Recorded, ...]:
    """What ``version``'s own program registers for ``stack`` (its code, its stack file)."""
    root = release_tree(version)
    with tempfile.TemporaryDirectory() as scratch:
        config, out = Path(scratch) / "config.json", Path(scratch) / "out.json"
        config.write_text(json.dumps(released_config(version, stack)))
        script = Path(__file__).with_name("_dump_release.py")
        subprocess.run([sys.executable, str(script), str(root), stack, str(config), str(out)], cwd=root, check=True)
        return tuple(_recorded(raw) for raw in json.loads(out.read_text()))


def record_head(stack: str, config: dict[str, Any]) -> tuple[Recorded, ...]:
    """What this checkout's program registers for ``stack`` with ``config``, aliases resolved."""
    seen: dict[tuple[str, str, str], tuple[str, ...]] = {}
    register = RecordingMonitor.RegisterResource

    def recording(self: RecordingMonitor, request: Any) -> Any:
        seen[(request.type, request.name, request.parent)] = tuple(alias_urns(request, stack, PROJECT))
        return register(self, request)

    RecordingMonitor.RegisterResource = recording  # type: ignore[method-assign]
    try:
        entry = str(PROJECT_ROOT / "__main__.py")
        run = run_program(lambda: runpy.run_path(entry, run_name="__main__"), config, project=PROJECT, stack=stack)
    finally:
        RecordingMonitor.RegisterResource = register  # type: ignore[method-assign]
    return tuple(
        _recorded(
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "custom": r.custom,
                "inputs": r.inputs,
                "options": r.options,
                "provider": r.provider,
                "aliases": seen.get((r.type, r.name, r.parent), ()),
            }
        )
        for r in run.registrations
    )
