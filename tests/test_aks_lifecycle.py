"""The AKS lifecycle after the first ``up`` (issue 28): upgrades, System-pool changes, added and
rotated pools, replayed against a modelled AKS that answers like the REST spec's examples and
refuses what a real subscription refuses (``tests/aks_model.py``).

Each replay runs the real ``azure-dev`` program on the recording runtime, applies what it registered
to the modelled AKS (the first ``up``), lets the autoscaler move every pool, and plays the next
``up``: the refresh (pulumi-azure-native ``Read``: ``gpupools.testing.update_model.azure_native_refresh``),
the program's second run with its reads answered by the model, ``ignoreChanges`` (pulumi/pulumi
``step_generator.go`` ``processIgnoreChanges``), one PUT per changed resource in dependency order
(the cluster first: every pool depends on it; then the pools along their chain), and deletes last
(pulumi/pulumi ``deployment_executor.go``, ``performDeletes``). A PUT AKS refuses raises
``AksRejectedError``. Expected values come from the world each test sets up.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

import pytest
from gpupools.testing import Registration, Run, fakes, run_stack, stack_config
from gpupools.testing import update_model as model

from tests.aks_model import (
    CLUSTER_ANSWER_KEYS,
    AksRejectedError,
    ModelledAks,
    ProtectedReplaceError,
    minor,
    projection,
    replaced_network_fields,
)
from tests.test_capacity_updates import AGENT_POOL, MANAGED_CLUSTER, live_sizes, model_world, pools

STACK = "azure-dev"


@dataclass
class Deployed:
    """The modelled AKS, the stack's state (per logical name) and what the replays observed."""

    aks: ModelledAks
    stored: dict[str, model.Stored]
    sent_counts: list[tuple[str, int, int]] = field(default_factory=list)
    """(pool, count sent, live count when sent) of every PUT of an existing pool."""
    events: list[str] = field(default_factory=list)
    """``create <pool>``, ``update <pool>``, ``delete <pool>``, ``cluster``, in order."""


def cluster_read(outputs: Mapping[str, Any], aks: ModelledAks, name: str) -> dict[str, Any]:
    """The cluster's outputs after a read: the answer's version, pools and cluster-level settings
    (a setting AKS no longer reports is gone from the outputs too)."""
    answer = aks.cluster_answer(name)
    read = {k: copy.deepcopy(v) for k, v in outputs.items() if k not in CLUSTER_ANSWER_KEYS}
    read.update({k: copy.deepcopy(answer[k]) for k in CLUSTER_ANSWER_KEYS if k in answer})
    return {
        **read,
        "kubernetesVersion": answer["kubernetesVersion"],
        "agentPoolProfiles": [projection(p) for p in answer["agentPoolProfiles"]],
    }


def pool_read(outputs: Mapping[str, Any], aks: ModelledAks, name: str) -> dict[str, Any]:
    answer = {k: v for k, v in projection(aks.pool_answer(name)).items() if k != "name"}
    return {**copy.deepcopy(dict(outputs)), **answer}


def the_cluster(run: Run) -> Registration:
    [registration] = run.of_type(MANAGED_CLUSTER)
    return registration


def first_up(overrides: Mapping[str, Any] | None = None) -> Deployed:
    """The first ``up``: everything is created, each resource read back after its create."""
    run = run_stack(STACK, overrides=overrides or {})
    cluster = the_cluster(run)
    aks = ModelledAks(cluster.inputs["kubernetesVersion"], {})
    aks.create_cluster(cluster.inputs)
    stored = {
        cluster.name: model.Stored(
            copy.deepcopy(cluster.inputs), cluster_read(cluster.inputs, aks, cluster.inputs["resourceName"])
        )
    }
    for r in run.of_type(AGENT_POOL):
        aks.put_agent_pool(r.inputs["agentPoolName"], r.inputs)
        stored[r.name] = model.Stored(copy.deepcopy(r.inputs), pool_read(r.inputs, aks, r.inputs["agentPoolName"]))
    return Deployed(aks, stored)


def autoscale(deployed: Deployed, run: Run) -> dict[str, int]:
    """The autoscaler moves every pool (inside its bounds, different per pool); returns the counts."""
    live = live_sizes(pools(run))
    for name, count in live.items():
        deployed.aks.pools[name]["count"] = count
    return live


def next_up(deployed: Deployed, overrides: Mapping[str, Any] | None = None) -> Run:
    """A later ``up`` (refresh first, ``Pulumi.yaml`` ``options.refresh: always``), applied to the model."""
    aks = deployed.aks
    # The refresh.
    for logical, stored in list(deployed.stored.items()):
        if "agentPoolProfiles" in stored.inputs:
            read = cluster_read(stored.outputs, aks, stored.inputs["resourceName"])
        else:
            read = pool_read(stored.outputs, aks, stored.inputs["agentPoolName"])
        deployed.stored[logical] = model.azure_native_refresh(stored, read)
    run = run_stack(STACK, overrides=overrides or {}, calls=model_world(aks))
    # The cluster.
    cluster = the_cluster(run)
    stored = deployed.stored[cluster.name]
    sent = model.reset_ignored(cluster.inputs, stored.inputs, cluster.ignore_changes)
    network_replaced = replaced_network_fields(stored.inputs, sent)
    if network_replaced and cluster.options.get("protect"):
        raise ProtectedReplaceError(f"unable to replace resource {cluster.name} (diff on {network_replaced}) as it is protected")
    body = model.azure_native_put(stored, sent)
    if body is not None:
        aks.put_cluster(body)
        deployed.events.append("cluster")
        deployed.stored[cluster.name] = model.Stored(sent, cluster_read(stored.outputs, aks, sent["resourceName"]))
    # The pools, along their chain.
    replaced: list[str] = []
    registered = set()
    for r in run.of_type(AGENT_POOL):
        registered.add(r.name)
        name = r.inputs["agentPoolName"]
        old = deployed.stored.get(r.name)
        if old is None or old.inputs["agentPoolName"] != name:
            assert name not in aks.pools, f"{name} would clash with an existing pool"
            if old is not None:
                # A replacement: the engine creates first only because the program says so (module docstring).
                assert r.options.get("deleteBeforeReplace") is False, r.name
                replaced.append(old.inputs["agentPoolName"])
            aks.put_agent_pool(name, r.inputs)
            deployed.events.append(f"create {name}")
            deployed.stored[r.name] = model.Stored(copy.deepcopy(r.inputs), pool_read(r.inputs, aks, name))
            continue
        sent = model.reset_ignored(r.inputs, old.inputs, r.ignore_changes)
        body = model.azure_native_put(old, sent)
        if body is not None:
            deployed.sent_counts.append((name, int(body["count"]), int(aks.pools[name]["count"])))
            aks.put_agent_pool(name, body)
            deployed.events.append(f"update {name}")
            deployed.stored[r.name] = model.Stored(sent, pool_read(old.outputs, aks, name))
    # Deletes last: replaced pools, then pools removed from the config.
    for name in replaced:
        aks.delete_agent_pool(name)
        deployed.events.append(f"delete {name}")
    for logical in [k for k, v in deployed.stored.items() if "agentPoolName" in v.inputs and k not in registered]:
        aks.delete_agent_pool(deployed.stored.pop(logical).inputs["agentPoolName"])
    return run


def overrides_for(**changes: Any) -> dict[str, Any]:
    """Config overrides on top of ``Pulumi.azure-dev.yaml``: ``kubernetes_version``, ``system_max``,
    ``added_pool``, ``t4_disk``, ``scale_down``."""
    config = stack_config(STACK)
    result: dict[str, Any] = {}
    if "kubernetes_version" in changes:
        result["gpupools:cluster"] = {**config["gpupools:cluster"], "kubernetesVersion": changes["kubernetes_version"]}
    if "system_max" in changes:
        result["gpupools:systemPool"] = {**config["gpupools:systemPool"], "maxSize": changes["system_max"]}
    gpu_pools = [dict(p) for p in config["gpupools:gpuPools"]]
    if "t4_disk" in changes:
        gpu_pools[0]["diskSizeGb"] = changes["t4_disk"]
    if changes.get("added_pool"):
        gpu_pools.append({"name": "t4batch", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 3})
    if gpu_pools != config["gpupools:gpuPools"]:
        result["gpupools:gpuPools"] = gpu_pools
    if "scale_down" in changes:
        result["gpupools:autoscaler"] = {**config["gpupools:autoscaler"], "scaleDownUnneededTime": changes["scale_down"]}
    return result


# --- Done when: an upgrade, a System pool change and an added GPU pool in one up ----------------


def test_upgrade_system_change_and_added_pool_are_accepted_and_reach_every_pool() -> None:
    """1.35 -> 1.36, ``systemPool.maxSize`` + 2 and a new GPU pool, in one ``up``: every body AKS
    accepts (the model raises otherwise), every pool ends on 1.36, no live count changes, nothing is
    deleted."""
    deployed = first_up()
    first = run_stack(STACK)
    live = autoscale(deployed, first)
    before = set(deployed.aks.pools)
    system_max = stack_config(STACK)["gpupools:systemPool"]["maxSize"] + 2
    next_up(deployed, overrides_for(kubernetes_version="1.36", system_max=system_max, added_pool=True))

    aks = deployed.aks
    assert aks.kubernetes_version == "1.36"
    assert {name: minor(p["orchestratorVersion"]) for name, p in aks.pools.items()} == dict.fromkeys(aks.pools, "1.36")
    assert aks.pools["system"]["maxCount"] == system_max
    # The control plane (and the System pool) first, then every existing pool, then the new one.
    assert deployed.events[0] == "cluster"
    assert [e.split()[0] for e in deployed.events[1:]].count("update") == len(before) - 1
    assert any(e.startswith("create t4batch") for e in deployed.events)
    assert not [e for e in deployed.events if e.startswith("delete")]
    # Never a live count changed: every PUT of an existing pool carried the count AKS had.
    assert deployed.sent_counts and all(sent == have for _, sent, have in deployed.sent_counts)
    assert {name: aks.pools[name]["count"] for name in before} == live
    # The cluster PUT: every pool AKS has, each version specified, the System pool with the control plane.
    [(_, body)] = [(k, b) for k, b in aks.accepted if k == "ManagedCluster"][1:]
    versions = {p["name"]: p["orchestratorVersion"] for p in body["agentPoolProfiles"]}
    assert set(versions) == before
    assert minor(versions.pop("system")) == "1.36" and set(map(minor, versions.values())) == {"1.35"}


def test_a_second_up_after_the_upgrade_changes_nothing() -> None:
    deployed = first_up()
    first = run_stack(STACK)
    autoscale(deployed, first)
    upgraded = overrides_for(kubernetes_version="1.36")
    next_up(deployed, upgraded)
    deployed.events.clear()
    autoscale(deployed, first)
    next_up(deployed, upgraded)
    assert deployed.events == []


# --- B1: a cluster-level change after a refresh ---------------------------------------------------


def test_an_autoscaler_profile_change_after_a_refresh_sends_an_array_aks_accepts() -> None:
    """Review B1: after a refresh the stored array held the System pool without ``orchestratorVersion``
    and every other pool with it; AKS refuses that (NotAllAgentPoolOrchestratorVersionSpecifiedAndUnchanged).
    The stored array (the setting is not one the program compares) now carries a version on every pool."""
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    next_up(deployed, overrides_for(scale_down="15m"))
    assert deployed.events == ["cluster"]
    body = deployed.aks.accepted[-1][1]
    assert body["autoScalerProfile"]["scaleDownUnneededTime"] == "15m"
    assert all(p.get("orchestratorVersion") for p in body["agentPoolProfiles"])


def test_the_model_refuses_the_mixed_array_the_old_program_sent() -> None:
    """The model is what makes the tests above able to fail: the array main stored (System pool as the
    program wrote it, without a version; the others as AKS listed them) is refused."""
    deployed = first_up()
    aks = deployed.aks
    body = copy.deepcopy(deployed.aks.cluster_answer("ml-dev"))
    profiles = [projection(p) for p in body["agentPoolProfiles"]]
    profiles[0].pop("orchestratorVersion")
    with pytest.raises(AksRejectedError, match="NotAllAgentPoolOrchestratorVersionSpecifiedAndUnchanged"):
        aks.put_cluster({**body, "kubernetesVersion": "1.36", "agentPoolProfiles": profiles})
    with pytest.raises(AksRejectedError, match="must stay unchanged or the same with control plane"):
        aks.put_cluster(
            {**body, "kubernetesVersion": "1.35", "agentPoolProfiles": [{**p, "orchestratorVersion": "1.34"} for p in profiles]}
        )


def test_a_stack_created_by_the_previous_release_migrates_on_its_first_up() -> None:
    """Stacks created before the System profile carried a version store the mixed array. Their first
    ``up`` after upgrading sets the auto-upgrade channels (a cluster-level change the program compares),
    so it sends AKS's own array, which AKS accepts, and the stored array is uniform afterwards."""
    deployed = first_up()
    cluster_name = next(k for k, v in deployed.stored.items() if "agentPoolProfiles" in v.inputs)
    old = deployed.stored[cluster_name]
    legacy_inputs = copy.deepcopy(dict(old.inputs))
    legacy_inputs.pop("autoUpgradeProfile")
    legacy_inputs["agentPoolProfiles"][0].pop("orchestratorVersion")
    deployed.stored[cluster_name] = model.Stored(legacy_inputs, old.outputs)
    deployed.aks.settings.pop("autoUpgradeProfile")
    autoscale(deployed, run_stack(STACK))
    next_up(deployed)
    assert deployed.events[0] == "cluster"
    stored = deployed.stored[cluster_name].inputs["agentPoolProfiles"]
    assert all(p.get("orchestratorVersion") for p in stored)


# --- M1: a rotation creates before it deletes ----------------------------------------------------


def test_a_create_only_change_creates_the_new_pools_before_deleting_the_old() -> None:
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    old_names = {n for n in deployed.aks.pools if n.startswith("t4")}
    next_up(deployed, overrides_for(t4_disk=200))
    creates = [i for i, e in enumerate(deployed.events) if e.startswith("create t4")]
    deletes = [i for i, e in enumerate(deployed.events) if e.startswith("delete t4")]
    assert len(creates) == len(deletes) == len(old_names)
    assert max(creates) < min(deletes)
    assert {e.split()[1] for e in deployed.events if e.startswith("delete")} == old_names


def test_every_agent_pool_and_placement_group_states_create_before_delete() -> None:
    """Review M1: azure-native asks for delete-first on any replacement of a named resource, and the
    engine follows it unless the program sets the option (pulumi/pulumi ``step_generator.go``); the
    Python SDK sends it only when it is not None. So the option must be registered, and False."""
    config = stack_config(STACK)
    placed = [{**config["gpupools:gpuPools"][1], "proximityPlacement": True, "zones": ["1"]}, config["gpupools:gpuPools"][0]]
    run = run_stack(STACK, overrides={"gpupools:gpuPools": placed})
    for r in [*run.of_type(AGENT_POOL), *run.of_type("azure-native:compute:ProximityPlacementGroup")]:
        assert r.options.get("deleteBeforeReplace") is False, r.name
    cluster = the_cluster(run)
    assert cluster.options.get("protect") is True
    assert cluster.options.get("deleteBeforeReplace") is False


# --- B2: the deployer's role assignment names the principal type that runs `up` ------------------


DEPLOYER = "ml-dev-deployer-cluster-admin"


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        (fakes.USER_TOKEN_CLAIMS, "User"),
        (fakes.SERVICE_PRINCIPAL_TOKEN_CLAIMS, "ServicePrincipal"),
        ({"aud": "https://management.core.windows.net/", "scp": "user_impersonation"}, "User"),  # v1 token without idtyp
        ({"aud": "https://management.core.windows.net/", "roles": ["x"]}, "ServicePrincipal"),  # app-only, no idtyp
    ],
)
def test_the_deployer_assignment_names_the_principal_type_of_the_token(claims: Mapping[str, Any], expected: str) -> None:
    """Review B2: without ``principalType`` the SDK sent ``User``, and CI's OIDC service principal got
    ``400 UnmatchedPrincipalType``. The type now comes from the provider's own ARM token."""
    token = {"azure-native:authorization:getClientToken": lambda _: {"token": fakes.fake_jwt(claims)}}
    run = run_stack(STACK, calls=token)
    assert run.named(DEPLOYER).inputs["principalType"] == expected


def test_a_token_that_is_not_a_jwt_is_an_error_not_a_guess() -> None:
    from gpupools.azure.deployer import principal_type

    with pytest.raises(ValueError, match="not a JWT"):
        principal_type("opaque-token")


# --- B3: proximity placement groups Compute accepts ---------------------------------------------


def test_a_zonal_proximity_placement_group_names_the_pools_size_in_its_intent() -> None:
    """Review B3: "Providing an availability zone without an intent will result in an error when
    creating the proximity placement group" (azure-compute-docs ``co-location.md``)."""
    config = stack_config(STACK)
    a100 = {**config["gpupools:gpuPools"][1], "proximityPlacement": True, "zones": ["2"]}
    run = run_stack(STACK, overrides={"gpupools:gpuPools": [config["gpupools:gpuPools"][0], a100]})
    [group] = run.of_type("azure-native:compute:ProximityPlacementGroup")
    assert group.inputs["zones"] == ["2"]
    assert group.inputs["intent"] == {"vmSizes": [a100["instanceTypes"][0]]}


# --- M6: the API server's allow-list ----------------------------------------------------------------


def test_api_allowed_cidrs_reach_the_cluster_as_authorized_ip_ranges() -> None:
    config = stack_config(STACK)
    cidrs = ["198.51.100.0/24", "203.0.113.7/32"]
    run = run_stack(
        STACK, overrides={"gpupools:cluster": {**config["gpupools:cluster"], "apiAllowedCidrs": list(reversed(cidrs))}}
    )
    assert the_cluster(run).inputs["apiServerAccessProfile"] == {"authorizedIPRanges": cidrs}
    assert "apiServerAccessProfile" not in the_cluster(run_stack(STACK)).inputs


def test_changing_the_allow_list_later_sends_aks_its_own_pool_array() -> None:
    """A compared cluster-level setting: the PUT carries AKS's array (versions specified and unchanged)."""
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    config = stack_config(STACK)
    next_up(deployed, {"gpupools:cluster": {**config["gpupools:cluster"], "apiAllowedCidrs": ["203.0.113.0/24"]}})
    assert deployed.events == ["cluster"]
    body = deployed.aks.accepted[-1][1]
    assert body["apiServerAccessProfile"] == {"authorizedIPRanges": ["203.0.113.0/24"]}
    assert len(body["agentPoolProfiles"]) == len(deployed.aks.pools)


# --- m2/m3: System-pool changes AKS cannot apply in place ------------------------------------------


@pytest.mark.parametrize(
    ("change", "key"),
    [({"diskSizeGb": 256}, "diskSizeGb"), ({"instanceTypes": ["Standard_D8s_v5"]}, "instanceTypes")],
)
def test_a_system_pool_change_aks_cannot_apply_is_one_error_before_anything_is_sent(change: dict[str, Any], key: str) -> None:
    """Review m2/m3: a disk size change was silently dropped and a VM size change reached AKS to be
    refused there. Both are create-only on an agent pool, and the inline System pool cannot rotate."""
    deployed = first_up()
    config = stack_config(STACK)
    run = run_stack(
        STACK,
        overrides={"gpupools:systemPool": {**config["gpupools:systemPool"], **change}},
        calls=model_world(deployed.aks),
        raise_errors=False,
    )
    assert run.error is not None and str(run.error).startswith(
        f"gpupools:systemPool.{key}: cannot change on the existing System pool"
    )
    assert not run.of_type(MANAGED_CLUSTER)


def test_system_pool_zones_are_compared_too() -> None:
    deployed = first_up()
    config = stack_config(STACK)
    run = run_stack(
        STACK,
        overrides={"gpupools:cluster": {**config["gpupools:cluster"], "zones": ["1", "2"]}},
        calls=model_world(deployed.aks),
        raise_errors=False,
    )
    assert run.error is not None and str(run.error).startswith("gpupools:systemPool.zones: cannot change")


# --- m11: a Capacity Reservation Group in another subscription ---------------------------------------


def test_a_reservation_group_in_another_subscription_gets_that_subscriptions_role_definition() -> None:
    other = "33333333-3333-3333-3333-333333333333"
    crg = f"/subscriptions/{other}/resourceGroups/capacity/providers/Microsoft.Compute/capacityReservationGroups/gpu"
    config = stack_config(STACK)
    t4 = {**config["gpupools:gpuPools"][0], "reservations": [{"id": crg, "zone": "1"}]}
    run = run_stack(STACK, overrides={"gpupools:gpuPools": [t4, config["gpupools:gpuPools"][1]]})
    [grant] = [r for r in run.of_type("azure-native:authorization:RoleAssignment") if r.inputs["scope"].endswith("/capacity")]
    assert grant.inputs["roleDefinitionId"] == (
        f"/subscriptions/{other}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
    )


# --- issue 37 NB1: the switch to Cilium and NAP on an existing cluster -----------------------------


def with_dataplane(dataplane: str, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``gpupools:network.dataplane`` on top of ``base`` (default: none) and the stack's network."""
    config = stack_config(STACK)
    return {**(base or {}), "gpupools:network": {**config["gpupools:network"], "dataplane": dataplane}}


def nap_switch(dataplane: str | None = None) -> dict[str, Any]:
    """``docs/karpenter-nap.md`` step 3: ``provisioner: karpenter`` and the keys NAP refuses dropped
    (``onDemandMaxSize``, ``minSize``, ``spotMaxPrice``, ``autoscaler.maxNodeProvisionTime``,
    ``systemPool.maxSize``); with ``dataplane``, ``network.dataplane`` too."""
    config = stack_config(STACK)
    dropped = ("onDemandMaxSize", "minSize", "spotMaxPrice")

    def strip(pools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in p.items() if k not in dropped} for p in pools]

    result: dict[str, Any] = {
        "gpupools:provisioner": "karpenter",
        "gpupools:gpuPools": strip(config["gpupools:gpuPools"]),
        "gpupools:cpuPools": strip(config["gpupools:cpuPools"]),
        "gpupools:autoscaler": {k: v for k, v in config["gpupools:autoscaler"].items() if k != "maxNodeProvisionTime"},
        "gpupools:systemPool": {k: v for k, v in config["gpupools:systemPool"].items() if k != "maxSize"},
    }
    return with_dataplane(dataplane, result) if dataplane else result


DATAPLANE_ERROR = (
    "gpupools:network.dataplane: would change the existing cluster's networkProfile.networkDataplane 'azure' -> 'cilium', "
    "networkProfile.networkPolicy 'none' -> 'cilium'"
)


@pytest.mark.parametrize(
    "overrides",
    [with_dataplane("cilium"), nap_switch()],
    ids=["network.dataplane cilium", "provisioner karpenter alone (NAP's default dataplane cilium)"],
)
def test_a_dataplane_change_on_an_existing_cluster_is_one_error_naming_the_az_steps(overrides: dict[str, Any]) -> None:
    """Review NB1: pulumi-azure-native force-replaces the cluster on ``networkDataplane`` and
    ``networkPolicy`` (PR #4771) and the cluster is protected, so the documented first step failed at
    the engine. Now the program refuses it before registering anything, naming the in-place command."""
    deployed = first_up()
    run = run_stack(STACK, overrides=overrides, calls=model_world(deployed.aks), raise_errors=False)
    assert run.error is not None and str(run.error).startswith(DATAPLANE_ERROR), run.error
    assert "az aks update --resource-group ml-dev-rg --name ml-dev --network-dataplane cilium --network-policy cilium" in str(
        run.error
    )
    assert not run.of_type(MANAGED_CLUSTER) and not run.of_type("azure-native:resources:ResourceGroup")


def test_the_engine_would_refuse_the_same_change_at_the_protected_cluster() -> None:
    """What the error above saves: the replay's engine step (``replaced_network_fields``) refuses the
    cluster's update when the desired network fields reach the diff."""
    deployed = first_up()
    stored = next(v for v in deployed.stored.values() if "agentPoolProfiles" in v.inputs)
    sent = {**stored.inputs, "networkProfile": {**stored.inputs["networkProfile"], "networkDataplane": "cilium"}}
    assert replaced_network_fields(stored.inputs, sent) == ["networkProfile.networkDataplane"]


def test_after_az_aks_update_the_next_up_changes_nothing_on_the_network_and_nap_follows() -> None:
    """The documented path: ``az aks update --network-dataplane cilium``, then ``network.dataplane:
    cilium`` (no cluster PUT, no replacement), then the provisioner switch (a cluster PUT that leaves
    the network alone)."""
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    deployed.aks.update_dataplane_to_cilium()
    run = next_up(deployed, with_dataplane("cilium"))
    assert deployed.events == []
    assert {"networkProfile.networkDataplane", "networkProfile.networkPolicy"} <= set(the_cluster(run).ignore_changes)
    next_up(deployed, nap_switch("cilium"))
    assert deployed.events[0] == "cluster"
    assert deployed.aks.settings["nodeProvisioningProfile"]["mode"] == "Auto"
    assert deployed.aks.settings["networkProfile"]["networkDataplane"] == "cilium"


def test_switching_to_nap_while_keeping_the_azure_dataplane_replaces_nothing() -> None:
    """``network.dataplane: azure`` with NAP on a cluster created without a dataplane: AKS has the
    default, so nothing is refused, and the value the stored inputs lack is not an added force-new
    input (``NETWORK_IGNORE``)."""
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    next_up(deployed, nap_switch("azure"))
    assert deployed.events[0] == "cluster"
    assert deployed.aks.settings["nodeProvisioningProfile"]["mode"] == "Auto"


# --- issue 37 NM1: emptying the allow-list ------------------------------------------------------------


def test_clearing_the_allow_list_reopens_the_api_server_and_the_next_up_changes_nothing() -> None:
    """Review NM1 (its replay, ``test_clear_allow_list.py``, with the model's "AKS keeps what a PUT
    leaves out" rule): an emptied list sent no ``apiServerAccessProfile``, AKS kept the ranges, and
    every later ``up`` stayed on the "AKS's own array" path. Now the PUT carries ``authorizedIPRanges:
    []`` once, AKS reports no ranges, and the next ``up`` sends nothing."""
    config = stack_config(STACK)
    with_list = {"gpupools:cluster": {**config["gpupools:cluster"], "apiAllowedCidrs": ["203.0.113.0/24"]}}
    deployed = first_up(with_list)
    autoscale(deployed, run_stack(STACK))
    next_up(deployed, with_list)
    assert deployed.events == []
    next_up(deployed, {})
    assert deployed.events == ["cluster"]
    assert deployed.aks.accepted[-1][1]["apiServerAccessProfile"] == {"authorizedIPRanges": []}
    assert "apiServerAccessProfile" not in deployed.aks.cluster_answer("ml-dev")
    for _ in range(2):
        deployed.events.clear()
        autoscale(deployed, run_stack(STACK))
        run = next_up(deployed, {})
        assert deployed.events == []
        assert "agentPoolProfiles" in the_cluster(run).ignore_changes  # back on the ignored array


def test_a_cluster_that_never_had_an_allow_list_gets_no_access_profile() -> None:
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    run = next_up(deployed, {})
    assert deployed.events == []
    assert "apiServerAccessProfile" not in the_cluster(run).inputs


# --- issue 37 item 7: the echoed pool array -----------------------------------------------------------


AGENT_POOL_SECURITY_PROFILE = {"sshAccess": "LocalUser", "enableVTPM": False, "enableSecureBoot": False}
"""An agent pool's ``securityProfile`` as the 2025-09-01 spec defines it (``AgentPoolSecurityProfile``:
``sshAccess``, ``enableVTPM``, ``enableSecureBoot``; ``sshAccess`` is what AVM issue #152's PUT failed on)."""


def test_the_echoed_pool_array_leaves_out_what_aks_refuses_back() -> None:
    """Review §8/issue 37 item 7: AKS reports each pool's ``securityProfile``; echoed in a
    managed-cluster PUT the live RP refuses it (AVM PR #196). A compared change now sends AKS's
    array without it, and without the spec's read-only fields."""
    deployed = first_up()
    autoscale(deployed, run_stack(STACK))
    for pool in deployed.aks.pools.values():
        pool["securityProfile"] = copy.deepcopy(AGENT_POOL_SECURITY_PROFILE)
        pool["status"] = {}
    config = stack_config(STACK)
    next_up(deployed, {"gpupools:cluster": {**config["gpupools:cluster"], "apiAllowedCidrs": ["203.0.113.0/24"]}})
    # (The standalone pools' own PUTs that follow only drop the injected field from their refreshed inputs.)
    assert deployed.events[0] == "cluster"
    [profiles] = [b["agentPoolProfiles"] for k, b in deployed.aks.accepted[1:] if k == "ManagedCluster"]
    assert len(profiles) == len(deployed.aks.pools)
    for profile in profiles:
        assert not {"securityProfile", "status", "eTag", "provisioningState", "currentOrchestratorVersion"} & set(profile)
        assert profile["orchestratorVersion"] and profile["vmSize"]


def test_profile_writable_is_the_sdks_input_type() -> None:
    """``PROFILE_WRITABLE`` (the spec's non-read-only pool fields at 2025-09-01) names exactly the
    fields of the pinned SDK's ``ManagedClusterAgentPoolProfileArgs``: a provider upgrade that adds one
    fails here instead of silently echoing or dropping it."""
    import inspect

    from gpupools.azure.live_capacity import ECHO_REJECTED, PROFILE_INPUTS, PROFILE_WRITABLE
    from pulumi_azure_native import containerservice

    sdk = set(inspect.signature(containerservice.ManagedClusterAgentPoolProfileArgs.__init__).parameters) - {"self", "__self__"}
    assert set(PROFILE_WRITABLE) == sdk
    assert sdk - set(ECHO_REJECTED) == PROFILE_INPUTS


# --- issue 37 nm1: a 404 is parsed, not matched as a substring ------------------------------------


def test_a_denied_read_whose_resource_id_contains_404_is_not_read_as_absent() -> None:
    """Review nm1: ``"404" in text`` read a 403 as "no such pool" when the subscription GUID held
    ``404``. pulumi-azure-native words the status as ``Status=<code>`` (``client_azcore.go``)."""
    from gpupools.azure.live_capacity import _not_found

    denied = (
        "request failed /subscriptions/00000404-0000-0000-0000-000000000000/resourceGroups/ml-dev-rg/providers/"
        'Microsoft.ContainerService/managedClusters/ml-dev/agentPools/system: Status=403 Code="AuthorizationFailed" '
        'Message="The client does not have authorization to perform action"'
    )
    assert not _not_found(Exception(denied))
    assert _not_found(Exception(fakes.arm_not_found({"resourceName": "ml-dev", "resourceGroupName": "ml-dev-rg"})))
