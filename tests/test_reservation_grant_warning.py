"""The program's own warning when a reserved AKS pool is created before its Capacity Reservation
Group grant may have propagated (issue 28, review M9; ``gpupools.azure.reservation_grant``).

AKS "Assign capacity reservation groups to AKS node pools" (learn.microsoft.com
``aks/use-capacity-reservation-groups``): "It can take up to 60 minutes for the role assignment to
propagate"; without the grant a pool is created "with a warning and no capacity reservation group
gets associated". The grant's age is ARM's read-only ``createdOn`` of the role assignment
(Authorization 2022-04-01 ``RoleAssignment``; pulumi-azure-native ``RoleAssignment.created_on``),
which the mock answers here as ARM would, relative to the time the test runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

import pulumi
import pytest
from gpupools.azure import AksCluster, GpuNodePool
from gpupools.azure.reservation_grant import young_grant_warning
from gpupools.specs import ClusterSpec, ReservationSpec, SystemPoolSpec
from gpupools.testing import fakes, run_program, run_stack, stack_config

from tests.test_aks_reservations import CRG_A, spec
from tests.test_capacity_updates import aks_model, model_world

ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
CLUSTER = ClusterSpec(name="ml-dev", kubernetes_version="1.35", zones=("1", "2", "3"))
SYSTEM = SystemPoolSpec(instance_types=("Standard_D4s_v5",))
T0 = datetime(2026, 11, 24, 20, 0, tzinfo=timezone.utc)


def created_on(age: timedelta) -> fakes.OutputFake:
    """The role assignment's outputs with ``createdOn`` ``age`` ago (ARM's ISO 8601, UTC)."""
    base = fakes.OUTPUTS[ROLE_ASSIGNMENT]

    def fake(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        stamp = (datetime.now(timezone.utc) - age).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {**base(name, inputs), "createdOn": stamp}

    return fake


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: seen.append(str(message)))
    return seen


def program() -> None:
    cluster = AksCluster("ml-dev", cluster=CLUSTER, system_pool=SYSTEM, location="eastus", capacity_reservation_group_ids=[CRG_A])
    GpuNodePool(
        "ml-dev-t4",
        spec(ReservationSpec(CRG_A, "1")),
        resource_group_name=cluster.resource_group_name,
        cluster_name=cluster.name,
        after=cluster.managed_cluster,
        live_counts=cluster.live_counts,
        reservation_grants=cluster.reservation_grants,
    )


def reserved_warnings(seen: list[str]) -> list[str]:
    return [w for w in seen if w.startswith("reserved pool ")]


def test_a_reserved_pool_created_minutes_after_its_grant_warns(warnings: list[str]) -> None:
    run = run_program(program, outputs={ROLE_ASSIGNMENT: created_on(timedelta(minutes=5))})
    [reserved] = [r for r in run.of_type("azure-native:containerservice:AgentPool") if "capacityReservationGroupID" in r.inputs]
    [message] = reserved_warnings(warnings)
    assert message.startswith(f"reserved pool {reserved.inputs['agentPoolName']}: created 5 min after")
    assert "resource group capacity" in message and "two steps" in message


def test_an_old_grant_does_not_warn(warnings: list[str]) -> None:
    run_program(program, outputs={ROLE_ASSIGNMENT: created_on(timedelta(hours=3))})
    assert reserved_warnings(warnings) == []


def test_an_existing_reserved_pool_does_not_warn_whatever_its_grant(warnings: list[str]) -> None:
    """Only a pool this ``up`` creates can be created without its group."""
    first = run_program(program, outputs={ROLE_ASSIGNMENT: created_on(timedelta(hours=3))})
    world = model_world(aks_model(first, {}))
    warnings.clear()
    run_program(program, outputs={ROLE_ASSIGNMENT: created_on(timedelta(minutes=5))}, calls=world)
    assert reserved_warnings(warnings) == []


def test_the_stack_wires_the_grant_to_the_reserved_pool(warnings: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(fakes.OUTPUTS, ROLE_ASSIGNMENT, created_on(timedelta(minutes=2)))
    pools = [dict(p) for p in stack_config("azure-dev")["gpupools:gpuPools"]]
    pools[0] = {**pools[0], "reservations": [{"id": CRG_A, "zone": "1"}]}
    run_stack("azure-dev", overrides={"gpupools:gpuPools": pools})
    [message] = reserved_warnings(warnings)
    assert "min after its Capacity Reservation Group grant (Contributor on resource group capacity)" in message


@pytest.mark.parametrize(
    ("age", "warns"),
    [(timedelta(minutes=59, seconds=59), True), (timedelta(minutes=60), False), (timedelta(minutes=-1), True)],
)
def test_the_sixty_minute_bound(age: timedelta, warns: bool) -> None:
    stamp = (T0 - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    message = young_grant_warning("t4rabc", "/subscriptions/s/resourceGroups/capacity", stamp, T0)
    assert (message is not None) is warns


def test_no_creation_time_no_warning() -> None:
    assert young_grant_warning("t4rabc", "/subscriptions/s/resourceGroups/capacity", None, T0) is None
