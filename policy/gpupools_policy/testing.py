"""Run the pack in-process the way the Pulumi engine does, without the CLI or a server.

``analyze(resources)`` sends every resource through the pack's analyzer service (the same object
``PolicyPack`` serves over gRPC): one ``Analyze`` call per resource, then one ``AnalyzeStack`` call
with all of them, properties encoded as the engine encodes them (a protobuf ``Struct``, numbers as
floats, unknown values as the engine's sentinels). It returns the diagnostics ``pulumi preview``
would print, with their enforcement levels, so a test asserts what a deployment would see.

Platform teams can run it on their own programs: record the program with a mock runtime (for
example ``gpupools.testing.run_program``), turn each registration into a ``rules.Resource`` and
call ``analyze``.

This uses the SDK's analyzer servicer class directly (``pulumi_policy.policy._PolicyAnalyzerServicer``):
``PolicyPack`` itself cannot be constructed in-process, because its constructor serves forever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy.policy import _PolicyAnalyzerServicer

from gpupools_policy.pack import PACK_ENFORCEMENT, PACK_NAME, PACK_VERSION, POLICIES
from gpupools_policy.rules import Resource
from gpupools_policy.shapes import UNKNOWN

UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""The engine's sentinel for an unknown value (``pulumi_policy.proxy.UNKNOWN_STRING_VALUE``)."""

_LEVELS = {value: name.lower() for name, value in analyzer_pb2.EnforcementLevel.items()}


@dataclass(frozen=True)
class Diagnostic:
    """One violation as the engine receives it (``message`` without the policy description the SDK
    puts on its first line)."""

    policy: str
    enforcement: str
    message: str
    urn: str


def _engine_value(value: Any) -> Any:
    if value is UNKNOWN:
        return UNKNOWN_STRING
    if isinstance(value, Mapping):
        return {str(k): _engine_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_engine_value(v) for v in value]
    return value


def engine_struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    """``props`` as the engine sends them: a protobuf Struct (ints become floats)."""
    struct = struct_pb2.Struct()
    struct.update(_engine_value(props))
    return struct


def _options(resource: Resource) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(ignoreChanges=list(resource.ignore_changes))


def _diagnostics(response: Any, urn: str = "") -> list[Diagnostic]:
    """The response's diagnostics; a resource policy's carry no URN (the engine attaches them to the
    resource it asked about), so ``urn`` fills it in."""
    found = []
    for d in response.diagnostics:
        prefix = f"{d.description}\n"
        message = d.message[len(prefix) :] if d.description and d.message.startswith(prefix) else d.message
        found.append(Diagnostic(policy=d.policyName, enforcement=_LEVELS[d.enforcementLevel], message=message, urn=d.urn or urn))
    return found


def _servicer(config: Mapping[str, Mapping[str, Any]] | None) -> Any:
    servicer = _PolicyAnalyzerServicer(PACK_NAME, PACK_VERSION, POLICIES, PACK_ENFORCEMENT)
    if config:
        request = analyzer_pb2.ConfigureAnalyzerRequest(
            policyConfig={name: analyzer_pb2.PolicyConfig(properties=engine_struct(values)) for name, values in config.items()}
        )
        servicer.Configure(request, None)
    return servicer


def analyze(resources: Iterable[Resource], *, config: Mapping[str, Mapping[str, Any]] | None = None) -> list[Diagnostic]:
    """Every diagnostic the pack reports for ``resources``: per-resource policies, then stack policies.

    ``config`` is the policy-pack config, by policy name (what ``--policy-pack-config`` holds).
    """
    servicer = _servicer(config)
    items = list(resources)
    found: list[Diagnostic] = []
    for resource in items:
        request = analyzer_pb2.AnalyzeRequest(
            type=resource.type,
            properties=engine_struct(resource.props),
            urn=resource.urn,
            name=resource.name,
            options=_options(resource),
        )
        found.extend(_diagnostics(servicer.Analyze(request, None), resource.urn))
    stack = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type, properties=engine_struct(r.props), urn=r.urn, name=r.name, options=_options(r)
            )
            for r in items
        ]
    )
    found.extend(_diagnostics(servicer.AnalyzeStack(stack, None)))
    return found
