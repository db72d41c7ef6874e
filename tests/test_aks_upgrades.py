"""Issue 37 NM2: AKS upgrades with a bounded, stated duration.

Per pool ``upgrade`` settings reach every Regular agent pool's ``upgradeSettings`` (Spot pools get
none: AKS refuses surge settings there), bad values are one error before anything is registered,
and every AKS stack exports its worst-case minor-upgrade duration (``gpupools.azure.upgrade``), which
the synth summary prints against the deploy job's limit.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from gpupools.azure.upgrade import (
    CONTROL_PLANE_MINUTES,
    DEPLOY_JOB_TIMEOUT_MINUTES,
    PER_NODE_MINUTES,
    pool_minutes,
    upgrade_estimate,
)
from gpupools.specs import UpgradeSpec, upgrade_nodes
from gpupools.synth.summary import render
from gpupools.testing import PROJECT_ROOT, run_stack, stack_config

from tests.example_runs import example_run
from tests.multi_node_cases import AZURE, with_pool
from tests.upgrade_cases import UPGRADE_INVALID

AGENT_POOL = "azure-native:containerservice:AgentPool"


def settings_by_pool(overrides: dict[str, Any]) -> dict[str, Any]:
    run = run_stack("azure-dev", overrides=overrides)
    return {r.inputs["agentPoolName"]: r.inputs.get("upgradeSettings") for r in run.of_type(AGENT_POOL)}


def test_a_pools_upgrade_settings_reach_its_regular_agent_pools_only() -> None:
    t4 = {"maxSurge": "33%", "maxUnavailable": 0, "drainTimeoutMinutes": 30}
    overrides = {"gpupools:gpuPools": with_pool(AZURE, 0, upgrade=t4)["gpupools:gpuPools"]}
    settings = settings_by_pool(overrides)
    t4_pools = {name: value for name, value in settings.items() if name.startswith("t4")}
    assert sorted(v is None for v in t4_pools.values()) == [False, True]  # the Spot pool has none
    [sent] = [v for v in t4_pools.values() if v is not None]
    assert sent == {"maxSurge": "33%", "maxUnavailable": "0", "drainTimeoutInMinutes": 30}
    # The other pools keep the defaults, unchanged from before the key existed.
    others = [v for name, v in settings.items() if not name.startswith("t4") and v is not None]
    assert others and all(v == {"maxSurge": "0", "maxUnavailable": "1", "drainTimeoutInMinutes": 60} for v in others)


def test_the_agent_pool_names_do_not_depend_on_upgrade_settings() -> None:
    """``upgradeSettings`` is updated in place: it is not in the name digest."""
    before = set(settings_by_pool({}))
    overrides = {"gpupools:gpuPools": with_pool(AZURE, 0, upgrade={"maxSurge": "2"})["gpupools:gpuPools"]}
    assert set(settings_by_pool(overrides)) == before


@pytest.mark.parametrize(("case", "raw", "path", "rule"), UPGRADE_INVALID, ids=[c[0] for c in UPGRADE_INVALID])
def test_bad_upgrade_settings_are_one_error(case: str, raw: dict[str, Any], path: str, rule: str) -> None:
    stack = "azure-nap-dev" if raw.get("gpupools:provisioner") == "karpenter" else None
    run = run_stack(stack or ("aws-dev" if raw["gpupools:cloud"] == "aws" else "azure-dev"), overrides=raw, raise_errors=False)
    assert run.error is not None and str(run.error).startswith(f"{path}: ") and rule in str(run.error), run.error
    assert not run.registrations


@pytest.mark.parametrize(("value", "size", "nodes"), [("0", 10, 0), ("3", 10, 3), ("33%", 10, 4), ("10%", 4, 1), ("100%", 7, 7)])
def test_counts_and_percentages_round_up_as_aks_does(value: str, size: int, nodes: int) -> None:
    """ "For percentages, fractional nodes are rounded up" (AgentPoolUpgradeSettings, API 2025-09-01)."""
    assert upgrade_nodes(value, size) == nodes


def test_the_worst_case_is_batches_times_drain_plus_per_node_time() -> None:
    run = example_run("azure-dev")
    estimate = run.outputs["upgrade"]
    config = stack_config("azure-dev")
    pools = {p["name"]: p for p in estimate["pools"]}
    # The System pool at its max with AKS's defaults (10% surge, 30 minutes).
    system_max = config["gpupools:systemPool"]["maxSize"]
    assert pools["system"]["minutes"] == math.ceil(system_max / 1) * (30 + PER_NODE_MINUTES)
    # A Regular pool with the defaults: one node at a time, 60 minutes each.
    [general_od] = [p for n, p in pools.items() if n.startswith("generalo")]
    assert general_od["minutes"] == config["gpupools:cpuPools"][0]["maxSize"] * (60 + PER_NODE_MINUTES)
    # A Spot pool: no drain, one node at a time.
    [t4_spot] = [p for n, p in pools.items() if n.startswith("t4s")]
    assert (t4_spot["drainTimeoutMinutes"], t4_spot["minutes"]) == (0, 8 * PER_NODE_MINUTES)
    assert estimate["worstCaseMinutes"] == CONTROL_PLANE_MINUTES + sum(p["minutes"] for p in estimate["pools"])
    assert estimate["fitsDeployJob"] is (estimate["worstCaseMinutes"] <= DEPLOY_JOB_TIMEOUT_MINUTES)


def test_surge_settings_shorten_the_stated_figure() -> None:
    base = example_run("azure-dev").outputs["upgrade"]["worstCaseMinutes"]
    fast = {"maxSurge": "50%", "maxUnavailable": 0, "drainTimeoutMinutes": 15}
    config = stack_config("azure-dev")
    cpu = [{**config["gpupools:cpuPools"][0], "upgrade": fast}]
    faster = run_stack("azure-dev", overrides={"gpupools:cpuPools": cpu}).outputs["upgrade"]["worstCaseMinutes"]
    # general on-demand: 10 nodes, 5 at a time, 15 + 10 minutes a batch instead of 10 x 70.
    assert base - faster == 10 * (60 + PER_NODE_MINUTES) - 2 * (15 + PER_NODE_MINUTES)


def test_pool_minutes_of_an_empty_pool_is_zero() -> None:
    assert pool_minutes(0, 1, 60) == 0


def test_the_nap_stack_states_the_control_plane_and_system_pool_only() -> None:
    estimate = example_run("azure-nap-dev").outputs["upgrade"]
    assert [p["name"] for p in estimate["pools"]] == ["system"]


def test_the_synth_summary_states_the_figure_and_what_to_do_above_the_job_limit() -> None:
    from gpupools.synth import synthesize

    text = render(synthesize("azure-dev").document, wide=True)
    estimate = example_run("azure-dev").outputs["upgrade"]
    assert f"Kubernetes minor upgrade, worst case: {estimate['worstCaseMinutes']} min" in text
    assert ("Longer than the deploy job's 120 min" in text) is (not estimate["fitsDeployJob"])


def test_the_stated_job_limit_is_the_deploy_workflows() -> None:
    workflow = (Path(PROJECT_ROOT) / ".github" / "workflows" / "deploy.yml").read_text()
    deploy_job = workflow[workflow.index("\n  deploy:") :]
    [minutes] = re.findall(r"timeout-minutes: (\d+)", deploy_job)[:1]
    assert int(minutes) == DEPLOY_JOB_TIMEOUT_MINUTES


def test_the_estimate_takes_each_pools_own_settings() -> None:
    from gpupools.conventions import CapacityType, Role
    from gpupools.pools import NodePoolInfo

    def info(name: str, pool: str, capacity: CapacityType, max_size: int) -> NodePoolInfo:
        return NodePoolInfo(
            name=name,
            pool=pool,
            role=Role.GPU,
            capacity=capacity,
            zones=("1",),
            instance_types=("x",),
            min_size=0,
            max_size=max_size,
        )

    system = NodePoolInfo(
        name="system",
        pool="system",
        role=Role.SYSTEM,
        capacity=CapacityType.ON_DEMAND,
        zones=("1",),
        instance_types=("x",),
        min_size=2,
        max_size=2,
    )
    estimate = upgrade_estimate(
        system,
        [info("a100o1", "a100", CapacityType.ON_DEMAND, 6), info("a100s1", "a100", CapacityType.SPOT, 6)],
        {"a100": UpgradeSpec(max_surge="0", max_unavailable="2", drain_timeout_minutes=20)},
    )
    minutes = {p["name"]: p["minutes"] for p in estimate["pools"]}
    assert minutes == {"system": 2 * 40, "a100o1": 3 * 30, "a100s1": 6 * PER_NODE_MINUTES}


def test_docs_state_the_committed_stacks_figures() -> None:
    text = " ".join((Path(PROJECT_ROOT) / "docs" / "aks.md").read_text().split())
    dev = example_run("azure-dev").outputs["upgrade"]["worstCaseMinutes"]
    nap = example_run("azure-nap-dev").outputs["upgrade"]["worstCaseMinutes"]
    assert f"`azure-dev` states {dev} minutes" in text
    assert f"figure is {nap} minutes" in text


def test_every_agent_pool_and_the_cluster_wait_as_long_as_their_own_upgrade_line() -> None:
    """Third AKS review, NM3: pulumi-azure-native gives an operation 2 hours unless ``customTimeouts``
    says otherwise (``azureContext``, provider.go). Each AgentPool's update deadline is its line of the
    ``upgrade`` output plus 30 minutes, the ManagedCluster's the control plane plus the System pool's
    line plus 30, and none is below the provider's 2 hours."""
    from gpupools.testing import run_stack

    run = run_stack("azure-dev")
    lines = {p["name"]: p["minutes"] for p in run.outputs["upgrade"]["pools"]}
    pools = run.of_type("azure-native:containerservice:AgentPool")
    assert pools
    for pool in pools:
        expected = max(120, lines[pool.inputs["agentPoolName"]] + 30)
        assert pool.options["customTimeouts"] == {"update": f"{expected}m"}, pool.name
    [cluster] = run.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.options["customTimeouts"] == {"update": f"{15 + lines['system'] + 30}m"}
    # By hand from Pulumi.azure-dev.yaml: `general` on-demand, maxSize 10, one node at a time, the
    # default 60-minute drain, 10 minutes a node: 10 x 70 = 700, past the provider's 120.
    [general] = [p for p in pools if p.inputs["agentPoolName"].startswith("generalo")]
    assert general.options["customTimeouts"] == {"update": "730m"}
