"""EKS node auto repair for GPU nodes: ``nodeRepairConfig`` on the GPU managed node groups, the
node monitoring agent add-on that reports GPU health, and Karpenter's ``NodeRepair`` gate.

What EKS repairs, and on what (EKS user guide ``nodes/node-repair.adoc``, "Automatically repair
nodes in EKS clusters"): a node whose ``AcceleratedHardwareReady`` condition is False for 10
minutes is rebooted or replaced (managed node groups; ``Replace`` only under Karpenter), one whose
``Ready``, ``KernelReady``, ``NetworkingReady``, ``StorageReady`` or ``ContainerRuntimeReady`` is
False for 30 minutes is replaced. Repair stops when more than 20% of a group's nodes (with more than
five nodes) are unhealthy. Every condition but ``Ready`` comes from the **EKS node monitoring
agent** (aws/eks-node-monitoring-agent ``README.md``: "the agent applies a dedicated
``NodeCondition`` ... (e.g. ``KernelReady``, ``NetworkingReady``, ``StorageReady``,
``AcceleratedHardwareReady``). These conditions integrate with Amazon EKS node auto repair"), so
without the agent a GPU with XID errors is never repaired: node repair and the agent come together.

* **Managed node groups** (``gpupools:provisioner: cluster-autoscaler``): ``node_repair_config``
  ``{enabled: true}`` on every GPU group, Spot, on-demand and reserved (``CreateNodegroup``'s
  ``nodeRepairConfig``, botocore ``eks`` model ``NodeRepairConfig``: "Node auto repair is disabled
  by default"; ``UpdateNodegroupConfig`` takes the same field, and the provider sends it there
  (terraform-provider-aws ``internal/service/eks/node_group.go``, ``resourceNodeGroupUpdate``:
  ``node_repair_config`` is among the ``UpdateNodegroupConfig`` changes, not a replacement), so
  existing groups change in place). EKS's defaults for thresholds and parallelism are kept. Not on the system group or CPU
  pools by default: the point is GPU health, and a system node replaced by a repair takes the
  autoscaler and CoreDNS with it (``CpuNodeGroup(node_repair=True)`` turns it on for a CPU pool).
* **Karpenter**: the ``NodeRepair`` feature gate (``settings.featureGates.nodeRepair``), which
  v1.14.1 has as alpha, off by default (``charts/karpenter/values.yaml``: "nodeRepair is ALPHA and
  is disabled by default"; ``website/content/en/docs/reference/settings.md``: "NodeRepair | false |
  Alpha | v1.1.x"). Its repair policies (``pkg/cloudprovider/cloudprovider.go``,
  ``RepairPolicies``) are the same conditions, ``AcceleratedHardwareReady`` after 10 minutes. It
  needs the agent ("Ensure you have a Node Monitoring Agent deployed", ``concepts/disruption.md``,
  Node Auto Repair) and nothing else: the controller already deletes NodeClaims and nodes
  (``charts/karpenter/templates/clusterrole-core.yaml``) and terminates instances (its node
  lifecycle policy). A Karpenter repair terminates the node "bypassing the standard drain and
  grace period procedures", which is why ``gpupools:nodeRepair`` is off by default there.
* **The agent**: the ``eks-node-monitoring-agent`` EKS add-on at ``NODE_MONITORING_AGENT_ADDON_VERSION``,
  conflicts resolved like the stack's CoreDNS add-on (``OVERWRITE``: the stack owns its
  configuration). Its configuration values (checked against the add-on's configuration schema,
  aws/eks-node-monitoring-agent ``charts/configuration.schema.json`` at v1.7.0: ``nodeAgent`` and
  ``dcgmAgent`` each take ``tolerations``, an array of objects) place both DaemonSets on the GPU
  nodes (``configuration_values``).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pulumi
import pulumi_aws as aws

from gpupools.conventions import Role
from gpupools.pools import NodePoolInfo
from gpupools.scheduling import tolerations
from gpupools.versions import NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_ADDON_VERSION

ADDON_NAME = NODE_MONITORING_AGENT_ADDON
"""The EKS add-on's name (``gpupools.versions.NODE_MONITORING_AGENT_ADDON``)."""

RESOLVE_CONFLICTS = "OVERWRITE"
"""``CreateAddon`` / ``UpdateAddon`` ``resolveConflicts`` (botocore ``eks`` enum ``OVERWRITE``,
``NONE``, ``PRESERVE``): a copy installed by hand (the agent's Helm chart) is taken over, and the
configuration below stays the stack's, as for CoreDNS (``gpupools.aws.cluster``)."""

TOLERATE_EVERYTHING = {"operator": "Exists"}
"""A toleration with no key and ``Exists`` tolerates every taint (Kubernetes ``core/v1``
``Toleration``: "Exists ... Empty key with operator Exists matches all keys, values and effects")."""


def node_repair_config(enabled: bool) -> aws.eks.NodeGroupNodeRepairConfigArgs:
    """``node_repair_config`` of a managed node group: ``{enabled: <enabled>}``, sent either way.

    Why ``{enabled: false}`` and not the block left out: ``node_repair_config`` is Optional and
    Computed in the provider's schema (terraform-provider-aws ``internal/service/eks/node_group.go``,
    ``"node_repair_config"``: ``Optional: true, Computed: true``), so an omitted block keeps whatever
    the state holds and no update is sent: turning ``gpupools:nodeRepair`` off would leave repair on
    for every existing group. An explicit ``false`` is a change the provider sends through
    ``UpdateNodegroupConfig`` (``nodeRepairConfig`` is one of its members, botocore ``eks`` model),
    and on a new group it states EKS's own default ("Node auto repair is disabled by default",
    botocore ``eks`` ``NodeRepairConfig.enabled``), so it costs nothing."""
    return aws.eks.NodeGroupNodeRepairConfigArgs(enabled=enabled)


def configuration_values(pools: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """The add-on's configuration values for a cluster with ``pools``.

    * ``nodeAgent.tolerations``: everything (``TOLERATE_EVERYTHING``), as the chart's own default
      (``values.yaml``), stated so the GPU taint, every pool taint and Karpenter's startup taints
      are tolerated whatever a later default says: a node without the agent is a node whose GPU
      failures are never repaired.
    * ``dcgmAgent.tolerations``: one exact toleration per taint of the GPU pools (the GPU taint and
      every pool taint). The DCGM host engine the agent's NVIDIA checks query has no tolerations by
      default (``values.yaml``: ``dcgmAgent.tolerations: []``), so on gpupools' tainted GPU nodes
      it would never run. Its own affinity (NVIDIA instance types, amd64) is kept.
    """
    gpu = [pool for pool in pools if pool.role is Role.GPU]
    return {
        "nodeAgent": {"tolerations": [dict(TOLERATE_EVERYTHING)]},
        "dcgmAgent": {"tolerations": tolerations([taint for pool in gpu for taint in pool.taints])},
    }


def create_node_monitoring_agent(
    name: str,
    cluster_name: pulumi.Input[str],
    pools: Sequence[NodePoolInfo],
    opts: pulumi.ResourceOptions | None = None,
) -> aws.eks.Addon:
    """The ``eks-node-monitoring-agent`` add-on (module docstring) for a cluster whose pools are
    ``pools``. Give ``depends_on`` the system node group: the provider waits for the add-on to be
    ``ACTIVE``, and on a new cluster the system nodes are the only ones its pods can run on."""
    return aws.eks.Addon(
        name,
        cluster_name=cluster_name,
        addon_name=ADDON_NAME,
        addon_version=NODE_MONITORING_AGENT_ADDON_VERSION,
        resolve_conflicts_on_create=RESOLVE_CONFLICTS,
        resolve_conflicts_on_update=RESOLVE_CONFLICTS,
        configuration_values=json.dumps(configuration_values(pools), sort_keys=True),
        opts=opts,
    )
