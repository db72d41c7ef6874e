"""Rotating AKS agent pool names and scale-set regexes (pure; property-tested)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from gpupools.azure.naming import agent_pool_name, scale_set_regex
from gpupools.azure.node_pool import CREATE_ONLY_FIELDS, plan_agent_pools
from gpupools.conventions import CapacityType
from gpupools.errors import ConfigError
from gpupools.specs import GpuPoolSpec
from hypothesis import given
from hypothesis import strategies as st

AKS_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
"""AKS's Linux pool name rule, written out here independently of the code under test."""

base_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
capacities = st.sampled_from(list(CapacityType))
values = st.one_of(st.none(), st.integers(-5, 4096), st.text(max_size=20), st.lists(st.sampled_from(["1", "2", "3"])))
create_only_maps = st.dictionaries(st.sampled_from(CREATE_ONLY_FIELDS), values, min_size=1)


@given(base_names, capacities, create_only_maps)
def test_names_are_valid_aks_pool_names(base: str, capacity: CapacityType, create_only: dict[str, Any]) -> None:
    name = agent_pool_name(base, capacity, create_only)
    assert AKS_NAME.fullmatch(name)
    assert len(name) <= 12
    assert name.startswith(base)
    assert name[len(base)] == {CapacityType.SPOT: "s", CapacityType.ON_DEMAND: "o", CapacityType.RESERVED: "r"}[capacity]


@given(base_names, capacities, create_only_maps)
def test_names_are_deterministic_and_ignore_key_order(base: str, capacity: CapacityType, create_only: dict[str, Any]) -> None:
    reordered = dict(reversed(list(create_only.items())))
    assert agent_pool_name(base, capacity, create_only) == agent_pool_name(base, capacity, reordered)


@given(base_names, create_only_maps)
def test_spot_and_on_demand_pools_never_share_a_name(base: str, create_only: dict[str, Any]) -> None:
    assert agent_pool_name(base, CapacityType.SPOT, create_only) != agent_pool_name(base, CapacityType.ON_DEMAND, create_only)


@pytest.mark.parametrize("field", CREATE_ONLY_FIELDS)
def test_changing_any_create_only_value_changes_the_name(field: str) -> None:
    before = {f: None for f in CREATE_ONLY_FIELDS}
    after = {**before, field: "changed"}
    assert agent_pool_name("t4", CapacityType.SPOT, before) != agent_pool_name("t4", CapacityType.SPOT, after)


@pytest.mark.parametrize("base", ["abcdefgh", "T4", "4t", "t-4", ""])
def test_names_that_cannot_fit_or_are_malformed_are_config_errors(base: str) -> None:
    with pytest.raises(ConfigError) as error:
        agent_pool_name(base, CapacityType.SPOT, {"vmSize": "x"}, path="GpuNodePool(x).pool.name")
    assert error.value.path == "GpuNodePool(x).pool.name"


def spec(**overrides: Any) -> GpuPoolSpec:
    fields: dict[str, Any] = {"name": "t4", "instance_types": ("Standard_NC4as_T4_v3",), "max_size": 4}
    fields.update(overrides)
    return GpuPoolSpec(**fields)


def names(pool: GpuPoolSpec, zones: tuple[str, ...] = ("1", "2", "3"), subnet: str | None = None) -> list[str]:
    return [plan.name for plan in plan_agent_pools(pool, zones, subnet)]


@pytest.mark.parametrize(
    "change",
    [
        {"instance_types": ("Standard_NC8as_T4_v3",)},
        {"disk_size_gb": 256},
        {"zones": ("1", "2")},
    ],
)
def test_create_only_changes_rotate_both_pool_names(change: dict[str, Any]) -> None:
    before, after = names(spec()), names(spec(**change))
    assert len(before) == len(after) == 2
    assert before[0] != after[0] and before[1] != after[1]


def test_spot_price_change_rotates_only_the_spot_pool() -> None:
    before, after = names(spec()), names(spec(spot_max_price=0.5))
    assert before[0] != after[0]
    assert before[1] == after[1]


def test_brought_subnet_is_part_of_the_digest() -> None:
    a = "/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/a"
    b = a[:-1] + "b"
    assert names(spec(), subnet=a) != names(spec(), subnet=b)


@pytest.mark.parametrize(
    "change",
    [
        {"max_size": 9},
        {"min_size": 1},
        {"on_demand_max_size": 2},
        {"labels": {"team": "vision"}},
    ],
)
def test_in_place_changes_keep_both_names(change: dict[str, Any]) -> None:
    assert names(spec()) == names(spec(**change))


def test_zone_order_does_not_rotate_names() -> None:
    assert names(spec(zones=("1", "2"))) == names(spec(zones=("2", "1")))


@given(base_names, capacities, create_only_maps)
def test_scale_set_regex_matches_exactly_this_pool(base: str, capacity: CapacityType, create_only: dict[str, Any]) -> None:
    name = agent_pool_name(base, capacity, create_only)
    regex = scale_set_regex(name)
    assert re.fullmatch(regex, f"aks-{name}-12345678-vmss")
    assert re.fullmatch(regex, f"aks-{name}-0-vmss")
    assert not re.fullmatch(regex, f"aks-{name}x-12345678-vmss")
    assert not re.fullmatch(regex, f"aks-{name}-vmss")
    assert not re.fullmatch(regex, f"aks-{name}-1234abcd-vmss")
    assert not re.fullmatch(regex, f"xaks-{name}-12345678-vmss")
