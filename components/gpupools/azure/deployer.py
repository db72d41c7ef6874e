"""Who runs ``pulumi up``: the principal type of the deployer's role assignments. Pure.

ARM rejects a role assignment whose ``principalType`` does not match the principal ("has type
'ServicePrincipal', which is different from specified PrincipalType 'User'": ``400
UnmatchedPrincipalType``, Azure/modern-web-app-pattern-dotnet #129), and pulumi-azure-native's
``RoleAssignment`` sends ``User`` when none is given (``principal_type`` "Default value is 'User'",
pulumi-azure-native 3.29 ``authorization/role_assignment.py``; the ``2022-04-01`` spec's default,
Azure/azure-rest-api-specs #21664). A deployer at a desk is a user; CI (``deploy.yml``'s OIDC
federated credential, a client secret, a managed identity) is a service principal.

The type comes from the ARM access token the provider itself uses
(``azure-native:authorization:getClientToken``, the same credential chain as every other call),
read from its claims (Microsoft identity platform, "Access token claims reference"):

* ``idtyp``: ``app`` for an app-only token (a service principal or managed identity), ``user``
  for a token issued to a user; "the most accurate way for an API to determine if a token is an
  app token or an app+user token";
* without ``idtyp``: ``scp`` (delegated scopes) is "only present for user tokens"; an app-only
  token carries ``roles`` instead.

Nothing is verified here (the provider already authenticated with the token); the claims only
name the kind of principal. A token that cannot be read as a JWT is an error rather than a guess.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from pulumi_azure_native import authorization

USER = authorization.PrincipalType.USER.value
SERVICE_PRINCIPAL = authorization.PrincipalType.SERVICE_PRINCIPAL.value


def token_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT (its second, base64url part), unverified."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("the ARM access token is not a JWT (header.payload.signature)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims = json.loads(base64.urlsafe_b64decode(payload))
    if not isinstance(claims, dict):
        raise ValueError("the ARM access token's payload is not a JSON object")
    return claims


def principal_type(token: str) -> str:
    """``User`` or ``ServicePrincipal`` for the principal the ARM access ``token`` was issued to."""
    claims = token_claims(token)
    kind = claims.get("idtyp")
    if kind == "user":
        return USER
    if kind == "app":
        return SERVICE_PRINCIPAL
    return USER if claims.get("scp") else SERVICE_PRINCIPAL
