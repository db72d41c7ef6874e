"""Workload placement helpers: "GPU, prefer Spot, fall back to on-demand" and "CPU only"."""

from __future__ import annotations

from typing import Any

import pytest
from gpupools.conventions import AKS_SYSTEM_TAINT, CapacityType, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.scheduling import cpu_only, gpu_workload
from hypothesis import given
from hypothesis import strategies as st

from tests.k8s_schema import (
    affinity_matches,
    aks_gpu_pool,
    aks_system_pool,
    eks_gpu_group,
    eks_system_group,
    node_labels,
    untolerated,
    validate_all_versions,
)

DEDICATED = Taint("dedicated", "vision", TaintEffect.NO_SCHEDULE)

GPU_POOLS = {
    "aks-spot": aks_gpu_pool("t4", CapacityType.SPOT),
    "aks-on-demand": aks_gpu_pool("t4", CapacityType.ON_DEMAND),
    "eks-spot": eks_gpu_group("t4", CapacityType.SPOT),
    "eks-on-demand": eks_gpu_group("t4", CapacityType.ON_DEMAND),
}
SYSTEM_POOLS = {"aks-system": aks_system_pool(), "eks-system": eks_system_group()}


def lands(placement: dict[str, Any], pool: NodePoolInfo) -> bool:
    """Would a pod with this placement be allowed onto a node of ``pool``?"""
    return affinity_matches(placement.get("affinity"), node_labels(pool)) and not untolerated(
        placement.get("tolerations", []), pool.taints
    )


def prefers(placement: dict[str, Any], pool: NodePoolInfo) -> int:
    """The preferred-affinity score a node of ``pool`` gets (sum of matching weights)."""
    preferred = placement["affinity"]["nodeAffinity"].get("preferredDuringSchedulingIgnoredDuringExecution", [])
    labels = node_labels(pool)
    return sum(term["weight"] for term in preferred if affinity_matches(_as_required(term["preference"]), labels))


def _as_required(term: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def job(placement: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "train", "image": "example/train:1.0.0", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                    ],
                    **placement,
                }
            }
        },
    }


# --- gpu_workload ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(GPU_POOLS))
def test_gpu_workload_lands_on_every_gpu_pool(name: str) -> None:
    assert lands(gpu_workload(), GPU_POOLS[name])
    assert lands(gpu_workload("t4"), GPU_POOLS[name])


@pytest.mark.parametrize("name", list(SYSTEM_POOLS))
def test_gpu_workload_never_lands_on_the_system_pool(name: str) -> None:
    assert not affinity_matches(gpu_workload()["affinity"], node_labels(SYSTEM_POOLS[name]))
    assert untolerated(gpu_workload()["tolerations"], [AKS_SYSTEM_TAINT]) == [AKS_SYSTEM_TAINT]


def test_gpu_workload_pinned_to_a_pool_avoids_other_pools() -> None:
    assert not lands(gpu_workload("a100"), GPU_POOLS["aks-spot"])
    assert lands(gpu_workload("a100"), aks_gpu_pool("a100", CapacityType.SPOT))


def test_gpu_workload_prefers_spot_and_accepts_on_demand() -> None:
    placement = gpu_workload("t4")
    for cloud in ("aks", "eks"):
        spot, on_demand = GPU_POOLS[f"{cloud}-spot"], GPU_POOLS[f"{cloud}-on-demand"]
        assert prefers(placement, spot) == 100
        assert prefers(placement, on_demand) == 0
        assert lands(placement, on_demand)


def test_prefer_spot_can_be_turned_off() -> None:
    placement = gpu_workload(prefer_spot=False)
    assert "preferredDuringSchedulingIgnoredDuringExecution" not in placement["affinity"]["nodeAffinity"]
    assert prefers(placement, GPU_POOLS["aks-spot"]) == 0


def test_extra_taints_are_tolerated_only_when_given() -> None:
    pool = aks_gpu_pool("vision", CapacityType.SPOT, extra_taints=[DEDICATED])
    assert not lands(gpu_workload("vision"), pool)
    assert lands(gpu_workload("vision", extra_taints=[DEDICATED]), pool)


def test_gpu_workload_tolerations_are_exact() -> None:
    tolerations = gpu_workload(extra_taints=[DEDICATED, DEDICATED])["tolerations"]
    assert all(t["operator"] == "Equal" for t in tolerations)
    assert len(tolerations) == 3  # GPU, AKS Spot, dedicated once


def test_gpu_workload_rejects_a_pool_that_can_match_no_node() -> None:
    with pytest.raises(ConfigError) as info:
        gpu_workload("T4 pool")
    assert info.value.path == "gpu_workload.pool"


# --- cpu_only -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(GPU_POOLS))
def test_cpu_only_never_matches_a_gpu_node(name: str) -> None:
    assert not affinity_matches(cpu_only()["affinity"], node_labels(GPU_POOLS[name]))


@pytest.mark.parametrize("name", list(SYSTEM_POOLS))
def test_cpu_only_matches_non_gpu_nodes(name: str) -> None:
    assert affinity_matches(cpu_only()["affinity"], node_labels(SYSTEM_POOLS[name]))
    assert affinity_matches(cpu_only()["affinity"], {"kubernetes.io/os": "linux"})


def test_cpu_only_has_no_tolerations() -> None:
    assert "tolerations" not in cpu_only()


label_keys = st.sampled_from(["team", "kubernetes.io/os", "gpupools.io/pool", "gpupools.io/capacity-type", "example.com/x"])
label_values = st.from_regex(r"\A[a-z0-9]{1,8}\Z")


@given(
    others=st.dictionaries(label_keys, label_values, max_size=4),
    marker=st.sampled_from(["role", "present", "both"]),
    present_value=st.sampled_from(["true", "false", ""]),
)
def test_property_cpu_only_never_matches_any_node_marked_gpu(others: dict[str, str], marker: str, present_value: str) -> None:
    """Whatever else a node carries, gpupools' GPU role or NVIDIA's presence label (any value) keeps CPU pods off."""
    labels = dict(others)
    if marker in ("role", "both"):
        labels["gpupools.io/role"] = "gpu"
    if marker in ("present", "both"):
        labels["nvidia.com/gpu.present"] = present_value
    assert not affinity_matches(cpu_only()["affinity"], labels)


# --- schema ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "placement", [gpu_workload(), gpu_workload("t4", extra_taints=[DEDICATED]), cpu_only()], ids=["gpu", "gpu-pool", "cpu"]
)
def test_placements_validate_in_a_job(placement: dict[str, Any]) -> None:
    validate_all_versions(job(placement))


def test_cpu_and_gpu_placement_take_the_configs_taint_form() -> None:
    """``extra_taints`` as a ``cpuPools[].taints`` / ``gpuPools[].taints`` entry is written (issue 39)."""
    from gpupools.scheduling import cpu_workload

    taint = {"key": "team", "value": "data", "effect": "PreferNoSchedule"}
    expected = Taint("team", "data", TaintEffect.PREFER_NO_SCHEDULE).toleration()
    assert expected in cpu_workload("general", extra_taints=[taint])["tolerations"]
    assert expected in gpu_workload("t4", extra_taints=[taint])["tolerations"]
    with pytest.raises(ConfigError, match=r"cpu_workload\.extra_taints\[0\]\.effect"):
        cpu_workload("general", extra_taints=[{"key": "team", "value": "data", "effect": "NO_EXECUTE"}])
