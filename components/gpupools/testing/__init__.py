"""Test Pulumi programs that use gpupools, on Pulumi's mock runtime: no cloud, no CLI, no plugins.

Two ways in, both on Pulumi's documented unit-test runtime (``pulumi.runtime.set_mocks``):

* ``GpupoolsMocks``: a ``pulumi.runtime.Mocks`` to pass to plain ``pulumi.runtime.set_mocks`` in
  your own tests (pytest or unittest, the pattern of Pulumi's testing guide). It returns each
  resource's inputs plus the outputs the clouds would compute and gpupools reads (IDs, ARNs, the
  Auto Scaling group of an EKS node group, the kubeconfig of a cluster, the identity map of an AKS
  cluster, the outputs of ``pulumi_eks.Cluster``), and answers the invokes gpupools makes (live pool
  sizes, client config, availability zones). This is the supported way to unit-test a program
  that uses gpupools.
* ``run_program``: runs a function that builds components and returns a ``Run``, every
  registration recorded whole (type, name, parent, inputs, options), to assert on.

Usage in a consumer's test::

    import pulumi
    from gpupools.testing import GpupoolsMocks

    pulumi.runtime.set_mocks(GpupoolsMocks(), project="platform", stack="test", preview=False)

    from gpupools.azure import GpuNodePool        # import components after set_mocks

    @pulumi.runtime.test
    def test_pool_is_spot():
        pool = GpuNodePool("t4", pool={"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4},
                           resource_group_name="rg-ml", cluster_name="ml-dev")
        return pool.last.scale_set_priority.apply(lambda p: ...)

or, recording every registration::

    from gpupools.testing import run_program

    run = run_program(lambda: GpuNodePool("t4", ...))
    [spot, on_demand] = run.of_type("azure-native:containerservice:AgentPool")
    assert spot.inputs["scaleSetPriority"] == "Spot"

Why not Pulumi's default ``Mocks`` (``new_resource`` returning the inputs)? Two outputs differ from
the inputs in shape, and a program reading them fails with the inputs echoed back:

* an AKS ``ManagedCluster``'s ``identity.userAssignedIdentities`` is a list of IDs as input and a
  map of ID to ``{principalId, clientId}`` as output; echoed back, pulumi-azure-native's output
  types reject the list ("Unexpected type. Expected 'list' got 'typing.Mapping[...]'") and every
  output of the cluster fails (``AksCluster``; this happens inside the SDK, before gpupools sees a
  value);
* an EKS ``NodeGroup``'s ``resources`` (its Auto Scaling group, which the scale-from-zero tags
  name) is not an input at all: ``GpuNodeGroup`` stops with a ``MissingOutputError`` naming the node
  group and this class, since no ASG name can honestly be made up.

Components that read no computed output (``GpuNodePool`` on a cluster given by names, the
Kubernetes components) also run on the default mocks. To extend ``GpupoolsMocks``, pass
``outputs``/``calls`` (per type token, see ``gpupools.testing.fakes``) or subclass it and call
``super()`` for the types you do not handle.

For this repository's own stacks, ``run_stack("azure-dev")`` runs ``__main__.py`` with
``Pulumi.azure-dev.yaml`` and ``stack_config`` reads a stack file; both look in ``PROJECT_ROOT``
(the checkout this package runs from, or, installed from a wheel, the current directory at
import), so they also run a consumer's own Pulumi project given its ``root``. Importing this
module needs no repository files.

Outputs the clouds would compute come from the per-type fakes in ``gpupools.testing.fakes``: each
entry receives the resource's inputs and returns the extra outputs the program reads. To make a
new resource type or invoke work under the runtime, add an entry there.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import logging
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

from gpupools.errors import yaml_error
from gpupools.testing import fakes


def _project_root() -> Path:
    """The checkout this package runs from (``components/gpupools`` beside a ``Pulumi.yaml``), else
    the current directory: an installed wheel has no repository around it."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "Pulumi.yaml").is_file() and (checkout / "components" / "gpupools").is_dir():
        return checkout
    return Path.cwd()


PROJECT_ROOT = _project_root()
"""Where ``Pulumi.yaml``, ``__main__.py`` and the stack files live: this repository's root when the
package runs from a checkout (editable install), else the current directory at import."""

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
    if request.deletedWith:
        options["deletedWith"] = request.deletedWith
    if request.HasField("customTimeouts"):
        timeouts = json_format.MessageToDict(request.customTimeouts)
        if timeouts:
            options["customTimeouts"] = timeouts
    return {k: v for k, v in options.items() if v not in ([], None, {})}


class GpupoolsMocks(pulumi.runtime.Mocks):
    """Pulumi mocks for programs that use gpupools: pass to ``pulumi.runtime.set_mocks``.

    ``new_resource`` returns the resource's inputs with the fake outputs of its type merged over
    them (``gpupools.testing.fakes.OUTPUTS``: IDs, ARNs, names, EKS node groups' Auto Scaling
    groups, AKS clusters' identity maps, ``pulumi_eks.Cluster``'s kubeconfig and OIDC provider);
    types without a fake get their inputs back and the ID ``<name>-id``. ``call`` answers the
    invokes in ``fakes.CALLS`` (AKS user credentials, client config, availability zones, live pool
    sizes as in a fresh account: none yet) and raises ``KeyError`` naming any other invoke token.

    Args:
        outputs: extra or replacing output fakes, type token -> ``(name, inputs) -> outputs``;
            a ``"__id"`` key in the returned mapping sets the resource ID.
        calls: extra or replacing invoke fakes, invoke token -> ``(args) -> result``; raise
            ``fakes.InvokeError`` to answer with a failure.

    Attributes:
        invokes: every invoke received, ``(token, args)``, in order.
    """

    def __init__(
        self, outputs: Mapping[str, fakes.OutputFake] | None = None, calls: Mapping[str, fakes.CallFake] | None = None
    ) -> None:
        self.outputs: dict[str, fakes.OutputFake] = {**fakes.OUTPUTS, **(outputs or {})}
        self.calls: dict[str, fakes.CallFake] = {**fakes.CALLS, **(calls or {})}
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
            raise KeyError(
                f"no fake for invoke {args.token}; pass one in GpupoolsMocks(calls=...) or add it to gpupools.testing.fakes"
            )
        try:
            return fake(args.args), []
        except fakes.InvokeError as failure:
            return {}, [("", str(failure))]


RecordingMocks = GpupoolsMocks
"""The name ``run_program`` used for its mocks before 0.2.0; the same class."""


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A ``MockMonitor`` that keeps every registration request whole, in registration order."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
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
    warnings: list[str] = field(default_factory=list)
    """What the program warned about (``pulumi.log.warn``), in order: collected, not printed, so a
    caller shows them its own way (synth prints them with its summary and puts them in ``--json``)."""

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


def _yaml_file(path: Path) -> Any:
    """``path`` parsed as YAML, a fresh copy each call. Parsed once per file version (its size and
    modification time): a test suite reads the same stack files hundreds of times."""
    status = path.stat()
    return copy.deepcopy(_parsed_yaml(path, status.st_mtime_ns, status.st_size))


@functools.lru_cache(maxsize=64)
def _parsed_yaml(path: Path, mtime_ns: int, size: int) -> Any:
    """``path`` parsed (``_yaml_file``; the version arguments are the cache key). libyaml's loader
    when PyYAML has it: the same documents, several times faster. A file that is not YAML is one
    ``ConfigError`` naming the file, the line and column and the offending line (``yaml_error``)."""
    text = path.read_text()
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise yaml_error(path.name, text, error) from None


def stack_config(stack: str, root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The ``config:`` mapping of ``Pulumi.<stack>.yaml`` (project-level defaults merged under it)."""
    path = root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"no stack file {path.name} in {root}")
    document = _yaml_file(path) or {}
    config: dict[str, Any] = {}
    project = _yaml_file(root / "Pulumi.yaml") or {}
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
    mocks = GpupoolsMocks(outputs, calls)
    monitor = RecordingMonitor(mocks)
    warnings: list[str] = []
    pulumi_settings.ROOT.set(None)
    pulumi.runtime.set_all_config(_engine_config(config or {}), [])
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor, logger=_collecting(warnings))

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
        warnings=warnings,
    )


def _collecting(warnings: list[str]) -> logging.Logger:
    """A logger for the mock engine's ``Log`` (``pulumi.runtime.mocks.MockEngine``) that keeps each
    warning or error message in ``warnings`` and prints nothing."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    logger = logging.Logger("gpupools.testing.run", level=logging.WARNING)
    logger.addHandler(Keep(level=logging.WARNING))
    logger.propagate = False
    return logger


def run_stack(
    stack: str,
    root: Path = PROJECT_ROOT,
    overrides: Mapping[str, Any] | None = None,
    *,
    calls: Mapping[str, fakes.CallFake] | None = None,
    raise_errors: bool = True,
) -> Run:
    """Run the project's ``__main__.py`` with ``Pulumi.<stack>.yaml`` on the recording runtime.

    ``root`` defaults to ``PROJECT_ROOT`` (this repository from a checkout); any Pulumi project
    directory with a ``Pulumi.yaml``, a ``__main__.py`` and the stack file works, and its project
    name is the one ``pulumi.get_project()`` returns.

    ``overrides`` replaces top-level config keys (``{"gpupools:gpuPools": [...]}``) for edge cases;
    ``calls`` replaces invoke fakes (what the cloud answers a data source, e.g. live pool sizes).
    """
    config = {**stack_config(stack, root), **(overrides or {})}
    project = (_yaml_file(root / "Pulumi.yaml") or {}).get("name") or "gpupools"
    entry = str(root / "__main__.py")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return run_program(
        lambda: runpy.run_path(entry, run_name="__main__"),
        config,
        project=str(project),
        stack=stack,
        calls=calls,
        raise_errors=raise_errors,
    )
