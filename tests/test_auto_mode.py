"""EKS Auto Mode (``gpupools:provisioner: auto-mode``, issue 47), on the recording mock runtime.

What ``aws-auto-dev`` registers, checked against sources nobody here wrote: the pinned Auto Mode
NodeClass schema and the AWS provider's NodePool CRD (``tests/crd_schema.py``), what pulumi-eks does
with its ``autoMode`` arguments (pulumi/pulumi-eks ``nodejs/eks/cluster/cluster.ts`` at 7bf0c1b, quoted
where used), and the EKS user guide's Auto Mode pages for the IAM and the lifetimes. The rules that
refuse what Auto Mode cannot do are each checked with the config path and value they name.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
from gpupools import config
from gpupools.aws import auto_mode
from gpupools.conventions import GPU_TAINT, POOL_LABEL
from gpupools.errors import ConfigError
from gpupools.specs import Provisioner
from gpupools.testing import Run, run_stack, stack_config

from tests.crd_schema import validate_custom_resource
from tests.example_runs import example_run
from tests.test_karpenter_eks import custom_resource, node_pools

STACK = "aws-auto-dev"
NODECLASS = "kubernetes:eks.amazonaws.com/v1:NodeClass"


@cache
def run() -> Run:
    return example_run(STACK)


def node_classes(result: Run) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: custom_resource(r) for r in result.of_type(NODECLASS)}


def stack_values(**changes: Any) -> dict[str, Any]:
    values = copy.deepcopy(stack_config(STACK))
    values.update(changes)
    return values


# --- what the cloud runs, gpupools does not create -------------------------------------------------


def test_nothing_the_cloud_runs_is_created() -> None:
    types = {r.type for r in run().registrations}
    for absent in (
        "aws:eks/nodeGroup:NodeGroup",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:eks/addon:Addon",
        "aws:sqs/queue:Queue",
        "aws:cloudwatch/eventRule:EventRule",
        "kubernetes:helm.sh/v3:Release",
        "kubernetes:apps/v1:DaemonSet",
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
    ):
        assert absent not in types, absent
    assert "gpupools:index:AutoModeNodePools" in types


def test_the_cluster_turns_auto_mode_on_with_custom_pools_only_and_states_every_add_on() -> None:
    [cluster] = run().of_type("eks:index:Cluster")
    mode = cluster.inputs["autoMode"]
    assert mode["enabled"] is True
    # No built-in pool and no role from pulumi-eks: it then sends computeConfig without nodeRoleArn
    # ({enabled: true, nodeRoleArn, nodePools: [...defaults], ...config}: config's nodePools wins).
    assert mode["createNodeRole"] is False
    assert mode["computeConfig"] == {"enabled": True, "nodePools": []}
    # "vpcCniAddonEnabled = useDefaultVpcCni !== undefined ? !useDefaultVpcCni : !autoMode.enabled"
    assert cluster.inputs["useDefaultVpcCni"] is True
    assert cluster.inputs["kubeProxyAddonOptions"]["enabled"] is False
    assert cluster.inputs["corednsAddonOptions"]["enabled"] is False
    assert "vpcCniOptions" not in cluster.inputs


def test_cluster_role_has_the_auto_mode_policies_before_the_cluster() -> None:
    result = run()
    attached = {
        r.inputs["policyArn"].rsplit("/", 1)[-1] for r in result.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert {"AmazonEKSClusterPolicy", *auto_mode.CLUSTER_ROLE_POLICIES} <= attached
    [cluster] = result.of_type("eks:index:Cluster")
    depends = set(cluster.dependencies)
    policy_urns = {
        r.urn
        for r in result.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.inputs["policyArn"].rsplit("/", 1)[-1] in auto_mode.CLUSTER_ROLE_POLICIES
    }
    assert policy_urns <= depends


def test_node_role_gets_an_ec2_access_entry_with_the_auto_node_policy() -> None:
    result = run()
    [entry] = result.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["type"] == "EC2"  # not EC2_LINUX (create-node-class.adoc)
    [association] = result.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert association.inputs["policyArn"].endswith(":cluster-access-policy/AmazonEKSAutoNodePolicy")
    assert association.inputs["accessScope"] == {"type": "cluster"}
    roles = [r for r in result.of_type("aws:iam/role:Role") if "auto-node-role" in r.name]
    assert len(roles) == 1 and '"ec2.amazonaws.com"' in roles[0].inputs["assumeRolePolicy"]
    node_policies = {
        r.inputs["policyArn"].rsplit("/", 1)[-1]
        for r in result.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.parent == roles[0].urn
    }
    assert node_policies == {"AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly"}


# --- NodeClasses and NodePools --------------------------------------------------------------------


def test_every_node_class_and_nodepool_is_valid_against_the_pinned_crds() -> None:
    result = run()
    objects = [*node_classes(result).values(), *node_pools(result).values()]
    assert len(objects) == 2 * (1 + len(stack_config(STACK)["gpupools:gpuPools"]) + len(stack_config(STACK)["gpupools:cpuPools"]))
    for obj in objects:
        assert validate_custom_resource(obj) == [], obj["metadata"]["name"]


def test_the_pinned_node_class_schema_rejects_what_auto_mode_would() -> None:
    """The check is not vacuous: Auto Mode's schema refuses a class without a role, an unknown field
    (an EC2NodeClass's amiSelectorTerms) and an ephemeral storage size outside its pattern."""
    good = next(iter(node_classes(run()).values()))
    for mutate in (
        lambda spec: spec.pop("role"),
        lambda spec: spec.update(amiSelectorTerms=[{"alias": "al2023@latest"}]),
        lambda spec: spec.update(ephemeralStorage={"size": "80"}),
    ):
        bad = copy.deepcopy(good)
        mutate(bad["spec"])
        assert validate_custom_resource(bad), bad["spec"]


def test_node_classes_select_the_clusters_subnets_and_security_group_and_size_the_disk() -> None:
    classes = node_classes(run())
    pools = {p["name"]: p for p in stack_config(STACK)["gpupools:gpuPools"]}
    cluster = stack_config(STACK)["gpupools:cluster"]["name"]
    assert "default" not in classes  # Auto Mode's own class
    for name, obj in classes.items():
        spec = obj["spec"]
        assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": cluster}}]
        assert spec["securityGroupSelectorTerms"] == [{"tags": {"aws:eks:cluster-name": cluster}}]
        pool = name.removeprefix("gpupools-")
        if pool in pools and "diskSizeGb" in pools[pool]:
            assert spec["ephemeralStorage"] == {"size": f"{pools[pool]['diskSizeGb']}Gi"}


def test_nodepools_use_auto_modes_lifetime_and_state_the_grace_period() -> None:
    for name, pool in node_pools(run()).items():
        template = pool["spec"]["template"]["spec"]
        assert template["nodeClassRef"] == {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": f"gpupools-{name}"}
        hours = int(template["expireAfter"].removesuffix("h"))
        assert hours <= auto_mode.AUTO_MODE_MAX_LIFETIME_HOURS  # 21 days: "which you can reduce", never Never
        assert template["terminationGracePeriod"] == "24h"


def test_gpu_pools_buy_spot_then_on_demand_with_the_gpu_taint_and_the_system_pool_on_demand_untainted() -> None:
    pools = node_pools(run())
    for entry in stack_config(STACK)["gpupools:gpuPools"]:
        template = pools[entry["name"]]["spec"]["template"]
        [capacity] = [r for r in template["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
        assert capacity["values"] == ["spot", "on-demand"]
        assert {"key": GPU_TAINT.key, "value": GPU_TAINT.value, "effect": GPU_TAINT.effect.value} in template["spec"]["taints"]
        assert template["metadata"]["labels"][POOL_LABEL] == entry["name"]
        assert pools[entry["name"]]["spec"]["limits"]["nodes"] == str(entry["maxSize"])
    system = pools["system"]["spec"]
    [capacity] = [r for r in system["template"]["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
    assert capacity["values"] == ["on-demand"]
    assert system["template"]["spec"]["taints"] == []
    assert system["limits"]["nodes"] == str(stack_config(STACK)["gpupools:systemPool"]["maxSize"])


def test_the_system_nodepool_is_tried_last() -> None:
    # Karpenter tries NodePools from the highest weight; the system pool is last, as the priority
    # expander ranks it on the other provisioners.
    weights = {name: pool["spec"]["weight"] for name, pool in node_pools(run()).items()}
    system = weights.pop("system")
    assert weights and system < min(weights.values())


def test_the_stack_outputs_costs_for_every_pool() -> None:
    outputs = run().outputs
    assert {p["pool"] for p in outputs["nodePools"]} == {
        "system",
        *(p["name"] for p in stack_config(STACK)["gpupools:gpuPools"]),
        *(p["name"] for p in stack_config(STACK)["gpupools:cpuPools"]),
    }
    assert outputs["cost"]["ceilingPerHour"] > 0


def test_a_fee_the_committed_catalog_lacks_is_warned_about_and_marked_not_included() -> None:
    """The committed AWS table holds no EKS Auto Mode fee (no per-type figure with an AWS source was
    available offline): every pool is priced at EC2 prices and says so, in a warning naming the
    sizes and the command that fills them, and in the outputs; never as a fee of 0.
    ``tests/test_auto_mode_costs.py`` checks the figures with a table that has fees."""
    from gpupools.catalog.prices import REFRESH_HINT, price_table
    from gpupools.specs import Cloud

    values = stack_config(STACK)
    region = values["aws:region"]
    pools = {
        "system": values["gpupools:systemPool"]["instanceTypes"],
        **{p["name"]: p["instanceTypes"] for p in (*values["gpupools:gpuPools"], *values["gpupools:cpuPools"])},
    }
    table = price_table(Cloud.AWS)
    missing = sorted({size for sizes in pools.values() for size in sizes if table.auto_mode_fee(region, size) is None})
    assert missing, "a refresh added fees for every size: this test then has nothing unknown to check"
    result = run()
    [warning] = [w for w in result.warnings if "Auto Mode fee" in w]
    assert f"EKS Auto Mode fee unknown for {', '.join(missing)} in {region}" in warning
    assert REFRESH_HINT.format(cloud="aws") in warning and "docs/auto-mode.md" in warning
    for row in result.outputs["nodePools"]:
        lacking = sorted(size for size in pools[row["pool"]] if size in missing)
        if lacking:
            assert row["autoModeFee"] is None, row["pool"]
            assert f"no EKS Auto Mode fee for {', '.join(lacking)}" in row["autoModeFeeNote"]
            assert REFRESH_HINT.format(cloud="aws") in row["autoModeFeeNote"]
    cost = result.outputs["cost"]
    block = cost["autoModeFee"]
    assert block["included"] is False and block["unknownSizes"] == missing
    assert block["perNodeHour"] == {
        size: table.auto_mode_fee(region, size) for size in sorted({s for v in pools.values() for s in v})
    }
    assert "not included" in block["note"] and REFRESH_HINT.format(cloud="aws") in block["note"]
    # Figures with nodes of such a pool are not exact: the fee would add to them.
    assert cost["exact"]["ceiling"] is False and cost["capacity"]["ceiling"]["autoModeFeeIncluded"] is False
    assert cost["exact"]["idle"] is True  # no node at idle: nothing is missing there


def test_other_stacks_have_no_auto_mode_fee_in_their_outputs() -> None:
    for stack in ("aws-dev", "aws-karpenter-dev", "aws-training-dev"):
        result = example_run(stack)
        assert "autoModeFee" not in result.outputs["cost"], stack
        assert not any("autoModeFee" in row for row in result.outputs["nodePools"]), stack
        assert not any("Auto Mode fee" in warning for warning in result.warnings), stack


# --- rules before registration --------------------------------------------------------------------


def first_pool(**keys: Any) -> dict[str, Any]:
    pools = copy.deepcopy(stack_config(STACK)["gpupools:gpuPools"])
    pools[0].update(keys)
    return {"gpupools:gpuPools": pools}


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        (first_pool(sharing={"timeSlicing": {"replicas": 4}}), "gpupools:gpuPools[0].sharing", "device plugin"),
        (first_pool(efa=True), "gpupools:gpuPools[0].efa", "NodeClass has no EFA"),
        (
            first_pool(reservations=[{"id": "cr-0123456789abcdef0", "count": 1}]),
            "gpupools:gpuPools[0].reservations",
            "capacityReservationSelectorTerms",
        ),
        (first_pool(gpuDriver="none"), "gpupools:gpuPools[0].gpuDriver", "installs and updates"),
        (first_pool(minSize=1), "gpupools:gpuPools[0].minSize", "no minimum"),
        ({"gpupools:nodeRepair": {"enabled": True}}, "gpupools:nodeRepair.enabled", "node auto repair"),
        ({"gpupools:autoscaler": {"maxNodeProvisionTime": "5m"}}, "gpupools:autoscaler.maxNodeProvisionTime", "auto-mode"),
        (
            {"gpupools:queueing": {"enabled": True, "namespaces": ["ml"], "atomicScaleUp": True}},
            "gpupools:queueing.atomicScaleUp",
            "ProvisioningRequests",
        ),
    ],
)
def test_what_auto_mode_cannot_do_is_refused_by_path(changes: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config.parse(stack_values(**changes), region="us-west-2")
    assert raised.value.path == path
    assert words in str(raised.value)


def test_auto_mode_is_aws_only() -> None:
    values = copy.deepcopy(stack_config("azure-dev"))
    values["gpupools:provisioner"] = "auto-mode"
    with pytest.raises(ConfigError) as raised:
        config.parse(values)
    assert raised.value.path == "gpupools:provisioner"
    assert "karpenter (AKS Node Auto Provisioning)" in str(raised.value)


def test_sizes_auto_mode_does_not_launch_are_refused() -> None:
    declared = {"instanceTypes": [{"name": "p3.8xlarge", "vcpus": 32, "memoryGib": 244, "gpus": 4, "gpuModel": "V100"}]}
    with pytest.raises(ConfigError) as raised:
        config.parse(
            stack_values(**first_pool(instanceTypes=["p3.8xlarge"]), **{"gpupools:catalog": declared}), region="us-west-2"
        )
    assert raised.value.path == "gpupools:gpuPools[0].instanceTypes[0]"
    assert "p3dn" in str(raised.value)  # the message lists the families Auto Mode launches
    # Under karpenter the same declared size is accepted: the rule is Auto Mode's.
    values = stack_values(**first_pool(instanceTypes=["p3.8xlarge"]), **{"gpupools:catalog": declared})
    values["gpupools:provisioner"] = "karpenter"
    assert config.parse(values, region="us-west-2").provisioner is Provisioner.KARPENTER


def test_a_micro_cpu_size_is_refused() -> None:
    """Auto Mode launches nothing nano, micro or small (a declared size: the catalog lists none)."""
    pools = copy.deepcopy(stack_config(STACK)["gpupools:cpuPools"])
    pools[0]["instanceTypes"] = ["t3.micro"]
    declared = {"instanceTypes": [{"name": "t3.micro", "vcpus": 2, "memoryGib": 1}]}
    with pytest.raises(ConfigError) as raised:
        config.parse(stack_values(**{"gpupools:cpuPools": pools, "gpupools:catalog": declared}), region="us-west-2")
    assert raised.value.path == "gpupools:cpuPools[0].instanceTypes[0]"
    assert "nano/micro/small" in str(raised.value)


def test_a_refused_key_registers_nothing() -> None:
    with pytest.raises(ConfigError):
        run_stack(STACK, overrides=first_pool(efa=True))


# --- an existing cluster is never switched ---------------------------------------------------------


def live_cluster(name: str, auto_mode: bool) -> dict[str, Any]:
    """The ``aws.eks.get_cluster`` invoke's answer for a live cluster: botocore's ``eks``
    ``DescribeCluster`` ``cluster`` shape, whose ``computeConfig {enabled, nodePools, nodeRoleArn}``
    (``ComputeConfigResponse``) the data source returns as a one-element ``computeConfigs`` list,
    and none for a cluster created without Auto Mode."""
    described: dict[str, Any] = {"name": name, "version": "1.35", "status": "ACTIVE"}
    if auto_mode:
        described["computeConfigs"] = [{"enabled": True, "nodePools": [], "nodeRoleArn": ""}]
    return described


def live(name: str, auto_mode: bool) -> dict[str, Any]:
    return {
        "aws:eks/getClusters:getClusters": lambda _: {"names": [name]},
        "aws:eks/getCluster:getCluster": lambda args: live_cluster(args["name"], auto_mode),
    }


def test_an_existing_cluster_without_auto_mode_is_not_switched_into_it() -> None:
    name = stack_config(STACK)["gpupools:cluster"]["name"]
    with pytest.raises(ConfigError) as raised:
        run_stack(STACK, calls=live(name, auto_mode=False))
    assert raised.value.path == "gpupools:provisioner"
    assert "force a new cluster" in str(raised.value) and "docs/auto-mode.md" in str(raised.value)


def test_an_existing_auto_mode_cluster_is_not_switched_out_of_it() -> None:
    name = stack_config("aws-karpenter-dev")["gpupools:cluster"]["name"]
    with pytest.raises(ConfigError) as raised:
        run_stack("aws-karpenter-dev", calls=live(name, auto_mode=True))
    assert raised.value.path == "gpupools:provisioner"
    assert "live with Auto Mode on" in str(raised.value)


def test_an_existing_auto_mode_cluster_keeps_its_stack() -> None:
    name = stack_config(STACK)["gpupools:cluster"]["name"]
    result = run_stack(STACK, calls=live(name, auto_mode=True))
    assert result.of_type("eks:index:Cluster")


def test_gpu_metrics_left_on_is_said_not_silently_dropped() -> None:
    """``gpuMetrics.enabled`` defaults to true; on Auto Mode no exporter is deployed, so the program warns."""
    from gpupools import rules

    spec = config.parse(stack_config(STACK), region="us-west-2")
    assert spec.gpu_metrics.enabled
    assert rules.AUTO_MODE_METRICS_WARNING in rules.stack_warnings(spec)
    assert not any(r.type.endswith("DcgmExporter") for r in run().registrations)
    off = config.parse(stack_values(**{"gpupools:gpuMetrics": {"enabled": False}}), region="us-west-2")
    assert rules.AUTO_MODE_METRICS_WARNING not in rules.stack_warnings(off)
