"""``KubernetesAccessGate``: wait, bounded, until the deployer may create what the stack creates.

Why it exists: on AKS with Azure RBAC, the deployer's Kubernetes permissions come from an Azure
role assignment ("Azure Kubernetes Service RBAC Cluster Admin") that ARM accepts at once but that
reaches the cluster's authorization webhook later ("New role assignments can take up to five
minutes to propagate": AKS docs, ``entra-id-authorization.md`` / "Use Azure RBAC for Kubernetes
authorization"). pulumi-kubernetes retries a create only when the API server answers NotFound or
NoMatch (a CRD not yet served: pulumi/pulumi-kubernetes ``provider/pkg/await/await.go``), so the
ServiceAccount, DaemonSet and ConfigMap applied seconds after the assignment fail the first
``pulumi up`` with 403 Forbidden. Every Kubernetes object of the AKS stack uses one provider, and the
provider depends on this gate, which depends on the role assignment.

What it does: on create, it asks the API server, as the deployer, whether each permission in
``permissions`` is granted (a ``SelfSubjectAccessReview`` per permission, which any authenticated
user may create: Kubernetes' ``system:basic-user`` ClusterRole), and polls until all are, or until
``timeout_seconds`` (default 600: twice the documented propagation time) pass; then it fails the
update with an error naming the identity, what is still denied, and what to check. It
authenticates exactly as the Kubernetes provider will: from the same kubeconfig, by running its
exec credential plugin (kubelogin on AKS), so a pass means the provider's own requests will pass.

When it runs: only on create, and again only when its ``triggers`` change (the cluster's and the
role assignment's IDs, so a new cluster or a re-created assignment waits again). A kubeconfig that
changes (token format, FQDN) is an in-place update that does not poll. A steady-state ``pulumi up``
costs nothing.

Why a Pulumi dynamic resource, not pulumi-command or pulumi-time: a dynamic resource runs in the
program's own Python process, so it needs no extra provider plugin and no ``kubectl`` on the
machine (``pulumi-command`` would need both, and ``kubectl auth can-i`` would add another binary to
keep in step with the cluster); its create/diff semantics give "only when needed" for free; and
unlike ``pulumi-time``'s fixed sleep it waits exactly as long as propagation takes and fails with a
reason when it does not happen. Its cost: the provider is serialized into the state, so this module
must stay importable under its name (it is part of the package).

The polling (``wait_for_access``) takes its clock, sleep and review call as arguments, so it is
tested without a cluster (``tests/test_access_gate.py``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import pulumi
import pulumi.dynamic
import yaml

from components.errors import ConfigError

DEFAULT_TIMEOUT_SECONDS = 600
"""Ten minutes: twice the propagation time the AKS docs give, well inside a CI job."""

POLL_SECONDS = 10
"""Between rounds of reviews: propagation takes minutes, so ten seconds wastes little and spares the API."""


@dataclass(frozen=True, order=True)
class Permission:
    """One thing the deployer must be allowed to do: ``verb`` on ``resource`` of API ``group`` in ``namespace``."""

    group: str
    resource: str
    namespace: str
    verb: str = "create"

    def attributes(self) -> dict[str, str]:
        """The ``SelfSubjectAccessReview`` ``spec.resourceAttributes``."""
        return {"group": self.group, "resource": self.resource, "namespace": self.namespace, "verb": self.verb}

    def __str__(self) -> str:
        kind = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {kind} in {self.namespace}"


STACK_PERMISSIONS: tuple[Permission, ...] = (
    Permission("", "serviceaccounts", "kube-system"),
    Permission("apps", "daemonsets", "kube-system"),
    Permission("", "configmaps", "kube-system"),
    Permission("batch", "jobs", "default"),
)
"""What the AKS stack creates: the device plugin's ServiceAccount and DaemonSet, the priority
expander's ConfigMap (all in ``kube-system``) and the optional smoke-test Job (``default``)."""


class AccessNotGrantedError(Exception):
    """The permissions were still denied when the gate gave up."""


Review = Callable[[Permission], bool]
"""Asks the API server whether the deployer may do one thing; raises ``OSError`` when it cannot tell yet."""


def wait_for_access(
    permissions: Sequence[Permission],
    review: Review,
    timeout_seconds: float,
    who: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll_seconds: float = POLL_SECONDS,
) -> int:
    """Review every permission until all are allowed; returns the number of rounds it took.

    A permission once allowed is not asked again. A review that cannot be made (the API server not
    reachable yet, a token that cannot be had yet, an HTTP error) counts as "not yet", with the
    reason kept for the final message.

    Raises:
        AccessNotGrantedError: after ``timeout_seconds``, naming ``who``, what is still denied and why.
    """
    pending = sorted(set(permissions))
    deadline = clock() + timeout_seconds
    rounds = 0
    reasons: dict[Permission, str] = {}
    while True:
        rounds += 1
        still = []
        for permission in pending:
            try:
                if review(permission):
                    reasons.pop(permission, None)
                    continue
                reasons[permission] = "denied"
            except OSError as error:
                reasons[permission] = f"not reviewable yet: {error}"
            still.append(permission)
        pending = still
        if not pending:
            return rounds
        if clock() + poll_seconds > deadline:
            denied = "; ".join(f"{p} ({reasons[p]})" for p in pending)
            raise AccessNotGrantedError(
                f"{who} still may not {denied} after {timeout_seconds:.0f} s ({rounds} rounds of SelfSubjectAccessReview). "
                "Azure role assignments usually reach AKS within five minutes: check that the 'Azure Kubernetes "
                "Service RBAC Cluster Admin' assignment on the cluster exists for this identity (az role assignment "
                "list --scope <cluster id>), then run `pulumi up` again; nothing Kubernetes was created."
            )
        sleep(poll_seconds)


# --- talking to the API server as the kubeconfig's user -------------------------------------------


def _current(document: Mapping[str, Any], kind: str, name: str) -> dict[str, Any]:
    for entry in document.get(f"{kind}s") or []:
        if entry.get("name") == name:
            return dict(entry.get(kind) or {})
    raise ValueError(f"kubeconfig has no {kind} named {name!r}")


def exec_credential_token(exec_config: Mapping[str, Any], run: Callable[..., Any] = subprocess.run) -> str:
    """The bearer token an exec credential plugin prints (client.authentication.k8s.io
    ``ExecCredential`` ``status.token``), running it as client-go does: ``command`` with ``args``
    and ``env`` added to this process's environment."""
    env = dict(os.environ)
    env.update({item["name"]: item["value"] for item in exec_config.get("env") or []})
    argv = [str(exec_config["command"]), *[str(a) for a in exec_config.get("args") or []]]
    try:
        done = run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired) as error:
        raise OSError(f"{argv[0]}: {error}") from error
    if done.returncode != 0:
        raise OSError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    token = json.loads(done.stdout).get("status", {}).get("token")
    if not token:
        raise OSError(f"{argv[0]} printed no status.token")
    return str(token)


@dataclass(frozen=True)
class ApiServer:
    """Where and how to reach the API server, from a kubeconfig's current context."""

    server: str
    ca_pem: str | None
    exec_config: dict[str, Any] | None
    token: str | None

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str) -> ApiServer:
        document = yaml.safe_load(kubeconfig)
        context = _current(document, "context", document["current-context"])
        cluster = _current(document, "cluster", context["cluster"])
        user = _current(document, "user", context["user"])
        ca = cluster.get("certificate-authority-data")
        return cls(
            server=str(cluster["server"]).rstrip("/"),
            ca_pem=base64.b64decode(ca).decode() if ca else None,
            exec_config=user.get("exec"),
            token=user.get("token"),
        )

    def bearer_token(self) -> str:
        if self.token:
            return self.token
        if self.exec_config:
            return exec_credential_token(self.exec_config)
        raise OSError("the kubeconfig user has neither a token nor an exec credential plugin")

    def review(self, permission: Permission) -> bool:
        """One ``SelfSubjectAccessReview``: ``status.allowed``."""
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": permission.attributes()},
        }
        request = urllib.request.Request(
            f"{self.server}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.bearer_token()}", "Content-Type": "application/json"},
            method="POST",
        )
        context = ssl.create_default_context(cadata=self.ca_pem) if self.ca_pem else ssl.create_default_context()
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return bool(json.load(response).get("status", {}).get("allowed"))
        except urllib.error.HTTPError as error:
            raise OSError(f"HTTP {error.code} from the API server") from error
        except urllib.error.URLError as error:
            raise OSError(str(error.reason)) from error


# --- the dynamic resource -------------------------------------------------------------------------

TRIGGERS = "triggers"


class _AccessGateProvider(pulumi.dynamic.ResourceProvider):
    """Create polls; a change of ``triggers`` replaces (polls again); anything else updates in place."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        permissions = [Permission(**p) for p in props["permissions"]]
        rounds = wait_for_access(
            permissions,
            ApiServer.from_kubeconfig(props["kubeconfig"]).review,
            float(props["timeoutSeconds"]),
            who=str(props.get("identity") or "the deploying identity"),
        )
        digest = hashlib.sha256(json.dumps(props[TRIGGERS], sort_keys=True).encode()).hexdigest()[:16]
        return pulumi.dynamic.CreateResult(id_=f"access-{digest}", outs={**props, "rounds": rounds})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        replaces = [key for key in (TRIGGERS, "permissions") if olds.get(key) != news.get(key)]
        changed = bool(replaces) or any(olds.get(k) != news.get(k) for k in ("kubeconfig", "timeoutSeconds", "identity"))
        return pulumi.dynamic.DiffResult(changes=changed, replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs={**news, "rounds": olds.get("rounds", 0)})


class KubernetesAccessGate(pulumi.dynamic.Resource, module="gpupools", name="KubernetesAccessGate"):
    """A resource that exists once the kubeconfig's user may do every one of ``permissions``.

    Args:
        name: the resource name.
        kubeconfig: the kubeconfig the Kubernetes provider will use (a secret stays one).
        triggers: values whose change means "wait again" (cluster ID, role assignment ID).
        identity: who is waiting, for the error message (an object ID); optional.
        permissions: default ``STACK_PERMISSIONS``.
        timeout_seconds: default ``DEFAULT_TIMEOUT_SECONDS`` (600).
        opts: ``depends_on`` the role assignment that grants the permissions.
    """

    rounds: pulumi.Output[int]

    def __init__(
        self,
        name: str,
        kubeconfig: pulumi.Input[str],
        triggers: Mapping[str, pulumi.Input[str]],
        identity: pulumi.Input[str] | None = None,
        permissions: Sequence[Permission] = STACK_PERMISSIONS,
        timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        path = f"KubernetesAccessGate({name})"
        if not permissions:
            raise ConfigError(f"{path}.permissions", "must name at least one permission to wait for", list(permissions))
        if isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, int) or timeout_seconds <= 0:
            raise ConfigError(f"{path}.timeout_seconds", "must be a positive number of seconds", timeout_seconds)
        props: dict[str, Any] = {
            "kubeconfig": kubeconfig,
            TRIGGERS: dict(triggers),
            "identity": identity,
            "permissions": [p.attributes() for p in sorted(set(permissions))],
            "timeoutSeconds": timeout_seconds,
            "rounds": None,
        }
        super().__init__(_AccessGateProvider(), name, props, opts)
