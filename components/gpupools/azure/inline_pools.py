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

The rule AKS adds (``NotAllAgentPoolOrchestratorVersionSpecifiedAndUnchanged``): "Using managed
cluster api, all Agent pools' OrchestratorVersion must be all specified or all unspecified. If all
specified, they must be stay unchanged or the same with control plane" (MicrosoftDocs/azure-aks-docs
``articles/aks/auto-upgrade-cluster.md``; Azure/AKS #4765 for a Kubernetes upgrade, Azure/ARO-HCP #662
and Azure/azure-cli #25319 for other updates). AKS answers every pool with ``orchestratorVersion``
(azure-rest-api-specs ``aks/stable/2025-09-01/examples/ManagedClustersGet.json`` and
``AgentPoolsGet.json``), so a refreshed array holds it on every standalone pool; a System element the
program created *without* it stays without it (the refresh copies only what changed), and the array
is mixed. So the System profile always carries ``orchestratorVersion`` (the cluster's
``kubernetesVersion``), from the create on.

The design (``plan_inline_pools``):

* **Created**: the array is the one System pool, with ``orchestratorVersion`` (AKS requires a System
  pool in the create body).
* **Afterwards, nothing to send at cluster level** (the usual case): ``ignore_changes`` on the whole
  ``agentPoolProfiles``. The engine resets the path to the stored value before ``Check`` and
  ``Diff`` (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``, ``processIgnoreChanges``), so a
  refresh that lists every pool with moved counts makes no diff and no PUT. A cluster-level change
  the program does not compare (the autoscaler profile, the admin groups) PUTs the stored array:
  every pool as the refresh at the start of this ``up`` read it, each with the version AKS reported,
  so the array is uniformly specified and unchanged.
* **Afterwards, AKS's own array** (``reason`` "AKS's pool array"): when the System pool's settings
  differ from AKS's (``system_pool_changes``, its Kubernetes minor included), or a cluster-level
  setting the program compares differs from the live one (``cluster_changes``: the Kubernetes minor,
  the auto-upgrade channels, the API server's authorized IP ranges). Then this ``up`` is known to
  PUT the cluster, and the array sent is every pool as ``Managed Clusters - Get`` returned it when
  the program started (``AgentPoolCounts.pool_profiles``), as CAPZ sends it
  (kubernetes-sigs/cluster-api-provider-azure ``azure/services/managedclusters/spec.go``:
  "Avoid changing agent pool profiles through AMCP and just use the existing agent pool profiles"),
  with the System element's desired settings laid over AKS's own and its live count, and nothing
  ignored. Every other pool keeps the version AKS reported (unchanged); the System pool carries the
  new ``kubernetesVersion`` in an upgrade (the same as the control plane), else the version AKS
  reported. AKS then upgrades the control plane and the System pool; the standalone pools follow in
  their chain, each with its own ``orchestratorVersion`` (``gpupools.azure.node_pool``). Stacks
  created before the System profile carried a version also take this path once: the first ``up``
  after upgrading sets the auto-upgrade channels, which differ from AKS's, so its PUT replaces the
  mixed stored array with AKS's own.
* **Afterwards, pools not readable**: the whole array is ignored (a System pool change then waits
  for an ``up`` that can read the cluster; a warning says so).

Pools replaced or removed in the same ``up`` still exist when the cluster PUT goes out: every pool
depends on the cluster, so its operations come after the cluster's update, and Pulumi deletes
replaced (create-before-delete, ``gpupools.azure.node_pool``) and removed resources last
(pulumi/pulumi ``pkg/resource/deploy/deployment_executor.go``, ``performDeletes`` after the
registrations). What is left: with ``pulumi up --refresh=false`` the stored array is the one of the
last refresh or update; a cluster-level change the program does not compare then sends that array,
and AKS rejects a body naming a pool it no longer has ("A new agent pool was introduced",
pulumi-azure-native #2719) instead of acting on it. docs/safety.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from gpupools.azure.live_capacity import LiveCluster, LivePool

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


IN_PLACE_ONLY_AT_CREATE: dict[str, str] = {
    "vm_size": "instanceTypes",
    "os_disk_size_gb": "diskSizeGb",
    "availability_zones": "zones",
}
"""System-pool settings AKS cannot change on an existing pool (the same create-only fields the
standalone pools rotate on, ``gpupools.azure.node_pool.CREATE_ONLY_FIELDS``), with the config key that
sets each. The inline System pool cannot be rotated by name, so a change is refused before anything
is sent (``immutable_system_changes``)."""


def minor(version: str | None) -> str | None:
    """``1.35.7`` or ``1.35`` -> ``1.35``; None stays None. AKS treats an ``orchestratorVersion`` of the
    same ``<major.minor>`` as no change ("Updating the cluster with the same <major.minor> once it has
    been created (e.g. 1.14.x -> 1.14) will not trigger an upgrade", the API's ``orchestratorVersion``
    docstring in pulumi-azure-native 3.29 ``ManagedClusterAgentPoolProfileArgs``)."""
    return None if version is None else ".".join(str(version).split(".")[:2])


def live_create_only(live: LivePool) -> dict[str, Any]:
    """The live System pool's ``IN_PLACE_ONLY_AT_CREATE`` values (zones sorted; None when AKS does not say)."""
    return {
        "vm_size": live.vm_size,
        "os_disk_size_gb": live.os_disk_size_gb,
        "availability_zones": list(live.availability_zones) or None,
    }


def immutable_system_changes(desired: Mapping[str, Any], live: LivePool) -> tuple[str, ...]:
    """The ``IN_PLACE_ONLY_AT_CREATE`` fields whose desired value differs from the live System pool's.
    A value AKS does not report (None, no zones) is not compared."""
    have = live_create_only(live)
    changed = []
    for key in IN_PLACE_ONLY_AT_CREATE:
        want = desired.get(key)
        if key == "availability_zones" and want is not None:
            want = sorted(want)
        if have[key] is not None and want is not None and want != have[key]:
            changed.append(key)
    return tuple(changed)


def system_pool_changes(desired: Mapping[str, Any], live: LivePool) -> tuple[str, ...]:
    """The System pool settings gpupools sets in place whose desired value differs from the live one.

    ``desired`` holds the profile's snake_case fields (``enable_auto_scaling``, ``min_count``,
    ``max_count``, ``node_labels``, ``node_taints``, ``orchestrator_version``, and ``count`` for a
    fixed-size pool). A fixed pool's ``count`` is ours; an autoscaled pool's belongs to the autoscaler
    and is never compared. Versions compare by minor (``minor``). Create-only settings are
    ``immutable_system_changes``.
    """
    fixed = desired.get("enable_auto_scaling") is False
    pairs: dict[str, tuple[Any, Any]] = {
        "enable_auto_scaling": (bool(desired.get("enable_auto_scaling")), bool(live.enable_auto_scaling)),
        "node_labels": (tuple(sorted(dict(desired.get("node_labels") or {}).items())), live.node_labels),
        "node_taints": (tuple(sorted(desired.get("node_taints") or ())), tuple(sorted(live.node_taints))),
    }
    if desired.get("orchestrator_version") is not None and live.orchestrator_version is not None:
        pairs["orchestrator_version"] = (minor(desired["orchestrator_version"]), minor(live.orchestrator_version))
    if fixed:
        pairs["count"] = (desired.get("count"), live.count)
    else:
        pairs["min_count"] = (desired.get("min_count"), live.min_count)
        pairs["max_count"] = (desired.get("max_count"), live.max_count)
    return tuple(key for key, (want, have) in pairs.items() if want != have)


@dataclass(frozen=True)
class DesiredCluster:
    """The cluster-level settings ``cluster_changes`` compares with ``LiveCluster`` (plain values)."""

    kubernetes_version: str
    upgrade_channel: str
    node_os_upgrade_channel: str
    authorized_ip_ranges: tuple[str, ...] = ()


def cluster_changes(desired: DesiredCluster, live: LiveCluster) -> tuple[str, ...]:
    """The compared cluster-level settings whose desired value differs from AKS's (camelCase names)."""
    pairs = {
        "kubernetesVersion": (minor(desired.kubernetes_version), minor(live.kubernetes_version)),
        "autoUpgradeProfile.upgradeChannel": (desired.upgrade_channel, live.upgrade_channel),
        "autoUpgradeProfile.nodeOSUpgradeChannel": (desired.node_os_upgrade_channel, live.node_os_upgrade_channel),
        "apiServerAccessProfile.authorizedIPRanges": (tuple(sorted(desired.authorized_ip_ranges)), live.authorized_ip_ranges),
    }
    return tuple(key for key, (want, have) in pairs.items() if want != have)


AKS_DEFAULT_DATAPLANE = "azure"
"""The dataplane of a cluster whose ``networkProfile`` names none (AKS's own, "Azure CNI Powered by
Cilium" being the opt-in: learn.microsoft.com ``azure/aks/azure-cni-powered-by-cilium``)."""

NETWORK_IGNORE: tuple[str, ...] = ("networkProfile.networkDataplane", "networkProfile.networkPolicy")
"""Engine paths of the two network fields pulumi-azure-native 3.29.0 force-replaces the cluster on
(pulumi/pulumi-azure-native PR #4771, "only force-replace immutable networkProfile fields": ``networkDataplane``
and ``networkPolicy`` stay force-new, "updatable only along a specific one-way migration"). On an
existing cluster they are ignored once ``network_changes`` has found the desired values equal to
AKS's: the stored inputs may still lack a value AKS reports (a cluster created without
``network.dataplane``), and an added force-new input is an ``ADD_REPLACE`` (``provider/pkg/provider/diff.go``,
``calculateObjectDiff``), which the protected cluster turns into a refused ``up``."""

CILIUM_UPGRADE_STEPS = (
    "az aks update --resource-group {group} --name {cluster} --network-dataplane cilium --network-policy cilium "
    '(AKS "Upgrade an existing cluster to Azure CNI Powered by Cilium", '
    "learn.microsoft.com/azure/aks/azure-cni-powered-by-cilium; AKS reimages every node), then pulumi up"
)
"""The documented in-place dataplane change, named by the ``network_changes`` error (``{group}`` and
``{cluster}`` filled in)."""


def network_changes(desired_dataplane: str | None, live: LiveCluster) -> tuple[tuple[str, str, str], ...]:
    """``(field, AKS's value, desired value)`` for each force-new network field whose desired value
    differs from the live cluster's: ``networkDataplane`` (None on either side is AKS's default,
    ``azure``) and, for ``cilium``, ``networkPolicy`` (``cilium`` too; ``dataplane_args``)."""
    want = desired_dataplane or AKS_DEFAULT_DATAPLANE
    have = live.network_dataplane or AKS_DEFAULT_DATAPLANE
    changes = []
    if want != have:
        changes.append(("networkProfile.networkDataplane", have, want))
    if want == "cilium" and live.network_policy != "cilium":
        changes.append(("networkProfile.networkPolicy", live.network_policy or "none", "cilium"))
    return tuple(changes)


def network_change_message(changes: Sequence[tuple[str, str, str]], group: str = "<group>", cluster: str = "<cluster>") -> str:
    """The ConfigError rule for ``network_changes``: what differs, why Pulumi cannot apply it, and the
    documented steps for the cluster ``cluster`` in resource group ``group``."""
    listed = ", ".join(f"{field} {have!r} -> {want!r}" for field, have, want in changes)
    steps = CILIUM_UPGRADE_STEPS.format(group=group, cluster=cluster)
    return (
        f"would change the existing cluster's {listed}: pulumi-azure-native replaces a cluster for that "
        "(PR #4771), and the cluster is protected, so the up would be refused. Change the dataplane in place "
        f"first: {steps}; or keep the value the cluster has (network.dataplane: {changes[0][1]}). "
        'See docs/karpenter-nap.md, "Switching an existing AKS stack from cluster-autoscaler"'
    )


def plan_inline_pools(
    desired: Mapping[str, Any],
    live_system: LivePool | None,
    live_profiles: Sequence[Mapping[str, Any]] | None,
    cluster_change: Sequence[str] = (),
) -> InlinePoolsPlan:
    """The inline array for the System pool profile ``desired`` (snake_case fields, ``name`` set).

    ``live_system`` is the System pool as AKS reports it (None: the cluster does not exist yet, or
    the pool cannot be read), ``live_profiles`` every pool of the cluster as its GET lists them
    (None: not readable) and ``cluster_change`` the compared cluster-level settings this ``up``
    changes (``cluster_changes``). Pure; see the module docstring for the cases.
    """
    if live_system is None:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], (), "create (or cluster not readable)")
    changes = system_pool_changes(desired, live_system)
    if not changes and not cluster_change:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], (), "System pool unchanged")
    if live_profiles is None:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], changes, "pools not readable")
    name = desired["name"]
    live_system_profile = next((p for p in live_profiles if p.get("name") == name), None)
    if live_system_profile is None:
        return InlinePoolsPlan([dict(desired)], [AGENT_POOL_PROFILES], changes, "System pool not in the cluster's list")
    system = {**dict(live_system_profile), **dict(desired)}
    live_version = live_system_profile.get("orchestrator_version")
    if live_version is not None and minor(live_version) == minor(desired.get("orchestrator_version")):
        system["orchestrator_version"] = live_version  # the same minor: AKS's own value, unchanged
    if system.get("enable_auto_scaling") is not False and live_system.count is not None:
        system["count"] = live_system.count
    profiles = [system if p.get("name") == name else dict(p) for p in live_profiles]
    return InlinePoolsPlan(profiles, [], changes, "AKS's pool array")
