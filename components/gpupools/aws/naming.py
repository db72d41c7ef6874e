"""EKS managed node group names, and the Auto Scaling group names cluster-autoscaler sees.

EKS cannot change a managed node group's instance types, capacity type, AMI type, subnets or node
role in place: Pulumi has to replace the group. A replacement that keeps the name fails (the
default create-before-destroy creates the new group under a name that is still taken), and
``delete_before_replace`` would drain every node of the group before its successor exists. So the
node group name carries a digest of exactly those create-only values::

    <cluster>-<pool>-<spot|od>-<zone letter>-<4 hex>     e.g. ml-dev-t4-spot-a-3f9c
    <cluster>-<pool>-rsv-<zone letter>-<4 hex>           a group in a capacity reservation
    <cluster>-system-<4 hex>                              e.g. ml-dev-system-81c2

A reserved group's digest also covers its reservation ID and, for a Capacity Block, its EKS capacity
type ``CAPACITY_BLOCK``, so two reservations of one pool in one zone get two names, and moving a
group to another reservation replaces it.

A change to a create-only value yields a new name: Pulumi creates the new group next to the old one
and deletes the old one afterwards, with no manual steps. Anything EKS updates in place (sizes,
labels, taints, the launch template version that carries the disk size) keeps the name.

The node role ARN is create-only too, but it is usually an output (unknown at preview), so it is not
part of the digest: to move a pool to a new node role, rename the pool.

The zone appears as its letter (``a`` for ``us-west-2a``): one cluster lives in one region, so the
letter is unique, and it keeps every name within EKS's 63 characters whatever the region is called
(20 for the cluster, 16 for the pool, 4 for the capacity token, 1 for the zone, 4 for the digest and
4 separators: 49).

Everything here is pure and deterministic (SHA-256 over canonical JSON, never random or time), so
the same config always yields the same names, in previews, on every machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Mapping

from gpupools.conventions import CapacityType
from gpupools.errors import ConfigError

DIGEST_LENGTH = 4
"""Hex characters of the create-only digest: 65,536 values, plenty for the handful of generations
a node group goes through, and short enough to leave room for readable cluster and pool names."""

NODE_GROUP_NAME_MAX = 63
"""EKS ``CreateNodegroup``: node group names are 1-63 characters."""

NODE_GROUP_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*[a-z0-9]\Z")
"""What gpupools generates: lowercase letters, digits and '-' (EKS also allows upper case and '_',
which the ASG regex below would have to escape)."""

CAPACITY_TOKEN = {CapacityType.SPOT: "spot", CapacityType.ON_DEMAND: "od", CapacityType.RESERVED: "rsv"}
"""The capacity token in every GPU node group name, so the Spot, on-demand and reserved groups of
one pool never share a name, and a human reading an ASG list sees which is which."""

EKS_CAPACITY_TYPE = {CapacityType.SPOT: "SPOT", CapacityType.ON_DEMAND: "ON_DEMAND", CapacityType.RESERVED: "ON_DEMAND"}
"""The EKS API spelling of each capacity type (``capacityType`` of ``CreateNodegroup``). A group in
an On-Demand Capacity Reservation is an ``ON_DEMAND`` group whose launch template targets the
reservation; a Capacity Block's group is ``CAPACITY_BLOCK`` instead (``EKS_CAPACITY_BLOCK``)."""

EKS_CAPACITY_BLOCK = "CAPACITY_BLOCK"
"""``capacityType`` of a managed node group in a Capacity Block for ML (botocore ``eks`` model,
``CapacityTypes``: ``ON_DEMAND | SPOT | CAPACITY_BLOCK``). pulumi-aws's docstring lists only
``ON_DEMAND`` and ``SPOT``, but the provider it bridges validates ``capacity_type`` against the AWS
SDK's whole enum (hashicorp/terraform-provider-aws ``internal/service/eks/node_group.go``:
``enum.Validate[types.CapacityTypes]()``)."""

ASG_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
"""The node group UUID EKS appends to a managed node group's Auto Scaling group name."""


def create_only_digest(values: Mapping[str, Any]) -> str:
    """The first ``DIGEST_LENGTH`` hex characters of the SHA-256 of ``values`` as canonical JSON.

    Keys are sorted and separators fixed, so dict order never changes the digest; only values do.
    """
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_LENGTH]


def zone_token(zone: str) -> str:
    """The zone's letter: ``us-west-2a`` -> ``a``."""
    return zone[-1]


def _checked(name: str, path: str) -> str:
    if len(name) > NODE_GROUP_NAME_MAX or not NODE_GROUP_NAME.match(name):
        raise ConfigError(
            path,
            f"the node group name must be at most {NODE_GROUP_NAME_MAX} lowercase letters, digits or '-' "
            "(shorten the cluster or pool name)",
            name,
        )
    return name


def gpu_node_group_name(
    cluster: str,
    pool: str,
    capacity: CapacityType,
    zone: str,
    create_only: Mapping[str, Any],
    path: str = "name",
) -> str:
    """``<cluster>-<pool>-<spot|od>-<zone letter>-<digest>``.

    Args:
        cluster: the EKS cluster name.
        pool: the ``gpuPools`` entry name.
        capacity: Spot, on-demand or reserved.
        zone: the availability zone name (``us-west-2a``); its letter is used, the full name is
            part of the digest.
        create_only: every value EKS cannot change in place (instance types, AMI type, subnet or
            zone, a reserved group's reservation), keyed by its API name; a ``capacityType`` here
            (``CAPACITY_BLOCK``) replaces the one ``capacity`` spells.
        path: the argument path named in a ``ConfigError``.
    """
    digest = create_only_digest({"capacityType": EKS_CAPACITY_TYPE[capacity], **create_only, "zone": zone})
    return _checked(f"{cluster}-{pool}-{CAPACITY_TOKEN[capacity]}-{zone_token(zone)}-{digest}", path)


def system_node_group_name(cluster: str, create_only: Mapping[str, Any], path: str = "name") -> str:
    """``<cluster>-system-<digest>`` for the on-demand system node group."""
    return _checked(f"{cluster}-system-{create_only_digest(create_only)}", path)


def asg_name_regex(node_group_name: str) -> str:
    """An anchored regex for the Auto Scaling group EKS creates for ``node_group_name``.

    EKS names it ``eks-<node group name>-<node group UUID>``; cluster-autoscaler's priority expander
    matches its regexes against that name. The node group name is matched exactly (it holds only
    characters that are literal in a regex), so the regexes of two groups never overlap: the UUID
    part cannot absorb another group's name suffix because it must be a whole UUID.
    """
    if not NODE_GROUP_NAME.match(node_group_name):
        raise ValueError(f"not a gpupools node group name: {node_group_name!r}")
    return f"^eks-{node_group_name}-{ASG_UUID}$"
