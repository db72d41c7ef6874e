"""``gpupools:queueing``: Kueue on the pools, checked on what the example stacks register with it on.

What is pinned, against sources nobody here wrote:

* every Kueue object is valid against the CRDs of the pinned Kueue release (``tests/crds/kueue``)
  and waits for the Kueue release (CRDs served, webhook ready);
* for every created node group / agent pool (cluster-autoscaler) or NodePool (Karpenter/NAP)
  exactly one ResourceFlavor selects its nodes (its ``nodeLabels`` are labels the cloud puts on
  them, read from the node group's own inputs), and its tolerations tolerate exactly that group's
  taints (the scheduler model of ``tests/k8s_schema.py``);
* the ClusterQueue's flavour order is the priority expander's (the registered ConfigMap's tiers,
  matched against the names cluster-autoscaler sees) or the NodePools' ``spec.weight`` order;
* the quotas equal the registered groups at their registered max sizes times the catalog's node
  sizes, the node count at max equals the synth ceiling's, and teams split exactly that;
* under cluster-autoscaler the ProvisioningRequest admission check is wired (and on EKS the
  autoscaler runs with ProvisioningRequests and gets their CRD); under Karpenter/NAP it is absent;
* the gang job's manifests are valid Kubernetes objects that land on the flavour Kueue assigns.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import pytest
import yaml
from gpupools import config, sharing
from gpupools.azure import kubernetes_access
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.sizes import size_facts
from gpupools.conventions import EFA_RESOURCE, GPU_RESOURCE, Taint, TaintEffect
from gpupools.kubernetes.access_gate import ServedResource
from gpupools.pricing.estimate import groups_of_spec
from gpupools.quantity import amount, canonical
from gpupools.queueing import kueue as kueue_component
from gpupools.queueing.quotas import ceiling_nodes, memory_mib
from gpupools.queueing.workloads import gang_job
from gpupools.testing import Registration, Run, run_stack, stack_config
from gpupools.testing.manifests import to_manifest
from gpupools.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS, KUEUE_CHART, KUEUE_VERSION
from hypothesis import given
from hypothesis import strategies as st

from tests.crd_schema import validate_custom_resource
from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, tolerates, untolerated, validate_manifest
from tests.test_access_gate import gate_checks, gate_of, required_checks

CA_STACKS = ["aws-dev", "azure-dev", "aws-training-dev"]
KARPENTER_STACKS = ["aws-karpenter-dev", "azure-nap-dev"]
ALL = CA_STACKS + KARPENTER_STACKS
ON = {"enabled": True, "namespaces": ["ml", "research"]}
TEAMS = {"enabled": True, "namespaces": ["ml"], "teams": [{"name": "vision", "namespaces": ["vision"], "gpus": 2}]}
KUEUE_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:"
EKS_EFFECTS = {e.eks: e for e in TaintEffect}


@cache
def run(stack: str, teams: bool = False) -> Run:
    return run_stack(stack, overrides={"gpupools:queueing": TEAMS if teams else ON})


def spec(stack: str) -> config.StackSpec:
    raw = {**stack_config(stack), "gpupools:queueing": ON}
    return config.parse(raw, region=raw.get("aws:region") or raw.get("azure-native:location"))


def objects(result: Run, kind: str) -> list[dict[str, Any]]:
    return [to_manifest(r) for r in result.registrations if r.type == KUEUE_TYPE + kind]


def cluster_queue(result: Run, name: str = "gpupools") -> dict[str, Any]:
    [queue] = [q for q in objects(result, "ClusterQueue") if q["metadata"]["name"] == name]
    return queue


def quota_of(flavor: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: r["nominalQuota"] for r in flavor["resources"]}


def parse_aks_taint(text: str) -> Taint:
    key_value, effect = text.rsplit(":", 1)
    key, value = key_value.split("=", 1)
    return Taint(key, value, TaintEffect(effect))


def launch_template_types(result: Run, group: Registration) -> list[str]:
    """The instance type of a node group's launch template (``fakes`` gives each template its ID)."""
    from gpupools.testing import fakes

    template = "aws:ec2/launchTemplate:LaunchTemplate"
    by_id = {fakes.OUTPUTS[template](r.name, r.inputs)["__id"]: r for r in result.of_type(template)}
    return [by_id[group.inputs["launchTemplate"]["id"]].inputs["instanceType"]]


def groups(result: Run, stack: str) -> list[dict[str, Any]]:
    """Every non-system node group (EKS), agent pool (AKS) or NodePool (Karpenter/NAP) as registered:
    name the autoscaler sees, node labels, taints, max size, instance types, pool."""
    found = []
    for reg in result.registrations:
        if reg.type == "aws:eks/nodeGroup:NodeGroup" and reg.inputs["labels"]["gpupools.io/role"] != "system":
            i = reg.inputs
            found.append(
                {
                    "autoscaler_name": f"eks-{i['nodeGroupName']}-0c4e5f6a-1b2c-3d4e-5f6a-7b8c9d0e1f2a",
                    "labels": i["labels"],
                    "taints": [Taint(t["key"], t["value"], EKS_EFFECTS[t["effect"]]) for t in i.get("taints", [])],
                    "max": i["scalingConfig"]["maxSize"],
                    # A Capacity Block group names its type in its launch template only (issue 29).
                    "types": i.get("instanceTypes") or launch_template_types(result, reg),
                }
            )
        elif reg.type == "azure-native:containerservice:AgentPool":
            i = reg.inputs
            found.append(
                {
                    "autoscaler_name": f"aks-{i['agentPoolName']}-12345678-vmss",
                    "labels": i["nodeLabels"],
                    "taints": [parse_aks_taint(t) for t in i.get("nodeTaints", [])],
                    "max": i["maxCount"],
                    "types": [i["vmSize"]],
                }
            )
        elif reg.type == "kubernetes:karpenter.sh/v1:NodePool":
            s = reg.inputs["spec"]
            types = next(
                r["values"] for r in s["template"]["spec"]["requirements"] if r["key"] == "node.kubernetes.io/instance-type"
            )
            found.append(
                {
                    "weight": s["weight"],
                    "labels": s["template"]["metadata"]["labels"],
                    "taints": [
                        Taint(t["key"], t["value"], TaintEffect(t["effect"])) for t in s["template"]["spec"].get("taints", [])
                    ],
                    "max": int(s["limits"]["nodes"]),
                    "limits": s["limits"],
                    "types": types,
                }
            )
    for group in found:
        group["pool"] = group["labels"]["gpupools.io/pool"]
    assert found, stack
    return found


def flavour_of(result: Run, group: dict[str, Any]) -> dict[str, Any]:
    """The one ResourceFlavor whose nodeLabels the group's nodes carry."""
    matching = [
        f
        for f in objects(result, "ResourceFlavor")
        if all(group["labels"].get(k) == v for k, v in f["spec"]["nodeLabels"].items())
    ]
    assert len(matching) == 1, (group["labels"], [f["metadata"]["name"] for f in matching])
    return matching[0]


# --- Kueue itself ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ALL)
def test_kueue_is_the_pinned_chart_on_the_system_pool(stack: str) -> None:
    result = run(stack)
    [release] = [r for r in result.registrations if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "kueue"]
    assert (release.inputs["chart"], release.inputs["version"]) == (KUEUE_CHART, KUEUE_VERSION)
    assert release.inputs["namespace"] == "kueue-system" and release.inputs["createNamespace"] is True
    manager = release.inputs["values"]["controllerManager"]
    assert manager["nodeSelector"] == {"gpupools.io/role": "system"}
    expected = [{"effect": "NoSchedule", "key": "CriticalAddonsOnly", "operator": "Equal", "value": "true"}]
    assert manager["tolerations"] == (expected if stack.startswith("azure") else [])
    assert manager["manager"]["priorityClassName"] == "system-cluster-critical"
    # Kueue's webhooks (failurePolicy Fail) act in the queues' namespaces only, and not on every Pod.
    configuration = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert configuration["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and configuration["kind"] == "Configuration"
    [selector] = configuration["managedJobsNamespaceSelector"]["matchExpressions"]
    assert selector == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(ON["namespaces"])}
    frameworks = configuration["integrations"]["frameworks"]
    assert "batch/job" in frameworks and not {"pod", "deployment", "statefulset"} & set(frameworks)


@pytest.mark.parametrize("stack", ALL)
def test_every_kueue_object_is_valid_and_waits_for_the_release(stack: str) -> None:
    for teams in (False, True):
        result = run(stack, teams)
        [release] = [r for r in result.registrations if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "kueue"]
        kueue_objects = [r for r in result.registrations if r.type.startswith(KUEUE_TYPE)]
        assert len(kueue_objects) >= 4
        for reg in kueue_objects:
            assert validate_custom_resource(to_manifest(reg)) == [], reg.name
            assert release.urn in reg.dependencies, f"{reg.name} does not wait for the Kueue release"
        for reg in result.registrations:
            if reg.type == "kubernetes:core/v1:Namespace":
                validate_manifest(to_manifest(reg))


# --- flavours --------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ALL)
def test_one_flavour_selects_each_group_and_tolerates_exactly_its_taints(stack: str) -> None:
    result = run(stack)
    used = set()
    for group in groups(result, stack):
        flavour = flavour_of(result, group)
        used.add(flavour["metadata"]["name"])
        tolerations = flavour["spec"]["tolerations"]
        assert untolerated(tolerations, group["taints"]) == [], flavour["metadata"]["name"]
        for toleration in tolerations:
            assert toleration["operator"] == "Equal"
            assert any(tolerates(toleration, taint) for taint in group["taints"]), ("extra toleration", toleration)
    # No flavour without nodes, and under cluster-autoscaler one per pool and capacity type.
    assert used == {f["metadata"]["name"] for f in objects(result, "ResourceFlavor")}
    if stack in CA_STACKS:
        pairs = {(g["pool"], g["labels"]["gpupools.io/capacity-type"]) for g in groups(result, stack)}
        assert len(used) == len(pairs)


@pytest.mark.parametrize("stack", CA_STACKS)
def test_flavour_order_is_the_priority_expanders_order(stack: str) -> None:
    result = run(stack)
    [config_map] = [
        r for r in result.registrations if r.type == "kubernetes:core/v1:ConfigMap" and r.name.startswith("priority-expander")
    ]
    tiers = yaml.safe_load(config_map.inputs["data"]["priorities"])
    import re

    def priority(name: str) -> int:
        [tier] = [t for t, regexes in tiers.items() if any(re.search(rx, name) for rx in regexes)]
        return int(tier)

    rank: dict[str, int] = {}
    for group in groups(result, stack):
        name = flavour_of(result, group)["metadata"]["name"]
        rank[name] = max(rank.get(name, 0), priority(group["autoscaler_name"]))
    order = [f["name"] for f in cluster_queue(result)["spec"]["resourceGroups"][0]["flavors"]]
    assert [rank[n] for n in order] == sorted((rank[n] for n in order), reverse=True)
    # Within a pool, Spot before on-demand, and reserved before both.
    for pool in {g["pool"] for g in groups(result, stack)}:
        mine = [n.removeprefix(pool + "-") for n in order if n.startswith(pool + "-")]
        assert mine == sorted(mine, key=["reserved", "spot", "on-demand"].index)


@pytest.mark.parametrize("stack", KARPENTER_STACKS)
def test_flavour_order_is_the_nodepool_weights_order(stack: str) -> None:
    result = run(stack)
    weight = {flavour_of(result, g)["metadata"]["name"]: g["weight"] for g in groups(result, stack)}
    order = [f["name"] for f in cluster_queue(result)["spec"]["resourceGroups"][0]["flavors"]]
    assert [weight[n] for n in order] == sorted(weight.values(), reverse=True)


# --- quotas ----------------------------------------------------------------------------------------


EFA_NODE_HUGEPAGES_MIB = 5128 * 2
"""The EKS user guide (``ml/node-efa.adoc``): EFA instances "pre-allocate 5128 2MiB Huge Pages"."""


def has_efa(stack: str) -> bool:
    return any(p.efa for p in spec(stack).pools)


def expected_quota(stack: str, members: list[dict[str, Any]]) -> dict[str, str]:
    pools = {p.name: p for p in spec(stack).pools}
    cpu = memory = gpus = efa = hugepages = 0
    for g in members:
        pool = pools[g["pool"]]
        vcpus = min(size_facts(t)[1] for t in g["types"])  # type: ignore[index]
        mib = min(memory_mib(t) for t in g["types"])  # type: ignore[type-var]
        slots = size_facts(g["types"][0])[0] * sharing.slots_per_gpu(pool.sharing) if pool.is_gpu else 0  # type: ignore[index]
        cpu, memory, gpus = cpu + g["max"] * vcpus, memory + g["max"] * mib, gpus + g["max"] * slots
        if pool.efa:  # the catalog's EFA interfaces of the pool's type, and the driver's huge pages
            efa += g["max"] * INSTANCE_TYPES[g["types"][0]].efa_interfaces
            hugepages += g["max"] * EFA_NODE_HUGEPAGES_MIB
    # In the form the API server returns (Kueue's controller rewrites any other, issue 39).
    quota = {"cpu": canonical(str(cpu)), "memory": canonical(f"{memory}Mi"), GPU_RESOURCE: canonical(str(gpus))}
    if has_efa(stack):
        quota |= {EFA_RESOURCE: canonical(str(efa)), "hugepages-2Mi": canonical(f"{hugepages}Mi")}
    return quota


@pytest.mark.parametrize("stack", ALL)
def test_quotas_are_the_groups_at_their_registered_max(stack: str) -> None:
    result = run(stack)
    by_flavour: dict[str, list[dict[str, Any]]] = {}
    for group in groups(result, stack):
        by_flavour.setdefault(flavour_of(result, group)["metadata"]["name"], []).append(group)
    [group_spec] = cluster_queue(result)["spec"]["resourceGroups"]
    # EFA stacks also cover what an EFA job requests: Kueue admits nothing that requests a resource
    # its ClusterQueue does not cover (issue 48, 1.: "resource vpc.amazonaws.com/efa unavailable").
    efa = [EFA_RESOURCE, "hugepages-2Mi"] if has_efa(stack) else []
    assert group_spec["coveredResources"] == ["cpu", "memory", GPU_RESOURCE, *efa]
    for flavor in group_spec["flavors"]:
        assert quota_of(flavor) == expected_quota(stack, by_flavour[flavor["name"]]), flavor["name"]
        for g in by_flavour[flavor["name"]]:
            if "limits" in g:  # a NodePool's own limits bound the same quota
                assert quota_of(flavor).get(GPU_RESOURCE, "0") == g["limits"].get(GPU_RESOURCE, "0")
                assert amount(quota_of(flavor)["cpu"]) <= amount(g["limits"]["cpu"])
    # The queue's ceiling is the synth's: every group at max, counted as the fleet ceiling counts them.
    assert sum(g["max"] for g in groups(result, stack)) == ceiling_nodes(groups_of_spec(spec(stack)))


@pytest.mark.parametrize("stack", ["aws-dev", "aws-training-dev", "aws-karpenter-dev"])
def test_teams_split_exactly_the_pools_capacity(stack: str) -> None:
    whole = {f["name"]: quota_of(f) for f in cluster_queue(run(stack))["spec"]["resourceGroups"][0]["flavors"]}
    split = run(stack, teams=True)
    [cohort] = objects(split, "Cohort")
    holders = [cohort, *objects(split, "ClusterQueue")]
    for name, quota in whole.items():
        for resource, value in quota.items():
            parts = [
                quota_of(next(f for f in h["spec"]["resourceGroups"][0]["flavors"] if f["name"] == name))[resource]
                for h in holders
            ]
            assert sum(amount(p) for p in parts) == amount(value), (name, resource)
    vision = cluster_queue(split, "vision")
    assert vision["spec"]["cohortName"] == "gpupools" and cluster_queue(split)["spec"]["cohortName"] == "gpupools"
    gpus = sum(amount(quota_of(f)[GPU_RESOURCE]) for f in vision["spec"]["resourceGroups"][0]["flavors"])
    assert gpus == 2
    local = {(q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"] for q in objects(split, "LocalQueue")}
    assert local == {("ml", "gpupools"): "gpupools", ("vision", "vision"): "vision"}


# --- all-or-nothing scale-up -----------------------------------------------------------------------


@pytest.mark.parametrize("stack", CA_STACKS)
def test_cluster_autoscaler_stacks_wire_the_provisioning_request_check(stack: str) -> None:
    result = run(stack)
    [prc] = objects(result, "ProvisioningRequestConfig")
    [check] = objects(result, "AdmissionCheck")
    assert prc["spec"]["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["spec"]["parameters"]["name"] == prc["metadata"]["name"]
    queue = cluster_queue(result)
    [rule] = queue["spec"]["admissionChecksStrategy"]["admissionChecks"]
    gpu_flavours = [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"] if quota_of(f)[GPU_RESOURCE] != "0"]
    assert rule == {"name": check["metadata"]["name"], "onFlavors": gpu_flavours}
    if stack.startswith("aws"):
        [autoscaler] = [
            r for r in result.registrations if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "cluster-autoscaler"
        ]
        args = autoscaler.inputs["values"]["extraArgs"]
        assert args["enable-provisioning-requests"] is True and args["kube-api-content-type"] == "application/json"
        from gpupools.kubernetes.crds import provisioning_request_crd

        [crd] = [r for r in result.registrations if r.type == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"]
        tag = CLUSTER_AUTOSCALER_IMAGE_TAGS[spec(stack).cluster.kubernetes_version]
        assert crd.inputs["spec"] == provisioning_request_crd(tag)["spec"]  # vendored at the image's tag
        assert crd.urn in autoscaler.dependencies  # the autoscaler starts with the API served
        [kueue] = [r for r in result.registrations if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "kueue"]
        # And so does Kueue (a dependency on the autoscaler component is one on each of its children).
        assert crd.urn in kueue.dependencies and autoscaler.urn in kueue.dependencies


@pytest.mark.parametrize("stack", KARPENTER_STACKS)
def test_karpenter_stacks_have_no_provisioning_request(stack: str) -> None:
    result = run(stack)
    assert objects(result, "ProvisioningRequestConfig") == [] and objects(result, "AdmissionCheck") == []
    assert "admissionChecksStrategy" not in cluster_queue(result)["spec"]
    assert [r for r in result.registrations if r.type == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"] == []


def test_without_queueing_nothing_changes_and_atomic_off_drops_the_check() -> None:
    plain = example_run("aws-dev")
    assert not [r for r in plain.registrations if "kueue" in r.type or r.name == "kueue"]
    [autoscaler] = [r for r in plain.registrations if r.type == "kubernetes:helm.sh/v3:Release"]
    assert "enable-provisioning-requests" not in autoscaler.inputs["values"]["extraArgs"]
    off = run_stack("aws-dev", overrides={"gpupools:queueing": {**ON, "atomicScaleUp": False}})
    assert objects(off, "AdmissionCheck") == [] and "admissionChecksStrategy" not in cluster_queue(off)["spec"]
    assert [r for r in off.registrations if r.type == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"] == []


# --- AKS access gate -------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["azure-dev", "azure-nap-dev"])
def test_the_aks_gate_checks_every_kueue_object(stack: str) -> None:
    result = run(stack, teams=True)
    required_permissions, required_served = required_checks(result)
    permissions, served = gate_checks(gate_of(result))
    # LocalQueues go into namespaces from config: the gate checks them cluster-wide, which covers each.
    covered = permissions | {
        dataclasses.replace(p, namespace=n.namespace) for p in permissions if p.namespace == "" for n in required_permissions
    }
    assert required_permissions <= covered, sorted(map(str, required_permissions - covered))
    assert required_served <= served | {k.served() for k in kueue_component.KINDS}
    assert set(kubernetes_access.gate_permissions(stack == "azure-nap-dev", True)) == permissions
    for reg in result.registrations:
        if reg.type.startswith(KUEUE_TYPE) or reg.type == "kubernetes:core/v1:Namespace":
            owner = result.by_urn(reg.parent)
            assert owner.type == kueue_component.QUEUES_TYPE


# --- the gang job ----------------------------------------------------------------------------------


def four_node_job(**changes: Any) -> list[dict[str, Any]]:
    args: dict[str, Any] = {
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "script": ["train.py", "--epochs", "3"],
        "nodes": 4,
        "gpus_per_node": 4,
        "queue": "gpupools",
        "namespace": "ml",
        **changes,
    }
    return gang_job("resnet", **args)


def test_gang_job_is_valid_and_gangs_all_its_nodes() -> None:
    service, job = four_node_job()
    validate_manifest(service)
    validate_manifest(job)
    spec_ = job["spec"]
    assert spec_["parallelism"] == spec_["completions"] == 4 and spec_["completionMode"] == "Indexed"
    assert spec_["suspend"] is True and job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "gpupools"}
    pod = spec_["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"batch.kubernetes.io/job-name": job["metadata"]["name"]}
    command = pod["containers"][0]["command"]
    assert "--nnodes=4" in command and "--nproc-per-node=4" in command and "--master-addr=resnet-0.resnet" in command
    assert pod["containers"][0]["resources"]["limits"] == {GPU_RESOURCE: "4"}


@pytest.mark.parametrize("stack", ["aws-dev", "azure-dev"])
def test_an_admitted_gang_job_lands_on_its_flavours_nodes(stack: str) -> None:
    """What Kueue does on admission (the flavour's nodeLabels into the pod's node selector, its
    tolerations appended), then the scheduler model: the pod fits the flavour's groups only."""
    result = run(stack)
    _, job = four_node_job()
    pod = job["spec"]["template"]["spec"]
    for group in groups(result, stack):
        flavour = flavour_of(result, group)
        if flavour["spec"]["nodeLabels"].get("gpupools.io/pool") not in {p.name for p in spec(stack).gpu_pools}:
            continue
        admitted = {
            **pod,
            "nodeSelector": flavour["spec"]["nodeLabels"],
            "tolerations": [*pod["tolerations"], *flavour["spec"]["tolerations"]],
        }
        assert untolerated(admitted["tolerations"], group["taints"]) == []
        assert affinity_matches(admitted["affinity"], group["labels"])
        assert all(group["labels"].get(k) == v for k, v in admitted["nodeSelector"].items())
        for other in groups(result, stack):
            if (
                other["pool"] != group["pool"]
                or other["labels"]["gpupools.io/capacity-type"] != group["labels"]["gpupools.io/capacity-type"]
            ):
                assert not all(other["labels"].get(k) == v for k, v in admitted["nodeSelector"].items())


def test_gang_job_takes_the_configs_taint_form_and_names_a_bad_one() -> None:
    """The mapping a ``gpuPools[].taints`` entry is (issue 39), tolerated like a ``Taint``."""
    from gpupools.conventions import Taint, TaintEffect
    from gpupools.errors import ConfigError

    _, job = four_node_job(extra_taints=[{"key": "dedicated", "value": "training", "effect": "NoSchedule"}])
    tolerations = job["spec"]["template"]["spec"]["tolerations"]
    assert untolerated(tolerations, [Taint("dedicated", "training", TaintEffect.NO_SCHEDULE)]) == []
    with pytest.raises(ConfigError, match=r"gang_job\.extra_taints\[0\]\.effect: must be one of"):
        four_node_job(extra_taints=[{"key": "dedicated", "value": "training", "effect": "Sometimes"}])


def test_gang_job_refuses_a_one_node_gang_and_a_long_name() -> None:
    from gpupools.errors import ConfigError

    with pytest.raises(ConfigError, match=r"gang_job\.nodes"):
        four_node_job(nodes=1)
    with pytest.raises(ConfigError, match=r"gang_job\.name"):
        gang_job("x" * 51, image="i", script=["t.py"], nodes=2, gpus_per_node=1)


def test_eks_autoscaler_flags_for_provisioning_requests_render_as_the_faq_asks() -> None:
    """cluster-autoscaler FAQ, "Enabling ProvisioningRequest Support": the two flags, as the pinned
    chart renders ``extraArgs`` (``rendered_flags``); nothing of it without queueing."""
    from gpupools.aws.autoscaler import extra_args, rendered_flags
    from gpupools.specs import AutoscalerSpec

    on = rendered_flags({"extraArgs": extra_args(AutoscalerSpec(), provisioning_requests=True)})
    off = rendered_flags({"extraArgs": extra_args(AutoscalerSpec())})
    assert set(on) - set(off) == {"--enable-provisioning-requests=true", "--kube-api-content-type=application/json"}


# --- the teams' split, as a property ----------------------------------------------------------------


@st.composite
def flavours_and_teams(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    from gpupools.conventions import Role
    from gpupools.queueing.flavors import Flavour
    from gpupools.queueing.quotas import Quota
    from gpupools.specs import TeamQueueSpec

    count = draw(st.integers(1, 5))
    flavours = []
    for index in range(count):
        gpus = draw(st.integers(0, 64))
        flavours.append(
            Flavour(
                name=f"p{index}-spot",
                pool=f"p{index}",
                role=Role.GPU if gpus else Role.CPU,
                capacity=None,
                quota=Quota(cpu=draw(st.integers(1, 2000)), memory_mib=draw(st.integers(1, 10**7)), gpus=gpus),
            )
        )
    capacity = sum(f.quota.gpus for f in flavours)
    teams = []
    for index in range(draw(st.integers(0, 4))):
        wanted = draw(st.integers(0, capacity))
        capacity -= wanted
        teams.append(TeamQueueSpec(name=f"t{index}", namespaces=(f"t{index}",), gpus=wanted))
    return flavours, teams


@given(flavours_and_teams())
def test_teams_and_cohort_always_add_up_to_the_flavours(case: tuple[list[Any], list[Any]]) -> None:
    from gpupools.queueing.queues import cohort_quotas, team_quotas

    flavours, teams = case
    held = team_quotas(flavours, teams)
    rest = cohort_quotas(flavours, held)
    for team in teams:
        assert sum(q.gpus for q in held[team.name].values()) == team.gpus  # every guarantee is met in full
    for flavour in flavours:
        parts = [held[t.name][flavour.name] for t in teams] + [rest[flavour.name]]
        for field_ in ("cpu", "memory_mib", "gpus"):
            assert all(getattr(p, field_) >= 0 for p in parts)
            assert sum(getattr(p, field_) for p in parts) == getattr(flavour.quota, field_)


# --- issue 28: Kueue that cannot stall silently, namespaces that are not lost ------------------------

PROVISIONING_REQUESTS = {"group": "autoscaling.x-k8s.io", "version": "v1", "resource": "provisioningrequests"}


def test_with_atomic_scale_up_the_aks_gate_waits_for_the_provisioning_request_api() -> None:
    """Review M7: Kueue sets its ProvisioningRequest controller up only if the API is served when it
    starts, else the AdmissionCheck stays inactive and every ClusterQueue naming it admits nothing.
    The gate every Kubernetes object waits for (Kueue's release included) now waits for that API."""
    _, served = gate_checks(gate_of(run("azure-dev")))
    assert ServedResource(**PROVISIONING_REQUESTS) in served
    off = run_stack("azure-dev", overrides={"gpupools:queueing": {**ON, "atomicScaleUp": False}})
    _, served_off = gate_checks(gate_of(off))
    assert not any(s.resource == "provisioningrequests" for s in served_off)
    # The release waits for the gate (through the provider) and every queue object for the release.
    result = run("azure-dev")
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == kueue_component.RELEASE_NAME]
    for reg in result.registrations:
        if reg.type.startswith(KUEUE_TYPE):
            assert release.urn in reg.dependencies, reg.name


@pytest.mark.parametrize("stack", ALL)
def test_queue_namespaces_are_retained_and_kueue_objects_go_before_the_release(stack: str) -> None:
    """Review M8: the queue Namespaces were owned by the stack, so removing one from config (or
    ``destroy``) deleted every workload in it, racing the Kueue uninstall. They are now
    ``retainOnDelete``; the Kueue objects depend on the release, so a destroy deletes them first."""
    result = run(stack, teams=True)
    namespaces = result.of_type("kubernetes:core/v1:Namespace")
    queue_namespaces = [n for n in namespaces if n.inputs["metadata"]["name"] in ("ml", "vision")]
    assert len(queue_namespaces) == 2
    for namespace in queue_namespaces:
        assert namespace.options.get("retainOnDelete") is True, namespace.name
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == kueue_component.RELEASE_NAME]
    kueue_objects = [r for r in result.registrations if r.type.startswith(KUEUE_TYPE)]
    assert kueue_objects and all(release.urn in r.dependencies for r in kueue_objects)


def test_an_efa_gang_job_requests_only_what_the_queue_covers_and_fits_its_efa_flavour() -> None:
    """Issue 48, 1.: the second new user's EFA training Job was never admitted ("resource
    vpc.amazonaws.com/efa unavailable in ClusterQueue": Kueue's flavour assigner refuses a pod set
    requesting a resource no resource group covers). A two-node gang on the training stack's EFA
    pool, requesting what the EKS user guide's NCCL example requests per pod: every resource is
    covered, and one flavour of that pool holds both pods."""
    stack = "aws-training-dev"
    [pool] = [p for p in spec(stack).gpu_pools if p.efa and not p.reservations] or [p for p in spec(stack).gpu_pools if p.efa]
    node = INSTANCE_TYPES[pool.instance_types[0]]
    _, job = gang_job(
        "nccl",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        script=["all_reduce.py"],
        nodes=2,
        gpus_per_node=node.gpus,
        pool=pool.name,
        efa_per_node=node.efa_interfaces,
    )
    validate_manifest(job)
    requests = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert requests[EFA_RESOURCE] == str(node.efa_interfaces) and requests["hugepages-2Mi"] == "5120Mi"
    [group_spec] = cluster_queue(run(stack))["spec"]["resourceGroups"]
    assert set(requests) <= set(group_spec["coveredResources"])
    fits = [
        flavor["name"]
        for flavor in group_spec["flavors"]
        if flavor["name"].startswith(f"{pool.name}-")
        and all(amount(quota_of(flavor)[r]) >= 2 * amount(v) for r, v in requests.items())
    ]
    assert fits, [quota_of(f) for f in group_spec["flavors"]]
