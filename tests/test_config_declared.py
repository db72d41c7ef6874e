"""Every ``gpupools:*`` value is read through its declaration (``gpupools.config_keys``), not by a
parser line of its own: a key of a declared kind gets that kind's error at its path, and lands in
the spec field named after it. The cases come from the declaration, so a key added there is covered
without a line here; the expected wording per kind is written here, not taken from the parser."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from gpupools import config
from gpupools.config_keys import STACK, Key, walk
from gpupools.conventions import Taint
from gpupools.errors import ConfigError
from gpupools.specs import (
    AutoscalerSpec,
    CatalogSpec,
    Cloud,
    ClusterSpec,
    CostSpec,
    DevicePluginSpec,
    GpuMetricsSpec,
    MaintenanceSpec,
    NetworkSpec,
    NodeRepairSpec,
    PoolSpec,
    QueueingSpec,
    ReservationSpec,
    SharingSpec,
    SmokeTestSpec,
    SystemPoolSpec,
    TeamQueueSpec,
    UpgradeSpec,
    WarmScheduleSpec,
    WarmSpec,
)
from gpupools.testing import stack_config

KIND_RULES = {
    "string": "must be a string",
    "integer": "must be an integer",
    "number": "must be a number",
    "boolean": "must be true or false",
    "strings": "must be a list of strings",
    "labels": "must be a mapping of strings to strings",
    "nodes": 'must be a node count or a percentage ("33%")',
}
"""What a wrong type is told, per kind of scalar key (the messages of the bad-input catalogue)."""

WRONG = {"string": ["x"], "integer": "3", "number": "x", "boolean": "yes", "strings": "x", "labels": ["x"], "nodes": ["x"]}
"""A value of the wrong type for each kind (a YAML list for a scalar, a string for a number...)."""

OWN_RULES = {
    "gpuPools.evictionRate": "must be a number from 0 to 1 (share of Spot runs interrupted)",
    "cost.gpuHoursPerMonth": "must be a number of hours",
    "gpuPools.warm.schedule.days": "must be a list of week days (Monday ... Sunday)",
    "gpuPools.reservations.count": "must be a whole number >= 1 (instances the reservation holds for the pool)",
}
"""Keys whose wrong type has wording of their own (``Key.type_error``), pinned literally here."""

STACKS = {Cloud.AZURE: ("azure-dev",), Cloud.AWS: ("aws-dev", "aws-karpenter-dev")}

PREEMPTED = {
    # check_provisioner_keys refuses the whole key, by name, before the sections are read.
    ("aws-dev", "maintenance"): "has no meaning with provisioner cluster-autoscaler on EKS",
    ("azure-dev", "maintenance.terminationGracePeriod"): "has no meaning with provisioner cluster-autoscaler",
    ("aws-karpenter-dev", "gpuPools.minSize"): "has no meaning with provisioner karpenter",
    ("aws-karpenter-dev", "gpuPools.onDemandMaxSize"): "has no meaning with provisioner karpenter",
    ("aws-karpenter-dev", "autoscaler.maxNodeProvisionTime"): "has no meaning with provisioner karpenter",
}
"""(stack, key or section) pairs where a rule about the key itself comes before its type."""

SECTION_BASES: dict[str, dict[str, Any]] = {
    "cluster": {"name": "gpu"},
    "gpuPools.warm": {"nodes": 1},
    "gpuPools.warm.schedule": {"start": "08:00", "end": "18:00"},
}
"""The required keys a section needs besides the one under test (declared before it)."""

ITEM_BASES: dict[str, dict[str, Any]] = {
    "gpuPools.taints": {"key": "team", "value": "ml", "effect": "NoSchedule"},
    "gpuPools.reservations": {"id": "cr-0123456789abcdef0"},
    "queueing.teams": {"name": "ml"},
    "catalog.instanceTypes": {"name": "x9.large", "vcpus": 4, "memoryGib": 16},
}
"""A valid entry of each list of sections (``gpuPools`` uses the stack's first pool)."""


def _scalar_keys() -> list[tuple[str, str, Key]]:
    """(stack, dotted path, key) for every declared scalar key of a section, on every example stack
    of a cloud it applies to. Top-level scalars (``cloud``, ``provisioner``) are read before any
    section as a choice, whatever their type; ``cpuPools`` has the ``gpuPools`` declaration."""
    cases = []
    for names, key in walk():
        dotted = ".".join(names)
        if key.kind not in KIND_RULES or len(names) == 1 or names[0] == "cpuPools":
            continue
        clouds = set(key.clouds)
        parent = STACK
        for name in names[:-1]:
            parent = parent.key(name)
            clouds &= set(parent.clouds)  # a key of an Azure-only section is Azure only
        for cloud in sorted(clouds):
            for stack in STACKS[cloud]:
                if not any((stack, ".".join(names[:n])) in PREEMPTED for n in range(1, len(names) + 1)):
                    cases.append((stack, dotted, key))
    return cases


CASES = _scalar_keys()


def _with_value(stack: str, names: tuple[str, ...], value: Any) -> tuple[dict[str, Any], str]:
    """The stack's config with the key at ``names`` set to ``value``, and the key's config path."""
    values = copy.deepcopy(stack_config(stack))
    top = f"gpupools:{names[0]}"
    declaration = STACK
    path = "gpupools:"
    node: dict[str, Any] = values
    slot = top
    for depth, name in enumerate(names[:-1]):
        declaration = declaration.key(name)
        dotted = ".".join(names[: depth + 1])
        path += name if depth == 0 else f".{name}"
        if declaration.kind == "list":
            item = copy.deepcopy(values[top][0]) if dotted == "gpuPools" else dict(ITEM_BASES[dotted])
            node[slot] = [item]
            node, path = item, path + "[0]"
        else:
            section = dict(SECTION_BASES.get(dotted, {}))
            node[slot] = section
            node = section
        slot = names[depth + 1]
    node[slot] = value
    return values, f"{path}.{names[-1]}"


def test_every_declared_scalar_key_is_covered() -> None:
    covered = {dotted for _, dotted, _ in CASES}
    assert {"cluster.name", "gpuPools.maxSize", "gpuPools.upgrade.maxSurge", "queueing.teams.gpus"} <= covered
    assert len(covered) >= 80


@pytest.mark.parametrize(("stack", "dotted", "key"), CASES, ids=[f"{s}:{d}" for s, d, _ in CASES])
def test_a_wrong_type_gets_the_kind_error_at_the_key_path(stack: str, dotted: str, key: Key) -> None:
    values, path = _with_value(stack, tuple(dotted.split(".")), WRONG[key.kind])
    with pytest.raises(ConfigError) as caught:
        config.parse(values, region=None)
    expected = OWN_RULES.get(dotted) or key.type_error or KIND_RULES[key.kind]
    assert str(caught.value).startswith(f"{path}: {expected}, got "), str(caught.value)


def test_own_wording_is_the_declarations() -> None:
    """The keys pinned in ``OWN_RULES`` carry it in the declaration, and every declared wording
    still names the kind (a number is "a number ...", a list "a list ...")."""
    declared = {".".join(names): key for names, key in walk()}
    for dotted, rule in OWN_RULES.items():
        assert declared[dotted].type_error == rule, dotted
    for dotted, key in declared.items():
        if key.type_error and key.kind in ("number", "strings", "list"):
            assert key.type_error.startswith(
                {"number": "must be a number", "strings": "must be a list", "list": "must be a list"}[key.kind]
            ), dotted


SPECS: dict[str, type] = {
    "cluster": ClusterSpec,
    "network": NetworkSpec,
    "systemPool": SystemPoolSpec,
    "gpuPools": PoolSpec,
    "gpuPools.taints": Taint,
    "gpuPools.sharing.timeSlicing": SharingSpec,
    "gpuPools.sharing.mps": SharingSpec,
    "gpuPools.sharing.mig": SharingSpec,
    "gpuPools.reservations": ReservationSpec,
    "gpuPools.upgrade": UpgradeSpec,
    "gpuPools.warm": WarmSpec,
    "gpuPools.warm.schedule": WarmScheduleSpec,
    "devicePlugin": DevicePluginSpec,
    "autoscaler": AutoscalerSpec,
    "smokeTest": SmokeTestSpec,
    "cost": CostSpec,
    "maintenance": MaintenanceSpec,
    "nodeRepair": NodeRepairSpec,
    "gpuMetrics": GpuMetricsSpec,
    "queueing": QueueingSpec,
    "queueing.teams": TeamQueueSpec,
    "catalog": CatalogSpec,
}
"""The spec each declared section (or list entry) is read into."""


def test_every_declared_key_lands_in_the_spec_field_named_after_it() -> None:
    """camelCase key -> snake_case field (``config.FIELD_NAMES`` for the exceptions); the one key
    turned into another field is ``reservations[].kind`` (``capacity_block``)."""
    for names, key in walk():
        parent = ".".join(names[:-1])
        if parent not in SPECS or (parent, key.name) == ("gpuPools.reservations", "kind"):
            continue
        fields = {field.name for field in dataclasses.fields(SPECS[parent])}
        assert config.field_name(key.name) in fields, (parent, key.name)
    assert config.field_name("gpuHoursPerMonth") == "gpu_hours_per_month"
    assert config.field_name("profile") == "mig_profile"


def test_a_key_added_to_the_declaration_is_read_without_a_parser_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a key is its ``Key`` plus the spec field it fills: here ``smokeTest.timeoutMinutes``
    (an integer, default 10) and a ``timeout_minutes`` field, and nothing in ``gpupools.config``."""
    from gpupools import config_keys

    smoke = STACK.key("smokeTest")
    added = dataclasses.replace(smoke, keys=(*smoke.keys, Key("timeoutMinutes", "integer", default=10)))
    monkeypatch.setattr(
        config_keys, "STACK", dataclasses.replace(STACK, keys=tuple(added if k is smoke else k for k in STACK.keys))
    )

    @dataclasses.dataclass(frozen=True)
    class SmokeTestWithTimeout(SmokeTestSpec):
        timeout_minutes: int = 0

    monkeypatch.setattr(config, "SmokeTestSpec", SmokeTestWithTimeout)
    values = stack_config("azure-dev")
    region = values["azure-native:location"]
    spec = config.parse({**values, "gpupools:smokeTest": {"timeoutMinutes": 5}}, region=region)
    assert spec.smoke_test == SmokeTestWithTimeout(enabled=False, timeout_minutes=5)
    assert config.parse(values, region=region).smoke_test == SmokeTestWithTimeout(enabled=False, timeout_minutes=10)
    with pytest.raises(ConfigError, match=r"^gpupools:smokeTest\.timeoutMinutes: must be an integer, got 'x'$"):
        config.parse({**values, "gpupools:smokeTest": {"timeoutMinutes": "x"}}, region=region)
    with pytest.raises(
        ConfigError, match=r"^gpupools:smokeTest\.timeoutMinute: is not a known key.*did you mean 'timeoutMinutes'"
    ):
        config.parse({**values, "gpupools:smokeTest": {"timeoutMinute": 5}}, region=region)


@pytest.mark.parametrize("pools", ["gpupools:gpuPools", "gpupools:cpuPools"])
def test_a_null_required_list_of_strings_reaches_its_rule(pools: str) -> None:
    """``instanceTypes: null`` is in the pool (not "is required") and reads as an empty list, which
    ``rules.check_gpu_pool`` refuses by name: the pool spec has no default to fall back on."""
    values = stack_config("aws-dev")
    pool = {"name": "nulls", "instanceTypes": None, "maxSize": 2}
    with pytest.raises(ConfigError, match=rf"^{pools}\[0\]\.instanceTypes: must list at least one instance type, got \[\]$"):
        config.parse({**values, pools: [pool]}, region="us-west-2")
