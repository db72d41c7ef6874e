"""The VPC an EKS cluster gets when it does not bring its own: subnet layout (pure) and resources.

Layout (``plan_subnets``): the VPC CIDR is cut into ``2**k`` equal blocks, the smallest ``k`` with
more blocks than zones. Each zone gets one whole block as its private subnet (nodes and pods: the
VPC CNI gives every pod a VPC address, so private subnets get almost all the space), and the last
block is cut again into one small public subnet per zone (NAT gateways and internet-facing load
balancers only). A /16 over 3 zones gives three /18 private subnets (16,379 usable addresses each)
and three /20 public ones.

Routing: public subnets route 0.0.0.0/0 to an internet gateway; private subnets route it to a NAT
gateway, and nothing gets a public IP (``map_public_ip_on_launch`` is off everywhere: the public
subnets hold only NAT gateways, whose Elastic IPs are explicit, and load balancers).

NAT strategy (``NatStrategy``), a cost/availability trade-off:

* ``SINGLE`` (default): one NAT gateway, in the first zone, shared by every private subnet. About
  a third of the fixed cost of three (each NAT gateway is billed per hour, roughly $32/month in
  us-east-1, plus per GB processed, which is the same either way), but traffic from the other zones
  crosses zones (billed per GB), and if that one zone fails, nodes in the others lose egress:
  no image pulls, no new nodes joining. Right for dev stacks and for GPU pools that idle at zero.
* ``ONE_PER_ZONE``: a NAT gateway in every zone, each private subnet routed to its own. Zone
  failures stay in their zone. Right for production.

Switching strategy changes routes and adds or removes NAT gateways; subnets and route tables stay.

Egress is a dependency, not a side effect: ``Network.egress`` lists the internet gateway, the
public routes, the NAT gateways, the private route tables and their associations, and what needs the internet from a private subnet depends on
them, so ``pulumi destroy`` removes it first and the egress last. Without that, nothing depends on
the NAT gateway (only subnet IDs flow out of this module), and destroy deletes it in its first wave,
while controllers on the nodes still need EC2, IAM and SQS: Karpenter removes a NodeClaim's
finalizer only after EC2 reports the instance gone, and an EC2NodeClass's only after it has deleted
its instance profiles through IAM (aws/karpenter-provider-aws v1.14.1
``pkg/controllers/nodeclass/controller.go``; kubernetes-sigs/karpenter
``pkg/controllers/nodeclaim/lifecycle/controller.go``), so their deletes would hang and the
instances keep billing. The same order serves create: nodes in a private subnet join the cluster
and pull images only once the NAT route exists.

Subnet tags: ``kubernetes.io/role/elb=1`` on public subnets and ``kubernetes.io/role/internal-elb=1``
on private ones, which the AWS Load Balancer Controller (and the in-tree service controller) use to
pick subnets for internet-facing and internal load balancers.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpupools.aws.stack_tag import stack_tags
from gpupools.errors import ConfigError

ELB_ROLE_TAG = "kubernetes.io/role/elb"
INTERNAL_ELB_ROLE_TAG = "kubernetes.io/role/internal-elb"


class NatStrategy(str, Enum):
    """How many NAT gateways the private subnets share (see the module docstring for the trade-off)."""

    SINGLE = "single"
    ONE_PER_ZONE = "one-per-zone"


@dataclass(frozen=True)
class SubnetPlan:
    """CIDRs per zone, in zone order."""

    private: tuple[str, ...]
    public: tuple[str, ...]


def plan_subnets(cidr: str, zone_count: int) -> SubnetPlan:
    """Cut ``cidr`` into one large private and one small public subnet per zone (pure).

    Raises:
        ConfigError: fewer than one zone, or subnets that would be smaller than /28 (AWS's minimum).
    """
    if zone_count < 1:
        raise ConfigError("zones", "must hold at least one zone", zone_count)
    network = ipaddress.IPv4Network(cidr, strict=True)
    split = math.ceil(math.log2(zone_count + 1))
    blocks = list(network.subnets(prefixlen_diff=split))
    public_split = math.ceil(math.log2(zone_count)) if zone_count > 1 else 0
    public_prefix = blocks[-1].prefixlen + public_split
    if public_prefix > 28:
        raise ConfigError(
            "network.cidr",
            f"is too small for {zone_count} zones (public subnets would be /{public_prefix}, AWS's smallest is /28)",
            cidr,
        )
    public = list(blocks[-1].subnets(prefixlen_diff=public_split)) if public_split else [blocks[-1]]
    return SubnetPlan(
        private=tuple(str(block) for block in blocks[:zone_count]),
        public=tuple(str(block) for block in public[:zone_count]),
    )


@dataclass
class Network:
    """What the cluster needs from a created VPC.

    Attributes:
        vpc_id: the VPC.
        private_subnet_ids: one per zone, in zone order (nodes and the control plane's ENIs).
        public_subnet_ids: one per zone, in zone order (NAT gateways and public load balancers).
        egress: the internet gateway, the public route table and its associations, the NAT
            gateways, the private route tables and their associations: the private subnets' path to
            the internet. Give it to ``depends_on`` of anything that needs egress
            until it is deleted (module docstring).
    """

    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]
    egress: list[pulumi.Resource] = field(default_factory=list)


def create_network(
    name: str,
    cidr: str,
    zones: Sequence[str],
    nat: NatStrategy,
    parent: pulumi.Resource,
    private_subnet_tags: Mapping[str, str] | None = None,
) -> Network:
    """Create the VPC, subnets, gateways and routes described in the module docstring.

    ``private_subnet_tags`` are added to the private subnets' tags (Karpenter's
    ``karpenter.sh/discovery``); default none. They go in the subnets' own ``tags``, not on separate
    ``aws.ec2.Tag`` resources, which would fight the subnet resource over its tag set."""
    plan = plan_subnets(cidr, len(zones))
    opts = pulumi.ResourceOptions(parent=parent)
    vpc = aws.ec2.Vpc(
        f"{name}-vpc",
        cidr_block=cidr,
        # Both on: EKS private endpoint resolution and node registration need VPC DNS.
        enable_dns_support=True,
        enable_dns_hostnames=True,
        tags={"Name": name, **stack_tags(name)},
        opts=opts,
    )
    igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": name, **stack_tags(name)}, opts=opts)
    public_routes = aws.ec2.RouteTable(
        f"{name}-public",
        vpc_id=vpc.id,
        routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}],
        tags={"Name": f"{name}-public", **stack_tags(name)},
        opts=opts,
    )

    public_subnets: list[aws.ec2.Subnet] = []
    private_subnets: list[aws.ec2.Subnet] = []
    # NAT traffic leaves through the public subnets' route to the internet gateway: egress too.
    egress: list[pulumi.Resource] = [igw, public_routes]
    for zone, private_cidr, public_cidr in zip(zones, plan.private, plan.public, strict=True):
        public_subnet = aws.ec2.Subnet(
            f"{name}-public-{zone}",
            vpc_id=vpc.id,
            cidr_block=public_cidr,
            availability_zone=zone,
            map_public_ip_on_launch=False,
            tags={"Name": f"{name}-public-{zone}", ELB_ROLE_TAG: "1", **stack_tags(name)},
            opts=opts,
        )
        egress.append(
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{zone}", subnet_id=public_subnet.id, route_table_id=public_routes.id, opts=opts
            )
        )
        private_subnet = aws.ec2.Subnet(
            f"{name}-private-{zone}",
            vpc_id=vpc.id,
            cidr_block=private_cidr,
            availability_zone=zone,
            map_public_ip_on_launch=False,
            tags={
                "Name": f"{name}-private-{zone}",
                INTERNAL_ELB_ROLE_TAG: "1",
                **(private_subnet_tags or {}),
                **stack_tags(name),
            },
            opts=opts,
        )
        public_subnets.append(public_subnet)
        private_subnets.append(private_subnet)

    nat_zones = list(zones) if nat is NatStrategy.ONE_PER_ZONE else [zones[0]]
    nat_gateways: dict[str, aws.ec2.NatGateway] = {}
    for zone in nat_zones:
        eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags={"Name": f"{name}-nat-{zone}", **stack_tags(name)}, opts=opts)
        nat_gateways[zone] = aws.ec2.NatGateway(
            f"{name}-nat-{zone}",
            allocation_id=eip.id,
            subnet_id=public_subnets[list(zones).index(zone)].id,
            tags={"Name": f"{name}-nat-{zone}", **stack_tags(name)},
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[igw]),
        )

    egress += nat_gateways.values()
    for zone, private_subnet in zip(zones, private_subnets, strict=True):
        gateway = nat_gateways.get(zone) or nat_gateways[nat_zones[0]]
        private_routes = aws.ec2.RouteTable(
            f"{name}-private-{zone}",
            vpc_id=vpc.id,
            routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": gateway.id}],
            tags={"Name": f"{name}-private-{zone}", **stack_tags(name)},
            opts=opts,
        )
        association = aws.ec2.RouteTableAssociation(
            f"{name}-private-{zone}", subnet_id=private_subnet.id, route_table_id=private_routes.id, opts=opts
        )
        egress += [private_routes, association]

    return Network(
        vpc_id=vpc.id,
        private_subnet_ids=[s.id for s in private_subnets],
        public_subnet_ids=[s.id for s in public_subnets],
        egress=egress,
    )
