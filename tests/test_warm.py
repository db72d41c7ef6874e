"""Warm GPU capacity (``gpuPools[].warm``, issue 41): config rules, the mechanism each provisioner
gets and its objects as the stacks register them, the schedule and its RBAC, and the Kueue boundary."""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools import config, warm
from gpupools.errors import ConfigError
from gpupools.kubernetes import crds
from gpupools.queueing.kueue import manager_config
from gpupools.specs import WarmScheduleSpec, WeekDay
from gpupools.testing import Run, run_stack, stack_config

from tests.example_runs import example_run
from tests.k8s_schema import validate_manifest
from tests.warm_cases import SCHEDULE, WARM_INVALID

CB = "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CHART = Path(__file__).resolve().parent.parent / "package"


def warm_overrides(stack: str, warm_value: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    values = stack_config(stack)
    pools = copy.deepcopy(values["gpupools:gpuPools"])
    pools[0]["warm"] = warm_value
    out: dict[str, Any] = {"gpupools:gpuPools": pools}
    if cluster:
        out["gpupools:cluster"] = {**values["gpupools:cluster"], **cluster}
    return out


def run(stack: str, warm_value: dict[str, Any] | None = None, **cluster: Any) -> Run:
    return run_stack(stack, overrides=warm_overrides(stack, warm_value or {"nodes": 1}, **cluster))


def manifest(reg: Any) -> dict[str, Any]:
    api = reg.type.split(":")[1]
    kind = reg.type.split(":")[2]
    inputs = {k: v for k, v in reg.inputs.items() if k not in ("apiVersion", "kind")}
    return {"apiVersion": api.replace("core/", ""), "kind": kind, **inputs}


# --- config ----------------------------------------------------------------------------------------


def test_defaults_every_day_in_utc() -> None:
    values = {
        **stack_config("aws-dev"),
        **warm_overrides("aws-dev", {"nodes": 2, "schedule": {"start": "07:30", "end": "18:00"}}),
    }
    pool = config.parse(values, region="us-west-2").gpu_pools[0]
    assert pool.warm is not None and pool.warm.nodes == 2
    assert pool.warm.schedule == WarmScheduleSpec(start="07:30", end="18:00", days=tuple(WeekDay), time_zone="UTC")
    assert config.parse(stack_config("aws-dev"), region="us-west-2").gpu_pools[0].warm is None


@pytest.mark.parametrize(("name", "values", "path", "rule"), WARM_INVALID, ids=[c[0] for c in WARM_INVALID])
def test_bad_warm_is_one_error_naming_the_path(name: str, values: dict[str, Any], path: str, rule: str) -> None:
    region = values.get("aws:region") or values.get("azure-native:location")
    with pytest.raises(ConfigError) as error:
        config.parse(values, region=region)
    assert error.value.path == path and rule in str(error.value)


def test_warm_is_gpu_only() -> None:
    values = stack_config("aws-dev")
    cpu = [{"name": "cpu", "instanceTypes": ["m6i.xlarge"], "maxSize": 3, "warm": {"nodes": 1}}]
    with pytest.raises(ConfigError, match=r"cpuPools\[0\]\.warm: is for GPU pools only"):
        config.parse({**values, "gpupools:cpuPools": cpu}, region="us-west-2")


def test_spot_false_is_accepted() -> None:
    values = stack_config("azure-dev")
    pools = copy.deepcopy(values["gpupools:gpuPools"])
    pools[0].update(spot=False, onDemandFallback=False, warm={"nodes": 1})
    pools[0].pop("onDemandMaxSize", None)
    pools[0].pop("evictionRate", None)
    spec = config.parse({**values, "gpupools:gpuPools": pools}, region=values["azure-native:location"])
    assert spec.gpu_pools[0].warm is not None


def test_the_warm_namespace_cannot_be_a_queue_namespace() -> None:
    values = {**stack_config("aws-training-dev"), **warm_overrides("aws-training-dev", {"nodes": 1})}
    queueing = {**values["gpupools:queueing"], "namespaces": [warm.WARM_NAMESPACE]}
    with pytest.raises(ConfigError, match="must not list gpupools-warm"):
        config.parse({**values, "gpupools:queueing": queueing}, region=values["aws:region"])


# --- the schedule ----------------------------------------------------------------------------------


def test_schedule_hours_and_cron() -> None:
    spec = config.parse(
        {**stack_config("aws-dev"), **warm_overrides("aws-dev", {"nodes": 1, "schedule": SCHEDULE})}, region="us-west-2"
    )
    w = spec.gpu_pools[0].warm
    assert w is not None and w.schedule is not None
    assert warm.open_hours_per_week(w) == 22.0
    assert warm.cron("08:00", w.schedule.days) == "0 8 * * 1,5"
    assert warm.cron("19:30", tuple(WeekDay)) == "30 19 * * *"
    # Monday 2026-11-30 07:30 UTC is 08:30 in Berlin (CET): open; 18:30 UTC is 19:30: closed.
    assert warm.is_open(w.schedule, datetime(2026, 11, 30, 7, 30, tzinfo=timezone.utc))
    assert not warm.is_open(w.schedule, datetime(2026, 11, 30, 18, 30, tzinfo=timezone.utc))
    assert not warm.is_open(w.schedule, datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc))


# --- the mechanism per provisioner -----------------------------------------------------------------


def test_eks_cluster_autoscaler_serves_capacity_buffers_with_flags_and_crd() -> None:
    result = run("aws-dev")
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "cluster-autoscaler"]
    args = release.inputs["values"]["extraArgs"]
    assert args["capacity-buffer-controller-enabled"] is True and args["capacity-buffer-pod-injection-enabled"] is True
    # cluster-autoscaler 1.35.2 (Kubernetes 1.35) has no dry-run flag and takes the caller's content type.
    assert "capacity-buffer-pod-dry-run-enabled" not in args and args["kube-api-content-type"] == "application/json"
    [crd] = [
        r
        for r in result.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
        if r.name.startswith("capacitybuffers")
    ]
    assert crd.inputs["spec"] == crds.capacity_buffer_crd("v1.35.2")["spec"]
    assert crd.urn in release.dependencies
    [buffer] = result.of_type(CB)
    assert buffer.inputs["spec"] == {
        "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
        "podTemplateRef": {"name": "warm-gpu1"},
        "replicas": 1,
    }
    assert not result.of_type(DEPLOYMENT) or all("warm" not in d.name for d in result.of_type(DEPLOYMENT))


def test_without_warm_the_autoscaler_is_unchanged() -> None:
    result = example_run("aws-dev")
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "cluster-autoscaler"]
    assert not any(k.startswith("capacity-buffer") for k in release.inputs["values"]["extraArgs"])
    assert not result.of_type(CB)


def test_karpenter_turns_on_its_gate_and_buffers_wait_for_its_crd_chart() -> None:
    result = run("aws-karpenter-dev")
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.name == "karpenter"]
    assert release.inputs["values"]["settings"]["featureGates"]["capacityBuffer"] is True
    [crd_release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.name == "karpenter-crd"]
    [buffer] = result.of_type(CB)
    assert crd_release.urn in buffer.dependencies


def test_karpenters_crd_chart_ships_the_capacity_buffer_crd_it_serves() -> None:
    """The karpenter-crd chart at the pinned version carries the CRD (``charts/karpenter-crd/templates``)."""
    import os
    import subprocess

    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip() if _has_go() else ""
    template = (
        Path(gomodcache)
        / "github.com/aws/karpenter-provider-aws@v1.14.1/charts/karpenter-crd/templates/autoscaling.x-k8s.io_capacitybuffers.yaml"
    )
    if not os.path.exists(template):
        pytest.skip("karpenter-provider-aws v1.14.1 is not in the Go module cache")
    text = template.read_text()
    assert "kind: CapacityBuffer" in text and "name: v1beta1" in text


def _has_go() -> bool:
    import shutil

    return shutil.which("go") is not None


@pytest.mark.parametrize("stack", ["azure-dev", "azure-nap-dev", "aws-dev"])
def test_placeholder_pods_where_no_buffer_is_served(stack: str) -> None:
    """AKS (managed autoscaler, NAP) always; EKS cluster-autoscaler on 1.34 (image v1.34.5)."""
    result = run(stack, **({"kubernetesVersion": "1.34"} if stack == "aws-dev" else {}))
    assert not result.of_type(CB)
    [deployment] = [d for d in result.of_type(DEPLOYMENT) if d.inputs["metadata"]["name"].startswith("warm-")]
    [priority] = result.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert priority.inputs["value"] == -10 and priority.inputs["preemptionPolicy"] == "Never"
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == warm.PRIORITY_CLASS
    assert deployment.inputs["spec"]["replicas"] == 1
    validate_manifest(manifest(deployment))


@pytest.mark.parametrize("stack", ["aws-dev", "aws-karpenter-dev", "azure-dev", "azure-nap-dev"])
def test_one_chunk_is_one_node_of_the_pool_and_nothing_else(stack: str) -> None:
    """The chunk selects the pool, tolerates exactly the taints of its groups as the stack registers
    them (``nodePools`` output), and requests every GPU slot of one node."""
    result = run(stack)
    groups = [g for g in result.outputs["nodePools"] if g["pool"] == stack_config(stack)["gpupools:gpuPools"][0]["name"]]
    pool = groups[0]["pool"]
    template = next(
        r
        for r in result.registrations
        if r.inputs.get("metadata", {}).get("name") == f"warm-{pool}" and r.type in (DEPLOYMENT, "kubernetes:core/v1:PodTemplate")
    )
    spec = (template.inputs.get("spec") or {}).get("template", template.inputs.get("template"))["spec"]
    assert spec["nodeSelector"] == {"gpupools.io/pool": pool}
    requests = spec["containers"][0]["resources"]["requests"]
    assert {g["gpuSlotsPerNode"] for g in groups} == {int(requests["nvidia.com/gpu"])}
    assert spec["containers"][0]["image"].startswith("registry.k8s.io/pause:3.10@sha256:")
    keys = {(t["key"], t["value"], t["effect"]) for t in spec["tolerations"]}
    assert ("nvidia.com/gpu", "present", "NoSchedule") in keys
    if stack == "azure-dev":  # the Spot agent pool's taint, which AKS adds
        assert ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule") in keys
    assert all(t["operator"] == "Equal" for t in spec["tolerations"])


@pytest.mark.parametrize(
    ("stack", "resource", "group"),
    [("aws-dev", "capacitybuffers", "autoscaling.x-k8s.io"), ("azure-dev", "deployments/scale", "apps")],
)
def test_schedule_cron_jobs_patch_one_object_with_least_rbac(stack: str, resource: str, group: str) -> None:
    result = run(stack, {"nodes": 1, "schedule": SCHEDULE})
    pool = stack_config(stack)["gpupools:gpuPools"][0]["name"]
    [role] = result.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
    assert role.inputs["rules"] == [
        {"apiGroups": [group], "resources": [resource], "resourceNames": [f"warm-{pool}"], "verbs": ["get", "patch"]}
    ]
    jobs = {j.inputs["metadata"]["name"]: j.inputs["spec"] for j in result.of_type("kubernetes:batch/v1:CronJob")}
    assert jobs[f"warm-{pool}-open"]["schedule"] == "0 8 * * 1,5" and jobs[f"warm-{pool}-close"]["schedule"] == "0 19 * * 1,5"
    assert {j["timeZone"] for j in jobs.values()} == {"Europe/Berlin"}
    open_pod = jobs[f"warm-{pool}-open"]["jobTemplate"]["spec"]["template"]["spec"]
    assert open_pod["containers"][0]["image"] == warm.KUBECTL_IMAGE and "@sha256:" in warm.KUBECTL_IMAGE
    assert open_pod["containers"][0]["command"][-1] == '{"spec":{"replicas":1}}'
    close_pod = jobs[f"warm-{pool}-close"]["jobTemplate"]["spec"]["template"]["spec"]
    assert close_pod["containers"][0]["command"][-1] == '{"spec":{"replicas":0}}'
    # Created at 0, then the CronJobs' (a deploy outside the hours buys nothing, a later up keeps theirs).
    [target] = [r for r in result.registrations if r.type in (CB, DEPLOYMENT) and r.inputs["metadata"]["name"] == f"warm-{pool}"]
    assert target.inputs["spec"]["replicas"] == 0 and target.ignore_changes == ["spec.replicas"]
    for job in result.of_type("kubernetes:batch/v1:CronJob"):
        validate_manifest(manifest(job))


def test_kueue_never_manages_the_warm_namespace() -> None:
    """Kueue manages Jobs only in the queue namespaces (``managedJobsNamespaceSelector``), and a
    Deployment is not one of its integrations: placeholders never take quota."""
    result = run("aws-training-dev")
    [kueue] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "kueue"]
    configuration = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    [selector] = configuration["managedJobsNamespaceSelector"]["matchExpressions"]
    assert warm.WARM_NAMESPACE not in selector["values"]
    assert "deployment" not in configuration["integrations"]["frameworks"]
    for reg in result.registrations:
        if reg.inputs.get("metadata", {}).get("namespace") == warm.WARM_NAMESPACE:
            assert "kueue.x-k8s.io/queue-name" not in (reg.inputs["metadata"].get("labels") or {})
    assert manager_config(["ml"])["managedJobsNamespaceSelector"]


def test_vendored_capacity_buffer_crds_are_the_recorded_upstream_bytes() -> None:
    import hashlib

    for tag, vendored in crds.CAPACITY_BUFFER_CRDS.items():
        assert vendored.tag == "cluster-autoscaler-" + tag.removeprefix("v")
        assert hashlib.sha256(crds.capacity_buffer_crd_path(tag).read_bytes()).hexdigest() == vendored.sha256
        served = {v["name"]: (v["served"], v["storage"]) for v in crds.capacity_buffer_crd(tag)["spec"]["versions"]}
        assert served["v1beta1"] == (True, True)
    assert set(crds.CAPACITY_BUFFER_CRDS) == set(warm.CAPACITY_BUFFER_AUTOSCALER_TAGS)


# --- the price -------------------------------------------------------------------------------------


def test_cost_output_shows_each_warm_pool_under_its_schedule() -> None:
    """azure-dev t4 (Spot): the catalog's Spot price of its size, 5 days x 11 h = 55 h/week, over the
    catalog's 730-hour month; the synth summary prints it; stacks without warm keep their output."""
    from gpupools.catalog.prices import HOURS_PER_MONTH, price_table
    from gpupools.pricing.estimate import node_price
    from gpupools.synth.summary import cost_lines

    weekdays = {**SCHEDULE, "days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]}
    result = run("azure-dev", {"nodes": 2, "schedule": weekdays})
    values = stack_config("azure-dev")
    pool = values["gpupools:gpuPools"][0]
    spot = node_price(
        price_table(config.Cloud.AZURE), values["azure-native:location"], pool["instanceTypes"], warm_capacity("spot")
    )
    assert spot is not None
    row = result.outputs["cost"]["warm"]["pools"][pool["name"]]
    assert row["capacityType"] == "spot" and row["hoursPerWeek"] == 55.0
    assert row["perHour"] == round(2 * spot, 4)
    assert row["monthly"] == round(2 * spot * 55 * HOURS_PER_MONTH / 168, 2)
    assert any(line.strip().startswith(f"{pool['name']}: 2 node(s) spot") for line in cost_lines(result.outputs["cost"]))
    assert "warm" not in example_run("azure-dev").outputs["cost"]


def warm_capacity(value: str) -> Any:
    from gpupools.conventions import CapacityType

    return CapacityType(value)


def test_the_autoscaler_may_list_resource_quotas_with_buffers() -> None:
    """cluster-autoscaler's buffer client waits for a ResourceQuota informer before its first loop;
    the chart grants no ``resourcequotas``, so the stack adds the read-only rule (the sim hung without it)."""
    from gpupools.aws.autoscaler import CAPACITY_BUFFER_RBAC

    result = run("aws-dev")
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "cluster-autoscaler"]
    assert release.inputs["values"]["rbac"]["additionalRules"] == CAPACITY_BUFFER_RBAC
    assert CAPACITY_BUFFER_RBAC == [{"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["get", "list", "watch"]}]
    plain = example_run("aws-dev")
    [release] = [r for r in plain.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "cluster-autoscaler"]
    assert "additionalRules" not in release.inputs["values"]["rbac"]
