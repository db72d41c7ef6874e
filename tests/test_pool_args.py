"""One API style: every component that takes pools accepts the stack config's plain mappings or the
specs ``gpupools.config`` builds, validated by the same rules, with errors that name the argument.

Defaults / errors / behaviour, as in cdk8s-plus: the mapping form registers exactly what the spec
form registers; a bad mapping is one ``ConfigError`` naming the component, the argument and the key,
raised before anything is registered.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from gpupools import config
from gpupools.aws import CpuNodeGroup, GpuNodeGroup, KarpenterNodePools
from gpupools.azure import CpuNodePool, GpuNodePool, NapNodePools
from gpupools.conventions import Role
from gpupools.errors import ConfigError
from gpupools.specs import Cloud
from gpupools.testing import run_program

T4 = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}
AZURE_CPU = {"name": "general", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 6}
G5 = {"name": "gpu", "instanceTypes": ["g5.xlarge"], "maxSize": 4}
AWS_CPU = {"name": "general", "instanceTypes": ["m6i.2xlarge"], "maxSize": 6}
SUBNETS = {"us-west-2a": "subnet-a", "us-west-2b": "subnet-b"}

Build = Callable[[Any], Any]

COMPONENTS: dict[str, tuple[Build, Any, Cloud, Role]] = {
    "NapNodePools": (lambda pool: NapNodePools("nap", [pool], location="eastus"), T4, Cloud.AZURE, Role.GPU),
    "NapNodePools-cpu": (
        lambda pool: NapNodePools("nap", [], location="eastus", cpu_pools=[pool]),
        AZURE_CPU,
        Cloud.AZURE,
        Role.CPU,
    ),
    "GpuNodePool": (
        lambda pool: GpuNodePool("t4", pool, resource_group_name="rg", cluster_name="aks"),
        T4,
        Cloud.AZURE,
        Role.GPU,
    ),
    "CpuNodePool": (
        lambda pool: CpuNodePool("cpu", pool, resource_group_name="rg", cluster_name="aks"),
        AZURE_CPU,
        Cloud.AZURE,
        Role.CPU,
    ),
    "GpuNodeGroup": (
        lambda pool: GpuNodeGroup(
            "gpu", pool, cluster_name="eks", node_role_arn="arn:aws:iam::123456789012:role/n", subnet_ids_by_zone=SUBNETS
        ),
        G5,
        Cloud.AWS,
        Role.GPU,
    ),
    "CpuNodeGroup": (
        lambda pool: CpuNodeGroup(
            "cpu", pool, cluster_name="eks", node_role_arn="arn:aws:iam::123456789012:role/n", subnet_ids_by_zone=SUBNETS
        ),
        AWS_CPU,
        Cloud.AWS,
        Role.CPU,
    ),
    "KarpenterNodePools": (
        lambda pool: KarpenterNodePools("karpenter", [pool], cluster_name="eks", node_role_name="node", zones=["us-west-2a"]),
        G5,
        Cloud.AWS,
        Role.GPU,
    ),
}


def registered(run: Any) -> dict[tuple[str, str], Any]:
    """What was registered, by type and name (outputs resolve in any order, so registration order can differ)."""
    return {(r.type, r.name): r.inputs for r in run.registrations}


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_mapping_registers_what_the_spec_registers(component: str) -> None:
    build, mapping, cloud, role = COMPONENTS[component]
    spec = config.parse_pool(mapping, cloud, "pool", role)
    from_mapping = run_program(lambda: build(mapping))
    from_spec = run_program(lambda: build(spec))
    assert from_mapping.registrations, component
    assert registered(from_mapping) == registered(from_spec)


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_bad_mapping_names_the_argument_and_registers_nothing(component: str) -> None:
    build, mapping, _, _ = COMPONENTS[component]
    bad = {**mapping, "maxSize": 0, "minSize": 0}
    result = run_program(lambda: build(bad), raise_errors=False)
    assert isinstance(result.error, ConfigError), component
    assert result.error.path.startswith(component.split("-")[0] + "("), result.error.path
    assert "maxSize" in result.error.path
    assert result.registrations == []


@pytest.mark.parametrize("component", ["NapNodePools", "KarpenterNodePools"])
def test_karpenter_components_keep_the_karpenter_rules_for_mappings(component: str) -> None:
    """A minimum is meaningless under Karpenter: the mapping form is refused like the config key."""
    build, mapping, _, _ = COMPONENTS[component]
    result = run_program(lambda: build({**mapping, "minSize": 1}), raise_errors=False)
    assert isinstance(result.error, ConfigError)
    assert result.error.path == f"{component}({'nap' if component == 'NapNodePools' else 'karpenter'}).pools[0].min_size"
    assert result.registrations == []


def test_pool_names_are_unique_across_gpu_and_cpu_pools() -> None:
    result = run_program(
        lambda: NapNodePools("nap", [T4], location="eastus", cpu_pools=[{**AZURE_CPU, "name": "t4"}]), raise_errors=False
    )
    assert isinstance(result.error, ConfigError) and "unique" in str(result.error)
    assert result.registrations == []


def test_a_consolidation_time_that_is_not_minutes_is_refused() -> None:
    result = run_program(lambda: NapNodePools("nap", [T4], location="eastus", consolidate_after="90s"), raise_errors=False)
    assert isinstance(result.error, ConfigError) and result.error.path == "NapNodePools(nap).consolidate_after"


def test_the_common_names_come_from_the_cloud_subpackages() -> None:
    import gpupools.aws
    import gpupools.azure

    assert {"AksCluster", "GpuNodePool", "CpuNodePool", "NapNodePools"} <= set(gpupools.azure.__all__)
    assert {"EksCluster", "GpuNodeGroup", "CpuNodeGroup", "KarpenterNodePools"} <= set(gpupools.aws.__all__)
