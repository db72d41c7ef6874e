"""The recording mock runtime, shared by the tests, offline synth and the benchmarks.

It runs a real stack program (or any function that builds components) on Pulumi's documented
unit-test runtime, ``pulumi.runtime.set_mocks(..., preview=False)``, with a monitor that records
every ``RegisterResource`` request whole: type, logical name, parent, inputs (with the paths that
are secret), and the resource options the engine would act on (ignoreChanges, replaceOnChanges,
deleteBeforeReplace, dependencies, provider, protect, retainOnDelete, aliases,
additionalSecretOutputs, customTimeouts). Nothing is deployed and no cloud is contacted.

Outputs the clouds would compute (IDs, ASG names of EKS node groups, the kubeconfig of a cluster,
the outputs of remote components such as ``pulumi_eks.Cluster``, which are opaque under mocks)
come from the per-type fakes in ``gpupools.testing.fakes``: each entry receives the resource's
inputs and returns the extra outputs the program reads. To make a new resource type or invoke
work under the runtime, add an entry there.

Usage::

    run = run_stack("azure-dev")                 # Pulumi.azure-dev.yaml from the project root
    [cluster] = run.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["disableLocalAccounts"] is True

    run = run_program(lambda: GpuNodePool("t4", ...), config={"gpupools:cloud": "azure"})
"""

from __future__ import annotations

import asyncio
import json
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pulumi
import yaml
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings

from gpupools.testing import fakes

PROJECT_ROOT = Path(__file__).resolve().parents[3]
"""The repository root: where ``Pulumi.yaml``, ``__main__.py`` and the stack files live."""

SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
SIG_KEY = "4dabf18193072939515e22adb298388d"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
REDACTED = "[secret]"


@dataclass
class Registration:
    """One ``RegisterResource`` request, as the engine would have received it.

    Attributes:
        type: the resource type token (``azure-native:containerservice:AgentPool``).
        name: the logical name.
        urn: the URN the mock monitor assigned (encodes the parent type chain).
        parent: the parent's URN ("" for the stack itself).
        custom: False for component resources.
        inputs: the inputs, secrets unwrapped (use ``redacted_inputs`` for anything printed).
        redacted_inputs: the inputs with every secret value replaced by ``[secret]``.
        secret_paths: dotted paths of the inputs that were secret.
        options: the resource options, engine spelling (``ignoreChanges`` ...), empty ones left out.
            The SDK's own type aliases and plugin versions are not recorded: they are not choices
            this project makes and would churn every snapshot on a provider upgrade.
        provider: the provider reference (``<urn>::<id>``) or "".
    """

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    redacted_inputs: dict[str, Any]
    secret_paths: list[str]
    options: dict[str, Any]
    provider: str

    @property
    def ignore_changes(self) -> list[str]:
        return list(self.options.get("ignoreChanges", []))

    @property
    def replace_on_changes(self) -> list[str]:
        return list(self.options.get("replaceOnChanges", []))

    @property
    def delete_before_replace(self) -> bool:
        return bool(self.options.get("deleteBeforeReplace", False))

    @property
    def dependencies(self) -> list[str]:
        return list(self.options.get("dependencies", []))


def _unwrap(value: Any, path: str, secrets: list[str], redact: bool) -> Any:
    """Turn a protobuf-JSON property value into plain data, noting (and optionally redacting) secrets."""
    if isinstance(value, dict):
        sig = value.get(SIG_KEY)
        if sig == SECRET_SIG:
            secrets.append(path)
            return REDACTED if redact else _unwrap(value.get("value"), path, [], redact)
        if sig == RESOURCE_SIG:
            return {"urn": value.get("urn"), "id": value.get("id")}
        if sig is not None and "value" in value:
            return _unwrap(value["value"], path, secrets, redact)
        return {k: _unwrap(v, f"{path}.{k}" if path else k, secrets, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v, f"{path}[{i}]", secrets, redact) for i, v in enumerate(value)]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _options(request: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "ignoreChanges": sorted(request.ignoreChanges),
        "replaceOnChanges": sorted(request.replaceOnChanges),
        "dependencies": sorted(set(request.dependencies)),
        "additionalSecretOutputs": sorted(request.additionalSecretOutputs),
    }
    if request.deleteBeforeReplaceDefined:
        options["deleteBeforeReplace"] = request.deleteBeforeReplace
    if request.protect:
        options["protect"] = True
    if request.HasField("retainOnDelete") and request.retainOnDelete:
        options["retainOnDelete"] = True
    if request.HasField("customTimeouts"):
        timeouts = json_format.MessageToDict(request.customTimeouts)
        if timeouts:
            options["customTimeouts"] = timeouts
    return {k: v for k, v in options.items() if v not in ([], None, {})}


class RecordingMocks(pulumi.runtime.Mocks):
    """Returns each resource's inputs plus the fake outputs of its type; answers invokes."""

    def __init__(self, outputs: Mapping[str, fakes.OutputFake], calls: Mapping[str, fakes.CallFake]) -> None:
        self.outputs = outputs
        self.calls = calls
        self.invokes: list[tuple[str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        fake = self.outputs.get(args.typ)
        if fake is not None:
            state.update(fake(args.name, args.inputs))
        resource_id = state.pop("__id", None) or f"{args.name}-id"
        return resource_id, state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        self.invokes.append((args.token, dict(args.args)))
        fake = self.calls.get(args.token)
        if fake is None:
            raise KeyError(f"no fake for invoke {args.token}; add one to gpupools.testing.fakes")
        try:
            return fake(args.args), []
        except fakes.InvokeError as failure:
            return {}, [("", str(failure))]


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A ``MockMonitor`` that keeps every registration request whole, in registration order."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            raw = json_format.MessageToDict(request.object, preserving_proto_field_name=True)
            secrets: list[str] = []
            inputs = {k: _unwrap(v, k, [], False) for k, v in raw.items()}
            redacted = {k: _unwrap(v, k, secrets, True) for k, v in raw.items()}
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    parent=request.parent,
                    custom=bool(request.custom),
                    inputs=inputs,
                    redacted_inputs=redacted,
                    secret_paths=sorted(secrets),
                    options=_options(request),
                    provider=request.provider,
                )
            )
        return response


@dataclass
class Run:
    """What a program registered on the mock runtime."""

    registrations: list[Registration]
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: list[str] = field(default_factory=list)
    invokes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: BaseException | None = None

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_]

    def named(self, name: str) -> Registration:
        matches = [r for r in self.registrations if r.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} registrations named {name!r}")
        return matches[0]

    def by_urn(self, urn: str) -> Registration:
        for registration in self.registrations:
            if registration.urn == urn:
                return registration
        raise KeyError(urn)

    def children(self, parent: Registration) -> list[Registration]:
        return [r for r in self.registrations if r.parent == parent.urn]

    def kubernetes_objects(self) -> Iterator[Registration]:
        """Every Kubernetes object registration (``kubernetes:<group>/<version>:<Kind>``)."""
        for registration in self.registrations:
            kind = registration.type
            helm_or_yaml = kind.startswith(("kubernetes:helm.sh/", "kubernetes:yaml/"))
            if kind.startswith("kubernetes:") and registration.custom and "/" in kind and not helm_or_yaml:
                yield registration


def stack_config(stack: str, root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The ``config:`` mapping of ``Pulumi.<stack>.yaml`` (project-level defaults merged under it)."""
    path = root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"no stack file {path.name} in {root}")
    document = yaml.safe_load(path.read_text()) or {}
    config: dict[str, Any] = {}
    project = yaml.safe_load((root / "Pulumi.yaml").read_text()) or {}
    for key, value in (project.get("config") or {}).items():
        config[key] = value.get("value") if isinstance(value, dict) and "value" in value else value
    config.update(document.get("config") or {})
    return config


def _engine_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Config as the engine hands it to a program: scalars as strings, objects as JSON."""
    engine: dict[str, str] = {}
    for key, value in config.items():
        if isinstance(value, str):
            engine[key] = value
        elif isinstance(value, bool):
            engine[key] = "true" if value else "false"
        else:
            engine[key] = json.dumps(value)
    return engine


def run_program(
    program: Callable[[], Any],
    config: Mapping[str, Any] | None = None,
    *,
    project: str = "gpupools",
    stack: str = "test",
    outputs: Mapping[str, fakes.OutputFake] | None = None,
    calls: Mapping[str, fakes.CallFake] | None = None,
    raise_errors: bool = True,
) -> Run:
    """Run ``program`` on the recording mock runtime and return what it registered.

    With ``raise_errors=False`` an exception from the program is kept in ``Run.error`` instead of
    raised, so a test can check what (if anything) was registered before it: the bad-input
    catalogue asserts "nothing" this way.

    ``config`` uses full keys (``gpupools:cloud``); ``outputs``/``calls`` extend the default fakes.
    Exceptions from the program (a ``ConfigError``, say) propagate unchanged.
    """
    mocks = RecordingMocks({**fakes.OUTPUTS, **(outputs or {})}, {**fakes.CALLS, **(calls or {})})
    monitor = RecordingMonitor(mocks)
    pulumi_settings.ROOT.set(None)
    pulumi.runtime.set_all_config(_engine_config(config or {}), [])
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)

    resolved: dict[str, Any] = {}
    secret_outputs: list[str] = []

    async def _resolve(name: str, output: pulumi.Output[Any]) -> None:
        value = await output.future()
        if await output.is_secret():
            secret_outputs.append(name)
        resolved[name] = value

    errors: list[BaseException] = []

    @pulumi.runtime.test
    def _run() -> Any:
        try:
            program()
        except Exception as error:
            if raise_errors:
                raise
            errors.append(error)
            return None
        root = pulumi_settings.get_root_resource()
        exported = dict(getattr(root, "outputs", {}) or {})
        pending = [asyncio.ensure_future(_resolve(n, pulumi.Output.from_input(v))) for n, v in exported.items()]
        return pulumi.Output.from_input(asyncio.gather(*pending)) if pending else None

    _run()
    return Run(
        registrations=list(monitor.registrations),
        outputs=dict(sorted(resolved.items())),
        secret_outputs=sorted(secret_outputs),
        invokes=list(mocks.invokes),
        error=errors[0] if errors else None,
    )


def run_stack(
    stack: str,
    root: Path = PROJECT_ROOT,
    overrides: Mapping[str, Any] | None = None,
    *,
    calls: Mapping[str, fakes.CallFake] | None = None,
    raise_errors: bool = True,
) -> Run:
    """Run the project's ``__main__.py`` with ``Pulumi.<stack>.yaml`` on the recording runtime.

    ``overrides`` replaces top-level config keys (``{"gpupools:gpuPools": [...]}``) for edge cases;
    ``calls`` replaces invoke fakes (what the cloud answers a data source, e.g. live pool sizes).
    """
    config = {**stack_config(stack, root), **(overrides or {})}
    entry = str(root / "__main__.py")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return run_program(
        lambda: runpy.run_path(entry, run_name="__main__"), config, stack=stack, calls=calls, raise_errors=raise_errors
    )
