"""The AKS ManagedCluster's ``agentPoolProfiles`` across refreshes and updates (issue: every ``up``
after the first PUT the whole cluster).

Each sequence runs the real ``azure-dev`` program twice on the recording runtime and plays the
engine and pulumi-azure-native between the runs with ``gpupools.testing.update_model``:

* the state after create: the inputs the program registered, and the provider's read after create
  (the cluster's GET then lists the System pool only: the standalone pools come after it);
* the refresh before the next ``up`` (``Pulumi.yaml`` ``options.refresh: always``): azure-native's
  ``Read`` projects AKS's ``Managed Clusters - Get`` (every agent pool, standalone ones included, each
  with its current count, read-only fields left out by the projection) and applies the changes
  between the old and the new projection to the stored inputs (pulumi-azure-native
  ``provider/pkg/provider/provider.go`` ``Read``: ``SdkOutputsToSdkInputs`` of both, ``Diff``,
  ``applyDiff``; ``diff.go`` ``applyValueDiff``: "A new element was added, copy as-is");
* the update: ``ignoreChanges`` reset to the stored inputs (pulumi/pulumi ``step_generator.go``
  ``processIgnoreChanges``), then one PUT whose body is the new inputs when they differ from the
  stored ones (``provider.go`` ``Update`` -> ``defaultUpdate`` -> ``PrepareAzureRESTBody``).

Expected values come from the world each test sets up (the counts the autoscaler moved to, the pools
AKS has), never from the program's output.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import pytest
from gpupools.azure import inline_pools
from gpupools.azure.live_capacity import LivePool, profile_inputs
from gpupools.testing import Registration, Run, run_stack, stack_config
from gpupools.testing import update_model as model

from .aks_model import POOL_READ_ONLY
from .test_capacity_updates import AGENT_POOL, MANAGED_CLUSTER, aks_pools, azure_world, live_sizes, pools

READ_ONLY = POOL_READ_ONLY
"""Fields of AKS's answer that azure-native's output -> input projection leaves out (read-only in
the AKS API spec); ``maxPods`` is writable and server-defaulted, so it stays."""


def cluster(run: Run) -> Registration:
    [registration] = run.of_type(MANAGED_CLUSTER)
    return registration


def projection(profiles: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """azure-native's input-shaped projection of the pools AKS lists."""
    return [{k: v for k, v in p.items() if k not in READ_ONLY} for p in profiles]


def after_create(created: Run) -> model.Stored:
    """The cluster as stored after create: its inputs, and the read after create (the System pool
    only, with the server-set ``maxPods``)."""
    inputs = copy.deepcopy(cluster(created).inputs)
    read = copy.deepcopy(inputs)
    read["agentPoolProfiles"] = [{**p, "maxPods": 250} for p in read["agentPoolProfiles"]]
    return model.Stored(inputs=inputs, outputs=read)


def refreshed(created: Run, live: Mapping[str, int]) -> model.Stored:
    """The refresh before the second ``up``: AKS lists every pool with its moved count."""
    stored = after_create(created)
    read = copy.deepcopy(dict(stored.outputs))
    read["agentPoolProfiles"] = projection(list(aks_pools(created, live).values()))
    return model.azure_native_refresh(stored, read)


def cluster_put(stored: model.Stored, second: Run) -> dict[str, Any] | None:
    """The managed-cluster PUT body of the second ``up`` (None: no update)."""
    registration = cluster(second)
    sent = model.reset_ignored(registration.inputs, stored.inputs, registration.ignore_changes)
    return model.azure_native_put(stored, sent)


def play(overrides: Mapping[str, Any] | None = None) -> tuple[Run, dict[str, int], model.Stored, Run]:
    first = run_stack("azure-dev")
    live = live_sizes(pools(first))
    stored = refreshed(first, live)
    second = run_stack("azure-dev", overrides=overrides or {}, calls=azure_world(first, live))
    return first, live, stored, second


# --- the refresh -------------------------------------------------------------------------------


def test_the_modelled_refresh_stores_every_pool_with_its_moved_count() -> None:
    """The premise, reproduced: after the refresh the stored array is AKS's list, not the program's."""
    first, live, stored, _ = play()
    names = [p["name"] for p in stored.inputs["agentPoolProfiles"]]
    assert sorted(names) == sorted(live) and len(names) > 1
    assert {p["name"]: p["count"] for p in stored.inputs["agentPoolProfiles"]} == live
    assert len(cluster(first).inputs["agentPoolProfiles"]) == 1


def test_a_refresh_with_every_pool_listed_and_counts_moved_leads_to_no_cluster_update() -> None:
    _, _, stored, second = play()
    assert cluster_put(stored, second) is None


def test_without_ignoring_the_array_the_same_refresh_would_put_the_cluster() -> None:
    """The test above can fail: the program's one-pool array against the refreshed one is a PUT
    (what main did before: only ``agentPoolProfiles[0].count`` ignored)."""
    _, _, stored, second = play()
    registration = cluster(second)
    old_design = model.reset_ignored(registration.inputs, stored.inputs, ["agentPoolProfiles[0].count"])
    body = model.azure_native_put(stored, old_design)
    assert body is not None and len(body["agentPoolProfiles"]) == 1


# --- a System pool change ---------------------------------------------------------------------


def bigger_system() -> dict[str, Any]:
    system = stack_config("azure-dev")["gpupools:systemPool"]
    return {"gpupools:systemPool": {**system, "maxSize": system["maxSize"] + 2}}


def test_a_changed_system_pool_setting_reaches_aks_with_every_pool_as_aks_has_it() -> None:
    first, live, stored, second = play(bigger_system())
    body = cluster_put(stored, second)
    assert body is not None, "the systemPool change must reach AKS"
    sent = {p["name"]: p for p in body["agentPoolProfiles"]}
    assert sent["system"]["maxCount"] == stack_config("azure-dev")["gpupools:systemPool"]["maxSize"] + 2
    # Every pool AKS has, none it lacks, each at the count the autoscaler left it at.
    assert set(sent) == set(live)
    assert {name: p["count"] for name, p in sent.items()} == live
    # The other pools go back exactly as AKS listed them (writable fields), read-only ones dropped.
    for name, profile in aks_pools(first, live).items():
        if name != "system":
            assert sent[name] == {k: v for k, v in profile.items() if k not in READ_ONLY}, name


def test_the_system_pool_change_is_not_sent_when_the_cluster_cannot_be_read() -> None:
    first = run_stack("azure-dev")
    live = live_sizes(pools(first))
    calls = azure_world(first, live)

    def denied(_: Mapping[str, Any]) -> dict[str, Any]:
        from gpupools.testing import fakes

        raise fakes.InvokeError("403 Forbidden: AuthorizationFailed")

    second = run_stack(
        "azure-dev", overrides=bigger_system(), calls={**calls, "azure-native:containerservice:getManagedCluster": denied}
    )
    assert cluster(second).ignore_changes == ["agentPoolProfiles"]
    assert cluster_put(refreshed(first, live), second) is None


# --- a cluster-level change in the same up as a pool replacement -------------------------------


def upgrade_and_replace_a_pool() -> dict[str, Any]:
    """Kubernetes 1.35 -> 1.36 and a GPU pool's OS disk size (create-only: a new agent pool)."""
    config = stack_config("azure-dev")
    gpu = copy.deepcopy(config["gpupools:gpuPools"])
    gpu[0]["diskSizeGb"] = int(gpu[0].get("diskSizeGb", 128)) + 128
    return {"gpupools:cluster": {**config["gpupools:cluster"], "kubernetesVersion": "1.36"}, "gpupools:gpuPools": gpu}


def test_a_cluster_change_with_a_pool_replacement_names_only_existing_pools_and_resizes_none() -> None:
    first, live, stored, second = play(upgrade_and_replace_a_pool())
    before = {r.inputs["agentPoolName"] for r in first.of_type(AGENT_POOL)}
    after = {r.inputs["agentPoolName"] for r in second.of_type(AGENT_POOL)}
    replacements = after - before
    assert replacements, "the disk size change must replace a pool (new name)"

    body = cluster_put(stored, second)
    assert body is not None and body["kubernetesVersion"] == "1.36"
    # The cluster's update runs before any pool operation (every pool depends on the cluster) and
    # Pulumi deletes the replaced pools last, so the pools AKS has at the PUT are the live ones.
    sent = {p["name"]: p["count"] for p in body["agentPoolProfiles"]}
    assert set(sent) <= set(live), "a PUT naming a pool AKS does not have is rejected"
    assert not set(sent) & replacements, "pools are never added through the cluster"
    assert sent == {name: live[name] for name in sent}, "no running pool is resized"


# --- the pure plan -----------------------------------------------------------------------------

DESIRED = {
    "name": "system",
    "vm_size": "Standard_D4s_v5",
    "enable_auto_scaling": True,
    "min_count": 2,
    "max_count": 4,
    "count": 2,
    "node_labels": {"gpupools.io/role": "system"},
    "node_taints": ["CriticalAddonsOnly=true:NoSchedule"],
}


def live_pool(**changes: Any) -> LivePool:
    fields: dict[str, Any] = {
        "count": 3,
        "min_count": 2,
        "max_count": 4,
        "vm_size": "Standard_D4s_v5",
        "node_labels": (("gpupools.io/role", "system"),),
        "node_taints": ("CriticalAddonsOnly=true:NoSchedule",),
        "enable_auto_scaling": True,
    }
    return LivePool(**{**fields, **changes})


def test_plan_on_create_sends_the_system_pool() -> None:
    plan = inline_pools.plan_inline_pools(DESIRED, None, None)
    assert plan.profiles == [DESIRED] and plan.ignore_changes == ["agentPoolProfiles"]


def test_plan_ignores_the_array_when_only_the_autoscaler_moved() -> None:
    plan = inline_pools.plan_inline_pools(DESIRED, live_pool(count=4), None)
    assert plan.ignore_changes == ["agentPoolProfiles"] and plan.system_change == ()


@pytest.mark.parametrize(
    "changes, field",
    [({"max_count": 6}, "max_count"), ({"min_count": 1}, "min_count"), ({"node_labels": ()}, "node_labels")],
)
def test_plan_sends_every_pool_when_the_system_pool_changed(changes: dict[str, Any], field: str) -> None:
    others = [{"name": "t4s1", "count": 5, "vm_size": "Standard_NC4as_T4_v3"}]
    listed = [{"name": "system", "count": 3}, *others]
    plan = inline_pools.plan_inline_pools(DESIRED, live_pool(**changes), listed)
    assert plan.system_change == (field,)
    assert plan.ignore_changes == []
    assert plan.profiles == [{**DESIRED, "count": 3}, *others]


def test_a_fixed_system_pool_compares_its_count() -> None:
    """Node Auto Provisioning: the System pool has a fixed size, so its count is ours to change."""
    fixed = {**DESIRED, "enable_auto_scaling": False, "count": 3}
    fixed.pop("min_count")
    fixed.pop("max_count")
    live = live_pool(count=2, min_count=None, max_count=None, enable_auto_scaling=False)
    assert inline_pools.system_pool_changes(fixed, live) == ("count",)
    plan = inline_pools.plan_inline_pools(fixed, live, [{"name": "system", "count": 2}])
    assert plan.profiles == [fixed]


def test_profile_inputs_drop_read_only_and_empty_fields() -> None:
    answer = {"name": "system", "count": 3, "provisioning_state": "Succeeded", "e_tag": None, "max_pods": 250, "tags": None}
    assert profile_inputs(answer) == {"name": "system", "count": 3, "max_pods": 250}


# --- item 2: each pool's count is read when its own PUT is next ---------------------------------


def test_each_pools_count_is_read_after_the_pool_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live-count read of every existing agent pool waits for the previous pool's operation
    (``InvokeOutputOptions.depends_on``), so a pool whose PUT comes late in the chain sends the count
    AKS has then, not the one it had at program start."""
    from gpupools.azure import live_capacity

    real = live_capacity.containerservice.get_agent_pool_output
    reads: list[tuple[str, list[str]]] = []

    def recording(**kwargs: Any) -> Any:
        depends = kwargs["opts"].depends_on or []
        reads.append((kwargs["agent_pool_name"], [d._name for d in depends]))
        return real(**kwargs)

    monkeypatch.setattr(live_capacity.containerservice, "get_agent_pool_output", recording)
    first = run_stack("azure-dev")
    live = live_sizes(pools(first))
    second = run_stack("azure-dev", calls=azure_world(first, live))

    chain = second.of_type(AGENT_POOL)
    assert [name for name, _ in reads] == [r.inputs["agentPoolName"] for r in chain]
    # Issue 28 (review m1): the first pool's read waits for the cluster's own operation (an upgrade of
    # the control plane and System pool), not only for the cluster to exist.
    [managed_cluster] = second.of_type(MANAGED_CLUSTER)
    assert reads[0][1] == [managed_cluster.name], "the first pool reads once the cluster's operation has finished"
    for (_, depends), previous in zip(reads[1:], chain, strict=False):
        assert depends == [previous.name]
    # And what they read is what each pool sends.
    assert {r.inputs["agentPoolName"]: r.inputs["count"] for r in chain} == {
        r.inputs["agentPoolName"]: live[r.inputs["agentPoolName"]] for r in chain
    }
