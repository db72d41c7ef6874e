"""The component package's input types (``gpupools.xlang.args``) against the one declaration of the config.

The ``TypedDict``s stay hand-written: the Pulumi schema analyzer reads their annotations and the
string under each field, and the package's schema must not change. What the declaration
(``gpupools.config_keys``) says, they must say too: the same keys (camelCase, as the analyzer names
them), the same required ones, values of the same kind. A key added to the declaration and not
here, or the reverse, fails this test.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
from gpupools import config_keys
from gpupools.xlang import args

MIRRORED = {
    "PoolArgs": "gpuPools",
    "TaintArgs": "gpuPools.taints",
    "SharingArgs": "gpuPools.sharing",
    "ReplicasArgs": "gpuPools.sharing.mps",
    "MigArgs": "gpuPools.sharing.mig",
    "ReservationArgs": "gpuPools.reservations",
    "UpgradeArgs": "gpuPools.upgrade",
    "ClusterArgs": "cluster",
    "NetworkArgs": "network",
    "SystemPoolArgs": "systemPool",
    "AutoscalerArgs": "autoscaler",
    "MaintenanceArgs": "maintenance",
    "QueueTeamArgs": "queueing.teams",
}
"""Each input type that mirrors a config section, and the section's path in the declaration."""

REQUIRED_BY_THE_COMPONENT = {("QueueTeamArgs", "namespaces")}
"""Keys a component requires although the stack config does not: ``KueueQueues`` takes a team's
namespaces from its caller (the stack derives them from ``queueing.namespaces``)."""


def camel(name: str) -> str:
    """The analyzer's ``util.camel_case``: ``instance_types`` -> ``instanceTypes``."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def kind_of(annotation: Any) -> str:
    """The declaration's kind for a field's annotation (``Optional`` and ``NotRequired`` unwrapped)."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.NotRequired, typing.Union, typing.Required):
        return kind_of(next(a for a in arguments if a is not type(None)))
    if origin is list:
        return "list" if typing.is_typeddict(arguments[0]) else "strings"
    if origin in (dict, typing.Mapping) or annotation is dict:
        return "labels"
    if typing.is_typeddict(annotation):
        return "section"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}[annotation]


@pytest.mark.parametrize(("name", "path"), sorted(MIRRORED.items()))
def test_the_input_type_has_the_declared_keys(name: str, path: str) -> None:
    typed = getattr(args, name)
    hints = typing.get_type_hints(typed, include_extras=True)
    declared = config_keys.section(path)
    assert sorted(camel(field) for field in hints) == sorted(config_keys.keys_of(path))
    required = {camel(field) for field in typed.__required_keys__}
    assert required - {key.name for key in declared.keys if key.required} == {
        key for (type_name, key) in REQUIRED_BY_THE_COMPONENT if type_name == name
    }
    assert {key.name for key in declared.keys if key.required} <= required
    for field, annotation in hints.items():
        key = declared.key(camel(field))
        expected = "string" if key.kind == "nodes" else key.kind  # a node count crosses as text ("1" or "33%")
        assert kind_of(annotation) == expected, (name, field)
