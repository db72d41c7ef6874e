"""The deployer-access gate (components/kubernetes/access_gate.py) and its place in the AKS stack.

Why it must exist: AKS role assignments "can take up to five minutes to propagate" (AKS docs,
"Use Azure RBAC for Kubernetes authorization"), and pulumi-kubernetes retries a create only on
NotFound/NoMatch (pulumi/pulumi-kubernetes ``provider/pkg/await/await.go``), so a 403 in that window
fails the first ``pulumi up``. These tests drive the polling with a fake clock, the review with a
real local HTTP server speaking the SelfSubjectAccessReview API, and the stack on the mock runtime.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
import yaml

from components.errors import ConfigError
from components.kubernetes.access_gate import (
    STACK_PERMISSIONS,
    AccessNotGrantedError,
    ApiServer,
    KubernetesAccessGate,
    Permission,
    _AccessGateProvider,
    exec_credential_token,
    wait_for_access,
)
from components.testing import Registration, Run, run_program, run_stack

DAEMONSETS = Permission("apps", "daemonsets", "kube-system")
CONFIGMAPS = Permission("", "configmaps", "kube-system")


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


def test_the_stack_permissions_cover_every_kind_the_aks_stack_creates() -> None:
    run = run_stack("azure-dev", overrides={"gpupools:smokeTest": {"enabled": True}})
    created = set()
    for registration in run.kubernetes_objects():
        _, group_version, _kind = registration.type.split(":")
        group = group_version.split("/")[0] if "/" in group_version else ""
        group = "" if group == "core" else group
        namespace = registration.inputs.get("metadata", {}).get("namespace", "default")
        created.add((group, registration.type.rsplit(":", 1)[1].lower() + "s", namespace))
    assert created == {(p.group, p.resource, p.namespace) for p in STACK_PERMISSIONS}


# --- the review against an API server speaking SelfSubjectAccessReview -----------------------------


class FakeApiServer(BaseHTTPRequestHandler):
    allowed: set[str] = set()
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeApiServer.seen.append({"path": self.path, "auth": self.headers["Authorization"], "body": body})
        if self.headers["Authorization"] != "Bearer t0ken":
            self.send_response(401)
            self.end_headers()
            return
        attributes = body["spec"]["resourceAttributes"]
        answer = {**body, "status": {"allowed": attributes["resource"] in FakeApiServer.allowed}}
        payload = json.dumps(answer).encode()
        self.send_response(201)
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
    ],
)
def test_polls_again_only_when_the_cluster_or_the_assignment_changes(
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


def test_every_kubernetes_object_waits_for_the_gate_and_the_gate_for_the_role_assignment() -> None:
    run = run_stack("azure-dev", overrides={"gpupools:smokeTest": {"enabled": True}})
    [gate] = [r for r in run.registrations if r.type.endswith("dynamic/gpupools:KubernetesAccessGate")]
    assignments = {r.urn: r for r in run.of_type("azure-native:authorization:RoleAssignment")}
    [admin] = [u for u in gate.dependencies if u in assignments]
    assert assignments[admin].inputs["roleDefinitionId"].endswith("/b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
    assert gate.inputs["triggers"]["roleAssignmentId"] and gate.inputs["triggers"]["clusterId"]
    assert {p["resource"] for p in gate.inputs["permissions"]} == {p.resource for p in STACK_PERMISSIONS}
    objects = list(run.kubernetes_objects())
    assert objects
    for registration in objects:
        assert gate.urn in provider_of(run, registration).dependencies, registration.name


def test_bad_gate_arguments_are_config_errors_before_anything_is_registered() -> None:
    errors: list[ConfigError] = []

    def program() -> None:
        for kwargs in ({"permissions": ()}, {"timeout_seconds": 0}):
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
