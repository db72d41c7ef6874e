"""The desired-state document: everything a stack program registered, as stable, reviewable JSON.

``desired_state(run, stack)`` turns a ``gpupools.testing.Run`` into a plain dict:

* one entry per registered resource with its ``type``, logical ``name``, ``parent``, ``custom``,
  ``inputs`` (secrets replaced by ``[secret]``), ``secretPaths``, ``options`` (ignoreChanges,
  replaceOnChanges, deleteBeforeReplace, dependencies, ...) and ``provider``;
* the stack outputs, secret ones replaced by ``[secret]``.

Resources are named by an *address*, ``<type>::<name>`` (``azure-native:containerservice:AgentPool::ml-dev-t4s``),
instead of a URN: a URN embeds the stack and project names and the parent's type chain, which would
make two stacks' documents, or a reparented resource, differ on every line. Parents, providers,
dependencies and resource references inside inputs are rendered as addresses too. Pulumi lets two
resources share a type and name when their parents' types differ; only then is the address
qualified with the parent type chain (``<parent type>$<type>::<name>``, the URN's own spelling).

Stability: resources are sorted by address and ``render_json`` uses ``sort_keys=True``, so two
runs of the same program give byte-identical documents (the recording runtime's fakes are
deterministic, and nothing here reads the clock or a random source).

``kubernetes_manifests(run)`` renders every Kubernetes object as a manifest through
``gpupools.testing.manifests.to_manifest``, sorted so the YAML is stable too.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import yaml

from gpupools.testing import REDACTED

if TYPE_CHECKING:
    from gpupools.testing import Registration, Run

FORMAT_VERSION = 1
"""Bumped whenever the document's shape changes, so a diff across versions can say so."""

ROOT_TYPE = "pulumi:pulumi:Stack"

KIND_ORDER = (
    "Namespace",
    "CustomResourceDefinition",
    "PriorityClass",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
)
"""Kinds listed first in ``kubernetes.yaml`` (in this order), so ``kubectl apply -f`` of the file
creates namespaces and RBAC before the workloads that need them; every other kind follows."""


def _urn_tail(urn: str) -> str:
    """``urn:pulumi:<stack>::<project>::<qualified type>::<name>`` -> ``<qualified type>::<name>``."""
    parts = urn.split("::", 2)
    return parts[2] if len(parts) == 3 else urn


def addresses(registrations: Iterable[Registration]) -> dict[str, str]:
    """URN -> stable address for every registration (see the module docstring)."""
    regs = list(registrations)
    counts: dict[str, int] = {}
    for reg in regs:
        short = f"{reg.type}::{reg.name}"
        counts[short] = counts.get(short, 0) + 1
    result: dict[str, str] = {}
    for reg in regs:
        short = f"{reg.type}::{reg.name}"
        result[reg.urn] = short if counts[short] == 1 else _urn_tail(reg.urn)
    return result


def _provider_urn(reference: str) -> str:
    """A provider reference is ``<urn>::<id>``; the URN itself contains ``::`` separators."""
    urn, _, _ = reference.rpartition("::")
    return urn or reference


def _references(value: Any, by_urn: Mapping[str, str]) -> Any:
    """Replace resource references and URN strings inside ``value`` by addresses."""
    if isinstance(value, dict):
        if set(value) == {"urn", "id"} and isinstance(value.get("urn"), str):
            return {"resource": by_urn.get(value["urn"], _urn_tail(value["urn"]))}
        return {k: _references(v, by_urn) for k, v in value.items()}
    if isinstance(value, list):
        return [_references(v, by_urn) for v in value]
    if isinstance(value, str) and value in by_urn:
        return by_urn[value]
    return value


def resource_entry(reg: Registration, by_urn: Mapping[str, str]) -> dict[str, Any]:
    """One resource of the document."""
    options: dict[str, Any] = {}
    for key, value in reg.options.items():
        if key == "dependencies":
            options[key] = sorted(by_urn.get(urn, _urn_tail(urn)) for urn in value)
        else:
            options[key] = _references(value, by_urn)
    provider = None
    if reg.provider:
        urn = _provider_urn(reg.provider)
        provider = by_urn.get(urn, _urn_tail(urn))
    parent = by_urn.get(reg.parent) if reg.parent else None
    return {
        "address": by_urn[reg.urn],
        "type": reg.type,
        "name": reg.name,
        "custom": reg.custom,
        "parent": parent,
        "provider": provider,
        "inputs": _references(reg.redacted_inputs, by_urn),
        "secretPaths": list(reg.secret_paths),
        "options": options,
    }


def redacted_outputs(run: Run) -> dict[str, Any]:
    """Stack outputs with every secret output replaced by ``[secret]``."""
    secret = set(run.secret_outputs)
    return {name: (REDACTED if name in secret else value) for name, value in sorted(run.outputs.items())}


def desired_state(run: Run, stack: str, project: str = "gpupools") -> dict[str, Any]:
    """The desired-state document of one program run (plain JSON-able data, stably ordered)."""
    regs = [r for r in run.registrations if r.type != ROOT_TYPE]
    by_urn = addresses(regs)
    resources = sorted((resource_entry(r, by_urn) for r in regs), key=lambda e: e["address"])
    return {
        "formatVersion": FORMAT_VERSION,
        "project": project,
        "stack": stack,
        "resources": resources,
        "outputs": redacted_outputs(run),
    }


def render_json(document: Mapping[str, Any]) -> str:
    """The document as written to ``desired-state.json``: sorted keys, 2-space indent, final newline."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# --- Kubernetes manifests -------------------------------------------------------------------------


def _manifest_key(manifest: Mapping[str, Any]) -> tuple[int, str, str, str, str]:
    kind = str(manifest.get("kind", ""))
    metadata = manifest.get("metadata") or {}
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return (
        rank,
        kind,
        str(manifest.get("apiVersion", "")),
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
    )


def kubernetes_manifests(run: Run) -> list[dict[str, Any]]:
    """Every Kubernetes object of the run as a manifest, namespaces and RBAC first, then by kind/namespace/name."""
    from gpupools.testing.manifests import to_manifest

    return sorted((to_manifest(r) for r in run.kubernetes_objects()), key=_manifest_key)


class _ManifestDumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that writes multi-line strings (config files in ConfigMaps) as ``|`` blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ManifestDumper.add_representer(str, _represent_str)


def render_yaml(manifests: Iterable[Mapping[str, Any]]) -> str:
    """A multi-document YAML stream (``---`` before each object), keys sorted: stable and ``kubectl``-ready."""
    chunks = [
        "---\n"
        + yaml.dump(
            dict(m),
            Dumper=_ManifestDumper,
            sort_keys=True,
            default_flow_style=False,
            allow_unicode=True,
            width=4096,
        )
        for m in manifests
    ]
    return "".join(chunks)
