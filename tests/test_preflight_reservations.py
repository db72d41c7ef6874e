"""The preflight's ``reservation`` rows (issue 21).

AWS: moto 5.2 does not implement ``CreateCapacityReservation``/``DescribeCapacityReservations`` (its
server answers 500 "not implemented"), so against moto's server the row must be ``?`` with the
reason; every other case uses botocore's Stubber, which checks each canned answer against the EC2
service model (so ``ReservationType``, ``EndDate`` and the states below are real fields and values).

Azure: the real ``azure-mgmt-compute`` client against recorded ARM bodies (``tests/arm_fakes.py``),
shaped as the REST reference shows "Capacity Reservation Groups - Get" (``$expand=instanceView``)
and "Capacity Reservations - List By Capacity Reservation Group" (api-version of the installed SDK).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from gpupools.aws import deployer_policy
from gpupools.preflight.aws import AwsPreflight, required_actions
from gpupools.preflight.azure import AzurePreflight, reservation_group_parts
from gpupools.preflight.report import RESERVATION_END_WARNING, Check, CheckKind, Status
from gpupools.preflight.stack import Target
from gpupools.specs import ReservationSpec

from tests.arm_fakes import (
    CONTRIBUTOR,
    SUBSCRIPTION,
    ArmAdapter,
    FakeCredential,
    role_assignment,
    route_identity,
)
from tests.test_preflight_aws import StubbedAws, aws_dev, moto_env, moto_server  # noqa: F401 (fixtures)
from tests.test_preflight_azure import azure_dev

NOW = datetime(2026, 11, 24, 20, 0, tzinfo=timezone.utc)
CR = "cr-0123456789abcdef0"
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
BLOCK = ReservationSpec(CR, "us-west-2a", capacity_block=True)


def with_reservations(target: Target, pool_index: int, *reservations: ReservationSpec) -> Target:
    pools = list(target.spec.gpu_pools)
    pools[pool_index] = replace(pools[pool_index], reservations=tuple(reservations))
    return replace(target, spec=replace(target.spec, gpu_pools=tuple(pools)))


# --- AWS -------------------------------------------------------------------------------------------


def aws_target(*reservations: ReservationSpec) -> Target:
    return with_reservations(aws_dev(), 0, *reservations or (ReservationSpec(CR, "us-west-2a"),))


def capacity_reservation(**overrides: Any) -> dict[str, Any]:
    """A ``DescribeCapacityReservations`` entry of a usable ODCR for gpu1 (g4dn/g5/g6.xlarge)."""
    return {
        "CapacityReservationId": CR,
        "InstanceType": "g5.xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-west-2a",
        "Tenancy": "default",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": 2,
        "State": "active",
        "ReservationType": "default",
        "EndDateType": "unlimited",
        "InstanceMatchCriteria": "targeted",
        **overrides,
    }


def aws_rows(target: Target, *answers: dict[str, Any] | tuple[str, str]) -> list[Check]:
    """The reservation rows with each ``DescribeCapacityReservations`` call answered in turn: a dict
    is a reservation, a tuple an error (code, message)."""
    with StubbedAws() as aws:
        reservations = [r for p in target.spec.pools for r in p.reservations]
        for reservation, answer in zip(reservations, answers, strict=True):
            expected = {"CapacityReservationIds": [reservation.id]}
            if isinstance(answer, tuple):
                aws.stubs["ec2"].add_client_error(
                    "describe_capacity_reservations",
                    service_error_code=answer[0],
                    service_message=answer[1],
                    expected_params=expected,
                )
            else:
                aws.stubs["ec2"].add_response("describe_capacity_reservations", {"CapacityReservations": [answer]}, expected)
        checks = AwsPreflight(target, clients=aws).reservations(ZONES, now=NOW)
        aws.done()
    return checks


def test_usable_odcr_is_green_and_shows_what_is_free() -> None:
    [row] = aws_rows(aws_target(), capacity_reservation())
    assert (row.check, row.pool, row.zone, row.status) == (CheckKind.RESERVATION, "gpu1", "us-west-2a", Status.OK)
    assert f"{CR} active default g5.xlarge us-west-2a 2/4 free" == row.found
    assert "g4dn.xlarge/g5.xlarge/g6.xlarge" in row.needed


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"InstanceType": "p5.48xlarge"}, "p5.48xlarge is not one of the pool's types"),
        ({"AvailabilityZone": "us-west-2b"}, "in us-west-2b, not us-west-2a"),
        ({"State": "expired"}, "state expired gives no capacity"),
        ({"State": "cancelled"}, "state cancelled gives no capacity"),
        ({"State": "payment-failed"}, "state payment-failed gives no capacity"),
    ],
)
def test_unusable_reservation_fails_and_says_why(overrides: dict[str, Any], problem: str) -> None:
    [row] = aws_rows(aws_target(), capacity_reservation(**overrides))
    assert row.status is Status.FAILED and problem in row.found


def test_kind_must_match_the_config() -> None:
    """An ODCR configured as a Capacity Block (or the other way round) would get the wrong node groups."""
    block = ReservationSpec(CR, "us-west-2a", capacity_block=True)
    [row] = aws_rows(aws_target(block), capacity_reservation())
    assert row.status is Status.FAILED and "the config says kind capacityBlock, EC2 says default" in row.found
    end = NOW + timedelta(days=30)
    [row] = aws_rows(aws_target(), capacity_reservation(ReservationType="capacity-block", EndDate=end))
    assert row.status is Status.FAILED and "the config says kind odcr, EC2 says capacity-block" in row.found


def test_capacity_block_ending_within_the_warning_is_a_question_not_a_pass() -> None:
    end = NOW + timedelta(days=5, hours=2)
    block = capacity_reservation(
        ReservationType="capacity-block", EndDateType="limited", EndDate=end, StartDate=NOW - timedelta(days=9)
    )
    [row] = aws_rows(aws_target(BLOCK), block)
    assert row.status is Status.UNKNOWN
    assert "capacity-block" in row.found and f"ends {end:%Y-%m-%d %H:%M}Z (in 5 d" in row.found


def test_capacity_block_ending_after_the_warning_passes_and_shows_its_end() -> None:
    end = NOW + RESERVATION_END_WARNING + timedelta(hours=1)
    [row] = aws_rows(
        aws_target(BLOCK), capacity_reservation(ReservationType="capacity-block", EndDateType="limited", EndDate=end)
    )
    assert row.status is Status.OK and f"ends {end:%Y-%m-%d %H:%M}Z" in row.found


def test_scheduled_block_passes_and_shows_its_start() -> None:
    start = NOW + timedelta(days=20)
    block = capacity_reservation(
        State="scheduled",
        ReservationType="capacity-block",
        StartDate=start,
        EndDate=start + timedelta(days=7),
        AvailableInstanceCount=0,
    )
    [row] = aws_rows(aws_target(BLOCK), block)
    assert row.status is Status.OK and f"starts {start:%Y-%m-%d %H:%M}Z" in row.found


def test_unknown_id_fails_and_a_denied_read_is_unknown() -> None:
    other = "cr-0fedcba9876543210"
    target = aws_target(ReservationSpec(CR, "us-west-2a"), ReservationSpec(other, "us-west-2b"))
    missing, denied = aws_rows(
        target,
        ("InvalidCapacityReservationId.NotFound", f"The capacity reservation ID '{CR}' does not exist"),
        ("UnauthorizedOperation", "You are not authorized to perform this operation."),
    )
    assert missing.status is Status.FAILED and "not found in us-west-2" in missing.found
    assert denied.status is Status.UNKNOWN and "UnauthorizedOperation" in denied.found and denied.zone == "us-west-2b"


def test_reservation_without_zone_checks_the_pools_only_zone() -> None:
    target = aws_dev()
    pool = replace(target.spec.gpu_pools[0], zones=("us-west-2c",), reservations=(ReservationSpec(CR, None),))
    target = replace(target, spec=replace(target.spec, gpu_pools=(pool, *target.spec.gpu_pools[1:])))
    [row] = aws_rows(target, capacity_reservation(AvailabilityZone="us-west-2a"))
    assert row.zone == "us-west-2c" and row.status is Status.FAILED


def test_against_moto_which_lacks_the_call_the_row_is_unknown(moto_env: str) -> None:  # noqa: F811
    [row] = AwsPreflight(aws_target()).reservations(ZONES)
    assert row.status is Status.UNKNOWN and "DescribeCapacityReservations" in row.found


def test_no_reservations_no_rows_and_no_extra_permission() -> None:
    assert AwsPreflight(aws_dev(), clients=StubbedAws()).reservations(ZONES) == []
    assert "ec2:DescribeCapacityReservations" not in required_actions(aws_dev().spec)
    assert "ec2:DescribeCapacityReservations" in required_actions(aws_target().spec)


def test_the_deployer_policy_grants_the_reservation_read() -> None:
    spec = aws_target().spec
    granted = deployer_policy.all_actions(deployer_policy.policy_for(spec))
    assert set(required_actions(spec)) <= granted


# --- Azure -----------------------------------------------------------------------------------------

RG = "capacity"
CRG_NAME = "gpu-a"
CRG = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.Compute/capacityReservationGroups/{CRG_NAME}"
GROUP_PATH = (
    rf"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft\.Compute/capacityReservationGroups/{CRG_NAME}"
)
MEMBERS_PATH = GROUP_PATH + "/capacityReservations"
T4 = "Standard_NC4as_T4_v3"


def member(name: str, size: str = T4, capacity: int = 4, zones: tuple[str, ...] = ("1",), **props: Any) -> dict[str, Any]:
    """A Capacity Reservation as "Capacity Reservations - Get" shows it."""
    return {
        "id": f"{CRG}/capacityReservations/{name}",
        "name": name,
        "type": "Microsoft.Compute/capacityReservationGroups/capacityReservations",
        "location": "eastus",
        "sku": {"name": size, "capacity": capacity},
        "zones": list(zones),
        "properties": {"provisioningState": "Succeeded", "reservationId": "00000000-aaaa-bbbb-cccc-000000000001", **props},
    }


def group(allocated: dict[str, int], reservation_type: str | None = None) -> dict[str, Any]:
    """A Capacity Reservation Group with ``$expand=instanceView``: per member, the VMs allocated."""
    views = [
        {
            "name": name,
            "utilizationInfo": {
                "currentCapacity": 4,
                "virtualMachinesAllocated": [{"id": f"/subscriptions/{SUBSCRIPTION}/vm{i}"} for i in range(count)],
            },
        }
        for name, count in allocated.items()
    ]
    props: dict[str, Any] = {"instanceView": {"capacityReservations": views}}
    if reservation_type:
        props["reservationType"] = reservation_type
    return {
        "id": CRG,
        "name": CRG_NAME,
        "type": "Microsoft.Compute/capacityReservationGroups",
        "location": "eastus",
        "zones": ["1", "2"],
        "properties": props,
    }


def azure_target(zone: str | None = "1") -> Target:
    return with_reservations(azure_dev(), 0, ReservationSpec(CRG, zone))


def azure_rows(target: Target, arm: ArmAdapter) -> list[Check]:
    return AzurePreflight(target, credential=FakeCredential(), transport=arm.transport()).reservations(now=NOW)


def crg_arm(members: list[dict[str, Any]], allocated: dict[str, int], reservation_type: str | None = None) -> ArmAdapter:
    arm = ArmAdapter()
    arm.route("GET", GROUP_PATH, (200, group(allocated, reservation_type)))
    arm.route("GET", MEMBERS_PATH, (200, {"value": members}))
    return arm


def test_azure_dev_first_pool_is_the_t4_pool() -> None:
    """The cases below reserve Standard_NC4as_T4_v3 for gpuPools[0]."""
    assert azure_dev().spec.gpu_pools[0].instance_types == (T4,)


def test_group_with_the_pools_size_in_its_zone_is_green_and_counts_free_vms() -> None:
    arm = crg_arm([member("t4-z1", capacity=4), member("t4-z2", capacity=2, zones=("2",))], {"t4-z1": 1, "t4-z2": 2})
    [row] = azure_rows(azure_target("1"), arm)
    assert (row.check, row.zone, row.status) == (CheckKind.RESERVATION, "1", Status.OK)
    assert row.found == f"{CRG_NAME} (Targeted) {T4} zones 1: 3/4 free"
    requests = {(path, tuple(q.get("$expand", []))) for _, path, q in arm.requests_seen}
    assert any(p.endswith(f"capacityReservationGroups/{CRG_NAME}") and e == ("instanceView",) for p, e in requests)


def test_group_without_zone_counts_every_member_of_the_size() -> None:
    arm = crg_arm([member("t4-z1", capacity=4), member("t4-z2", capacity=2, zones=("2",))], {"t4-z1": 1, "t4-z2": 2})
    [row] = azure_rows(azure_target(None), arm)
    assert row.status is Status.OK and row.zone == "-" and "zones 1,2: 3/6 free" in row.found


@pytest.mark.parametrize(
    ("members", "zone"),
    [
        ([member("a100", size="Standard_NC24ads_A100_v4")], "1"),  # another size
        ([member("t4-z2", zones=("2",))], "1"),  # the size, another zone
        ([], "1"),  # an empty group: AKS associates nothing
    ],
)
def test_group_that_reserves_nothing_for_the_pool_fails(members: list[dict[str, Any]], zone: str) -> None:
    [row] = azure_rows(azure_target(zone), crg_arm(members, {}))
    assert row.status is Status.FAILED and f"no {T4} reservation in zone {zone}" in row.found


def test_member_not_succeeded_fails() -> None:
    arm = crg_arm([member("t4-z1", provisioningState="Failed")], {})
    [row] = azure_rows(azure_target("1"), arm)
    assert row.status is Status.FAILED and "t4-z1 Failed" in row.found


def test_block_reservation_ending_soon_is_a_question_and_later_passes() -> None:
    soon = NOW + timedelta(days=3)
    arm = crg_arm(
        [member("t4-z1", scheduleProfile={"start": "2026-11-01T00:00:00Z", "end": f"{soon:%Y-%m-%dT%H:%M:%SZ}"})], {}, "Block"
    )
    [row] = azure_rows(azure_target("1"), arm)
    assert row.status is Status.UNKNOWN and "(Block)" in row.found and "(in 3 d" in row.found
    later = NOW + RESERVATION_END_WARNING + timedelta(days=1)
    arm = crg_arm(
        [member("t4-z1", scheduleProfile={"start": "2026-11-01T00:00:00Z", "end": f"{later:%Y-%m-%dT%H:%M:%SZ}"})], {}, "Block"
    )
    [row] = azure_rows(azure_target("1"), arm)
    assert row.status is Status.OK and f"ends {later:%Y-%m-%d %H:%M}Z" in row.found


def test_missing_group_fails_and_a_denied_read_is_unknown() -> None:
    arm = ArmAdapter()
    arm.route("GET", GROUP_PATH, (404, {"error": {"code": "ResourceNotFound", "message": "not found"}}))
    [row] = azure_rows(azure_target("1"), arm)
    assert row.status is Status.FAILED and "not found" in row.found
    arm = ArmAdapter()
    arm.route("GET", GROUP_PATH, (403, {"error": {"code": "AuthorizationFailed", "message": "no read"}}))
    [row] = azure_rows(azure_target("1"), arm)
    assert row.status is Status.UNKNOWN and "AuthorizationFailed" in row.found


def test_group_in_another_subscription_is_read_there() -> None:
    other = "22222222-2222-2222-2222-222222222222"
    crg = CRG.replace(SUBSCRIPTION, other)
    arm = ArmAdapter()
    arm.route("GET", GROUP_PATH.replace(SUBSCRIPTION, other), (200, {**group({}), "id": crg}))
    arm.route("GET", MEMBERS_PATH.replace(SUBSCRIPTION, other), (200, {"value": [member("t4-z1")]}))
    [row] = azure_rows(with_reservations(azure_dev(), 0, ReservationSpec(crg, "1")), arm)
    assert row.status is Status.OK
    assert all(path.startswith(f"/subscriptions/{other}/") for _, path, _ in arm.requests_seen)
    assert reservation_group_parts(crg) == (other, RG, CRG_NAME)


def test_no_reservations_no_azure_rows() -> None:
    assert azure_rows(azure_dev(), ArmAdapter()) == []


def test_a_stack_with_a_reservation_runs_every_check_and_its_row_is_green() -> None:
    """The whole AWS preflight of aws-dev with a reservation on gpu1: the permission rows simulate
    ``ec2:DescribeCapacityReservations`` too, and the reservation row comes last."""
    from tests.test_preflight_aws import good_account, green_but_open

    target = aws_target()
    with StubbedAws() as aws:
        good_account(aws, target)
        aws.stubs["ec2"].add_response(
            "describe_capacity_reservations", {"CapacityReservations": [capacity_reservation()]}, {"CapacityReservationIds": [CR]}
        )
        checks = AwsPreflight(target, clients=aws).run()
        aws.done()
    assert green_but_open(checks), [c for c in checks if c.status is not Status.OK]
    assert checks[-1].check is CheckKind.RESERVATION and checks[-1].pool == "gpu1"


def test_an_azure_stack_with_a_reservation_runs_every_check_and_its_row_is_green() -> None:
    from tests.test_preflight_azure import good_subscription

    target = azure_target("1")
    arm = good_subscription(target)
    arm.route("GET", GROUP_PATH, (200, group({"t4-z1": 0})))
    arm.route("GET", MEMBERS_PATH, (200, {"value": [member("t4-z1")]}))
    # The control-plane identity exists and has held Contributor on the group's resource group for a day.
    principal = "25cc773c-7f05-40fc-a104-32d2300754ad"
    created = (datetime.now(timezone.utc) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    scope = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}"
    grant = role_assignment(CONTRIBUTOR, principal=principal, scope=scope, created_on=created)
    route_identity(arm, "ml-dev-control-plane", "ml-dev-rg", principal, [grant])
    checks = AzurePreflight(target, credential=FakeCredential(), transport=arm.transport()).run()
    assert all(c.status is Status.OK for c in checks), [c for c in checks if c.status is not Status.OK]
    assert [c.found for c in checks if c.check is CheckKind.RESERVATION] == [f"{CRG_NAME} (Targeted) {T4} zones 1: 4/4 free"]
    [grant_row] = [c for c in checks if c.check is CheckKind.RESERVATION_GRANT]
    assert (grant_row.pool, grant_row.zone) == ("t4", "1") and grant_row.found.startswith("Contributor since")
