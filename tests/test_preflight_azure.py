"""The Azure preflight on mocked ARM answers (``tests/arm_fakes.py``): the real management clients,
the Azure SDK's own requests transport, response bodies shaped as the REST reference shows them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gpupools.preflight.azure import (
    REQUIRED_ACTIONS,
    SPOT_CORES,
    TOTAL_CORES,
    AzurePreflight,
    action_matches,
    granted,
    resource_group_name,
)
from gpupools.preflight.demand import stack_demands
from gpupools.preflight.report import EXIT_NO_ANSWER, Check, CheckKind, Status, exit_status
from gpupools.preflight.stack import Target, engine_values, target_from_values
from gpupools.testing import PROJECT_ROOT

from tests.arm_fakes import (
    ASSIGNMENTS_PATH,
    CONTRIBUTOR,
    CONTRIBUTOR_NOT_ACTIONS,
    DEFINITION_PATH,
    OBJECT_ID,
    OWNER,
    RG_PERMISSIONS_PATH,
    SKUS_PATH,
    SUBSCRIPTION,
    USAGES_PATH,
    VERSIONS_PATH,
    ArmAdapter,
    FakeCredential,
    definitions_route,
    kubernetes_version,
    location_restriction,
    not_found_group,
    role_assignment,
    role_definition,
    sku,
    usage,
    zone_restriction,
)

FAMILIES = {
    "Standard_D4s_v5": ("standardDSv5Family", 4),
    "Standard_D8s_v5": ("standardDSv5Family", 8),
    "Standard_NC4as_T4_v3": ("standardNCASv3_T4Family", 4),
    "Standard_NC24ads_A100_v4": ("StandardNCADSA100v4Family", 24),
}
"""Family and vCPUs of the example stack's sizes, as Resource SKUs lists them (Microsoft Learn size pages)."""


ALLOWED_CIDRS = ["203.0.113.0/24"]


def limited(config: dict[str, str]) -> dict[str, str]:
    """``config`` with ``gpupools:cluster.apiAllowedCidrs`` set, so the ``access`` row is ✓ and a
    subscription with everything is all green (the example stacks leave it empty: it is the deployer's
    own networks)."""
    cluster = json.loads(config["gpupools:cluster"])
    return {**config, "gpupools:cluster": json.dumps({**cluster, "apiAllowedCidrs": ALLOWED_CIDRS})}


def azure_dev(**values: Any) -> Target:
    config = limited(engine_values("azure-dev", PROJECT_ROOT))
    config.update(values)
    return target_from_values("azure-dev", config, environ={"AZURE_SUBSCRIPTION_ID": SUBSCRIPTION})


def needs(target: Target) -> dict[str, int]:
    """vCPUs per usage name at max, computed from the spec and FAMILIES (not from the code under test)."""
    totals: dict[str, int] = {}
    for demand in stack_demands(target.spec, target.spec.cluster.zones):
        family, vcpus = FAMILIES[demand.instance_types[0]]
        names = [SPOT_CORES] if demand.capacity.value == "spot" else [family, TOTAL_CORES]
        for name in names:
            totals[name] = totals.get(name, 0) + demand.max_nodes * vcpus
    return totals


def good_subscription(target: Target, **overrides: Any) -> ArmAdapter:
    """Answers of a subscription with every size in every zone, quota at exactly the need, the version
    offered and Owner on the subscription (the resource group not created yet)."""
    location = target.region
    skus = overrides.get("skus") or [sku(name, family, vcpus, location) for name, (family, vcpus) in FAMILIES.items()]
    quota = {**needs(target), **overrides.get("quota", {})}
    versions = overrides.get("versions") or [
        kubernetes_version("1.33"),
        kubernetes_version(target.spec.cluster.kubernetes_version),
    ]
    role = overrides.get("role", (OWNER, "Owner", ["*"], []))
    arm = ArmAdapter()
    arm.route("GET", SKUS_PATH, (200, {"value": skus}))
    arm.route("GET", USAGES_PATH, (200, {"value": [usage(name, limit, 2) for name, limit in quota.items()]}))
    arm.route("GET", VERSIONS_PATH, (200, {"values": versions}))
    arm.route("GET", RG_PERMISSIONS_PATH, not_found_group(resource_group_name(target)))
    arm.route("GET", ASSIGNMENTS_PATH, (200, {"value": [role_assignment(role[0], condition=overrides.get("condition"))]}))
    arm.route("GET", DEFINITION_PATH, definitions_route({role[0]: role_definition(*role)}))
    return arm


def run(target: Target, arm: ArmAdapter) -> list[Check]:
    return AzurePreflight(target, credential=FakeCredential(), transport=arm.transport()).run()


def rows(checks: list[Check], kind: CheckKind) -> list[Check]:
    return [c for c in checks if c.check is kind]


def test_azure_dev_with_a_subscription_that_has_everything_is_all_green() -> None:
    target = azure_dev()
    arm = good_subscription(target)
    checks = run(target, arm)
    assert checks and all(c.status is Status.OK for c in checks), [c for c in checks if c.status is not Status.OK]
    # Every kind but the EC2 Spot service-linked role's (EKS with Karpenter only).
    assert {c.check for c in checks} == set(CheckKind) - {
        CheckKind.SPOT_ROLE,
        CheckKind.RESERVATION,
        CheckKind.RESERVATION_GRANT,
        CheckKind.FEATURE,
    }
    assert exit_status(checks, strict=True) == 0
    # One offered row per pool and zone: the system pool, t4 and the general CPU pool in 1-3, a100 in
    # its own zones 1-2.
    offered = {(c.pool, c.zone) for c in rows(checks, CheckKind.OFFERED)}
    assert offered == {(p, z) for p in ("system", "t4", "general") for z in "123"} | {("a100", "1"), ("a100", "2")}


def test_requests_are_the_documented_ones() -> None:
    target = azure_dev()
    arm = good_subscription(target)
    run(target, arm)
    seen = {path: query for _, path, query in arm.requests_seen}
    skus = next(q for p, q in seen.items() if p.endswith("/providers/Microsoft.Compute/skus"))
    assert skus["$filter"] == [f"location eq '{target.region}'"]
    assert any(p.endswith(f"/locations/{target.region}/usages") for p in seen)
    assert any(p.endswith(f"/Microsoft.ContainerService/locations/{target.region}/kubernetesVersions") for p in seen)
    assignments = next(q for p, q in seen.items() if p.endswith("/Microsoft.Authorization/roleAssignments"))
    assert assignments["$filter"] == [f"atScope() and assignedTo('{OBJECT_ID}')"]
    assert all(p.startswith(f"/subscriptions/{SUBSCRIPTION}/") for p in seen)


def test_size_missing_in_a_zone_fails_that_zone_only() -> None:
    target = azure_dev()
    family, vcpus = FAMILIES["Standard_NC4as_T4_v3"]
    skus = [sku(n, f, v) for n, (f, v) in FAMILIES.items() if n != "Standard_NC4as_T4_v3"]
    skus.append(sku("Standard_NC4as_T4_v3", family, vcpus, zones=("1", "2")))
    checks = run(target, good_subscription(target, skus=skus))
    failed = [c for c in rows(checks, CheckKind.OFFERED) if c.status is Status.FAILED]
    assert [(c.pool, c.zone) for c in failed] == [("t4", "3")]
    assert "not in zone 3" in failed[0].found and "1, 2" in failed[0].found
    assert exit_status(checks) == 1


def test_not_available_for_subscription_in_a_zone_fails_it() -> None:
    target = azure_dev()
    family, vcpus = FAMILIES["Standard_NC24ads_A100_v4"]
    skus = [sku(n, f, v) for n, (f, v) in FAMILIES.items() if n != "Standard_NC24ads_A100_v4"]
    skus.append(sku("Standard_NC24ads_A100_v4", family, vcpus, restrictions=(zone_restriction("eastus", ("2",)),)))
    checks = run(target, good_subscription(target, skus=skus))
    [failed] = [c for c in rows(checks, CheckKind.OFFERED) if c.status is Status.FAILED]
    assert (failed.pool, failed.zone) == ("a100", "2")
    assert "NotAvailableForSubscription" in failed.found


def test_not_available_for_subscription_in_the_location_fails_every_zone() -> None:
    target = azure_dev()
    family, vcpus = FAMILIES["Standard_NC24ads_A100_v4"]
    skus = [sku(n, f, v) for n, (f, v) in FAMILIES.items() if n != "Standard_NC24ads_A100_v4"]
    skus.append(sku("Standard_NC24ads_A100_v4", family, vcpus, restrictions=(location_restriction("eastus"),)))
    checks = run(target, good_subscription(target, skus=skus))
    failed = [c for c in rows(checks, CheckKind.OFFERED) if c.status is Status.FAILED]
    assert {(c.pool, c.zone) for c in failed} == {("a100", "1"), ("a100", "2")}


def test_size_not_listed_in_the_location_fails_and_its_quota_is_unknown() -> None:
    target = azure_dev()
    skus = [sku(n, f, v) for n, (f, v) in FAMILIES.items() if n != "Standard_NC24ads_A100_v4"]
    checks = run(target, good_subscription(target, skus=skus))
    offered = [c for c in rows(checks, CheckKind.OFFERED) if c.pool == "a100"]
    assert offered and all(c.status is Status.FAILED and "not offered in eastus" in c.found for c in offered)
    quota = [c for c in rows(checks, CheckKind.QUOTA) if c.pool == "a100"]
    assert quota and all(c.status is Status.UNKNOWN for c in quota)


@pytest.mark.parametrize("usage_name", [SPOT_CORES, "standardNCASv3_T4Family", TOTAL_CORES])
def test_quota_one_vcpu_short_fails_that_quota(usage_name: str) -> None:
    target = azure_dev()
    short = needs(target)[usage_name] - 1
    checks = run(target, good_subscription(target, quota={usage_name: short}))
    failed = [c for c in rows(checks, CheckKind.QUOTA) if c.status is Status.FAILED]
    assert len(failed) == 1
    assert failed[0].found.startswith(f"{usage_name}: {short} vCPU")
    assert failed[0].needed.startswith(f"{needs(target)[usage_name]} vCPU")


def test_spot_quota_counts_spot_pools_only_and_family_quota_on_demand_only() -> None:
    target = azure_dev()
    pools = {p.name: p for p in target.spec.pools}
    t4, a100 = FAMILIES["Standard_NC4as_T4_v3"][1], FAMILIES["Standard_NC24ads_A100_v4"][1]
    general = FAMILIES["Standard_D8s_v5"][1]
    checks = run(target, good_subscription(target))
    quota = {c.found.split(":")[0]: c for c in rows(checks, CheckKind.QUOTA)}
    spot = pools["t4"].max_size * t4 + pools["a100"].max_size * a100 + pools["general"].max_size * general
    assert quota[SPOT_CORES].needed.startswith(f"{spot} vCPU")
    assert quota["standardNCASv3_T4Family"].needed.startswith(f"{pools['t4'].fallback_max_size * t4} vCPU")
    assert quota[SPOT_CORES].pool == "t4, a100, general"


def test_family_names_match_usage_names_case_insensitively() -> None:
    # Resource SKUs and Usage spell some families with different capitals (StandardNCADSA100v4Family).
    target = azure_dev()
    arm = good_subscription(target, quota={"StandardNCADSA100v4Family": 0})
    arm.route(
        "GET",
        USAGES_PATH,
        (200, {"value": [usage(n.lower() if "A100" in n else n, lim) for n, lim in {**needs(target)}.items()]}),
    )
    checks = run(target, arm)
    assert all(c.status is Status.OK for c in rows(checks, CheckKind.QUOTA))


def test_version_not_offered_fails_and_names_what_is() -> None:
    target = azure_dev()
    checks = run(target, good_subscription(target, versions=[kubernetes_version("1.36"), kubernetes_version("1.37")]))
    [version] = rows(checks, CheckKind.VERSION)
    assert version.status is Status.FAILED
    assert "offered: 1.36, 1.37" in version.found


def test_version_only_under_long_term_support_fails() -> None:
    target = azure_dev()
    wanted = target.spec.cluster.kubernetes_version
    checks = run(target, good_subscription(target, versions=[kubernetes_version(wanted, plans=("AKSLongTermSupport",))]))
    [version] = rows(checks, CheckKind.VERSION)
    assert version.status is Status.FAILED and "AKSLongTermSupport" in version.found


def test_contributor_cannot_create_the_role_assignments() -> None:
    target = azure_dev()
    arm = good_subscription(target, role=(CONTRIBUTOR, "Contributor", ["*"], CONTRIBUTOR_NOT_ACTIONS))
    checks = run(target, arm)
    failed = [c for c in rows(checks, CheckKind.PERMISSIONS) if c.status is Status.FAILED]
    assert [c.needed.split(":")[0] for c in failed] == ["Microsoft.Authorization"]
    assert "roleAssignments/write" in failed[0].found
    assert all(c.status is Status.OK for c in rows(checks, CheckKind.PERMISSIONS) if c not in failed)


def test_a_conditional_assignment_is_unknown_not_granted() -> None:
    target = azure_dev()
    contributor = good_subscription(target, role=(CONTRIBUTOR, "Contributor", ["*"], CONTRIBUTOR_NOT_ACTIONS))
    rbac_admin = "f58310d9-a9f6-439a-9e8d-f62e7b41a168"
    condition = "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/write'})))"
    contributor.route(
        "GET",
        ASSIGNMENTS_PATH,
        (200, {"value": [role_assignment(CONTRIBUTOR), role_assignment(rbac_admin, condition=condition)]}),
    )
    contributor.route(
        "GET",
        DEFINITION_PATH,
        definitions_route(
            {
                CONTRIBUTOR: role_definition(CONTRIBUTOR, "Contributor", ["*"], CONTRIBUTOR_NOT_ACTIONS),
                rbac_admin: role_definition(
                    rbac_admin, "Role Based Access Control Administrator", ["Microsoft.Authorization/roleAssignments/write"], []
                ),
            }
        ),
    )
    [authorization] = [
        c for c in rows(run(target, contributor), CheckKind.PERMISSIONS) if c.needed.startswith("Microsoft.Authorization")
    ]
    assert authorization.status is Status.UNKNOWN and "condition" in authorization.found


def test_existing_resource_group_is_asked_directly() -> None:
    target = azure_dev()
    arm = good_subscription(target)
    arm.route("GET", RG_PERMISSIONS_PATH, (200, {"value": [{"actions": ["*"], "notActions": CONTRIBUTOR_NOT_ACTIONS}]}))
    checks = run(target, arm)
    assert not any(p.endswith("/roleAssignments") for _, p, _ in arm.requests_seen)
    [authorization] = [c for c in rows(checks, CheckKind.PERMISSIONS) if c.needed.startswith("Microsoft.Authorization")]
    assert authorization.status is Status.FAILED


def test_denied_calls_are_unknown_with_the_reason_and_never_crash() -> None:
    target = azure_dev()
    denied = (403, {"error": {"code": "AuthorizationFailed", "message": "The client does not have authorization"}})
    arm = ArmAdapter()
    for path in (SKUS_PATH, USAGES_PATH, VERSIONS_PATH, RG_PERMISSIONS_PATH):
        arm.route("GET", path, denied)
    checks = [c for c in run(target, arm) if c.check is not CheckKind.ACCESS]  # no call: answered from config
    assert checks and all(c.status is Status.UNKNOWN for c in checks)
    assert all("AuthorizationFailed" in c.found for c in checks)
    # Nothing answered: the preflight fails with or without --strict (exit 4, not a pass).
    assert exit_status(checks) == EXIT_NO_ANSWER and exit_status(checks, strict=True) == EXIT_NO_ANSWER


def test_no_subscription_is_unknown_everywhere() -> None:
    target = target_from_values("azure-dev", engine_values("azure-dev", PROJECT_ROOT), environ={})
    assert target.subscription_id is None
    checks = AzurePreflight(target, credential=FakeCredential(), transport=ArmAdapter().transport()).run()
    # Every kind but the EC2 Spot service-linked role's (EKS with Karpenter only).
    assert {c.check for c in checks} == set(CheckKind) - {
        CheckKind.SPOT_ROLE,
        CheckKind.RESERVATION,
        CheckKind.RESERVATION_GRANT,
        CheckKind.FEATURE,
    }
    [api_access] = rows(checks, CheckKind.ACCESS)  # from config alone; the stack leaves it empty: a warning
    assert api_access.status is Status.UNKNOWN and "open to any address" in api_access.found
    checks.remove(api_access)
    assert all(c.status is Status.UNKNOWN and "AZURE_SUBSCRIPTION_ID" in c.found for c in checks)


def test_subscription_from_the_stack_config_wins_over_the_environment() -> None:
    values = engine_values("azure-dev", PROJECT_ROOT)
    values["azure-native:subscriptionId"] = "22222222-2222-2222-2222-222222222222"
    target = target_from_values("azure-dev", values, environ={"AZURE_SUBSCRIPTION_ID": SUBSCRIPTION})
    assert target.subscription_id == "22222222-2222-2222-2222-222222222222"
    assert (
        target_from_values("azure-dev", engine_values("azure-dev", PROJECT_ROOT), {"ARM_SUBSCRIPTION_ID": "x"}).subscription_id
        == "x"
    )


def test_resource_group_name_is_the_one_the_stack_creates() -> None:
    snapshot = json.loads((PROJECT_ROOT / "tests/snapshots/azure-dev.json").read_text())
    [group] = [r for r in snapshot["resources"] if r["type"] == "azure-native:resources:ResourceGroup"]
    assert group["inputs"]["resourceGroupName"] == resource_group_name(azure_dev())


def test_required_actions_cover_every_resource_type_the_stack_writes() -> None:
    snapshot = json.loads((PROJECT_ROOT / "tests/snapshots/azure-dev.json").read_text())
    providers = {r["type"].split(":")[1] for r in snapshot["resources"] if r["type"].startswith("azure-native:")}
    namespaces = {a.split("/")[0].split(".")[1].lower() for a in REQUIRED_ACTIONS}
    # azure-native module names: resources, network, managedidentity, containerservice, authorization.
    assert providers <= namespaces


@pytest.mark.parametrize(
    ("pattern", "action", "matches"),
    [
        ("*", "Microsoft.Authorization/roleAssignments/write", True),
        ("Microsoft.Authorization/*/Write", "Microsoft.Authorization/roleAssignments/write", True),
        ("Microsoft.Authorization/*", "Microsoft.Authorization/roleAssignments/write", True),
        ("Microsoft.Network/*/read", "Microsoft.Network/virtualNetworks/write", False),
        ("microsoft.containerservice/managedclusters/*", "Microsoft.ContainerService/managedClusters/write", True),
    ],
)
def test_action_wildcards(pattern: str, action: str, matches: bool) -> None:
    assert action_matches(pattern, action) is matches


def test_not_actions_subtract_within_their_own_role_only() -> None:
    class Entry:
        def __init__(self, actions: list[str], not_actions: list[str]) -> None:
            self.actions, self.not_actions = actions, not_actions

    write = "Microsoft.Authorization/roleAssignments/write"
    contributor = Entry(["*"], CONTRIBUTOR_NOT_ACTIONS)
    assert not granted([contributor], write)
    assert granted([contributor, Entry(["Microsoft.Authorization/roleAssignments/*"], [])], write)


def test_azure_nap_dev_is_checked_like_the_autoscaler_stack() -> None:
    """Under NAP each pool may run maxSize nodes of either capacity type, the System pool minSize
    nodes: the quota needed is the same per-capacity sum as for a Spot pool and its fallback."""
    config = limited(engine_values("azure-nap-dev", PROJECT_ROOT))
    target = target_from_values("azure-nap-dev", config, environ={"AZURE_SUBSCRIPTION_ID": SUBSCRIPTION})
    assert target.spec.node_auto_provisioning
    checks = run(target, good_subscription(target))
    assert checks and all(c.status is Status.OK for c in checks), [c for c in checks if c.status is not Status.OK]
    # The fixed System pool needs 2 x 4 vCPUs of Dsv5, not its autoscaler's maximum.
    assert needs(target)["standardDSv5Family"] == 2 * 4 + 10 * 8


def test_an_empty_api_allow_list_is_a_warning_and_a_set_one_is_shown() -> None:
    """Issue 28 (review M6): an AKS API server without authorized IP ranges accepts connections from
    anywhere; the preflight says so (``?``, a failure with ``--strict``)."""
    open_target = target_from_values(
        "azure-dev", engine_values("azure-dev", PROJECT_ROOT), environ={"AZURE_SUBSCRIPTION_ID": SUBSCRIPTION}
    )
    [open_row] = rows(run(open_target, good_subscription(open_target)), CheckKind.ACCESS)
    assert open_row.status is Status.UNKNOWN and "apiAllowedCidrs" in open_row.found
    [limited_row] = rows(run(azure_dev(), good_subscription(azure_dev())), CheckKind.ACCESS)
    assert limited_row.status is Status.OK and limited_row.found == "authorizedIPRanges 203.0.113.0/24"


FEATURE_PATH = (
    r"/subscriptions/[^/]+/providers/Microsoft\.Features/providers/Microsoft\.ContainerService/features/"
    r"ManagedGPUExperiencePreview"
)


def feature(state: str) -> dict[str, Any]:
    """``Features - Get`` as the REST spec shapes its answer (``FeatureResult``: ``name``, ``id``,
    ``type``, ``properties.state``)."""
    return {
        "name": "Microsoft.ContainerService/ManagedGPUExperiencePreview",
        "id": f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Features/providers/Microsoft.ContainerService/features/"
        "ManagedGPUExperiencePreview",
        "type": "Microsoft.Features/providers/features",
        "properties": {"state": state},
    }


def automatic_target() -> Target:
    config = limited(engine_values("azure-automatic-dev", PROJECT_ROOT))
    return target_from_values("azure-automatic-dev", config, environ={"AZURE_SUBSCRIPTION_ID": SUBSCRIPTION})


def test_aks_automatic_needs_the_managed_gpu_preview_registered() -> None:
    target = automatic_target()
    registered = good_subscription(target).route("GET", FEATURE_PATH, (200, feature("Registered")))
    [row] = rows(run(target, registered), CheckKind.FEATURE)
    assert row.status is Status.OK and row.found == "Registered"
    pending = good_subscription(target).route("GET", FEATURE_PATH, (200, feature("Registering")))
    [row] = rows(run(target, pending), CheckKind.FEATURE)
    assert row.status is Status.FAILED and "Registering" in row.found and "az feature register" in row.found


def test_the_feature_row_is_unknown_when_the_answer_is_denied_and_absent_on_base_stacks() -> None:
    target = automatic_target()
    denied = good_subscription(target).route(
        "GET", FEATURE_PATH, (403, {"error": {"code": "AuthorizationFailed", "message": "no read on features"}})
    )
    [row] = rows(run(target, denied), CheckKind.FEATURE)
    assert row.status is Status.UNKNOWN and "AuthorizationFailed" in row.found
    assert rows(run(azure_dev(), good_subscription(azure_dev())), CheckKind.FEATURE) == []
