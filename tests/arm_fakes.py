"""Azure Resource Manager answers for the preflight tests, served through the Azure SDK's own
transport: ``azure.core.pipeline.transport.RequestsTransport`` on a ``requests`` session whose HTTPS
adapter answers each request with a JSON body shaped as the REST reference shows it, so the real
management clients build the real requests (URL, api-version, ``$filter``) and deserialize the
bodies into their own models.

Bodies (REST API reference, Microsoft Learn):

* Compute "Resource Skus - List" (``GET /subscriptions/{id}/providers/Microsoft.Compute/skus``):
  ``{"value": [ResourceSku]}`` with ``resourceType``, ``name``, ``family``, ``locations``,
  ``locationInfo[{location, zones, zoneDetails}]``, ``capabilities[{name, value}]`` and
  ``restrictions[{type: Location|Zone, values, restrictionInfo{locations, zones}, reasonCode}]``;
* Compute "Usage - List" (``.../locations/{location}/usages``): ``{"value": [{unit, currentValue,
  limit, name{value, localizedValue}}]}``;
* Container Service "Managed Clusters - List Kubernetes Versions"
  (``.../Microsoft.ContainerService/locations/{location}/kubernetesVersions``): ``{"values":
  [{version, capabilities{supportPlan}, isDefault, isPreview, patchVersions}]}``;
* Authorization "Permissions - List For Resource Group", "Role Assignments - List For Scope",
  "Role Definitions - Get By Id": ``{"value": [{actions, notActions, ...}]}``, ``{"value":
  [{id, name, properties{roleDefinitionId, principalId, condition}}]}``, ``{id, properties{roleName,
  permissions}}``; errors as ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import base64
import io
import json
import re
from typing import Any, Callable
from urllib.parse import parse_qs, urlparse

import requests
import requests.adapters
import urllib3
from azure.core.credentials import AccessToken
from azure.core.pipeline.transport import RequestsTransport

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
OBJECT_ID = "11111111-1111-1111-1111-111111111111"
CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"
OWNER = "8e3af657-a8ff-443c-a75e-2fe8c4bcb635"

Answer = tuple[int, Any]
Route = Callable[[str, dict[str, list[str]]], Answer]


class FakeCredential:
    """A ``TokenCredential`` whose token is a JWT-shaped string carrying ``oid`` (signature not checked
    by anything that reads it here)."""

    def __init__(self, oid: str = OBJECT_ID) -> None:
        payload = base64.urlsafe_b64encode(json.dumps({"oid": oid}).encode()).decode().rstrip("=")
        self.token = f"e30.{payload}.sig"
        self.scopes: list[str] = []

    def get_token(self, *scopes: str, **_: Any) -> AccessToken:
        self.scopes.extend(scopes)
        return AccessToken(self.token, 4102444800)


class ArmAdapter(requests.adapters.BaseAdapter):
    """Answers requests by path regex; records every request (method, path, query)."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: list[tuple[str, str, Route]] = []
        self.requests_seen: list[tuple[str, str, dict[str, list[str]]]] = []

    def route(self, method: str, pattern: str, answer: Route | Answer) -> ArmAdapter:
        handler: Route = answer if callable(answer) else (lambda _p, _q, a=answer: a)
        self.routes.insert(0, (method, pattern, handler))
        return self

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:  # type: ignore[override]
        url = urlparse(request.url or "")
        query = parse_qs(url.query)
        self.requests_seen.append((str(request.method), url.path, query))
        for method, pattern, handler in self.routes:
            if method == request.method and re.fullmatch(pattern, url.path, flags=re.IGNORECASE):
                status, body = handler(url.path, query)
                break
        else:
            status, body = 404, {"error": {"code": "NotFound", "message": f"no fake for {request.method} {url.path}"}}
        content = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(content))}
        raw = urllib3.HTTPResponse(body=io.BytesIO(content), headers=headers, status=status, preload_content=False)
        return self.build_response(request, raw)

    def build_response(self, request: requests.PreparedRequest, raw: urllib3.HTTPResponse) -> requests.Response:
        """As ``requests.adapters.HTTPAdapter.build_response``: the body stays a stream on ``raw``."""
        response = requests.Response()
        response.status_code = raw.status
        response.headers = requests.structures.CaseInsensitiveDict(raw.headers)
        response.raw = raw
        response.reason = "OK" if raw.status < 400 else "Error"
        response.url = request.url or ""
        response.request = request
        return response

    def close(self) -> None:
        pass

    def transport(self) -> RequestsTransport:
        """The Azure SDK's own requests transport, on a session whose HTTPS goes to this adapter."""
        session = requests.Session()
        session.mount("https://", self)
        return RequestsTransport(session=session, session_owner=False)


def sku(
    name: str,
    family: str,
    vcpus: int,
    location: str = "eastus",
    zones: tuple[str, ...] = ("1", "2", "3"),
    restrictions: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """A ``virtualMachines`` Resource SKU as the list returns it."""
    return {
        "resourceType": "virtualMachines",
        "name": name,
        "tier": "Standard",
        "size": name.removeprefix("Standard_"),
        "family": family,
        "locations": [location],
        "locationInfo": [{"location": location, "zones": list(zones), "zoneDetails": []}],
        "capabilities": [{"name": "vCPUs", "value": str(vcpus)}, {"name": "LowPriorityCapable", "value": "True"}],
        "restrictions": list(restrictions),
    }


def zone_restriction(location: str, zones: tuple[str, ...], reason: str = "NotAvailableForSubscription") -> dict[str, Any]:
    return {
        "type": "Zone",
        "values": [location],
        "restrictionInfo": {"locations": [location], "zones": list(zones)},
        "reasonCode": reason,
    }


def location_restriction(location: str, reason: str = "NotAvailableForSubscription") -> dict[str, Any]:
    return {"type": "Location", "values": [location], "restrictionInfo": {"locations": [location]}, "reasonCode": reason}


def usage(name: str, limit: int, current: int = 0, localized: str | None = None) -> dict[str, Any]:
    return {
        "unit": "Count",
        "currentValue": current,
        "limit": limit,
        "name": {"value": name, "localizedValue": localized or name},
    }


def kubernetes_version(version: str, plans: tuple[str, ...] = ("KubernetesOfficial",), preview: bool = False) -> dict[str, Any]:
    return {
        "version": version,
        "capabilities": {"supportPlan": list(plans)},
        "isDefault": False,
        "isPreview": preview,
        "patchVersions": {f"{version}.1": {"upgrades": []}},
    }


def role_definition(role_id: str, name: str, actions: list[str], not_actions: list[str]) -> dict[str, Any]:
    return {
        "id": f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{role_id}",
        "name": role_id,
        "type": "Microsoft.Authorization/roleDefinitions",
        "properties": {
            "roleName": name,
            "type": "BuiltInRole",
            "assignableScopes": ["/"],
            "permissions": [{"actions": actions, "notActions": not_actions, "dataActions": [], "notDataActions": []}],
        },
    }


CONTRIBUTOR_NOT_ACTIONS = [
    "Microsoft.Authorization/*/Delete",
    "Microsoft.Authorization/*/Write",
    "Microsoft.Authorization/elevateAccess/Action",
    "Microsoft.Blueprint/blueprintAssignments/write",
    "Microsoft.Blueprint/blueprintAssignments/delete",
    "Microsoft.Compute/galleries/share/action",
]
"""Contributor's ``notActions`` (Microsoft Learn, "Azure built-in roles for General")."""


def role_assignment(
    role_id: str,
    principal: str = OBJECT_ID,
    condition: str | None = None,
    scope: str = f"/subscriptions/{SUBSCRIPTION}",
    created_on: str | None = None,
    principal_type: str = "User",
) -> dict[str, Any]:
    """A role assignment as "Role Assignments - List For Scope" returns it (2022-04-01: ``createdOn``,
    ``updatedOn``, ``createdBy`` are read-only properties ARM fills in)."""
    extra = {"createdOn": created_on, "updatedOn": created_on} if created_on else {}
    return {
        "id": f"{scope}/providers/Microsoft.Authorization/roleAssignments/{role_id}-a",
        "name": f"{role_id}-a",
        "type": "Microsoft.Authorization/roleAssignments",
        "properties": {
            "roleDefinitionId": f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{role_id}",
            "principalId": principal,
            "principalType": principal_type,
            "scope": scope,
            "condition": condition,
            "conditionVersion": "2.0" if condition else None,
            **extra,
        },
    }


SKUS_PATH = r"/subscriptions/[^/]+/providers/Microsoft\.Compute/skus"
USAGES_PATH = r"/subscriptions/[^/]+/providers/Microsoft\.Compute/locations/[^/]+/usages"
VERSIONS_PATH = r"/subscriptions/[^/]+/providers/Microsoft\.ContainerService/locations/[^/]+/kubernetesVersions"
RG_PERMISSIONS_PATH = r"/subscriptions/[^/]+/resourcegroups/[^/]+/providers/Microsoft\.Authorization/permissions"
ASSIGNMENTS_PATH = r"/subscriptions/[^/]+/providers/Microsoft\.Authorization/roleAssignments"
DEFINITION_PATH = r"/subscriptions/[^/]+/providers/Microsoft\.Authorization/roleDefinitions/([^/]+)"


IDENTITY_PATH = r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/[^/]+"
GROUP_ASSIGNMENTS_PATH = r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Authorization/roleAssignments"


def user_assigned_identity(name: str, group: str, principal: str) -> dict[str, Any]:
    """A user-assigned identity as "User Assigned Identities - Get" returns it (azure-rest-api-specs
    ``specification/msi/resource-manager/Microsoft.ManagedIdentity/stable/2023-01-31/examples/IdentityGet.json``)."""
    return {
        "id": f"/subscriptions/{SUBSCRIPTION}/resourcegroups/{group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}",
        "location": "eastus",
        "name": name,
        "tags": {},
        "properties": {
            "tenantId": "b6c948ef-f6b5-4384-8354-da3a15eca969",
            "principalId": principal,
            "clientId": "46c40a84-6e74-4a24-b6d2-54b8d3b9a4f3",
        },
        "type": "Microsoft.ManagedIdentity/userAssignedIdentities",
    }


def route_identity(
    arm: ArmAdapter, name: str, group: str, principal: str, assignments: list[dict[str, Any]], found: bool = True
) -> ArmAdapter:
    """``arm`` answering for a stack's control-plane identity ``name`` in ``group`` (or ARM's 404
    before the first ``pulumi up``) and for the role assignments on a resource group: what the
    preflight's reservation-grant check reads."""
    if found:
        arm.route("GET", IDENTITY_PATH, (200, user_assigned_identity(name, group, principal)))
    else:
        arm.route("GET", IDENTITY_PATH, (404, {"error": {"code": "ResourceNotFound", "message": f"{name} was not found."}}))
    arm.route("GET", GROUP_ASSIGNMENTS_PATH, (200, {"value": assignments}))
    return arm


def definitions_route(definitions: dict[str, dict[str, Any]]) -> Route:
    def answer(path: str, _query: dict[str, list[str]]) -> Answer:
        role_id = path.rsplit("/", 1)[-1]
        if role_id in definitions:
            return 200, definitions[role_id]
        return 404, {"error": {"code": "RoleDefinitionDoesNotExist", "message": f"{role_id} not found"}}

    return answer


def not_found_group(group: str) -> Answer:
    return 404, {"error": {"code": "ResourceGroupNotFound", "message": f"Resource group '{group}' could not be found."}}
