"""The pure parts of the sim's Karpenter and Kueue (no Go, no cluster): what Karpenter's KWOK provider
is given, what Kueue is configured with, and what ``spot`` refuses. The control-plane tier
(``tests/sim/test_autoscalers.py``) runs them for real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.catalog.prices import price_table
from gpupools.sim import karpenter, kueue, objects, spot
from gpupools.sim.cluster import BadInputError
from gpupools.sim.control_plane import SimError
from gpupools.specs import Cloud, Role


@pytest.fixture(scope="module")
def eks_karpenter() -> objects.StackObjects:
    return objects.load("aws-karpenter-dev")


@pytest.fixture(scope="module")
def nap() -> objects.StackObjects:
    return objects.load("azure-nap-dev")


@pytest.fixture(scope="module")
def training() -> objects.StackObjects:
    return objects.load("aws-training-dev")


def _strip_ref(nodepool: dict[str, Any]) -> dict[str, Any]:
    copy = yaml.safe_load(yaml.safe_dump(nodepool))
    copy["spec"]["template"]["spec"].pop("nodeClassRef")
    return copy


def test_nodepools_change_only_their_node_class_reference(eks_karpenter: objects.StackObjects) -> None:
    original = {n["metadata"]["name"]: n for n in karpenter.nodepools(eks_karpenter.manifests)}
    swapped = {n["metadata"]["name"]: n for n in karpenter.kwok_nodepools(eks_karpenter.manifests)}
    assert set(swapped) == set(original) and original
    for name, nodepool in swapped.items():
        ref = nodepool["spec"]["template"]["spec"]["nodeClassRef"]
        assert ref == {
            "group": "karpenter.kwok.sh",
            "kind": "KWOKNodeClass",
            "name": original[name]["spec"]["template"]["spec"]["nodeClassRef"]["name"],
        }
        assert _strip_ref(nodepool) == _strip_ref(original[name])
    # the stack's own objects are not modified in place
    assert all(n["spec"]["template"]["spec"]["nodeClassRef"]["group"] == "karpenter.k8s.aws" for n in original.values())
    classes = {c["metadata"]["name"] for c in karpenter.node_classes(eks_karpenter.manifests)}
    assert classes == {n["spec"]["template"]["spec"]["nodeClassRef"]["name"] for n in original.values()}


def test_sim_manifests_put_node_classes_first_and_keep_every_other_object(eks_karpenter: objects.StackObjects) -> None:
    applied = karpenter.sim_manifests(eks_karpenter.manifests)
    classes = karpenter.node_classes(eks_karpenter.manifests)
    assert applied[: len(classes)] == classes
    assert len(applied) == len(classes) + len(eks_karpenter.manifests)


def _offerings(entry: dict[str, Any], key: str) -> set[str]:
    return {r["values"][0] for o in entry["offerings"] for r in o["Requirements"] if r["key"] == key}


@pytest.mark.parametrize("stack", ["aws-karpenter-dev", "azure-nap-dev"])
def test_instance_types_cover_every_pool_size_with_its_zones_capacity_types_and_prices(stack: str) -> None:
    stack_objects = objects.load(stack)
    entries = {e["name"]: e for e in karpenter.instance_types(stack_objects)}
    prices = price_table(stack_objects.spec.cloud)
    for pool in stack_objects.spec.pools:
        for size in pool.instance_types:
            entry = entries[size]
            wanted = {"spot", "on-demand"} if pool.spot and pool.on_demand_fallback else {"spot"} if pool.spot else {"on-demand"}
            assert _offerings(entry, "karpenter.sh/capacity-type") == wanted
            price = prices.price(stack_objects.region, size)
            assert price is not None
            on_demand = [
                o["Price"]
                for o in entry["offerings"]
                if {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]} in o["Requirements"]
            ]
            assert set(on_demand) <= {price.on_demand}
            assert _offerings(entry, "topology.kubernetes.io/region") == {stack_objects.region}


def test_eks_sizes_carry_the_aws_providers_labels(eks_karpenter: objects.StackObjects) -> None:
    entry = {e["name"]: e for e in karpenter.instance_types(eks_karpenter)}["g4dn.xlarge"]
    assert _offerings(entry, "karpenter.k8s.aws/instance-family") == {"g4dn"}
    assert _offerings(entry, "karpenter.k8s.aws/instance-size") == {"xlarge"}
    assert _offerings(entry, "karpenter.k8s.aws/instance-gpu-count") == {"1"}
    assert entry["resources"]["nvidia.com/gpu"] == "1"  # GPUs, not slots: the NodeOverlay adds the slots


def test_nap_sizes_carry_the_azure_providers_labels_and_spot_priority(nap: objects.StackObjects) -> None:
    entry = {e["name"]: e for e in karpenter.instance_types(nap)}["Standard_NC4as_T4_v3"]
    assert _offerings(entry, "karpenter.azure.com/sku-name") == {"Standard_NC4as_T4_v3"}
    for offering in entry["offerings"]:
        values = {r["key"]: r["values"][0] for r in offering["Requirements"]}
        assert values["kubernetes.azure.com/scalesetpriority"] == (
            "spot" if values["karpenter.sh/capacity-type"] == "spot" else "regular"
        )


def test_spot_unavailable_removes_only_that_pools_spot_offerings(eks_karpenter: objects.StackObjects) -> None:
    pool = next(p for p in eks_karpenter.spec.pools if p.role is Role.GPU)
    entries = {e["name"]: e for e in karpenter.instance_types(eks_karpenter, [pool.name])}
    for name, entry in entries.items():
        capacity = _offerings(entry, "karpenter.sh/capacity-type")
        if name in pool.instance_types:
            assert capacity == {"on-demand"}
        else:
            assert "spot" in capacity


def test_kueue_refuses_a_metrics_directory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "someone-elses").write_text("x")
    with pytest.raises(SimError, match="did not write"):
        kueue.metrics_certificate(tmp_path)
    fresh = tmp_path / "fresh"
    kueue.metrics_certificate(fresh)
    assert (fresh / "tls.crt").exists() and (fresh / kueue.METRICS_CERT_MARKER).exists()


def test_a_cluster_autoscaler_stacks_spot_pools_are_its_pools_that_buy_spot(training: objects.StackObjects) -> None:
    """Under cluster-autoscaler ``spot`` acts on the pool's Spot node groups (gpupools.sim.autoscaler)."""
    assert spot.spot_pools(training) == sorted(p.name for p in training.spec.pools if p.spot)


def test_the_spot_message_names_the_pools_still_without_spot() -> None:
    """``spot --available`` with no other pool without Spot once printed "Spot unavailable for: no pool"."""
    assert spot.message("t4", True, []) == (
        "Spot capacity of pool t4 is available again; Spot available for every other pool (the stack's provisioner restarted with it)"
    )
    assert spot.message("t4", False, ["a100", "t4"]) == (
        "Spot capacity of pool t4 is unavailable; Spot still unavailable for: a100 (the stack's provisioner restarted with it)"
    )
    assert "no pool" not in spot.message("t4", True, [])


def test_spot_names_the_pools_that_buy_spot(eks_karpenter: objects.StackObjects) -> None:
    with pytest.raises(BadInputError, match=r"unknown pool 'nope' in stack aws-karpenter-dev \(pools: "):
        spot.set_spot(None, None, eks_karpenter, "nope", available=False)  # type: ignore[arg-type]
    with pytest.raises(BadInputError, match=r"pool 'system' .* buys no Spot capacity \(pools with Spot: general, gpu1, gpu4\)"):
        spot.set_spot(None, None, eks_karpenter, "system", available=False)  # type: ignore[arg-type]
    assert spot.spot_pools(eks_karpenter) == sorted(p.name for p in eks_karpenter.spec.pools if p.spot)
    assert eks_karpenter.spec.cloud is Cloud.AWS
