"""The deployer-access gate (components/gpupools/kubernetes/access_gate.py) and its place in the AKS stack.

Why it must exist: AKS role assignments "can take up to five minutes to propagate" (AKS docs,
"Use Azure RBAC for Kubernetes authorization"), and pulumi-kubernetes retries a create only on
NotFound/NoMatch (pulumi/pulumi-kubernetes ``provider/pkg/await/await.go``), so a 403 in that window
fails the first ``pulumi up``; a NoMatch (a CRD not served yet) it retries only a few times
(pulumi/pulumi-kubernetes#262). These tests drive the polling with a fake clock, the checks with a
real local HTTP server speaking the SelfSubjectAccessReview and discovery APIs, and the stacks on
the mock runtime.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
import yaml
from gpupools.aws import karpenter_nodes
from gpupools.azure import kubernetes_access, nap_nodes
from gpupools.errors import ConfigError
from gpupools.kubernetes import dcgm_exporter, device_plugin, efa_device_plugin, priority_expander, smoke_test
from gpupools.kubernetes.access_gate import (
    AccessNotGrantedError,
    ApiServer,
    KubernetesAccessGate,
    KubernetesKind,
    Permission,
    ServedResource,
    _AccessGateProvider,
    exec_credential_token,
    wait_for_access,
)
from gpupools.testing import Registration, Run, run_program, run_stack, stack_config

from tests.crd_schema import CRD_DIR
from tests.example_runs import example_run

DAEMONSETS = Permission("apps", "daemonsets", "kube-system")
CONFIGMAPS = Permission("", "configmaps", "kube-system")
CLUSTERROLES = Permission("rbac.authorization.k8s.io", "clusterroles")
NODEPOOLS = ServedResource("karpenter.sh", "v1", "nodepools")
AKSNODECLASSES = ServedResource("karpenter.azure.com", "v1beta1", "aksnodeclasses")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def scripted(answers: dict[Permission, list[Any]]) -> tuple[Any, list[Permission]]:
    """A review that answers each permission from its list (the last answer repeats); an exception
    instance in the list is raised."""
    asked: list[Permission] = []

    def review(permission: Permission) -> bool:
        asked.append(permission)
        queue = answers[permission]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return bool(answer)

    return review, asked


def test_waits_through_two_403_rounds_then_passes_without_asking_again() -> None:
    clock = FakeClock()
    review, asked = scripted({DAEMONSETS: [False, False, True], CONFIGMAPS: [True]})
    rounds = wait_for_access([DAEMONSETS, CONFIGMAPS], review, 600, "x", clock=clock, sleep=clock.sleep, poll_seconds=10)
    assert rounds == 3
    assert clock.sleeps == [10, 10]
    assert asked.count(CONFIGMAPS) == 1  # allowed in round 1, never asked again
    assert asked.count(DAEMONSETS) == 3


def test_gives_up_after_the_timeout_naming_who_and_what_is_denied() -> None:
    clock = FakeClock()
    review, _ = scripted({DAEMONSETS: [False], CONFIGMAPS: [True]})
    with pytest.raises(AccessNotGrantedError) as caught:
        wait_for_access([DAEMONSETS, CONFIGMAPS], review, 60, "object 1234", clock=clock, sleep=clock.sleep, poll_seconds=10)
    message = str(caught.value)
    assert message.startswith("object 1234 still may not create daemonsets.apps in kube-system (denied) after 60 s")
    assert "configmaps" not in message
    assert "RBAC Cluster Admin" in message and "pulumi up" in message
    assert clock.now <= 60  # bounded: never sleeps past the deadline
    assert len(clock.sleeps) == 6 and "(7 rounds" in message  # reviews at 0, 10, ..., 60 s


def test_an_unreachable_api_server_is_not_yet_and_its_reason_is_reported() -> None:
    clock = FakeClock()
    review, _ = scripted({DAEMONSETS: [OSError("connection refused"), True]})
    assert wait_for_access([DAEMONSETS], review, 600, "x", clock=clock, sleep=clock.sleep) == 2
    review, _ = scripted({DAEMONSETS: [OSError("HTTP 401 from the API server")]})
    clock = FakeClock()
    with pytest.raises(AccessNotGrantedError, match=r"not reviewable yet: HTTP 401"):
        wait_for_access([DAEMONSETS], review, 30, "x", clock=clock, sleep=clock.sleep)


def test_a_cluster_scoped_permission_is_reviewed_without_a_namespace_and_named_without_one() -> None:
    # ResourceAttributes.namespace: '"" (empty) is empty for cluster-scoped resources' (Kubernetes
    # API reference, authorization.k8s.io/v1).
    assert CLUSTERROLES.attributes() == {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verb": "create"}
    assert str(CLUSTERROLES) == "create clusterroles.rbac.authorization.k8s.io"
    assert CONFIGMAPS.attributes()["namespace"] == "kube-system"
    cluster_role = KubernetesKind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
    assert cluster_role.create("kube-system") == CLUSTERROLES  # a namespace never sneaks in
    assert str(NODEPOOLS) == "nodepools.karpenter.sh/v1" and NODEPOOLS.path == "/apis/karpenter.sh/v1"


def test_a_denied_cluster_scoped_create_keeps_the_gate_waiting_and_is_named_at_the_end() -> None:
    clock = FakeClock()
    review, asked = scripted({CLUSTERROLES: [False], CONFIGMAPS: [True]})
    with pytest.raises(AccessNotGrantedError) as caught:
        wait_for_access([CONFIGMAPS, CLUSTERROLES], review, 60, "object 1234", clock=clock, sleep=clock.sleep)
    assert str(caught.value).startswith("object 1234 still may not create clusterroles.rbac.authorization.k8s.io (denied)")
    assert asked.count(CLUSTERROLES) == 7 and asked.count(CONFIGMAPS) == 1


def test_waits_until_the_crds_are_served_then_passes() -> None:
    clock = FakeClock()
    review, asked = scripted({CONFIGMAPS: [True], NODEPOOLS: [False, False, True], AKSNODECLASSES: [False, True]})
    rounds = wait_for_access([NODEPOOLS, CONFIGMAPS, AKSNODECLASSES], review, 600, "x", clock=clock, sleep=clock.sleep)
    assert rounds == 3 and clock.sleeps == [10, 10]
    assert asked[:3] == [CONFIGMAPS, AKSNODECLASSES, NODEPOOLS]  # permissions first, then discovery
    assert asked.count(AKSNODECLASSES) == 2 and asked.count(NODEPOOLS) == 3


def test_a_crd_never_served_fails_naming_it_and_what_to_check() -> None:
    clock = FakeClock()
    review, _ = scripted({DAEMONSETS: [False], NODEPOOLS: [False], AKSNODECLASSES: [True]})
    with pytest.raises(AccessNotGrantedError) as caught:
        wait_for_access([DAEMONSETS, NODEPOOLS, AKSNODECLASSES], review, 30, "object 1234", clock=clock, sleep=clock.sleep)
    message = str(caught.value)
    assert message.startswith(
        "object 1234 still may not create daemonsets.apps in kube-system (denied), and the API server still does "
        "not serve nodepools.karpenter.sh/v1 (not served) after 30 s"
    )
    assert "aksnodeclasses" not in message
    assert "RBAC Cluster Admin" in message and "kubectl get crds" in message and "pulumi up" in message
    clock = FakeClock()
    review, _ = scripted({NODEPOOLS: [OSError("HTTP 503 from the API server")]})
    with pytest.raises(AccessNotGrantedError) as caught:
        wait_for_access([NODEPOOLS], review, 30, "x", clock=clock, sleep=clock.sleep)
    assert str(caught.value).startswith(
        "the API server still does not serve nodepools.karpenter.sh/v1 (not checkable yet: HTTP 503"
    )
    assert "RBAC Cluster Admin" not in str(caught.value)  # nothing was denied


# --- the review against an API server speaking SelfSubjectAccessReview -----------------------------


class FakeApiServer(BaseHTTPRequestHandler):
    allowed: set[str] = set()
    seen: list[dict[str, Any]] = []
    discovery: dict[str, list[list[str] | None]] = {}
    """Discovery path -> the resources it lists on each GET (the last answer repeats; None: 404)."""

    def do_GET(self) -> None:
        FakeApiServer.seen.append({"path": self.path, "auth": self.headers["Authorization"], "method": "GET"})
        if self.headers["Authorization"] != "Bearer t0ken":
            self.send_response(401)
            self.end_headers()
            return
        answers = FakeApiServer.discovery.get(self.path, [None])
        names = answers.pop(0) if len(answers) > 1 else answers[0]
        if names is None:
            self.send_response(404)
            self.end_headers()
            return
        group_version = self.path.removeprefix("/apis/")
        resources = [{"name": n, "namespaced": False, "kind": n, "verbs": ["create"]} for n in names]
        self.reply(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeApiServer.seen.append({"path": self.path, "auth": self.headers["Authorization"], "body": body})
        if self.headers["Authorization"] != "Bearer t0ken":
            self.send_response(401)
            self.end_headers()
            return
        attributes = body["spec"]["resourceAttributes"]
        self.reply(201, {**body, "status": {"allowed": attributes["resource"] in FakeApiServer.allowed}})

    def reply(self, code: int, answer: dict[str, Any]) -> None:
        payload = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def api_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), FakeApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeApiServer.seen.clear()
    FakeApiServer.discovery = {}
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def kubeconfig(server: str, user: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "ml",
            "contexts": [{"name": "ml", "context": {"cluster": "ml", "user": "deployer"}}],
            "clusters": [{"name": "ml", "cluster": {"server": server}}],
            "users": [{"name": "deployer", "user": user}],
        }
    )


def test_review_posts_a_self_subject_access_review_and_reads_allowed(api_server: str) -> None:
    FakeApiServer.allowed = {"configmaps"}
    api = ApiServer.from_kubeconfig(kubeconfig(api_server, {"token": "t0ken"}))
    assert api.review(CONFIGMAPS) is True
    assert api.review(DAEMONSETS) is False
    first = FakeApiServer.seen[0]
    assert first["path"] == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    assert first["body"] == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"group": "", "resource": "configmaps", "namespace": "kube-system", "verb": "create"}},
    }


def test_a_401_is_an_os_error_so_the_gate_keeps_waiting(api_server: str) -> None:
    api = ApiServer.from_kubeconfig(kubeconfig(api_server, {"token": "wrong"}))
    with pytest.raises(OSError, match="HTTP 401"):
        api.review(CONFIGMAPS)


def test_served_reads_the_discovery_document_and_a_404_is_not_served(api_server: str) -> None:
    # GET /apis/<group>/<version> answers an APIResourceList; the CRD discovery controller lists a
    # custom resource there only once its CRD is Established and the version served
    # (kubernetes/kubernetes apiextensions-apiserver customresource_discovery_controller.go, sync).
    FakeApiServer.discovery = {
        "/apis/karpenter.sh/v1": [None, ["nodeclaims"], ["nodeclaims", "nodepools", "nodepools/status"]],
    }
    api = ApiServer.from_kubeconfig(kubeconfig(api_server, {"token": "t0ken"}))
    assert api.check(NODEPOOLS) is False  # group version not served at all: 404
    assert api.check(NODEPOOLS) is False  # served, but not this resource yet
    assert api.check(NODEPOOLS) is True
    assert [(s["method"], s["path"], s["auth"]) for s in FakeApiServer.seen] == [
        ("GET", "/apis/karpenter.sh/v1", "Bearer t0ken")
    ] * 3
    bad = ApiServer.from_kubeconfig(kubeconfig(api_server, {"token": "wrong"}))
    with pytest.raises(OSError, match="HTTP 401"):  # not "not served": the gate reports why it cannot tell
        bad.check(NODEPOOLS)


def test_the_gate_waits_for_a_crd_against_a_real_http_server(api_server: str) -> None:
    FakeApiServer.allowed = {"clusterroles"}
    FakeApiServer.discovery = {"/apis/karpenter.sh/v1": [None, None, ["nodepools"]]}
    api = ApiServer.from_kubeconfig(kubeconfig(api_server, {"token": "t0ken"}))
    clock = FakeClock()
    assert wait_for_access([CLUSTERROLES, NODEPOOLS], api.check, 600, "x", clock=clock, sleep=clock.sleep) == 3
    reviews = [s["body"]["spec"]["resourceAttributes"] for s in FakeApiServer.seen if s.get("method") != "GET"]
    assert reviews == [{"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verb": "create"}]


def test_the_gate_gives_up_on_a_denied_clusterroles_create_against_a_real_http_server(api_server: str) -> None:
    FakeApiServer.allowed = {"configmaps"}
    api = ApiServer.from_kubeconfig(kubeconfig(api_server, {"token": "t0ken"}))
    clock = FakeClock()
    with pytest.raises(AccessNotGrantedError, match=r"may not create clusterroles\.rbac\.authorization\.k8s\.io \(denied\)"):
        wait_for_access([CONFIGMAPS, CLUSTERROLES], api.check, 20, "x", clock=clock, sleep=clock.sleep)


def test_create_turns_the_stored_inputs_into_reviews_and_discovery_requests(api_server: str) -> None:
    FakeApiServer.allowed = {"configmaps", "clusterroles"}
    FakeApiServer.discovery = {"/apis/karpenter.sh/v1": [["nodepools"]]}
    props = {
        "kubeconfig": kubeconfig(api_server, {"token": "t0ken"}),
        "triggers": {"clusterId": "c1"},
        "identity": "me",
        "permissions": [CONFIGMAPS.attributes(), CLUSTERROLES.attributes()],
        "servedResources": [NODEPOOLS.attributes()],
        "timeoutSeconds": 600,
        "rounds": None,
    }
    result = _AccessGateProvider().create(props)
    assert result.outs["rounds"] == 1
    assert [s.get("method", "POST") + " " + s["path"] for s in FakeApiServer.seen] == [
        "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "GET /apis/karpenter.sh/v1",
    ]
    reviewed = [s["body"]["spec"]["resourceAttributes"] for s in FakeApiServer.seen[:2]]
    assert reviewed == [CONFIGMAPS.attributes(), CLUSTERROLES.attributes()]
    assert "namespace" not in reviewed[1]


def test_ca_data_and_exec_plugin_come_from_the_current_context() -> None:
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    text = kubeconfig("https://ml.hcp.eastus.azmk8s.io:443/", {"exec": {"command": "kubelogin", "args": ["get-token"]}})
    document = yaml.safe_load(text)
    document["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(ca.encode()).decode()
    api = ApiServer.from_kubeconfig(yaml.safe_dump(document))
    assert api.server == "https://ml.hcp.eastus.azmk8s.io:443"
    assert api.ca_pem == ca
    assert api.exec_config == {"command": "kubelogin", "args": ["get-token"]}


def test_exec_plugin_runs_with_its_env_and_yields_the_token() -> None:
    calls: list[dict[str, Any]] = []

    class Done:
        returncode = 0
        stdout = json.dumps({"kind": "ExecCredential", "status": {"token": "abc"}})
        stderr = ""

    def run(argv: list[str], **kwargs: Any) -> Done:
        calls.append({"argv": argv, **kwargs})
        return Done()

    config = {
        "command": "kubelogin",
        "args": ["get-token", "--login", "azurecli"],
        "env": [{"name": "AAD_LOGIN_METHOD", "value": "x"}],
    }
    assert exec_credential_token(config, run=run) == "abc"
    assert calls[0]["argv"] == ["kubelogin", "get-token", "--login", "azurecli"]
    assert calls[0]["env"]["AAD_LOGIN_METHOD"] == "x"

    class Failed(Done):
        returncode = 1
        stderr = "AADSTS700024: Client assertion is not within its valid time range"

    with pytest.raises(OSError, match="AADSTS700024"):
        exec_credential_token(config, run=lambda *a, **k: Failed())


# --- when it runs ----------------------------------------------------------------------------------


BASE = {"kubeconfig": "k1", "triggers": {"clusterId": "c1", "roleAssignmentId": "r1"}, "permissions": [], "timeoutSeconds": 600}


@pytest.mark.parametrize(
    ("change", "changes", "replaces"),
    [
        ({}, False, []),
        ({"kubeconfig": "k2"}, True, []),  # a new kubeconfig format: no new wait
        ({"triggers": {"clusterId": "c1", "roleAssignmentId": "r2"}}, True, ["triggers"]),  # re-created assignment: wait again
        ({"triggers": {"clusterId": "c2", "roleAssignmentId": "r1"}}, True, ["triggers"]),  # new cluster: wait again
        # a kind added to the stack (a component now creates ClusterRoles): it may not be granted yet
        ({"permissions": [CLUSTERROLES.attributes()]}, True, ["permissions"]),
        # NAP switched on: its CRDs may not be served yet
        ({"servedResources": [NODEPOOLS.attributes()]}, True, ["servedResources"]),
        # a gate created before servedResources existed: nothing new to wait for
        ({"servedResources": []}, False, []),
    ],
)
def test_polls_again_only_when_the_cluster_the_assignment_or_the_checks_change(
    change: dict[str, Any], changes: bool, replaces: list[str]
) -> None:
    diff = _AccessGateProvider().diff("id", BASE, {**BASE, **change})
    assert bool(diff.changes) is changes
    assert (diff.replaces or []) == replaces


# --- in the AKS stack ------------------------------------------------------------------------------


def provider_of(run: Run, registration: Registration) -> Registration:
    urn = registration.provider.rsplit("::", 1)[0]
    [provider] = [r for r in run.registrations if r.urn == urn]
    return provider


AZURE_STACKS = ("azure-dev", "azure-nap-dev")
ALL_STACKS = (*AZURE_STACKS, "aws-dev", "aws-karpenter-dev")

BUILT_IN_RESOURCES = {
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("", "ConfigMap"): ("configmaps", True),
    ("", "Service"): ("services", True),
    ("apps", "DaemonSet"): ("daemonsets", True),
    ("batch", "Job"): ("jobs", True),
    ("", "Namespace"): ("namespaces", False),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
}
"""Resource name and scope of the built-in kinds, from the Kubernetes API reference (its HTTP paths:
``/api/v1/namespaces/{namespace}/serviceaccounts``, ``/apis/rbac.authorization.k8s.io/v1/clusterroles``,
...), written here independently of the components' declarations. Custom kinds come from the
pinned upstream CRDs (``tests/crds``: ``spec.names.plural``, ``spec.scope``)."""


@functools.lru_cache(maxsize=1)
def custom_resources() -> dict[tuple[str, str], tuple[str, bool]]:
    """(group, kind) -> (plural, namespaced) of every pinned CRD."""
    found = {}
    for path in sorted(CRD_DIR.glob("*/*.yaml")):
        crd = yaml.safe_load(path.read_text())
        found[(crd["group"], crd["kind"])] = (crd["plural"], crd["scope"] == "Namespaced")
    return found


def kind_of(registration: Registration) -> KubernetesKind:
    """The registered object's kind, its resource name and scope from the sources above."""
    _, group_version, kind = registration.type.split(":")
    group, version = group_version.split("/")
    group = "" if group == "core" else group
    resource, namespaced = {**BUILT_IN_RESOURCES, **custom_resources()}[(group, kind)]
    return KubernetesKind(group, version, kind, resource, namespaced)


def with_everything(stack: str) -> dict[str, Any]:
    """Overrides that make a stack create every kind it can: the smoke test on, MPS sharing on
    the first GPU pool (the device plugin's ConfigMap, ClusterRole, ClusterRoleBinding and the MPS
    control daemon's DaemonSet), the DCGM exporter's ServiceMonitor and, on aws-dev, EFA on the
    second (the EFA device plugin)."""
    pools = copy.deepcopy(stack_config(stack)["gpupools:gpuPools"])
    if stack != "azure-nap-dev":  # NAP refuses GPU sharing (gpupools.config, NAP_SHARING_RULE)
        pools[0]["sharing"] = {"mps": {"replicas": 2}}
    if stack == "aws-dev":  # an EFA pool: the EFA device plugin's objects (EKS with cluster-autoscaler only)
        pools[1].update(efa=True, zones=stack_config(stack)["gpupools:cluster"]["zones"][:1])
    return {
        "gpupools:gpuPools": pools,
        "gpupools:smokeTest": {"enabled": True},
        "gpupools:gpuMetrics": {"serviceMonitor": True},
    }


def gate_of(run: Run) -> Registration:
    [gate] = [r for r in run.registrations if r.type.endswith("dynamic/gpupools:KubernetesAccessGate")]
    return gate


def required_checks(run: Run) -> tuple[set[Permission], set[ServedResource]]:
    """A create per registered object (in its namespace; none for a cluster-scoped kind), and every
    custom resource served."""
    permissions, served = set(), set()
    for registration in run.kubernetes_objects():
        kind = kind_of(registration)
        namespace = registration.inputs.get("metadata", {}).get("namespace")
        assert bool(namespace) is kind.namespaced, registration.name  # cluster-scoped objects have none
        permissions.add(Permission(kind.group, kind.resource, namespace or ""))
        # The gate waits for the CRDs AKS installs itself (NAP's); the Prometheus Operator's must be
        # installed before gpuMetrics.serviceMonitor is set, so nothing would come by waiting.
        if (kind.group, kind.kind) not in BUILT_IN_RESOURCES and kind.group != "monitoring.coreos.com":
            served.add(kind.served())
    return permissions, served


def gate_checks(gate: Registration) -> tuple[set[Permission], set[ServedResource]]:
    return (
        {Permission(**p) for p in gate.inputs["permissions"]},
        {ServedResource(**r) for r in gate.inputs["servedResources"]},
    )


@pytest.mark.parametrize("everything", [False, True], ids=["as-committed", "with-everything"])
@pytest.mark.parametrize("stack", AZURE_STACKS)
def test_the_gate_checks_every_object_the_aks_stack_registers(stack: str, everything: bool) -> None:
    run = run_stack(stack, overrides=with_everything(stack) if everything else None)
    required_permissions, required_served = required_checks(run)
    permissions, served = gate_checks(gate_of(run))
    assert required_permissions <= permissions, sorted(map(str, required_permissions - permissions))
    assert required_served <= served, sorted(map(str, required_served - served))
    if stack == "azure-nap-dev":
        assert CLUSTERROLES not in permissions  # no sharing under NAP, so no config-manager role
        assert served == {NODEPOOLS, AKSNODECLASSES}
    else:
        assert served == set()  # no CRDs to wait for without NAP


@pytest.mark.parametrize("stack", AZURE_STACKS)
def test_the_gate_checks_nothing_the_aks_stack_cannot_create(stack: str) -> None:
    everything = run_stack(stack, overrides=with_everything(stack))
    required_permissions, required_served = required_checks(everything)
    assert gate_checks(gate_of(everything)) == (required_permissions, required_served)
    assert gate_checks(gate_of(example_run(stack))) == gate_checks(gate_of(everything))  # config does not change it


DECLARED = {
    device_plugin.TYPE: device_plugin.KINDS,
    dcgm_exporter.TYPE: dcgm_exporter.KINDS,
    efa_device_plugin.TYPE: efa_device_plugin.KINDS,
    priority_expander.TYPE: priority_expander.KINDS,
    smoke_test.TYPE: smoke_test.KINDS,
    nap_nodes.TYPE: nap_nodes.KINDS,
    karpenter_nodes.TYPE: karpenter_nodes.KINDS,
}


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_component_declares_the_kinds_it_creates(stack: str) -> None:
    """What the gate is built from (``KINDS``) is what the components register: each Kubernetes object's
    nearest gpupools component declares its kind, resource name and scope."""
    run = run_stack(stack, overrides=with_everything(stack))
    objects = list(run.kubernetes_objects())
    assert objects
    for registration in objects:
        owner = registration
        while owner.type not in DECLARED:
            assert owner.parent, f"{registration.name}: no gpupools component declares it"
            owner = run.by_urn(owner.parent)
        assert kind_of(registration) in DECLARED[owner.type], f"{owner.type} does not declare {registration.type}"


def test_the_aks_gate_is_built_from_the_declarations() -> None:
    assert set(kubernetes_access.gate_permissions(False)) == {
        Permission("", "serviceaccounts", "kube-system"),
        Permission("apps", "daemonsets", "kube-system"),
        Permission("", "configmaps", "kube-system"),
        CLUSTERROLES,
        Permission("rbac.authorization.k8s.io", "clusterrolebindings"),
        Permission("batch", "jobs", "default"),
        Permission("", "services", "kube-system"),
        Permission("monitoring.coreos.com", "servicemonitors", "kube-system"),
    }
    nap = set(kubernetes_access.gate_permissions(True))
    assert nap - set(kubernetes_access.gate_permissions(False)) == {
        Permission("karpenter.sh", "nodepools"),
        Permission("karpenter.azure.com", "aksnodeclasses"),
    }
    assert kubernetes_access.gate_served(True) == (AKSNODECLASSES, NODEPOOLS)
    assert kubernetes_access.gate_served(False) == ()


@pytest.mark.parametrize("stack", AZURE_STACKS)
def test_every_kubernetes_object_waits_for_the_gate_and_the_gate_for_the_role_assignment(stack: str) -> None:
    run = run_stack(stack, overrides=with_everything(stack))
    gate = gate_of(run)
    assignments = {r.urn: r for r in run.of_type("azure-native:authorization:RoleAssignment")}
    [admin] = [u for u in gate.dependencies if u in assignments]
    assert assignments[admin].inputs["roleDefinitionId"].endswith("/b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
    assert gate.inputs["triggers"]["roleAssignmentId"] and gate.inputs["triggers"]["clusterId"]
    objects = list(run.kubernetes_objects())
    assert objects
    for registration in objects:
        assert gate.urn in provider_of(run, registration).dependencies, registration.name


def test_bad_gate_arguments_are_config_errors_before_anything_is_registered() -> None:
    errors: list[ConfigError] = []

    def program() -> None:
        for kwargs in ({"permissions": ()}, {"permissions": [CONFIGMAPS], "timeout_seconds": 0}):
            try:
                KubernetesAccessGate("g", kubeconfig="k", triggers={"a": "b"}, **kwargs)  # type: ignore[arg-type]
            except ConfigError as error:
                errors.append(error)

    run = run_program(program)
    assert [str(e).split(":")[0] for e in errors] == [
        "KubernetesAccessGate(g).permissions",
        "KubernetesAccessGate(g).timeout_seconds",
    ]
    assert not run.registrations
