"""The JSON Schema (draft 2020-12) of a stack file, ``Pulumi.<stack>.yaml``, built from ``gpupools.config_keys``.

Editors read it through yaml-language-server (VS Code, JetBrains, Neovim) when the stack file's
first line names it::

    # yaml-language-server: $schema=schema/stack-config.schema.json

and CI can validate a stack file with any draft 2020-12 validator before a program runs. It checks
the shape of every ``gpupools:*`` key (type, allowed values, constant bounds, required keys, unknown
keys, keys of the other cloud, GPU-only keys in ``cpuPools``) and names the AWS region; the rules
that need more than one key or a catalog stay the program's (``gpupools.rules``). A stack file the
schema refuses, the program refuses at the same path; a shape error of the program is refused by
the schema at the same path (``tests/test_config_schema.py``), with one exception JSON Schema cannot
express: ``3.0`` is an integer to it, a number (so an error) to the program.

It declares draft 2020-12 but uses only keywords draft 7 has too (``$defs`` is reached by a plain
JSON pointer): yaml-language-server documents support for "JSON Schema 7 and below" (its README on
npm), and a draft 7 validator finds the same errors (``tests/test_config_schema.py``).

Each key's ``description`` is its notes in the reference table of ``docs/configuration.md``
(``gpupools.config_reference.notes_by_key``), so the two agree by construction. A key that may be
left out also takes ``null`` (the program reads ``null`` as left out).

    python -m gpupools.config schema > schema/stack-config.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from gpupools.catalog import regions
from gpupools.config_keys import NO_DEFAULT, REGION_KEYS, STACK, UPGRADE_NODES_PATTERN, Key
from gpupools.specs import Cloud

NAMESPACE = "gpupools"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
COMMITTED = "schema/stack-config.schema.json"
"""Where the repository keeps the schema (relative to its root); a test keeps it equal to ``schema()``."""

Path = tuple[str, ...]


def refused(rule: str) -> dict[str, Any]:
    """A key that must not be there, with why. ``{"not": {}}`` rather than ``false``: python-jsonschema
    reports a ``false`` subschema's error at the mapping that holds the key (its ``descend`` returns
    before adding the key to the path), ``not`` at the key itself, as the program does."""
    return {"description": rule, "not": {}}


_CLOUD_NAMES = {Cloud.AZURE: "Azure", Cloud.AWS: "AWS"}
_SCALARS = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}


def _nullable(schema: dict[str, Any], key: Key) -> dict[str, Any]:
    """``schema`` that also takes ``null`` when ``key`` may be left out (the program reads null as absent)."""
    if key.required:
        return schema
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    if "anyOf" in schema:
        schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
    elif "type" in schema:
        schema["type"] = [schema["type"], "null"]
    return schema


def _bounds(schema: dict[str, Any], key: Key) -> dict[str, Any]:
    if key.minimum is not None:
        schema["minimum"] = key.minimum
    if key.maximum is not None:
        schema["maximum"] = key.maximum
    return schema


def _object(key: Key, path: Path, notes: dict[Path, str], gpu_only_refused: bool = False) -> dict[str, Any]:
    """A mapping of ``key.keys``: unknown keys refused; GPU-only keys refused too in a ``cpuPools`` entry."""
    properties: dict[str, Any] = {}
    for sub in key.keys:
        properties[sub.name] = (
            refused("is for GPU pools only") if gpu_only_refused and sub.gpu_only else _key(sub, (*path, sub.name), notes)
        )
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [sub.name for sub in key.keys if sub.required]
    if required:
        schema["required"] = required
    return schema


def _value(key: Key, path: Path, notes: dict[Path, str]) -> dict[str, Any]:
    """The schema of ``key``'s value, by its kind."""
    if key.kind in _SCALARS:
        schema: dict[str, Any] = {"type": _SCALARS[key.kind]}
        if key.choices:
            schema = {"enum": list(key.choices)}
        elif key.kind == "string" and key.required:
            schema["minLength"] = 1
        return _bounds(schema, key)
    if key.kind == "strings":
        items: dict[str, Any] = {"enum": list(key.choices)} if key.choices else {"type": "string"}
        return {"type": "array", "items": items}
    if key.kind == "labels":
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if key.kind == "nodes":
        return {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": UPGRADE_NODES_PATTERN}]}
    if key.kind == "section":
        schema = _object(key, path, notes)
        if key.name == "sharing":
            # Exactly one mode: the device plugin applies one sharing setting to every GPU of a node.
            schema.update(minProperties=1, maxProperties=1)
        return schema
    if key.kind == "list":
        schema = {"type": "array", "items": _object(key, path, notes, gpu_only_refused=path == ("cpuPools",))}
        if key.required:  # a required list means at least one entry (gpuPools: "must list at least one GPU pool")
            schema["minItems"] = 1
        return schema
    raise ValueError(f"{'.'.join(path)}: unknown kind {key.kind!r}")


def _key(key: Key, path: Path, notes: dict[Path, str]) -> dict[str, Any]:
    """``key``'s schema with its description (the reference's notes) and its default."""
    schema = _nullable(_value(key, path, notes), key)
    description = notes.get(path) or (notes.get(("gpuPools", *path[1:])) if path[:1] == ("cpuPools",) else None)
    if description:
        schema = {"description": description, **schema}
    if key.default is not NO_DEFAULT:
        schema["default"] = key.default
    return schema


def _mask(key: Key, cloud: Cloud) -> dict[str, Any] | None:
    """What refuses, under ``cloud``, each key below ``key`` declared for the other cloud only, at
    the key's own path (``items`` first for a list); ``None`` when there is none."""
    properties: dict[str, Any] = {}
    for sub in key.keys:
        if cloud not in sub.clouds:
            properties[sub.name] = refused(f"is {_CLOUD_NAMES[sub.clouds[0]]} only")
        elif (inner := _mask(sub, cloud)) is not None:
            properties[sub.name] = inner
    if not properties:
        return None
    return {"items": {"properties": properties}} if key.kind == "list" else {"properties": properties}


def _other_cloud_mask(cloud: Cloud) -> dict[str, Any]:
    """The top-level mask of ``cloud`` (``_mask``), keyed with the namespace."""
    inner = _mask(STACK, cloud) or {"properties": {}}
    return {"properties": {f"{NAMESPACE}:{name}": value for name, value in inner["properties"].items()}}


def _region_rules() -> list[dict[str, Any]]:
    """Under ``cloud: aws``, ``aws:region`` is one of the pinned AWS regions (``rules.check_region``).
    Azure's location is left to the program: it also takes display names in any case (``East US``)."""
    return [
        {
            "if": {"properties": {f"{NAMESPACE}:cloud": {"const": Cloud.AWS.value}}, "required": [f"{NAMESPACE}:cloud"]},
            "then": {"properties": {REGION_KEYS[Cloud.AWS]: {"enum": sorted(regions.known_regions(Cloud.AWS))}}},
        }
    ]


MAX_ZONES = 6
"""The most zones the pool-size rules spell out (no AWS region has more)."""


def _max_size(limit: int) -> dict[str, Any]:
    """Both pool lists' ``maxSize`` at most ``limit``."""
    item = {"properties": {"maxSize": {"maximum": limit}}}
    return {"properties": {f"{NAMESPACE}:{name}": {"items": item} for name in ("gpuPools", "cpuPools")}}


def _when(**values: Any) -> dict[str, Any]:
    """``if`` the top-level keys have these values (``cloud="aws"``; ``provisioner=None``: left out)."""
    properties, required, absent = {}, [], []
    for name, value in values.items():
        key = f"{NAMESPACE}:{name}"
        if value is None:
            absent.append(key)
        else:
            properties[key] = {"const": value}
            required.append(key)
    condition: dict[str, Any] = {"properties": properties, "required": required}
    if absent:
        condition["not"] = {"anyOf": [{"required": [key]} for key in absent]}
    return condition


def _pool_size_rules() -> list[dict[str, Any]]:
    """A pool's ``maxSize`` at most the cloud's limit for one pool (``rules.check_gpu_pool``): AKS's
    ``AKS_MAX_NODES_PER_POOL`` per agent pool; under Karpenter ``KARPENTER_MAX_NODES_PER_POOL``; on EKS
    under cluster-autoscaler ``EKS_MAX_NODES_PER_GROUP`` per zone, the pool's own zones if it has
    them, else the cluster's (``EKS_DEFAULT_ZONES`` when the cluster names none)."""
    from gpupools.rules import AKS_MAX_NODES_PER_POOL, EKS_DEFAULT_ZONES, EKS_MAX_NODES_PER_GROUP, KARPENTER_MAX_NODES_PER_POOL

    rules = [
        {"if": _when(cloud=Cloud.AZURE.value), "then": _max_size(AKS_MAX_NODES_PER_POOL)},
        {"if": _when(cloud=Cloud.AWS.value, provisioner="karpenter"), "then": _max_size(KARPENTER_MAX_NODES_PER_POOL)},
    ]
    under_autoscaler = [
        _when(cloud=Cloud.AWS.value, provisioner="cluster-autoscaler"),
        _when(cloud=Cloud.AWS.value, provisioner=None),
    ]
    for zones in range(1, MAX_ZONES + 1):
        own = {"properties": {"zones": {"minItems": zones, "maxItems": zones}}, "required": ["zones"]}
        per_pool = {"if": own, "then": {"properties": {"maxSize": {"maximum": EKS_MAX_NODES_PER_GROUP * zones}}}}
        cluster_zones: dict[str, Any] = {"properties": {"zones": {"minItems": zones, "maxItems": zones}}, "required": ["zones"]}
        if zones == EKS_DEFAULT_ZONES:
            cluster_zones = {"anyOf": [cluster_zones, {"not": {"required": ["zones"]}}]}
        by_cluster = {
            "if": {"not": {"required": ["zones"]}},
            "then": {"properties": {"maxSize": {"maximum": EKS_MAX_NODES_PER_GROUP * zones}}},
        }
        for condition in under_autoscaler:
            rules.append(
                {
                    "if": condition,
                    "then": {"properties": {f"{NAMESPACE}:{n}": {"items": per_pool} for n in ("gpuPools", "cpuPools")}},
                }
            )
            rules.append(
                {
                    "if": {**condition, "properties": {**condition["properties"], f"{NAMESPACE}:cluster": cluster_zones}},
                    "then": {"properties": {f"{NAMESPACE}:{n}": {"items": by_cluster} for n in ("gpuPools", "cpuPools")}},
                }
            )
    return rules


def _automatic_rules() -> list[dict[str, Any]]:
    """``cluster.sku: Automatic`` (``config.check_automatic_keys``): ``provisioner: karpenter``, a region
    of ``regions.AKS_AUTOMATIC_REGIONS``, no ``network``, ``devicePlugin`` or ``systemPool.minSize``, no
    local accounts, no ServiceMonitor, and no GPU pool with ``gpuDriver: install``."""
    from gpupools.config import AUTOMATIC_REFUSED_KEYS
    from gpupools.gpu_driver import AUTOMATIC_INSTALL_WHY
    from gpupools.specs import AKS_AUTOMATIC

    cluster = f"{NAMESPACE}:cluster"
    automatic = {
        "properties": {
            f"{NAMESPACE}:cloud": {"const": Cloud.AZURE.value},
            cluster: {"properties": {"sku": {"const": AKS_AUTOMATIC}}, "required": ["sku"]},
        },
        "required": [f"{NAMESPACE}:cloud", cluster],
    }
    then: dict[str, Any] = {
        "properties": {
            f"{NAMESPACE}:provisioner": {"const": "karpenter", "description": "AKS Automatic runs Node Auto Provisioning"},
            REGION_KEYS[Cloud.AZURE]: {"enum": sorted(regions.AKS_AUTOMATIC_REGIONS)},
            **{f"{NAMESPACE}:{key}": refused(why) for key, why in AUTOMATIC_REFUSED_KEYS.items()},
            cluster: {"properties": {"allowLocalAccounts": {"const": False}}},
            f"{NAMESPACE}:systemPool": {"properties": {"minSize": refused("gpupools' system NodePool keeps no minimum")}},
            f"{NAMESPACE}:gpuMetrics": {"properties": {"serviceMonitor": {"const": False}}},
            f"{NAMESPACE}:gpuPools": {
                "items": {"properties": {"gpuDriver": {"not": {"const": "install"}, "description": AUTOMATIC_INSTALL_WHY}}}
            },
        },
        "required": [f"{NAMESPACE}:provisioner"],
    }
    return [{"if": automatic, "then": then}]


def config_schema(notes: dict[Path, str]) -> dict[str, Any]:
    """The schema of a stack file's ``config:`` map."""
    properties = {f"{NAMESPACE}:{key.name}": _key(key, (key.name,), notes) for key in STACK.keys}
    properties[REGION_KEYS[Cloud.AZURE]] = {"type": "string"}
    properties[REGION_KEYS[Cloud.AWS]] = {"type": "string"}
    known = "|".join(key.name for key in STACK.keys)
    clouds = [
        {
            "if": {"properties": {f"{NAMESPACE}:cloud": {"const": cloud.value}}, "required": [f"{NAMESPACE}:cloud"]},
            "then": _other_cloud_mask(cloud),
        }
        for cloud in Cloud
    ]
    return {
        "type": "object",
        "properties": properties,
        "patternProperties": {f"^{NAMESPACE}:(?!({known})$)": refused("is not a known key")},
        "required": [f"{NAMESPACE}:{key.name}" for key in STACK.keys if key.required],
        "allOf": clouds + _region_rules() + _pool_size_rules() + _automatic_rules(),
    }


def schema() -> dict[str, Any]:
    """The schema of a whole ``Pulumi.<stack>.yaml``: its ``config:`` map is ``#/$defs/config``;
    the file's other keys (``secretsprovider``, ``encryptionsalt``, ...) are Pulumi's and pass."""
    from gpupools.config_reference import notes_by_key

    return {
        "$schema": DRAFT,
        "title": "gpupools stack file (Pulumi.<stack>.yaml)",
        "description": "The gpupools:* keys of a stack's config: map, as docs/configuration.md describes them.",
        "type": "object",
        "properties": {"config": {"$ref": "#/$defs/config"}},
        "$defs": {"config": config_schema(notes_by_key())},
    }


def text() -> str:
    """``schema()`` as the committed file holds it: two-space JSON and a final newline."""
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"
