"""What the ``ManagedCluster``'s ``agentPoolProfiles`` holds on create and on every later update.

The problem (pulumi-azure-native 3.x, read in ``provider/pkg/provider/provider.go``):

* ``Read`` (every refresh; the project refreshes before each ``up``) projects the cluster's GET onto
  input shape and applies the *changes* between the old and the new projection to the stored
  inputs (``applyDiff``; a list element that is new "was added, copy as-is"). AKS's
  ``Managed Clusters - Get`` lists *every* agent pool in ``properties.agentPoolProfiles``, the
  standalone ``AgentPool``s included, with their current counts. ``agentPoolProfiles`` is not one
  of the provider's "sub-resource" properties (the SDK's docstring of ``agent_pool_profiles`` lacks
  the "also available as standalone resources" note that ``MaintainSubResourceIfUnset`` adds), so
  nothing filters them out: after a refresh the stored array holds all pools while the program
  sends one.
* ``Update`` PUTs the whole managed cluster with the body built from the inputs
  (``defaultUpdate`` -> ``PrepareAzureRESTBody``). A program array that differs from the stored one
  is a diff, so every ``up`` after the first would PUT the cluster, which moves every pool to
  ``Scaling`` (pulumi-azure-native #4264) and can collide with a running autoscaler operation.

The design (``plan_inline_pools``):

* **Created**: the array is the one System pool (AKS requires a System pool in the create body).
* **Afterwards, System pool unchanged** (the usual case): ``ignore_changes`` on the whole
  ``agentPoolProfiles``. The engine resets the path to the stored value before ``Check`` and
  ``Diff`` (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``, ``processIgnoreChanges``), so a
  refresh that lists every pool with moved counts makes no diff and no PUT. A cluster-level change
  (Kubernetes version, autoscaler profile) PUTs the stored array: the pools exactly as the refresh
  at the start of this ``up`` read them. That is the body CAPZ sends on every managed-cluster update
  (kubernetes-sigs/cluster-api-provider-azure ``azure/services/managedclusters/spec.go``: "Avoid
  changing agent pool profiles through AMCP and just use the existing agent pool profiles"). Pools
  replaced or removed in the same ``up`` still exist when that PUT goes out: every pool depends on
  the cluster, so its operations come after the cluster's update, and Pulumi deletes replaced and
  removed resources last (pulumi/pulumi ``pkg/resource/deploy/deployment_executor.go``,
  ``performDeletes`` after the registrations; create-before-delete replacement).
* **Afterwards, System pool changed** (``systemPool`` size range or other settings differ from what
  AKS reports for it): the array is every pool as ``Managed Clusters - Get`` returned it when the
  program started (``AgentPoolCounts.pool_profiles``, AKS's own values for every other pool), with
  the desired System pool in its place and its live count, and nothing ignored. The PUT changes
  the System pool and restates the others as AKS has them.
* **Afterwards, pools not readable**: the whole array is ignored (a System pool change then waits
  for an ``up`` that can read the cluster; a warning says so).

What is left: with ``pulumi up --refresh=false`` the stored array is the one of the last refresh
or update; a cluster-level change then sends that array, and AKS rejects a body naming a pool it
no longer has ("A new agent pool was introduced", pulumi-azure-native #2719) instead of acting on
it. docs/safety.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from gpupools.azure.live_capacity import LivePool

AGENT_POOL_PROFILES = "agentPoolProfiles"
"""The engine path of the whole inline array."""


@dataclass(frozen=True)
class InlinePoolsPlan:
    """The ``agent_pool_profiles`` to register and the ``ignore_changes`` paths that go with them.

    ``system_change`` lists the System pool settings that differ from AKS's (empty when none or
    unknown); ``reason`` says which case applied, for logs and tests.
    """

    profiles: list[Any]
    ignore_changes: list[str]
    system_change: tuple[str, ...]
    reason: str


def system_pool_changes(desired: Mapping[str, Any], live: LivePool) -> tuple[str, ...]:
    """The System pool settings gpupools sets whose desired value differs from the live one.

    ``desired`` holds the profile's snake_case fields (``enable_auto_scaling``, ``min_count``,
    ``max_count``, ``vm_size``, ``node_labels``, ``node_taints``, and ``count`` for a fixed-size
    pool). A fixed pool's ``count`` is ours; an autoscaled pool's belongs to the autoscaler and is
    never compared.
    """
    fixed = desired.get("enable_auto_scaling") is False
    pairs: dict[str, tuple[Any, Any]] = {
        "enable_auto_scaling": (bool(desired.get("enable_auto_scaling")), bool(live.enable_auto_scaling)),
        "vm_size": (desired.get("vm_size"), live.vm_size),
        "node_labels": (tuple(sorted(dict(desired.get("node_labels") or {}).items())), live.node_labels),
        "node_taints": (tuple(sorted(desired.get("node_taints") or ())), tuple(sorted(live.node_taints))),
    }
    if fixed:
        pairs["count"] = (desired.get("count"), live.count)
    else:
        pairs["min_count"] = (desired.get("min_count"), live.min_count)
        pairs["max_count"] = (desired.get("max_count"), live.max_count)
    return tuple(key for key, (want, have) in pairs.items() if want != have)


def plan_inline_pools(
    desired: Mapping[str, Any],
    live_system: LivePool | None,
    live_profiles: Sequence[Mapping[str, Any]] | None,
) -> InlinePoolsPlan:
    """The inline array for the System pool profile ``desired`` (snake_case fields, ``name`` set).

    ``live_system`` is the System pool as AKS reports it (None: the cluster does not exist yet, or
    the pool cannot be read) and ``live_profiles`` every pool of the cluster as its GET lists them
    (None: not readable). Pure; see the module docstring for the cases.
    """
    if live_system is None:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], (), "create (or cluster not readable)")
    changes = system_pool_changes(desired, live_system)
    if not changes:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], (), "System pool unchanged")
    if live_profiles is None:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], changes, "System pool changed, pools not readable")
    name = desired["name"]
    if name not in [p.get("name") for p in live_profiles]:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], changes, "System pool not in the cluster's list")
    system = dict(desired)
    if system.get("enable_auto_scaling") is not False and live_system.count is not None:
        system["count"] = live_system.count
    profiles = [system if p.get("name") == name else dict(p) for p in live_profiles]
    return InlinePoolsPlan(profiles, [], changes, "System pool changed")
