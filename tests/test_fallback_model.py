"""The fallback-time model (components/gpupools/fallback_model.py) and its table in docs/karpenter-nap.md.

Every figure is recomputed here from the timers it should depend on, so a step that is dropped,
double counted or wired to the wrong timer fails; the comparisons the docs draw (Karpenter and
NAP react in seconds, cluster-autoscaler on AKS in minutes) are asserted, and so is the docs
table being the one the benchmark prints.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
from gpupools.fallback_model import (
    EKS_SPOT_GROUPS,
    Failure,
    Fallback,
    Provisioner,
    Timers,
    autoscaler_aks,
    autoscaler_eks,
    fallbacks,
    human,
    karpenter_eks,
    minutes,
    nap_aks,
)
from gpupools.specs import AutoscalerSpec
from gpupools.testing import PROJECT_ROOT
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(PROJECT_ROOT)


def benchmark_module():
    spec = importlib.util.spec_from_file_location("fallback_time", ROOT / "benchmarks" / "fallback_time.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def path(paths: list[Fallback], provisioner: Provisioner, cloud: str, failure: Failure) -> Fallback:
    [found] = [p for p in paths if (p.provisioner, p.cloud, p.failure) == (provisioner, cloud, failure)]
    return found


# --- each figure from its timers --------------------------------------------------------------------


def test_defaults_follow_gpupools_autoscaler_config() -> None:
    """The model's max-node-provision-time is gpupools' default, not the upstream 15m."""
    assert Timers().max_node_provision_time == minutes(AutoscalerSpec().max_node_provision_time) * 60
    assert Timers.for_autoscaler(AutoscalerSpec(max_node_provision_time="15m")).max_node_provision_time == 900


def test_each_figure_is_the_sum_of_its_timers() -> None:
    t = Timers()
    boot_eks = t.ec2_node_ready + t.device_plugin_ready
    boot_aks = t.aks_node_ready + t.device_plugin_ready
    expected = {
        # (typical, worst, reaction typical, reaction worst)
        autoscaler_eks(t): (
            t.asg_activity_failure + t.asg_cache_refresh / 2 + boot_eks,
            t.asg_activity_failure + t.asg_cache_refresh + boot_eks,
            t.asg_cache_refresh / 2,
            t.asg_cache_refresh,
        ),
        karpenter_eks(t): (
            2 * t.ec2_launch_call + t.karpenter_batch_idle + boot_eks,
            2 * t.ec2_launch_call + t.karpenter_batch_max + boot_eks,
            t.karpenter_batch_idle,
            t.karpenter_batch_max,
        ),
        autoscaler_aks(t, Failure.SYNC): (
            t.azure_request_rejected + t.scan_interval / 2 + boot_aks,
            t.azure_request_rejected + t.scan_interval + boot_aks,
            t.scan_interval / 2,
            t.scan_interval,
        ),
        autoscaler_aks(t, Failure.ASYNC): (
            t.max_node_provision_time + t.scan_interval / 2 + boot_aks,
            t.max_node_provision_time + t.scan_interval + boot_aks,
            t.max_node_provision_time - t.azure_allocation_failure + t.scan_interval / 2,
            t.max_node_provision_time - t.azure_allocation_failure + t.scan_interval,
        ),
        nap_aks(t, Failure.SYNC): (
            t.azure_request_rejected + t.nodeclaim_retry + boot_aks,
            t.azure_request_rejected + t.nodeclaim_retry + boot_aks,
            t.nodeclaim_retry,
            t.nodeclaim_retry,
        ),
        nap_aks(t, Failure.ASYNC): (
            t.azure_allocation_failure + t.nap_poll_interval / 2 + t.karpenter_batch_idle + boot_aks,
            t.azure_allocation_failure + t.nap_poll_interval + t.karpenter_batch_max + boot_aks,
            t.nap_poll_interval / 2 + t.karpenter_batch_idle,
            t.nap_poll_interval + t.karpenter_batch_max,
        ),
    }
    for fallback, (typical, worst, reaction_typical, reaction_worst) in expected.items():
        label = f"{fallback.provisioner.value}/{fallback.cloud}/{fallback.failure.value}"
        assert (fallback.typical, fallback.worst) == pytest.approx((typical, worst)), label
        assert (fallback.reaction_typical, fallback.reaction_worst) == pytest.approx((reaction_typical, reaction_worst)), label


@pytest.mark.parametrize("groups", [2, 3])
def test_eks_spot_groups_fail_one_after_another_before_on_demand(groups: int) -> None:
    """The real cluster-autoscaler (tests/sim/test_cluster_autoscaler.py, aws-dev) backs off one zone's
    Spot group per failure and tries the next before on-demand: the detection repeats per group."""
    t = Timers()
    one, many = autoscaler_eks(t, 1), autoscaler_eks(t, groups)
    per_group = t.asg_activity_failure + t.asg_cache_refresh / 2
    assert many.typical == pytest.approx(one.typical + (groups - 1) * per_group)
    # from the first group's error to the on-demand request: every later group's failure and refresh
    assert many.reaction_worst == pytest.approx(groups * t.asg_cache_refresh + (groups - 1) * t.asg_activity_failure)
    assert [s.what.startswith(f"Spot group {i // 2 + 1} of {groups}") for i, s in enumerate(many.steps[: 2 * groups])] == [
        True
    ] * (2 * groups)
    with pytest.raises(ValueError, match="spot_groups"):
        autoscaler_eks(t, 0)


def test_every_path_has_one_error_then_one_decision_and_sources() -> None:
    for fallback in fallbacks(Timers()):
        errors = [i for i, s in enumerate(fallback.steps) if s.error]
        decisions = [i for i, s in enumerate(fallback.steps) if s.decides]
        assert len(errors) == 1 and len(decisions) == 1 and errors[0] < decisions[0], fallback
        assert all(s.source and s.typical <= s.worst for s in fallback.steps), fallback
        # every step that is not a pure assumption names an upstream repository or the AKS issue
        for step in fallback.steps:
            assert "assumption" in step.source or "/" in step.source, step


# --- the properties the docs state ------------------------------------------------------------------


def test_karpenter_and_nap_react_in_seconds_autoscaler_on_aks_async_in_minutes() -> None:
    paths = fallbacks(Timers())
    for fallback in paths:
        if fallback.provisioner is not Provisioner.CLUSTER_AUTOSCALER:
            assert fallback.reaction_worst <= 60, fallback
    slow = path(paths, Provisioner.CLUSTER_AUTOSCALER, "aks", Failure.ASYNC)
    nap = path(paths, Provisioner.NAP, "aks", Failure.ASYNC)
    assert slow.reaction_typical >= 5 * 60
    assert slow.typical - nap.typical >= 5 * 60, "NAP saves minutes on AKS"
    karpenter = path(paths, Provisioner.KARPENTER, "eks", Failure.SYNC)
    autoscaler = path(paths, Provisioner.CLUSTER_AUTOSCALER, "eks", Failure.SYNC)
    assert karpenter.worst < autoscaler.worst, "on EKS the autoscaler waits for its ASG cache refresh"


@pytest.mark.parametrize("minutes_", [1, 5, 15, 30, 60])
def test_max_node_provision_time_moves_only_the_aks_autoscaler_async_figure(minutes_: int) -> None:
    base = fallbacks(Timers.for_autoscaler(AutoscalerSpec(max_node_provision_time="10m")))
    moved = fallbacks(Timers.for_autoscaler(AutoscalerSpec(max_node_provision_time=f"{minutes_}m")))
    delta = (minutes_ - 10) * 60
    for before, after in zip(base, moved, strict=True):
        shift = (
            delta
            if (before.provisioner, before.cloud, before.failure) == (Provisioner.CLUSTER_AUTOSCALER, "aks", Failure.ASYNC)
            else 0
        )
        assert after.typical - before.typical == pytest.approx(shift), before
        assert after.worst - before.worst == pytest.approx(shift), before
        assert after.reaction_typical - before.reaction_typical == pytest.approx(shift), before


@given(
    boot=st.floats(min_value=10, max_value=1200),
    plugin=st.floats(min_value=1, max_value=600),
)
def test_node_boot_adds_to_every_total_and_to_no_reaction(boot: float, plugin: float) -> None:
    base = fallbacks(Timers())
    slower = fallbacks(dataclasses.replace(Timers(), ec2_node_ready=boot, aks_node_ready=boot, device_plugin_ready=plugin))
    for before, after in zip(base, slower, strict=True):
        old_boot = (Timers().ec2_node_ready if before.cloud == "eks" else Timers().aks_node_ready) + Timers().device_plugin_ready
        assert after.typical - before.typical == pytest.approx(boot + plugin - old_boot)
        assert after.reaction_typical == before.reaction_typical


@given(
    fraction=st.floats(min_value=0, max_value=1),
    provision_minutes=st.integers(min_value=2, max_value=60),
)
def test_nap_beats_the_autoscaler_on_aks_when_the_failure_comes_before_the_timeout(
    fraction: float, provision_minutes: int
) -> None:
    """NAP reacts to the failure itself; the autoscaler waits out max-node-provision-time whenever the failure
    happens. For any allocation failure at least a minute before the timeout, NAP's worst case beats the
    autoscaler's typical case (the margin: NAP's poll and batch window, 15 s at worst, against the loop)."""
    provision = provision_minutes * 60.0
    allocation = 1 + fraction * (provision - 61)
    timers = dataclasses.replace(Timers(), azure_allocation_failure=allocation, max_node_provision_time=provision)
    nap, autoscaler = nap_aks(timers, Failure.ASYNC), autoscaler_aks(timers, Failure.ASYNC)
    assert nap.worst < autoscaler.typical
    assert autoscaler.typical - nap.typical == pytest.approx(
        provision - allocation + timers.scan_interval / 2 - timers.nap_poll_interval / 2 - timers.karpenter_batch_idle
    )


# --- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["10", "10s", "1h", "m", "-5m"])
def test_minutes_rejects_other_forms(value: str) -> None:
    with pytest.raises(ValueError, match="whole minutes"):
        minutes(value)


def test_allocation_failure_after_the_provision_timeout_is_refused() -> None:
    timers = dataclasses.replace(Timers(), azure_allocation_failure=700.0, max_node_provision_time=600.0)
    with pytest.raises(ValueError, match="azure_allocation_failure"):
        autoscaler_aks(timers, Failure.ASYNC)


@pytest.mark.parametrize(("seconds", "text"), [(2.5, "2.5s"), (30, "30s"), (60, "1m00s"), (815, "13m35s")])
def test_human(seconds: float, text: str) -> None:
    assert human(seconds) == text


# --- the benchmark and the docs ---------------------------------------------------------------------


def test_docs_show_the_table_the_benchmark_prints() -> None:
    module = benchmark_module()
    printed = module.table(fallbacks(Timers(), EKS_SPOT_GROUPS))
    page = (ROOT / "docs" / "karpenter-nap.md").read_text()
    assert "## Fallback time: cluster-autoscaler, Karpenter, NAP" in page
    assert printed in page, "docs/karpenter-nap.md table out of date: run python benchmarks/fallback_time.py"
    assert len(printed.splitlines()) == 2 + 6


def test_benchmark_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    module = benchmark_module()
    assert module.main(["--max-node-provision-time", "15m", "--set", "aks_node_ready=300", "--steps"]) == 0
    out = capsys.readouterr().out
    assert "| cluster-autoscaler | AKS | asynchronous" in out and "20m35s" in out  # 900 + 5 + 300 + 30 seconds
    with pytest.raises(SystemExit, match="unknown timer"):
        module.main(["--set", "max_node_provision_time=60"])
