"""Offline synth: what ``pulumi up`` would ask the clouds for, without a cloud, a backend or the Pulumi CLI.

``python -m gpupools.synth <stack>`` runs the project's program with ``Pulumi.<stack>.yaml`` on the
recording mock runtime (``gpupools.testing.run_stack``) and writes, into ``synth/<stack>/`` by
default:

* ``desired-state.json``: every resource with type, logical name, parent, inputs (secrets
  redacted) and resource options, stably ordered, byte-identical across runs
  (``gpupools.synth.document``);
* ``kubernetes.yaml``: the Kubernetes objects as one multi-document YAML, ready for
  ``kubectl diff -f`` or a schema check;

and prints a summary: the resource tree and the node-pool table (``gpupools.synth.summary``),
fitted to 160 columns (``--wide``: everything, unfolded and unwrapped);
with ``--json`` the same summary as JSON on stdout and nothing else (``--quiet``: nothing at all;
the two exclude each other). A bad config exits with status 2 and the one-line ``ConfigError`` message ``pulumi up`` would show.

``python -m gpupools.synth diff OLD.json NEW.json`` (or ``--git-base <ref>``) compares documents
as Markdown for a pull-request comment (``gpupools.synth.diff``).

Library use::

    from gpupools.synth import synthesize
    result = synthesize("azure-dev")
    result.document["resources"][0]["address"]

This package imports Pulumi lazily, so ``--list`` works with only PyYAML installed (CI uses it to
build its matrix of stacks).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

if TYPE_CHECKING:
    from gpupools.testing import Run

EXIT_CONFIG_ERROR = 2
"""Exit status for a bad stack config or a missing stack file (argparse uses 2 for bad usage too)."""

DOCUMENT_FILE = "desired-state.json"
MANIFESTS_FILE = "kubernetes.yaml"


@dataclass(frozen=True)
class Synthesis:
    """The result of synthesizing one stack.

    Attributes:
        stack: the stack name (``azure-dev``).
        run: the recording runtime's record (registrations, outputs, invokes).
        document: the desired-state document (``gpupools.synth.document.desired_state``).
        manifests: the Kubernetes objects as manifests, in file order.
    """

    stack: str
    run: Run
    document: dict[str, Any]
    manifests: list[dict[str, Any]]

    @property
    def document_json(self) -> str:
        from gpupools.synth.document import render_json

        return render_json(self.document)

    @property
    def manifests_yaml(self) -> str:
        from gpupools.synth.document import render_yaml

        return render_yaml(self.manifests)


def default_root() -> Path:
    """The current directory if it holds a ``Pulumi.yaml``, else the repository this package lives in."""
    cwd = Path.cwd()
    if (cwd / "Pulumi.yaml").exists():
        return cwd
    from gpupools.testing import PROJECT_ROOT

    return PROJECT_ROOT


def committed_stacks(root: Path) -> list[str]:
    """The stacks that have a ``Pulumi.<stack>.yaml`` in ``root``, sorted."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def stack_targets(root: Path) -> list[dict[str, str]]:
    """One entry per committed stack: ``stack``, ``cloud`` (``gpupools:cloud``) and ``region`` (AWS region or Azure location).

    This is what the CI workflows build their matrix from; it reads YAML only (no Pulumi import).
    """
    import yaml

    targets = []
    for stack in committed_stacks(root):
        config = (yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text()) or {}).get("config") or {}
        cloud = str(config.get("gpupools:cloud", ""))
        region = config.get("aws:region") if cloud == "aws" else config.get("azure-native:location")
        targets.append({"stack": stack, "cloud": cloud, "region": str(region or "")})
    return targets


def project_name(root: Path) -> str:
    import yaml

    project = yaml.safe_load((root / "Pulumi.yaml").read_text()) or {}
    return str(project.get("name", "gpupools"))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector inside the block (reference counting still runs).

    The mock runtime keeps every resource, ``Output`` and future of a run alive until the run
    ends, so each full collection rescans a heap that grows with the fleet, and synth time grows
    faster than the number of resources. Paused, synth of a 50-pool EKS fleet (2,843
    registrations) takes about half the time, grows linearly, and peaks a few percent higher in
    memory (``benchmarks/synth_scale.py`` measures both).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def synthesize(
    stack: str,
    root: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    pause_gc: bool = True,
) -> Synthesis:
    """Run ``stack`` on the recording runtime and build its document and manifests.

    ``pause_gc`` (default True) runs it with the cyclic garbage collector paused (see ``gc_paused``).
    Raises ``ConfigError`` for a bad config (before any resource is registered) and
    ``FileNotFoundError`` when ``Pulumi.<stack>.yaml`` does not exist.
    """
    from gpupools.synth.document import desired_state, kubernetes_manifests
    from gpupools.testing import run_stack

    root = root or default_root()
    with gc_paused() if pause_gc else nullcontext():
        run = run_stack(stack, root=root, overrides=overrides)
        return Synthesis(
            stack=stack,
            run=run,
            document=desired_state(run, stack, project_name(root)),
            manifests=kubernetes_manifests(run),
        )


def write(synthesis: Synthesis, out_dir: Path) -> list[Path]:
    """Write ``desired-state.json`` and ``kubernetes.yaml`` into ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    document = out_dir / DOCUMENT_FILE
    manifests = out_dir / MANIFESTS_FILE
    document.write_text(synthesis.document_json, encoding="utf-8")
    manifests.write_text(synthesis.manifests_yaml, encoding="utf-8")
    return [document, manifests]


def config_error_in(error: BaseException) -> BaseException | None:
    """The ``ConfigError`` that caused ``error``, if any (it may arrive wrapped by the runtime)."""
    from gpupools.errors import ConfigError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ConfigError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.synth",
        description="Offline synth: run a stack on the recording mock runtime and write its desired state. "
        "Use 'python -m gpupools.synth diff --help' for the diff.",
    )
    parser.add_argument("stack", nargs="?", help="stack name, as in Pulumi.<stack>.yaml (e.g. azure-dev)")
    parser.add_argument("--root", type=Path, help="project directory (default: the current one if it has Pulumi.yaml)")
    parser.add_argument("--out", type=Path, help="output directory (default: <root>/synth/<stack>)")
    parser.add_argument("--no-tree", action="store_true", help="leave the resource tree out of the summary")
    parser.add_argument(
        "--wide",
        action="store_true",
        help="print everything: every resource of the tree, every column of the node-pool table per group, "
        "reasons in their cells, no wrapping (default: fits 160 columns)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    output.add_argument(
        "--json",
        action="store_true",
        help="print the summary as JSON on stdout instead of the table (pools, prices, fleet figures, files written)",
    )
    parser.add_argument("--list", action="store_true", help="print the committed stacks (stack, cloud, region) as JSON and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``python -m gpupools.synth`` command line; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(args_list)
    root = (args.root or default_root()).resolve()
    if args.list:
        print(json.dumps(stack_targets(root)))
        return 0
    if not args.stack:
        parser.error("a stack name is required (one of: " + ", ".join(committed_stacks(root)) + ")")
    try:
        synthesis = synthesize(args.stack, root)
    except FileNotFoundError as error:
        print(f"error: {error} (stacks here: {', '.join(committed_stacks(root)) or 'none'})", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except Exception as error:
        config_error = config_error_in(error)
        if config_error is None:
            raise
        print(str(config_error), file=sys.stderr)
        return EXIT_CONFIG_ERROR
    out_dir = args.out or root / "synth" / args.stack
    files = write(synthesis, out_dir)
    shown = [str(_relative(f)) for f in files]
    if args.json:
        from gpupools.synth.summary import summary_data

        data = summary_data(synthesis.document, files=shown, program_warnings=synthesis.run.warnings)
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif not args.quiet:
        from gpupools.synth.summary import render

        sys.stdout.write(
            render(synthesis.document, files=shown, tree=not args.no_tree, wide=args.wide, program_warnings=synthesis.run.warnings)
        )
    return 0


def _relative(path: Path) -> Path:
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path
