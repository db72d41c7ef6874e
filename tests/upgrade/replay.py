"""A recording's Kubernetes half as a program of its own, for the real engine (``tests/sim/test_upgrade.py``).

Every recorded registration is registered again in the recorded order, with the same type, name
and parent, so the engine gives it the same URN the stack program's ``up`` gave it:

* each ``kubernetes:*`` custom resource as a ``pulumi.CustomResource`` of its type with its recorded
  inputs and options (aliases, ``retainOnDelete``, ``ignoreChanges``, ``replaceOnChanges``,
  ``deleteBeforeReplace``, custom timeouts, dependencies among themselves), on
* the recorded ``pulumi:providers:kubernetes`` provider with its recorded inputs, the kubeconfig
  being the sim's;
* everything else (components, the cloud half, the Helm releases: their charts come from registries
  this machine cannot reach; in the sim their controllers run as local processes) as a component of
  the same type and name, which keeps the URNs of its children.

The real pulumi-kubernetes provider then decides creates, updates, replacements and deletes, against
the sim's API server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

import pulumi
from gpupools.sim import engine, engine_build

from tests.upgrade.recorded import PROJECT, Recorded, normalise

K8S_PROVIDER = "pulumi:providers:kubernetes"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _replayed(r: Recorded) -> bool:
    return r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE


def program(resources: Sequence[Recorded], kubeconfig: str) -> Callable[[], None]:
    """The inline program that registers ``resources`` (see the module docstring)."""

    def run() -> None:
        made: dict[str, pulumi.Resource] = {}
        for r in resources:
            parent = made.get(r.parent)
            aliases: list[Any] = list(r.aliases)
            if r.type.startswith("pulumi:providers:"):
                if r.type == K8S_PROVIDER:
                    props = {k: v for k, v in r.inputs.items() if k not in ("kubeconfig", "version")}
                    props["kubeconfig"] = pulumi.Output.secret(kubeconfig)
                    made[r.urn] = pulumi.ProviderResource(
                        "kubernetes", r.name, props, pulumi.ResourceOptions(parent=parent, aliases=aliases)
                    )
                continue
            if not _replayed(r):
                made[r.urn] = pulumi.ComponentResource(
                    r.type, r.name, None, pulumi.ResourceOptions(parent=parent, aliases=aliases)
                )
                continue
            provider = made.get(r.provider.rsplit("::", 1)[0]) if r.provider else None
            deleted_with = made.get(normalise(str(r.options.get("deletedWith") or "")))
            depends = [made[d] for d in r.options.get("dependencies", []) if d in made and d != r.parent]
            timeouts = r.options.get("customTimeouts")
            opts = pulumi.ResourceOptions(
                parent=parent,
                provider=provider if isinstance(provider, pulumi.ProviderResource) else None,
                aliases=aliases,
                depends_on=depends,
                retain_on_delete=r.retained or None,
                ignore_changes=r.options.get("ignoreChanges") or None,
                replace_on_changes=r.options.get("replaceOnChanges") or None,
                delete_before_replace=r.options.get("deleteBeforeReplace"),
                custom_timeouts=pulumi.CustomTimeouts(**timeouts) if timeouts else None,
                deleted_with=deleted_with,
            )
            made[r.urn] = pulumi.CustomResource(r.type, r.name, dict(r.inputs), opts)

    return run


def kubernetes_objects(resources: Sequence[Recorded]) -> list[Recorded]:
    """The recorded resources the replay registers as Kubernetes objects."""
    return [r for r in resources if _replayed(r)]


Steps = list[tuple[str, str]]
"""``(URN, op)`` of every step the engine announced (its ``ResourcePreEvent``s), in order."""


class Workspace:
    """One stack's engine workspace for replays: project ``gpupools`` (the recordings' URNs), the
    stack's name, a local file backend in ``state``, the sim's engine build and kubeconfig."""

    def __init__(self, stack: str, kubeconfig: Path, state: Path, build: engine_build.EngineBuild) -> None:
        from pulumi import automation as auto

        self.kubeconfig = kubeconfig.read_text()
        (state / "work").mkdir(parents=True, exist_ok=True)
        engine.pulumi_home().mkdir(parents=True, exist_ok=True)
        options = auto.LocalWorkspaceOptions(
            work_dir=str(state / "work"),
            pulumi_home=str(engine.pulumi_home()),
            env_vars=engine.engine_env(build),
            secrets_provider="passphrase",
            project_settings=auto.ProjectSettings(
                name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=f"file://{state}")
            ),
            pulumi_command=auto.PulumiCommand(root=str(build.root)),
        )
        self.stack = auto.create_or_select_stack(stack_name=stack, project_name=PROJECT, program=lambda: None, opts=options)

    def up(self, resources: Sequence[Recorded]) -> tuple[dict[str, int], Steps]:
        steps: Steps = []
        result = self.stack.up(
            program=program(resources, self.kubeconfig), color="never", on_output=lambda _: None, on_event=_collect(steps)
        )
        return dict(result.summary.resource_changes or {}), steps

    def preview(self, resources: Sequence[Recorded]) -> Steps:
        steps: Steps = []
        self.stack.preview(
            program=program(resources, self.kubeconfig), color="never", on_output=lambda _: None, on_event=_collect(steps)
        )
        return steps

    def destroy(self) -> tuple[dict[str, int], Steps]:
        steps: Steps = []
        result = self.stack.destroy(color="never", on_output=lambda _: None, on_event=_collect(steps))
        return dict(result.summary.resource_changes or {}), steps

    def state(self) -> dict[str, Any]:
        """The engine's state, resources by URN (``pulumi stack export``)."""
        return {r["urn"]: r for r in json.loads(json.dumps(self.stack.export_stack().deployment)).get("resources") or []}


def _collect(steps: Steps) -> Callable[[Any], None]:
    def on_event(event: Any) -> None:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None:
            steps.append((str(pre.metadata.urn), str(getattr(pre.metadata.op, "value", pre.metadata.op))))

    return on_event


def manifest_of(r: Recorded) -> dict[str, Any]:
    """The identity of a replayed Kubernetes object (``apiVersion``, ``kind``, name, namespace)."""
    metadata = r.inputs.get("metadata") or {}
    identity = {k: metadata[k] for k in ("name", "namespace") if k in metadata}
    return {"apiVersion": r.inputs["apiVersion"], "kind": r.inputs["kind"], "metadata": identity}


def clear(client: Any, manifests: Sequence[dict[str, Any]]) -> None:
    """Delete the objects of ``manifests`` that exist, finalizers dropped first: nothing in these tests
    runs the controllers that would remove them (``tests.sim.test_autoscalers.drop_finalizers``)."""
    import contextlib

    from gpupools.sim import objects
    from gpupools.sim.kube import KubeError

    from tests.sim.test_autoscalers import drop_finalizers

    present = [m for m in manifests if client.get(m) is not None]
    for manifest in present:
        drop_finalizers(client, manifest)
    with contextlib.suppress(KubeError):
        objects.delete(client, present)
