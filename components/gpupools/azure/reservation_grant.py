"""A warning, in the ``up`` itself, when a reserved agent pool is created before its Capacity
Reservation Group grant may have reached AKS.

AKS uses a group for a pool only if the cluster's user-assigned identity holds Contributor on the
group's resource group, "It can take up to 60 minutes for the role assignment to propagate", and a
pool AKS creates without that is created "with a warning and no capacity reservation group gets
associated" (learn.microsoft.com ``aks/use-capacity-reservation-groups``). ``AksCluster`` creates the
grant before the cluster; when the same ``up`` then creates a reserved pool, the pool may come
minutes after the grant. Nothing in the ``up`` fails, so without this the pool would be silently
unreserved.

What the program knows, and when: whether a pool is new is known at program start (the live-count
read of ``gpupools.azure.live_capacity``: no pool, no count). How old the grant is comes from ARM:
a role assignment's read-only ``createdOn`` (Authorization REST API 2022-04-01, ``RoleAssignment``
properties; pulumi-azure-native 3.29 ``authorization.RoleAssignment.created_on``), known once the
grant has been created or read. The pool's create starts once the operation before it in the chain
has finished, so the grant's age is taken then (when ``after``'s ID resolves), which is no later
than the create itself: the warning errs towards being shown. Nothing waits: the two-step path of
docs/aks.md ("The first up with reservations, in two steps") and the preflight's
``reservation-grant`` row are how to avoid the case; this says when it happened.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

import pulumi
from pulumi_azure_native import authorization

from gpupools.preflight.report import GRANT_PROPAGATION


def _utc(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def young_grant_warning(agent_pool_name: str, group_scope: str, created_on: str | None, started: datetime) -> str | None:
    """The warning for a reserved pool whose create started at ``started``, ``created_on`` being its
    grant's ARM ``createdOn``; None when the grant was at least ``GRANT_PROPAGATION`` old then, or
    its creation time is unknown (pure)."""
    if not created_on:
        return None
    age = started - _utc(created_on)
    if age >= GRANT_PROPAGATION:
        return None
    minutes = max(int(age.total_seconds() // 60), 0)
    group = group_scope.rstrip("/").rsplit("/", 1)[-1]
    return (
        f"reserved pool {agent_pool_name}: created {minutes} min after its Capacity Reservation Group grant "
        f"(Contributor on resource group {group}); AKS may take up to 60 min to see a grant and creates the pool "
        "without the group until then. Check that AKS associated it (az aks nodepool show ... --query "
        "capacityReservationGroupId); docs/aks.md, Reservations: the first up with reservations, in two steps"
    )


def warn_if_created_before_propagation(
    agent_pool: pulumi.CustomResource,
    agent_pool_name: str,
    grant: authorization.RoleAssignment,
    group_scope: str,
    after: pulumi.Resource | None,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> None:
    """Log ``young_grant_warning`` on ``agent_pool`` once it exists. Call only for a pool this
    ``up`` creates (no live count at program start)."""
    if isinstance(after, pulumi.CustomResource):
        started: pulumi.Output[datetime] = after.id.apply(lambda _: now())
    else:
        started = pulumi.Output.from_input(now())

    def log(values: list[object]) -> None:
        created_on, start = values[0], values[1]
        if not isinstance(start, datetime):
            return
        message = young_grant_warning(agent_pool_name, group_scope, created_on if isinstance(created_on, str) else None, start)
        if message:
            pulumi.log.warn(message, resource=agent_pool)

    pulumi.Output.all(grant.created_on, started, agent_pool.id).apply(log)
