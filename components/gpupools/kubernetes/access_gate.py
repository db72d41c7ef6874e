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
user may create: Kubernetes' ``system:basic-user`` ClusterRole), and whether each resource in
``served`` is served (its group version's discovery document lists it), and polls until all pass,
or until ``timeout_seconds`` (default 600: twice the documented propagation time) pass; then it
fails the update with an error naming the identity, what is still denied, what is still not
served, and what to check. It authenticates exactly as the Kubernetes provider will: from the same
kubeconfig, by running its exec credential plugin (kubelogin on AKS), so a pass means the
provider's own requests will pass.

What it checks: a ``create`` for every kind the stack creates, in the namespace it creates it in,
and without a namespace for cluster-scoped kinds (the device plugin's ClusterRole and
ClusterRoleBinding with GPU sharing, NAP's NodePool and AKSNodeClass). The list is not written
here: each component that creates Kubernetes objects declares its kinds (``KINDS``, a
``KubernetesKind`` each), and the cluster builds the gate from the declarations of the components
its stack composes (``gpupools.azure.kubernetes_access``). With Node Auto Provisioning the gate
also waits until NodePool and AKSNodeClass are served: AKS installs their CRDs itself, and
pulumi-kubernetes retries a create that meets NoMatch only a few times with backoff
(pulumi/pulumi-kubernetes#262, "some maximum retry threshold"; #1446 asks for more), so a CRD that is
late by minutes would still fail the first ``pulumi up``.

When it runs: only on create, and again only when its ``triggers`` change (the cluster's and the
role assignment's IDs, so a new cluster or a re-created assignment waits again) or its checks do (a
kind added to the stack may be one the deployer cannot create yet, or one not served yet). A
kubeconfig that changes (token format, FQDN) is an in-place update that does not poll. A
steady-state ``pulumi up`` costs nothing.

Why a Pulumi dynamic resource, not pulumi-command or pulumi-time: a dynamic resource runs in the
program's own Python process, so it needs no extra provider plugin and no ``kubectl`` on the
machine (``pulumi-command`` would need both, and ``kubectl auth can-i`` would add another binary to
keep in step with the cluster); its create/diff semantics give "only when needed" for free; and
unlike ``pulumi-time``'s fixed sleep it waits exactly as long as propagation takes and fails with a
reason when it does not happen. Its cost: the provider is serialized into the state, so this module
must stay importable under its name (it is part of the package).

The polling (``wait_for_access``) takes its clock, sleep and check call as arguments, so it is
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

from gpupools.errors import ConfigError

DEFAULT_TIMEOUT_SECONDS = 600
"""Ten minutes: twice the propagation time the AKS docs give, well inside a CI job."""

POLL_SECONDS = 10
"""Between rounds of reviews: propagation takes minutes, so ten seconds wastes little and spares the API."""


@dataclass(frozen=True, order=True)
class Permission:
    """One thing the deployer must be allowed to do: ``verb`` on ``resource`` of API ``group`` in
    ``namespace``; ``namespace`` empty for a cluster-scoped resource (ClusterRole, NodePool)."""

    group: str
    resource: str
    namespace: str = ""
    verb: str = "create"

    def attributes(self) -> dict[str, str]:
        """The ``SelfSubjectAccessReview`` ``spec.resourceAttributes``. A cluster-scoped resource has no
        namespace: '"" (empty) is empty for cluster-scoped resources' (Kubernetes API reference,
        ``ResourceAttributes`` of ``authorization.k8s.io/v1``), so none is sent."""
        attributes = {"group": self.group, "resource": self.resource, "verb": self.verb}
        if self.namespace:
            attributes["namespace"] = self.namespace
        return attributes

    def __str__(self) -> str:
        kind = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {kind} in {self.namespace}" if self.namespace else f"{self.verb} {kind}"


@dataclass(frozen=True, order=True)
class ServedResource:
    """A resource the API server must serve before the stack creates one: ``resource`` (plural) in
    ``group``/``version``, as API discovery lists it. For a custom resource that means its CRD exists,
    serves ``version`` and is ``Established``: the CRD discovery controller skips CRDs that are not
    Established and versions that are not served (kubernetes/kubernetes
    ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go``,
    ``sync``), and pulumi-kubernetes maps a kind to its resource through the same discovery (a kind
    missing there is its "no matches for kind" NoMatch error)."""

    group: str
    version: str
    resource: str

    @property
    def path(self) -> str:
        """The discovery document: ``/apis/<group>/<version>`` (``/api/v1`` for the core group)."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def attributes(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "resource": self.resource}

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}/{self.version}" if self.group else f"{self.resource}/{self.version}"


@dataclass(frozen=True, order=True)
class KubernetesKind:
    """A kind of Kubernetes object a component creates: API ``group`` (empty for core), ``version``,
    ``kind``, its ``resource`` (the plural the API paths and RBAC use) and whether it is namespaced.

    Each component that creates Kubernetes objects declares these (``KINDS`` beside its ``TYPE``),
    and the gate's checks are derived from the declarations (``gpupools.azure.kubernetes_access``),
    so a kind added to a component is checked without a second list to remember."""

    group: str
    version: str
    kind: str
    resource: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def create(self, namespace: str) -> Permission:
        """The permission to create one in ``namespace`` (ignored for a cluster-scoped kind)."""
        return Permission(self.group, self.resource, namespace if self.namespaced else "")

    def served(self) -> ServedResource:
        return ServedResource(self.group, self.version, self.resource)


SERVICE_ACCOUNT = KubernetesKind("", "v1", "ServiceAccount", "serviceaccounts", namespaced=True)
CONFIG_MAP = KubernetesKind("", "v1", "ConfigMap", "configmaps", namespaced=True)
DAEMON_SET = KubernetesKind("apps", "v1", "DaemonSet", "daemonsets", namespaced=True)
JOB = KubernetesKind("batch", "v1", "Job", "jobs", namespaced=True)
SERVICE = KubernetesKind("", "v1", "Service", "services", namespaced=True)
CLUSTER_ROLE = KubernetesKind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDING = KubernetesKind(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
"""The built-in kinds gpupools creates, with their resource names and scope as the Kubernetes API
reference gives them (``/api/v1/namespaces/{namespace}/serviceaccounts``,
``/apis/rbac.authorization.k8s.io/v1/clusterroles``, ...)."""

SERVICE_MONITOR = KubernetesKind("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", namespaced=True)
"""The Prometheus Operator's ServiceMonitor (its CRD ``monitoring.coreos.com_servicemonitors.yaml``:
plural ``servicemonitors``, scope Namespaced); the DCGM exporter creates one when asked to."""


Check = Permission | ServedResource
"""What the gate waits for: a permission granted, or a resource served."""


class AccessNotGrantedError(Exception):
    """A permission was still denied, or a resource still not served, when the gate gave up."""


Review = Callable[[Check], bool]
"""Asks the API server whether the deployer may do one thing (a ``Permission``) or whether it serves
a resource (a ``ServedResource``); raises ``OSError`` when it cannot tell yet."""

RBAC_HINT = (
    "Azure role assignments usually reach AKS within five minutes: check that the 'Azure Kubernetes "
    "Service RBAC Cluster Admin' assignment on the cluster exists for this identity (az role assignment "
    "list --scope <cluster id>)"
)
CRD_HINT = (
    "a custom resource is served once its CustomResourceDefinition is Established: check `kubectl get crds` "
    "(on AKS, Node Auto Provisioning's come with nodeProvisioningProfile mode Auto, and its docs check them "
    "right after enabling it)"
)


def wait_for_access(
    checks: Sequence[Check],
    review: Review,
    timeout_seconds: float,
    who: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll_seconds: float = POLL_SECONDS,
) -> int:
    """Check every permission and served resource until all pass; returns the number of rounds it took.

    A check once passed is not made again. A check that cannot be made (the API server not reachable
    yet, a token that cannot be had yet, an HTTP error) counts as "not yet", with the reason kept for
    the final message.

    Raises:
        AccessNotGrantedError: after ``timeout_seconds``, naming ``who``, what is still denied, what is
            still not served, and why.
    """
    pending: list[Check] = [
        *sorted({c for c in checks if isinstance(c, Permission)}),
        *sorted({c for c in checks if isinstance(c, ServedResource)}),
    ]
    deadline = clock() + timeout_seconds
    rounds = 0
    reasons: dict[Check, str] = {}
    while True:
        rounds += 1
        still = []
        for check in pending:
            try:
                if review(check):
                    reasons.pop(check, None)
                    continue
                reasons[check] = "denied" if isinstance(check, Permission) else "not served"
            except OSError as error:
                reasons[check] = f"not {'reviewable' if isinstance(check, Permission) else 'checkable'} yet: {error}"
            still.append(check)
        pending = still
        if not pending:
            return rounds
        if clock() + poll_seconds > deadline:
            raise AccessNotGrantedError(_give_up_message(pending, reasons, who, timeout_seconds, rounds))
        sleep(poll_seconds)


def _give_up_message(pending: Sequence[Check], reasons: Mapping[Check, str], who: str, timeout: float, rounds: int) -> str:
    denied = "; ".join(f"{c} ({reasons[c]})" for c in pending if isinstance(c, Permission))
    unserved = "; ".join(f"{c} ({reasons[c]})" for c in pending if isinstance(c, ServedResource))
    what = [f"{who} still may not {denied}"] if denied else []
    what += [f"the API server still does not serve {unserved}"] if unserved else []
    hints = ([RBAC_HINT] if denied else []) + ([CRD_HINT] if unserved else [])
    return (
        f"{', and '.join(what)} after {timeout:.0f} s ({rounds} rounds of checks). "
        f"{'; '.join(hints)}; then run `pulumi up` again. Nothing Kubernetes was created."
    )


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
        answer = self._request("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body)
        return bool(answer.get("status", {}).get("allowed"))

    def serves(self, resource: ServedResource) -> bool:
        """Whether the discovery document of the resource's group version (an ``APIResourceList``)
        lists it. A group version not served at all is a 404 there, so "not served" too. Discovery
        is open to every authenticated user (Kubernetes' ``system:discovery`` ClusterRole)."""
        try:
            answer = self._request(resource.path)
        except _NotFoundError:
            return False
        return any(item.get("name") == resource.resource for item in answer.get("resources") or [])

    def check(self, check: Check) -> bool:
        """``review`` for a permission, ``serves`` for a served resource."""
        return self.review(check) if isinstance(check, Permission) else self.serves(check)

    def _request(self, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET ``path`` (or POST ``body`` to it) as the kubeconfig's user; the decoded JSON answer."""
        request = urllib.request.Request(
            f"{self.server}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            headers={
                "Authorization": f"Bearer {self.bearer_token()}",
                "Accept": "application/json",
                **({"Content-Type": "application/json"} if body is not None else {}),
            },
            method="POST" if body is not None else "GET",
        )
        context = ssl.create_default_context(cadata=self.ca_pem) if self.ca_pem else ssl.create_default_context()
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise _NotFoundError(path) from error
            raise OSError(f"HTTP {error.code} from the API server") from error
        except urllib.error.URLError as error:
            raise OSError(str(error.reason)) from error


class _NotFoundError(OSError):
    """The API server answered 404 (for a discovery document: the group version is not served)."""


# --- the dynamic resource -------------------------------------------------------------------------

TRIGGERS = "triggers"
PERMISSIONS = "permissions"
SERVED = "servedResources"
REPLACING = (TRIGGERS, PERMISSIONS, SERVED)
"""Inputs whose change replaces the gate, so it waits again: a new cluster or role assignment, or a
check added (a component that now creates a new kind, a CRD the stack now needs)."""


class _AccessGateProvider(pulumi.dynamic.ResourceProvider):
    """Create waits; a change of ``triggers``, ``permissions`` or ``servedResources`` replaces (waits
    again); anything else updates in place."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        checks: list[Check] = [Permission(**p) for p in props[PERMISSIONS]]
        checks += [ServedResource(**r) for r in props.get(SERVED) or []]
        rounds = wait_for_access(
            checks,
            ApiServer.from_kubeconfig(props["kubeconfig"]).check,
            float(props["timeoutSeconds"]),
            who=str(props.get("identity") or "the deploying identity"),
        )
        digest = hashlib.sha256(json.dumps(props[TRIGGERS], sort_keys=True).encode()).hexdigest()[:16]
        return pulumi.dynamic.CreateResult(id_=f"access-{digest}", outs={**props, "rounds": rounds})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # ``or []``: a gate created before ``servedResources`` existed has none in its state, which
        # is the same as an empty list (no reason to wait again).
        replaces = [key for key in REPLACING if (olds.get(key) or []) != (news.get(key) or [])]
        changed = bool(replaces) or any(olds.get(k) != news.get(k) for k in ("kubeconfig", "timeoutSeconds", "identity"))
        return pulumi.dynamic.DiffResult(changes=changed, replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs={**news, "rounds": olds.get("rounds", 0)})


class KubernetesAccessGate(pulumi.dynamic.Resource, module="gpupools", name="KubernetesAccessGate"):
    """A resource that exists once the kubeconfig's user may do every one of ``permissions`` and the
    API server serves every one of ``served``.

    Args:
        name: the resource name.
        kubeconfig: the kubeconfig the Kubernetes provider will use (a secret stays one).
        triggers: values whose change means "wait again" (cluster ID, role assignment ID).
        identity: who is waiting, for the error message (an object ID); optional.
        permissions: what the deployer must be allowed to do: a ``create`` per kind the stack
            creates (``KubernetesKind.create``), cluster-scoped kinds included.
        served: resources the API server must serve first (custom resources whose CRDs someone
            else installs, such as AKS Node Auto Provisioning's); default none.
        timeout_seconds: default ``DEFAULT_TIMEOUT_SECONDS`` (600), for all checks together.
        opts: ``depends_on`` the role assignment that grants the permissions.
    """

    rounds: pulumi.Output[int]

    def __init__(
        self,
        name: str,
        kubeconfig: pulumi.Input[str],
        triggers: Mapping[str, pulumi.Input[str]],
        identity: pulumi.Input[str] | None = None,
        permissions: Sequence[Permission] = (),
        served: Sequence[ServedResource] = (),
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
            PERMISSIONS: [p.attributes() for p in sorted(set(permissions))],
            SERVED: [r.attributes() for r in sorted(set(served))],
            "timeoutSeconds": timeout_seconds,
            "rounds": None,
        }
        super().__init__(_AccessGateProvider(), name, props, opts)
