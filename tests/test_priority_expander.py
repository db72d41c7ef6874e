"""PriorityExpander / priority_tiers: Spot above on-demand above system, tiers that cannot overlap,
YAML that cluster-autoscaler parses (lists, never scalars)."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import Any, Sequence

import pytest
import yaml
from gpupools.conventions import CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes import PriorityExpander, priority_tiers
from gpupools.kubernetes.priority_expander import check_tiers_disjoint, example_group_names, render_priorities
from gpupools.pools import NodePoolInfo
from gpupools.testing.manifests import to_manifest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.k8s_schema import (
    ProviderRun,
    aks_gpu_pool,
    aks_system_pool,
    eks_gpu_group,
    eks_system_group,
    run_with_provider,
    validate_all_versions,
)

SPOT, ON_DEMAND = CapacityType.SPOT, CapacityType.ON_DEMAND


def aks_pools() -> list[NodePoolInfo]:
    return [
        aks_system_pool(),
        aks_gpu_pool("t4", SPOT),
        aks_gpu_pool("t4", ON_DEMAND),
        aks_gpu_pool("a100", SPOT, suffix="c3d4"),
        aks_gpu_pool("a100", ON_DEMAND, suffix="c3d4"),
    ]


def eks_pools() -> list[NodePoolInfo]:
    pools = [eks_system_group()]
    for zone in ("us-west-2a", "us-west-2b", "us-west-2c"):
        pools += [eks_gpu_group("t4", SPOT, zone), eks_gpu_group("t4", ON_DEMAND, zone)]
    return pools


def aks_vmss_name(pool: NodePoolInfo, digits: str) -> str:
    """What AKS names a pool's scale set (the node group ID on AKS)."""
    return f"aks-{pool.name}-{digits}-vmss"


def eks_asg_name(pool: NodePoolInfo, group_id: uuid.UUID) -> str:
    """What EKS names a managed node group's ASG (the node group ID on EKS)."""
    return f"eks-{pool.name}-{group_id}"


def realistic_name(pool: NodePoolInfo, digits: str = "29141059", group_id: uuid.UUID | None = None) -> str:
    if pool.autoscaler_group_regex.startswith("^eks-"):
        return eks_asg_name(pool, group_id or uuid.uuid4())
    return aks_vmss_name(pool, digits)


def ca_priority(priorities_yaml: str, group: str) -> int | None:
    """The priority cluster-autoscaler gives a node group: the highest priority with a regex
    that matches the group ID anywhere (Go ``FindStringIndex``: an unanchored search)."""
    config = yaml.safe_load(priorities_yaml)
    matching = [prio for prio, regexes in config.items() if any(re.search(r, group) for r in regexes)]
    return max(matching) if matching else None


def expected_priority(pool: NodePoolInfo) -> str:
    return "system" if pool.role is Role.SYSTEM else pool.capacity.value


def deploy(pools: Sequence[NodePoolInfo], **kwargs: Any) -> ProviderRun:
    return run_with_provider(lambda opts: PriorityExpander("ca", pools, opts=opts, **kwargs))


def config_map(seen: ProviderRun) -> dict[str, Any]:
    [registration] = seen.run.of_type("kubernetes:core/v1:ConfigMap")
    return to_manifest(registration)


# --- pure decision --------------------------------------------------------------------------------


@pytest.mark.parametrize("pools", [aks_pools(), eks_pools()], ids=["aks", "eks"])
def test_spot_outranks_on_demand_outranks_system(pools: list[NodePoolInfo]) -> None:
    tiers = priority_tiers(pools)
    rank = {
        pool.autoscaler_group_regex: prio
        for prio, regexes in tiers.items()
        for pool in pools
        if pool.autoscaler_group_regex in regexes
    }
    spot = {rank[p.autoscaler_group_regex] for p in pools if p.role is Role.GPU and p.capacity is SPOT}
    on_demand = {rank[p.autoscaler_group_regex] for p in pools if p.role is Role.GPU and p.capacity is ON_DEMAND}
    system = {rank[p.autoscaler_group_regex] for p in pools if p.role is Role.SYSTEM}
    assert len(spot) == len(on_demand) == len(system) == 1
    assert min(spot) > max(on_demand) > max(system)
    assert list(tiers) == sorted(tiers, reverse=True)
    assert all(regexes == sorted(set(regexes)) for regexes in tiers.values())
    assert sum(len(r) for r in tiers.values()) == len(pools)


def test_tiers_without_pools_are_left_out() -> None:
    tiers = priority_tiers([aks_gpu_pool("t4", SPOT)])
    assert len(tiers) == 1
    [regexes] = tiers.values()
    assert regexes == [aks_gpu_pool("t4", SPOT).autoscaler_group_regex]


@pytest.mark.parametrize("pools", [aks_pools(), eks_pools()], ids=["aks", "eks"])
def test_realistic_group_names_land_in_their_tier(pools: list[NodePoolInfo]) -> None:
    text = render_priorities(priority_tiers(pools))
    by_kind: dict[str, set[int | None]] = {}
    for pool in pools:
        by_kind.setdefault(expected_priority(pool), set()).add(ca_priority(text, realistic_name(pool)))
    assert None not in set().union(*by_kind.values())
    assert all(len(prios) == 1 for prios in by_kind.values())
    [spot], [on_demand], [system] = by_kind["spot"], by_kind["on-demand"], by_kind["system"]
    assert spot is not None and on_demand is not None and system is not None
    assert spot > on_demand > system


def test_example_group_names_have_the_cloud_formats() -> None:
    pool = aks_gpu_pool("t4", SPOT)
    aks, eks = example_group_names(pool)
    assert re.fullmatch(r"aks-t4sa1b2-\d{8}-vmss", aks)
    assert re.fullmatch(rf"eks-t4sa1b2-{uuid.UUID(eks[-36:])}", eks)
    assert example_group_names(pool) == (aks, eks)  # deterministic


pool_names = st.lists(st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z"), min_size=1, max_size=5, unique=True)


@settings(max_examples=150, deadline=None)
@given(
    names=pool_names,
    cloud=st.sampled_from(["aks", "eks"]),
    digits=st.from_regex(r"\A[0-9]{8}\Z"),
    group_id=st.uuids(),
)
def test_property_every_group_gets_its_tier_and_no_other(names: list[str], cloud: str, digits: str, group_id: uuid.UUID) -> None:
    """Pool names that prefix each other (``t4``/``t4x``), several zones, every capacity type: every
    realistic group name is ranked at its own tier by cluster-autoscaler's matching (reserved above
    Spot above on-demand above the system pool), and no regex is in two tiers."""
    if cloud == "aks":
        pools = [aks_system_pool()] + [aks_gpu_pool(n, c) for n in names for c in CapacityType]
    else:
        pools = [eks_system_group()] + [
            eks_gpu_group(n, c, z) for n in names for c in CapacityType for z in ("us-west-2a", "us-west-2b")
        ]
    tiers = priority_tiers(pools, group_names={p.name: [realistic_name(p, digits, group_id)] for p in pools})
    text = render_priorities(tiers)
    seen_in: dict[str, int] = {}
    for prio, regexes in tiers.items():
        for regex in regexes:
            assert seen_in.setdefault(regex, prio) == prio
    ranks: dict[str, set[int | None]] = {}
    for pool in pools:
        ranks.setdefault(expected_priority(pool), set()).add(ca_priority(text, realistic_name(pool, digits, group_id)))
    [reserved], [spot], [on_demand], [system] = ranks["reserved"], ranks["spot"], ranks["on-demand"], ranks["system"]
    assert reserved is not None and spot is not None and on_demand is not None and system is not None
    assert reserved > spot > on_demand > system


# --- YAML -----------------------------------------------------------------------------------------


def test_priorities_yaml_uses_block_lists_never_scalars() -> None:
    seen = deploy(aks_pools())
    text = config_map(seen)["data"]["priorities"]
    parsed = yaml.safe_load(text)
    assert set(parsed) == {10, 20, 30}
    assert all(isinstance(k, int) for k in parsed)
    assert all(isinstance(v, list) and v and all(isinstance(r, str) for r in v) for v in parsed.values())
    # Each regex on its own "- " line under its priority.
    for prio, regexes in parsed.items():
        assert f"{prio}:\n" in text
        for regex in regexes:
            assert re.search(rf"^- {re.escape(yaml.safe_dump(regex).splitlines()[0])}$", text, re.MULTILINE)
    # Highest priority first, for a human reading the ConfigMap.
    assert text.index("30:") < text.index("20:") < text.index("10:")


def test_rendering_is_deterministic_whatever_the_pool_order() -> None:
    pools = eks_pools()
    first = config_map(deploy(pools))
    second = config_map(deploy(list(reversed(pools))))
    assert first == second


def test_yaml_round_trips_to_the_tiers() -> None:
    seen = deploy(eks_pools())
    assert yaml.safe_load(config_map(seen)["data"]["priorities"]) == seen.result.tiers


# --- the ConfigMap --------------------------------------------------------------------------------


def test_config_map_is_where_cluster_autoscaler_looks() -> None:
    seen = deploy(aks_pools())
    manifest = config_map(seen)
    assert manifest["apiVersion"] == "v1"
    assert manifest["metadata"]["name"] == "cluster-autoscaler-priority-expander"
    assert manifest["metadata"]["namespace"] == "kube-system"
    assert list(manifest["data"]) == ["priorities"]
    validate_all_versions(manifest)


def test_config_map_uses_the_explicit_provider() -> None:
    seen = deploy(aks_pools())
    [component] = seen.run.of_type("gpupools:index:PriorityExpander")
    [child] = seen.run.children(component)
    assert child.type == "kubernetes:core/v1:ConfigMap"
    assert child.provider == seen.provider_ref()


# --- errors ---------------------------------------------------------------------------------------


def assert_rejected(seen: ProviderRun, path: str, rule: str) -> None:
    assert seen.error is not None, "expected a ConfigError"
    assert seen.error.path == path
    assert rule in seen.error.rule
    assert seen.ours == [], [r.type for r in seen.ours]


def test_no_pools_is_rejected() -> None:
    assert_rejected(deploy([]), "PriorityExpander(ca).pools", "at least one pool")


def test_regex_matching_another_tier_is_rejected() -> None:
    greedy = replace(aks_gpu_pool("t4", SPOT), autoscaler_group_regex="aks-t4")
    seen = deploy([greedy, aks_gpu_pool("t4", ON_DEMAND)])
    assert_rejected(seen, "PriorityExpander(ca).pools[0].autoscalerGroupRegex", "another priority tier")


def test_same_regex_in_two_tiers_is_rejected() -> None:
    spot = aks_gpu_pool("t4", SPOT)
    od = replace(aks_gpu_pool("t4", ON_DEMAND), autoscaler_group_regex=spot.autoscaler_group_regex)
    assert_rejected(deploy([spot, od]), "PriorityExpander(ca).pools[1].autoscalerGroupRegex", "two priority tiers")


def test_regex_that_misses_its_own_group_is_rejected() -> None:
    # Missing the scale set's digits: cluster-autoscaler would never rank this pool.
    wrong = replace(aks_gpu_pool("t4", SPOT), autoscaler_group_regex=r"^aks-t4sa1b2-vmss$")
    assert_rejected(deploy([wrong]), "PriorityExpander(ca).pools[0].autoscalerGroupRegex", "must match the node group name")


@pytest.mark.parametrize(
    ("regex", "rule"),
    [("", "must be a regex"), ("^aks-(t4", "valid regular expression"), (r"^aks-t4sa1b2-(?=\d)\d{8}-vmss$", "lookaround")],
)
def test_malformed_regex_is_rejected(regex: str, rule: str) -> None:
    pool = replace(aks_gpu_pool("t4", SPOT), autoscaler_group_regex=regex)
    assert_rejected(deploy([aks_system_pool(), pool]), "PriorityExpander(ca).pools[1].autoscalerGroupRegex", rule)


def test_check_tiers_disjoint_with_real_names() -> None:
    spot, od = aks_gpu_pool("t4", SPOT), aks_gpu_pool("t4", ON_DEMAND)
    names = {spot.name: ["aks-t4sa1b2-29141059-vmss"], od.name: ["aks-t4oa1b2-31415926-vmss"]}
    check_tiers_disjoint([spot, od], names)
    loose = replace(spot, autoscaler_group_regex=r"aks-t4.a1b2")
    with pytest.raises(ConfigError) as info:
        check_tiers_disjoint([loose, od], names)
    assert info.value.path == "PriorityExpander.pools[0].autoscalerGroupRegex"
    assert "aks-t4oa1b2-31415926-vmss" in str(info.value)


# --- issue 37: the ConfigMap is updated in place when a pool is added ------------------------------


def configmap_force_new(provider_inputs: dict[str, Any], configmap: dict[str, Any]) -> set[str]:
    """The ConfigMap paths whose change makes pulumi-kubernetes replace the object, as its provider
    decides (pulumi/pulumi-kubernetes v4.32.0 ``provider/pkg/provider/diff.go``, ``forceNewProperties``:
    ``.metadata.name``/``.metadata.namespace`` always; ``.binaryData`` and ``.data`` unless the
    provider's ``enableConfigMapMutable`` is on and the ConfigMap is not ``immutable``)."""
    mutable = str(provider_inputs.get("enableConfigMapMutable", "false")).lower() == "true"
    force = {".metadata.name", ".metadata.namespace"}
    if not mutable or configmap.get("immutable") is True:
        force |= {".binaryData", ".data"}
    return force


@pytest.mark.parametrize("stack", ["aws-dev", "azure-dev"])
def test_adding_a_pool_updates_the_expander_configmap_in_place(stack: str) -> None:
    """Adding a pool changes the expander's ``data``; with the stack's Kubernetes provider at
    ``enableConfigMapMutable: true`` that is an update, not a delete-and-create that leaves
    cluster-autoscaler without priorities in between (second reviews, known minor). At e016db2 the
    providers did not set it, so the same change was a replacement."""
    from gpupools.testing import run_stack, stack_config

    pools = stack_config(stack)["gpupools:gpuPools"]
    extra = dict(pools[0], name=f"{pools[0]['name']}b"[:7])
    before, after = run_stack(stack), run_stack(stack, overrides={"gpupools:gpuPools": [*pools, extra]})

    def expander(run: Any) -> Any:
        [configmap] = [r for r in run.of_type("kubernetes:core/v1:ConfigMap") if r.name == "priority-expander-configmap"]
        return configmap

    old, new = expander(before), expander(after)
    assert old.urn == new.urn and old.inputs["data"] != new.inputs["data"]
    assert old.inputs["metadata"]["name"] == new.inputs["metadata"]["name"]
    [provider] = [r for r in after.registrations if r.urn == new.provider.rsplit("::", 1)[0]]
    changed = {".data"}
    assert not changed & configmap_force_new(provider.inputs, new.inputs), "a replacement"
    # Turning the switch on for an existing provider: ``DiffConfig`` (``provider.go``) replaces a
    # provider only for a changed ``clusterIdentifier``, kubeconfig cluster or ``renderYamlToDirectory``,
    # and with ``clusterIdentifier`` set and unchanged it drops every replacement: an update.
    assert "clusterIdentifier" in provider.inputs and "renderYamlToDirectory" not in provider.inputs
