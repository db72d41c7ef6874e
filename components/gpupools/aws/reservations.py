"""EC2 capacity reservations on EKS: how a ``gpuPools[].reservations`` entry becomes capacity.

A pool's ``reservations`` (``ReservationSpec``: an ID ``cr-`` + 17 hex digits and a zone) are EC2
On-Demand Capacity Reservations (ODCRs) or Capacity Blocks for ML. Both are paid for whether or
not a node runs in them, so a node in one costs nothing extra per hour, and gpupools uses them
before Spot and on-demand.

**cluster-autoscaler** (``GpuNodeGroup``): one managed node group per reservation, in the
reservation's zone, ranked above the pool's Spot and on-demand groups by the priority expander
(``gpupools.kubernetes.priority_expander``):

* an ODCR: an ``ON_DEMAND`` group whose launch template targets the reservation
  (``capacity_reservation_specification.capacity_reservation_target.capacity_reservation_id``);
* a Capacity Block: a ``CAPACITY_BLOCK`` group (botocore ``eks`` ``CapacityTypes``) whose launch
  template also sets ``instance_market_options.market_type = "capacity-block"``, as the EKS user
  guide requires ("Create a managed node group with Capacity Blocks for ML": such groups "can only
  be created with custom launch templates", ``InstanceMarketOptions.MarketType`` ``capacity-block``
  and ``CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId``).

Which of the two a reservation is cannot be read from its ID (both are ``cr-`` + 17 hex) and
gpupools makes no API call at deploy time, so it is an argument: ``GpuNodeGroup(capacity_blocks=[...])``
lists the reservation IDs that are Capacity Blocks; every other reservation is an ODCR
(``ReservationKind``). In the stack config, ``reservations[].kind: capacityBlock`` says the same
(``ReservationSpec.capacity_block``; default ``odcr``).

Shape of a reserved group, and why:

* **instance type**: the pool's *first* instance type only. A reservation is for exactly one
  instance type, and EC2 launches into it only instances with its attributes (instance type,
  platform, zone, tenancy: EC2 user guide, "Launch instances into an existing Capacity
  Reservation"); cluster-autoscaler builds a group's scale-from-zero template from its first type
  anyway, and the pool's types share vCPUs, memory and GPUs. So the reserved type goes first in
  ``instanceTypes``.
* **sizes**: min 0 (the pool's ``minSize`` stays on Spot), max the reservation's ``count`` (config
  ``reservations[].count``: the instances it holds), so the group, the figures and Kueue's quota
  say what the reservation really is; the pool's ``maxSize`` keeps bounding its Spot and on-demand
  groups. Without ``count`` (configs written before it) the max stays the pool's ``maxSize`` (the
  whole total, not a per-zone share: a reservation lives in one zone; ``ReservationSpec.reserved_max``).
  The reservation itself is the hard bound: a launch that targets a full (or not yet active, or
  expired) reservation fails instead of starting a paid on-demand instance, the Auto Scaling group
  reports the failed scaling activity, and cluster-autoscaler backs the group off and the priority
  expander moves on to Spot (kubernetes/autoscaler PR #4489: failed scaling activities end a
  scale-up early). A max above the reservation's size costs that retry and overstates the figures.
* **labels**: the pool's, with ``gpupools.io/capacity-type=reserved``; the same taints and
  scale-from-zero tags as the pool's other groups.

* **instance type of a Capacity Block group**: in its launch template, none on the group (EKS
  rejects a ``CAPACITY_BLOCK`` ``CreateNodegroup`` otherwise: ``gpupools.aws.launch_template``).

Around a reservation's life:

* **rolls** (a Kubernetes version or launch template change): EKS replaces nodes by launching new
  ones first, which a reservation in use has no room for, so a reserved group's roll is held while
  it runs nodes and sent once it is at zero (``node_group.ROLL_AT_ZERO_PATHS``), with a warning that
  says so.
* **the end of a Capacity Block**: EKS itself adds the scheduled action "Amazon EKS Node Group
  Capacity Scaledown Before Reservation End", 40 minutes before the end, which drains the group
  to 0 before EC2 starts terminating its instances 30 minutes before the end (EKS user guide
  ``ml/capacity-blocks-mng.adoc``: "We recommend not editing or deleting this action"); gpupools
  leaves it alone. Karpenter drains its own nodes 10 minutes before the end (``tasks/odcrs.md``).

**Karpenter** (``KarpenterNodePools``): the pool's NodePool allows ``karpenter.sh/capacity-type``
``reserved`` first (then Spot, then on-demand), and its EC2NodeClass selects the reservations by ID in
``capacityReservationSelectorTerms`` (the pinned v1.14.1 CRD: ``id`` matches ``^cr-[0-9a-z]+$`` and
is exclusive with the other fields of a term; at most 30 terms). Karpenter treats ODCRs and Capacity
Blocks alike there ("Capacity blocks are modeled as on-demand capacity reservations in EC2. To select
capacity blocks, specify them in your ``capacityReservationSelectorTerms`` in the same way",
``website/content/en/docs/tasks/odcrs.md`` at v1.14.1), prefers ``reserved`` over Spot and on-demand
within a NodePool, and labels each node ``karpenter.k8s.aws/capacity-reservation-type`` ``default``
or ``capacity-block``. The ``ReservedCapacity`` feature gate is beta and on by default in v1.14.1
(``charts/karpenter/values.yaml``, ``settings.featureGates.reservedCapacity: true``;
``reference/settings.md``); the chart values set it explicitly when a pool has reservations, so a
later default cannot silently turn reservations off. The NodePool's one limit (``maxSize`` nodes)
bounds reserved, Spot and on-demand nodes together, so ``count`` adds no field there: it enters the
figures only (``gpupools.capacity``: the reservation's nodes first, at most ``count`` and never past
the limit).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import Enum

from gpupools.aws import naming
from gpupools.errors import ConfigError
from gpupools.specs import ReservationSpec


class ReservationKind(str, Enum):
    """What an EC2 capacity reservation is: it decides the node group's capacity type and market type."""

    ODCR = "odcr"
    CAPACITY_BLOCK = "capacityBlock"

    @property
    def eks_capacity_type(self) -> str:
        """``capacityType`` of the managed node group: ``ON_DEMAND`` targeting an ODCR, ``CAPACITY_BLOCK``."""
        return naming.EKS_CAPACITY_BLOCK if self is ReservationKind.CAPACITY_BLOCK else "ON_DEMAND"


def reservation_kind(reservation: ReservationSpec, capacity_blocks: Collection[str]) -> ReservationKind:
    """A Capacity Block if the spec says so (config ``kind: capacityBlock``) or its ID is in
    ``capacity_blocks``, else an ODCR."""
    capacity_block = reservation.capacity_block or reservation.id in capacity_blocks
    return ReservationKind.CAPACITY_BLOCK if capacity_block else ReservationKind.ODCR


def reservation_zone(reservation: ReservationSpec, zones: Sequence[str], path: str) -> str:
    """The zone of a reservation's node group: its own ``zone``, or the pool's only zone.

    Raises:
        ConfigError: no zone and the pool has several, or a zone the pool does not use
            (``rules.check_reservations`` rejects both first; this keeps the resolution total).
    """
    zone = reservation.zone
    if zone is None:
        if len(zones) != 1:
            raise ConfigError(f"{path}.zone", f"is required: the pool has {len(zones)} zones ({', '.join(zones)})", None)
        return zones[0]
    if zone not in zones:
        raise ConfigError(f"{path}.zone", f"must be one of the pool's zones ({', '.join(zones)})", zone)
    return zone


def check_capacity_blocks(reservations: Sequence[ReservationSpec], capacity_blocks: Collection[str], path: str) -> None:
    """Every ID in ``capacity_blocks`` must be one of the pool's reservations (the reservations
    themselves are checked by ``rules.check_reservations``).

    Raises:
        ConfigError: naming the argument.
    """
    ids = [r.id for r in reservations]
    for rid in capacity_blocks:
        if rid not in ids:
            raise ConfigError(
                f"{path}.capacity_blocks", "must list only the pool's own reservation IDs", rid, f"the pool has {ids}"
            )
