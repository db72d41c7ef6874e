"""The JSON Schema of a stack file (``python -m gpupools.config schema``) against the program.

* it passes the draft 2020-12 metaschema and equals the committed ``schema/stack-config.schema.json``;
* every example ``Pulumi.<stack>.yaml`` names it on its first line and is valid under it;
* over the bad-input catalogue: a config the schema refuses, the program refuses at one of the
  schema's paths; a config the program refuses with a shape rule (type, allowed value, required,
  unknown key, the other cloud's key, a GPU-only key in ``cpuPools``), the schema refuses at the
  program's path;
* the declaration (``gpupools.config_keys``) and the reference agree: every declared default is
  the one ``config.parse`` applies, every named rule exists.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from gpupools import config, config_keys, config_reference, config_schema
from gpupools.errors import ConfigError
from gpupools.specs import Cloud
from gpupools.testing import PROJECT_ROOT

from tests.examples import EXAMPLE_FILES
from tests.test_bad_input_catalogue import STACK_CASES
from tests.test_config import AWS, AZURE, with_key
from tests.test_cpu_pools import BAD as CPU_POOL_BAD
from tests.test_cpu_pools import with_cpu

ROOT = Path(PROJECT_ROOT)
STACK_FILES = list(EXAMPLE_FILES)
SCHEMA = config_schema.schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

SHAPE_RULES = (
    "is not a known key",
    "is required",
    "must not be empty",
    "must be a string",
    "must be an integer",
    "must be a list",
    "must be a mapping",
    "must be a number",
    "must be one of ",
    "must be true or false",
    "is Azure only",
    "is AWS only",
    "is for GPU pools only",
    "must set exactly one mode",
    "must be a quoted",
    "must be a whole number >= 1",
    "must be a node count or a percentage",
    "must be >= 0",
    "must be >= 1",
    "must be from 0 to 1",
    "must be between 0 and 1",
)
"""The rules of ``gpupools.config`` that are about one key's shape (and the constant bounds the
declaration carries): the schema must refuse each at the same path."""


CROSS_KEY_RULES = (
    "must be one of the ",
    "is required unless",
    "is AWS only (Capacity Blocks",
)
"""Rules worded like shape rules that need another key or the cloud and a value (the cluster's
zones, the pool's zones, ``kind: capacityBlock`` on Azure): ``gpupools.rules``' and the program's only."""


def _path(parts: list[Any]) -> str:
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def schema_paths(values: dict[str, Any]) -> set[str]:
    """The config paths the schema refuses in ``values``, written as the program writes them
    (``gpupools:gpuPools[1].maxSize``). An unknown or missing key is named by the key itself, as an
    editor underlines it, where jsonschema reports the mapping that holds it."""
    out: set[str] = set()
    for error in VALIDATOR.iter_errors({"config": values}):
        parts = list(error.absolute_path)[1:]
        if error.validator == "additionalProperties":
            known = error.schema.get("properties", {})
            out.update(_path([*parts, key]) for key in error.instance if key not in known)
        elif error.validator == "required":
            out.update(_path([*parts, key]) for key in error.validator_value if key not in error.instance)
        elif parts:
            out.add(_path(parts))
    return out


def _decoded(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with Pulumi's JSON-string objects decoded, as ``config.parse`` reads them (a stack file
    holds YAML); a string that is not JSON stays (the program refuses it: ``must be valid YAML/JSON``)."""

    def decode(value: Any) -> Any:
        if isinstance(value, str) and value[:1] in ("{", "["):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value

    return {key: decode(value) for key, value in raw.items()}


def program_error(raw: dict[str, Any]) -> ConfigError | None:
    cloud = raw.get("gpupools:cloud")
    region = raw.get("aws:region") if cloud == "aws" else raw.get("azure-native:location")
    try:
        config.parse(raw, region=region)
    except ConfigError as error:
        return error
    return None


def test_the_schema_passes_the_draft_2020_12_metaschema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_committed_schema_is_the_generated_one() -> None:
    committed = (ROOT / config_schema.COMMITTED).read_text()
    assert committed == config_schema.text(), "run: python -m gpupools.config schema > schema/stack-config.schema.json"


def test_python_m_gpupools_config_schema_prints_it() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "components"), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "gpupools.config", "schema"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=env).stdout
    assert json.loads(out) == SCHEMA


@pytest.mark.parametrize("path", STACK_FILES, ids=[p.name for p in STACK_FILES])
def test_every_example_stack_names_the_schema_and_is_valid(path: Path) -> None:
    first = path.read_text().splitlines()[0]
    assert first == f"# yaml-language-server: $schema={config_schema.COMMITTED}"
    document = yaml.safe_load(path.read_text())
    assert sorted(schema_paths(document["config"])) == []
    assert program_error(document["config"]) is None


CASES = [(case, _decoded(raw)) for case, raw, _, _ in STACK_CASES] + [
    (case, with_cpu(base, entry)) for case, base, entry, _, _ in CPU_POOL_BAD
]


@pytest.mark.parametrize(("case", "raw"), CASES, ids=[c[0] for c in CASES])
def test_schema_and_program_refuse_a_bad_config_at_the_same_path(case: str, raw: dict[str, Any]) -> None:
    error = program_error(raw)
    assert error is not None, f"{case}: the program accepts it"
    refused = schema_paths(raw)
    if refused:
        assert error.path in refused, f"{case}: the schema refuses {sorted(refused)}, the program {error}"
    if error.rule.startswith(SHAPE_RULES) and not error.rule.startswith(CROSS_KEY_RULES):
        assert error.path in refused, f"{case}: a shape rule the schema misses: {error}"


def test_the_catalogue_has_shape_mistakes_the_schema_catches() -> None:
    caught = [case for case, raw in CASES if schema_paths(raw)]
    assert len(caught) >= 40, caught


def test_every_declared_default_is_the_one_the_program_applies() -> None:
    """A declared default (``Key.default``) is what ``config.parse`` fills in on both clouds."""
    defaults = config_reference.Defaults.read()
    specs = {Cloud.AZURE: defaults.azure, Cloud.AWS: defaults.aws}
    checked = 0
    for path, key in config_keys.walk():
        if key.default is config_keys.NO_DEFAULT or len(path) != 2 or path[0] in ("gpuPools", "cpuPools", "queueing"):
            continue
        for cloud in key.clouds:
            section = getattr(specs[cloud], _snake(path[0]))
            value = getattr(section, _snake(path[1]))
            assert getattr(value, "value", value) == key.default, (path, cloud, value)
            checked += 1
    pool = defaults.azure.gpu_pools[0]
    for name in ("minSize", "spot", "spotMaxPrice", "gpuDriver"):
        value = getattr(pool, _snake(name))
        assert getattr(value, "value", value) == config_keys.section("gpuPools").key(name).default, name
    assert checked >= 15


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).replace("gpu_metrics", "gpu_metrics")


def test_every_rule_a_key_names_exists() -> None:
    for path, key in config_keys.walk():
        for rule in key.rules:
            module, _, function = rule.rpartition(".")
            assert hasattr(importlib.import_module(f"gpupools.{module}"), function), (path, rule)


def test_a_key_the_schema_describes_has_the_reference_notes_as_its_description() -> None:
    notes = config_reference.notes_by_key()
    properties = SCHEMA["$defs"]["config"]["properties"]
    assert properties["gpupools:cost"]["properties"]["spotShare"]["description"] == notes[("cost", "spotShare")]
    pool = properties["gpupools:gpuPools"]["items"]["properties"]
    assert pool["maxSize"]["description"] == notes[("gpuPools", "maxSize")]
    described = 0
    for path in notes:
        node: Any = properties[f"gpupools:{path[0]}"]
        for name in path[1:]:
            node = node["items"] if "items" in node and "properties" not in node else node
            node = node["properties"][name]
        assert node["description"] == notes[path], path
        described += 1
    assert described == len(notes) >= 70


def test_a_declared_value_is_read_with_its_default_and_the_readers_messages() -> None:
    def value(raw: dict[str, Any], section: str, name: str, default: Any = None) -> Any:
        return config.read_value(config_keys.section(section).key(name), raw, f"gpupools:{section}", default)

    assert value({}, "smokeTest", "enabled") is False
    assert value({"enabled": True}, "smokeTest", "enabled") is True
    with pytest.raises(ConfigError, match=r"^gpupools:smokeTest\.enabled: must be true or false, got 'yes'$"):
        value({"enabled": "yes"}, "smokeTest", "enabled")
    assert value({}, "autoscaler", "scaleDownUnneededTime") == "10m"
    # A default that depends on the stack (here the cloud and the provisioner) is passed in by the caller.
    assert value({}, "nodeRepair", "enabled", default=False) is False
    assert value({}, "nodeRepair", "enabled") is None


def test_the_schema_reads_the_same_as_draft_7_for_editors_that_stop_there() -> None:
    """yaml-language-server documents "Supports JSON Schema 7 and below" (its README,
    https://npmjs.com/package/yaml-language-server): the schema uses only keywords draft 7 has too
    (``$defs`` is reached by a plain JSON pointer), so a draft 7 validator finds what draft 2020-12 finds."""
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    draft7 = jsonschema.Draft7Validator(SCHEMA)
    for case, raw in CASES[:80]:
        assert sorted(e.message for e in draft7.iter_errors({"config": raw})) == sorted(
            e.message for e in VALIDATOR.iter_errors({"config": raw})
        ), case


POOL_SHAPE_CASES = [
    ("aws-empty-gpu-pools", with_key(AWS, "gpupools:gpuPools", []), "gpupools:gpuPools"),
    (
        "azure-over-aks-pool-limit",
        with_key(AZURE, "gpupools:gpuPools", [{**AZURE["gpupools:gpuPools"][0], "maxSize": 1001}]),
        "gpupools:gpuPools[0].maxSize",
    ),
    (
        "aws-over-three-zones",
        with_key(AWS, "gpupools:gpuPools", [{**AWS["gpupools:gpuPools"][0], "maxSize": 1351}]),
        "gpupools:gpuPools[0].maxSize",
    ),
    (
        "aws-over-the-pools-own-zone",
        with_key(AWS, "gpupools:gpuPools", [{**AWS["gpupools:gpuPools"][0], "maxSize": 451, "zones": ["us-west-2a"]}]),
        "gpupools:gpuPools[0].maxSize",
    ),
    (
        "aws-cpu-pool-over-the-default-zones",
        with_key(
            with_key(AWS, "gpupools:cluster", {"name": "ml-dev"}),
            "gpupools:cpuPools",
            [{"name": "general", "instanceTypes": ["m6i.2xlarge"], "maxSize": 1351}],
        ),
        "gpupools:cpuPools[0].maxSize",
    ),
    (
        "karpenter-over-its-bound",
        with_key(
            with_key(AWS, "gpupools:provisioner", "karpenter"),
            "gpupools:gpuPools",
            [{**AWS["gpupools:gpuPools"][0], "maxSize": 1001}],
        ),
        "gpupools:gpuPools[0].maxSize",
    ),
]
"""Issue 47, 3.: the two shape mistakes the schema let through (an empty ``gpuPools``; a ``maxSize``
above the cloud's limit for one pool, per cloud and, on EKS, per zone)."""


@pytest.mark.parametrize(("case", "raw", "path"), POOL_SHAPE_CASES, ids=[c[0] for c in POOL_SHAPE_CASES])
def test_the_schema_refuses_an_empty_pool_list_and_a_pool_over_the_clouds_limit(
    case: str, raw: dict[str, Any], path: str
) -> None:
    assert schema_paths(raw) == {path}, case
    error = program_error(raw)
    assert error is not None and str(error).startswith(f"{path}: "), (case, error)


@pytest.mark.parametrize(
    "raw",
    [
        with_key(AZURE, "gpupools:gpuPools", [{**AZURE["gpupools:gpuPools"][0], "maxSize": 1000}]),
        with_key(AWS, "gpupools:gpuPools", [{**AWS["gpupools:gpuPools"][0], "maxSize": 1350}]),
        with_key(AWS, "gpupools:gpuPools", [{**AWS["gpupools:gpuPools"][0], "maxSize": 450, "zones": ["us-west-2a"]}]),
    ],
    ids=["aks-at-1000", "eks-three-zones-at-1350", "eks-one-zone-at-450"],
)
def test_a_pool_at_the_limit_passes_both(raw: dict[str, Any]) -> None:
    assert schema_paths(raw) == set()
    assert program_error(raw) is None
