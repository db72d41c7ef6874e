"""Pure EKS decisions: node group names, ASG regexes, size splits, subnet layout, scale-from-zero tags."""

from __future__ import annotations

import ipaddress
import re
import uuid

import pytest
from gpupools.aws import naming
from gpupools.aws.asg_tags import node_template_tags
from gpupools.aws.network import plan_subnets
from gpupools.aws.node_group import plan_gpu_groups, split
from gpupools.config import parse_gpu_pool
from gpupools.conventions import GPU_TAINT, CapacityType, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.specs import Cloud
from hypothesis import given
from hypothesis import strategies as st

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
CREATE_ONLY = {"instanceTypes": ["g4dn.xlarge", "g5.xlarge"], "amiType": "AL2023_x86_64_NVIDIA"}

cluster_names = st.from_regex(r"[a-z][a-z0-9-]{0,18}[a-z0-9]", fullmatch=True)
pool_names = st.from_regex(r"[a-z][a-z0-9]{0,15}", fullmatch=True)
zones = st.from_regex(
    r"(us|eu|ap|ca|sa|me|af|il)(-gov)?-(east|west|central|north|south|southeast|northeast)-[1-9][a-f]", fullmatch=True
)


def pool(**overrides: object):
    raw = {"name": "t4", "instanceTypes": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"], "maxSize": 6, **overrides}
    return parse_gpu_pool(raw, Cloud.AWS, "pool")


# --- names -----------------------------------------------------------------------------------------


@given(cluster_names, pool_names, st.sampled_from(list(CapacityType)), zones)
def test_gpu_node_group_names_fit_eks_and_carry_the_capacity_token(cluster, pool_name, capacity, zone):
    name = naming.gpu_node_group_name(cluster, pool_name, capacity, zone, CREATE_ONLY)
    assert len(name) <= 63
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", name)
    token = {CapacityType.SPOT: "-spot-", CapacityType.ON_DEMAND: "-od-", CapacityType.RESERVED: "-rsv-"}[capacity]
    assert f"{cluster}-{pool_name}{token}{zone[-1]}-" in name


def test_the_digest_changes_with_every_create_only_field_and_only_with_them():
    base = naming.gpu_node_group_name("ml-dev", "t4", CapacityType.SPOT, "us-west-2a", CREATE_ONLY)
    assert base == naming.gpu_node_group_name(
        "ml-dev", "t4", CapacityType.SPOT, "us-west-2a", dict(reversed(CREATE_ONLY.items()))
    )
    changed = [
        naming.gpu_node_group_name(
            "ml-dev", "t4", CapacityType.SPOT, "us-west-2a", {**CREATE_ONLY, "instanceTypes": ["g4dn.xlarge"]}
        ),
        naming.gpu_node_group_name(
            "ml-dev", "t4", CapacityType.SPOT, "us-west-2a", {**CREATE_ONLY, "amiType": "BOTTLEROCKET_x86_64_NVIDIA"}
        ),
        # Same zone letter, other region: the full zone name is in the digest.
        naming.gpu_node_group_name("ml-dev", "t4", CapacityType.SPOT, "us-east-1a", CREATE_ONLY),
    ]
    assert all(name != base for name in changed)
    assert len(set(changed)) == len(changed)


def test_spot_and_on_demand_groups_never_share_a_name():
    spot = naming.gpu_node_group_name("ml-dev", "t4", CapacityType.SPOT, "us-west-2a", CREATE_ONLY)
    od = naming.gpu_node_group_name("ml-dev", "t4", CapacityType.ON_DEMAND, "us-west-2a", CREATE_ONLY)
    assert spot != od
    assert "-spot-" in spot and "-od-" in od


def test_a_name_over_63_characters_is_a_config_error_naming_the_path():
    with pytest.raises(ConfigError, match=r"^GpuNodeGroup\(x\)\.pool\.name: .*at most 63"):
        naming.gpu_node_group_name("c" * 40, "p" * 20, CapacityType.SPOT, "us-west-2a", CREATE_ONLY, "GpuNodeGroup(x).pool.name")


@given(cluster_names, pool_names, zones, st.uuids())
def test_asg_regex_matches_the_asg_eks_creates_and_not_its_siblings(cluster, pool_name, zone, asg_uuid):
    spot = naming.gpu_node_group_name(cluster, pool_name, CapacityType.SPOT, zone, CREATE_ONLY)
    od = naming.gpu_node_group_name(cluster, pool_name, CapacityType.ON_DEMAND, zone, CREATE_ONLY)
    spot_regex, od_regex = naming.asg_name_regex(spot), naming.asg_name_regex(od)
    assert re.search(spot_regex, f"eks-{spot}-{asg_uuid}")
    assert not re.search(spot_regex, f"eks-{od}-{asg_uuid}")
    assert not re.search(od_regex, f"eks-{spot}-{asg_uuid}")
    # Anchored: a longer group name starting with this one does not match.
    assert not re.search(spot_regex, f"eks-{spot}-x-{asg_uuid}")


def test_asg_regex_is_go_re2_compatible():
    regex = naming.asg_name_regex("ml-dev-t4-spot-a-1f3c")
    assert not re.search(r"\(\?[=!<]|\\[1-9]", regex)
    assert re.fullmatch(regex, f"eks-ml-dev-t4-spot-a-1f3c-{uuid.uuid4()}")


# --- sizes -----------------------------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=2000), st.integers(min_value=1, max_value=6))
def test_split_sums_to_the_total_and_gives_the_remainder_to_the_first_zones(total, parts):
    shares = split(total, parts)
    assert sum(shares) == total
    assert len(shares) == parts
    assert shares == sorted(shares, reverse=True)
    assert max(shares) - min(shares) <= 1


def test_pool_sizes_are_split_per_zone_with_on_demand_min_zero():
    plans = plan_gpu_groups(pool(minSize=4, maxSize=7, onDemandMaxSize=4), "ml-dev", ZONES)
    spot = [p for p in plans if p.capacity is CapacityType.SPOT]
    od = [p for p in plans if p.capacity is CapacityType.ON_DEMAND]
    assert [p.zone for p in spot] == list(ZONES) == [p.zone for p in od]
    assert [(p.min_size, p.max_size) for p in spot] == [(2, 3), (1, 2), (1, 2)]
    assert [(p.min_size, p.max_size) for p in od] == [(0, 2), (0, 1), (0, 1)]


def test_an_on_demand_only_pool_gets_one_on_demand_group_per_zone():
    plans = plan_gpu_groups(pool(spot=False, minSize=3), "ml-dev", ZONES)
    assert [(p.capacity, p.zone, p.min_size) for p in plans] == [(CapacityType.ON_DEMAND, z, 1) for z in ZONES]


def test_without_fallback_only_spot_groups():
    plans = plan_gpu_groups(pool(onDemandFallback=False), "ml-dev", ZONES)
    assert {p.capacity for p in plans} == {CapacityType.SPOT}
    assert len(plans) == 3


def test_pool_zones_win_over_the_cluster_zones():
    plans = plan_gpu_groups(pool(zones=["us-west-2b"], maxSize=2), "ml-dev", ZONES)
    assert {p.zone for p in plans} == {"us-west-2b"}


# --- subnets ---------------------------------------------------------------------------------------


@given(
    st.integers(min_value=16, max_value=22),
    st.integers(min_value=1, max_value=6),
)
def test_subnets_are_disjoint_inside_the_vpc_and_private_ones_are_larger(prefix, zone_count):
    cidr = f"10.40.0.0/{prefix}"
    plan = plan_subnets(cidr, zone_count)
    vpc = ipaddress.ip_network(cidr)
    nets = [ipaddress.ip_network(c) for c in plan.private + plan.public]
    assert len(plan.private) == len(plan.public) == zone_count
    assert all(n.subnet_of(vpc) for n in nets)  # type: ignore[arg-type]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])
    assert all(n.prefixlen <= 28 for n in nets)
    assert min(ipaddress.ip_network(c).num_addresses for c in plan.private) >= max(
        ipaddress.ip_network(c).num_addresses for c in plan.public
    )


def test_a_slash_16_over_three_zones():
    plan = plan_subnets("10.40.0.0/16", 3)
    assert plan.private == ("10.40.0.0/18", "10.40.64.0/18", "10.40.128.0/18")
    assert plan.public == ("10.40.192.0/20", "10.40.208.0/20", "10.40.224.0/20")


# --- scale-from-zero tags --------------------------------------------------------------------------


def test_node_template_tags_use_kubernetes_effect_names_and_the_gpu_resource():
    extra = Taint("dedicated", "training", TaintEffect.PREFER_NO_SCHEDULE)
    tags = {t.tag_key: t.value for t in node_template_tags({"team": "vision"}, (GPU_TAINT, extra), 4)}
    assert tags == {
        "k8s.io/cluster-autoscaler/node-template/label/team": "vision",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "present:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/taint/dedicated": "training:PreferNoSchedule",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "4",
    }


def test_no_gpu_resource_tag_without_gpus():
    tags = node_template_tags({"gpupools.io/role": "system"}, (), 0)
    assert [t.kind for t in tags] == ["label"]
