"""One capacity model (issue 30): the fleet's four states, the same figures wherever they are shown,
and ``reservations[].count`` as the reserved group's maximum on both clouds.

What is pinned:

* for every example stack (with Kueue on), Kueue's ``nvidia.com/gpu`` quotas, read from the
  registered ClusterQueue, add up to the ceiling's GPU slots in the ``cost`` output; the synth
  table's TOTAL, ``--json``'s ``total``, the diff's fleet totals and the budget check's figure are
  that same ceiling;
* the inconsistencies of the issue are gone: azure-dev's table, diff and queueing error say one
  number under one name; aws-training-dev's h100 pool is ``count`` reserved nodes plus ``maxSize``
  on-demand ones, and the figures say which; "at max, Spot first" says how much of it is on-demand;
  "at max, Spot gone" says how many GPUs it prices;
* a reservation with ``count: 2`` registers a reserved group of at most 2 nodes on EKS and AKS; an
  absent ``count`` keeps the pool's ``maxSize`` (the contract changes additively); a bad ``count``
  is one ``ConfigError`` naming its path.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from gpupools import config
from gpupools.capacity import SCENARIO_NAMES, Scenario, fleet_figures, group_nodes
from gpupools.catalog.prices import price_table
from gpupools.conventions import CAPACITY_TYPE_LABEL, GPU_RESOURCE, CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.pricing.estimate import CapacityGroup, check_budget, fleet_cost, groups_of_spec
from gpupools.specs import CostSpec
from gpupools.synth.diff import fleet_totals
from gpupools.synth.summary import fleet_total, render
from gpupools.testing import Run, run_stack, stack_config
from gpupools.testing.manifests import to_manifest

from tests.example_runs import example_run
from tests.examples import EXAMPLE_STACKS

STACKS = list(EXAMPLE_STACKS)
QUEUEING = {"enabled": True, "namespaces": ["ml"]}
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
ODCR = "cr-0123456789abcdef0"
SUB = "00000000-0000-0000-0000-000000000000"
CRG = f"/subscriptions/{SUB}/resourceGroups/capacity/providers/Microsoft.Compute/capacityReservationGroups/t4"


@cache
def queued(stack: str) -> Run:
    return run_stack(stack, overrides={"gpupools:queueing": QUEUEING})


def kueue_gpu_quota(run: Run) -> int:
    """The ``nvidia.com/gpu`` nominal quota of every flavour of the stack's ClusterQueue, added up."""
    [queue] = [to_manifest(r) for r in run.registrations if r.type == CLUSTER_QUEUE]
    return sum(
        int(resource["nominalQuota"])
        for group in queue["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for resource in flavor["resources"]
        if resource["name"] == GPU_RESOURCE
    )


def document_of(run: Run) -> dict[str, Any]:
    return {"outputs": run.outputs, "resources": []}


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_gpu_quotas_add_up_to_the_ceiling_synth_reports(stack: str) -> None:
    run = queued(stack)
    ceiling = run.outputs["cost"]["capacity"]["ceiling"]
    assert ceiling["gpuSlots"] > 0
    assert kueue_gpu_quota(run) == ceiling["gpuSlots"]
    # The table's TOTAL, --json's total and the diff's fleet totals are that same ceiling.
    total = fleet_total(run.outputs["nodePools"], run.outputs["cost"])
    assert (total["maxSize"], total["gpusAtMax"], total["gpuSlotsAtMax"]) == (
        ceiling["nodes"],
        ceiling["gpus"],
        ceiling["gpuSlots"],
    )
    assert total["costPerHourAtMax"] == ceiling["costPerHour"] == run.outputs["cost"]["ceilingPerHour"]
    diff = fleet_totals(document_of(run))
    assert (diff["ceiling nodes"], diff["ceiling GPUs"], diff["ceiling GPU slots"]) == (
        ceiling["nodes"],
        ceiling["gpus"],
        ceiling["gpuSlots"],
    )


@pytest.mark.parametrize("stack", STACKS)
def test_the_budget_check_and_the_config_figures_are_the_stack_outputs(stack: str) -> None:
    """Before anything exists (``groups_of_spec``: the budget check) and from what was created
    (``groups_of_pools``: the ``cost`` output), one model gives one set of figures."""
    raw = stack_config(stack)
    region = raw.get("aws:region") or raw["azure-native:location"]
    spec = config.parse(raw, region=region)
    fleet = fleet_cost(groups_of_spec(spec), price_table(spec.cloud), region, spec.cost)
    assert fleet.figures is not None
    # The cost output's capacity block: the figures, with each state's exactness and known part.
    assert fleet.to_output()["capacity"] == example_run(stack).outputs["cost"]["capacity"]
    # The budget is checked against the ceiling, under that name.
    assert fleet.ceiling is not None
    tight = fleet_cost(groups_of_spec(spec), price_table(spec.cloud), region, CostSpec(budget_per_hour=fleet.ceiling / 2))
    with pytest.raises(ConfigError) as raised:
        check_budget(tight)
    assert "must be at least the fleet's ceiling" in str(raised.value)
    at_ceiling = fleet_cost(groups_of_spec(spec), price_table(spec.cloud), region, CostSpec(budget_per_hour=fleet.ceiling))
    if fleet.auto_mode_fee_missing_in:  # EKS Auto Mode, a fee the catalog lacks: no bound, so no budget passes
        with pytest.raises(ConfigError, match=r"cannot be decided.*EKS Auto Mode fee"):
            check_budget(at_ceiling)
    else:
        check_budget(at_ceiling)


def test_azure_dev_says_one_ceiling_in_the_table_the_diff_and_the_queueing_error() -> None:
    run = example_run("azure-dev")
    ceiling = run.outputs["cost"]["capacity"]["ceiling"]
    # t4: 8 Spot + 2 fallback, a100: 4 Spot + 1 fallback, one GPU per node; general 10 + 10; system 4.
    assert (ceiling["nodes"], ceiling["gpus"], ceiling["gpuSlots"]) == (39, 15, 15)
    text = render({"outputs": run.outputs, "resources": [], "stack": "azure-dev"}, tree=False)
    [total] = [line for line in text.splitlines() if line.strip().startswith("TOTAL ")]
    assert total.split()[1:4] == ["2", "39", "15"]
    teams = {**QUEUEING, "teams": [{"name": "vision", "namespaces": ["vision"], "gpus": 16}]}
    raw = {**stack_config("azure-dev"), "gpupools:queueing": teams}
    with pytest.raises(ConfigError) as raised:
        config.parse(raw, region="eastus")
    assert "ceiling holds (15 GPU slots" in str(raised.value)
    # "At max, Spot gone" prices the fallbacks (2 T4 + 1 A100 nodes), and says that it is 3 GPUs.
    gone = run.outputs["cost"]["capacity"]["atMaxSpotGone"]
    assert (gone["gpus"], gone["byCapacity"]) == (3, {"onDemand": 4 + 2 + 1 + 10})
    assert any(line.strip().startswith("at max, Spot gone") and "3 GPUs" in line for line in text.splitlines())


def test_aws_training_dev_h100_is_its_count_reserved_plus_max_size_on_demand() -> None:
    run = example_run("aws-training-dev")
    pools = run.outputs["cost"]["capacity"]["pools"]
    [reservation] = next(p for p in stack_config("aws-training-dev")["gpupools:gpuPools"] if p["name"] == "h100")["reservations"]
    count = reservation["count"]
    h100 = pools["h100"]
    assert h100["ceiling"]["byCapacity"] == {"reserved": count, "onDemand": 4}
    assert h100["ceiling"]["gpus"] == (count + 4) * 8
    # At max, Spot first, the pool buys no Spot: the split says it is on-demand beyond the block.
    assert h100["atMaxSpotFirst"]["byCapacity"] == {"reserved": count, "onDemand": 4}
    first = run.outputs["cost"]["capacity"]["atMaxSpotFirst"]
    assert first["byCapacity"]["onDemand"] >= 4 and first["byCapacity"]["spot"] == 2  # a10g's Spot group
    reserved_rows = [p for p in run.outputs["nodePools"] if p["capacityType"] == "reserved"]
    assert [p["maxSize"] for p in reserved_rows] == [count]


def test_every_state_has_one_name_printed_once() -> None:
    text = render({"outputs": example_run("aws-dev").outputs, "resources": [], "stack": "aws-dev"}, tree=False)
    for scenario in Scenario:
        assert sum(1 for line in text.splitlines() if line.strip().startswith(SCENARIO_NAMES[scenario] + " ")) == 1
    assert "all Spot" not in text


# --- the model on its own ---------------------------------------------------------------------------


def group(capacity: CapacityType, min_size: int, max_size: int, **kwargs: Any) -> CapacityGroup:
    return CapacityGroup("p", Role.GPU, capacity, ("g5.xlarge",), min_size, max_size, gpus_per_node=1, slots_per_node=4, **kwargs)


def test_cluster_autoscaler_groups_scale_each_on_their_own() -> None:
    groups = [
        group(CapacityType.RESERVED, 0, 2),
        group(CapacityType.SPOT, 1, 6),
        group(CapacityType.ON_DEMAND, 0, 3, fallback=True),
    ]
    assert group_nodes(groups, Scenario.IDLE) == [0, 1, 0]
    assert group_nodes(groups, Scenario.SPOT_FIRST) == [2, 6, 0]
    assert group_nodes(groups, Scenario.SPOT_GONE) == [2, 0, 3]
    assert group_nodes(groups, Scenario.CEILING) == [2, 6, 3]
    ceiling = fleet_figures(groups, lambda g: {CapacityType.SPOT: 1.0, CapacityType.ON_DEMAND: 3.0}.get(g.capacity, 0.0))
    figure = ceiling.total(Scenario.CEILING)
    assert (figure.nodes, figure.gpus, figure.gpu_slots, figure.cost_per_hour) == (11, 11, 44, 6 * 1.0 + 3 * 3.0)


def test_a_karpenter_nodepool_fills_its_reservation_first_under_its_one_limit() -> None:
    groups = [
        group(CapacityType.RESERVED, 0, 2, shares_limit=True),
        group(CapacityType.SPOT, 0, 5),
        group(CapacityType.ON_DEMAND, 0, 5, fallback=True, shares_limit=True),
    ]
    assert group_nodes(groups, Scenario.SPOT_FIRST) == [2, 3, 0]
    assert group_nodes(groups, Scenario.SPOT_GONE) == [2, 0, 3]
    assert group_nodes(groups, Scenario.CEILING) == [0, 5, 0]  # the limit once
    prices = {CapacityType.SPOT: 1.0, CapacityType.ON_DEMAND: 3.0, CapacityType.RESERVED: 0.0}
    figures = fleet_figures(groups, lambda g: prices[g.capacity])
    ceiling = figures.total(Scenario.CEILING)
    # Any node under the limit may be on-demand: the limit at the dearest price, and said so.
    assert (ceiling.nodes, ceiling.cost_per_hour, dict(ceiling.by_capacity)) == (5, 15.0, {CapacityType.ON_DEMAND: 5})
    assert figures.total(Scenario.SPOT_FIRST).cost_per_hour == 3 * 1.0


def test_a_state_without_nodes_in_an_unpriced_group_keeps_its_cost() -> None:
    groups = [group(CapacityType.SPOT, 0, 4), group(CapacityType.ON_DEMAND, 0, 2, fallback=True)]
    figures = fleet_figures(groups, lambda g: 1.0 if g.capacity is CapacityType.SPOT else None)
    assert figures.total(Scenario.SPOT_FIRST).cost_per_hour == 4.0  # the fallback is at 0 nodes
    assert figures.total(Scenario.CEILING).cost_per_hour is None
    assert figures.total(Scenario.IDLE).cost_per_hour == 0.0


# --- reservations[].count ---------------------------------------------------------------------------


def reserved_eks_groups(run: Run) -> list[Any]:
    return [r for r in run.of_type("aws:eks/nodeGroup:NodeGroup") if r.inputs["labels"].get(CAPACITY_TYPE_LABEL) == "reserved"]


def reserved_aks_pools(run: Run) -> list[Any]:
    agent_pools = run.of_type("azure-native:containerservice:AgentPool")
    return [r for r in agent_pools if (r.inputs.get("nodeLabels") or {}).get(CAPACITY_TYPE_LABEL) == "reserved"]


def with_reservation(stack: str, pool: str, reservation: dict[str, Any]) -> dict[str, Any]:
    pools = stack_config(stack)["gpupools:gpuPools"]
    return {"gpupools:gpuPools": [{**p, "reservations": [reservation]} if p["name"] == pool else p for p in pools]}


@pytest.mark.parametrize("count", [2, None])
def test_count_is_the_reserved_node_group_max_on_eks(count: int | None) -> None:
    reservation = {"id": ODCR, "zone": "us-west-2b", **({"count": count} if count else {})}
    run = run_stack("aws-dev", overrides=with_reservation("aws-dev", "gpu1", reservation))
    [reserved] = reserved_eks_groups(run)
    gpu1 = next(p for p in stack_config("aws-dev")["gpupools:gpuPools"] if p["name"] == "gpu1")
    assert reserved.inputs["scalingConfig"]["maxSize"] == (count or gpu1["maxSize"])
    # maxSize keeps bounding Spot and on-demand: their groups are those of the stack without it.
    plain = example_run("aws-dev")
    sizes = sorted((r.inputs["scalingConfig"]["maxSize"], r.name) for r in plain.of_type("aws:eks/nodeGroup:NodeGroup"))
    others = [r for r in run.of_type("aws:eks/nodeGroup:NodeGroup") if r not in reserved_eks_groups(run)]
    assert sorted((r.inputs["scalingConfig"]["maxSize"], r.name) for r in others) == sizes
    assert run.outputs["cost"]["capacity"]["pools"]["gpu1"]["ceiling"]["byCapacity"]["reserved"] == (count or gpu1["maxSize"])


@pytest.mark.parametrize("count", [2, None])
def test_count_is_the_reserved_agent_pool_max_on_aks(count: int | None) -> None:
    reservation = {"id": CRG, **({"count": count} if count else {})}
    run = run_stack("azure-dev", overrides=with_reservation("azure-dev", "t4", reservation))
    [reserved] = reserved_aks_pools(run)
    t4 = next(p for p in stack_config("azure-dev")["gpupools:gpuPools"] if p["name"] == "t4")
    assert (reserved.inputs["minCount"], reserved.inputs["maxCount"]) == (0, count or t4["maxSize"])
    assert reserved.inputs["capacityReservationGroupID"] == CRG
    figures = run.outputs["cost"]["capacity"]["pools"]["t4"]
    assert figures["ceiling"]["byCapacity"] == {"reserved": count or t4["maxSize"], "spot": 8, "onDemand": 2}


def test_count_on_karpenter_fills_the_nodepool_first_and_never_past_its_limit() -> None:
    for count, expected in ((2, 2), (50, 3)):  # gpu4's maxSize is 3
        reservation = {"id": ODCR, "zone": "us-west-2b", "count": count}
        run = run_stack("aws-karpenter-dev", overrides=with_reservation("aws-karpenter-dev", "gpu4", reservation))
        first = run.outputs["cost"]["capacity"]["pools"]["gpu4"]["atMaxSpotFirst"]
        assert first["nodes"] == 3 and first["byCapacity"].get("reserved") == expected


@pytest.mark.parametrize("value", [0, -1, "2", 1.5, True])
def test_a_bad_count_is_one_error_naming_its_path(value: Any) -> None:
    overrides = with_reservation("aws-dev", "gpu1", {"id": ODCR, "zone": "us-west-2b", "count": value})
    raw = {**stack_config("aws-dev"), **overrides}
    with pytest.raises(ConfigError) as raised:
        config.parse(raw, region="us-west-2")
    index = [p["name"] for p in raw["gpupools:gpuPools"]].index("gpu1")
    assert raised.value.path == f"gpupools:gpuPools[{index}].reservations[0].count"
    assert "must be a whole number >= 1" in str(raised.value)


def test_karpenter_reserved_nodes_cross_the_package_boundary() -> None:
    from gpupools.xlang.convert import info_from_dict, info_to_dict

    reservation = {"id": ODCR, "zone": "us-west-2b", "count": 2}
    run = run_stack("aws-karpenter-dev", overrides=with_reservation("aws-karpenter-dev", "gpu4", reservation))
    assert run.outputs["cost"]["capacity"]["pools"]["gpu4"]["atMaxSpotFirst"]["byCapacity"]["reserved"] == 2
    from gpupools.pools import NodePoolInfo

    info = NodePoolInfo("gpu4", "gpu4", Role.GPU, CapacityType.SPOT, (), ("g5.12xlarge",), 0, 3, reserved_nodes=2)
    assert info_from_dict(info_to_dict(info), "pool").reserved_nodes == 2


def test_components_check_count_by_the_same_rule() -> None:
    """Library users build ``ReservationSpec`` themselves: the pool components' own check
    (``rules.check_gpu_pool``) rejects a count below 1 as the config loader does."""
    from dataclasses import replace

    from gpupools import rules
    from gpupools.config import parse_gpu_pool
    from gpupools.specs import Cloud, ReservationSpec

    pool = parse_gpu_pool({"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}, Cloud.AZURE, "t4")
    with pytest.raises(ConfigError) as raised:
        rules.check_reservations(
            replace(pool, reservations=(ReservationSpec(CRG, count=0),)), Cloud.AZURE, "GpuNodePool(t4).pool", ("1",)
        )
    assert raised.value.path == "GpuNodePool(t4).pool.reservations[0].count"
    rules.check_reservations(
        replace(pool, reservations=(ReservationSpec(CRG, count=3),)), Cloud.AZURE, "GpuNodePool(t4).pool", ("1",)
    )
