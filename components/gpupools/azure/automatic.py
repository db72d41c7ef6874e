"""AKS Automatic (``gpupools:cluster.sku: Automatic``): what gpupools states, leaves to AKS, and refuses.

AKS Automatic is a ``ManagedCluster`` with ``sku: {name: Automatic, tier: Standard}``. AKS then
preconfigures, and keeps, what gpupools states itself on a Base cluster ("Preconfigured" in AKS
``intro-aks-automatic.md``: it cannot be turned off): the system node pool (AKS-managed, "You can't
create AKS Automatic clusters without managed system node pools in any region",
``aks-automatic-limitations.md``), Node Auto Provisioning, the managed virtual network with Azure CNI
Overlay powered by Cilium, automatic cluster upgrades (``stable``) and node image upgrades
(``NodeImage``), Azure RBAC, workload identity, deployment safeguards and the **baseline Pod
Security Standard in Enforce** (``deployment-safeguards.md``). The quickstart creates one with
``sku`` and ``identity`` only, no ``agentPoolProfiles`` (``automatic/quick-automatic-managed-network.md``).

What gpupools does on it (``AksCluster(automatic=True)``, ``NapNodePools(automatic=True)``):

* the cluster with ``sku`` Automatic/Standard, the control-plane identity, Entra ID with Azure RBAC,
  local accounts off, OIDC and workload identity stated (Automatic's own values, so the plan shows
  them), ``apiServerAccessProfile`` from ``cluster.apiAllowedCidrs``; **no** ``agentPoolProfiles``,
  ``networkProfile``, ``autoScalerProfile``, ``nodeProvisioningProfile`` or ``autoUpgradeProfile``:
  AKS sets them, and they are in ``ignore_changes`` (``AUTOMATIC_IGNORED_FIELDS``) so that what a
  refresh stores for them never becomes a PUT;
* per GPU and CPU pool the same AKSNodeClass and NodePool as under NAP; GPU pools are **AKS managed
  GPU** pools (``gpuDriver: managed``, the default there): the AKSNodeClass carries the tag
  ``EnableManagedGPUExperience: "true"`` (``MANAGED_GPU_TAG``), with which AKS installs the driver,
  the device plugin and a DCGM exporter (port 19400) on the pool's nodes (AKS ``aks-managed-gpu-nodes.md``,
  preview, feature ``Microsoft.ContainerService/ManagedGPUExperiencePreview``; the tag is the route
  for pools without ``gpuProfile.nvidia.managementMode``, which neither API 2025-09-01 nor the
  AKSNodeClass of karpenter-provider-azure v1.14.2 has). gpupools deploys no device plugin and no
  DCGM exporter there;
* a system NodePool ``system`` (on-demand, untainted, ``systemPool`` sizes, no minimum, the lowest
  weight) for gpupools' own controllers (Kueue): AKS's managed system nodes are not for workloads.

Why not gpupools' own device plugin in a namespace the safeguards exclude: the plugin needs a
``hostPath`` volume, which the baseline standard forbids, and the exclusion lives in the cluster's
``deploymentSafeguards/default`` extension resource, which Automatic creates with the cluster. The
only pulumi-azure-native resource for it (``containerservice.DeploymentSafeguard``, API
2025-04-02-preview) checks existence before a create and fails with "cannot create already existing
resource" (pulumi-azure-native ``provider/pkg/azure/client_azcore.go`` ``CanCreate``: a 200 with a
body for a resource that is neither a singleton nor in ``defaults/defaultResourcesState.go``); the az
CLI's ``aks safeguards create`` refuses the same way and points at ``update``. Adopting it would take
an ``import`` of an ID that does not exist at the first preview.

A pinned-API limit, said rather than guessed: API 2025-09-01 has no ``hostedSystemProfile``, so a
network of your own (which needs ``hostedSystemProfile.{nodeSubnetId, systemNodeSubnetId}`` and an
API-server subnet) cannot be expressed: ``gpupools:network`` is refused with Automatic. Whether AKS
fills ``hostedSystemProfile`` for a 2025-09-01 request as it does for the quickstart's (which sends
neither field) is not documented; the managed-network quickstart relies on the same server default.

Switching an existing cluster is refused before anything is registered (``sku_switch_error``):
"Migration from AKS base SKU to automatic SKU isn't supported" (``aks-automatic-limitations.md``),
and the way back (add a ``System`` pool, then ``az aks update --sku base``, ``aks-automatic-sku-migration.md``)
is not what a changed ``sku`` would send. docs/aks-automatic.md has the blue-green move.
"""

from __future__ import annotations

from gpupools.specs import AKS_AUTOMATIC

SKU_TIER = "Standard"
""""Automatic SKU clusters are preconfigured to use the Standard tier" (AKS ``free-standard-pricing-tiers.md``)."""

MANAGED_GPU_TAG = "EnableManagedGPUExperience"
"""The tag that makes a GPU pool an AKS managed GPU pool (module docstring): on agent pools
``az aks nodepool add --tags EnableManagedGPUExperience=true`` (AKS managed GPU docs), on NAP pools
the AKSNodeClass ``tags``, which NAP puts on the VMs."""

AUTOMATIC_IGNORED_FIELDS = (
    "agentPoolProfiles",
    "networkProfile",
    "autoScalerProfile",
    "nodeProvisioningProfile",
    "autoUpgradeProfile",
)
"""What AKS Automatic sets and gpupools states nothing about: a refresh stores AKS's values in the
resource's inputs (as it stores every pool in ``agentPoolProfiles`` on a Base cluster,
``gpupools.azure.inline_pools``), and without these in ``ignore_changes`` the next ``up`` would send
them, or their removal, in a managed-cluster PUT."""

KUBERNETES_VERSION_FIELD = "kubernetesVersion"
"""On Automatic AKS moves the cluster's minor itself: automatic cluster upgrades on the ``stable``
channel are preconfigured ("Preconfigured" in ``intro-aks-automatic.md``: they cannot be turned off).
``cluster.kubernetesVersion`` is therefore the version the cluster is created with, and the field is in
``ignore_changes`` afterwards: sending the configured minor after AKS has moved past it would ask AKS
for a downgrade, which it refuses. When the live minor differs from the configured one the program
says so (``version_moved_warning``)."""

SYSTEM_NODEPOOL_WEIGHT = 1
"""The system NodePool's weight: the lowest, tried last, as the priority expander ranks the System
pool on Base clusters (the same choice as ``gpupools.aws.auto_mode.SYSTEM_POOL_WEIGHT``)."""


def sku_switch_error(live_sku: str | None, automatic: bool, resource_group: str, cluster_name: str) -> str | None:
    """Why this ``up`` must not change the live cluster's SKU, or None: ``live_sku`` is AKS's
    ``sku.name`` (None when the cluster does not exist yet)."""
    if live_sku is None or (live_sku == AKS_AUTOMATIC) == automatic:
        return None
    if automatic:
        return (
            f"cannot switch the existing cluster {cluster_name} (sku {live_sku}) to Automatic: AKS does not migrate a Base "
            "cluster to Automatic ('Migration from AKS base SKU to automatic SKU isn't supported', aks-automatic-limitations.md) "
            "and the engine would send a managed-cluster PUT AKS refuses; create a new stack with cluster.sku Automatic and "
            "move workloads (docs/aks-automatic.md, 'Moving an existing stack')"
        )
    return (
        f"cannot switch the existing Automatic cluster {cluster_name} to Base here: AKS moves an Automatic cluster to Base only "
        f"after a System pool is added, with 'az aks update -g {resource_group} -n {cluster_name} --sku base' "
        "(aks-automatic-sku-migration.md), which gpupools does not run; keep cluster.sku Automatic, or move to a new Base "
        "stack (docs/aks-automatic.md)"
    )


def version_moved_warning(configured: str, live: str | None, cluster_name: str) -> str | None:
    """A warning when AKS has moved an Automatic cluster to another minor than ``cluster.kubernetesVersion``
    (``KUBERNETES_VERSION_FIELD``), or None."""
    if live is None:
        return None
    live_minor = ".".join(live.split(".")[:2])
    if live_minor == configured:
        return None
    return (
        f"gpupools:cluster.kubernetesVersion: {configured}, but AKS Automatic runs {cluster_name} on {live} (its stable "
        "upgrade channel moves minors itself); the field is left to AKS on Automatic, so this up changes nothing there. "
        f"Set kubernetesVersion to {live_minor} to keep the config true to the cluster"
    )
