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
"""

from __future__ import annotations

import pulumi
from pulumi_azure_native import containerservice


def _not_found(error: Exception) -> bool:
    """Whether a failed read means "no such pool (or cluster) yet" rather than a real failure."""
    text = str(error)
    return "404" in text or "NotFound" in text


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
        self._counts: dict[str, int | None] = {}

    def _read(self, agent_pool_name: str) -> int | None:
        pool = containerservice.get_agent_pool(
            agent_pool_name=agent_pool_name,
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            opts=pulumi.InvokeOptions(parent=self.parent),
        )
        return None if pool.count is None else int(pool.count)

    def count(self, agent_pool_name: str) -> int | None:
        """The pool's live node count, or None when the pool does not exist yet or cannot be read."""
        if agent_pool_name not in self._counts:
            try:
                self._counts[agent_pool_name] = self._read(agent_pool_name)
            except Exception as error:
                if not _not_found(error):
                    pulumi.log.warn(
                        f"AKS agent pool {agent_pool_name}: live node count not readable ({error}); its count is left "
                        "to ignore_changes, which is only safe when the update starts with a refresh",
                        resource=self.parent,
                    )
                self._counts[agent_pool_name] = None
        return self._counts[agent_pool_name]
