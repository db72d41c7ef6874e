"""The Azure preflight: read-only ARM calls with the caller's own credentials
(``DefaultAzureCredential``: environment, workload identity, managed identity, Azure CLI, ...).

=============  ================================================================================
check          how
=============  ================================================================================
offered        Resource SKUs (``resource_skus.list(filter="location eq '<location>'")``): the
               pool's VM size is listed for ``virtualMachines`` in the location, the zone is in its
               ``locationInfo.zones``, and no restriction applies to the subscription there
               (``type: Location`` or ``type: Zone`` with ``reasonCode`` ``NotAvailableForSubscription``
               or ``QuotaId``). AKS rejects a pool whose size is missing in one of its zones
               (``AvailabilityZoneNotSupported``, Azure/AKS #1444), and gpupools chains pool
               operations, so one rejected pool blocks every later one. A ✓ is necessary, not
               sufficient: AKS can still refuse a size Compute lists (MicrosoftDocs/azure-aks-docs
               PR #416, "Update AKS availability zones configuration details").
quota          Compute usages (``usage.list(location)``): the VM family of each size (the SKU's
               ``family``) covers its on-demand pools at max, ``cores`` (Total Regional vCPUs)
               all on-demand pools, and ``lowPriorityCores`` (Total Regional Spot vCPUs) all Spot
               pools: vCPU quotas are "arranged in two tiers for each subscription, in each
               region", the family and the regional total, and a VM must fit both (azure-docs
               ``virtual-machines/quotas.md``); Spot quota is a separate regional pool
               (``virtual-machines/spot-vms.md``, FAQ). Compared with the limit; current usage
               is shown.
version        AKS ``managed_clusters.list_kubernetes_versions(location)``: the minor is listed
               with the ``KubernetesOfficial`` support plan (a minor offered only under
               ``AKSLongTermSupport`` needs the Premium tier, which the stack does not use).
permissions    The deployer's effective actions on the stack's resource group (Permissions - List
               For Resource Group); before the first ``pulumi up`` the group does not exist, so
               the roles assigned to the caller at or above the subscription are read instead
               (``atScope() and assignedTo('<object id>')``, as ``az role assignment list
               --include-groups`` does, azure-cli ``role/custom.py``) and their definitions
               evaluated. Deny assignments and assignment conditions are not evaluated: an action
               granted only through a conditional assignment is reported as ``?``.
reservation    per ``gpuPools[].reservations`` entry (a Capacity Reservation Group), in the group's
               own subscription: ``capacity_reservation_groups.get(expand="instanceView")`` (the
               group's type, each member's VMs allocated) and
               ``capacity_reservations.list_by_capacity_reservation_group`` (each member's size,
               quantity, zones, provisioning state and, for a Block reservation,
               ``scheduleProfile.end``). ✗ when the group is not found, or no member reserves the
               pool's size (in the reservation's ``zone``, when given; AKS then creates the pool
               "with a warning and no capacity reservation group gets associated": AKS
               ``use-capacity-reservation-groups``) or such members are not ``Succeeded``; ``?``
               when one ends within ``report.RESERVATION_END_WARNING`` (14 days). FOUND: type,
               size, zones, free/reserved VMs.
reservation-grant
               per ``gpuPools[].reservations`` entry (one reserved pool each): the Contributor
               grant AKS needs for the cluster's user-assigned identity on the resource group
               holding the group (AKS ``use-capacity-reservation-groups``, prerequisites; created
               by ``gpupools.azure.cluster.AksCluster``). The identity is the stack's own,
               ``<cluster>-control-plane`` in ``<cluster>-rg`` (User Assigned Identities - Get,
               ``Microsoft.ManagedIdentity`` 2023-01-31: ``properties.principalId``); its role
               assignments are read at the group's resource group, inherited ones included
               (``atScope() and assignedTo('<principalId>')``, in the group's subscription). ✓
               when Contributor (or Owner, a superset) is held there and the assignment's
               ``createdOn`` is at least ``report.GRANT_PROPAGATION`` (60 minutes) old; ``?`` with
               the time left when younger (AKS: "It can take up to 60 minutes for the role
               assignment to propagate"; before that AKS may create the reserved pool without the
               group); ✗ when the identity exists and holds neither; ``?`` when the identity does
               not exist yet: this ``up`` creates the grant and, minutes later, the reserved pool
               (docs/aks.md, "Reservations", the two-step path).
access     ``gpupools:cluster.apiAllowedCidrs`` (no call): ``?`` when empty, a warning: the API
               server then accepts connections from any address (Entra ID still authenticates each
               call; AKS "Secure access to the API server using authorized IP ranges"), ✓ with the
               ranges it is limited to (``apiServerAccessProfile.authorizedIPRanges``).
=============  ================================================================================
"""

from __future__ import annotations

import base64
import json
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Iterator, Sequence

from gpupools.conventions import CapacityType
from gpupools.preflight.demand import PoolDemand, stack_demands, zone_pairs
from gpupools.preflight.report import (
    GRANT_PROPAGATION,
    NO_POOL,
    NO_ZONE,
    RESERVATION_END_WARNING,
    Check,
    CheckKind,
    Status,
    unknown,
)
from gpupools.preflight.sdk import AZURE_MODULES, require
from gpupools.preflight.stack import Target
from gpupools.specs import GpuDriver, PoolSpec, ReservationSpec
from gpupools.versions import minor

ARM_SCOPE = "https://management.azure.com/.default"

MANAGED_GPU_FEATURE_NAMESPACE = "Microsoft.ContainerService"
MANAGED_GPU_FEATURE = "ManagedGPUExperiencePreview"
"""The preview feature AKS managed GPU pools need (AKS "managed GPU nodes"; ``features`` checks it)."""
FEATURES_API_VERSION = "2021-07-01"
"""``Microsoft.Features`` ``Features - Get`` (azure-rest-api-specs ``resources/.../features/stable/2021-07-01``)."""

TOTAL_CORES = "cores"
"""Compute usage name of "Total Regional vCPUs" (on-demand VMs of every family)."""

SPOT_CORES = "lowPriorityCores"
"""Compute usage name of "Total Regional Low-priority vCPUs", the Spot quota."""

BLOCKING_RESTRICTIONS = ("NotAvailableForSubscription", "QuotaId")
"""Resource SKU restriction reasons that stop this subscription from deploying the size (Compute
REST API, Resource Skus - List: ``ResourceSkuRestrictionsReasonCode``)."""

REQUIRED_ACTIONS = (
    "Microsoft.Resources/subscriptions/resourceGroups/write",
    "Microsoft.Network/virtualNetworks/write",
    "Microsoft.Network/virtualNetworks/subnets/write",
    "Microsoft.ManagedIdentity/userAssignedIdentities/write",
    "Microsoft.ContainerService/managedClusters/write",
    "Microsoft.ContainerService/managedClusters/agentPools/write",
    "Microsoft.ContainerService/managedClusters/maintenanceConfigurations/write",
    "Microsoft.Authorization/roleAssignments/write",
)
"""What ``pulumi up`` writes (``tests/snapshots/azure-dev.json``): the resource group, the network,
the control plane's identity, the cluster, its agent pools and its two maintenance configurations (the
node-OS and auto-upgrade windows), and two role assignments (the control plane on the node subnet,
the deployer on the cluster). ``roleAssignments/write`` is not in
Contributor (its ``notActions`` include ``Microsoft.Authorization/*/Write``: Microsoft Learn, "Azure
built-in roles for General", Contributor): the deployer needs Owner, User Access Administrator or
Role Based Access Control Administrator as well."""


def resource_group_name(target: Target) -> str:
    """The group the stack deploys into: ``<cluster>-rg`` (``gpupools.azure.cluster.AksCluster``)."""
    return f"{target.spec.cluster.name}-rg"


def control_plane_identity_name(target: Target) -> str:
    """The stack's control-plane identity, in ``resource_group_name(target)``: ``<cluster>-control-plane``
    (``gpupools.azure.cluster.AksCluster``, which creates it unless an ``identity_id`` is given; the
    stack never gives one)."""
    return f"{target.spec.cluster.name}-control-plane"


IDENTITY_API_VERSION = "2023-01-31"
"""``Microsoft.ManagedIdentity`` API version of "User Assigned Identities - Get" (azure-rest-api-specs
``specification/msi/resource-manager/Microsoft.ManagedIdentity/stable/2023-01-31``, example
``IdentityGet.json``: ``properties.principalId``). Read with the container service client's own
pipeline (``send_request``), so the preflight needs no extra SDK."""

CONTRIBUTOR_ROLE = "b24988ac-6180-42a0-ab88-20f7382dd24c"
OWNER_ROLE = "8e3af657-a8ff-443c-a75e-2fe8c4bcb635"
GRANT_ROLES = {CONTRIBUTOR_ROLE: "Contributor", OWNER_ROLE: "Owner"}
"""Built-in roles (Azure built-in roles reference) that give AKS what it asks for on a Capacity
Reservation Group's resource group: Contributor, the role AKS names, and Owner, whose ``actions``
(``*``) include every one of Contributor's."""


def enum_text(value: Any) -> str:
    """The wire value of an SDK enum member (``ResourceSkuRestrictionsType.ZONE`` -> ``Zone``), or of a
    plain string the SDK left as it came (values newer than the SDK's enum)."""
    return str(getattr(value, "value", value) or "")


def capability(sku: Any, name: str) -> str | None:
    for item in getattr(sku, "capabilities", None) or []:
        if item.name == name:
            return str(item.value)
    return None


def sku_zones(sku: Any, location: str) -> set[str]:
    """The zones Compute lists for ``sku`` in ``location``."""
    zones: set[str] = set()
    for info in sku.location_info or []:
        if str(info.location).lower() == location.lower():
            zones.update(info.zones or [])
    return zones


def restriction(sku: Any, location: str, zone: str) -> str | None:
    """The reason code of a restriction that blocks ``sku`` in ``location`` (and ``zone``), if any."""
    for item in sku.restrictions or []:
        code = enum_text(item.reason_code)
        if code not in BLOCKING_RESTRICTIONS:
            continue
        info = item.restriction_info
        kind = enum_text(item.type)
        if kind == "Location":
            places = [str(p).lower() for p in (info.locations if info and info.locations else item.values_property or [])]
            if not places or location.lower() in places:
                return f"{code} in {location}"
        elif kind == "Zone" and zone and info and zone in (info.zones or []):
            return f"{code} in zone {zone}"
    return None


def action_matches(pattern: str, action: str) -> bool:
    """Azure RBAC action matching: case-insensitive, ``*`` matches any characters."""
    regex = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern))
    return re.fullmatch(regex, action, flags=re.IGNORECASE) is not None


def granted(permissions: Iterable[Any], action: str) -> bool:
    """True if one permission entry's ``actions`` match and none of the same entry's ``notActions``
    do (``notActions`` subtract within a role, not across roles: Azure RBAC "Understand role
    definitions")."""
    return any(
        any(action_matches(p, action) for p in (entry.actions or []))
        and not any(action_matches(p, action) for p in (entry.not_actions or []))
        for entry in permissions
    )


def object_id(token: str) -> str | None:
    """The ``oid`` claim of an Entra ID access token (its payload is base64url JSON)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    oid = claims.get("oid")
    return str(oid) if oid else None


SDK_LOGGERS = ("azure",)
"""The Azure SDK's logger tree. ``DefaultAzureCredential`` logs every credential it tried, at WARNING,
on each failed token request: with no logging configured Python prints those records to stderr,
dozens of lines per run. The rows already carry the reason, one line per check."""


@contextmanager
def quiet_sdk_logs(names: Sequence[str] = SDK_LOGGERS) -> Iterator[None]:
    """Drop the SDK's log records inside the block (levels restored after)."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def reason(error: BaseException) -> str:
    """A one-line reason for a ``?`` row."""
    code = getattr(getattr(error, "error", None), "code", None) or getattr(error, "status_code", None)
    text = str(getattr(getattr(error, "error", None), "message", None) or error).splitlines()
    first = text[0] if text else ""
    return (f"{code}: {first}" if code else f"{type(error).__name__}: {first}")[:160]


@dataclass
class CoreNeed:
    """vCPUs one Compute usage must cover, and where they come from."""

    usage: str
    vcpus: int = 0
    parts: list[str] | None = None

    def add(self, pool: str, nodes: int, vcpus: int) -> None:
        self.vcpus += nodes * vcpus
        self.parts = [*(self.parts or []), f"{pool} {nodes}x{vcpus}"]

    @property
    def pools(self) -> str:
        return ", ".join(dict.fromkeys(p.split()[0] for p in self.parts or []))

    @property
    def needed(self) -> str:
        return f"{self.vcpus} vCPU = " + " + ".join(self.parts or [])


def quota_needed_offline(demand: PoolDemand) -> str:
    """NEEDED of a quota row whose size the location does not list (no SKU to read its vCPUs from):
    the vCPUs from the offline size catalog (``gpupools.catalog.sizes``), ``<capacity> vCPU = <pool>
    <nodes>x<vcpus>`` as the answered rows say it, or the capacity alone for a size no catalog knows."""
    from gpupools.catalog.sizes import size_facts

    facts = size_facts(demand.instance_types[0])
    if facts is None:
        return f"{demand.capacity.value} vCPUs"
    total = demand.max_nodes * facts[1]
    return f"{demand.capacity.value}: {total} vCPU = {demand.pool} {demand.max_nodes}x{facts[1]} (size catalog)"


def core_needs(demands: Sequence[PoolDemand], skus: dict[str, Any]) -> dict[str, CoreNeed]:
    """vCPUs per usage name at every pool's maximum: family and ``cores`` for on-demand pools,
    ``lowPriorityCores`` for Spot pools. ``demands`` must have sizes found in ``skus``."""
    needs: dict[str, CoreNeed] = {}
    for demand in demands:
        sku = skus[demand.instance_types[0]]
        vcpus = int(capability(sku, "vCPUs") or 0)
        usages = [SPOT_CORES] if demand.capacity is CapacityType.SPOT else [str(sku.family), TOTAL_CORES]
        for usage in usages:
            needs.setdefault(usage.lower(), CoreNeed(usage)).add(demand.pool, demand.max_nodes, vcpus)
    return needs


class AzurePreflight:
    """The Azure checks of one stack.

    ``credential`` defaults to ``DefaultAzureCredential()``; ``client_options`` are passed to every
    management client (tests pass ``transport=``).
    """

    def __init__(self, target: Target, credential: Any = None, **client_options: Any) -> None:
        modules = require("Azure", AZURE_MODULES)
        self.target = target
        self.location = target.region
        self.subscription = target.subscription_id
        with quiet_sdk_logs():
            self.credential = credential or modules["azure.identity"].DefaultAzureCredential()
        self.options = client_options
        self.modules = modules
        from azure.core.exceptions import AzureError

        self.errors: tuple[type[BaseException], ...] = (AzureError,)

    def client(self, module: str, name: str) -> Any:
        return getattr(self.modules[module], name)(self.credential, self.subscription, **self.options)

    def run(self) -> list[Check]:
        """Every check; the SDK's own log output is silenced (``quiet_sdk_logs``), the rows say why."""
        with quiet_sdk_logs():
            return self._run()

    def _run(self) -> list[Check]:
        demands = stack_demands(self.target.spec, self.target.spec.cluster.zones)
        if not self.subscription:
            why = "no subscription: set azure-native:subscriptionId in the stack, or AZURE_SUBSCRIPTION_ID"
            skipped = (
                CheckKind.SPOT_ROLE,
                CheckKind.RESERVATION,
                CheckKind.RESERVATION_GRANT,
                CheckKind.ACCESS,
                CheckKind.FEATURE,
            )
            kinds = [k for k in CheckKind if k not in skipped]
            return [unknown(kind, NO_POOL, NO_ZONE, "-", why) for kind in kinds] + [
                api_access_check(self.target.spec.cluster.api_allowed_cidrs)
            ]
        checks: list[Check] = []
        skus: dict[str, Any] | None = None
        try:
            skus = self.resource_skus()
        except self.errors as error:
            why = "Resource SKUs: " + reason(error)
            checks += [unknown(CheckKind.OFFERED, p, z or NO_ZONE, ts[0], why) for p, ts, z in zone_pairs(demands)]
            checks += [unknown(CheckKind.QUOTA, d.pool, NO_ZONE, f"{d.capacity.value} vCPUs", why) for d in demands]
        if skus is not None:
            checks += self.offered(demands, skus)
            checks += self.quotas(demands, skus)
        checks += self.version()
        checks += self.features()
        checks += self.permissions()
        checks += self.reservations()
        checks += self.reservation_grants()
        checks.append(api_access_check(self.target.spec.cluster.api_allowed_cidrs))
        return checks

    # sizes and zones

    def resource_skus(self) -> dict[str, Any]:
        """The ``virtualMachines`` SKUs listed for the location, by name."""
        compute = self.client("azure.mgmt.compute", "ComputeManagementClient")
        return {
            str(sku.name): sku
            for sku in compute.resource_skus.list(filter=f"location eq '{self.location}'")
            if enum_text(sku.resource_type) == "virtualMachines"
        }

    def offered(self, demands: Sequence[PoolDemand], skus: dict[str, Any]) -> list[Check]:
        checks = []
        for pool, sizes, zone in zone_pairs(demands):
            size = sizes[0]
            sku = skus.get(size)
            if sku is None:
                checks.append(
                    Check(CheckKind.OFFERED, pool, zone or NO_ZONE, f"not offered in {self.location}", size, Status.FAILED)
                )
                continue
            blocked = restriction(sku, self.location, zone)
            zones = sorted(sku_zones(sku, self.location))
            if blocked:
                found, status = f"restricted: {blocked}", Status.FAILED
            elif zone and zone not in zones:
                found, status = f"not in zone {zone} (zones: {', '.join(zones) or 'none'})", Status.FAILED
            else:
                found, status = size, Status.OK
            checks.append(Check(CheckKind.OFFERED, pool, zone or NO_ZONE, found, size, status))
        return checks

    # quota

    def usages(self) -> dict[str, Any]:
        compute = self.client("azure.mgmt.compute", "ComputeManagementClient")
        return {str(u.name.value).lower(): u for u in compute.usage.list(self.location)}

    def quotas(self, demands: Sequence[PoolDemand], skus: dict[str, Any]) -> list[Check]:
        # A size missing from the location already failed "offered"; its quota cannot be sized.
        sized = [d for d in demands if d.instance_types[0] in skus and capability(skus[d.instance_types[0]], "vCPUs")]
        checks = [
            unknown(
                CheckKind.QUOTA,
                d.pool,
                NO_ZONE,
                quota_needed_offline(d),
                f"{d.instance_types[0]} is not listed in {self.location}",
            )
            for d in demands
            if d not in sized
        ]
        needs = core_needs(sized, skus)
        try:
            usages = self.usages()
        except self.errors as error:
            return checks + [
                unknown(CheckKind.QUOTA, n.pools, NO_ZONE, f"{n.usage}: {n.needed}", reason(error)) for n in needs.values()
            ]
        for key, need in needs.items():
            usage = usages.get(key)
            if usage is None:
                checks.append(
                    Check(
                        CheckKind.QUOTA,
                        need.pools,
                        NO_ZONE,
                        f"no {need.usage} quota in {self.location}",
                        need.needed,
                        Status.FAILED,
                    )
                )
                continue
            label = usage.name.localized_value or need.usage
            found = f"{label}: {usage.limit} vCPU ({usage.current_value} in use)"
            status = Status.OK if int(usage.limit) >= need.vcpus else Status.FAILED
            checks.append(Check(CheckKind.QUOTA, need.pools, NO_ZONE, found, need.needed, status))
        return checks

    # Kubernetes version

    def version(self) -> list[Check]:
        wanted = minor(self.target.spec.cluster.kubernetes_version)
        needed = f"AKS {wanted}"
        try:
            client = self.client("azure.mgmt.containerservice", "ContainerServiceClient")
            result = client.managed_clusters.list_kubernetes_versions(self.location)
        except self.errors as error:
            return [unknown(CheckKind.VERSION, NO_POOL, NO_ZONE, needed, reason(error))]
        versions = list(result.values_property or [])
        match = next((v for v in versions if v.version == wanted), None)
        if match is None:
            offered = ", ".join(sorted((str(v.version) for v in versions), key=_version_key)) or "none"
            found = f"not offered in {self.location} (offered: {offered})"
            return [Check(CheckKind.VERSION, NO_POOL, NO_ZONE, found, needed, Status.FAILED)]
        plans = [enum_text(p) for p in ((match.capabilities.support_plan if match.capabilities else None) or [])]
        preview = " (preview)" if match.is_preview else ""
        if plans and "KubernetesOfficial" not in plans:
            found = f"{wanted}{preview}: only " + ", ".join(plans) + " (needs the Premium tier)"
            return [Check(CheckKind.VERSION, NO_POOL, NO_ZONE, found, needed, Status.FAILED)]
        return [
            Check(CheckKind.VERSION, NO_POOL, NO_ZONE, f"{wanted}{preview}: " + (", ".join(plans) or "listed"), needed, Status.OK)
        ]

    # preview features

    def features(self) -> list[Check]:
        """AKS Automatic with managed GPU pools: the subscription has ``MANAGED_GPU_FEATURE`` registered
        (``gpupools.azure.automatic``; AKS "managed GPU nodes": ``az feature register --namespace
        Microsoft.ContainerService --name ManagedGPUExperiencePreview``). Read with ``Features - Get``
        (``Microsoft.Features``, api-version ``FEATURES_API_VERSION``): ``properties.state`` is
        ``Registered`` once it applies (the REST spec's ``FeatureProperties.state``). No row otherwise."""
        spec = self.target.spec
        if not (spec.cluster.automatic and any(p.gpu_driver is GpuDriver.MANAGED for p in spec.gpu_pools)):
            return []
        from azure.core.rest import HttpRequest

        needed = f"{MANAGED_GPU_FEATURE_NAMESPACE}/{MANAGED_GPU_FEATURE} Registered"
        path = (
            f"/subscriptions/{self.subscription}/providers/Microsoft.Features/providers/"
            f"{MANAGED_GPU_FEATURE_NAMESPACE}/features/{MANAGED_GPU_FEATURE}?api-version={FEATURES_API_VERSION}"
        )
        try:
            client = self.client("azure.mgmt.containerservice", "ContainerServiceClient")
            response = client.send_request(HttpRequest("GET", path))
            response.raise_for_status()
            state = str(((response.json() or {}).get("properties") or {}).get("state") or "unknown")
        except self.errors as error:
            return [unknown(CheckKind.FEATURE, NO_POOL, NO_ZONE, needed, reason(error))]
        if state == "Registered":
            return [Check(CheckKind.FEATURE, NO_POOL, NO_ZONE, state, needed, Status.OK)]
        fix = f"az feature register --namespace {MANAGED_GPU_FEATURE_NAMESPACE} --name {MANAGED_GPU_FEATURE}"
        return [Check(CheckKind.FEATURE, NO_POOL, NO_ZONE, f"{state} (run: {fix})", needed, Status.FAILED)]

    # permissions

    def effective_permissions(self) -> tuple[list[Any], list[Any], str]:
        """(unconditional permissions, conditional permissions, where they were read)."""
        from azure.core.exceptions import ResourceNotFoundError

        client = self.client("azure.mgmt.authorization", "AuthorizationManagementClient")
        group = resource_group_name(self.target)
        try:
            return list(client.permissions.list_for_resource_group(group)), [], f"on {group}"
        except ResourceNotFoundError:
            pass
        token = self.credential.get_token(ARM_SCOPE).token
        principal = object_id(token)
        if principal is None:
            raise LookupError("the access token names no object id (oid)")
        scope = f"/subscriptions/{self.subscription}"
        plain: list[Any] = []
        conditional: list[Any] = []
        definitions: dict[str, Any] = {}
        assignments = client.role_assignments.list_for_scope(scope, filter=f"atScope() and assignedTo('{principal}')")
        for assignment in assignments:
            definition_id = str(assignment.role_definition_id)
            if definition_id not in definitions:
                definitions[definition_id] = client.role_definitions.get_by_id(definition_id)
            target = conditional if assignment.condition else plain
            target.extend(definitions[definition_id].permissions or [])
        return plain, conditional, f"subscription roles; {group} not created yet"

    def permissions(self) -> list[Check]:
        providers = list(dict.fromkeys(a.split("/")[0] for a in REQUIRED_ACTIONS))
        by_provider = {p: [a for a in REQUIRED_ACTIONS if a.startswith(p + "/")] for p in providers}

        def needed(provider: str) -> str:
            count = len(by_provider[provider])
            return f"{provider}: {count} action{'s' if count > 1 else ''}"

        unanswered: tuple[type[BaseException], ...] = (*self.errors, LookupError)
        try:
            plain, conditional, where = self.effective_permissions()
        except unanswered as error:
            return [unknown(CheckKind.PERMISSIONS, NO_POOL, NO_ZONE, needed(p), reason(error)) for p in providers]
        checks = []
        for provider in providers:
            missing = [a for a in by_provider[provider] if not granted(plain, a)]
            only_conditional = [a for a in missing if granted(conditional, a)]
            denied = [a for a in missing if a not in only_conditional]
            if denied:
                found, status = "missing: " + ", ".join(a.split("/", 1)[1] for a in denied), Status.FAILED
            elif only_conditional:
                found = "only under a role assignment condition: " + ", ".join(a.split("/", 1)[1] for a in only_conditional)
                status = Status.UNKNOWN
            else:
                found, status = f"all {len(by_provider[provider])} granted ({where})", Status.OK
            checks.append(Check(CheckKind.PERMISSIONS, NO_POOL, NO_ZONE, found, needed(provider), status))
        return checks

    # capacity reservation groups

    def reservations(self, now: datetime | None = None) -> list[Check]:
        """One ``reservation`` row per ``gpuPools[].reservations`` entry (module docstring)."""
        now = now or datetime.now(timezone.utc)
        checks = []
        for pool in self.target.spec.pools:
            for reservation in pool.reservations:
                zone = reservation.zone or NO_ZONE
                needed = f"{pool.instance_types[0]} reserved" + (f" in zone {reservation.zone}" if reservation.zone else "")
                subscription, group, name = reservation_group_parts(reservation.id)
                compute = self.modules["azure.mgmt.compute"].ComputeManagementClient(
                    self.credential, subscription, **self.options
                )
                try:
                    crg = compute.capacity_reservation_groups.get(group, name, expand="instanceView")
                    members = list(compute.capacity_reservations.list_by_capacity_reservation_group(group, name))
                except self.errors as error:
                    if getattr(error, "status_code", None) == 404:
                        found = f"{name}: not found ({reason(error)})"
                        checks.append(Check(CheckKind.RESERVATION, pool.name, zone, found, needed, Status.FAILED))
                    else:
                        checks.append(unknown(CheckKind.RESERVATION, pool.name, zone, needed, reason(error)))
                    continue
                checks.append(reservation_group_check(pool, reservation, crg, members, now, needed))
        return checks

    def control_plane_principal(self) -> str | None:
        """The ``principalId`` of the stack's control-plane identity, or None when it does not exist
        yet (404: before the first ``pulumi up``). Raises ``AzureError`` or ``LookupError``."""
        from azure.core.rest import HttpRequest

        client = self.client("azure.mgmt.containerservice", "ContainerServiceClient")
        url = (
            f"/subscriptions/{self.subscription}/resourceGroups/{resource_group_name(self.target)}"
            f"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{control_plane_identity_name(self.target)}"
        )
        response = client.send_request(HttpRequest("GET", url, params={"api-version": IDENTITY_API_VERSION}))
        if response.status_code == 404:
            return None
        response.raise_for_status()
        principal = (response.json().get("properties") or {}).get("principalId")
        if not principal:
            raise LookupError(f"identity {control_plane_identity_name(self.target)} has no principalId")
        return str(principal)

    def reservation_grants(self, now: datetime | None = None) -> list[Check]:
        """One ``reservation-grant`` row per ``gpuPools[].reservations`` entry (module docstring);
        the role assignments of one resource group are read once."""
        entries = [(pool, reservation) for pool in self.target.spec.pools for reservation in pool.reservations]
        if not entries:
            return []
        now = now or datetime.now(timezone.utc)
        identity = control_plane_identity_name(self.target)
        unanswered: tuple[type[BaseException], ...] = (*self.errors, LookupError)
        principal: str | None = None
        failure: str | None = None
        try:
            principal = self.control_plane_principal()
        except unanswered as error:
            failure = reason(error)
        read: dict[str, list[Any] | str] = {}
        checks = []
        for pool, reservation in entries:
            zone = reservation.zone or NO_ZONE
            subscription, group, _ = reservation_group_parts(reservation.id)
            needed = f"Contributor for {identity} on {group}, {grant_minutes(GRANT_PROPAGATION)} min old"
            if failure is not None:
                checks.append(unknown(CheckKind.RESERVATION_GRANT, pool.name, zone, needed, f"identity {identity}: {failure}"))
                continue
            if principal is None:
                checks.append(Check(CheckKind.RESERVATION_GRANT, pool.name, zone, FIRST_UP, needed, Status.UNKNOWN))
                continue
            scope = f"/subscriptions/{subscription}/resourceGroups/{group}"
            if scope.lower() not in read:
                authorization = self.modules["azure.mgmt.authorization"].AuthorizationManagementClient(
                    self.credential, subscription, **self.options
                )
                try:
                    read[scope.lower()] = list(
                        authorization.role_assignments.list_for_scope(scope, filter=f"atScope() and assignedTo('{principal}')")
                    )
                except self.errors as error:
                    read[scope.lower()] = reason(error)
            assignments = read[scope.lower()]
            if isinstance(assignments, str):
                checks.append(unknown(CheckKind.RESERVATION_GRANT, pool.name, zone, needed, assignments))
                continue
            checks.append(reservation_grant_check(pool.name, zone, identity, group, assignments, now, needed))
        return checks


FIRST_UP = (
    "identity not created yet: this up creates the grant, then the cluster, then the reserved pool, "
    "before the grant may have propagated (AKS: up to 60 min); create the grant first "
    "(docs/aks.md#reservations, two steps)"
)
"""FOUND of a ``reservation-grant`` row before the first ``pulumi up``."""


def grant_minutes(span: timedelta) -> int:
    """Whole minutes, rounded up (a grant 59.5 minutes old still has a minute to go)."""
    return -(-int(span.total_seconds()) // 60)


def reservation_grant_check(
    pool: str, zone: str, identity: str, group: str, assignments: Sequence[Any], now: datetime, needed: str
) -> Check:
    """One ``reservation-grant`` row from the identity's role assignments at the group's resource
    group (pure). A conditional assignment does not count (conditions are not evaluated here)."""
    granting = [
        (GRANT_ROLES[role], created)
        for a in assignments
        if (role := str(a.role_definition_id).rsplit("/", 1)[-1].lower()) in GRANT_ROLES and not a.condition
        for created in [_utc(a.created_on)]
    ]
    if not granting:
        found = (
            f"{identity} holds no Contributor on {group}: the next up creates it in the same run as the reserved "
            "pool (docs/aks.md#reservations, two steps)"
        )
        return Check(CheckKind.RESERVATION_GRANT, pool, zone, found, needed, Status.FAILED)
    dated = [(r, c) for r, c in granting if c is not None]
    if not dated:
        found = f"{granting[0][0]}, creation time not reported: its propagation cannot be judged"
        return Check(CheckKind.RESERVATION_GRANT, pool, zone, found, needed, Status.UNKNOWN)
    role, created = min(dated, key=lambda g: g[1])
    found = f"{role} since {created:%Y-%m-%d %H:%M}Z"
    age = now - created
    if age >= GRANT_PROPAGATION:
        return Check(CheckKind.RESERVATION_GRANT, pool, zone, found, needed, Status.OK)
    ready = created + GRANT_PROPAGATION
    found += (
        f", {int(age.total_seconds() // 60)} min ago: AKS may not see it for {grant_minutes(GRANT_PROPAGATION - age)} more min; "
        f"create the reserved pool after {ready:%H:%M}Z"
    )
    return Check(CheckKind.RESERVATION_GRANT, pool, zone, found, needed, Status.UNKNOWN)


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


RESERVATION_GROUP_ID = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft\.Compute/"
    r"capacityReservationGroups/(?P<name>[^/]+)$",
    re.IGNORECASE,
)


def reservation_group_parts(group_id: str) -> tuple[str, str, str]:
    """``(subscription, resource group, name)`` of a Capacity Reservation Group ARM ID (validated by
    ``rules.check_reservations``)."""
    match = RESERVATION_GROUP_ID.match(group_id)
    if match is None:
        raise ValueError(f"not a capacity reservation group ID: {group_id}")
    return match["sub"], match["rg"], match["name"]


def _end(member: Any) -> datetime | None:
    """A Block reservation's end (``properties.scheduleProfile.end``, ISO 8601), in UTC."""
    schedule = getattr(getattr(member, "properties", None), "schedule_profile", None)
    text = getattr(schedule, "end", None)
    if not text:
        return None
    end = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return end if end.tzinfo else end.replace(tzinfo=timezone.utc)


def reservation_group_check(
    pool: PoolSpec, reservation: ReservationSpec, crg: Any, members: Sequence[Any], now: datetime, needed: str
) -> Check:
    """One ``reservation`` row from a group (with its instance view) and its members (pure)."""
    zone = reservation.zone or NO_ZONE
    size = pool.instance_types[0]
    props = getattr(crg, "properties", None)
    kind = enum_text(getattr(props, "reservation_type", None)) or "Targeted"
    views = getattr(getattr(props, "instance_view", None), "capacity_reservations", None) or []
    allocated = {
        str(v.name).lower(): len(getattr(getattr(v, "utilization_info", None), "virtual_machines_allocated", None) or [])
        for v in views
    }
    of_size = [m for m in members if str(getattr(m.sku, "name", "")).lower() == size.lower()]
    usable = [m for m in of_size if reservation.zone is None or reservation.zone in (m.zones or [])]
    name = str(crg.name)
    sizes = sorted({str(m.sku.name) for m in members})
    if not usable:
        where = f" in zone {reservation.zone}" if reservation.zone else ""
        found = f"{name} ({kind}): no {size} reservation{where} (has: {', '.join(sizes) or 'none'})"
        return Check(CheckKind.RESERVATION, pool.name, zone, found, needed, Status.FAILED)
    reserved = sum(int(m.sku.capacity or 0) for m in usable)
    used = sum(allocated.get(str(m.name).lower(), 0) for m in usable)
    zones = sorted({z for m in usable for z in (m.zones or [])})
    found = f"{name} ({kind}) {size} zones {','.join(zones) or '-'}: {max(reserved - used, 0)}/{reserved} free"
    failed = [str(m.name) for m in usable if str(getattr(m.properties, "provisioning_state", "Succeeded")) != "Succeeded"]
    if failed:
        states = ", ".join(f"{m.name} {m.properties.provisioning_state}" for m in usable if str(m.name) in failed)
        return Check(CheckKind.RESERVATION, pool.name, zone, f"{found}; not Succeeded: {states}", needed, Status.FAILED)
    ends = sorted(e for m in usable if (e := _end(m)) is not None)
    if ends:
        found += f", ends {ends[0]:%Y-%m-%d %H:%M}Z"
        left = ends[0] - now
        if left <= RESERVATION_END_WARNING:
            found += f" (in {max(left.days, 0)} d: the pool then runs on Spot/on-demand)"
            return Check(CheckKind.RESERVATION, pool.name, zone, found, needed, Status.UNKNOWN)
    return Check(CheckKind.RESERVATION, pool.name, zone, found, needed, Status.OK)


ACCESS_NEEDED = "API server limited to known networks"


def api_access_check(cidrs: Sequence[str]) -> Check:
    """The ``access`` row (module docstring): ``?`` for an API server open to every address."""
    if not cidrs:
        found = "open to any address: set gpupools:cluster.apiAllowedCidrs (your office, VPN and CI egress ranges)"
        return Check(CheckKind.ACCESS, NO_POOL, NO_ZONE, found, ACCESS_NEEDED, Status.UNKNOWN)
    found = "authorizedIPRanges " + ", ".join(sorted(cidrs))
    return Check(CheckKind.ACCESS, NO_POOL, NO_ZONE, found, ACCESS_NEEDED, Status.OK)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())
