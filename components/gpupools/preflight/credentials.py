"""Why no check could run, in one line: the common cause of every ``?`` row, explained.

When every row of the preflight is ``?`` the cloud answered nothing, almost always for one reason
(no credentials, expired ones, no subscription, no network). ``why_nothing_ran`` picks the reason
most rows give and, when it names a credential error an SDK raises, says what to set::

    no check could run: no AWS credentials found (botocore NoCredentialsError); set AWS_PROFILE ...
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from gpupools.preflight.report import Check, Status

NO_ANSWER = "no answer: "

AWS_SETUP = (
    "set AWS_PROFILE (a profile from `aws configure` or `aws configure sso`), "
    "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; in CI, the OIDC role step before the preflight"
)
AZURE_SETUP = (
    "run `az login`, or set AZURE_CLIENT_ID and AZURE_TENANT_ID with AZURE_CLIENT_SECRET "
    "or a federated token (workload identity); in CI, the azure/login step before the preflight"
)

EXPLANATIONS: tuple[tuple[str, str], ...] = (
    # AWS (botocore exception names and the error codes of AWS APIs)
    ("NoCredentialsError", f"no AWS credentials found (botocore NoCredentialsError); {AWS_SETUP}"),
    ("PartialCredentialsError", f"incomplete AWS credentials (botocore PartialCredentialsError); {AWS_SETUP}"),
    ("TokenRetrievalError", "the AWS SSO token could not be refreshed (botocore TokenRetrievalError); run `aws sso login`"),
    ("ExpiredToken", "the AWS credentials have expired (ExpiredToken); refresh them, e.g. `aws sso login`"),
    ("ExpiredTokenException", "the AWS credentials have expired (ExpiredTokenException); refresh them, e.g. `aws sso login`"),
    ("InvalidClientTokenId", f"AWS does not know these credentials (InvalidClientTokenId); {AWS_SETUP}"),
    ("UnrecognizedClientException", f"AWS does not know these credentials (UnrecognizedClientException); {AWS_SETUP}"),
    ("AuthFailure", f"AWS rejected the credentials (AuthFailure); {AWS_SETUP}"),
    ("SignatureDoesNotMatch", "AWS rejected the signature (SignatureDoesNotMatch): check AWS_SECRET_ACCESS_KEY"),
    (
        "EndpointConnectionError",
        "no AWS endpoint could be reached (botocore EndpointConnectionError): check the network or proxy",
    ),
    # Azure (azure-core / azure-identity exception names)
    (
        "CredentialUnavailableError",
        f"no Azure credential is available (azure-identity CredentialUnavailableError); {AZURE_SETUP}",
    ),
    (
        "ClientAuthenticationError",
        f"no Azure credential could get a token (azure-core ClientAuthenticationError); {AZURE_SETUP}",
    ),
    ("ServiceRequestError", "no Azure endpoint could be reached (azure-core ServiceRequestError): check the network or proxy"),
)
"""(error name as it appears in a row's reason, one-line explanation), first match wins."""


def row_reason(check: Check) -> str:
    """What a ``?`` row says after ``no answer:`` (a quota row names its quota first)."""
    found = check.found
    at = found.find(NO_ANSWER)
    return found[at + len(NO_ANSWER) :] if at >= 0 else found


def explain(reason: str) -> str:
    """A reason, explained when it names a known credential or connection error."""
    for name, explanation in EXPLANATIONS:
        if re.search(rf"\b{re.escape(name)}\b", reason):
            return explanation
    return reason


def why_nothing_ran(checks: Sequence[Check]) -> str:
    """One line for a preflight whose every row is ``?``: the most common reason, explained."""
    reasons = Counter(row_reason(c) for c in checks if c.status is Status.UNKNOWN)
    if not reasons:
        return "no check could run: the stack has nothing to check"
    reason, _ = reasons.most_common(1)[0]
    return f"no check could run: {explain(reason)}"
