"""The node network of an AKS cluster: a VNet and one node subnet.

With Azure CNI Overlay (what ``AksCluster`` configures) pods take their IPs from the overlay pod
CIDR, not from the subnet, so the node subnet only needs one IP per node. The VNet gets the whole
``gpupools:network.cidr``; the node subnet is its first half, which leaves the second half free for
private endpoints, a firewall or a bastion added later without renumbering.

The subnet is a standalone ``network.Subnet`` and the VNet declares no ``subnets``: since network
API 2023-11-01 (azure-native v3 uses 2024-05-01) a VNet PUT without ``subnets`` keeps the existing
ones, so updating the VNet (tags, say) never deletes the node subnet under a running cluster.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import network

NODE_SUBNET_NAME = "nodes"


def node_subnet_prefix(cidr: str) -> str:
    """The first half of ``cidr`` (``10.40.0.0/16`` -> ``10.40.0.0/17``): the node subnet.

    ``cidr`` is already validated (private IPv4, /16 to /22), so the subnet holds at least 510 nodes.
    """
    parent = ipaddress.ip_network(cidr, strict=True)
    return str(next(parent.subnets(prefixlen_diff=1)))


@dataclass(frozen=True)
class NodeNetwork:
    """The created network: the VNet and the node subnet (whose ``id`` the pools use)."""

    vnet: network.VirtualNetwork
    subnet: network.Subnet


def create_node_network(
    name: str,
    *,
    cluster_name: str,
    cidr: str,
    resource_group_name: pulumi.Input[str],
    location: pulumi.Input[str] | None,
    parent: pulumi.Resource,
) -> NodeNetwork:
    """Create ``<cluster>-vnet`` over ``cidr`` with the ``nodes`` subnet, as children of ``parent``."""
    child = pulumi.ResourceOptions(parent=parent)
    vnet = network.VirtualNetwork(
        f"{name}-vnet",
        virtual_network_name=f"{cluster_name}-vnet",
        resource_group_name=resource_group_name,
        location=location,
        address_space=network.AddressSpaceArgs(address_prefixes=[cidr]),
        opts=child,
    )
    subnet = network.Subnet(
        f"{name}-nodes",
        subnet_name=NODE_SUBNET_NAME,
        virtual_network_name=vnet.name,
        resource_group_name=resource_group_name,
        address_prefix=node_subnet_prefix(cidr),
        opts=child,
    )
    return NodeNetwork(vnet=vnet, subnet=subnet)
