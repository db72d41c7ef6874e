"""The EKS components alone, on the recording mock runtime: defaults, behaviour, errors.

``GpuNodeGroup`` is run with plain strings (no ``EksCluster``), as a library user on an existing
cluster would; ``EksCluster`` and ``ClusterAutoscaler`` each on their own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Callable

import pulumi
import pytest
from gpupools.aws import ClusterAutoscaler, EksCluster, GpuNodeGroup, NatStrategy
from gpupools.aws.autoscaler import rendered_flags
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.config import parse_gpu_pool
from gpupools.conventions import EKS_ACCELERATOR_LABEL, GPU_TAINT, CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.specs import AutoscalerSpec, Cloud
from gpupools.testing import Registration, Run, fakes, run_program
from gpupools.versions import CLUSTER_AUTOSCALER_CHART_VERSION, CLUSTER_AUTOSCALER_IMAGE_TAGS

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
ROLE_ARN = "arn:aws:iam::123456789012:role/ml-dev-nodes"
SUBNETS = {
    "us-west-2a": "subnet-0aaaaaaaaaaaaaaa1",
    "us-west-2b": "subnet-0bbbbbbbbbbbbbbb2",
    "us-west-2c": "subnet-0ccccccccccccccc3",
}
T4_POOL: dict[str, Any] = {"name": "t4", "instanceTypes": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"], "maxSize": 6}


@dataclass
class Seen:
    run: Run
    result: Any = None
    error: ConfigError | None = None


def build(fn: Callable[[], Any], config: dict[str, Any] | None = None) -> Seen:
    """Run ``fn`` on the recording runtime; keep a ConfigError so the test can see what was registered."""
    seen = Seen(run=Run(registrations=[]))

    def program() -> None:
        try:
            seen.result = fn()
        except ConfigError as error:
            seen.error = error

    seen.run = run_program(program, config)
    return seen


def node_group(pool: Any = None, **kwargs: Any) -> Seen:
    args: dict[str, Any] = {
        "pool": pool or T4_POOL,
        "cluster_name": "ml-dev",
        "node_role_arn": ROLE_ARN,
        "subnet_ids_by_zone": SUBNETS,
        **kwargs,
    }
    return build(lambda: GpuNodeGroup("t4", **args))


def groups_by_name(run: Run) -> dict[str, Registration]:
    return {r.inputs["nodeGroupName"]: r for r in run.of_type(NODE_GROUP)}


def fake_asg_name(group: Registration) -> str:
    """The ASG name the fakes report for a node group (what EKS would)."""
    outputs = fakes.OUTPUTS[NODE_GROUP](group.name, group.inputs)
    return str(outputs["resources"][0]["autoscalingGroups"][0]["name"])


# --- GpuNodeGroup: defaults ------------------------------------------------------------------------


def test_node_group_alone_makes_a_spot_and_an_on_demand_group_per_zone():
    seen = node_group()
    assert seen.error is None
    groups = seen.run.of_type(NODE_GROUP)
    pairs = sorted((r.inputs["capacityType"], r.inputs["subnetIds"][0]) for r in groups)
    assert pairs == sorted((capacity, subnet) for subnet in SUBNETS.values() for capacity in ("SPOT", "ON_DEMAND"))
    for registration in groups:
        assert registration.inputs["clusterName"] == "ml-dev"
        assert registration.inputs["nodeRoleArn"] == ROLE_ARN
        assert registration.inputs["instanceTypes"] == T4_POOL["instanceTypes"]
        assert registration.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
        assert "remoteAccess" not in registration.inputs
        assert "diskSize" not in registration.inputs  # the launch template carries the disk


def test_every_child_is_parented_to_the_component():
    seen = node_group()
    [component] = seen.run.of_type("gpupools:index:GpuNodeGroup")
    children = seen.run.children(component)
    assert {r.type for r in children} == {NODE_GROUP, LAUNCH_TEMPLATE, ASG_TAG}
    assert len(children) == len(seen.run.registrations) - 1


def test_groups_start_at_zero_and_ignore_desired_size():
    seen = node_group()
    for registration in seen.run.of_type(NODE_GROUP):
        scaling = registration.inputs["scalingConfig"]
        assert scaling["minSize"] == 0 == scaling["desiredSize"]
        assert registration.ignore_changes == ["scalingConfig.desiredSize"]
        assert not registration.delete_before_replace


def test_max_is_split_over_zones_per_capacity():
    seen = node_group({**T4_POOL, "maxSize": 7, "onDemandMaxSize": 4})
    maxes: dict[str, list[int]] = {"SPOT": [], "ON_DEMAND": []}
    for registration in sorted(seen.run.of_type(NODE_GROUP), key=lambda r: r.inputs["subnetIds"][0]):
        maxes[registration.inputs["capacityType"]].append(registration.inputs["scalingConfig"]["maxSize"])
    assert maxes == {"SPOT": [3, 2, 2], "ON_DEMAND": [2, 1, 1]}


def test_labels_and_taints_come_from_the_conventions_and_the_pool():
    taint = {"key": "dedicated", "value": "vision", "effect": "NoExecute"}
    seen = node_group({**T4_POOL, "labels": {"team": "vision"}, "taints": [taint]})
    for registration in seen.run.of_type(NODE_GROUP):
        capacity = "spot" if registration.inputs["capacityType"] == "SPOT" else "on-demand"
        assert registration.inputs["labels"] == {
            "team": "vision",
            "gpupools.io/pool": "t4",
            "gpupools.io/role": "gpu",
            "gpupools.io/capacity-type": capacity,
            "nvidia.com/gpu.present": "true",
            # T4, A10G and L4 types: no model would be true of every node.
            EKS_ACCELERATOR_LABEL: "nvidia-mixed",
        }
        assert registration.inputs["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
            {"key": "dedicated", "value": "vision", "effect": "NO_EXECUTE"},
        ]


@pytest.mark.parametrize(
    ("instance_types", "label"),
    [
        (["g4dn.xlarge"], "nvidia-tesla-t4"),
        (["g5.2xlarge", "g6.2xlarge"], "nvidia-mixed"),
        (["p4d.24xlarge"], "nvidia-a100"),
    ],
)
def test_accelerator_label_names_a_model_only_when_every_type_has_it(instance_types, label):
    """cluster-autoscaler needs the label's presence (gpu_processor.go); the value must never be a
    model some node of the group lacks (EC2 picks any of the group's types)."""
    models = {INSTANCE_TYPES[t].gpu_model for t in instance_types}
    seen = node_group({"name": "p", "instanceTypes": instance_types, "maxSize": 3})
    assert seen.error is None
    registrations = seen.run.of_type(NODE_GROUP)
    assert registrations
    for registration in registrations:
        value = registration.inputs["labels"][EKS_ACCELERATOR_LABEL]
        assert value == label
        assert (value in models) == (len(models) == 1)
    tags = {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in seen.run.of_type(ASG_TAG)}
    assert tags[f"k8s.io/cluster-autoscaler/node-template/label/{EKS_ACCELERATOR_LABEL}"] == label


def test_launch_template_requires_imdsv2_with_hop_limit_one_and_encrypts_gp3():
    seen = node_group({**T4_POOL, "diskSizeGb": 150})
    [template] = seen.run.of_type(LAUNCH_TEMPLATE)
    assert template.inputs["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
    }
    root = {"volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true", "volumeSize": 150}
    assert template.inputs["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "ebs": root}]
    for absent in ("keyName", "imageId", "userData", "vpcSecurityGroupIds"):
        assert absent not in template.inputs
    template_id = fakes.OUTPUTS[LAUNCH_TEMPLATE](template.name, template.inputs)["__id"]
    for registration in seen.run.of_type(NODE_GROUP):
        assert registration.inputs["launchTemplate"] == {"id": template_id, "version": "1"}


def test_bottlerocket_sizes_the_data_volume_and_needs_no_device_plugin():
    seen = node_group({**T4_POOL, "amiType": "BOTTLEROCKET_x86_64_NVIDIA", "diskSizeGb": 120})
    [template] = seen.run.of_type(LAUNCH_TEMPLATE)
    volumes = {m["deviceName"]: m["ebs"] for m in template.inputs["blockDeviceMappings"]}
    assert volumes["/dev/xvdb"]["volumeSize"] == 120
    assert "volumeSize" not in volumes["/dev/xvda"]
    assert all(v["encrypted"] == "true" and v["volumeType"] == "gp3" for v in volumes.values())
    assert {r.inputs["amiType"] for r in seen.run.of_type(NODE_GROUP)} == {"BOTTLEROCKET_x86_64_NVIDIA"}
    assert all(not info.needs_device_plugin for info in seen.result.groups)


def test_groups_describe_each_node_group_for_the_kubernetes_side():
    seen = node_group({**T4_POOL, "taints": [{"key": "dedicated", "value": "vision", "effect": "NoSchedule"}]})
    infos = seen.result.groups
    registered = groups_by_name(seen.run)
    assert sorted(i.name for i in infos) == sorted(registered)
    for info in infos:
        registration = registered[info.name]
        assert info.role is Role.GPU and info.pool == "t4" and info.needs_device_plugin
        assert info.zones == (next(z for z, s in SUBNETS.items() if s == registration.inputs["subnetIds"][0]),)
        assert (info.capacity is CapacityType.SPOT) == (registration.inputs["capacityType"] == "SPOT")
        assert dict(info.labels) == registration.inputs["labels"]
        assert [t.effect.value for t in info.taints] == ["NoSchedule", "NoSchedule"]  # Kubernetes spelling
        assert info.taints[0] == GPU_TAINT
        assert (info.gpus_per_node, info.gpu_model) == (1, "nvidia-a10g,nvidia-l4,nvidia-tesla-t4")
        scaling = registration.inputs["scalingConfig"]
        assert (info.min_size, info.max_size) == (scaling["minSize"], scaling["maxSize"])
        assert re.fullmatch(info.autoscaler_group_regex, fake_asg_name(registration))


def test_asg_tags_go_on_each_groups_own_asg_with_deterministic_names():
    first, second = node_group(), node_group()
    names = sorted(r.name for r in first.run.of_type(ASG_TAG))
    assert names == sorted(r.name for r in second.run.of_type(ASG_TAG))
    assert len(names) == len(set(names))
    registered = groups_by_name(first.run)
    for info in first.result.groups:
        asg = fake_asg_name(registered[info.name])
        tags = {
            r.inputs["tag"]["key"]: r.inputs["tag"] for r in first.run.of_type(ASG_TAG) if r.inputs["autoscalingGroupName"] == asg
        }
        expected_labels = {f"k8s.io/cluster-autoscaler/node-template/label/{k}": v for k, v in info.labels.items()}
        assert {k: t["value"] for k, t in tags.items() if "/label/" in k} == expected_labels
        assert tags["k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"]["value"] == "present:NoSchedule"
        assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"]["value"] == "1"
        assert all(t["propagateAtLaunch"] is False for t in tags.values())


def test_depends_on_reaches_the_node_groups():
    def program() -> GpuNodeGroup:
        marker = pulumi.CustomResource("test:index:Marker", "marker", {})
        return GpuNodeGroup("t4", T4_POOL, "ml-dev", ROLE_ARN, SUBNETS, opts=pulumi.ResourceOptions(depends_on=[marker]))

    seen = build(program)
    [marker] = seen.run.of_type("test:index:Marker")
    assert all(marker.urn in r.dependencies for r in seen.run.of_type(NODE_GROUP))


def test_kubernetes_version_is_sent_when_given():
    seen = node_group(kubernetes_version="1.35")
    assert {r.inputs["version"] for r in seen.run.of_type(NODE_GROUP)} == {"1.35"}


# --- GpuNodeGroup: errors (each one clear error, nothing registered) -------------------------------


@pytest.mark.parametrize(
    ("pool", "kwargs", "message"),
    [
        pytest.param(
            {**T4_POOL, "instanceTypes": ["g4dn.xlarge", "g6e.xlarge"]},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.instanceTypes\[1\]: must have the shape of g4dn\.xlarge .*got 'g6e\.xlarge \(4 vCPU, 32768 MiB",
            id="mixed-shapes-name-the-odd-type",
        ),
        pytest.param(
            {**T4_POOL, "instanceTypes": ["m6i.xlarge"]},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.instanceTypes\[0\]: must have at least one whole NVIDIA GPU",
            id="non-gpu-type",
        ),
        pytest.param(
            {**T4_POOL, "instanceTypes": ["g4dn.xlarge", "g99.xlarge"]},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.instanceTypes\[1\]: must be an instance type gpupools knows.*gpupools:catalog\.instanceTypes",
            id="unknown-type-says-how-to-proceed",
        ),
        pytest.param(
            T4_POOL,
            {"subnet_ids_by_zone": {"2a": "subnet-0aaaaaaaaaaaaaaa1"}},
            r"^GpuNodeGroup\(t4\)\.subnet_ids_by_zone\[2a\]: must be an AWS availability zone",
            id="zone-format",
        ),
        pytest.param(
            {**T4_POOL, "zones": ["us-west-2d"]},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.zones\[0\]: must be one of the cluster's zones",
            id="pool-zone-without-subnet",
        ),
        pytest.param(
            {**T4_POOL, "taints": [{"key": "dedicated", "effect": "NoSchedule"}]},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.taints\[0\]\.value: is required",
            id="taint-without-value",
        ),
        pytest.param(
            {**T4_POOL, "taints": [{"key": "dedicated", "value": "", "effect": "NoSchedule"}]},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.taints\[0\]\.value: .*non-empty",
            id="taint-with-empty-value",
        ),
        pytest.param(
            {**T4_POOL, "taints": [{"key": "dedicated", "value": "x", "effect": "NO_SCHEDULE"}]},
            {},
            r"effect: must be one of NoSchedule.*use the Kubernetes spelling 'NoSchedule'",
            id="taint-effect-in-eks-spelling",
        ),
        pytest.param(
            {**T4_POOL, "labels": {"kubernetes.io/role": "gpu"}},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.labels\.kubernetes\.io/role: key must not use a reserved prefix",
            id="reserved-label-prefix",
        ),
        pytest.param(
            {**T4_POOL, "labels": {"eks.amazonaws.com/x": "y"}},
            {},
            r"labels\.eks\.amazonaws\.com/x: key must not use a reserved prefix",
            id="reserved-eks-label-prefix",
        ),
        pytest.param(
            {**T4_POOL, "labels": {"nvidia.com/gpu.present": "false"}},
            {},
            r"labels\.nvidia\.com/gpu\.present: is set by gpupools",
            id="label-gpupools-sets",
        ),
        pytest.param(
            {**T4_POOL, "labels": {f"label{i}": "x" for i in range(40)}},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.labels: labels and taints must fit the 50 tags an Auto Scaling group allows",
            id="more-than-50-asg-tags",
        ),
        pytest.param(
            {**T4_POOL, "labels": {"example.com/" + "k" * 60: "x"}},
            {},
            r"key must be at most 63 characters on EKS",
            id="label-key-too-long-for-eks",
        ),
        pytest.param(
            {**T4_POOL, "maxSize": 2},
            {},
            r"^GpuNodeGroup\(t4\)\.pool\.maxSize: must be >= the number of zones \(3\)",
            id="max-below-zone-count",
        ),
        pytest.param({**T4_POOL, "maxSizee": 2}, {}, r"maxSizee: is not a known key.*did you mean 'maxSize'", id="typo"),
        pytest.param({**T4_POOL, "spotMaxPrice": 0.5}, {}, r"spotMaxPrice: is Azure only", id="azure-only-key"),
        pytest.param(
            T4_POOL,
            {"cluster_name": "ML_dev"},
            r"^GpuNodeGroup\(t4\)\.cluster_name: must be the EKS cluster's name",
            id="cluster-name",
        ),
        pytest.param(
            T4_POOL,
            {"kubernetes_version": "1.20"},
            r"^GpuNodeGroup\(t4\)\.kubernetes_version: must be a Kubernetes minor in standard support",
            id="kubernetes-version",
        ),
        pytest.param(
            T4_POOL,
            {"region": "eu-west-1"},
            r"subnet_ids_by_zone\[us-west-2a\]: must be a zone of the stack's region \(eu-west-1\)",
            id="zone-of-another-region",
        ),
    ],
)
def test_invalid_arguments_raise_one_config_error_and_register_nothing(pool, kwargs, message):
    seen = node_group(pool, **kwargs)
    assert seen.error is not None
    assert re.search(message, str(seen.error)), str(seen.error)
    assert seen.run.registrations == []


def test_a_spec_is_revalidated():
    spec = parse_gpu_pool(T4_POOL, Cloud.AWS, "x")
    seen = node_group(replace(spec, instance_types=("g4dn.xlarge", "g4dn.12xlarge")))
    assert seen.error is not None and "pool.instanceTypes[1]: must have the shape of g4dn.xlarge" in str(seen.error)
    assert seen.run.registrations == []


# --- EksCluster ------------------------------------------------------------------------------------

CLUSTER = {"name": "ml-dev", "kubernetesVersion": "1.35", "zones": ["us-west-2a", "us-west-2b", "us-west-2c"]}


def cluster(**kwargs: Any) -> Seen:
    args: dict[str, Any] = {"cluster": CLUSTER, **kwargs}
    return build(lambda: EksCluster("ml-dev", **args))


def test_control_plane_inputs():
    seen = cluster()
    [control_plane] = seen.run.of_type("eks:index:Cluster")
    inputs = control_plane.inputs
    assert inputs["name"] == "ml-dev"
    assert inputs["version"] == "1.35"
    assert inputs["authenticationMode"] == "API"
    assert inputs["createOidcProvider"] is True
    assert inputs["skipDefaultNodeGroup"] is True
    assert inputs["skipDefaultSecurityGroups"] is True
    assert inputs["endpointPrivateAccess"] is True and inputs["endpointPublicAccess"] is True
    assert inputs["kubernetesServiceIpAddressRange"] == "172.20.0.0/16"
    private = [
        s for s in seen.run.of_type("aws:ec2/subnet:Subnet") if s.inputs["tags"].get("kubernetes.io/role/internal-elb") == "1"
    ]
    assert len(inputs["privateSubnetIds"]) == len(private) == 3


def test_created_network_has_tagged_private_and_public_subnets_and_no_public_ips():
    seen = cluster()
    subnets = seen.run.of_type("aws:ec2/subnet:Subnet")
    public = [s for s in subnets if s.inputs["tags"].get("kubernetes.io/role/elb") == "1"]
    private = [s for s in subnets if s.inputs["tags"].get("kubernetes.io/role/internal-elb") == "1"]
    assert len(public) == len(private) == 3
    assert {s.inputs["availabilityZone"] for s in private} == set(CLUSTER["zones"])
    assert all(s.inputs["mapPublicIpOnLaunch"] is False for s in subnets)
    [vpc] = seen.run.of_type("aws:ec2/vpc:Vpc")
    assert vpc.inputs["cidrBlock"] == "10.40.0.0/16" and vpc.inputs["enableDnsHostnames"] is True


@pytest.mark.parametrize(("nat", "count"), [(NatStrategy.SINGLE, 1), (NatStrategy.ONE_PER_ZONE, 3)])
def test_nat_strategy(nat, count):
    seen = cluster(nat=nat)
    gateways = seen.run.of_type("aws:ec2/natGateway:NatGateway")
    assert len(gateways) == count
    private_tables = [t for t in seen.run.of_type("aws:ec2/routeTable:RouteTable") if "natGatewayId" in t.inputs["routes"][0]]
    assert len(private_tables) == 3
    assert len({t.inputs["routes"][0]["natGatewayId"] for t in private_tables}) == count


def test_bring_your_own_vpc_creates_no_network():
    seen = cluster(network={"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": list(SUBNETS.values())})
    assert seen.error is None
    assert not seen.run.of_type("aws:ec2/vpc:Vpc") and not seen.run.of_type("aws:ec2/subnet:Subnet")
    [control_plane] = seen.run.of_type("eks:index:Cluster")
    assert control_plane.inputs["vpcId"] == "vpc-0123456789abcdef0"
    assert control_plane.inputs["privateSubnetIds"] == list(SUBNETS.values())
    [system] = seen.run.of_type(NODE_GROUP)
    assert system.inputs["subnetIds"] == list(SUBNETS.values())
    assert seen.result.private_subnet_ids_by_zone.keys() == SUBNETS.keys()


def test_zones_default_to_the_regions_first_three():
    seen = cluster(cluster={"name": "ml-dev"})
    subnets = seen.run.of_type("aws:ec2/subnet:Subnet")
    assert sorted({s.inputs["availabilityZone"] for s in subnets}) == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert seen.result.zones == ("us-west-2a", "us-west-2b", "us-west-2c")
    assert any(token == "aws:index/getAvailabilityZones:getAvailabilityZones" for token, _ in seen.run.invokes)


def test_node_role_policies_and_access_entry():
    seen = cluster()
    [role] = [r for r in seen.run.of_type("aws:iam/role:Role") if r.name.endswith("-node-role")]
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"] == [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}}]
    attached = sorted(
        r.inputs["policyArn"]
        for r in seen.run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.inputs["role"] == role.name
    )
    managed = (
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonSSMManagedInstanceCore",
    )
    assert attached == sorted(f"arn:aws:iam::aws:policy/{p}" for p in managed)
    [entry] = seen.run.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["type"] == "EC2_LINUX"
    assert entry.inputs["clusterName"] == "ml-dev"
    assert entry.inputs["principalArn"] == f"arn:aws:iam::{fakes.ACCOUNT}:role/{role.name}"
    [control_plane] = seen.run.of_type("eks:index:Cluster")
    assert control_plane.urn in entry.dependencies


def test_system_node_group_is_on_demand_standard_al2023_and_waits_for_the_access_entry():
    seen = cluster(system_pool={"instanceTypes": ["m6i.xlarge", "m7i.xlarge"], "minSize": 3, "maxSize": 6})
    [system] = seen.run.of_type(NODE_GROUP)
    inputs = system.inputs
    assert inputs["capacityType"] == "ON_DEMAND"
    assert inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert inputs["instanceTypes"] == ["m6i.xlarge", "m7i.xlarge"]
    assert inputs["scalingConfig"] == {"minSize": 3, "maxSize": 6, "desiredSize": 3}
    assert inputs["labels"] == {
        "gpupools.io/pool": "system",
        "gpupools.io/role": "system",
        "gpupools.io/capacity-type": "on-demand",
    }
    assert not inputs.get("taints")
    assert inputs["version"] == "1.35"
    assert system.ignore_changes == ["scalingConfig.desiredSize"]
    assert len(inputs["subnetIds"]) == 3
    [entry] = seen.run.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.urn in system.dependencies
    info = seen.result.system_pool
    assert info.role is Role.SYSTEM and info.name == inputs["nodeGroupName"]
    assert re.fullmatch(info.autoscaler_group_regex, fake_asg_name(system))


def test_kubeconfig_is_secret_and_the_provider_has_a_cluster_identifier():
    seen = build(lambda: pulumi.export("kubeconfig", EksCluster("ml-dev", CLUSTER).kubeconfig))
    assert seen.run.secret_outputs == ["kubeconfig"]
    assert json.loads(seen.run.outputs["kubeconfig"])["users"][0]["user"]["exec"]["command"] == "aws"
    [provider] = seen.run.of_type("pulumi:providers:kubernetes")
    assert "kubeconfig" in provider.secret_paths
    assert provider.inputs["clusterIdentifier"].startswith("https://oidc.eks.")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cluster": {"name": "ML"}}, r"^EksCluster\(ml-dev\)\.cluster\.name: must be lowercase"),
        ({"cluster": {"name": "ml-dev", "zones": ["us-west-2a"]}}, r"cluster\.zones: EKS needs subnets in at least 2 zones"),
        (
            {"cluster": {"name": "ml-dev", "zones": ["west-2a", "west-2b"]}},
            r"cluster\.zones\[0\]: must be an AWS availability zone",
        ),
        ({"network": {"cidr": "172.20.0.0/16"}}, r"network\.cidr: must not overlap 172\.20\.0\.0/16"),
        ({"network": {"vpcId": "vpc-0123456789abcdef0"}}, r"network\.privateSubnetIds: vpcId and privateSubnetIds go together"),
        ({"system_pool": {"instanceTypes": ["g5.xlarge"]}}, r"system_pool\.instanceTypes\[0\]: must not be a GPU type"),
        ({"system_pool": {"spot": True}}, r"system_pool\.spot: is not allowed"),
    ],
)
def test_invalid_cluster_arguments_register_nothing(kwargs, message):
    seen = cluster(**kwargs)
    assert seen.error is not None and re.search(message, str(seen.error)), str(seen.error)
    assert seen.run.registrations == []


# --- ClusterAutoscaler -----------------------------------------------------------------------------

OIDC_URL = "https://oidc.eks.us-west-2.amazonaws.com/id/ABC123"
OIDC_ARN = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABC123"


def autoscaler(**kwargs: Any) -> Seen:
    args: dict[str, Any] = {
        "cluster_name": "ml-dev",
        "region": "us-west-2",
        "kubernetes_version": "1.35",
        "oidc_provider_arn": OIDC_ARN,
        "oidc_provider_url": OIDC_URL,
        **kwargs,
    }
    return build(lambda: ClusterAutoscaler("cluster-autoscaler", **args))


def release(seen: Seen) -> Registration:
    [registration] = seen.run.of_type("kubernetes:helm.sh/v3:Release")
    return registration


def test_irsa_role_trusts_only_the_autoscaler_service_account():
    seen = autoscaler()
    [role] = seen.run.of_type("aws:iam/role:Role")
    [statement] = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Federated": OIDC_ARN}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {
        "StringEquals": {
            "oidc.eks.us-west-2.amazonaws.com/id/ABC123:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
            "oidc.eks.us-west-2.amazonaws.com/id/ABC123:aud": "sts.amazonaws.com",
        }
    }


@pytest.mark.parametrize("minor", sorted(CLUSTER_AUTOSCALER_IMAGE_TAGS))
def test_chart_and_image_are_pinned_with_the_image_minor_matching_the_cluster(minor):
    inputs = release(autoscaler(kubernetes_version=minor)).inputs
    assert inputs["chart"] == "cluster-autoscaler"
    assert inputs["version"] == CLUSTER_AUTOSCALER_CHART_VERSION
    assert inputs["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert re.fullmatch(rf"v{re.escape(minor)}\.\d+", inputs["values"]["image"]["tag"])


def test_helm_values_render_the_flags():
    seen = autoscaler(autoscaler=AutoscalerSpec(max_node_provision_time="7m", scale_down_unneeded_time="12m"))
    values = release(seen).inputs["values"]
    assert values["cloudProvider"] == "aws" and values["awsRegion"] == "us-west-2"
    assert values["autoDiscovery"] == {"clusterName": "ml-dev"}
    flags = rendered_flags(values)
    assert "--expander=priority,least-waste" in flags
    assert "--balance-similar-node-groups=true" in flags
    assert "--skip-nodes-with-system-pods=false" in flags
    assert "--max-node-provision-time=7m" in flags
    assert "--scale-down-unneeded-time=12m" in flags
    # --balancing-label replaces every other similarity check and "cannot be combined with
    # --balancing-ignore-label" (kubernetes/autoscaler cluster-autoscaler/config/flags/flags.go).
    balancing = sorted(f.split("=", 1)[1] for f in flags if f.startswith("--balancing-label="))
    assert balancing == ["gpupools.io/capacity-type", "gpupools.io/pool"]
    assert not [f for f in flags if f.startswith("--balancing-ignore-label")]
    assert "expanderPriorities" not in values
    assert values["priorityClassName"] == "system-cluster-critical"
    assert values["nodeSelector"] == {"gpupools.io/role": "system"}
    assert values["resources"]["requests"] == {"cpu": "100m", "memory": "600Mi"}
    assert "containerSecurityContext" not in values and "securityContext" not in values
    service_account = values["rbac"]["serviceAccount"]
    assert service_account["create"] is True and service_account["name"] == "cluster-autoscaler"
    [role] = seen.run.of_type("aws:iam/role:Role")
    assert service_account["annotations"] == {"eks.amazonaws.com/role-arn": f"arn:aws:iam::{fakes.ACCOUNT}:role/{role.name}"}
    assert release(seen).inputs["namespace"] == "kube-system"


def test_rendered_flags_follow_the_charts_underscore_rule():
    flags = rendered_flags({"extraArgs": {"balancing-ignore-label_2": "b", "balancing-ignore-label_1": "a", "v": 4, "x": None}})
    assert flags == ["--balancing-ignore-label=a", "--balancing-ignore-label=b", "--v=4", "--x"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"kubernetes_version": "1.29"},
            r"^ClusterAutoscaler\(cluster-autoscaler\)\.kubernetes_version: must be a minor with a pinned",
        ),
        ({"region": "us-west-2a"}, r"\.region: must be the cluster's AWS region"),
        ({"cluster_name": "Bad_Name"}, r"\.cluster_name: must be the EKS cluster's name"),
        (
            {"autoscaler": AutoscalerSpec(max_node_provision_time="600s")},
            r"\.autoscaler\.maxNodeProvisionTime: must be whole minutes",
        ),
    ],
)
def test_invalid_autoscaler_arguments_register_nothing(kwargs, message):
    seen = autoscaler(**kwargs)
    assert seen.error is not None and re.search(message, str(seen.error)), str(seen.error)
    assert seen.run.registrations == []
