"""The live node count of AKS agent pools, read at deploy time, to send as ``count`` on update.

Why a program reads it: AKS's cluster autoscaler owns an autoscaled pool's node count, and an
update of an agent pool is one PUT of the whole pool. pulumi-azure-native builds that body from the
resource's inputs (``provider/pkg/provider/provider.go``: ``Update`` -> ``defaultUpdate`` ->
``PrepareAzureRESTBody(id, inputs)`` -> ``CreateOrUpdate``), so a ``maxSize``, label or version
change sends *some* ``count``: the one from the stored state under ``ignore_changes`` (stale unless
the update started with a refresh), or, here, the live one. Azure's own tools send the live count
on every update of an autoscaled pool: ``az aks nodepool update --update-cluster-autoscaler`` reads
the pool and writes back its ``count`` with the new ``minCount``/``maxCount`` (Azure/azure-cli
``acs/agentpool_decorator.py``, ``update_auto_scaler_properties``), and terraform-provider-azurerm
PUTs the pool it just read with only the changed fields (``resourceKubernetesClusterNodePoolUpdate``).
A live count below a newly raised ``minCount`` is accepted on update (Azure/AKS #1758: the check
was removed from the CLI "and should be unblocked in ARM"); AKS's autoscaler then works within the
new bounds. A count that differs from the live one is the dangerous value: it asks AKS to resize a
pool the autoscaler owns, which Azure's own CLI refuses to ask for (Azure/azure-cli #13996: "If
autoscaler is enabled for a nodepool, manual scale will be blocked").

``AgentPoolCounts`` reads one pool at a time (``containerservice.get_agent_pool``, the
``Agent Pools - Get`` operation, which also serves the inline system pool; permission
``Microsoft.ContainerService/managedClusters/agentPools/read``, the read a refresh makes). A pool
that does not exist yet, or cannot be read, has no live count: its ``count`` stays the create-time
value under ``ignore_changes``, and the refresh before every update (``Pulumi.yaml``
``options.refresh: always``) keeps that stored value live.

When a count is read: the read at program start only decides whether a pool exists (and gives the
inline System pool's settings, ``LivePool``). The count an existing standalone pool *sends* is read
again by ``count_after``, an output-form invoke that runs only once the pool operation before it
in the cluster's chain has finished (``InvokeOutputOptions(depends_on=...)``; pulumi
``sdk/python/lib/pulumi/runtime/invoke.py``: the engine gates the invoke on its dependencies, or the
SDK waits for their IDs), so a pool whose PUT comes tens of minutes into an ``up`` sends the count
AKS has then, not the one it had when the program started.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_azure_native import containerservice

_STATUS_404 = re.compile(r"\bStatus=404\b")
"""How pulumi-azure-native words an ARM 404 in an invoke's error: ``PulumiAzcoreResponseError.Error()``
is ``Status=<code> Code="<code>" Message="..."`` (``provider/pkg/azure/client_azcore.go``,
``newResponseError``), wrapped as ``request failed <resource ID>: ...`` (``provider/pkg/provider/provider.go``,
``Invoke``). The status is parsed, not a substring: a resource ID whose subscription GUID contains
``404`` must not turn a 403 into "not there"."""


def _not_found(error: Exception) -> bool:
    """Whether a failed read means "no such pool (or cluster) yet" (ARM answered 404) rather than a
    real failure (denied, throttled, unreachable), which is logged."""
    return _STATUS_404.search(str(error)) is not None


@dataclass(frozen=True)
class LivePool:
    """The settings of an existing agent pool that gpupools sets on the inline System pool, as AKS
    reports them (``Agent Pools - Get``). Compared with the desired System pool to decide whether a
    managed-cluster update must carry a System pool change (``gpupools.azure.cluster``)."""

    count: int | None
    min_count: int | None
    max_count: int | None
    vm_size: str | None
    node_labels: tuple[tuple[str, str], ...]
    node_taints: tuple[str, ...]
    enable_auto_scaling: bool | None
    orchestrator_version: str | None = None
    os_disk_size_gb: int | None = None
    availability_zones: tuple[str, ...] = ()

    @classmethod
    def from_response(cls, pool: Any) -> LivePool:
        """From ``containerservice.get_agent_pool``'s result (or anything with its attribute names)."""

        def _int(value: Any) -> int | None:
            return None if value is None else int(value)

        return cls(
            count=_int(pool.count),
            min_count=_int(pool.min_count),
            max_count=_int(pool.max_count),
            vm_size=pool.vm_size,
            node_labels=tuple(sorted((pool.node_labels or {}).items())),
            node_taints=tuple(pool.node_taints or ()),
            enable_auto_scaling=pool.enable_auto_scaling,
            orchestrator_version=getattr(pool, "orchestrator_version", None),
            os_disk_size_gb=_int(getattr(pool, "os_disk_size_gb", None)),
            availability_zones=tuple(sorted(getattr(pool, "availability_zones", None) or ())),
        )


def _field(value: Any, name: str) -> Any:
    """``value.name`` for SDK result objects and ``value[name]`` for dicts (the mock's answers); None when absent."""
    if value is None:
        return None
    if hasattr(type(value), name):
        return getattr(value, name)
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


@dataclass(frozen=True)
class LiveCluster:
    """What ``Managed Clusters - Get`` says about the settings gpupools sets at cluster level, and every
    agent pool of the cluster (``profiles``, reduced by ``profile_inputs``). Compared with the program's
    desired cluster to know whether this ``up`` sends a managed-cluster PUT that must carry AKS's own
    pool array (``gpupools.azure.inline_pools``)."""

    profiles: tuple[dict[str, Any], ...]
    kubernetes_version: str | None = None
    upgrade_channel: str | None = None
    node_os_upgrade_channel: str | None = None
    authorized_ip_ranges: tuple[str, ...] = ()
    network_dataplane: str | None = None
    network_policy: str | None = None
    sku: str | None = None

    @classmethod
    def from_response(cls, cluster: Any) -> LiveCluster:
        """From ``containerservice.get_managed_cluster``'s result (or a dict keyed like it). An absent
        or null ``authorizedIPRanges`` (what AKS answers once the list is cleared) is ``()``."""
        upgrade = _field(cluster, "auto_upgrade_profile")
        access = _field(cluster, "api_server_access_profile")
        network = _field(cluster, "network_profile")
        return cls(
            profiles=tuple(profile_inputs(p) for p in _field(cluster, "agent_pool_profiles") or []),
            kubernetes_version=_field(cluster, "kubernetes_version"),
            upgrade_channel=_field(upgrade, "upgrade_channel"),
            node_os_upgrade_channel=_field(upgrade, "node_os_upgrade_channel"),
            authorized_ip_ranges=tuple(sorted(_field(access, "authorized_ip_ranges") or ())),
            network_dataplane=_field(network, "network_dataplane"),
            network_policy=_field(network, "network_policy"),
            sku=_field(_field(cluster, "sku"), "name"),
        )


def _sent_count(agent_pool_name: str, count: Any) -> int:
    if count is None:
        raise RuntimeError(f"AKS agent pool {agent_pool_name}: the read before its update returned no count; nothing sent")
    return int(count)


class AgentPoolCounts:
    """Live node counts of one AKS cluster's agent pools, read once per pool on demand.

    Args:
        resource_group_name: the cluster's resource group (plain: the read runs while the program runs).
        cluster_name: the AKS cluster's name.
        parent: the component the reads belong to (its providers are used); default none (the
            default provider).
    """

    def __init__(self, resource_group_name: str, cluster_name: str, parent: pulumi.Resource | None = None) -> None:
        self.resource_group_name = resource_group_name
        self.cluster_name = cluster_name
        self.parent = parent
        self._pools: dict[str, LivePool | None] = {}
        self._cluster: LiveCluster | None = None
        self._cluster_read = False

    def _read(self, agent_pool_name: str) -> LivePool:
        pool = containerservice.get_agent_pool(
            agent_pool_name=agent_pool_name,
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            opts=pulumi.InvokeOptions(parent=self.parent),
        )
        return LivePool.from_response(pool)

    def pool(self, agent_pool_name: str) -> LivePool | None:
        """The pool as AKS reports it at program start, or None when it does not exist yet or
        cannot be read (a warning says which)."""
        if agent_pool_name not in self._pools:
            try:
                self._pools[agent_pool_name] = self._read(agent_pool_name)
            except Exception as error:
                if not _not_found(error):
                    pulumi.log.warn(
                        f"AKS agent pool {agent_pool_name}: live node count not readable ({error}); its count is left "
                        "to ignore_changes, which is only safe when the update starts with a refresh",
                        resource=self.parent,
                    )
                self._pools[agent_pool_name] = None
        return self._pools[agent_pool_name]

    def count(self, agent_pool_name: str) -> int | None:
        """The pool's live node count at program start, or None when the pool does not exist yet or
        cannot be read."""
        pool = self.pool(agent_pool_name)
        return None if pool is None else pool.count

    def count_after(self, agent_pool_name: str, after: pulumi.Resource | None) -> pulumi.Output[int]:
        """The pool's live node count, read when ``after`` (the pool operation before this pool's in
        the cluster's chain) has finished: the value to send in this pool's own PUT. Only for pools
        that exist (``count`` is not None): a pool that disappeared meanwhile fails the read, and
        the ``up``, instead of sending a guess."""
        read = containerservice.get_agent_pool_output(
            agent_pool_name=agent_pool_name,
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            opts=pulumi.InvokeOutputOptions(parent=self.parent, depends_on=[after] if after is not None else None),
        )
        return read.count.apply(lambda count: _sent_count(agent_pool_name, count))

    def cluster(self) -> LiveCluster | None:
        """The cluster as ``Managed Clusters - Get`` returns it at program start (read once), or None
        when it does not exist yet or cannot be read (a warning says which)."""
        if not self._cluster_read:
            self._cluster_read = True
            try:
                response = containerservice.get_managed_cluster(
                    resource_group_name=self.resource_group_name,
                    resource_name=self.cluster_name,
                    opts=pulumi.InvokeOptions(parent=self.parent),
                )
                self._cluster = LiveCluster.from_response(response)
            except Exception as error:
                if not _not_found(error):
                    pulumi.log.warn(
                        f"AKS cluster {self.cluster_name}: not readable ({error}); a managed-cluster update in this "
                        "up sends the pool array stored by the last refresh",
                        resource=self.parent,
                    )
                self._cluster = None
        return self._cluster

    def pool_profiles(self) -> list[dict[str, Any]] | None:
        """Every agent pool of the cluster as ``Managed Clusters - Get`` lists it in
        ``properties.agentPoolProfiles`` (the inline pool and the standalone ones alike, in AKS's
        order), each reduced to ``ManagedClusterAgentPoolProfileArgs`` fields (read-only ones such
        as ``provisioningState`` or ``currentOrchestratorVersion`` dropped); or None when the
        cluster does not exist yet or cannot be read. This is the array CAPZ sends back on every
        managed-cluster update (kubernetes-sigs/cluster-api-provider-azure
        ``azure/services/managedclusters/spec.go``: "Avoid changing agent pool profiles through AMCP
        and just use the existing agent pool profiles")."""
        cluster = self.cluster()
        return None if cluster is None else [dict(p) for p in cluster.profiles]


PROFILE_WRITABLE: tuple[str, ...] = (
    "name",
    "count",
    "vm_size",
    "os_disk_size_gb",
    "os_disk_type",
    "kubelet_disk_type",
    "workload_runtime",
    "message_of_the_day",
    "vnet_subnet_id",
    "pod_subnet_id",
    "pod_ip_allocation_mode",
    "max_pods",
    "os_type",
    "os_sku",
    "max_count",
    "min_count",
    "enable_auto_scaling",
    "scale_down_mode",
    "type",
    "mode",
    "orchestrator_version",
    "upgrade_settings",
    "power_state",
    "availability_zones",
    "enable_node_public_ip",
    "node_public_ip_prefix_id",
    "scale_set_priority",
    "scale_set_eviction_policy",
    "spot_max_price",
    "tags",
    "node_labels",
    "node_taints",
    "proximity_placement_group_id",
    "kubelet_config",
    "linux_os_config",
    "enable_encryption_at_host",
    "enable_ultra_ssd",
    "enable_fips",
    "gpu_instance_profile",
    "creation_data",
    "capacity_reservation_group_id",
    "host_group_id",
    "network_profile",
    "windows_profile",
    "security_profile",
    "gpu_profile",
    "gateway_profile",
    "virtual_machines_profile",
    "virtual_machine_nodes_status",
    "local_dns_profile",
)
"""The properties of an ``agentPoolProfiles`` entry that the AKS REST spec does not mark ``readOnly``
at API 2025-09-01 (the version pulumi-azure-native 3.29.0 uses), as the SDK's snake_case names:
``ManagedClusterAgentPoolProfile`` (``name``) and ``ManagedClusterAgentPoolProfileProperties`` in
Azure/azure-rest-api-specs ``specification/containerservice/resource-manager/Microsoft.ContainerService/
aks/stable/2025-09-01/managedClusters.json``. Read-only there, so never echoed: ``eTag``,
``currentOrchestratorVersion``, ``nodeImageVersion``, ``provisioningState``. Left out although not
``localDNSProfile`` came into that API version's file later than the rest (its example
``AgentPoolsCreate_LocalDNS.json``); the SDK has it. Left out although not marked: ``status`` ("Contains read-only information about the Agent Pool": its only member,
``provisioningError``, is ``readOnly``). ``tests/test_aks_lifecycle.py`` keeps this list equal to the
SDK's input type."""

ECHO_REJECTED: tuple[str, ...] = ("security_profile", "artifact_streaming_profile")
"""Writable per the spec, yet refused by the live resource provider inside a managed-cluster PUT's
``agentPoolProfiles``: the Azure Verified Module for AKS "Filters ``securityProfile`` and
``artifactStreamingProfile`` out of parent ``managedClusters.agentPoolProfiles``, because the live RP
rejects those fields there even though the REST spec exposes them"
(Azure/terraform-azurerm-avm-res-containerservice-managedcluster PR #196; issue #152 and PR #176: a
managed-cluster PUT failed with ``UnmarshalError ... unknown field "sshAccess"``, the member of an
agent pool's ``securityProfile``). gpupools sets neither on any pool, so leaving them out of the echo
changes nothing AKS holds: a field a managed-cluster PUT omits for an existing pool is the pool's own
(set through ``Agent Pools - Create Or Update``), which is also where AVM manages them."""

PROFILE_INPUTS: frozenset[str] = frozenset(PROFILE_WRITABLE) - frozenset(ECHO_REJECTED)
"""What ``profile_inputs`` keeps of an ``agentPoolProfiles`` entry AKS returned."""


def profile_inputs(profile: Any) -> dict[str, Any]:
    """One ``agentPoolProfiles`` entry of a ``get_managed_cluster`` answer as input fields: the
    writable top-level fields (``PROFILE_INPUTS``; None dropped), nested objects as AKS returned
    them. ARM's contract is that a GET's output may be passed to a PUT (Azure/azure-openapi-validator
    ``docs/request-body-must-exist-for-put-patch.md``, RPC-Put-V1-28: the request body exists "to
    ensure that the output of the Get request may be passed in to the Put request"), and CAPZ sends
    AKS's own profiles back the same way; what the spec marks read-only and what the live RP is
    known to refuse (``ECHO_REJECTED``) are not sent. What one real PUT must still confirm is in
    docs/aks.md ("What a real cluster must still confirm")."""
    return {key: value for key, value in dict(profile).items() if key in PROFILE_INPUTS and value is not None}
