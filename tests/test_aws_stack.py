"""The ``aws-dev`` stack on the recording mock runtime: what ``pulumi up`` would register, the
pitfalls of ``eks.md`` §6 (one test each, named after the pitfall), and invalid configs that must
fail with one clear error and register nothing.

Expectations are derived from ``Pulumi.aws-dev.yaml`` read independently (pools, zones, sizes), not
from the code under test.
"""

from __future__ import annotations

import functools
import re
import runpy
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from gpupools.conventions import GPU_PRESENT_LABEL, GPU_TAINT, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.kubernetes.priority_expander import CONFIG_MAP_NAME
from gpupools.testing import PROJECT_ROOT, Registration, Run, fakes, run_program, run_stack, stack_config
from gpupools.testing.manifests import to_manifest
from gpupools.versions import EKS_CORE_ADDONS

from tests.example_runs import example_run
from tests.k8s_schema import affinity_matches, untolerated, validate_manifest

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
CONFIG = stack_config("aws-dev")
ZONES = CONFIG["gpupools:cluster"]["zones"]
POOLS = {p["name"]: p for p in CONFIG["gpupools:gpuPools"]}
CPU_POOLS = {p["name"]: p for p in CONFIG.get("gpupools:cpuPools", [])}
K8S_VERSION = CONFIG["gpupools:cluster"]["kubernetesVersion"]


@functools.cache
def aws_dev() -> Run:
    return example_run("aws-dev")


@functools.cache
def variant(name: str) -> Run:
    pools = CONFIG["gpupools:gpuPools"]
    overrides = {
        # Bottlerocket runs its own device plugin, so gpupools' sharing is not available there.
        "bottlerocket": {
            "gpupools:gpuPools": [
                {**{k: v for k, v in p.items() if k != "sharing"}, "amiType": "BOTTLEROCKET_x86_64_NVIDIA"} for p in pools
            ]
        },
        "mixed-ami": {"gpupools:gpuPools": [pools[0], {**pools[1], "amiType": "BOTTLEROCKET_x86_64_NVIDIA"}]},
        "smoke-test": {"gpupools:smokeTest": {"enabled": True}},
    }[name]
    return run_stack("aws-dev", overrides=overrides)


def gpu_groups(run: Run) -> list[Registration]:
    return [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"]["gpupools.io/role"] == "gpu"]


def asg_of(group: Registration) -> str:
    return str(fakes.OUTPUTS[NODE_GROUP](group.name, group.inputs)["resources"][0]["autoscalingGroups"][0]["name"])


def tags_on(run: Run, asg: str) -> dict[str, str]:
    return {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in run.of_type(ASG_TAG) if t.inputs["autoscalingGroupName"] == asg
    }


def zone_of(run: Run, group: Registration) -> str:
    subnets = {fakes.OUTPUTS["aws:ec2/subnet:Subnet"](s.name, s.inputs)["__id"]: s for s in run.of_type("aws:ec2/subnet:Subnet")}
    [subnet] = group.inputs["subnetIds"]
    return str(subnets[subnet].inputs["availabilityZone"])


def manifests(run: Run) -> list[dict[str, Any]]:
    return [to_manifest(r) for r in run.kubernetes_objects()]


def priorities(run: Run) -> dict[int, list[str]]:
    [config_map] = [m for m in manifests(run) if m["kind"] == "ConfigMap" and m["metadata"]["name"] == CONFIG_MAP_NAME]
    return {int(k): v for k, v in yaml.safe_load(config_map["data"]["priorities"]).items()}


def tier_of(run: Run, asg: str) -> int:
    """The priority cluster-autoscaler would give an ASG: the highest tier with a matching regex."""
    tiers = [p for p, regexes in priorities(run).items() if any(re.search(r, asg) for r in regexes)]
    assert tiers, f"{asg} matches no tier"
    return max(tiers)


def daemon_set(run: Run) -> dict[str, Any]:
    [manifest] = [m for m in manifests(run) if m["kind"] == "DaemonSet" and m["metadata"]["name"] == "nvidia-device-plugin"]
    return manifest


def release_values(run: Run) -> dict[str, Any]:
    [release] = run.of_type("kubernetes:helm.sh/v3:Release")
    return dict(release.inputs["values"])


# --- what the stack registers ----------------------------------------------------------------------


def test_registers_one_control_plane_and_an_on_demand_system_group():
    run = aws_dev()
    [control_plane] = run.of_type("eks:index:Cluster")
    assert control_plane.inputs["name"] == CONFIG["gpupools:cluster"]["name"]
    assert control_plane.inputs["version"] == K8S_VERSION
    [system] = [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"]["gpupools.io/role"] == "system"]
    assert system.inputs["capacityType"] == "ON_DEMAND"
    assert system.inputs["instanceTypes"] == CONFIG["gpupools:systemPool"]["instanceTypes"]
    assert system.inputs["scalingConfig"]["minSize"] == CONFIG["gpupools:systemPool"]["minSize"]


def test_per_pool_and_zone_a_spot_and_an_on_demand_group():
    run = aws_dev()
    found = sorted((g.inputs["labels"]["gpupools.io/pool"], zone_of(run, g), g.inputs["capacityType"]) for g in gpu_groups(run))
    assert found == sorted((pool, zone, capacity) for pool in POOLS for zone in ZONES for capacity in ("SPOT", "ON_DEMAND"))


def test_group_sizes_are_the_pool_totals_split_over_zones():
    run = aws_dev()
    for name, pool in POOLS.items():
        groups = [g for g in gpu_groups(run) if g.inputs["labels"]["gpupools.io/pool"] == name]
        spot = sum(g.inputs["scalingConfig"]["maxSize"] for g in groups if g.inputs["capacityType"] == "SPOT")
        od = sum(g.inputs["scalingConfig"]["maxSize"] for g in groups if g.inputs["capacityType"] == "ON_DEMAND")
        assert spot == pool["maxSize"]
        assert od == pool.get("onDemandMaxSize", pool["maxSize"])
        assert all(g.inputs["instanceTypes"] == pool["instanceTypes"] for g in groups)


def test_every_gpu_group_starts_at_zero_with_desired_size_ignored():
    for group in aws_dev().of_type(NODE_GROUP):
        assert "scalingConfig.desiredSize" in group.ignore_changes
        scaling = group.inputs["scalingConfig"]
        assert scaling["desiredSize"] == scaling["minSize"]
        if group.inputs["labels"]["gpupools.io/role"] == "gpu":
            assert scaling["minSize"] == 0 == scaling["desiredSize"]


def test_node_groups_wait_for_the_access_entry_and_the_autoscaler_for_the_system_group():
    run = aws_dev()
    [entry] = run.of_type("aws:eks/accessEntry:AccessEntry")
    assert all(entry.urn in g.dependencies for g in run.of_type(NODE_GROUP))
    [release] = run.of_type("kubernetes:helm.sh/v3:Release")
    [system] = [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"]["gpupools.io/role"] == "system"]
    assert system.urn in release.dependencies


def test_node_groups_depend_on_every_node_role_policy_attachment():
    """``pulumi destroy`` must delete the groups before the node role loses its policies
    (terraform-provider-aws ``aws_eks_node_group`` docs; components/gpupools/aws/iam.py ``NodeRole``)."""
    run = aws_dev()
    attachments = [
        a for a in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if a.inputs["role"].endswith("-node-role")
    ]
    assert sorted(a.inputs["policyArn"].rsplit("/", 1)[1] for a in attachments) == sorted(
        [
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonEC2ContainerRegistryReadOnly",
            "AmazonSSMManagedInstanceCore",
        ]
    )
    for group in run.of_type(NODE_GROUP):
        assert {a.urn for a in attachments} <= set(group.dependencies), group.name


def test_coredns_is_a_managed_addon_at_the_pinned_version_after_the_system_group():
    """pulumi-eks creates no CoreDNS add-on without its default node group (``cluster.ts``); the
    stack manages it, at the version pinned for the cluster's minor (issue 29, M6: not EKS's moving
    default, which needed a ``getAddonVersion`` lookup at every preview), once nodes exist."""
    run = aws_dev()
    [addon] = [a for a in run.of_type("aws:eks/addon:Addon") if a.inputs["addonName"] == "coredns"]
    assert addon.inputs["clusterName"] == CONFIG["gpupools:cluster"]["name"]
    assert [token for token, _ in run.invokes if token == "aws:eks/getAddonVersion:getAddonVersion"] == []
    assert addon.inputs["addonVersion"] == EKS_CORE_ADDONS[K8S_VERSION].coredns
    assert addon.inputs["resolveConflictsOnCreate"] == "OVERWRITE"
    [system] = [g for g in run.of_type(NODE_GROUP) if g.inputs["labels"]["gpupools.io/role"] == "system"]
    assert system.urn in addon.dependencies


def test_autoscaler_balances_the_zones_of_a_pool_and_never_spot_with_on_demand():
    """cluster-autoscaler with ``--balancing-label`` calls two groups similar exactly when every
    balancing label is present on both templates with equal values (kubernetes/autoscaler
    ``processors/nodegroupset/label_nodegroups.go``, ``areLabelsSame``). Empty groups' templates
    carry the ASG's ``node-template/label`` tags; every other label, such as the per-group
    ``nodegroup-name`` from the ``eks:nodegroup-name`` tag, no longer matters."""
    run = aws_dev()
    flags = [f for f in release_values(run)["extraArgs"]]
    balancing = [release_values(run)["extraArgs"][f] for f in flags if f.split("_", 1)[0] == "balancing-label"]
    assert balancing
    prefix = "k8s.io/cluster-autoscaler/node-template/label/"

    def template_labels(group: Registration) -> dict[str, str]:
        return {k[len(prefix) :]: v for k, v in tags_on(run, asg_of(group)).items() if k.startswith(prefix)}

    def similar(a: Registration, b: Registration) -> bool:
        la, lb = template_labels(a), template_labels(b)
        return all(key in la and key in lb and la[key] == lb[key] for key in balancing)

    groups = gpu_groups(run)
    for a in groups:
        for b in groups:
            same = (a.inputs["labels"]["gpupools.io/pool"], a.inputs["capacityType"]) == (
                b.inputs["labels"]["gpupools.io/pool"],
                b.inputs["capacityType"],
            )
            assert similar(a, b) == same, (a.name, b.name)
    # every pool's Spot groups form one balanced set across all its zones
    for name in POOLS:
        spot = [g for g in groups if g.inputs["labels"]["gpupools.io/pool"] == name and g.inputs["capacityType"] == "SPOT"]
        assert sorted(zone_of(run, g) for g in spot) == sorted(ZONES)


def test_kubernetes_objects_use_the_explicit_provider():
    run = aws_dev()
    [provider] = run.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["clusterIdentifier"]
    kubernetes = [r for r in run.registrations if r.type.startswith("kubernetes:") and r.custom]
    assert kubernetes
    assert all(r.provider.startswith(provider.urn + "::") for r in kubernetes)


def test_every_kubernetes_object_is_valid_at_the_clusters_version():
    found = manifests(aws_dev()) + manifests(variant("smoke-test"))
    assert {m["kind"] for m in found} >= {"ConfigMap", "DaemonSet", "ServiceAccount", "Job"}
    for manifest in found:
        validate_manifest(manifest, K8S_VERSION)


def test_outputs():
    run = aws_dev()
    assert run.outputs["clusterName"] == CONFIG["gpupools:cluster"]["name"]
    assert run.secret_outputs == ["kubeconfig"]
    pools = run.outputs["nodePools"]
    assert len(pools) == 1 + (len(POOLS) + len(CPU_POOLS)) * len(ZONES) * 2
    assert {(p["pool"], p["capacityType"]) for p in pools} == {("system", "on-demand")} | {
        (name, capacity) for name in [*POOLS, *CPU_POOLS] for capacity in ("spot", "on-demand")
    }
    names = {g.inputs["nodeGroupName"] for g in aws_dev().of_type(NODE_GROUP)}
    assert {p["name"] for p in pools} == names


def test_autoscaler_release_and_its_irsa_role():
    run = aws_dev()
    values = release_values(run)
    assert values["autoDiscovery"]["clusterName"] == CONFIG["gpupools:cluster"]["name"]
    assert values["awsRegion"] == CONFIG["aws:region"]
    assert values["image"]["tag"].startswith(f"v{K8S_VERSION}.")
    assert values["extraArgs"]["max-node-provision-time"] == CONFIG["gpupools:autoscaler"]["maxNodeProvisionTime"]
    roles = {f"arn:aws:iam::{fakes.ACCOUNT}:role/{r.name}": r for r in run.of_type("aws:iam/role:Role")}
    role = roles[values["rbac"]["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"]]
    assert "sts:AssumeRoleWithWebIdentity" in role.inputs["assumeRolePolicy"]
    # The same role in the pod template, so a new role rolls the pod (review T1; the rendered chart:
    # tests/test_sim_charts.py::test_a_new_controller_role_rolls_the_controllers_pods).
    assert values["podAnnotations"] == {"gpupools.io/role-arn": f"arn:aws:iam::{fakes.ACCOUNT}:role/{role.name}"}


def test_priority_expander_ranks_spot_above_on_demand_above_system():
    run = aws_dev()
    tiers: dict[str, list[int]] = {"SPOT": [], "ON_DEMAND": [], "system": []}
    for group in run.of_type(NODE_GROUP):
        kind = "system" if group.inputs["labels"]["gpupools.io/role"] == "system" else group.inputs["capacityType"]
        tiers[kind].append(tier_of(run, asg_of(group)))
    assert all(tiers.values())
    assert min(tiers["SPOT"]) > max(tiers["ON_DEMAND"]) > max(tiers["system"])


def test_device_plugin_tolerates_every_gpu_taint_and_lands_on_every_gpu_node():
    run = aws_dev()
    spec = daemon_set(run)["spec"]["template"]["spec"]
    for group in gpu_groups(run):
        taints = [Taint(t["key"], t["value"], TaintEffect[t["effect"]]) for t in group.inputs["taints"]]
        assert untolerated(spec["tolerations"], taints) == [], group.name
        labels = dict(group.inputs["labels"])
        assert affinity_matches(spec["affinity"], labels), group.name


def test_all_bottlerocket_stack_deploys_no_device_plugin():
    run = variant("bottlerocket")
    assert not run.of_type("gpupools:index:NvidiaDevicePlugin")
    assert not [m for m in manifests(run) if m["kind"] == "DaemonSet"]  # nor a DCGM exporter: Bottlerocket hides the GPUs from it
    assert run.of_type("gpupools:index:PriorityExpander")


def test_device_plugin_skips_bottlerocket_pools_in_a_mixed_stack():
    run = variant("mixed-ami")
    affinity = daemon_set(run)["spec"]["template"]["spec"]["affinity"]
    # The affinity names no pool (issue 28): the Bottlerocket groups carry gpupools.io/device-plugin=external.
    pools = {
        dict(g.inputs["labels"])["gpupools.io/pool"]
        for g in gpu_groups(run)
        if affinity_matches(affinity, dict(g.inputs["labels"]))
    }
    bottlerocket = CONFIG["gpupools:gpuPools"][1]["name"]
    assert bottlerocket not in pools and CONFIG["gpupools:gpuPools"][0]["name"] in pools


def test_smoke_test_runs_one_job_per_pool_on_a_spot_group():
    run = variant("smoke-test")
    jobs = [m for m in manifests(run) if m["kind"] == "Job"]
    assert len(jobs) == len(POOLS)
    for job in jobs:
        selector = job["spec"]["template"]["spec"]["nodeSelector"]
        assert selector["gpupools.io/capacity-type"] == "spot"
        assert selector["gpupools.io/pool"] in POOLS
    components = run.of_type("gpupools:index:GpuSmokeTest")
    # depends_on a component means on its resources: the Job waits for the autoscaler's release.
    [release] = run.of_type("kubernetes:helm.sh/v3:Release")
    assert components and all(release.urn in c.dependencies for c in components)


# --- eks.md §6 pitfalls, one test each -------------------------------------------------------------


def test_pitfall_mng_labels_and_taints_not_on_the_asg():
    """containers-roadmap#608: EKS does not copy node group labels/taints to the ASG, so
    cluster-autoscaler cannot scale an empty group. Every label and taint must be an ASG tag, and
    the autoscaler may also ask EKS (``eks:DescribeNodegroup``)."""
    run = aws_dev()
    for group in run.of_type(NODE_GROUP):
        tags = tags_on(run, asg_of(group))
        for key, value in group.inputs["labels"].items():
            assert tags[f"k8s.io/cluster-autoscaler/node-template/label/{key}"] == value
        for taint in group.inputs.get("taints", []):
            assert f"k8s.io/cluster-autoscaler/node-template/taint/{taint['key']}" in tags
    [policy] = run.of_type("aws:iam/rolePolicy:RolePolicy")
    assert "eks:DescribeNodegroup" in policy.inputs["policy"]


def test_pitfall_ca_reads_mng_taints_wrongly_or_skips_valueless_ones():
    """autoscaler#6481, aws_wrapper.go: taints without a value are skipped. Every taint has one."""
    for group in aws_dev().of_type(NODE_GROUP):
        for taint in group.inputs.get("taints", []):
            assert taint.get("value"), (group.name, taint)


def test_pitfall_taint_tag_format_is_value_colon_kubernetes_effect():
    """eksctl writes ``value`` without ``:Effect``; cluster-autoscaler ignores that."""
    run = aws_dev()
    taint_tags = [t.inputs["tag"] for t in run.of_type(ASG_TAG) if "/node-template/taint/" in t.inputs["tag"]["key"]]
    assert taint_tags
    for tag in taint_tags:
        assert re.fullmatch(r"(.*):(NoSchedule|NoExecute|PreferNoSchedule)", tag["value"]), tag
    gpu = [t for t in taint_tags if t["key"].endswith("/taint/" + GPU_TAINT.key)]
    assert {t["value"] for t in gpu} == {f"{GPU_TAINT.value}:NoSchedule"}


def test_pitfall_desired_size_reset_by_iac():
    """pulumi-eks#321 and friends: a later ``pulumi up`` must never reset autoscaled capacity."""
    groups = aws_dev().of_type(NODE_GROUP)
    assert groups and all(g.ignore_changes == ["scalingConfig.desiredSize"] for g in groups)


def test_pitfall_gpu_spot_capacity_errors_at_create():
    """containers-roadmap#2204: a group created with desired > 0 on scarce Spot goes CREATE_FAILED.
    GPU groups start at 0, and Spot is diversified over types and zones."""
    run = aws_dev()
    spot = [g for g in gpu_groups(run) if g.inputs["capacityType"] == "SPOT"]
    assert all(g.inputs["scalingConfig"]["desiredSize"] == 0 for g in gpu_groups(run))
    for name in POOLS:
        pool_spot = [g for g in spot if g.inputs["labels"]["gpupools.io/pool"] == name]
        assert len({zone_of(run, g) for g in pool_spot}) == len(ZONES)
    assert any(len(g.inputs["instanceTypes"]) >= 3 for g in spot)


def test_pitfall_priority_expander_fallback_slow_or_stuck():
    """autoscaler#4098: overlapping tiers; #4438: no early abort on failed Spot launches. Tiers are
    disjoint on real ASG names, the autoscaler may read scaling activities, and the provision
    timeout is bounded."""
    run = aws_dev()
    all_regexes = [r for regexes in priorities(run).values() for r in regexes]
    for group in run.of_type(NODE_GROUP):
        matching = [r for r in all_regexes if re.search(r, asg_of(group))]
        assert len(matching) == 1, (group.name, matching)
    [policy] = run.of_type("aws:iam/rolePolicy:RolePolicy")
    assert "autoscaling:DescribeScalingActivities" in policy.inputs["policy"]
    minutes = int(release_values(run)["extraArgs"]["max-node-provision-time"].rstrip("m"))
    assert minutes < 15  # the upstream default, which makes fallback slow
    assert release_values(run)["extraArgs"]["expander"].split(",")[0] == "priority"


def test_pitfall_device_plugin_not_scheduled():
    """NVIDIA/k8s-device-plugin#421, nebari#3074: a taint the plugin does not tolerate leaves GPUs
    unadvertised. It tolerates every taint of every served group and requires the GPU label."""
    run = aws_dev()
    spec = daemon_set(run)["spec"]["template"]["spec"]
    all_taints = {(t["key"], t["value"], t["effect"]) for g in gpu_groups(run) for t in g.inputs["taints"]}
    assert len(all_taints) >= 2  # the GPU taint and gpu4's dedicated taint
    taints = [Taint(k, v, TaintEffect[e]) for k, v, e in all_taints]
    assert untolerated(spec["tolerations"], taints) == []
    assert all(g.inputs["labels"][GPU_PRESENT_LABEL] == "true" for g in gpu_groups(run))


def test_pitfall_pulumi_eks_gpu_gaps():
    """pulumi-eks#1578: its bundled provider rejects AL2023_x86_64_NVIDIA, and it tags nothing.
    Node groups are plain ``aws.eks.NodeGroup`` resources of the user's pulumi-aws."""
    run = aws_dev()
    assert not [r for r in run.registrations if r.type.startswith("eks:") and r.type != "eks:index:Cluster"]
    assert {g.inputs["amiType"] for g in gpu_groups(run)} == {"AL2023_x86_64_NVIDIA"}
    [control_plane] = run.of_type("eks:index:Cluster")
    assert control_plane.inputs["skipDefaultNodeGroup"] is True


# --- invalid configs: one clear error, nothing registered ------------------------------------------


@dataclass
class Failed:
    run: Run
    error: ConfigError | None


def run_invalid(overrides: dict[str, Any]) -> Failed:
    config = {**CONFIG, **overrides}
    box: dict[str, ConfigError] = {}

    def program() -> None:
        try:
            runpy.run_path(str(PROJECT_ROOT / "__main__.py"), run_name="__main__")
        except ConfigError as error:
            box["error"] = error

    run = run_program(program, config, stack="aws-dev")
    return Failed(run=run, error=box.get("error"))


def pool_with(**changes: Any) -> dict[str, Any]:
    return {"gpupools:gpuPools": [{**CONFIG["gpupools:gpuPools"][0], **changes}]}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            pool_with(instanceTypes=["g4dn.xlarge", "g5.2xlarge"]),
            r"^gpupools:gpuPools\[0\]\.instanceTypes\[1\]: must have the shape of g4dn\.xlarge.*g5\.2xlarge",
            id="mixed-shapes",
        ),
        pytest.param(
            pool_with(instanceTypes=["m5.xlarge"]),
            r"instanceTypes\[0\]: must have at least one whole NVIDIA GPU",
            id="non-gpu-type",
        ),
        pytest.param(
            {"gpupools:cluster": {**CONFIG["gpupools:cluster"], "zones": ["us-west-2a", "uswest2b"]}},
            r"^gpupools:cluster\.zones\[1\]: must be an AWS availability zone",
            id="zone-format",
        ),
        pytest.param(
            {"gpupools:cluster": {**CONFIG["gpupools:cluster"], "zones": ["eu-west-1a", "eu-west-1b"]}},
            r"^gpupools:cluster\.zones\[0\]: must be a zone of the stack's region \(us-west-2\)",
            id="zone-of-another-region",
        ),
        pytest.param(
            pool_with(taints=[{"key": "dedicated", "effect": "NoSchedule"}]),
            r"taints\[0\]\.value: is required",
            id="taint-without-value",
        ),
        pytest.param(
            pool_with(labels={"k8s.io/team": "x"}),
            r"labels\.k8s\.io/team: key must not use a reserved prefix",
            id="reserved-label-prefix",
        ),
        pytest.param(
            pool_with(labels={f"l{i}": "x" for i in range(40)}),
            r"^gpupools:gpuPools\[0\]\.labels: labels and taints must fit the 50 tags",
            id="more-than-50-asg-tags",
        ),
        pytest.param(
            pool_with(labels={"example.com/" + "x" * 55: "y"}),
            r"^gpupools:gpuPools\[0\]\.labels\.example\.com/x+: key must be at most 63 characters on EKS",
            id="label-key-longer-than-eks-allows",
        ),
        pytest.param(
            pool_with(labels={"k8s.amazonaws.com/accelerator": "a100"}), r"is set by gpupools", id="label-gpupools-sets"
        ),
        pytest.param(
            pool_with(amiType="AL2_x86_64_GPU"),
            r"amiType: must be one of AL2023_x86_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA",
            id="ami-type",
        ),
    ],
)
def test_invalid_config_fails_with_one_clear_error_and_registers_nothing(overrides, message):
    failed = run_invalid(overrides)
    assert failed.error is not None, "no ConfigError"
    assert re.search(message, str(failed.error)), str(failed.error)
    assert failed.run.registrations == []
