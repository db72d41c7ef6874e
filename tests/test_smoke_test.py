"""GpuSmokeTest: a Job that lands only on its pool's GPU nodes, fails fast, survives a scale-from-zero."""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pytest
from gpupools.conventions import AKS_SYSTEM_TAINT, CapacityType, Taint, TaintEffect
from gpupools.kubernetes import GpuSmokeTest, NvidiaDevicePlugin
from gpupools.kubernetes.smoke_test import job_name
from gpupools.pools import NodePoolInfo
from gpupools.testing.manifests import to_manifest
from gpupools.versions import SMOKE_TEST_IMAGE

from tests.k8s_schema import (
    ProviderRun,
    aks_gpu_pool,
    aks_system_pool,
    eks_gpu_group,
    eks_system_group,
    node_labels,
    run_with_provider,
    untolerated,
    validate_all_versions,
)

DEDICATED = Taint("dedicated", "vision", TaintEffect.NO_SCHEDULE)
SPOT_T4 = aks_gpu_pool("t4", CapacityType.SPOT, extra_taints=[DEDICATED])

MAX_NODE_PROVISION_SECONDS = 15 * 60
"""cluster-autoscaler's default --max-node-provision-time (the AKS default too): the wait before a
Spot group that produced no node is given up and the on-demand tier tried."""

GPU_NODE_BOOT_SECONDS = 10 * 60
"""A GPU node's boot, join, driver and image pull, at the slow end (reference notes: 5-10 minutes)."""


def deploy(pool: NodePoolInfo, **kwargs: Any) -> ProviderRun:
    return run_with_provider(lambda opts: GpuSmokeTest("smoke", pool, opts=opts, **kwargs))


def job(seen: ProviderRun) -> dict[str, Any]:
    [registration] = seen.run.of_type("kubernetes:batch/v1:Job")
    return to_manifest(registration)


def pod_spec(seen: ProviderRun) -> dict[str, Any]:
    spec: dict[str, Any] = job(seen)["spec"]["template"]["spec"]
    return spec


# --- defaults -------------------------------------------------------------------------------------


def test_job_fails_fast_and_cleans_up() -> None:
    spec = job(deploy(SPOT_T4))["spec"]
    assert spec["backoffLimit"] == 0
    assert spec["ttlSecondsAfterFinished"] > 0
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


def test_deadline_covers_a_scale_from_zero_with_one_fallback() -> None:
    seen = deploy(SPOT_T4)
    deadline = job(seen)["spec"]["activeDeadlineSeconds"]
    assert deadline >= MAX_NODE_PROVISION_SECONDS + GPU_NODE_BOOT_SECONDS
    assert deadline <= 60 * 60, "an hour-long smoke test hides a broken pool for too long"
    [registration] = seen.run.of_type("kubernetes:batch/v1:Job")
    create = registration.options["customTimeouts"]["create"]
    minutes = int(re.fullmatch(r"(\d+)m", create).group(1))  # type: ignore[union-attr]
    # Pulumi must wait at least as long as the Job may run, so the Job's own verdict is reported.
    assert minutes * 60 > deadline


def test_container_runs_the_cuda_sample_on_one_gpu() -> None:
    [container] = pod_spec(deploy(SPOT_T4))["containers"]
    assert container["image"] == SMOKE_TEST_IMAGE
    assert "vectoradd" in container["image"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] in ("1", 1)
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_job_is_replaced_not_patched() -> None:
    seen = deploy(SPOT_T4)
    [registration] = seen.run.of_type("kubernetes:batch/v1:Job")
    assert registration.replace_on_changes == ["spec"]
    assert registration.delete_before_replace is True


def test_uses_the_explicit_provider_and_validates() -> None:
    seen = deploy(SPOT_T4)
    [component] = seen.run.of_type("gpupools:index:GpuSmokeTest")
    [child] = seen.run.children(component)
    assert child.provider == seen.provider_ref()
    validate_all_versions(job(seen))
    validate_all_versions(job(deploy(eks_gpu_group("t4", CapacityType.ON_DEMAND))))


def test_depends_on_reaches_the_job() -> None:
    def build(opts: pulumi.ResourceOptions) -> GpuSmokeTest:
        plugin = NvidiaDevicePlugin("gpu", [SPOT_T4], opts=opts)
        return GpuSmokeTest(
            "smoke", SPOT_T4, opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[plugin]))
        )

    seen = run_with_provider(build)
    [registration] = seen.run.of_type("kubernetes:batch/v1:Job")
    # A dependency on a component expands to its children: the Job waits for the DaemonSet.
    assert seen.run.named("gpu-daemonset").urn in registration.dependencies


# --- behaviour: placement -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pool",
    [SPOT_T4, aks_gpu_pool("t4", CapacityType.ON_DEMAND), eks_gpu_group("t4", CapacityType.SPOT, "us-west-2b")],
    ids=["aks-spot", "aks-on-demand", "eks-spot"],
)
def test_lands_on_its_pool_only(pool: NodePoolInfo) -> None:
    spec = pod_spec(deploy(pool))
    selector = spec["nodeSelector"]

    def selects(other: NodePoolInfo) -> bool:
        labels = node_labels(other)
        return all(labels.get(k) == v for k, v in selector.items())

    assert selects(pool)
    assert untolerated(spec["tolerations"], pool.taints) == []
    others = [
        aks_system_pool(),
        eks_system_group(),
        aks_gpu_pool("a100", pool.capacity),
        aks_gpu_pool(pool.pool, CapacityType.ON_DEMAND if pool.capacity is CapacityType.SPOT else CapacityType.SPOT),
        eks_gpu_group(pool.pool, CapacityType.ON_DEMAND if pool.capacity is CapacityType.SPOT else CapacityType.SPOT),
    ]
    for other in others:
        assert not selects(other), other.name
    assert untolerated(spec["tolerations"], [AKS_SYSTEM_TAINT]) == [AKS_SYSTEM_TAINT]


def test_job_name_is_a_short_dns_label() -> None:
    long = eks_gpu_group("abcdefghijklmnop", CapacityType.SPOT, "ap-southeast-2a", cluster="a-rather-long-cluster")
    name = job_name(long)
    assert len(name) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)
    other = eks_gpu_group("abcdefghijklmnop", CapacityType.SPOT, "ap-southeast-2b", cluster="a-rather-long-cluster")
    assert job_name(other) != name
    assert job(deploy(SPOT_T4))["metadata"]["name"] == job_name(SPOT_T4)


# --- errors ---------------------------------------------------------------------------------------


def assert_rejected(seen: ProviderRun, path: str, rule: str) -> None:
    assert seen.error is not None, "expected a ConfigError"
    assert seen.error.path == path
    assert rule in seen.error.rule
    assert seen.ours == [], [r.type for r in seen.ours]


@pytest.mark.parametrize("pool", [aks_system_pool(), eks_system_group()], ids=["aks", "eks"])
def test_non_gpu_pool_is_rejected(pool: NodePoolInfo) -> None:
    assert_rejected(deploy(pool), "GpuSmokeTest(smoke).pool.role", "must be a GPU pool")


def test_pool_without_its_pool_label_is_rejected() -> None:
    labels = {k: v for k, v in SPOT_T4.labels.items() if k != "gpupools.io/pool"}
    broken = NodePoolInfo(**{**SPOT_T4.__dict__, "labels": labels})
    assert_rejected(deploy(broken), "GpuSmokeTest(smoke).pool.labels.gpupools.io/pool", "nodeSelector")
