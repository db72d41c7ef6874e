"""The preflight's ``reservation-grant`` rows (issue 28, review M9): the Contributor grant AKS needs
for the cluster's user-assigned identity on each Capacity Reservation Group's resource group, and
whether it is old enough to have propagated.

AKS "Assign capacity reservation groups to AKS node pools" (learn.microsoft.com
``aks/use-capacity-reservation-groups``, prerequisites): the cluster needs "a user-assigned managed
identity with the Contributor role for the resource group containing the capacity reservation
group", and "It can take up to 60 minutes for the role assignment to propagate". The answers are
the real ``azure-mgmt-*`` clients' against ARM bodies shaped as the REST reference shows them
(``tests/arm_fakes.py``): "User Assigned Identities - Get" (2023-01-31 ``IdentityGet.json``) and
"Role Assignments - List For Scope" (2022-04-01, with the read-only ``createdOn``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from gpupools.preflight.azure import (
    CONTRIBUTOR_ROLE,
    IDENTITY_API_VERSION,
    OWNER_ROLE,
    AzurePreflight,
    control_plane_identity_name,
    resource_group_name,
)
from gpupools.preflight.report import GRANT_PROPAGATION, Check, CheckKind, Status, exit_status
from gpupools.preflight.stack import Target
from gpupools.specs import ReservationSpec
from gpupools.testing import PROJECT_ROOT

from tests.arm_fakes import (
    GROUP_ASSIGNMENTS_PATH,
    IDENTITY_PATH,
    SUBSCRIPTION,
    ArmAdapter,
    FakeCredential,
    role_assignment,
    route_identity,
)
from tests.test_preflight_azure import azure_dev
from tests.test_preflight_reservations import CRG, NOW, RG, with_reservations

PRINCIPAL = "25cc773c-7f05-40fc-a104-32d2300754ad"
"""The control-plane identity's principal: not the caller's (``OBJECT_ID``), so a check that asked
about the caller instead would find nothing."""
OTHER_SUBSCRIPTION = "33333333-3333-3333-3333-333333333333"


def target(*reservations: ReservationSpec) -> Target:
    return with_reservations(azure_dev(), 0, *(reservations or (ReservationSpec(CRG, "1"),)))


def stamp(when: datetime) -> str:
    """``createdOn`` as ARM writes it (ISO 8601, UTC)."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f0Z")


def identity_arm(t: Target, *assignments: dict[str, Any], found: bool = True) -> ArmAdapter:
    name, group = control_plane_identity_name(t), resource_group_name(t)
    return route_identity(ArmAdapter(), name, group, PRINCIPAL, list(assignments), found)


def grant(role: str = CONTRIBUTOR_ROLE, age: timedelta = timedelta(hours=2), **kwargs: Any) -> dict[str, Any]:
    scope = kwargs.pop("scope", f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}")
    return role_assignment(
        role, principal=PRINCIPAL, scope=scope, created_on=stamp(NOW - age), principal_type="ServicePrincipal", **kwargs
    )


def grant_rows(t: Target, arm: ArmAdapter) -> list[Check]:
    return AzurePreflight(t, credential=FakeCredential(), transport=arm.transport()).reservation_grants(now=NOW)


def test_identity_name_is_the_one_the_stack_creates() -> None:
    snapshot = json.loads((PROJECT_ROOT / "tests/snapshots/azure-dev.json").read_text())
    [identity] = [r for r in snapshot["resources"] if r["type"] == "azure-native:managedidentity:UserAssignedIdentity"]
    assert identity["inputs"]["resourceName"] == control_plane_identity_name(azure_dev())
    assert identity["inputs"]["resourceGroupName"] == resource_group_name(azure_dev())


def test_an_old_contributor_grant_is_green() -> None:
    [row] = grant_rows(target(), identity_arm(target(), grant(age=timedelta(hours=2))))
    assert (row.check, row.pool, row.zone, row.status) == (CheckKind.RESERVATION_GRANT, "t4", "1", Status.OK)
    assert row.found == f"Contributor since {NOW - timedelta(hours=2):%Y-%m-%d %H:%M}Z"
    assert row.needed == f"Contributor for ml-dev-control-plane on {RG}, 60 min old"


def test_exactly_the_propagation_time_is_enough_and_a_minute_less_is_not() -> None:
    [ok] = grant_rows(target(), identity_arm(target(), grant(age=GRANT_PROPAGATION)))
    assert ok.status is Status.OK
    [young] = grant_rows(target(), identity_arm(target(), grant(age=GRANT_PROPAGATION - timedelta(seconds=30))))
    assert young.status is Status.UNKNOWN and "1 more min" in young.found


def test_a_young_grant_is_a_question_with_the_time_left() -> None:
    created = NOW - timedelta(minutes=20)
    [row] = grant_rows(target(), identity_arm(target(), grant(age=timedelta(minutes=20))))
    assert row.status is Status.UNKNOWN
    assert "20 min ago" in row.found and "40 more min" in row.found
    assert f"after {created + timedelta(minutes=60):%H:%M}Z" in row.found
    # A warning: the run passes, --strict fails it (beside a ✓ row: all-? is "nothing answered").
    [ok] = grant_rows(target(), identity_arm(target(), grant()))
    assert exit_status([ok, row]) == 0 and exit_status([ok, row], strict=True) == 1


def test_the_oldest_granting_assignment_counts() -> None:
    arm = identity_arm(target(), grant(age=timedelta(minutes=5)), grant(OWNER_ROLE, age=timedelta(days=3)))
    [row] = grant_rows(target(), arm)
    assert row.status is Status.OK and row.found.startswith("Owner since")


def test_an_inherited_owner_on_the_subscription_counts() -> None:
    """``atScope()`` lists assignments at the scope and above it: Owner on the subscription reaches the group."""
    arm = identity_arm(target(), grant(OWNER_ROLE, scope=f"/subscriptions/{SUBSCRIPTION}"))
    [row] = grant_rows(target(), arm)
    assert row.status is Status.OK and row.found.startswith("Owner since")


@pytest.mark.parametrize(
    "assignments",
    [
        [],
        # Reader (acdd72a7-...) is not enough: AKS names Contributor.
        [grant("acdd72a7-3385-48ef-bd42-f606fba81ae7")],
        # A conditional Contributor is not evaluated here, so it does not count.
        [grant(condition="@Resource[Microsoft.Compute/capacityReservationGroups:name] StringEquals 'x'")],
    ],
    ids=["none", "reader", "conditional"],
)
def test_no_contributor_fails_and_says_what_happens(assignments: list[dict[str, Any]]) -> None:
    [row] = grant_rows(target(), identity_arm(target(), *assignments))
    assert row.status is Status.FAILED
    assert "ml-dev-control-plane holds no Contributor on capacity" in row.found
    assert "same run as the reserved pool" in row.found and "docs/aks.md#reservations" in row.found


def test_before_the_first_up_it_is_a_question_with_the_two_step_path() -> None:
    arm = identity_arm(target(), found=False)
    [row] = grant_rows(target(), arm)
    assert row.status is Status.UNKNOWN
    assert "identity not created yet" in row.found and "before the grant may have propagated" in row.found
    assert "two steps" in row.found
    # Nothing to ask about a principal that does not exist.
    assert not any(p.endswith("/roleAssignments") for _, p, _ in arm.requests_seen)


def test_requests_read_the_stacks_identity_and_the_groups_scope_for_that_principal() -> None:
    arm = identity_arm(target(), grant())
    grant_rows(target(), arm)
    [(_, identity_path, identity_query)] = [r for r in arm.requests_seen if "userAssignedIdentities" in r[1]]
    assert identity_path == (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/ml-dev-rg/providers/Microsoft.ManagedIdentity/"
        "userAssignedIdentities/ml-dev-control-plane"
    )
    assert identity_query["api-version"] == [IDENTITY_API_VERSION]
    [(_, path, query)] = [r for r in arm.requests_seen if r[1].endswith("/roleAssignments")]
    assert path == f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.Authorization/roleAssignments"
    assert query["$filter"] == [f"atScope() and assignedTo('{PRINCIPAL}')"]


def test_a_group_in_another_subscription_is_read_there_once_per_resource_group() -> None:
    elsewhere = CRG.replace(SUBSCRIPTION, OTHER_SUBSCRIPTION)
    second = elsewhere.replace("/gpu-a", "/gpu-b")
    t = target(ReservationSpec(elsewhere, "1"), ReservationSpec(second, "2"))
    arm = identity_arm(t, grant(scope=f"/subscriptions/{OTHER_SUBSCRIPTION}/resourceGroups/{RG}"))
    rows = grant_rows(t, arm)
    assert [(r.zone, r.status) for r in rows] == [("1", Status.OK), ("2", Status.OK)]
    reads = [p for _, p, _ in arm.requests_seen if p.endswith("/roleAssignments")]
    assert reads == [f"/subscriptions/{OTHER_SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.Authorization/roleAssignments"]


def test_denied_reads_are_questions_with_the_reason() -> None:
    denied = (403, {"error": {"code": "AuthorizationFailed", "message": "The client does not have authorization"}})
    arm = identity_arm(target(), grant())
    arm.route("GET", GROUP_ASSIGNMENTS_PATH, denied)
    [row] = grant_rows(target(), arm)
    assert row.status is Status.UNKNOWN and "AuthorizationFailed" in row.found
    arm = ArmAdapter().route("GET", IDENTITY_PATH, denied)
    [row] = grant_rows(target(), arm)
    assert row.status is Status.UNKNOWN and "identity ml-dev-control-plane" in row.found and "AuthorizationFailed" in row.found


def test_no_reservations_no_rows_and_no_calls() -> None:
    arm = ArmAdapter()
    assert grant_rows(azure_dev(), arm) == []
    assert arm.requests_seen == []
