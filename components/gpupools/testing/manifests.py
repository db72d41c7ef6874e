"""Turn recorded pulumi-kubernetes registrations into plain Kubernetes manifests.

A pulumi-kubernetes object registers as ``kubernetes:<group>/<version>:<Kind>`` (``kubernetes:core/v1:ConfigMap``,
``kubernetes:apps/v1:DaemonSet``) with the object's fields as camelCase inputs. ``to_manifest`` gives back
the object a ``kubectl apply`` would send: ``apiVersion`` (``v1`` for the core group), ``kind``,
``metadata``, then the remaining top-level fields (``spec``, ``data``, ...). The tests validate these
against the Kubernetes OpenAPI schemas; offline synth writes them as YAML for ``kubectl diff`` or a
scanner.

Usage::

    run = run_program(program)
    manifests = [to_manifest(r) for r in run.kubernetes_objects()]
"""

from __future__ import annotations

from typing import Any

from gpupools.testing import Registration

TYPE_PREFIX = "kubernetes:"
"""Every pulumi-kubernetes type token starts with this."""

NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")
"""pulumi-kubernetes types that are not one Kubernetes object (Helm releases, YAML and Kustomize
groups): they have no single manifest."""

INTERNAL_PREFIX = "__"
"""Keys Pulumi may add to inputs for its own bookkeeping (``__defaults`` and the like); no
Kubernetes field starts with it."""


def api_version(type_token: str) -> str:
    """``kubernetes:apps/v1:DaemonSet`` -> ``apps/v1``; ``kubernetes:core/v1:ConfigMap`` -> ``v1``."""
    if not type_token.startswith(TYPE_PREFIX) or type_token.startswith(NOT_OBJECTS):
        raise ValueError(f"{type_token} is not a Kubernetes object type")
    try:
        _, group_version, _kind = type_token.split(":")
        group, version = group_version.split("/")
    except ValueError:
        raise ValueError(f"{type_token} is not a kubernetes:<group>/<version>:<Kind> type") from None
    return version if group == "core" else f"{group}/{version}"


def kind(type_token: str) -> str:
    """``kubernetes:apps/v1:DaemonSet`` -> ``DaemonSet``."""
    api_version(type_token)  # validates the shape
    return type_token.rsplit(":", 1)[1]


def _clean(value: Any) -> Any:
    """Drop Pulumi-internal keys and sort mapping keys, recursively, for stable output."""
    if isinstance(value, dict):
        return {k: _clean(value[k]) for k in sorted(value) if not str(k).startswith(INTERNAL_PREFIX)}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def to_manifest(registration: Registration, *, redact: bool = True) -> dict[str, Any]:
    """The plain Kubernetes manifest of one recorded pulumi-kubernetes registration.

    Args:
        registration: a ``kubernetes:<group>/<version>:<Kind>`` registration (see
            ``Run.kubernetes_objects``); anything else raises ``ValueError``.
        redact: use the redacted inputs (default True), so a manifest written to disk or printed
            never carries a secret value; pass False to get the real values.

    Returns:
        ``{"apiVersion", "kind", "metadata", <other top-level fields, sorted>}``; every nested
        mapping has its keys sorted, so two runs give identical documents. An object registered
        without ``metadata.name`` keeps none (Pulumi would auto-name it at deploy time).
    """
    token = registration.type
    if not registration.custom:
        raise ValueError(f"{token} ({registration.name}) is a component, not a Kubernetes object")
    inputs = _clean(registration.redacted_inputs if redact else registration.inputs)
    manifest: dict[str, Any] = {
        "apiVersion": api_version(token),
        "kind": kind(token),
        "metadata": inputs.pop("metadata", {}),
    }
    inputs.pop("apiVersion", None)
    inputs.pop("kind", None)
    manifest.update(inputs)
    return manifest
