"""Issue 29: the EKS lifecycle a real AWS account accepts, from the first ``up`` to a ``destroy`` that ends.

Each test pins one finding of the EKS pre-production review (``B2``, ``M1``...) and names the
upstream source it rests on; each fails on the code before the fix.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from gpupools import config, rules
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.errors import ConfigError
from gpupools.testing import Registration, Run, fakes, run_stack, stack_config
from gpupools.versions import DEFAULT_KUBERNETES_VERSION, EKS_CORE_ADDONS, EKS_VERSIONS

from tests.example_runs import example_run
from tests.examples import EXAMPLE_STACKS
from tests.test_aws_contracts import asg_name, check_request, operation_input

NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
IGW = "aws:ec2/internetGateway:InternetGateway"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


@functools.cache
def run(stack: str) -> Run:
    return example_run(stack)


# --- B2: destroy keeps egress until Karpenter's objects are gone ------------------------------------


def deleted_before(result: Run) -> dict[str, set[str]]:
    """For each URN, the URNs ``pulumi destroy`` must delete before it: everything that depends on
    it (``dependencies``) and its children, transitively. Pulumi deletes in reverse dependency
    order (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``, ``GenerateDeletes`` /
    ``scheduleDeletes``: a resource is deleted only after every resource that depends on it and,
    for a parent, after its children)."""
    dependents: dict[str, set[str]] = {r.urn: set() for r in result.registrations}
    for registration in result.registrations:
        for dependency in registration.dependencies:
            dependents.setdefault(dependency, set()).add(registration.urn)
        if registration.parent:
            dependents.setdefault(registration.parent, set()).add(registration.urn)

    @functools.cache
    def closure(urn: str) -> frozenset[str]:
        found: set[str] = set()
        for dependent in dependents.get(urn, ()):
            found |= {dependent, *closure(dependent)}
        return frozenset(found)

    return {urn: set(closure(urn)) for urn in dependents}


def egress(result: Run) -> list[Registration]:
    private = [r for r in result.of_type(ROUTE_TABLE) if "-private-" in r.name]
    private_associations = [r for r in result.of_type(ASSOCIATION) if "-private-" in r.name]
    return [*result.of_type(NAT), *result.of_type(IGW), *private, *private_associations]


def karpenter_stacks() -> list[str]:
    """Every committed AWS example stack whose provisioner is Karpenter (``Pulumi.<stack>.yaml``)."""
    stacks = EXAMPLE_STACKS
    return [
        s
        for s in stacks
        if stack_config(s).get("gpupools:cloud") == "aws" and stack_config(s).get("gpupools:provisioner") == "karpenter"
    ]


def karpenter_objects(result: Run) -> list[Registration]:
    """The Karpenter release and every NodePool, EC2NodeClass and NodeOverlay of a run."""
    return [
        *[r for r in result.of_type(RELEASE) if r.inputs.get("name") == "karpenter"],
        *result.of_type(NODEPOOL),
        *result.of_type(NODECLASS),
        *result.of_type(NODEOVERLAY),
    ]


@pytest.mark.parametrize("stack", karpenter_stacks())
def test_karpenter_objects_are_deleted_before_the_egress_they_need(stack: str) -> None:
    """B2: Karpenter removes a NodeClaim's finalizer only after EC2 reports the instance gone
    (kubernetes-sigs/karpenter ``pkg/controllers/nodeclaim/lifecycle/controller.go``), an
    EC2NodeClass's only after deleting its instance profiles through IAM (aws/karpenter-provider-aws
    v1.14.1 ``pkg/controllers/nodeclass/controller.go``), and the controller runs in private subnets
    whose only way to EC2 and IAM is the NAT gateway. Walked on the registered dependency graph of
    every Karpenter example (a created VPC): the Karpenter release, every NodePool, EC2NodeClass and
    NodeOverlay is deleted before every NAT gateway, the internet gateway and every private route
    table and association. On main nothing depended on them: destroy removed egress first.

    N1 (second review): the same for the CoreDNS add-on. Without ``preserve`` EKS deletes CoreDNS
    with the add-on (EKS user guide ``workloads/eks-add-ons.adoc``), and a controller on the chart's
    default ``dnsPolicy: ClusterFirst`` cannot resolve STS, EC2 or IAM while it drains (Karpenter
    v1.14.1 ``website/content/en/docs/troubleshooting.md``). At e016db2 the add-on had no dependents
    at all, so destroy deleted it in its first wave."""
    assert "aws-karpenter-dev" in karpenter_stacks()  # the discovery finds the known example
    result = run(stack)
    order = deleted_before(result)
    karpenter = karpenter_objects(result)
    gateways = egress(result)
    [coredns] = [a for a in result.of_type(ADDON) if a.inputs["addonName"] == "coredns"]
    assert len(karpenter) >= 3 and result.of_type(NAT) and len(gateways) >= 7
    for needed in [*gateways, coredns]:
        missing = [k.name for k in karpenter if k.urn not in order[needed.urn]]
        assert missing == [], f"destroy deletes {needed.type} {needed.name} before {missing}"


def test_the_karpenter_controller_resolves_through_the_vpc_and_coredns_is_preserved() -> None:
    """N1, the other two halves: the controller's ``dnsPolicy`` is ``Default`` (the chart value
    ``dnsPolicy``, ``ClusterFirst`` by default at v1.14.1; terraform-aws-eks ``examples/karpenter/main.tf``
    sets ``Default``), and the CoreDNS add-on is deleted with ``preserve`` (botocore ``eks``
    ``DeleteAddonRequest.preserve``: "preserves the add-on software on your cluster")."""
    for stack in karpenter_stacks():
        [release] = [r for r in run(stack).of_type(RELEASE) if r.inputs.get("name") == "karpenter"]
        assert release.inputs["values"]["dnsPolicy"] == "Default"
    delete_addon = operation_input("eks", "DeleteAddon")
    for stack in ("aws-dev", *karpenter_stacks()):
        [coredns] = [a for a in run(stack).of_type(ADDON) if a.inputs["addonName"] == "coredns"]
        assert coredns.inputs["preserve"] is True
        check_request({"clusterName": "c", "addonName": "coredns", "preserve": True}, delete_addon, "DeleteAddon")


def test_every_node_group_is_deleted_before_the_egress_its_nodes_joined_through() -> None:
    """The same order for cluster-autoscaler stacks, and on create: a private subnet's nodes join
    and pull images only through NAT, so every node group, the system group included, depends on it."""
    result = run("aws-dev")
    order = deleted_before(result)
    groups = result.of_type(NODE_GROUP)
    assert groups
    for needed in egress(result):
        missing = [g.name for g in groups if g.urn not in order[needed.urn]]
        assert missing == [], f"{needed.name} before {missing}"


# --- M5: the endpoint's allow-list and more than one admin ------------------------------------------

ADMINS = ["arn:aws:iam::123456789012:role/ci-deployer", "arn:aws:iam::123456789012:user/alice"]
CIDRS = ["203.0.113.0/24", "198.51.100.7/32"]
CLUSTER_TYPE = "eks:index:Cluster"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION_TYPE = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
PROVIDER = "pulumi:providers:kubernetes"


@functools.cache
def with_access(stack: str = "aws-dev") -> Run:
    cluster = dict(stack_config(stack)["gpupools:cluster"])
    return run_stack(stack, overrides={"gpupools:cluster": {**cluster, "admins": ADMINS, "apiAllowedCidrs": CIDRS}})


def test_api_allowed_cidrs_reach_the_endpoint() -> None:
    """``vpcConfig.publicAccessCidrs`` (botocore ``eks`` ``VpcConfigRequest``) from
    ``gpupools:cluster.apiAllowedCidrs``; main never passed any, so the endpoint was open to 0.0.0.0/0."""
    [cluster] = with_access().of_type(CLUSTER_TYPE)
    assert cluster.inputs["publicAccessCidrs"] == CIDRS
    assert cluster.inputs["endpointPublicAccess"] is True and cluster.inputs["endpointPrivateAccess"] is True
    vpc_config = operation_input("eks", "CreateCluster").members["resourcesVpcConfig"]
    check_request({"publicAccessCidrs": CIDRS, "endpointPublicAccess": True}, vpc_config, "resourcesVpcConfig")
    [default] = run("aws-dev").of_type(CLUSTER_TYPE)
    assert default.inputs["publicAccessCidrs"] == ["0.0.0.0/0"]  # empty: anywhere, sent (next test)


def test_emptying_the_allow_list_reopens_the_endpoint_without_a_perpetual_diff() -> None:
    """Issue 37 item 6 (review n3): ``public_access_cidrs`` is Optional+Computed in
    terraform-provider-aws (``internal/service/eks/cluster.go``), so at e016db2 an emptied
    ``apiAllowedCidrs`` sent nothing and the old allow-list stayed. Now the empty list is sent as
    ``["0.0.0.0/0"]``, which is EKS's documented default and what ``DescribeCluster`` returns for an
    open endpoint (botocore ``eks`` ``VpcConfigRequest``/``VpcConfigResponse.publicAccessCidrs``: "The
    default value is 0.0.0.0/0"): the update reopens the endpoint, and the next run equals EKS's
    answer, so no diff follows."""
    restricted = with_access()
    reopened = run("aws-dev")
    [before], [after] = restricted.of_type(CLUSTER_TYPE), reopened.of_type(CLUSTER_TYPE)
    assert before.inputs["publicAccessCidrs"] == CIDRS and after.inputs["publicAccessCidrs"] != before.inputs["publicAccessCidrs"]
    vpc_config = operation_input("eks", "UpdateClusterConfig").members["resourcesVpcConfig"]
    check_request({"publicAccessCidrs": after.inputs["publicAccessCidrs"]}, vpc_config, "resourcesVpcConfig")
    response = botocore_eks().shape_for("VpcConfigResponse").members["publicAccessCidrs"]
    assert "The default value is <code>0.0.0.0/0</code>" in response.documentation
    described = {"publicAccessCidrs": ["0.0.0.0/0"]}  # DescribeCluster of an open IPv4 cluster
    assert after.inputs["publicAccessCidrs"] == described["publicAccessCidrs"]  # no diff on the next up


def botocore_eks() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("eks")


def test_more_than_forty_cidrs_is_one_error_before_anything_is_registered() -> None:
    cluster = dict(stack_config("aws-dev")["gpupools:cluster"])
    cidrs = [f"203.0.{i}.0/24" for i in range(41)]
    with pytest.raises(ConfigError) as error:
        config.parse({**stack_config("aws-dev"), "gpupools:cluster": {**cluster, "apiAllowedCidrs": cidrs}})
    assert error.value.path == "gpupools:cluster.apiAllowedCidrs" and "at most 40" in error.value.rule


def test_every_admin_gets_an_access_entry_and_the_cluster_admin_policy() -> None:
    """EKS access entries (``CreateAccessEntry`` type ``STANDARD``) with ``AmazonEKSClusterAdminPolicy``
    on the whole cluster (``AssociateAccessPolicy`` ``accessScope.type`` ``cluster``), checked against
    botocore; the Kubernetes provider waits for the associations, so an admin running the next ``up``
    is let in before any object is sent. main created none: only the cluster's creator could."""
    result = with_access()
    entries = {e.inputs["principalArn"]: e for e in result.of_type(ACCESS_ENTRY) if e.inputs.get("type") == "STANDARD"}
    assert sorted(entries) == sorted(ADMINS)
    associations = {a.inputs["principalArn"]: a for a in result.of_type(ASSOCIATION_TYPE)}
    assert sorted(associations) == sorted(ADMINS)
    create_entry = operation_input("eks", "CreateAccessEntry")
    associate = operation_input("eks", "AssociateAccessPolicy")
    for arn in ADMINS:
        entry, association = entries[arn], associations[arn]
        check_request({"clusterName": entry.inputs["clusterName"], "principalArn": arn, "type": "STANDARD"}, create_entry, arn)
        request = {
            "clusterName": association.inputs["clusterName"],
            "principalArn": arn,
            "policyArn": association.inputs["policyArn"],
            "accessScope": association.inputs["accessScope"],
        }
        check_request(request, associate, arn)
        assert association.inputs["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
        assert association.inputs["accessScope"] == {"type": "cluster"}
    [provider] = [p for p in result.registrations if p.type == PROVIDER and p.name.endswith("-k8s")]
    assert {a.urn for a in associations.values()} <= set(provider.dependencies)


def test_admin_resource_names_do_not_move_when_the_list_is_reordered() -> None:
    from gpupools.aws.cluster import admin_resource_name

    names = [admin_resource_name("ml", arn) for arn in ADMINS]
    assert len(set(names)) == 2 and all(n.startswith("ml-admin-") for n in names)
    assert admin_resource_name("ml", ADMINS[1]) == names[1]  # a function of the ARN, not the position


# --- M6: kube-proxy, VPC CNI and CoreDNS pinned ------------------------------------------------------


def test_the_three_core_addons_are_pinned_for_the_minor() -> None:
    """pulumi-eks resolves kube-proxy and the VPC CNI with ``mostRecent: true`` unless a version is
    given (pulumi/pulumi-eks ``nodejs/eks/cluster/cluster.ts``, ``addons/cni-addon.ts``: v4.3.0 and
    HEAD), and main's CoreDNS took EKS's default build from ``getAddonVersion``: a "no change" ``up``
    rolled them whenever AWS published a build. Now all three are the minor's pins, and the program
    asks EKS nothing at run time: its inputs cannot move without a commit."""
    for stack in ("aws-dev", "aws-karpenter-dev", "aws-training-dev"):
        result = run(stack)
        minor = stack_config(stack)["gpupools:cluster"].get("kubernetesVersion", DEFAULT_KUBERNETES_VERSION)
        pins = EKS_CORE_ADDONS[minor]
        [cluster] = result.of_type(CLUSTER_TYPE)
        assert cluster.inputs["vpcCniOptions"]["addonVersion"] == pins.vpc_cni
        assert cluster.inputs["kubeProxyAddonOptions"]["version"] == pins.kube_proxy
        [coredns] = [a for a in result.of_type("aws:eks/addon:Addon") if a.inputs["addonName"] == "coredns"]
        assert coredns.inputs["addonVersion"] == pins.coredns
        assert not [token for token, _ in result.invokes if "getAddonVersion" in token]


def test_every_eks_minor_has_core_addon_pins_in_eks_format() -> None:
    assert set(EKS_VERSIONS.supported(EKS_VERSIONS.checked)) <= set(EKS_CORE_ADDONS)
    for minor, pins in EKS_CORE_ADDONS.items():
        assert pins.kube_proxy.startswith(f"v{minor}."), minor  # kube-proxy follows the minor
        for version in (pins.kube_proxy, pins.vpc_cni, pins.coredns):
            assert re.fullmatch(r"v\d+\.\d+\.\d+-eksbuild\.\d+", version), version


# --- m13: control plane logs and the upgrade policy --------------------------------------------------


def test_control_plane_logs_and_support_type_defaults_are_valid_eks_values() -> None:
    """Defaults: ``api``, ``audit``, ``authenticator`` logs and ``supportType: STANDARD``, each in
    botocore's ``eks`` enums (``LogType``, ``SupportType``); main left logging off and the support type
    to EKS (extended support, billed, after the minor's standard support ends)."""
    [cluster] = run("aws-dev").of_type(CLUSTER_TYPE)
    assert cluster.inputs["enabledClusterLogTypes"] == ["api", "audit", "authenticator"]
    assert cluster.inputs["upgradePolicy"] == {"supportType": "STANDARD"}
    logging = operation_input("eks", "CreateCluster").members["logging"]
    log_type = logging.members["clusterLogging"].member.members["types"].member
    assert set(rules.EKS_LOG_TYPES) == set(log_type.enum)
    support = operation_input("eks", "CreateCluster").members["upgradePolicy"].members["supportType"]
    assert set(config.SUPPORT_TYPES) == set(support.enum)
    custom = dict(stack_config("aws-dev")["gpupools:cluster"], controlPlaneLogs=["audit"], supportType="EXTENDED")
    [changed] = run_stack("aws-dev", overrides={"gpupools:cluster": custom}).of_type(CLUSTER_TYPE)
    assert changed.inputs["enabledClusterLogTypes"] == ["audit"] and changed.inputs["upgradePolicy"] == {
        "supportType": "EXTENDED"
    }


@pytest.mark.parametrize(
    ("key", "value", "path"),
    [
        ("controlPlaneLogs", ["audit", "kubelet"], "gpupools:cluster.controlPlaneLogs[1]"),
        ("supportType", "extended", "gpupools:cluster.supportType"),
    ],
)
def test_bad_log_type_or_support_type_is_one_error(key: str, value: object, path: str) -> None:
    cluster = dict(stack_config("aws-dev")["gpupools:cluster"], **{key: value})
    with pytest.raises(ConfigError) as error:
        config.parse({**stack_config("aws-dev"), "gpupools:cluster": cluster})
    assert error.value.path == path


# --- M3: scale from zero for pods that request ephemeral storage or huge pages -----------------------

ASG_TAG = "aws:autoscaling/tag:Tag"
RESOURCE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(value: str) -> int:
    """A Kubernetes quantity with a binary suffix (or none) in bytes/units."""
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", value)
    assert match, value
    return int(match.group(1)) * BINARY.get(match.group(2) or "", 1)


def template_allocatable(result: Run, group: Registration) -> dict[str, int]:
    """cluster-autoscaler's template node for an empty group (kubernetes/autoscaler 1.35
    ``cloudprovider/aws/aws_manager.go``, ``buildNodeFromTemplate``): pods 110, CPU and memory of the
    instance type, then every ``node-template/resources/<name>`` tag of the ASG, then those of the
    node group's own tags, which win. Nothing else: a resource without a tag is absent (zero)."""
    facts = INSTANCE_TYPES[group.inputs.get("instanceTypes", [None])[0] or template_type(result, group)]
    allocatable = {"pods": 110, "cpu": facts.vcpus, "memory": facts.memory_mib * 2**20}
    asg = asg_name(result, group)
    for tag in result.of_type(ASG_TAG):
        key = tag.inputs["tag"]["key"]
        if tag.inputs["autoscalingGroupName"] == asg and key.startswith(RESOURCE_TAG):
            allocatable[key[len(RESOURCE_TAG) :]] = quantity(tag.inputs["tag"]["value"])
    for key, value in group.inputs.get("tags", {}).items():
        if key.startswith(RESOURCE_TAG):
            allocatable[key[len(RESOURCE_TAG) :]] = quantity(value)
    return allocatable


def template_type(result: Run, group: Registration) -> str:
    templates = {fakes.OUTPUTS[LAUNCH_TEMPLATE](r.name, r.inputs)["__id"]: r for r in result.of_type(LAUNCH_TEMPLATE)}
    return str(templates[group.inputs["launchTemplate"]["id"]].inputs["instanceType"])


def fits(requests: dict[str, str], allocatable: dict[str, int]) -> bool:
    """The scheduler's ``NodeResourcesFit`` on an empty node: every request within allocatable."""
    return all(quantity(v) <= allocatable.get(k, 0) for k, v in requests.items())


def test_a_pod_requesting_ephemeral_storage_scales_every_empty_group_up() -> None:
    """A GPU pod with an ``ephemeral-storage`` request (a LimitRange default, Argo and KServe set
    one) fits the template node of every GPU group, reserved and EFA groups included; on main the
    template had no ``ephemeral-storage`` at all, so the autoscaler never scaled an empty group for it.
    The advertised size stays under what the node reports: ``diskSizeGb`` less the filesystem margin,
    the 10% hard eviction threshold and the 1 GiB kube-reserved of the EKS AL2023 AMI
    (awslabs/amazon-eks-ami ``nodeadm/internal/kubelet/config.go``)."""
    pod = {"nvidia.com/gpu": "1", "ephemeral-storage": "20Gi", "cpu": "1", "memory": "1Gi"}
    for stack in ("aws-dev", "aws-training-dev"):
        result = run(stack)
        pools = {p["name"]: p for p in stack_config(stack)["gpupools:gpuPools"]}
        gpu = [g for g in result.of_type(NODE_GROUP) if g.inputs["labels"]["gpupools.io/role"] == "gpu"]
        assert gpu
        for group in gpu:
            allocatable = template_allocatable(result, group)
            assert fits(pod, allocatable), group.name
            disk = pools[group.inputs["labels"]["gpupools.io/pool"]].get("diskSizeGb", 100)
            assert allocatable["ephemeral-storage"] <= (disk * 0.9 - 1) * 2**30, group.name
            without = {k: v for k, v in allocatable.items() if k != "ephemeral-storage"}
            assert not fits(pod, without)  # main's template


def test_an_efa_pod_requesting_huge_pages_scales_an_empty_efa_group_up() -> None:
    """The EKS user guide's NCCL job on EFA (``ml/node-efa.adoc``) requests ``hugepages-2Mi: 5120Mi``
    of the 5128 2 MiB pages the EFA driver pre-allocates; every EFA group's template now offers them."""
    result = run("aws-training-dev")
    efa = [g for g in result.of_type(NODE_GROUP) if g.inputs["labels"].get("vpc.amazonaws.com/efa.present") == "true"]
    assert efa
    pod = {"nvidia.com/gpu": "8", "hugepages-2Mi": "5120Mi", "vpc.amazonaws.com/efa": "1", "memory": "8000Mi"}
    for group in efa:
        allocatable = template_allocatable(result, group)
        assert allocatable["hugepages-2Mi"] == 5128 * 2 * 2**20
        assert fits(pod, allocatable), group.name


# --- issue 29: the Karpenter bugs found outside the project -----------------------------------------

ZONE_LABEL = "topology.kubernetes.io/zone"


def karpenter_pools(**changes: object) -> list[dict[str, object]]:
    return [dict(p, **changes) if p["name"] == "gpu1" else p for p in stack_config("aws-karpenter-dev")["gpupools:gpuPools"]]


def nodepool_zones(result: Run, pool: str) -> list[str]:
    [nodepool] = [n for n in result.of_type(NODEPOOL) if n.inputs["metadata"]["name"] == pool]
    [zone] = [r for r in nodepool.inputs["spec"]["template"]["spec"]["requirements"] if r["key"] == ZONE_LABEL]
    return list(zone["values"])


def test_a_reserved_karpenter_pool_in_one_zone_synthesizes_and_its_nodepool_stays_there() -> None:
    """A reservation lives in one zone, so a reserved pool names it (``zones: [us-west-2b]``). main's
    ``KarpenterNodePools`` validated its pools without the cluster's zones and rejected this with
    "needs gpupools:cluster.zones set" although ``cluster.zones`` was set; the pool's zone is now
    checked against the cluster's and narrows its NodePool's zone requirement."""
    pools = karpenter_pools(zones=["us-west-2b"], reservations=[{"id": "cr-0123456789abcdef0"}])
    result = run_stack("aws-karpenter-dev", overrides={"gpupools:gpuPools": pools})
    assert result.error is None
    assert nodepool_zones(result, "gpu1") == ["us-west-2b"]
    assert sorted(nodepool_zones(result, "gpu4")) == ["us-west-2a", "us-west-2b", "us-west-2c"]


def test_a_karpenter_pool_zone_outside_the_cluster_is_one_error() -> None:
    from gpupools.aws.karpenter_nodes import KarpenterNodePools
    from gpupools.testing import run_program

    pool = {"name": "g1", "instanceTypes": ["g6.xlarge"], "maxSize": 2, "zones": ["us-west-2d"]}
    with pytest.raises(ConfigError) as error:
        run_program(
            lambda: KarpenterNodePools(
                "np", [pool], cluster_name="ml", node_role_name="nodes", zones=["us-west-2a", "us-west-2b"]
            ),
            raise_errors=True,
        )
    assert error.value.path == "KarpenterNodePools(np).pools[0].zones[0]" and "cluster's zones" in error.value.rule


def test_karpenter_pools_may_mix_sizes_and_autoscaler_pools_may_not() -> None:
    """Karpenter picks a type per launch from the pods and each type's own facts, so ``[g6.xlarge,
    g6.2xlarge]`` is fine there; cluster-autoscaler's same-shape rule (its scale-from-zero template
    is the first type) stays for node groups. The GPU count still has to match under Karpenter."""
    mixed = ["g6.xlarge", "g6.2xlarge"]
    result = run_stack("aws-karpenter-dev", overrides={"gpupools:gpuPools": karpenter_pools(instanceTypes=mixed)})
    assert result.error is None
    [nodepool] = [n for n in result.of_type(NODEPOOL) if n.inputs["metadata"]["name"] == "gpu1"]
    [types] = [
        r for r in nodepool.inputs["spec"]["template"]["spec"]["requirements"] if r["key"] == "node.kubernetes.io/instance-type"
    ]
    assert sorted(types["values"]) == sorted(mixed)
    autoscaler = [
        dict(p, instanceTypes=mixed) if p["name"] == "gpu1" else p for p in stack_config("aws-dev")["gpupools:gpuPools"]
    ]
    with pytest.raises(ConfigError) as error:
        config.parse({**stack_config("aws-dev"), "gpupools:gpuPools": autoscaler})
    assert error.value.path.endswith(".instanceTypes[1]") and "shape" in error.value.rule
    different_gpus = karpenter_pools(instanceTypes=["g6.xlarge", "g6.12xlarge"])
    with pytest.raises(ConfigError) as error:
        config.parse({**stack_config("aws-karpenter-dev"), "gpupools:gpuPools": different_gpus})
    assert "GPU count" in error.value.rule


# --- m7: maxNodeProvisionTime for large GPU types ------------------------------------------------------


def test_large_gpu_pools_default_to_fifteen_minutes_and_an_explicit_value_wins() -> None:
    """The training example (p5.48xlarge and g5.48xlarge with EFA) gets cluster-autoscaler's own 15m
    default (``config.LARGE_GPU_PROVISION_TIME``, sources there) in its ``--max-node-provision-time``;
    the 1-GPU example keeps 10m; a value set in the config is kept; AKS is untouched."""
    from gpupools.aws.autoscaler import extra_args

    training = config.parse(stack_config("aws-training-dev"))
    assert training.autoscaler.max_node_provision_time == "15m"
    assert extra_args(training.autoscaler)["max-node-provision-time"] == "15m"
    assert config.parse(stack_config("aws-dev")).autoscaler.max_node_provision_time == "10m"
    explicit = {**stack_config("aws-training-dev"), "gpupools:autoscaler": {"maxNodeProvisionTime": "12m"}}
    assert config.parse(explicit).autoscaler.max_node_provision_time == "12m"
    assert config.is_large_gpu_type("p5.48xlarge") and not config.is_large_gpu_type("g6.xlarge")
    assert config.parse(stack_config("azure-dev")).autoscaler.max_node_provision_time == "10m"


# --- m6: EKS's managed node group quota ---------------------------------------------------------------


def many_zones_and_pools() -> dict[str, object]:
    """aws-dev with every GPU pool copied twice more: 3 x 3 pools x 3 zones x 2 groups + system > 30."""
    pools = stack_config("aws-dev")["gpupools:gpuPools"]
    copies = [dict(p, name=f"{p['name']}{suffix}") for suffix in ("", "b", "c") for p in pools]
    return {**stack_config("aws-dev"), "gpupools:gpuPools": copies}


def test_node_group_count_follows_the_plan_and_past_thirty_is_said_before_registering(monkeypatch: pytest.MonkeyPatch) -> None:
    """EKS's "Managed node groups per cluster" quota (``L-6D54EA21``, default 30) was not checked on
    main. The count is the node groups the stack registers; past 30 the stack warns before its first
    registration (the quota is adjustable, so a warning; the preflight checks the real value)."""
    import pulumi

    result = run("aws-dev")
    assert rules.eks_node_group_count(config.parse(stack_config("aws-dev"))) == len(result.of_type(NODE_GROUP))
    assert rules.node_group_quota_warning(config.parse(stack_config("aws-dev"))) is None
    big = config.parse(many_zones_and_pools())
    count = rules.eks_node_group_count(big)
    assert count > rules.EKS_MANAGED_NODE_GROUPS_QUOTA
    warnings: list[str] = []

    class StopError(Exception):
        pass

    def warn(message: str, *args: object, **kwargs: object) -> None:
        warnings.append(message)
        if "managed node groups" in message:
            raise StopError  # stop the program at the warning: what was registered by then?

    monkeypatch.setattr(pulumi.log, "warn", warn)
    overrides = {"gpupools:gpuPools": many_zones_and_pools()["gpupools:gpuPools"]}
    stopped = run_stack("aws-dev", overrides=overrides, raise_errors=False)
    assert isinstance(stopped.error, StopError) and stopped.registrations == []  # said before anything was registered
    [message] = [w for w in warnings if "managed node groups" in w]
    assert f"creates {count} EKS managed node groups" in message and "quota of 30" in message and "L-6D54EA21" in message
    monkeypatch.setattr(pulumi.log, "warn", lambda *a, **k: None)
    assert len(run_stack("aws-dev", overrides=overrides).of_type(NODE_GROUP)) == count
    assert rules.eks_node_group_count(config.parse(stack_config("aws-karpenter-dev"))) == 1


# --- the preflight: pinned add-ons offered, the node group quota, who has access ----------------------


def test_preflight_fails_a_core_addon_pin_eks_does_not_offer_and_names_the_newest() -> None:
    from gpupools.preflight.aws import AwsPreflight
    from gpupools.preflight.report import Status

    from tests.test_preflight_aws import StubbedAws, aws_dev

    target = aws_dev()
    minor = target.spec.cluster.kubernetes_version
    pins = EKS_CORE_ADDONS[minor]
    with StubbedAws() as aws:
        aws.addon_versions(minor, "v1.35.9-eksbuild.1", "v1.35.10-eksbuild.1", addon="kube-proxy")
        aws.addon_versions(minor, pins.vpc_cni, addon="vpc-cni")
        aws.addon_versions(minor, pins.coredns, addon="coredns")
        rows = AwsPreflight(target, clients=aws).core_addons()
        aws.done()
    assert [r.status for r in rows] == [Status.FAILED, Status.OK, Status.OK]
    assert "newest: v1.35.10-eksbuild.1, v1.35.9-eksbuild.1" in rows[0].found and "EKS_CORE_ADDONS" in rows[0].found


def test_preflight_reads_the_real_node_group_quota() -> None:
    from gpupools.preflight.aws import AwsPreflight
    from gpupools.preflight.report import Status

    from tests.test_preflight_aws import StubbedAws, aws_dev

    target = aws_dev()
    count = rules.eks_node_group_count(target.spec)
    for value, status in ((float(count), Status.OK), (float(count - 1), Status.FAILED)):
        with StubbedAws() as aws:
            aws.stubs["service-quotas"].add_response(
                "get_service_quota",
                {"Quota": {"QuotaCode": "L-6D54EA21", "QuotaName": "Managed node groups per cluster", "Value": value}},
                {"ServiceCode": "eks", "QuotaCode": "L-6D54EA21"},
            )
            [row] = AwsPreflight(target, clients=aws).node_group_quota()
            aws.done()
        assert row.status is status and row.needed == f"{count} managed node groups"


def test_preflight_says_who_has_access() -> None:
    from gpupools.preflight.aws import AwsPreflight
    from gpupools.preflight.report import Status

    from tests.test_preflight_aws import ACCOUNT, StubbedAws, aws_karpenter_dev

    cluster = dict(stack_config("aws-karpenter-dev")["gpupools:cluster"])
    caller = f"arn:aws:iam::{ACCOUNT}:user/alice"
    for extra, status, text in (
        ({"apiAllowedCidrs": CIDRS, "admins": [ADMINS[0]]}, Status.OK, "203.0.113.0/24"),
        ({"admins": [ADMINS[0]]}, Status.UNKNOWN, "0.0.0.0/0"),
        ({"apiAllowedCidrs": CIDRS, "admins": [caller]}, Status.UNKNOWN, "remove it"),
    ):
        target = aws_karpenter_dev(**{"gpupools:cluster": {**cluster, **extra}})
        with StubbedAws() as aws:
            aws.caller(caller)
            [row] = AwsPreflight(target, clients=aws).access()
        assert row.status is status and text in row.found, row.found


# --- M7: reserved groups roll only at zero -----------------------------------------------------------


def reserved_group_run(live_size: int, minor_change: bool) -> tuple[Run, Registration]:
    """aws-training-dev after its reserved (Capacity Block) group reached ``live_size`` nodes, updated
    with a changed disk size (a new launch template version) and, with ``minor_change``, a new minor."""
    from tests.test_capacity_updates import aws_world

    # Created at 1.34 and moved to the stack's 1.35 (EKS upgrades, never downgrades), or created at 1.35.
    older = {"gpupools:cluster": dict(stack_config("aws-training-dev")["gpupools:cluster"], kubernetesVersion="1.34")}
    created = run_stack("aws-training-dev", overrides=older) if minor_change else run("aws-training-dev")
    live = {r.inputs["nodeGroupName"]: 1 for r in created.of_type(NODE_GROUP)}
    [reserved] = [g for g in created.of_type(NODE_GROUP) if g.inputs["capacityType"] == "CAPACITY_BLOCK"]
    live[reserved.inputs["nodeGroupName"]] = live_size
    pools = [dict(p, diskSizeGb=p.get("diskSizeGb", 100) + 50) for p in stack_config("aws-training-dev")["gpupools:gpuPools"]]
    updated = run_stack("aws-training-dev", overrides={"gpupools:gpuPools": pools}, calls=aws_world(created, live))
    [group] = [g for g in updated.of_type(NODE_GROUP) if g.inputs["nodeGroupName"] == reserved.inputs["nodeGroupName"]]
    return updated, group


def test_a_running_reserved_group_holds_its_roll_and_an_idle_one_rolls() -> None:
    """EKS rolls a managed node group by launching replacements first (user guide
    ``nodes/managed-node-update-behavior.adoc``, "Scale up phase"), which a Capacity Block or a full
    ODCR has no room for: main sent the update anyway and it failed with ``NodeCreationFailure``.
    Now the reserved group's ``version`` and launch template version are held (``ignore_changes``:
    Pulumi sends the stored values, so ``UpdateNodegroupVersion`` is not called) while it runs nodes,
    and sent once it is at zero; the Spot and on-demand groups roll as before."""
    from gpupools.aws.node_group import ROLL_AT_ZERO_PATHS

    _, running = reserved_group_run(live_size=2, minor_change=True)
    assert set(ROLL_AT_ZERO_PATHS) <= set(running.ignore_changes)
    assert running.inputs["scalingConfig"]["desiredSize"] == 2  # its live size, untouched
    updated, idle = reserved_group_run(live_size=0, minor_change=True)
    assert not set(ROLL_AT_ZERO_PATHS) & set(idle.ignore_changes)
    assert idle.inputs["version"] == "1.35"
    others = [g for g in updated.of_type(NODE_GROUP) if g.inputs["capacityType"] != "CAPACITY_BLOCK"]
    assert others and all(not set(ROLL_AT_ZERO_PATHS) & set(g.ignore_changes) for g in others)


# --- m10: one DCGM host engine per node ----------------------------------------------------------------


def exporter_env(result: Run) -> list[list[dict[str, object]]]:
    daemon_sets = [d for d in result.of_type("kubernetes:apps/v1:DaemonSet") if "dcgm-exporter" in d.inputs["metadata"]["name"]]
    assert daemon_sets
    return [d.inputs["spec"]["template"]["spec"]["containers"][0]["env"] for d in daemon_sets]


def test_with_the_monitoring_agent_the_exporter_uses_its_host_engine() -> None:
    """The EKS node monitoring agent's ``dcgm-server`` DaemonSet runs ``nv-hostengine`` on every GPU
    node, published on host port 5555 (aws/eks-node-monitoring-agent v1.7.0 chart,
    ``templates/dcgm-daemonset.yaml``); main's exporter started a second, embedded one. With node
    repair on (aws-dev's default) the exporter connects to the node's engine
    (``DCGM_REMOTE_HOSTENGINE_INFO``, NVIDIA/dcgm-exporter's ``--remote-hostengine-info``); without the
    agent it keeps its embedded engine."""
    for env in exporter_env(run("aws-dev")):
        values = {e["name"]: e for e in env}
        assert values["DCGM_REMOTE_HOSTENGINE_INFO"]["value"] == "$(NODE_IP):5555"
        assert values["NODE_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
        names = [e["name"] for e in env]
        assert names.index("NODE_IP") < names.index("DCGM_REMOTE_HOSTENGINE_INFO")  # $(VAR) needs it first
    off = run_stack("aws-dev", overrides={"gpupools:nodeRepair": {"enabled": False}})
    assert all("DCGM_REMOTE_HOSTENGINE_INFO" not in {e["name"] for e in env} for env in exporter_env(off))


# --- N4: the ProvisioningRequest CRD's alias matches the name pulumi-kubernetes gave it ---------------

CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def urn(stack: str, project: str, parent_urn: str, type_: str, name: str) -> str:
    """A child's URN as Pulumi makes it: ``urn:pulumi:<stack>::<project>::<parent's qualified type>$<type>::<name>``
    (pulumi/pulumi ``sdk/go/common/resource/urn.go``, ``NewURN``; the Python SDK's ``create_urn`` in
    ``pulumi/runtime/resource.py`` builds the same string)."""
    qualified = parent_urn.split("::")[2]
    return f"urn:pulumi:{stack}::{project}::{qualified}${type_}::{name}"


def alias_urns(request: Any, stack: str, project: str) -> list[str]:
    """The URNs the engine resolves a ``RegisterResource`` request's aliases to: a URN as is; a spec
    with the resource's own name, type and parent unless it names others (pulumi/pulumi
    ``proto/pulumi/alias.proto``: ``spec.name``, ``spec.type``, ``spec.parentUrn`` or ``spec.noParent``).
    The SDK adds type aliases of its own (``v1beta1`` for a CRD), resolved the same way."""
    found = []
    for alias in request.aliases:
        if alias.urn:
            found.append(alias.urn)
            continue
        spec = alias.spec
        assert not spec.noParent, spec
        parent = spec.parentUrn or request.parent
        name, type_ = spec.name or request.name, spec.type or request.type
        found.append(urn(spec.stack or stack, spec.project or project, parent, type_, name))
    return found


def test_the_provisioning_request_crd_alias_is_the_old_configfile_childs_urn(monkeypatch: pytest.MonkeyPatch) -> None:
    """N4: before d2846c4 the CRD was a child of ``kubernetes:yaml/v2:ConfigFile``
    ``cluster-autoscaler-provisioningrequest-crd`` (a child of the ``ClusterAutoscaler`` component),
    and pulumi-kubernetes named it ``<ConfigFile name>:<metadata.name>``
    (pulumi/pulumi-kubernetes v4.32.0 ``provider/pkg/provider/yaml/v2/yaml.go``, ``register``:
    ``fmt.Sprintf("%s:%s", opts.ResourcePrefix, resourceName)``; ``configfile.go``: the prefix defaults
    to the ConfigFile's name, the child's parent is the ConfigFile). The legacy URN is built here from
    that naming and the registered component's URN; one of the CRD's aliases must resolve to it. At
    e016db2 the alias said ``<ConfigFile name>-<crd>``: no match, ``AlreadyExists`` on ``up``."""
    from gpupools.testing import RecordingMonitor

    seen: dict[str, list[str]] = {}
    register = RecordingMonitor.RegisterResource

    def recording(self: RecordingMonitor, request: Any) -> Any:
        if request.type == CRD_TYPE and request.name == "provisioningrequests.autoscaling.x-k8s.io":
            seen[request.name] = alias_urns(request, "aws-training-dev", "gpupools")
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", recording)
    result = run_stack("aws-training-dev")  # its own run: the monitor is patched
    [autoscaler] = [r for r in result.registrations if r.type == "gpupools:index:ClusterAutoscaler"]
    config_file = f"{autoscaler.name}-provisioningrequest-crd"  # the 0.2.x ConfigFile (git show d2846c4^)
    old_config_file = urn("aws-training-dev", "gpupools", autoscaler.urn, "kubernetes:yaml/v2:ConfigFile", config_file)
    legacy = urn(
        "aws-training-dev", "gpupools", old_config_file, CRD_TYPE, f"{config_file}:provisioningrequests.autoscaling.x-k8s.io"
    )
    assert legacy.endswith(
        "gpupools:index:ClusterAutoscaler$kubernetes:yaml/v2:ConfigFile$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
        "::cluster-autoscaler-provisioningrequest-crd:provisioningrequests.autoscaling.x-k8s.io"
    )
    assert legacy in seen["provisioningrequests.autoscaling.x-k8s.io"], seen


# --- N3: a pool's node class keeps its name when its disk, image family or reservations change --------

AKS_NODECLASS = "kubernetes:karpenter.azure.com/v1beta1:AKSNodeClass"


def node_class_of(result: Run, pool: str, node_class_type: str = NODECLASS) -> Registration:
    """The node class the pool's NodePool references (``spec.template.spec.nodeClassRef.name``)."""
    [nodepool] = [n for n in result.of_type(NODEPOOL) if n.inputs["metadata"]["name"] == pool]
    ref = nodepool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]
    [found] = [c for c in result.of_type(node_class_type) if c.inputs["metadata"]["name"] == ref]
    return found


def changed_pool(stack: str, pool: str, **changes: object) -> Run:
    key = "gpupools:gpuPools"
    pools = [dict(p, **changes) if p["name"] == pool else p for p in stack_config(stack)[key]]
    return run_stack(stack, overrides={key: pools})


@pytest.mark.parametrize(
    "changes",
    [
        {"diskSizeGb": 300},
        {"amiType": "BOTTLEROCKET_x86_64_NVIDIA"},
        {"zones": ["us-west-2b"], "reservations": [{"id": "cr-0123456789abcdef0"}]},
    ],
    ids=["disk", "ami-family", "reservations"],
)
def test_a_karpenter_pools_node_class_is_updated_in_place_not_renamed(changes: dict[str, object]) -> None:
    """N3: Pulumi replaces a Kubernetes object whose ``metadata.name`` changes (a new object; the old
    one deleted), and an EC2NodeClass's delete waits while any NodeClaim uses it
    (aws/karpenter-provider-aws v1.14.1 ``pkg/controllers/nodeclass/controller.go``, ``finalize``),
    which only drift in the maintenance window. At e016db2 the class was named
    ``<flavour>-<family>-<disk>g[-<pool>]``, so ``gpu4.diskSizeGb`` 200 -> 300 registered
    ``nvidia-al2023-300g``, moved the NodePool to it and deleted ``nvidia-al2023-200g``. Now the same
    resource (URN) and the same object name before and after, with the new spec: an update, which
    Karpenter turns into drift of the pool's nodes (``blockDeviceMappings`` in the class's static hash,
    ``Hash`` in ``pkg/apis/v1/ec2nodeclass.go``; ``AMIDrift`` and ``CapacityReservationDrift`` in
    ``pkg/cloudprovider/drift.go``). Every other class is untouched and no class is deleted."""
    before = run("aws-karpenter-dev")
    after = changed_pool("aws-karpenter-dev", "gpu4", **changes)
    old, new = node_class_of(before, "gpu4"), node_class_of(after, "gpu4")
    assert (new.urn, new.inputs["metadata"]["name"]) == (old.urn, old.inputs["metadata"]["name"])
    assert new.inputs["spec"] != old.inputs["spec"]
    assert {c.urn for c in after.of_type(NODECLASS)} == {c.urn for c in before.of_type(NODECLASS)}
    others = {c.urn: c.inputs for c in before.of_type(NODECLASS) if c.urn != old.urn}
    assert all(c.inputs == others[c.urn] for c in after.of_type(NODECLASS) if c.urn in others)


def test_an_aks_nap_pools_node_class_is_updated_in_place_too() -> None:
    """The same check for AKS NAP's AKSNodeClass, which is named after its pool (``nap_nodes``)."""
    before = run("azure-nap-dev")
    pool = stack_config("azure-nap-dev")["gpupools:gpuPools"][0]["name"]
    after = changed_pool("azure-nap-dev", pool, diskSizeGb=256)
    old, new = node_class_of(before, pool, AKS_NODECLASS), node_class_of(after, pool, AKS_NODECLASS)
    assert (new.urn, new.inputs["metadata"]["name"]) == (old.urn, old.inputs["metadata"]["name"])
    assert new.inputs["spec"]["osDiskSizeGB"] == 256 != old.inputs["spec"]["osDiskSizeGB"]


# --- N2 and n1: a kubernetesVersion change the live cluster accepts ------------------------------------


def describe_nodegroup(cluster: str, group: Registration, version: str) -> dict[str, Any]:
    """A ``DescribeNodegroup`` response of a group as EKS returns it (botocore ``eks``
    ``DescribeNodegroupResponse``: the Stubber below validates it against the model)."""
    return {
        "nodegroup": {
            "nodegroupName": group.inputs["nodeGroupName"],
            "clusterName": cluster,
            "version": version,
            "status": "ACTIVE",
            "capacityType": group.inputs["capacityType"],
            "scalingConfig": {"minSize": 0, "maxSize": group.inputs["scalingConfig"]["maxSize"], "desiredSize": 2},
        }
    }


def held_world(created: Run, held: str, held_at: str) -> dict[str, Any]:
    """The program's reads of EKS (data sources shaped as pulumi-aws returns ``DescribeCluster`` and
    ``DescribeNodegroup``: ``version`` on both) after a minor change held the reserved group ``held``
    at ``held_at`` because it ran nodes (``node_group.ROLL_AT_ZERO_PATHS``)."""
    from tests.test_capacity_updates import aws_world

    live = {r.inputs["nodeGroupName"]: 1 for r in created.of_type(NODE_GROUP)}
    return dict(aws_world(created, live, versions={held: held_at}))


def training_at(version: str) -> dict[str, Any]:
    return {"gpupools:cluster": dict(stack_config("aws-training-dev")["gpupools:cluster"], kubernetesVersion=version)}


def test_an_upgrade_past_a_held_reserved_group_is_one_error_before_anything_is_registered() -> None:
    """N2: "all of your node groups' Kubernetes versions must match the cluster's Kubernetes version
    in order to update the cluster to a new Kubernetes version" (botocore 1.44.8 ``eks``
    ``UpdateClusterVersion``). The cluster runs 1.34 and its Capacity Block group was held at 1.33 by
    the last minor change (it ran nodes); moving the config to 1.35 now names that group and how to
    release it, before the first registration. At e016db2 the plan started and ``UpdateClusterVersion``
    failed. The same stack with every group at 1.34 upgrades."""
    created = run_stack("aws-training-dev", overrides=training_at("1.34"))
    [reserved] = [g for g in created.of_type(NODE_GROUP) if g.inputs["capacityType"] == "CAPACITY_BLOCK"]
    name = reserved.inputs["nodeGroupName"]
    refused = run_stack("aws-training-dev", calls=held_world(created, name, "1.33"), raise_errors=False)
    assert isinstance(refused.error, ConfigError) and refused.registrations == []
    assert refused.error.path == "gpupools:cluster.kubernetesVersion" and refused.error.value == "1.35"
    assert f"{name} (at 1.33)" in refused.error.rule and "0 nodes" in refused.error.rule
    assert [n for n in (g.inputs["nodeGroupName"] for g in created.of_type(NODE_GROUP)) if n in refused.error.rule] == [name]
    upgraded = run_stack("aws-training-dev", calls=held_world(created, name, "1.34"))
    assert all(g.inputs["version"] == "1.35" for g in upgraded.of_type(NODE_GROUP))


def test_a_config_behind_the_live_cluster_is_one_error_not_a_downgrade() -> None:
    """n1: with ``supportType: STANDARD`` EKS upgrades a minor whose standard support ended (EKS user
    guide, "Understand the Kubernetes version lifecycle on EKS"), and it cannot downgrade
    (``UpdateClusterVersion`` moves one minor up). A config still at 1.34 against a live 1.35 cluster
    is one error naming the live version, before anything is registered; at e016db2 the plan asked
    for 1.34 and failed at the API."""
    created = run("aws-training-dev")  # the live cluster, at 1.35
    [reserved] = [g for g in created.of_type(NODE_GROUP) if g.inputs["capacityType"] == "CAPACITY_BLOCK"]
    calls = held_world(created, reserved.inputs["nodeGroupName"], "1.35")
    refused = run_stack("aws-training-dev", overrides=training_at("1.34"), calls=calls, raise_errors=False)
    assert isinstance(refused.error, ConfigError) and refused.registrations == []
    assert str(refused.error).startswith(
        "gpupools:cluster.kubernetesVersion: must not be older than the live cluster's 1.35"
    ) and 'set it to "1.35"' in str(refused.error)


def test_the_preflight_names_a_held_group_and_a_lagging_config() -> None:
    """The same two checks in the preflight, from botocore-validated ``DescribeCluster``,
    ``ListNodegroups`` and ``DescribeNodegroup`` answers; a cluster that does not exist gives no row."""
    from gpupools.preflight.aws import AwsPreflight
    from gpupools.preflight.report import Status

    from tests.test_preflight_aws import StubbedAws, aws_dev

    target = aws_dev()  # 1.35 in its config
    created = run_stack(
        "aws-dev", overrides={"gpupools:cluster": dict(stack_config("aws-dev")["gpupools:cluster"], kubernetesVersion="1.34")}
    )
    groups = created.of_type(NODE_GROUP)
    cluster = groups[0].inputs["clusterName"]
    held = groups[1].inputs["nodeGroupName"]

    def describe_cluster(aws: StubbedAws, version: str) -> None:
        aws.stubs["eks"].add_response(
            "describe_cluster", {"cluster": {"name": cluster, "version": version, "status": "ACTIVE"}}, {"name": cluster}
        )

    with StubbedAws() as aws:
        describe_cluster(aws, "1.34")
        aws.stubs["eks"].add_response(
            "list_nodegroups", {"nodegroups": [g.inputs["nodeGroupName"] for g in groups]}, {"clusterName": cluster}
        )
        for group in groups:
            version = "1.33" if group.inputs["nodeGroupName"] == held else "1.34"
            aws.stubs["eks"].add_response(
                "describe_nodegroup",
                describe_nodegroup(cluster, group, version),
                {"clusterName": cluster, "nodegroupName": group.inputs["nodeGroupName"]},
            )
        [row] = AwsPreflight(target, clients=aws).live_version()
        aws.done()
    assert row.status is Status.FAILED and f"{held} (at 1.33)" in row.found and "cluster at 1.34" in row.found
    with StubbedAws() as aws:
        describe_cluster(aws, "1.36")
        [row] = AwsPreflight(target, clients=aws).live_version()
        aws.done()
    assert row.status is Status.FAILED and 'set it to "1.36"' in row.found
    with StubbedAws() as aws:
        describe_cluster(aws, "1.35")
        [row] = AwsPreflight(target, clients=aws).live_version()
        aws.done()
    assert row.status is Status.OK
    with StubbedAws() as aws:
        aws.no_cluster(target)
        assert AwsPreflight(target, clients=aws).live_version() == []
        aws.done()
