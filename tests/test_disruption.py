"""Disruption that never surprises a running GPU job, and shared GPUs that buy shared nodes (issue 18, items 3 and 5).

* Every Karpenter (EKS) and NAP (AKS) NodePool allows ``Drifted`` disruptions only inside the
  ``gpupools:maintenance`` window: checked minute by minute over a week against a model of
  Karpenter's own budget arithmetic (kubernetes-sigs/karpenter ``pkg/apis/v1/nodepool.go`` at the
  commit aws/karpenter-provider-aws v1.14.1 pins, 6e7eab7a0f48: ``GetAllowedDisruptionsByReason``
  takes the minimum over the budgets that list the reason or list none; ``Budget.IsActive`` is
  ``!schedule.Next(now - duration).After(now)``; an inactive budget allows ``MaxInt32``).
* Every NodePool has a ``terminationGracePeriod``; the AKS NAP stack registers the
  ``aksManagedNodeOSUpgradeSchedule`` maintenance configuration with the same window.
* A time-sliced pool under Karpenter on EKS buys ceil(pods / slots per node) nodes: a model of how
  Karpenter sizes new nodes from instance-type capacity with NodeOverlays applied (core
  ``pkg/cloudprovider/types.go`` ``ApplyCapacityOverlay``: ``lo.Assign(capacity, overlay)``, later
  keys win), fed with the NodeOverlay the stack registers.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any, Mapping

import pulumi_azure_native.containerservice as containerservice
import pytest
from gpupools import config, maintenance
from gpupools.azure import NodeImageMaintenance
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.conventions import DO_NOT_DISRUPT_ANNOTATION
from gpupools.errors import ConfigError
from gpupools.kubernetes.karpenter import overlay
from gpupools.scheduling import do_not_disrupt, gpu_workload
from gpupools.specs import MaintenanceSpec, WeekDay
from gpupools.testing import Run, run_program, run_stack, stack_config

from tests.crd_schema import validate_custom_resource
from tests.k8s_schema import validate_all_versions

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
OVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"
RELEASE = "kubernetes:helm.sh/v3:Release"
WEEK = maintenance.MINUTES_PER_WEEK
MAX_INT32 = 2**31 - 1

CUSTOM = {"day": "Wednesday", "startTime": "22:30", "durationHours": 6, "utcOffset": "-03:00", "terminationGracePeriod": "36h"}
"""Wednesday 22:30 at UTC-3 is Thursday 01:30 UTC: a window that moves to the next day in UTC."""


@cache
def stack(name: str, custom: bool = False) -> Run:
    return run_stack(name, overrides={"gpupools:maintenance": CUSTOM} if custom else None)


def node_pools(result: Run) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in result.of_type(NODEPOOL)}


# --- a model of Karpenter's budget arithmetic ----------------------------------------------------------

CRON = re.compile(r"^(\d+) (\d+) \* \* (\d)$")


def next_hit(schedule: str, after: int) -> int:
    """``cron.Schedule.Next``: the first minute strictly after ``after`` (minutes since a Sunday 00:00 UTC)
    that matches ``M H * * D``; the only schedule form gpupools writes (asserted)."""
    match = CRON.match(schedule)
    assert match, f"unexpected schedule form {schedule!r}"
    minute, hour, day = (int(g) for g in match.groups())
    hit = day * 1440 + hour * 60 + minute
    week_start = (after // WEEK) * WEEK
    candidate = week_start + hit
    return candidate if candidate > after else candidate + WEEK


def duration_minutes(duration: str) -> int:
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", duration)
    assert match and duration, duration
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def is_active(budget: Mapping[str, Any], now: int) -> bool:
    """``Budget.IsActive``: no schedule = always; else ``!Next(now - duration).After(now)``."""
    if "schedule" not in budget and "duration" not in budget:
        return True
    return next_hit(budget["schedule"], now - duration_minutes(budget["duration"])) <= now


def allowed(budgets: list[Mapping[str, Any]], reason: str, now: int, nodes: int = 10) -> int:
    """``GetAllowedDisruptionsByReason`` for a NodePool of ``nodes`` nodes, none deleting or NotReady."""
    result = MAX_INT32
    for budget in budgets:
        if "reasons" in budget and reason not in budget["reasons"]:
            continue
        if not is_active(budget, now):
            continue
        value = budget["nodes"]
        count = math.ceil(nodes * int(value[:-1]) / 100) if value.endswith("%") else int(value)
        result = min(result, count)
    return result


WINDOWS = [
    MaintenanceSpec(),
    MaintenanceSpec(day=WeekDay.SUNDAY, start_time="02:00", utc_offset="+05:30"),  # Saturday 20:30 UTC
    MaintenanceSpec(day=WeekDay.SATURDAY, start_time="22:00", duration_hours=8, utc_offset="-07:00"),  # across Sunday
    MaintenanceSpec(day=WeekDay.FRIDAY, start_time="23:59", duration_hours=24, utc_offset="+14:00"),
    MaintenanceSpec(day=WeekDay.MONDAY, start_time="00:00", duration_hours=4, utc_offset="-12:00"),
]


@pytest.mark.parametrize("window", WINDOWS, ids=maintenance.describe)
def test_drift_is_allowed_exactly_inside_the_window_one_node_at_a_time(window: MaintenanceSpec) -> None:
    from gpupools.kubernetes.karpenter.nodepool import disruption

    budgets = disruption("10m", window)["budgets"]
    inside = 0
    # Two weeks from an arbitrary week boundary, so windows that wrap the week are seen whole.
    for now in range(3 * WEEK, 5 * WEEK):
        drift = allowed(budgets, "Drifted", now)
        expected = 1 if maintenance.in_window(window, now % WEEK) else 0
        assert drift == expected, f"{maintenance.describe(window)}: minute {now % WEEK} of the week allows {drift}"
        inside += drift
        # Empty nodes go at any time, 10% of the pool at once (the WhenEmpty consolidation).
        assert allowed(budgets, "Empty", now) == 1
    assert inside == 2 * window.duration_hours * 60


def test_the_window_is_converted_to_utc() -> None:
    assert maintenance.drift_budgets(MaintenanceSpec())[1] == {
        "nodes": "0",
        "reasons": ["Drifted"],
        "schedule": "0 6 * * 0",  # closed from Sunday 06:00 UTC ...
        "duration": "164h",  # ... for the rest of the week (168h - 4h)
    }
    # Sunday 02:00 at +05:30 is Saturday 20:30 UTC; the window closes Sunday 00:30 UTC.
    assert maintenance.drift_budgets(WINDOWS[1])[1]["schedule"] == "30 0 * * 0"
    assert maintenance.start_minute_utc(WINDOWS[1]) == 6 * 1440 + 20 * 60 + 30


def test_weekday_names_are_the_aks_api_enum_and_cron_days() -> None:
    assert {d.value for d in WeekDay} == {d.value for d in containerservice.WeekDay}
    assert [d.cron_day for d in WeekDay] == list(range(7)) and WeekDay.SUNDAY.cron_day == 0


# --- the stacks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "provider"), [("aws-karpenter-dev", "aws"), ("azure-nap-dev", "azure")])
@pytest.mark.parametrize("custom", [False, True], ids=["default-window", "custom-window"])
def test_every_nodepool_drifts_only_in_the_window_and_has_the_configured_grace_period(
    name: str, provider: str, custom: bool
) -> None:
    result = stack(name, custom)
    window = config.parse_maintenance(CUSTOM if custom else None, "gpupools:maintenance")
    pools = node_pools(result)
    assert len(pools) == 3 and sum("nvidia.com/gpu" in spec["limits"] for spec in pools.values()) == 2
    for pool_name, spec in pools.items():
        budgets = spec["disruption"]["budgets"]
        assert budgets == [{"nodes": "10%"}, *maintenance.drift_budgets(window)], pool_name
        # Issue 28 (review M4): no grace period unless configured; with one, exactly it.
        if custom:
            assert spec["template"]["spec"]["terminationGracePeriod"] == CUSTOM["terminationGracePeriod"]
        else:
            assert "terminationGracePeriod" not in spec["template"]["spec"], pool_name
        assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty"
        assert spec["template"]["spec"]["expireAfter"] == "Never"
        # Inside and just outside the window, as Karpenter would compute it.
        start = maintenance.start_minute_utc(window)
        assert allowed(budgets, "Drifted", WEEK + start) == 1
        assert allowed(budgets, "Drifted", WEEK + start - 1) == 0
        assert allowed(budgets, "Drifted", WEEK + start + window.duration_hours * 60) == 0
    for reg in result.of_type(NODEPOOL):
        body = {key: reg.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}
        assert validate_custom_resource(body, provider=provider) == [], reg.name


@pytest.mark.parametrize("name", ["aws-karpenter-dev", "azure-nap-dev"])
@pytest.mark.parametrize("custom", [False, True], ids=["default-window", "custom-window"])
def test_every_nodepool_and_node_class_delete_outlasts_its_grace_period(name: str, custom: bool) -> None:
    """Review B5: a NodePool's foreground delete waits for its nodes' drain, bounded by
    ``terminationGracePeriod``; the delete timeout was 30 minutes against a 24h grace period. Now it is
    the grace period plus a margin (and 30 minutes without one, when nothing bounds the drain)."""
    result = stack(name, custom)
    classes = [
        r
        for r in result.registrations
        if r.type.startswith("kubernetes:") and r.inputs.get("kind") in ("NodePool", "EC2NodeClass", "AKSNodeClass")
    ]
    assert {r.inputs["kind"] for r in classes} >= {"NodePool"} and len(classes) >= 6
    grace_minutes = 36 * 60 if custom else 0
    for reg in classes:
        timeout = reg.options["customTimeouts"]["delete"]
        minutes = int(timeout.removesuffix("m"))
        assert minutes > grace_minutes and minutes >= 30, (reg.name, timeout)


def test_custom_window_reaches_the_nodepools_in_utc() -> None:
    [budget] = [b for b in node_pools(stack("aws-karpenter-dev", True))["gpu1"]["disruption"]["budgets"] if "schedule" in b]
    # Wednesday 22:30 -03:00 = Thursday 01:30 UTC; + 6h = Thursday 07:30 UTC; closed for 162h.
    assert budget == {"nodes": "0", "reasons": ["Drifted"], "schedule": "30 7 * * 4", "duration": "162h"}


@pytest.mark.parametrize("custom", [False, True], ids=["default-window", "custom-window"])
def test_nap_stack_registers_the_node_image_maintenance_window(custom: bool) -> None:
    result = stack("azure-nap-dev", custom)
    configurations = {r.inputs["configName"]: r for r in result.of_type(MAINTENANCE)}
    assert set(configurations) == {"aksManagedNodeOSUpgradeSchedule", "aksManagedAutoUpgradeSchedule"}
    configuration = configurations["aksManagedNodeOSUpgradeSchedule"]
    inputs = configuration.inputs
    assert inputs["resourceName"] == "ml-nap" and inputs["resourceGroupName"]
    expected = CUSTOM if custom else {"day": "Sunday", "startTime": "02:00", "durationHours": 4, "utcOffset": "+00:00"}
    assert inputs["maintenanceWindow"] == {
        "schedule": {"weekly": {"dayOfWeek": expected["day"], "intervalWeeks": 1}},
        "durationHours": expected["durationHours"],
        "startTime": expected["startTime"],
        "utcOffset": expected["utcOffset"],
    }
    # The cluster's name is an output of the ManagedCluster, so the configuration waits for the cluster.
    [cluster] = result.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.urn in configuration.dependencies


def test_cluster_autoscaler_aks_stack_registers_the_node_os_window_and_channels() -> None:
    """Review M3: under cluster-autoscaler the default ``NodeImage`` channel reimaged GPU nodes weekly at
    any hour. Now the node-OS channel is stated and both windows come from ``gpupools:maintenance``."""
    custom = {k: v for k, v in CUSTOM.items() if k != "terminationGracePeriod"}
    for overrides, expected in (
        (None, MaintenanceSpec()),
        ({"gpupools:maintenance": custom}, config.parse_maintenance(custom, "m")),
    ):
        result = run_stack("azure-dev", overrides=overrides)
        configurations = {r.inputs["configName"]: r.inputs for r in result.of_type(MAINTENANCE)}
        assert set(configurations) == {"aksManagedNodeOSUpgradeSchedule", "aksManagedAutoUpgradeSchedule"}
        for inputs in configurations.values():
            assert inputs["maintenanceWindow"]["schedule"]["weekly"]["dayOfWeek"] == expected.day.value
            assert inputs["maintenanceWindow"]["startTime"] == expected.start_time
        [cluster] = result.of_type("azure-native:containerservice:ManagedCluster")
        assert cluster.inputs["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}


def test_cluster_autoscaler_refuses_a_grace_period_and_eks_the_window() -> None:
    azure = run_stack("azure-dev", overrides={"gpupools:maintenance": {"terminationGracePeriod": "2h"}}, raise_errors=False)
    assert isinstance(azure.error, ConfigError)
    assert str(azure.error).startswith(
        "gpupools:maintenance.terminationGracePeriod: has no meaning with provisioner cluster-autoscaler"
    )
    aws = run_stack("aws-dev", overrides={"gpupools:maintenance": {"day": "Monday"}}, raise_errors=False)
    assert isinstance(aws.error, ConfigError) and str(aws.error).startswith("gpupools:maintenance: has no meaning")


def test_node_image_maintenance_refuses_a_bad_window_before_registering() -> None:
    def program() -> None:
        NodeImageMaintenance("m", "rg", "ml", MaintenanceSpec(duration_hours=2))

    result = run_program(program, {}, raise_errors=False)
    assert isinstance(result.error, ConfigError)
    assert str(result.error).startswith("NodeImageMaintenance(m).maintenance.durationHours: must be >= 4")
    assert result.registrations == []


# --- do-not-disrupt -------------------------------------------------------------------------------------


def test_do_not_disrupt_annotates_a_job_template_that_validates() -> None:
    assert do_not_disrupt() == {DO_NOT_DISRUPT_ANNOTATION: "true"} == {"karpenter.sh/do-not-disrupt": "true"}
    assert do_not_disrupt("6h") == {"karpenter.sh/do-not-disrupt": "6h"}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "template": {
                "metadata": {"annotations": do_not_disrupt()},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "t", "image": "example/t:1.0.0", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                    **gpu_workload("t4"),
                },
            }
        },
    }
    validate_all_versions(job)


@pytest.mark.parametrize("bad", ["", "1d", "30", "true", "h5"])
def test_do_not_disrupt_rejects_what_karpenter_cannot_parse(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"do_not_disrupt\.duration"):
        do_not_disrupt(bad)


# --- shared GPUs under Karpenter -------------------------------------------------------------------------


def overlaid_gpus(result: Run, node_pool: str, instance_type: str) -> int:
    """``nvidia.com/gpu`` of ``instance_type`` in ``node_pool`` as Karpenter's scheduler sees it: the
    catalog's physical GPUs (the AWS provider reports the instance's GPU count), then every
    NodeOverlay whose requirements match the pool's name and the type, merged by ``lo.Assign``."""
    capacity = {"nvidia.com/gpu": INSTANCE_TYPES[instance_type].gpus}
    labels = {"karpenter.sh/nodepool": node_pool, "node.kubernetes.io/instance-type": instance_type}
    for reg in result.of_type(OVERLAY):
        requirements = reg.inputs["spec"]["requirements"]
        assert all(r["operator"] == "In" for r in requirements)
        if all(labels.get(r["key"]) in r["values"] for r in requirements):
            capacity = {**capacity, **{k: int(v) for k, v in reg.inputs["spec"]["capacity"].items()}}
    return capacity["nvidia.com/gpu"]


def nodes_bought(pending_pods: int, gpus_per_node: int, max_nodes: int) -> int:
    """Karpenter's provisioning for pods that each request ``nvidia.com/gpu: 1`` and fit only this
    pool: fill a new node's allocatable, then open the next (extended resources have no overhead),
    up to the NodePool's ``nodes`` limit."""
    nodes, free = 0, 0
    for _ in range(pending_pods):
        if free == 0:
            if nodes == max_nodes:
                break
            nodes, free = nodes + 1, gpus_per_node
        free -= 1
    return nodes


@pytest.mark.parametrize("pods", [1, 3, 4, 5, 8, 17, 24])
def test_time_sliced_pool_under_karpenter_buys_ceil_pods_over_replicas_nodes(pods: int) -> None:
    result = stack("aws-karpenter-dev")
    spec = node_pools(result)["gpu1"]
    replicas = 4  # Pulumi.aws-karpenter-dev.yaml: gpu1 sharing.timeSlicing.replicas
    for instance_type in ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"]:
        slots = overlaid_gpus(result, "gpu1", instance_type)
        assert slots == INSTANCE_TYPES[instance_type].gpus * replicas == 4
        bought = nodes_bought(pods, slots, int(spec["limits"]["nodes"]))
        assert bought == min(math.ceil(pods / replicas), 6)
        # Without the overlay Karpenter would buy a node per pod (up to the limit).
        assert nodes_bought(pods, INSTANCE_TYPES[instance_type].gpus, int(spec["limits"]["nodes"])) == min(pods, 6)
    # The NodePool's GPU limit counts the same slots, so it never binds before the node limit.
    assert int(spec["limits"]["nvidia.com/gpu"]) == int(spec["limits"]["nodes"]) * 4


def test_overlays_only_for_shared_pools_valid_and_behind_the_feature_gate() -> None:
    result = stack("aws-karpenter-dev")
    [reg] = result.of_type(OVERLAY)
    body = {key: reg.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}
    assert validate_custom_resource(body) == []
    assert body["metadata"]["name"] == "gpu1-gpu-sharing"
    # The unshared pools keep their physical GPUs.
    assert overlaid_gpus(result, "gpu4", "g5.12xlarge") == 4
    assert overlaid_gpus(result, "general", "g4dn.xlarge") == 1
    controller = next(r for r in result.of_type(RELEASE) if r.inputs["name"] == "karpenter")
    assert controller.inputs["values"]["settings"]["featureGates"] == {"nodeOverlay": True}
    assert controller.urn in reg.dependencies  # the CRD chart and controller come first


def test_no_shared_pool_no_overlay_and_no_alpha_gate() -> None:
    pools = [{k: v for k, v in p.items() if k != "sharing"} for p in stack_config("aws-karpenter-dev")["gpupools:gpuPools"]]
    result = run_stack("aws-karpenter-dev", overrides={"gpupools:gpuPools": pools})
    assert result.of_type(OVERLAY) == []
    controller = next(r for r in result.of_type(RELEASE) if r.inputs["name"] == "karpenter")
    assert "featureGates" not in controller.inputs["values"]["settings"]


def test_overlay_builder_counts_every_gpu_of_a_multi_gpu_node() -> None:
    from gpupools.aws.karpenter_nodes import node_shape

    pool = config.parse_gpu_pool(
        {"name": "big", "instanceTypes": ["g5.12xlarge"], "maxSize": 3, "sharing": {"mps": {"replicas": 3}}},
        config.Cloud.AWS,
        "p",
    )
    manifest = overlay.node_overlay("big", pool, node_shape(pool))
    assert manifest["spec"]["capacity"] == {"nvidia.com/gpu": "12"}
    assert validate_custom_resource(manifest) == []


@pytest.mark.parametrize("component", ["nap", "eks"])
def test_nodepool_components_refuse_a_bad_window_before_registering(component: str) -> None:
    from gpupools.aws.karpenter_nodes import KarpenterNodePools
    from gpupools.azure import NapNodePools

    cloud = config.Cloud.AZURE if component == "nap" else config.Cloud.AWS
    size = "Standard_NC4as_T4_v3" if component == "nap" else "g4dn.xlarge"
    pool = config.parse_gpu_pool({"name": "t4", "instanceTypes": [size], "maxSize": 2}, cloud, "p")
    bad = MaintenanceSpec(termination_grace_period="2d")

    def program() -> None:
        if component == "nap":
            NapNodePools("np", [pool], location="eastus", zones=["1"], consolidate_after="10m", maintenance=bad)
        else:
            KarpenterNodePools("np", [pool], "ml", "role", ["us-west-2a"], "10m", maintenance=bad)

    result = run_program(program, {}, raise_errors=False)
    assert isinstance(result.error, ConfigError), result.error
    assert result.error.path.endswith("(np).maintenance.terminationGracePeriod")
    assert result.registrations == []
