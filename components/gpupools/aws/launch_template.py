"""EC2 launch templates for managed node groups: IMDSv2 only, encrypted gp3 disks, no SSH.

EKS merges a managed node group's launch template with its own settings (AMI by ``amiType``,
bootstrap user data, the cluster security group), so the template carries only what gpupools
decides:

* **IMDSv2 required, hop limit 1.** ``http_tokens=required`` refuses IMDSv1's unauthenticated GETs
  (the SSRF credential theft path). A hop limit of 1 means the token response cannot cross the extra
  network hop into a pod's network namespace, so pods cannot fetch the node role's credentials:
  workloads that need AWS use IRSA (a projected service account token exchanged with STS), which
  never touches IMDS. Host-network agents (the VPC CNI, kube-proxy) are on the node's own network
  and unaffected. A pod that genuinely needs instance metadata (say, a controller left without
  ``--aws-region``) has to be configured explicitly instead. This is terraform-aws-eks's default;
  eksctl uses 2 unless ``disablePodIMDS``.
* **Encrypted gp3 volumes.** Encrypted with the account's default EBS key (``aws/ebs`` unless the
  account sets another), gp3 for its baseline 3,000 IOPS and 125 MiB/s at a lower price than gp2,
  deleted with the instance. On AL2023 the root volume ``/dev/xvda`` holds everything, so it gets
  the configured size. Bottlerocket keeps its OS on ``/dev/xvda`` and images, containers and logs on
  the data volume ``/dev/xvdb``, so the data volume gets the configured size and the OS volume keeps
  the AMI's size, but both are encrypted.
* **No SSH.** No key pair and no ``remoteAccess`` on the node group; nodes are reachable through
  SSM Session Manager (the node role carries ``AmazonSSMManagedInstanceCore``).
* No AMI, user data or security groups: EKS supplies them by ``amiType`` and attaches the cluster
  security group, so AMI updates stay EKS-managed.
* **EFA pools** (``efa_interfaces`` > 0, see ``efa_network_interfaces``): one EFA interface per
  EFA-capable network card, the security groups on those interfaces (EKS attaches the cluster
  security group only when the template names none, so the template names it, with the pool's EFA
  group), no public address, and the pool's cluster placement group in ``placement``.

A reserved node group (``reservations``) gets a template of its own: the same settings plus the
reservation it launches into (``capacity_reservation_specification.capacity_reservation_target``),
and for a Capacity Block ``instance_market_options.market_type = "capacity-block"``, which the EKS
user guide requires of a managed node group's launch template for a Capacity Block ("Create a
managed node group with Capacity Blocks for ML": ``InstanceMarketOptions`` with ``MarketType``
``capacity-block`` and ``CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId``;
botocore ``ec2`` model, ``LaunchTemplateInstanceMarketOptionsRequest.MarketType``).

A Capacity Block's template also names the **instance type**, and its node group names none: the
EKS user guide lists ``InstanceType`` among the launch template values a ``CAPACITY_BLOCK`` group
requires ("If the capacity type isn't set to CAPACITY_BLOCK or any of the other above required
launch template values are missing, then the create request will be rejected", ``ml/capacity-blocks-mng``),
and a managed node group may not name instance types in both places ("Customize managed nodes with
launch templates": an instance type in the template means none in ``CreateNodegroup``).
terraform-aws-eks made the same move for the same reason (commit ``ae3379e9``, "ML capacity block
reservation requires instance type to be set on the launch template").

The node group references ``latest_version``: editing the template (say, the disk size) creates a
new version, and EKS rolls the group to it in place (respecting ``update_config``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpupools.aws.stack_tag import stack_tags

IMDS_HOP_LIMIT = 1
"""See the module docstring: pods cannot reach IMDS; IRSA does not need it."""

METADATA_OPTIONS: dict[str, Any] = {
    "http_endpoint": "enabled",
    "http_tokens": "required",
    "http_put_response_hop_limit": IMDS_HOP_LIMIT,
}
"""IMDSv2 only. The endpoint stays enabled: the kubelet and nodeadm read the instance's identity from it."""

ROOT_DEVICE = "/dev/xvda"
BOTTLEROCKET_DATA_DEVICE = "/dev/xvdb"
VOLUME_TYPE = "gp3"


def is_bottlerocket(ami_type: str) -> bool:
    return ami_type.startswith("BOTTLEROCKET_")


def _ebs(size_gb: int | None) -> aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs:
    return aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
        volume_type=VOLUME_TYPE, encrypted="true", delete_on_termination="true", volume_size=size_gb
    )


def block_device_mappings(ami_type: str, disk_size_gb: int) -> list[aws.ec2.LaunchTemplateBlockDeviceMappingArgs]:
    """The volumes for ``ami_type``: AL2023 one root volume of ``disk_size_gb``; Bottlerocket an
    encrypted OS volume at the AMI's size plus a data volume of ``disk_size_gb``."""
    if is_bottlerocket(ami_type):
        return [
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(device_name=ROOT_DEVICE, ebs=_ebs(None)),
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(device_name=BOTTLEROCKET_DATA_DEVICE, ebs=_ebs(disk_size_gb)),
        ]
    return [aws.ec2.LaunchTemplateBlockDeviceMappingArgs(device_name=ROOT_DEVICE, ebs=_ebs(disk_size_gb))]


EFA_INTERFACE_TYPE = "efa"
"""``InterfaceType`` of every EFA interface: EFA with ENA (botocore ec2 ``NetworkInterfaceType``).
The first one is the instance's primary interface, which cannot be EFA-only (EC2 User Guide,
"Maximize network bandwidth on Amazon EC2 instances with multiple network cards"); the others are
EFA with ENA too, as in terraform-aws-eks ``modules/eks-managed-node-group`` (``enable_efa_support``)."""


def efa_network_interfaces(
    count: int, security_group_ids: Sequence[pulumi.Input[str]]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """``count`` EFA interfaces, one per network card: network card 0 at device index 0 (the primary
    interface), every further card at device index 1. Source: Amazon EC2 User Guide, "Maximize
    network bandwidth on Amazon EC2 instances with multiple network cards" ("For the primary network
    interface (network card index 0, device index 0), create an EFA (EFA with ENA) interface ... For
    each additional network interface, use the next unused network card index, device index 1");
    terraform-aws-eks builds the same list (``device_index = idx == 0 ? 0 : 1``).

    No subnet (EKS puts the node in the node group's subnet and rejects a launch template that
    names one: EKS user guide "Customize managed nodes with launch templates"), no public address,
    the interfaces deleted with the instance.
    """
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            device_index=0 if card == 0 else 1,
            network_card_index=card,
            interface_type=EFA_INTERFACE_TYPE,
            security_groups=list(security_group_ids),
            delete_on_termination="true",
            associate_public_ip_address="false",
        )
        for card in range(count)
    ]


CAPACITY_BLOCK_MARKET_TYPE = "capacity-block"
"""``InstanceMarketOptions.MarketType`` of a Capacity Block launch (botocore ``ec2``
``MarketType``: ``spot | capacity-block | interruptible-capacity-reservation | on-demand``)."""


def reservation_options(capacity_reservation_id: str | None, capacity_block: bool) -> dict[str, Any]:
    """The launch template arguments that send a node into ``capacity_reservation_id`` (none without
    one): the reservation as the launch's target, and for a Capacity Block the ``capacity-block``
    market type. A targeted launch uses that reservation or fails: it never becomes a plain
    on-demand instance billed on top. EC2 launches into a reservation only an instance with its
    attributes (instance type, platform, zone, tenancy) while it has available capacity and is
    active (EC2 user guide, "Launch instances into an existing Capacity Reservation")."""
    if capacity_reservation_id is None:
        if capacity_block:
            raise ValueError("a Capacity Block launch template needs the Capacity Block's reservation ID")
        return {}
    options: dict[str, Any] = {
        "capacity_reservation_specification": aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=capacity_reservation_id
            )
        )
    }
    if capacity_block:
        options["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type=CAPACITY_BLOCK_MARKET_TYPE
        )
    return options


def create_launch_template(
    name: str,
    *,
    cluster_name: str,
    ami_type: str,
    disk_size_gb: int,
    tags: Mapping[str, str],
    parent: pulumi.Resource,
    efa_interfaces: int = 0,
    security_group_ids: Sequence[pulumi.Input[str]] = (),
    placement_group_name: pulumi.Input[str] | None = None,
    capacity_reservation_id: str | None = None,
    capacity_block: bool = False,
    instance_type: str | None = None,
) -> aws.ec2.LaunchTemplate:
    """A launch template for one pool's node groups (see the module docstring).

    ``tags`` go on the template and, through ``tag_specifications``, on the instances and volumes;
    the template alone also carries the stack tag of ``cluster_name`` (``stack_tag``), which the
    deployer policy scopes its writes by.
    With ``efa_interfaces`` > 0 the template lists that many EFA interfaces carrying
    ``security_group_ids`` and places instances in ``placement_group_name``.
    ``capacity_reservation_id`` (with ``capacity_block`` for a Capacity Block) makes it the template
    of one reserved node group (``reservation_options``). ``instance_type``: the template's instance
    type, default none (the node group lists its types); a Capacity Block's template must have one
    (``capacity_block_instance_type``).
    """
    if capacity_block and instance_type is None:
        raise ValueError("a Capacity Block launch template needs its instance type (EKS rejects the node group otherwise)")
    if efa_interfaces and not security_group_ids:
        raise ValueError("an EFA launch template needs the security groups for its interfaces")
    tag_map = dict(tags)
    tag_specifications = [
        aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tag_map) for kind in ("instance", "volume")
    ]
    return aws.ec2.LaunchTemplate(
        name,
        description="gpupools managed node group template: IMDSv2 only, encrypted gp3 volumes, no SSH"
        + (f", into capacity reservation {capacity_reservation_id}" if capacity_reservation_id else ""),
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(**METADATA_OPTIONS),
        block_device_mappings=block_device_mappings(ami_type, disk_size_gb),
        update_default_version=True,
        tag_specifications=tag_specifications,
        network_interfaces=efa_network_interfaces(efa_interfaces, security_group_ids) if efa_interfaces else None,
        placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group_name) if placement_group_name else None,
        tags={**tag_map, **stack_tags(cluster_name)},
        instance_type=instance_type,
        **reservation_options(capacity_reservation_id, capacity_block),
        opts=pulumi.ResourceOptions(parent=parent),
    )
