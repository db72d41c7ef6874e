"""Contract checks of Karpenter custom resources against the CRDs of the pinned upstream releases.

``validate_custom_resource(obj)`` returns the problems the API server would report on a create of
``obj`` (an empty list: it would be accepted); ``assert_valid_custom_resource(obj)`` raises an
``AssertionError`` listing them. The schemas are the ``openAPIV3Schema`` of every served version,
committed under ``tests/crds/`` with their source (repository, path, tag, commit, date read) by
``scripts/update-crd-schemas``; ``tests/crds/README.md`` says what is pinned and why.

* ``karpenter-provider-aws/``: aws/karpenter-provider-aws v1.14.1, ``karpenter.sh/v1`` NodePool,
  ``karpenter.k8s.aws/v1`` EC2NodeClass and ``karpenter.sh/v1alpha1`` NodeOverlay (Karpenter on EKS).
* ``karpenter-provider-azure/``: Azure/karpenter-provider-azure v1.14.2, ``karpenter.sh/v1`` NodePool
  (its copy carries the Azure label-domain rules) and ``karpenter.azure.com/v1beta1`` (and
  ``v1alpha2``) AKSNodeClass (AKS Node Auto Provisioning).
* ``prometheus-operator/``: prometheus-operator/prometheus-operator v0.93.0, ``monitoring.coreos.com/v1``
  ServiceMonitor (the DCGM exporter's, with ``gpupools:gpuMetrics.serviceMonitor``).
* ``eks-auto-mode/``: EKS Auto Mode's ``eks.amazonaws.com/v1`` NodeClass, as datreeio/CRDs-catalog
  holds it (AWS publishes no source for it; ``tests/crds/README.md``).
* ``kueue/``: kubernetes-sigs/kueue v0.19.2, ``kueue.x-k8s.io/v1beta2`` (and ``v1beta1``)
  ResourceFlavor, ClusterQueue, Cohort, LocalQueue, AdmissionCheck and ProvisioningRequestConfig
  (``gpupools:queueing``).

A schema is picked by ``apiVersion`` and ``kind``; both providers serve ``karpenter.sh/v1`` NodePool,
so a NodePool is checked against the provider its ``spec.template.spec.nodeClassRef.group`` names
(``karpenter.k8s.aws`` or ``karpenter.azure.com``), against both when it names neither, or against
the one ``provider=`` asks for.

What is checked, in the API server's order (kubernetes/kubernetes,
``staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/validator.go``
``customResourceValidator.Validate`` and ``strategy.go`` ``hasBlockingErr``):

1. ``apiVersion``/``kind`` name a served version of a pinned CRD.
2. Defaults from the schema are applied first (structural defaulting runs when the request is
   decoded, before validation), so rules see ``consolidationPolicy: WhenEmptyOrUnderutilized`` and
   the like exactly as the server does.
3. ``metadata``: ``name`` a DNS-1123 subdomain (``NameIsDNSSubdomain``), no ``namespace`` on the
   cluster-scoped kinds, label keys qualified names and values valid label values
   (k8s.io/apimachinery ``pkg/api/validation/objectmeta.go`` and ``pkg/util/validation/validation.go``).
4. The OpenAPI schema (a ``^(?i)`` pattern, valid in Go's RE2, moved to ``(?i)^`` for Python), with ``jsonschema``'s Draft 4 validator (OpenAPI 3.0's schema object is
   Draft 4-like: boolean ``exclusiveMinimum``), after translating the structural-schema dialect:
   ``nullable: true`` adds ``null`` to ``type``; ``x-kubernetes-int-or-string`` without an
   ``anyOf`` means integer or string; an object schema with ``properties`` and neither
   ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields`` rejects unknown fields
   (the server would prune them silently, or refuse them with ``fieldValidation=Strict``; either
   way the field does nothing, so it is an error here). ``x-kubernetes-list-type: set`` and ``map``
   (with ``x-kubernetes-list-map-keys``) are checked for duplicates as the server does
   (``structurallisttype.ValidateListSetsAndMaps``). ``format`` is not checked: these CRDs use it
   only on integers (``int32``/``int64``) and on status timestamps.
5. The ``x-kubernetes-validations`` CEL rules, with cel-python (module ``celpy``), unless step 4
   found a blocking error (type, required, enum, maxLength, maxItems, maxProperties), as the server
   skips them then. Kubernetes' CEL libraries add functions to standard CEL; the rules of the pinned
   CRDs use two of them, supplied here: ``<string>.find(<regex>)`` (the Kubernetes regex library:
   the first match, or ``""``) and ``<string>.split(<separator>)`` (the cel-go strings extension).
   Everything else they use (``all``, ``exists``, ``filter``, ``has``, ``in``, ``size``,
   ``matches``, ``startsWith``, ``endsWith``, ``contains``, ``int``) is standard CEL that celpy
   evaluates. A rule that fails to evaluate is reported, as the server rejects the object then.
   One syntax gap is bridged: CEL allows a trailing comma in a list literal and the Azure NodePool's
   label-domain rules have one, which celpy's parser refuses, so it is removed before compiling.

Rules not evaluated: the transition rules (any rule that reads ``oldSelf``), which run only on
updates against the stored object: NodePool ``nodeClassRef`` "nodeClassRef.group is immutable" and
"nodeClassRef.kind is immutable", and "Cannot transition NodePool between static and dynamic"
(``replicas``). ``messageExpression`` is not evaluated (none of the pinned rules uses it; ``message``
is reported). Cost limits are not modelled.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import re2
import yaml
from celpy import celtypes
from gpupools.kubernetes.crds import AUTO_MODE_NODE_CLASS_SCHEMA

CRD_DIR = Path(__file__).parent / "crds"

#: Provider name -> the directory under ``tests/crds`` holding its release's CRD schemas.
PROVIDER_DIRS = {
    "aws": "karpenter-provider-aws",
    "azure": "karpenter-provider-azure",
    "prometheus-operator": "prometheus-operator",
    "kueue": "kueue",
    # Shipped with the package (the sim installs it): gpupools.kubernetes.crds.AUTO_MODE_NODE_CLASS_SCHEMA.
    "eks-auto-mode": str(AUTO_MODE_NODE_CLASS_SCHEMA.parent),
}

#: The API group of each provider's node class, which a NodePool's ``nodeClassRef.group`` names.
NODE_CLASS_GROUPS = {"karpenter.k8s.aws": "aws", "karpenter.azure.com": "azure", "eks.amazonaws.com": "aws"}
"""The NodePool CRD a NodePool is checked against, by its node class's group. EKS Auto Mode's
NodePools (``eks.amazonaws.com``) against the AWS provider's: Auto Mode runs AWS's Karpenter and
publishes no NodePool CRD of its own."""

#: jsonschema keywords whose failures are "blocking" for CEL in the API server (``hasBlockingErr``:
#: ErrorTypeTypeInvalid, ErrorTypeRequired, ErrorTypeNotSupported, ErrorTypeTooLong, ErrorTypeTooMany).
BLOCKING_KEYWORDS = frozenset({"type", "required", "enum", "maxLength", "maxItems", "maxProperties"})

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class CrdVersion:
    """One served version of a pinned CRD: where it came from and its schema."""

    provider: str
    group: str
    kind: str
    version: str
    scope: str
    schema: Mapping[str, Any]
    source: Mapping[str, str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@functools.lru_cache(maxsize=1)
def pinned_crds() -> tuple[CrdVersion, ...]:
    """Every served version of every CRD committed under ``tests/crds``."""
    found = []
    for provider, directory in sorted(PROVIDER_DIRS.items()):
        for path in sorted((CRD_DIR / directory).glob("*.yaml")):  # an absolute directory stays itself
            data = yaml.safe_load(path.read_text())
            for version in data["versions"]:
                found.append(
                    CrdVersion(
                        provider=provider,
                        group=data["group"],
                        kind=data["kind"],
                        version=version["name"],
                        scope=data["scope"],
                        schema=version["openAPIV3Schema"],
                        source=data["source"],
                    )
                )
    return tuple(found)


def pinned_release(provider: str) -> str:
    """The release tag the ``provider``'s schemas were read at (one tag per provider)."""
    [tag] = {crd.source["tag"] for crd in pinned_crds() if crd.provider == provider}
    return tag


def crds_for(api_version: str, kind: str) -> list[CrdVersion]:
    """The pinned CRD versions serving ``apiVersion``/``kind`` (one per provider that serves it)."""
    return [crd for crd in pinned_crds() if crd.api_version == api_version and crd.kind == kind]


def validate_custom_resource(obj: Mapping[str, Any], provider: str | None = None) -> list[str]:
    """The problems the API server would report on creating ``obj``, each ``<field path>: <message>``;
    empty when it would be accepted. ``provider`` (``aws`` or ``azure``) picks the CRD when more
    than one provider serves the kind; by default a NodePool's ``nodeClassRef.group`` decides."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    candidates = crds_for(str(api_version), str(kind))
    if not candidates:
        served = sorted({f"{c.api_version} {c.kind}" for c in pinned_crds()})
        return [f"apiVersion/kind: {api_version} {kind} is not served by a pinned CRD (served: {', '.join(served)})"]
    chosen = provider or _provider_from_node_class_ref(obj)
    if chosen is not None:
        if chosen not in PROVIDER_DIRS:
            raise ValueError(f"provider must be one of {sorted(PROVIDER_DIRS)}, not {chosen!r}")
        matching = [c for c in candidates if c.provider == chosen]
        if not matching:
            return [f"apiVersion/kind: {api_version} {kind} is not served by the pinned {chosen} release"]
        candidates = matching
    problems: list[str] = []
    for crd in candidates:
        for problem in _validate_against(obj, crd):
            if problem not in problems:
                problems.append(problem)
    return problems


def assert_valid_custom_resource(obj: Mapping[str, Any], provider: str | None = None) -> None:
    """``AssertionError`` listing every problem ``validate_custom_resource`` finds in ``obj``."""
    problems = validate_custom_resource(obj, provider)
    if problems:
        name = (obj.get("metadata") or {}).get("name")
        listed = "\n  ".join(problems)
        raise AssertionError(f"{obj.get('kind')} {name!r} is not valid against the pinned CRD:\n  {listed}")


def transition_rules() -> list[tuple[str, str, str]]:
    """``(provider, kind, rule)`` of every rule that reads ``oldSelf`` (evaluated on updates only, not here)."""
    found = []
    for crd in pinned_crds():
        for _path, rule in _rules(crd.schema, ""):
            if "oldSelf" in rule["rule"]:
                found.append((crd.provider, f"{crd.api_version} {crd.kind}", rule["rule"]))
    return found


# --- validation steps ------------------------------------------------------------------------------


def _provider_from_node_class_ref(obj: Mapping[str, Any]) -> str | None:
    ref = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")
    if isinstance(ref, Mapping):
        return NODE_CLASS_GROUPS.get(str(ref.get("group")))
    return None


def _validate_against(obj: Mapping[str, Any], crd: CrdVersion) -> list[str]:
    instance = copy.deepcopy(dict(obj))
    _apply_defaults(instance, crd.schema)
    problems = _metadata_problems(instance.get("metadata"), crd)
    validator = _validator(crd.provider, crd.api_version, crd.kind)
    blocking = False
    for error in sorted(validator.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        blocking = blocking or error.validator in BLOCKING_KEYWORDS
        problems.extend(_describe(error))
    problems.extend(_list_type_problems(instance, crd.schema, ""))
    if blocking:
        problems.append("<root>: CEL validation rules were not checked because the object has the errors above")
    else:
        problems.extend(_cel_problems(instance, crd.schema, ""))
    return problems


def _apply_defaults(value: Any, schema: Mapping[str, Any]) -> None:
    """Structural defaulting: a missing property with a ``default`` gets it, in every present object."""
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _apply_defaults(value[name], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for item in value.values():
                _apply_defaults(item, additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            _apply_defaults(item, schema["items"])


def _metadata_problems(metadata: Any, crd: CrdVersion) -> list[str]:
    if not isinstance(metadata, Mapping):
        return ["metadata: Required value"]
    problems = []
    name = metadata.get("name")
    if not name:
        problems.append("metadata.name: Required value: name or generateName is required")
    elif not isinstance(name, str) or len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        problems.append(f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 subdomain (at most 253 characters)")
    if crd.scope == "Cluster" and metadata.get("namespace"):
        problems.append(f"metadata.namespace: Forbidden: not allowed on this type ({crd.kind} is cluster-scoped)")
    for key, value in (metadata.get("labels") or {}).items():
        problems.extend(f"metadata.labels[{key}]: {p}" for p in _qualified_name_problems(key))
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            problems.append(f"metadata.labels[{key}]: Invalid value: {value!r}: a valid label value (at most 63 characters)")
    for key in metadata.get("annotations") or {}:
        problems.extend(f"metadata.annotations[{key}]: {p}" for p in _qualified_name_problems(key))
    return problems


def _qualified_name_problems(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    problems = []
    if "/" in key and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        problems.append(f"Invalid value: {key!r}: the prefix must be a DNS subdomain")
    if len(name) > 63 or not QUALIFIED_NAME.match(name):
        problems.append(f"Invalid value: {key!r}: the name part must be a qualified name (at most 63 characters)")
    return problems


@functools.cache
def _validator(provider: str, api_version: str, kind: str) -> jsonschema.Draft4Validator:
    """A Draft 4 validator of the structural schema in plain JSON Schema terms (``x-kubernetes-*``
    keywords are kept; jsonschema ignores keywords it does not know)."""
    [crd] = [c for c in crds_for(api_version, kind) if c.provider == provider]
    return jsonschema.Draft4Validator(_translate(crd.schema))


def _translate(node: Any) -> Any:
    if isinstance(node, list):
        return [_translate(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out = {key: _translate(value) for key, value in node.items() if key not in ("default", "description")}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["type"] = ["integer", "string"]
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern.startswith("^(?i)"):
        # Go's RE2 (the API server's regex engine) takes an inline flag anywhere; Python only at the
        # start. Kueue's name patterns are "^(?i)[a-z]...": the same language with the flag first.
        out["pattern"] = "(?i)^" + pattern[len("^(?i)") :]
    is_object = node.get("type") == "object"
    if (
        is_object
        and "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _describe(error: jsonschema.ValidationError) -> list[str]:
    path = _path(error.absolute_path)
    if error.validator == "required":
        match = re.match(r"^'(.+)' is a required property$", error.message)
        missing = match.group(1) if match else error.message
        return [f"{_join(path, missing)}: Required value"]
    if error.validator == "additionalProperties" and error.validator_value is False:
        declared = set((error.schema.get("properties") or {}).keys())
        return [f"{_join(path, key)}: unknown field {key!r}" for key in sorted(set(error.instance) - declared)]
    if error.validator == "type":
        return [f"{path or '<root>'}: Invalid type: {error.instance!r} is not of type {error.validator_value}"]
    if error.validator == "enum":
        return [f"{path or '<root>'}: Unsupported value: {error.instance!r}: supported values: {error.validator_value}"]
    return [f"{path or '<root>'}: Invalid value: {error.message}"]


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif IDENTIFIER.match(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{part}]"
    return text


def _join(path: str, key: str) -> str:
    if not IDENTIFIER.match(key):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _list_type_problems(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    """Duplicates in ``x-kubernetes-list-type: set`` lists and duplicate keys in ``map`` lists."""
    problems: list[str] = []
    for sub_path, sub_value, sub_schema in _walk(value, schema, path):
        list_type = sub_schema.get("x-kubernetes-list-type")
        if not isinstance(sub_value, list) or list_type not in ("set", "map"):
            continue
        seen: list[Any] = []
        for index, item in enumerate(sub_value):
            if list_type == "set":
                key: Any = item
            else:
                if not isinstance(item, Mapping):
                    continue
                key = {k: item.get(k) for k in sub_schema.get("x-kubernetes-list-map-keys", [])}
            if key in seen:
                problems.append(f"{sub_path}[{index}]: Duplicate value: {key!r}")
            seen.append(key)
    return problems


def _walk(value: Any, schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """Every (path, value, schema) pair of ``value`` that its schema describes, parents first."""
    yield path, value, schema
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        for name, sub in properties.items():
            if name in value:
                yield from _walk(value[name], sub, _join(path, name))
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for name, item in value.items():
                if name not in properties:
                    yield from _walk(item, additional, _join(path, str(name)))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from _walk(item, schema["items"], f"{path}[{index}]")


def _rules(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule
    for name, sub in (schema.get("properties") or {}).items():
        yield from _rules(sub, _join(path, name))
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), Mapping):
            yield from _rules(schema[key], f"{path}[*]")


# --- CEL -------------------------------------------------------------------------------------------


def _cel_find(value: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    """Kubernetes regex library ``<string>.find(<regex>)``: the first match (RE2 syntax), or ``""``."""
    match = re2.search(str(pattern), str(value))
    return celtypes.StringType(match.group(0) if match else "")


def _cel_split(value: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    """cel-go strings extension ``<string>.split(<separator>)``: every part, empty ones included."""
    return celtypes.ListType([celtypes.StringType(part) for part in str(value).split(str(separator))])


CEL_FUNCTIONS = {"find": _cel_find, "split": _cel_split}


def _without_trailing_commas(rule: str) -> str:
    """``rule`` without a comma before a closing ``]`` or ``}`` outside string literals. CEL's grammar
    (cel-spec ``doc/langdef.md``: ``ExprList``/``MapInits`` followed by an optional ``","``) allows
    a trailing comma in list and map literals, and the Azure NodePool rules use one; celpy's
    grammar does not, so it is dropped before compiling (it changes nothing about the value)."""
    out: list[str] = []
    quote = ""
    index = 0
    while index < len(rule):
        char = rule[index]
        if quote:
            out.append(char)
            if char == "\\" and index + 1 < len(rule):
                out.append(rule[index + 1])
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
            out.append(char)
        elif char == "," and rule[index + 1 :].lstrip()[:1] in ("]", "}"):
            pass
        else:
            out.append(char)
        index += 1
    return "".join(out)


@functools.cache
def _program(rule: str) -> Any:
    environment = celpy.Environment()
    return environment.program(environment.compile(_without_trailing_commas(rule)), functions=CEL_FUNCTIONS)


def _cel_problems(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    for sub_path, sub_value, sub_schema in _walk(value, schema, path):
        for rule in sub_schema.get("x-kubernetes-validations") or []:
            if "oldSelf" in rule["rule"]:
                continue  # a transition rule: evaluated on updates only
            where = sub_path + str(rule.get("fieldPath", "")) if rule.get("fieldPath") else sub_path
            verdict = _evaluate(rule["rule"], sub_value)
            if verdict is True:
                continue
            message = rule.get("message") or f"failed rule: {rule['rule']}"
            detail = f": {verdict}" if isinstance(verdict, str) else ""
            problems.append(f"{where.lstrip('.') or '<root>'}: Invalid value: {message}{detail}")
    return problems


def _evaluate(rule: str, value: Any) -> bool | str:
    """True if ``rule`` holds for ``self = value``, False if not, a string if it cannot be evaluated."""
    try:
        result = _program(rule).evaluate({"self": celpy.json_to_cel(value)})
    except celpy.CELEvalError as error:
        return f"rule evaluation error: {error.args[0] if error.args else error}"
    if isinstance(result, celpy.CELEvalError):
        return f"rule evaluation error: {result.args[0] if result.args else result}"
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    return f"rule evaluation error: the rule returned {type(result).__name__}, not a bool"


def rules_of(kind_schema: Mapping[str, Any]) -> Sequence[str]:
    """Every CEL rule in a schema (for tests that check coverage)."""
    return [rule["rule"] for _path, rule in _rules(kind_schema, "")]
