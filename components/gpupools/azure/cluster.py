"""``AksCluster``: an AKS cluster with exactly one inline System pool, ready for GPU pools.

What it creates (children of the component):

- a resource group ``<cluster>-rg``, unless ``resource_group_name`` is given;
- unless ``network.subnet_id`` is given, a VNet over ``network.cidr`` with a ``nodes`` subnet
  (``gpupools.azure.network``);
- unless ``identity_id`` is given, a user-assigned control-plane identity ``<cluster>-control-plane``
  and a **Network Contributor** role assignment for it on the node subnet, created *before* the
  cluster. AKS's control plane manages load balancers and node networking in a custom subnet with
  this identity; a system-assigned identity only exists once the cluster does, so it could only be
  granted afterwards, and until then those operations (LoadBalancer services, for one) fail. A
  user-assigned identity can be authorized first;
- with ``capacity_reservation_group_ids`` (the stack passes every ``gpuPools[].reservations[].id``)
  and a created identity, a **Contributor** role assignment for that identity on each group's
  resource group, also before the cluster. AKS "Assign capacity reservation groups to AKS node
  pools" (learn.microsoft.com ``aks/use-capacity-reservation-groups``, prerequisites): the pool's
  cluster needs "a user-assigned managed identity with the Contributor role for the resource group
  containing the capacity reservation group"; "system-assigned managed identities don't work with
  this feature"; without it the pool is created "with a warning and no capacity reservation group
  gets associated" (said there of a group without reservations). The same page notes a role
  assignment can take up to 60 minutes to propagate. A brought ``identity_id`` must already hold it.
  The grants are ``reservation_grants`` (by lowercased resource-group ID), which ``GpuNodePool``
  takes to warn when it creates a reserved pool before its grant may have propagated
  (``gpupools.azure.reservation_grant``);
- the ``ManagedCluster``:
  - exactly ONE inline pool, ``system``: ``mode=System``, Regular (on-demand) priority, taint
    ``CriticalAddonsOnly=true:NoSchedule`` (the only NoSchedule taint AKS allows on a System pool),
    the gpupools pool labels, autoscaled ``minSize``..``maxSize`` across the cluster zones, no public
    node IPs, Managed OS disk, ``count`` ``minSize`` on create. What the cluster's
    ``agentPoolProfiles`` holds after that is ``gpupools.azure.inline_pools``: the whole array is
    in ``ignore_changes`` (a refresh stores every pool of the cluster there, and the program must
    not turn that into a PUT), except in an ``up`` that changes the System pool, which sends every
    pool as AKS lists it with the System pool changed and its live count. Never add pools here: a
    managed-cluster PUT with a new inline pool is rejected. GPU pools are standalone ``AgentPool``s
    (``GpuNodePool``);
  - Entra ID (managed AAD) with Azure RBAC for Kubernetes authorization; local accounts disabled
    unless ``cluster.allow_local_accounts`` (for sandboxes only);
  - OIDC issuer and workload identity on (pods get Entra tokens without stored secrets);
  - Azure CNI Overlay: pod CIDR 192.168.0.0/16, service CIDR 172.20.0.0/16, DNS 172.20.0.10
    (``gpupools.rules.RESERVED_CIDRS`` keeps node networks clear of them), outbound through the
    Standard load balancer;
  - the autoscaler profile with the priority expander and the configured tuning, in AKS's canonical
    strings (``gpupools.azure.autoscaler_profile``);
  - with ``node_auto_provisioning``, Node Auto Provisioning instead: ``nodeProvisioningProfile``
    ``mode: Auto`` with no AKS default NodePools, the System pool at a fixed ``minSize`` (no
    autoscaling, so ``count`` is ours and never ignored), no autoscaler profile, and the dataplane
    of ``network.dataplane`` (``cilium`` by default there: Azure CNI Overlay powered by Cilium, the
    configuration the AKS NAP networking docs recommend);
- a role assignment **Azure Kubernetes Service RBAC Cluster Admin** for the principal running Pulumi
  on the cluster: with local accounts off and Azure RBAC on, even the cluster's creator has no
  Kubernetes permissions until granted, and Pulumi itself creates Kubernetes objects (device plugin,
  priority expander). The assignment takes minutes to reach the cluster, so the Kubernetes provider
  depends on a ``KubernetesAccessGate`` that polls ``SelfSubjectAccessReview`` until the deployer may
  create those objects, cluster-scoped ones included, and with NAP until its CRDs are served
  (``gpupools.azure.kubernetes_access``; bounded; only on create, when the cluster or assignment
  is replaced, or when what it checks changes);
- the user kubeconfig (``format=exec``, switched to kubelogin's ``azurecli`` login so ``pulumi up``
  never waits on a device-code prompt; ``gpupools.azure.kubeconfig``) as a SECRET output, and a
  ``pulumi_kubernetes.Provider`` built from it with ``cluster_identifier`` set to the cluster's
  resource ID, so kubeconfig churn (token format, FQDN) never replaces Kubernetes objects.

The cluster has a fixed name (``cluster.name``), is ``protect``ed and states
``delete_before_replace=False``. A change to a field AKS cannot update (location, network plugin,
CIDRs, DNS prefix; which fields force a new cluster has changed between pulumi-azure-native releases:
#4771, #4756, #4505, hence the exact pin in ``requirements.txt``) shows as a replacement in the
preview and then stops at the protection, before anything is deleted. pulumi-azure-native asks for
delete-first on any replacement of a resource it did not name (``provider.go`` ``Diff``), which the
engine follows unless the program sets the option (pulumi/pulumi ``step_generator.go``): stated
False, a replacement that got past the protection would fail at create (the name exists) instead of
deleting the production cluster first. Destroying it is deliberate: ``pulumi state unprotect`` first
(docs/aks.md, "Destroying the cluster on purpose").

Also on the cluster: ``autoUpgradeProfile`` (``UPGRADE_CHANNEL`` ``patch``, ``NODE_OS_UPGRADE_CHANNEL``
``NodeImage``; their windows are ``gpupools.azure.maintenance``), ``apiServerAccessProfile`` from
``cluster.api_allowed_cidrs`` (``api_server_access_profile``), and the System profile's
``orchestratorVersion`` (``gpupools.azure.inline_pools``). The deployer's role assignment names the
principal type of the identity running Pulumi (``gpupools.azure.deployer``).

On an existing cluster (read at program start, ``AgentPoolCounts.cluster``), before anything is
registered: a ``network.dataplane`` (or NAP's default ``cilium``) that differs from the cluster's is a
``ConfigError`` naming ``az aks update --network-dataplane cilium --network-policy cilium``
(``inline_pools.network_changes``): pulumi-azure-native replaces a cluster for that change (PR #4771),
which the protection would refuse. Once equal, the two fields are in ``ignore_changes``
(``cluster_ignore_changes``), and so is an empty ``apiServerAccessProfile`` while AKS has no ranges
either; emptying a list AKS still has sends ``authorizedIPRanges: []`` once
(``api_server_access_profile``).
"""

from __future__ import annotations

import base64
from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice, managedidentity, resources

from gpupools import rules
from gpupools.azure import automatic as automatic_sku
from gpupools.azure import deployer, kubernetes_access
from gpupools.azure.automatic import AUTOMATIC_IGNORED_FIELDS, sku_switch_error
from gpupools.azure.autoscaler_profile import autoscaler_profile
from gpupools.azure.inline_pools import (
    IN_PLACE_ONLY_AT_CREATE,
    NETWORK_IGNORE,
    DesiredCluster,
    InlinePoolsPlan,
    cluster_changes,
    immutable_system_changes,
    live_create_only,
    network_change_message,
    network_changes,
    plan_inline_pools,
)
from gpupools.azure.kubeconfig import AZURE_CLI, LOGIN_MODES, with_kubelogin_login
from gpupools.azure.live_capacity import AgentPoolCounts, LiveCluster, LivePool
from gpupools.azure.naming import create_only_digest, scale_set_regex
from gpupools.azure.network import create_node_network
from gpupools.azure.upgrade import cluster_minutes, operation_timeout
from gpupools.conventions import AKS_SYSTEM_TAINT, CapacityType, Role, pool_labels
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import KubernetesAccessGate
from gpupools.pools import NodePoolInfo
from gpupools.specs import AutoscalerSpec, Cloud, ClusterSpec, NetworkSpec, SystemPoolSpec, frozen_map

SYSTEM_POOL_NAME = "system"
"""The inline System pool's AKS name; its scale set is ``aks-system-<digits>-vmss``."""

POD_CIDR = "192.168.0.0/16"
SERVICE_CIDR = "172.20.0.0/16"
DNS_SERVICE_IP = "172.20.0.10"
"""Overlay pod CIDR, service CIDR and the cluster DNS IP (the 10th address of the service CIDR,
the usual convention). ``gpupools.rules.RESERVED_CIDRS`` rejects node networks overlapping them."""

NETWORK_CONTRIBUTOR_ROLE = "4d97b98b-1d4f-4787-a291-c67834d212e7"
"""Built-in role "Network Contributor" (Azure built-in roles reference)."""

CONTRIBUTOR_ROLE = "b24988ac-6180-42a0-ab88-20f7382dd24c"
"""Built-in role "Contributor" (Azure built-in roles reference): what AKS asks for on a capacity
reservation group's resource group (module docstring)."""

AKS_RBAC_CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
"""Built-in role "Azure Kubernetes Service RBAC Cluster Admin" (Azure built-in roles reference)."""

SKU_TIERS = tuple(t.value for t in containerservice.ManagedClusterSKUTier)
DEFAULT_SKU_TIER = containerservice.ManagedClusterSKUTier.STANDARD.value
"""Standard: the financially backed API-server SLA (99.95% with zones) and control-plane
autoscaling; Free has no SLA and is meant for experiments."""

OS_DISK_TYPE = containerservice.OSDiskType.MANAGED.value
"""Managed OS disks: the default system size (Dsv5) has no cache/temp disk, so Ephemeral is not
possible there; explicit so AKS's size-dependent default never differs from the plan."""


NODE_AUTO_PROVISIONING = containerservice.ManagedClusterNodeProvisioningProfileArgs(
    mode=containerservice.NodeProvisioningMode.AUTO,
    default_node_pools=containerservice.NodeProvisioningDefaultNodePools.NONE,
)
"""``nodeProvisioningProfile`` of a Node Auto Provisioning cluster. ``defaultNodePools: None``: AKS
creates none of its own NodePools ("No Karpenter NodePools are provisioned automatically. Automatic
scaling will not happen unless the user creates one or more NodePool CRD instances",
pulumi-azure-native 3.29 ``NodeProvisioningDefaultNodePools.NONE``); with ``Auto`` (the API's
default) AKS would add a ``default`` on-demand D-series NodePool that buys CPU nodes outside the
config, its cost and its limits."""


UPGRADE_CHANNEL = containerservice.UpgradeChannel.PATCH.value
"""``autoUpgradeProfile.upgradeChannel``: ``patch``. AKS moves the control plane and every pool to the
newest patch of the configured minor ("automatically upgrades the cluster to the latest supported
patch version when it becomes available while keeping the minor version the same", AKS
``auto-upgrade-cluster.md``), inside the ``aksManagedAutoUpgradeSchedule`` window gpupools registers
from ``gpupools:maintenance`` (``gpupools.azure.maintenance``). Minors move only when
``kubernetesVersion`` changes, through Pulumi (control plane and System pool first, then every
pool in its chain). Without a channel (AKS's default, ``none``) patches never move: "Updating the
cluster with the same <major.minor> ... will not trigger an upgrade"."""

NODE_OS_UPGRADE_CHANNEL = containerservice.NodeOSUpgradeChannel.NODE_IMAGE.value
"""``autoUpgradeProfile.nodeOSUpgradeChannel``: ``NodeImage``, stated (AKS's default for new clusters
"Starting with API version 2023-06-01", ``auto-upgrade-node-os-image.md``) so the plan shows it. The
reimage it triggers "is disruptive, following maintenance windows and surge settings": gpupools
always registers the ``aksManagedNodeOSUpgradeSchedule`` window, in both provisioning modes."""


API_SERVER_ACCESS_PROFILE = "apiServerAccessProfile"
"""The engine path of the cluster's ``apiServerAccessProfile`` (ignored while both the desired and
AKS's allow-lists are empty: ``api_server_access``)."""


def api_server_access_profile(
    cidrs: Sequence[str], live_ranges: Sequence[str] = ()
) -> containerservice.ManagedClusterAPIServerAccessProfileArgs | None:
    """``apiServerAccessProfile`` from ``gpupools:cluster.apiAllowedCidrs``: ``authorizedIPRanges`` when
    the list is non-empty ("The IP ranges authorized to access the Kubernetes API server",
    pulumi-azure-native 3.29 ``ManagedClusterAPIServerAccessProfileArgs``; AKS "API server authorized
    IP ranges" requires a Standard load balancer, which the cluster has). Empty while AKS still has
    ranges (``live_ranges``, the cluster's GET at program start): an explicit empty list, because AKS
    keeps what a PUT leaves out, and an empty range is how the feature is turned off (AKS
    ``api-server-authorized-ip-ranges.md``: "To disable authorized IP ranges, ... specify an empty
    range"; kubernetes-sigs/cluster-api-provider-azure ``azure/services/managedclusters/spec.go``: "set
    the AuthorizedIPRanges to empty array ... once so that the Azure API will update the existing
    authorized IP ranges to nil"). Else None: the API server stays reachable from anywhere (Entra ID
    still authenticates every call), and the preflight warns."""
    if cidrs:
        return containerservice.ManagedClusterAPIServerAccessProfileArgs(authorized_ip_ranges=sorted(cidrs))
    if live_ranges:
        return containerservice.ManagedClusterAPIServerAccessProfileArgs(authorized_ip_ranges=[])
    return None


def cluster_ignore_changes(plan: InlinePoolsPlan, live: LiveCluster | None, cidrs: Sequence[str]) -> list[str]:
    """The cluster's ``ignore_changes``: the inline pools' (``plan``), and on an existing cluster
    (``live``) the force-new network fields (``NETWORK_IGNORE``; ``network_changes`` has refused any
    difference from AKS's before this) and, while neither the config nor AKS has an allow-list, the
    ``apiServerAccessProfile`` (nothing to send; the stored value may be the ``[]`` that cleared the
    list, or none, and either matches AKS, so neither becomes a PUT)."""
    paths = list(plan.ignore_changes)
    if live is not None:
        paths += NETWORK_IGNORE
        if not cidrs and not live.authorized_ip_ranges:
            paths.append(API_SERVER_ACCESS_PROFILE)
    return paths


def automatic_access_ignore(live: LiveCluster | None, cidrs: Sequence[str]) -> list[str]:
    """On an existing Automatic cluster, ``apiServerAccessProfile`` while neither the config nor AKS
    has an allow-list (``cluster_ignore_changes``, the same rule without the inline pools and network)."""
    return [API_SERVER_ACCESS_PROFILE] if live is not None and not cidrs and not live.authorized_ip_ranges else []


def check_automatic_arguments(
    prefix: str,
    cluster: ClusterSpec,
    network: NetworkSpec,
    node_auto_provisioning: bool,
    capacity_reservation_group_ids: Sequence[str],
    sku_tier: str,
) -> None:
    """``AksCluster(automatic=True)``: what AKS Automatic needs and cannot take (gpupools.azure.automatic)."""
    if not node_auto_provisioning:
        raise ConfigError(
            f"{prefix}.node_auto_provisioning", "must be True with automatic: AKS Automatic runs Node Auto Provisioning", False
        )
    if network != NetworkSpec():
        raise ConfigError(
            f"{prefix}.network",
            "must be left out with automatic: AKS Automatic creates a managed virtual network, and a network of your own "
            "needs hostedSystemProfile, which API 2025-09-01 lacks",
            network,
        )
    if cluster.allow_local_accounts:
        raise ConfigError(
            f"{prefix}.cluster.allow_local_accounts",
            "must be False with automatic: AKS Automatic has local accounts off",
            True,
        )
    if capacity_reservation_group_ids:
        raise ConfigError(
            f"{prefix}.capacity_reservation_group_ids",
            "must be empty with automatic: NAP pools take no capacity reservation group",
            list(capacity_reservation_group_ids),
        )
    if sku_tier != automatic_sku.SKU_TIER:
        raise ConfigError(
            f"{prefix}.sku_tier", f"must be {automatic_sku.SKU_TIER} with automatic (Automatic clusters use it)", sku_tier
        )


def subscription_of(arm_id: str) -> str:
    """The subscription ID an ARM resource ID names (``/subscriptions/<id>/...``)."""
    parts = arm_id.split("/")
    return parts[2] if len(parts) > 2 and parts[1].lower() == "subscriptions" else ""


def dataplane_args(dataplane: str | None) -> dict[str, str]:
    """``networkProfile`` fields for ``network.dataplane``: nothing when unset (AKS's default, the
    Azure dataplane); for ``cilium``, ``networkDataplane`` and ``networkPolicy`` both ``cilium`` (Azure
    CNI Powered by Cilium enforces network policy itself; AKS "Configure Azure CNI Powered by Cilium":
    "When enabling Cilium on a cluster that uses another network policy engine ... the existing
    engine is uninstalled and replaced by Cilium"); for ``azure``, ``networkDataplane: azure`` only."""
    if dataplane is None:
        return {}
    if dataplane == containerservice.NetworkDataplane.CILIUM.value:
        return {"network_dataplane": dataplane, "network_policy": containerservice.NetworkPolicy.CILIUM.value}
    return {"network_dataplane": dataplane}


def reservation_group_scope(group_id: str) -> str:
    """The resource group ARM ID holding a Capacity Reservation Group (the scope AKS asks for)."""
    return group_id.split("/providers/", 1)[0]


def role_definition_id(subscription_id: str, role: str) -> str:
    """The subscription-scoped ARM ID of a built-in role definition."""
    return f"/subscriptions/{subscription_id}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def system_pool_info(system_pool: SystemPoolSpec, zones: tuple[str, ...]) -> NodePoolInfo:
    """The ``NodePoolInfo`` of the inline System pool (pure)."""
    return NodePoolInfo(
        name=SYSTEM_POOL_NAME,
        pool=SYSTEM_POOL_NAME,
        role=Role.SYSTEM,
        capacity=CapacityType.ON_DEMAND,
        zones=tuple(sorted(zones)),
        instance_types=tuple(system_pool.instance_types),
        min_size=system_pool.min_size,
        max_size=system_pool.max_size,
        labels=frozen_map(pool_labels(SYSTEM_POOL_NAME, Role.SYSTEM, CapacityType.ON_DEMAND)),
        taints=(AKS_SYSTEM_TAINT,),
        autoscaler_group_regex=scale_set_regex(SYSTEM_POOL_NAME),
    )


def system_pool_fields(
    system_pool: SystemPoolSpec,
    zones: tuple[str, ...],
    subnet_id: pulumi.Input[str],
    fixed: bool = False,
    kubernetes_version: str | None = None,
) -> dict[str, Any]:
    """The inline System pool's ``agentPoolProfiles`` entry as snake_case fields (the SDK accepts
    them as ``ManagedClusterAgentPoolProfileArgs``): autoscaled ``minSize``..``maxSize`` with
    ``count`` ``minSize`` (sent on create only; see the module docstring), or with ``fixed`` (Node
    Auto Provisioning) no autoscaling and ``count`` ``minSize``. ``orchestrator_version`` is
    ``kubernetes_version`` when given (the cluster always gives it: ``gpupools.azure.inline_pools``
    says why every pool must carry one)."""
    info = system_pool_info(system_pool, zones)
    common = _system_pool_common(system_pool, info, subnet_id)
    if kubernetes_version is not None:
        common["orchestrator_version"] = kubernetes_version
    if fixed:
        return {**common, "enable_auto_scaling": False, "count": system_pool.min_size}
    return {
        **common,
        "enable_auto_scaling": True,
        "min_count": system_pool.min_size,
        "max_count": system_pool.max_size,
        "count": system_pool.min_size,
    }


def _system_pool_common(system_pool: SystemPoolSpec, info: NodePoolInfo, subnet_id: pulumi.Input[str]) -> dict[str, Any]:
    """The System pool's arguments that do not depend on who scales it (None values left out)."""
    fields = dict(
        name=SYSTEM_POOL_NAME,
        mode=containerservice.AgentPoolMode.SYSTEM,
        type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
        os_type=containerservice.OSType.LINUX,
        vm_size=system_pool.instance_types[0],
        scale_set_priority=containerservice.ScaleSetPriority.REGULAR,
        availability_zones=list(info.zones) or None,
        node_taints=[str(t) for t in info.taints],
        node_labels=dict(info.labels),
        os_disk_size_gb=system_pool.disk_size_gb,
        os_disk_type=OS_DISK_TYPE,
        enable_node_public_ip=False,
        vnet_subnet_id=subnet_id,
    )
    return {key: value for key, value in fields.items() if value is not None}


def _require(value: object, kind: type, path: str) -> None:
    if not isinstance(value, kind):
        raise ConfigError(path, f"must be a {kind.__name__}", type(value).__name__)


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster with one on-demand System pool, Entra ID, workload identity and a k8s provider.

    Type token ``gpupools:index:AksCluster``. See the module docstring for what is created and why.

    Args:
        name: the component's logical name (children are ``<name>-cluster``, ``<name>-rg``, ...).
        cluster: name, Kubernetes version, zones, local accounts, Entra admin groups.
        system_pool: the System pool's VM size, min/max (min >= 2) and disk size.
        network: ``cidr`` for a created VNet (default ``10.40.0.0/16``) or ``subnet_id`` to bring
            your own node subnet. Default: a created network.
        autoscaler: cluster-wide autoscaler tuning. Default: ``AutoscalerSpec()`` (10m / 10m).
        location: Azure region; default the provider's ``azure-native:location``.
        resource_group_name: an existing resource group to use instead of creating ``<cluster>-rg``.
        identity_id: an existing user-assigned identity (ARM ID) for the control plane instead of
            creating one. Its owner must grant it Network Contributor on the node subnet beforehand
            (and Contributor on each capacity reservation group's resource group, if any).
        capacity_reservation_group_ids: the Capacity Reservation Groups (ARM IDs) the cluster's
            pools use; the created identity gets Contributor on each one's resource group. Default none.
        sku_tier: ``Standard`` (default), ``Free`` or ``Premium``.
        kubelogin_login: ``azurecli`` (default: reuse the deployer's ``az login``) or
            ``devicecode`` (the kubeconfig exactly as AKS returns it).
        node_auto_provisioning: default False. True: Node Auto Provisioning
            (``nodeProvisioningProfile``: ``mode: Auto``, ``defaultNodePools: None``, so the only
            NodePools are the ones you create, e.g. with ``NapNodePools``), a System pool of fixed
            size ``system_pool.min_size`` (AKS refuses autoscaled pools in this mode, so ``max_size``
            must equal ``min_size``) and no autoscaler profile (no cluster-autoscaler runs).
            ``network.dataplane`` picks the dataplane (``config`` defaults it to ``cilium`` here).
        queueing: default False. True: the access gate also checks the kinds Kueue and its queues
            create (``gpupools.queueing.kueue``), for stacks with ``gpupools:queueing`` on.
        atomic_scale_up: default False. True (with ``queueing``): the gate also waits until the API
            server serves ProvisioningRequests (``kubernetes_access.gate_served``).
        system_pool_path: the config path named by a System-pool error; default
            ``AksCluster(<name>).system_pool`` (the stack passes ``gpupools:systemPool``).
        network_path: the config path named by a network error (a dataplane change on an existing
            cluster); default ``AksCluster(<name>).network`` (the stack passes ``gpupools:network``).
        cluster_path: the config path named by a SKU switch of an existing cluster; default
            ``AksCluster(<name>).cluster`` (the stack passes ``gpupools:cluster``).

    With ``cluster.sku`` ``Automatic`` the cluster is AKS Automatic (``gpupools.azure.automatic``):
    ``node_auto_provisioning`` must be True, ``network`` left out, no reservation groups, tier
    ``Standard``; AKS runs the system pool, so ``system_pool`` describes gpupools' system NodePool
    (``NapNodePools(system_pool=...)``), and no VNet, subnet grant, agent pool, network profile,
    autoscaler profile or upgrade channel is registered.
        opts: resource options for the component.

    Raises:
        ConfigError: for invalid arguments, before anything is registered.
    """

    name: pulumi.Output[str]
    """The AKS cluster's name."""
    cluster_id: pulumi.Output[str]
    """The cluster's ARM resource ID."""
    resource_group_name: pulumi.Output[str]
    """The resource group holding the cluster (and its network, unless brought)."""
    subnet_id: pulumi.Output[str]
    """The node subnet's ARM ID; GPU pools go into the same subnet."""
    kubeconfig: pulumi.Output[str]
    """The user kubeconfig (exec/kubelogin), a secret."""
    oidc_issuer_url: pulumi.Output[str]
    """The cluster's OIDC issuer, for workload identity federated credentials."""
    provider: k8s.Provider
    """The Kubernetes provider for this cluster (``cluster_identifier`` = the cluster's ID)."""
    system_pool: NodePoolInfo
    """The inline System pool, described for the Kubernetes side."""
    zones: tuple[str, ...]
    """The cluster's zones (plain values, for ``GpuNodePool(cluster_zones=...)``)."""
    managed_cluster: containerservice.ManagedCluster
    """The ``ManagedCluster`` resource itself (the chain start for agent pool operations)."""
    live_counts: AgentPoolCounts | None
    """The reader of this cluster's pools' live node counts (pass it to ``GpuNodePool(live_counts=...)``);
    None when the resource group was given as an output (no name to read with)."""

    def _inline_pools(
        self,
        desired: dict[str, Any],
        desired_cluster: DesiredCluster,
        live_system: LivePool | None,
        live: LiveCluster | None,
        system_pool_path: str,
    ) -> InlinePoolsPlan:
        """The ``agentPoolProfiles`` and their ``ignore_changes`` (``gpupools.azure.inline_pools``).

        Raises ConfigError when the System pool would change a setting AKS cannot change in place."""
        if live_system is not None:
            for field in immutable_system_changes(desired, live_system):
                key = IN_PLACE_ONLY_AT_CREATE[field]
                have = live_create_only(live_system)[field]
                raise ConfigError(
                    f"{system_pool_path}.{key}",
                    f"cannot change on the existing System pool (AKS has {have!r}): AKS does not change a pool's VM size, "
                    "OS disk size or zones in place, and the inline System pool cannot be rotated; keep the current value "
                    '(docs/safety.md, "System pool changes")',
                    desired.get(field),
                )
        cluster_change = cluster_changes(desired_cluster, live) if live is not None else ()
        profiles = None if live is None else [dict(p) for p in live.profiles]
        plan = plan_inline_pools(desired, live_system, profiles, cluster_change)
        if plan.system_change and plan.ignore_changes:
            pulumi.log.warn(
                f"AKS System pool: {', '.join(plan.system_change)} differ from the cluster's but the cluster's pools could "
                "not be read, so this update leaves the System pool as it is",
                resource=self,
            )
        return plan

    def __init__(
        self,
        name: str,
        *,
        cluster: ClusterSpec,
        system_pool: SystemPoolSpec,
        network: NetworkSpec | None = None,
        autoscaler: AutoscalerSpec | None = None,
        location: pulumi.Input[str] | None = None,
        resource_group_name: pulumi.Input[str] | None = None,
        identity_id: pulumi.Input[str] | None = None,
        sku_tier: str = DEFAULT_SKU_TIER,
        kubelogin_login: str = AZURE_CLI,
        node_auto_provisioning: bool = False,
        capacity_reservation_group_ids: Sequence[str] = (),
        opts: pulumi.ResourceOptions | None = None,
        queueing: bool = False,
        atomic_scale_up: bool = False,
        system_pool_path: str | None = None,
        network_path: str | None = None,
        cluster_path: str | None = None,
    ) -> None:
        network = NetworkSpec() if network is None else network
        autoscaler = AutoscalerSpec() if autoscaler is None else autoscaler
        prefix = f"AksCluster({name})"
        if not isinstance(name, str) or not name:
            raise ConfigError("AksCluster.name", "must be a non-empty string", name)
        _require(cluster, ClusterSpec, f"{prefix}.cluster")
        _require(system_pool, SystemPoolSpec, f"{prefix}.system_pool")
        _require(network, NetworkSpec, f"{prefix}.network")
        _require(autoscaler, AutoscalerSpec, f"{prefix}.autoscaler")
        rules.check_cluster(cluster, Cloud.AZURE, f"{prefix}.cluster")
        rules.check_network(network, Cloud.AZURE, cluster.zones, f"{prefix}.network")
        rules.check_system_pool(system_pool, Cloud.AZURE, f"{prefix}.system_pool")
        rules.check_autoscaler(autoscaler, f"{prefix}.autoscaler")
        if isinstance(capacity_reservation_group_ids, str):
            raise ConfigError(
                f"{prefix}.capacity_reservation_group_ids", "must be a list of ARM IDs", capacity_reservation_group_ids
            )
        reservation_scopes: dict[str, str] = {}
        for index, group_id in enumerate(capacity_reservation_group_ids):
            match = rules.AZURE_RESERVATION_GROUP_ID.match(group_id) if isinstance(group_id, str) else None
            if match is None:
                raise ConfigError(
                    f"{prefix}.capacity_reservation_group_ids[{index}]", "must be a Capacity Reservation Group ARM ID", group_id
                )
            reservation_scopes[reservation_group_scope(group_id).lower()] = reservation_group_scope(group_id)
        if sku_tier not in SKU_TIERS:
            raise ConfigError(f"{prefix}.sku_tier", "must be one of " + ", ".join(SKU_TIERS), sku_tier)
        if kubelogin_login not in LOGIN_MODES:
            raise ConfigError(f"{prefix}.kubelogin_login", "must be one of " + ", ".join(LOGIN_MODES), kubelogin_login)
        automatic = cluster.automatic
        if automatic:
            check_automatic_arguments(prefix, cluster, network, node_auto_provisioning, capacity_reservation_group_ids, sku_tier)
        elif node_auto_provisioning and system_pool.max_size != system_pool.min_size:
            raise ConfigError(
                f"{prefix}.system_pool.max_size",
                f"must equal min_size ({system_pool.min_size}) with node_auto_provisioning: AKS refuses autoscaled pools "
                "in nodeProvisioningProfile mode Auto, so the System pool has a fixed size",
                system_pool.max_size,
            )

        super().__init__("gpupools:index:AksCluster", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        zones = tuple(cluster.zones)
        self.zones = zones
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))

        given_rg = f"{cluster.name}-rg" if resource_group_name is None else resource_group_name
        plain_rg = given_rg if isinstance(given_rg, str) else None
        self.live_counts = None if plain_rg is None else AgentPoolCounts(plain_rg, cluster.name, parent=self)
        live_system = None if self.live_counts is None or automatic else self.live_counts.pool(SYSTEM_POOL_NAME)
        existing = None if self.live_counts is None else self.live_counts.cluster()
        switch = sku_switch_error(existing.sku if existing else None, automatic, plain_rg or "<group>", cluster.name)
        if switch is not None:
            raise ConfigError(f"{cluster_path or prefix + '.cluster'}.sku", switch, cluster.sku)
        # The inline-pool machinery reads the cluster only when its System pool exists (never on Automatic).
        live = existing if live_system is not None else None
        self.live_cluster = live
        if live is not None:
            # Before anything is registered: a network change Pulumi would turn into a refused replacement.
            network_change = network_changes(network.dataplane, live)
            if network_change:
                raise ConfigError(
                    f"{network_path or prefix + '.network'}.dataplane",
                    network_change_message(network_change, plain_rg or "<group>", cluster.name),
                    network.dataplane,
                )

        rg_name: pulumi.Input[str]
        if resource_group_name is None:
            group = resources.ResourceGroup(f"{name}-rg", resource_group_name=f"{cluster.name}-rg", location=location, opts=child)
            rg_name = group.name
        else:
            rg_name = resource_group_name

        subnet_id: pulumi.Input[str]
        if automatic:
            subnet_id = ""  # AKS Automatic's managed virtual network: no subnet of gpupools' (gpupools.azure.automatic)
        elif network.subnet_id is not None:
            subnet_id = network.subnet_id
        else:
            created = create_node_network(
                name, cluster_name=cluster.name, cidr=network.cidr, resource_group_name=rg_name, location=location, parent=self
            )
            subnet_id = created.subnet.id

        cluster_depends_on: list[pulumi.Resource] = []
        self.reservation_grants: dict[str, authorization.RoleAssignment] = {}
        if identity_id is None:
            identity = managedidentity.UserAssignedIdentity(
                f"{name}-identity",
                resource_name_=f"{cluster.name}-control-plane",
                resource_group_name=rg_name,
                location=location,
                opts=child,
            )
            control_plane_identity: pulumi.Input[str] = identity.id
            if not automatic:
                subnet_access = authorization.RoleAssignment(
                    f"{name}-subnet-network-contributor",
                    principal_id=identity.principal_id,
                    principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                    role_definition_id=client.subscription_id.apply(lambda s: role_definition_id(s, NETWORK_CONTRIBUTOR_ROLE)),
                    scope=subnet_id,
                    description=f"AKS {cluster.name}: control plane manages node NICs and load balancers in the node subnet",
                    opts=child,
                )
                cluster_depends_on.append(subnet_access)
            for key, scope in sorted(reservation_scopes.items()):
                grant = authorization.RoleAssignment(
                    f"{name}-reservations-contributor-{create_only_digest({'scope': key})}",
                    principal_id=identity.principal_id,
                    principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                    # The built-in role's ID in the group's own subscription, which may not be the deployer's.
                    role_definition_id=role_definition_id(subscription_of(scope), CONTRIBUTOR_ROLE),
                    scope=scope,
                    description=f"AKS {cluster.name}: node pools in the capacity reservation groups of this resource group",
                    opts=child,
                )
                cluster_depends_on.append(grant)
                self.reservation_grants[key] = grant
        else:
            control_plane_identity = identity_id

        if automatic:
            inline = InlinePoolsPlan([], [], (), "AKS Automatic: AKS runs the system pool (gpupools.azure.automatic)")
        else:
            desired_system = system_pool_fields(
                system_pool, zones, subnet_id, fixed=node_auto_provisioning, kubernetes_version=cluster.kubernetes_version
            )
            desired_cluster = DesiredCluster(
                kubernetes_version=cluster.kubernetes_version,
                upgrade_channel=UPGRADE_CHANNEL,
                node_os_upgrade_channel=NODE_OS_UPGRADE_CHANNEL,
                authorized_ip_ranges=tuple(cluster.api_allowed_cidrs),
            )
            inline = self._inline_pools(
                desired_system, desired_cluster, live_system, live, system_pool_path or f"{prefix}.system_pool"
            )
        self.inline_pools = inline
        # AKS Automatic sets the pools, network, provisioning and upgrade channels itself (gpupools.azure.automatic).
        mode_args: dict[str, Any] = (
            {}
            if automatic
            else dict(
                agent_pool_profiles=inline.profiles,
                network_profile=containerservice.ContainerServiceNetworkProfileArgs(
                    network_plugin=containerservice.NetworkPlugin.AZURE,
                    network_plugin_mode=containerservice.NetworkPluginMode.OVERLAY,
                    pod_cidr=POD_CIDR,
                    service_cidr=SERVICE_CIDR,
                    dns_service_ip=DNS_SERVICE_IP,
                    outbound_type=containerservice.OutboundType.LOAD_BALANCER,
                    load_balancer_sku=containerservice.LoadBalancerSku.STANDARD,
                    **dataplane_args(network.dataplane),  # type: ignore[arg-type]
                ),
                auto_scaler_profile=None
                if node_auto_provisioning
                else containerservice.ManagedClusterPropertiesAutoScalerProfileArgs(
                    **autoscaler_profile(autoscaler)  # type: ignore[arg-type]
                ),
                node_provisioning_profile=NODE_AUTO_PROVISIONING if node_auto_provisioning else None,
                auto_upgrade_profile=containerservice.ManagedClusterAutoUpgradeProfileArgs(
                    upgrade_channel=UPGRADE_CHANNEL, node_os_upgrade_channel=NODE_OS_UPGRADE_CHANNEL
                ),
            )
        )
        # On Automatic the existing cluster is read for its SKU and allow-list only (no inline pools).
        access_live = existing if automatic else live
        ignored = (
            [
                *AUTOMATIC_IGNORED_FIELDS,
                automatic_sku.KUBERNETES_VERSION_FIELD,
                *automatic_access_ignore(existing, cluster.api_allowed_cidrs),
            ]
            if automatic
            else cluster_ignore_changes(inline, live, cluster.api_allowed_cidrs)
        )
        moved = (
            automatic_sku.version_moved_warning(cluster.kubernetes_version, existing.kubernetes_version, cluster.name)
            if automatic and existing is not None
            else None
        )
        if moved:
            pulumi.log.warn(moved, resource=self)
        managed_cluster = containerservice.ManagedCluster(
            f"{name}-cluster",
            resource_name_=cluster.name,
            resource_group_name=rg_name,
            location=location,
            dns_prefix=cluster.name,
            kubernetes_version=cluster.kubernetes_version,
            sku=containerservice.ManagedClusterSKUArgs(
                name=containerservice.ManagedClusterSKUName.AUTOMATIC
                if automatic
                else containerservice.ManagedClusterSKUName.BASE,
                tier=sku_tier,
            ),
            identity=containerservice.ManagedClusterIdentityArgs(
                type=containerservice.ResourceIdentityType.USER_ASSIGNED,
                user_assigned_identities=[control_plane_identity],
            ),
            **mode_args,
            enable_rbac=True,
            aad_profile=containerservice.ManagedClusterAADProfileArgs(
                managed=True,
                enable_azure_rbac=True,
                admin_group_object_ids=list(cluster.admin_group_object_ids) or None,
            ),
            disable_local_accounts=not cluster.allow_local_accounts,
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True),
            ),
            api_server_access_profile=api_server_access_profile(
                cluster.api_allowed_cidrs, access_live.authorized_ip_ranges if access_live is not None else ()
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=cluster_depends_on,
                ignore_changes=ignored or None,
                # Protected: no diff (a provider upgrade's force-new field, a network change) can delete the
                # cluster; destroying it is a deliberate `pulumi state unprotect` first (docs/safety.md).
                protect=True,
                # A minor upgrade's PUT (control plane, then the System pool) may outlast the provider's 2 hours.
                custom_timeouts=pulumi.CustomTimeouts(update=operation_timeout(cluster_minutes(system_pool.max_size))),
                # Stated, not the provider's choice: azure-native asks for delete-first on any replacement of
                # a named resource (provider.go Diff). Create-first fails at create (the name exists) instead.
                delete_before_replace=False,
            ),
        )

        token = authorization.get_client_token_output(opts=pulumi.InvokeOutputOptions(parent=self))
        deployer_admin = authorization.RoleAssignment(
            f"{name}-deployer-cluster-admin",
            principal_id=client.object_id,
            # The identity running `up` (a user at a desk, a service principal in CI): gpupools.azure.deployer.
            principal_type=token.token.apply(deployer.principal_type),
            role_definition_id=client.subscription_id.apply(lambda s: role_definition_id(s, AKS_RBAC_CLUSTER_ADMIN_ROLE)),
            scope=managed_cluster.id,
            description=f"AKS {cluster.name}: the principal running Pulumi manages the cluster's Kubernetes objects",
            opts=child,
        )

        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=rg_name,
            resource_name=managed_cluster.name,
            format="exec",
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        plain_kubeconfig: pulumi.Output[str] = credentials.kubeconfigs.apply(
            lambda configs: with_kubelogin_login(base64.b64decode(configs[0].value).decode(), kubelogin_login)
        )
        kubeconfig: pulumi.Output[str] = pulumi.Output.secret(plain_kubeconfig)  # type: ignore[arg-type]
        # Every Kubernetes object uses this provider, so every one waits for the gate, which waits
        # until the deployer's role assignment has reached the cluster (access_gate docstring).
        self.access_gate = KubernetesAccessGate(
            f"{name}-deployer-access",
            kubeconfig=kubeconfig,
            triggers={"clusterId": managed_cluster.id, "roleAssignmentId": deployer_admin.id},
            identity=client.object_id,
            permissions=kubernetes_access.gate_permissions(node_auto_provisioning, queueing),
            served=kubernetes_access.gate_served(node_auto_provisioning, queueing and atomic_scale_up),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[deployer_admin]),
        )
        provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig,
            cluster_identifier=managed_cluster.id,
            enable_config_map_mutable=True,  # ConfigMaps updated in place (gpupools.aws.cluster.ENABLE_CONFIG_MAP_MUTABLE)
            opts=pulumi.ResourceOptions(parent=self, depends_on=[deployer_admin, self.access_gate]),
        )

        self.managed_cluster = managed_cluster
        self.name = managed_cluster.name
        self.cluster_id = managed_cluster.id
        self.resource_group_name = pulumi.Output.from_input(rg_name)
        self.subnet_id = pulumi.Output.from_input(subnet_id)
        self.kubeconfig = kubeconfig
        self.oidc_issuer_url = managed_cluster.oidc_issuer_profile.apply(lambda p: (p.issuer_url if p else None) or "")
        self.provider = provider
        if automatic:
            # gpupools' system NodePool (NapNodePools(system_pool=...)): AKS's managed system nodes are not for workloads.
            from gpupools.azure.nap_nodes import system_pool_info as nap_system_pool_info

            self.system_pool = (
                nap_system_pool_info(system_pool, location, zones)
                if isinstance(location, str)
                else (nap_system_pool_info(system_pool, "", ()))
            )
        else:
            self.system_pool = system_pool_info(system_pool, zones)
        self.register_outputs(
            {
                "name": self.name,
                "id": self.cluster_id,
                "resourceGroupName": self.resource_group_name,
                "subnetId": self.subnet_id,
                "kubeconfig": self.kubeconfig,
                "oidcIssuerUrl": self.oidc_issuer_url,
            }
        )
