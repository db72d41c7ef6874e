"""``sim deploy``, ``sim preview``, ``sim destroy``: a stack's Kubernetes half through the real Pulumi engine.

The engine is the ``pulumi`` CLI and the pulumi-kubernetes provider built from pinned Go modules
(``gpupools.sim.engine_build``). The program is an Automation API *inline* program: the Python SDK
runs the program's language runtime in this process and calls ``pulumi up --client=<address>``
(pulumi ``sdk/python/lib/pulumi/automation/_stack.py``), so no Python language host is needed. The
program is ``gpupools.sim.engine_program.kubernetes_half``: the library's Kubernetes components over
the stack's own pools, on a ``pulumi_kubernetes.Provider`` for the sim cluster's kubeconfig.

Where things are, per stack (all outside the checkout):

* the state: a local file backend (``file://``) in ``<sim state>/<stack>/pulumi/`` (beside the
  cluster's own state, so ``sim down`` removes it with the cluster), secrets encrypted with the
  ``passphrase`` provider and the fixed passphrase ``PASSPHRASE`` (the state holds the sim's
  kubeconfig, whose certificates are the sim's own and die with it);
* ``PULUMI_HOME``: ``<cache>/sim/engine/home`` (the CLI's own files; never ``~/.pulumi``);
* the plugins: the engine's ``bin/`` first on ``PATH``; the engine uses a provider found on PATH
  ("ambient" plugins, pulumi ``sdk/go/common/workspace/plugins.go``) before any plugin cache, and
  ``PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION`` stops it from ever downloading one;
* the output: the engine's own (progress, diff, the update summary), printed and also written to
  ``<sim state>/<stack>/<operation>.txt``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from gpupools.sim import engine_build, engine_program, layout
from gpupools.sim.control_plane import SimError

PROJECT = "gpupools-sim"
"""The engine's project name for the sim's stacks (one Pulumi stack per gpupools stack)."""

PASSPHRASE = "gpupools-sim"
"""The passphrase secrets provider's passphrase: fixed, because the state is local to a throwaway
cluster (the only secret in it is that cluster's kubeconfig)."""


@dataclass(frozen=True)
class Outcome:
    """One engine operation: what the engine printed and its counts per operation."""

    operation: str
    output: str
    changes: dict[str, int]
    """``create``/``same``/``update``/``delete``/``replace`` -> resources (the engine's summary)."""
    summary_file: Path
    steps: list[tuple[str, str]] = field(default_factory=list)
    """``(type, op)`` of every step the engine announced (its ``ResourcePreEvent``s), in order."""


def state_dir(stack: str) -> Path:
    return layout.cluster_dir(stack) / "pulumi"


def has_state(stack: str) -> bool:
    """Whether the engine's state of ``stack`` holds any resource (a ``deploy`` ran, no ``destroy`` since).
    The file backend keeps a stack's checkpoint in ``.pulumi/stacks/<project>/<stack>.json``."""
    path = state_dir(stack) / ".pulumi" / "stacks" / PROJECT / f"{stack}.json"
    if not path.is_file():
        return False
    latest = (json.loads(path.read_text()).get("checkpoint") or {}).get("latest") or {}
    return bool(latest.get("resources"))


def pulumi_home() -> Path:
    return layout.cache_root() / "sim" / "engine" / "home"


def engine_env(build: engine_build.EngineBuild) -> dict[str, str]:
    """The environment of every CLI and plugin process the engine starts."""
    path = os.pathsep.join([str(build.bin), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {
        "PATH": path,
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_DISABLE_REGISTRY_RESOLVE": "true",
        # The dynamic-provider shim runs `python3 -m pulumi.dynamic`; this environment's Python.
        "PULUMI_PYTHON_CMD": sys.executable,
    }


def _stack(stack: str, kubeconfig: Path, build: engine_build.EngineBuild, facts: engine_program.StackFacts | None) -> Any:
    """The engine's stack ``stack`` of project ``PROJECT`` with the inline program (created on first use)."""
    import pulumi
    import pulumi_kubernetes as k8s
    from pulumi import automation as auto

    state = state_dir(stack)
    (state / "work").mkdir(parents=True, exist_ok=True)
    pulumi_home().mkdir(parents=True, exist_ok=True)
    kubeconfig_text = kubeconfig.read_text()

    def program() -> None:
        if facts is None:  # destroy: the state alone says what to delete
            return
        # As the stacks' providers (gpupools.aws.cluster.ENABLE_CONFIG_MAP_MUTABLE): ConfigMaps updated in place.
        provider = k8s.Provider("sim", kubeconfig=pulumi.Output.secret(kubeconfig_text), enable_config_map_mutable=True)
        engine_program.kubernetes_half(facts, provider)

    env = engine_env(build)
    options = auto.LocalWorkspaceOptions(
        work_dir=str(state / "work"),
        pulumi_home=str(pulumi_home()),
        env_vars=env,
        secrets_provider="passphrase",
        project_settings=auto.ProjectSettings(name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=f"file://{state}")),
        pulumi_command=auto.PulumiCommand(root=str(build.root)),
    )
    return auto.create_or_select_stack(stack_name=stack, project_name=PROJECT, program=program, opts=options)


def _record(operation: str, stack: str, lines: list[str], changes: Mapping[str, int], steps: list[tuple[str, str]]) -> Outcome:
    path = layout.cluster_dir(stack) / f"{operation}.txt"
    path.write_text("".join(lines))
    return Outcome(operation=operation, output="".join(lines), changes=dict(changes), summary_file=path, steps=steps)


def _printer(lines: list[str], echo: Callable[[str], None] | None) -> Callable[[str], None]:
    def on_output(text: str) -> None:
        line = text if text.endswith("\n") else text + "\n"
        lines.append(line)
        if echo is not None:
            echo(line)

    return on_output


def _echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _operate(
    operation: str,
    stack: str,
    call: Callable[[Callable[[str], None], Callable[[Any], None]], Any],
    echo: Callable[[str], None] | None,
) -> tuple[Any, list[str], list[tuple[str, str]]]:
    """Run one engine operation, keeping its output; on failure the output so far is still written
    to the summary file, and the engine's error becomes an EngineError naming it."""
    from pulumi.automation import errors

    lines: list[str] = []
    steps: list[tuple[str, str]] = []

    def on_event(event: Any) -> None:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None:
            steps.append((str(pre.metadata.type), str(getattr(pre.metadata.op, "value", pre.metadata.op))))

    try:
        result = call(_printer(lines, echo), on_event)
    except errors.CommandError as error:
        path = layout.cluster_dir(stack) / f"{operation}.txt"
        path.write_text("".join(lines) + str(error))
        verb = {"deploy": "up"}.get(operation, operation)
        raise EngineError(f"`pulumi {verb}` of {stack} failed (the engine's output: {path})") from None
    return result, lines, steps


class EngineError(SimError):
    """The engine reported a failed operation; the message names the file with its output."""


def deploy(
    stack: str,
    kubeconfig: Path,
    *,
    build: engine_build.EngineBuild | None = None,
    overrides: Mapping[str, Any] | None = None,
    echo: Callable[[str], None] | None = _echo,
) -> Outcome:
    """``pulumi up`` of ``stack``'s Kubernetes half against the cluster of ``kubeconfig``."""
    build = build or engine_build.cached() or engine_build.build()
    engine_stack = _stack(stack, kubeconfig, build, engine_program.facts(stack, overrides))
    result, lines, steps = _operate(
        "deploy", stack, lambda out, events: engine_stack.up(color="never", on_output=out, on_event=events), echo
    )
    return _record("deploy", stack, lines, result.summary.resource_changes or {}, steps)


def preview(
    stack: str,
    kubeconfig: Path,
    *,
    build: engine_build.EngineBuild | None = None,
    overrides: Mapping[str, Any] | None = None,
    diff: bool = True,
    echo: Callable[[str], None] | None = _echo,
) -> Outcome:
    """``pulumi preview [--diff]`` of ``stack``'s Kubernetes half (nothing changes in the cluster)."""
    build = build or engine_build.cached() or engine_build.build()
    engine_stack = _stack(stack, kubeconfig, build, engine_program.facts(stack, overrides))
    result, lines, steps = _operate(
        "preview",
        stack,
        lambda out, events: engine_stack.preview(diff=diff, color="never", on_output=out, on_event=events),
        echo,
    )
    changes = {str(getattr(op, "value", op)): count for op, count in result.change_summary.items()}
    return _record("preview", stack, lines, changes, steps)


def destroy(
    stack: str,
    kubeconfig: Path,
    *,
    build: engine_build.EngineBuild | None = None,
    echo: Callable[[str], None] | None = _echo,
) -> Outcome:
    """``pulumi destroy`` of everything the engine's state of ``stack`` holds."""
    build = build or engine_build.cached() or engine_build.build()
    engine_stack = _stack(stack, kubeconfig, build, None)
    result, lines, steps = _operate(
        "destroy", stack, lambda out, events: engine_stack.destroy(color="never", on_output=out, on_event=events), echo
    )
    return _record("destroy", stack, lines, result.summary.resource_changes or {}, steps)
