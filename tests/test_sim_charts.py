"""The stacks' Karpenter and Kueue Helm releases as the sim renders, applies and runs them
(``gpupools.sim.charts``, ``karpenter.plan``, ``kueue.plan``): no cluster. The tests that render a
chart need the sim's builds (Helm from ``scripts/build-autoscaler``, the module charts from
``scripts/build-sim``) and skip without them; the control-plane tier runs the controllers under the
charts' ServiceAccounts (``tests/sim/test_autoscalers.py``).

What is asserted comes from the charts themselves (karpenter-provider-aws v1.14.1
``charts/karpenter``, sigs.k8s.io/karpenter v1.14.1 ``kwok/charts``, sigs.k8s.io/kueue v0.19.2
``charts/kueue``) and the stacks' config, never from the sim's own constants.
"""

from __future__ import annotations

import base64
import re
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.sim import autoscaler_build, charts, karpenter, kueue, objects
from gpupools.sim import build as builds
from gpupools.sim.control_plane import SimError
from gpupools.testing import Registration


@pytest.fixture(scope="module")
def sim_build() -> builds.Build:
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the charts come from the sim's Go module zips")
    found = builds.cached()
    if found is None:
        pytest.skip("the sim is not built (scripts/build-sim)")
    return found


@pytest.fixture(scope="module")
def helm() -> Path:
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: Helm is built with cluster-autoscaler")
    found = autoscaler_build.cached()
    if found is None:
        pytest.skip("Helm is not built (scripts/build-autoscaler)")
    return found.helm


@pytest.fixture(scope="module")
def eks_karpenter() -> objects.StackObjects:
    return objects.load("aws-karpenter-dev")


@pytest.fixture(scope="module")
def training() -> objects.StackObjects:
    return objects.load("aws-training-dev")


@pytest.fixture(scope="module")
def karpenter_plan(eks_karpenter: objects.StackObjects, sim_build: builds.Build, helm: Path) -> karpenter.Plan:
    return karpenter.plan(eks_karpenter, sim_build, helm)


@pytest.fixture(scope="module")
def kueue_plan(training: objects.StackObjects, sim_build: builds.Build, helm: Path) -> kueue.Plan:
    return kueue.plan(training, sim_build, helm)


def _release(name: str, inputs: dict[str, Any]) -> Registration:
    return Registration("kubernetes:helm.sh/v3:Release", name, "", "", True, inputs, inputs, [], {}, "")


def _module_dir(directory: str, module: str) -> Path:
    return builds.module_dir(Path(__file__).resolve().parents[1] / "sim" / directory, module)


# --- pure parts: no build --------------------------------------------------------------------------


def test_quantities_are_kubernetes_quantities() -> None:
    assert charts.quantity("500m") == Fraction(1, 2)
    assert charts.quantity("1Gi") == 2**30
    assert charts.quantity("0.075") == Fraction(75, 1000)
    assert charts.quantity("2") == 2


def _deployment(env: list[dict[str, Any]], resources: dict[str, Any]) -> dict[str, Any]:
    # The shape of karpenter-provider-aws v1.14.1 charts/karpenter/templates/deployment.yaml.
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "karpenter", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "serviceAccountName": "karpenter",
                    "containers": [{"name": "controller", "image": "x", "env": env, "resources": resources}],
                }
            }
        },
    }


def test_env_from_the_pod_and_its_resources_is_resolved_as_the_kubelet_does() -> None:
    env = [
        {"name": "SYSTEM_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {
            "name": "CPU_REQUESTS",
            "valueFrom": {"resourceFieldRef": {"containerName": "controller", "divisor": "1m", "resource": "requests.cpu"}},
        },
        {
            "name": "MEMORY_LIMIT",
            "valueFrom": {"resourceFieldRef": {"containerName": "controller", "divisor": "0", "resource": "limits.memory"}},
        },
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
    ]
    resources = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    rendered = charts.split("karpenter", "kube-system", "karpenter", [_deployment(env, resources)])
    container = rendered.container()
    assert container.env == {"SYSTEM_NAMESPACE": "kube-system", "CPU_REQUESTS": "500", "MEMORY_LIMIT": str(2**30)}
    assert set(container.env_from) == {"POD_NAME", "CPU_LIMIT"}  # no pod name here; no CPU limit set


def test_split_keeps_cluster_scoped_kinds_without_a_namespace_and_crds_webhooks_apart() -> None:
    documents = [
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x", "namespace": "ns"}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w", "namespace": "ns"}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "c"}, "spec": {}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
    ]  # fmt: skip
    rendered = charts.split("r", "ns", "chart", documents)
    assert [(o["kind"], o["metadata"].get("namespace")) for o in rendered.objects] == [("ClusterRole", None), ("ConfigMap", "ns")]
    assert [w["metadata"] for w in rendered.webhooks] == [{"name": "w"}]
    assert [c["metadata"]["name"] for c in rendered.crds] == ["c"]
    assert len(rendered.notes) == 2 and "APIService v1.x not applied" in rendered.notes[0]


def test_a_release_of_another_chart_version_than_the_modules_is_refused() -> None:
    release = _release("kueue", {"chart": "kueue", "version": "0.18.0"})
    with pytest.raises(SimError, match=r"pins chart 0\.18\.0, the sim renders sigs\.k8s\.io/kueue v0\.19\.2"):
        charts.check_version(release, "kueue", "v0.19.2")
    charts.check_version(_release("kueue", {"version": "0.19.2"}), "kueue", "v0.19.2")


def test_kueue_webhooks_keep_the_charts_selectors_and_point_at_the_local_server(tmp_path: Path) -> None:
    rendered = [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "kueue-mutating-webhook-configuration"},
            "webhooks": [
                {
                    "name": "mpod.kb.io",
                    "failurePolicy": "Ignore",
                    "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml"]}]},
                    "clientConfig": {"service": {"name": "kueue-webhook-service", "namespace": "kueue-system", "path": "/mutate--v1-pod"}},
                }
            ],
        }
    ]  # fmt: skip
    ca = kueue.serving_certificate(tmp_path / "certs")
    (rewritten,) = kueue.webhook_configurations(rendered, 9443, ca)
    webhook = rewritten["webhooks"][0]
    assert webhook["clientConfig"]["url"] == "https://127.0.0.1:9443/mutate--v1-pod"
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == ca
    assert (
        webhook["failurePolicy"] == "Ignore" and webhook["namespaceSelector"] == rendered[0]["webhooks"][0]["namespaceSelector"]
    )
    assert "service" in rendered[0]["webhooks"][0]["clientConfig"]  # the rendered one is not changed in place


# --- Karpenter: the stack's chart rendered ---------------------------------------------------------


def test_karpenter_runs_with_the_rendered_env_and_the_charts_service_account(
    karpenter_plan: karpenter.Plan, eks_karpenter: objects.StackObjects
) -> None:
    values = charts.releases(eks_karpenter.run.registrations, "karpenter")[0].inputs["values"]
    env = karpenter_plan.env
    gates = dict(g.split("=") for g in env["FEATURE_GATES"].split(","))
    assert gates["NodeOverlay"] == "true"  # the stack's settings.featureGates.nodeOverlay, through the chart
    assert env["CLUSTER_NAME"] == values["settings"]["clusterName"]
    # The kubelet's resolution of the chart's resourceFieldRefs on the stack's controller.resources (1 CPU, 1Gi).
    assert env["CPU_REQUESTS"] == "1000" and env["MEMORY_LIMIT"] == str(2**30)
    assert env["SYSTEM_NAMESPACE"] == "kube-system"
    assert karpenter_plan.service_account == values["serviceAccount"]["name"]
    kinds = {o["kind"] for o in karpenter_plan.objects}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} <= kinds
    assert "Deployment" not in kinds
    assert any("eks.amazonaws.com/role-arn" in n for n in karpenter_plan.notes)


def test_nap_has_no_chart_and_runs_as_admin_with_karpenters_defaults(sim_build: builds.Build) -> None:
    nap = karpenter.plan(objects.load("azure-nap-dev"), sim_build)
    assert nap.service_account is None and nap.objects == []
    assert nap.env["FEATURE_GATES"] == karpenter.DEFAULT_ENV["FEATURE_GATES"]
    assert "no Karpenter chart" in nap.notes[0]


def test_the_kwok_binary_env_list_is_what_karpenter_core_and_the_kwok_provider_read() -> None:
    if shutil.which("go") is None:
        pytest.skip("Go is not installed")
    source = _module_dir("karpenter", "sigs.k8s.io/karpenter")
    text = (source / "pkg/operator/options/options.go").read_text() + (source / "kwok/options/options.go").read_text()
    names = set(re.findall(r'env\.WithDefault\w+\("([A-Z0-9_]+)"', text)) | set(
        re.findall(r'VarWithEnv\([^,]+, "[^"]+", "([A-Z0-9_]+)"', text)
    )
    assert names == karpenter.KWOK_BINARY_ENV


def _rules(documents: list[dict[str, Any]], service_account: str) -> set[tuple[str, str, str]]:
    """(group, resource, verb) granted to ``service_account`` by the ClusterRoles its ClusterRoleBindings name."""
    bound = {
        d["roleRef"]["name"]
        for d in documents
        if d["kind"] == "ClusterRoleBinding" and any(s["name"] == service_account for s in d["subjects"])
    }
    granted = set()
    for role in documents:
        if role["kind"] == "ClusterRole" and role["metadata"]["name"] in bound:
            for rule in role.get("rules") or []:
                if rule.get("resourceNames"):
                    continue
                granted |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    return granted


def test_the_sims_kwok_rbac_is_what_karpenters_own_kwok_chart_grants_and_the_aws_chart_does_not(
    karpenter_plan: karpenter.Plan, helm: Path, tmp_path: Path
) -> None:
    source = _module_dir("karpenter", "sigs.k8s.io/karpenter") / "kwok" / "charts"
    release = _release("karpenter", {"name": "karpenter", "namespace": "kube-system"})
    kwok_chart = charts.render(helm, source, release, kube_version="v1.36.3")
    kwok_granted = _rules(kwok_chart.objects, "karpenter")
    aws_granted = _rules(karpenter_plan.objects, "karpenter")
    added = {
        (g, r, v)
        for rule in karpenter.KWOK_PROVIDER_RULES
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert added <= kwok_granted
    assert not added & aws_granted
    assert ("", "nodes", "create") in added


def test_the_karpenter_crd_release_renders_the_crds_the_sim_installs(
    eks_karpenter: objects.StackObjects, sim_build: builds.Build, helm: Path
) -> None:
    """The stack's ``karpenter-crd`` release is not rendered at ``sim up``: its templates are the files
    the sim installs from ``pkg/apis/crds`` (with an annotations block)."""
    (release,) = charts.releases(eks_karpenter.run.registrations, "karpenter-crd")
    source = _module_dir("crds", "github.com/aws/karpenter-provider-aws") / "charts" / "karpenter-crd"
    rendered = charts.render(helm, source, release, kube_version=sim_build.kubernetes_version)
    ours = {c.name: c.document for c in objects.crd_index(sim_build.crds) if c.family == "karpenter-provider-aws"}
    theirs = {c["metadata"]["name"]: c for c in rendered.crds}
    assert set(ours) <= set(theirs)
    for name, document in ours.items():
        assert theirs[name]["spec"] == document["spec"], name


# --- Kueue: the stack's chart rendered -------------------------------------------------------------


def test_kueue_runs_with_the_rendered_args_and_configmap(kueue_plan: kueue.Plan, training: objects.StackObjects) -> None:
    assert kueue_plan.args == ["--config", "--zap-log-level=2"]  # the chart's args, --config's value the local file
    config_map = next(
        o for o in kueue_plan.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kueue-manager-config"
    )
    assert kueue_plan.config == yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    selector = kueue_plan.config["managedJobsNamespaceSelector"]["matchExpressions"][0]
    assert selector["values"] == list(training.spec.queueing.namespaces)
    assert kueue_plan.service_account == "kueue-controller-manager" and kueue_plan.namespace == "kueue-system"
    kinds = {o["kind"] for o in kueue_plan.objects}
    assert not kinds & {"Deployment", "Secret", "APIService", "CustomResourceDefinition"}
    assert not any(o["kind"].endswith("WebhookConfiguration") for o in kueue_plan.objects)
    config = kueue.configuration(kueue_plan.config, {"webhook": 1, "metrics": 2, "health": 3}, Path("/certs"))
    assert config["internalCertManagement"] == {"enable": False} and config["leaderElection"] == {"leaderElect": False}
    assert config["managedJobsNamespaceSelector"] == kueue_plan.config["managedJobsNamespaceSelector"]


def test_kueue_webhooks_are_the_charts_scoped_to_the_stacks_namespaces(
    kueue_plan: kueue.Plan, training: objects.StackObjects
) -> None:
    names = {w["metadata"]["name"] for w in kueue_plan.webhooks}
    assert names == {"kueue-mutating-webhook-configuration", "kueue-validating-webhook-configuration"}
    job = next(w for c in kueue_plan.webhooks for w in c["webhooks"] if w["name"] == "mjob.kb.io")
    assert job["namespaceSelector"]["matchExpressions"][0]["values"] == list(training.spec.queueing.namespaces)
    pod = next(w for c in kueue_plan.webhooks for w in c["webhooks"] if w["name"] == "mpod.kb.io")
    assert pod["failurePolicy"] == "Ignore"


def test_kueue_chart_crds_are_the_sims_with_a_conversion_webhook_more(
    training: objects.StackObjects, sim_build: builds.Build, helm: Path
) -> None:
    (release,) = charts.releases(training.run.registrations, "kueue")
    rendered = charts.render(helm, charts.chart_path(sim_build, "kueue"), release, kube_version=sim_build.kubernetes_version)
    ours = {c.name: c.document for c in objects.crd_index(sim_build.crds) if c.group == "kueue.x-k8s.io"}
    theirs = {c["metadata"]["name"]: c for c in rendered.crds}
    assert set(theirs) == set(ours)
    for name, document in ours.items():
        assert theirs[name]["spec"]["versions"] == document["spec"]["versions"], name
    assert {n for n, c in theirs.items() if (c["spec"].get("conversion") or {}).get("strategy") == "Webhook"}


def test_chart_path_copies_the_chart_into_the_build_directory(sim_build: builds.Build) -> None:
    path = charts.chart_path(sim_build, "karpenter")
    assert path == sim_build.root / "charts" / "karpenter"
    assert yaml.safe_load((path / "Chart.yaml").read_text())["name"] == "karpenter"
    assert (path / "templates" / "deployment.yaml").stat().st_mode & 0o200  # writable: the build can be removed


# --- The controllers' IRSA role in their pod templates (review T1) --------------------------------


def _pod_template(rendered: charts.Rendered) -> dict[str, Any]:
    assert rendered.workload is not None and rendered.workload["kind"] == "Deployment"
    return dict(rendered.workload["spec"]["template"])


def _with_role(release: Registration, old_arn: str, new_arn: str) -> Registration:
    """``release`` as the program registers it when the controller's role is ``new_arn``: every
    place the program wrote the role's ARN gets the new one (it writes it from one input)."""
    values = yaml.safe_load(yaml.safe_dump(release.inputs["values"]).replace(old_arn, new_arn))
    inputs = {**release.inputs, "values": values}
    return Registration(release.type, release.name, release.urn, release.parent, release.custom, inputs, inputs, [], {}, "")


def _role_account(rendered: charts.Rendered) -> dict[str, Any]:
    """The rendered ServiceAccount that carries an IRSA role."""
    (account,) = [
        o for o in rendered.objects if o["kind"] == "ServiceAccount" and IRSA_ANNOTATION in o["metadata"].get("annotations", {})
    ]
    return account


IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
"""The ServiceAccount annotation the EKS Pod Identity webhook reads (EKS User Guide, IRSA)."""


@pytest.mark.parametrize(("stack", "chart"), [("aws-dev", "cluster-autoscaler"), ("aws-karpenter-dev", "karpenter")])
def test_a_new_controller_role_rolls_the_controllers_pods(stack: str, chart: str, sim_build: builds.Build, helm: Path) -> None:
    """A controller's role reaches its pods only as ``AWS_ROLE_ARN``, which the EKS Pod Identity
    webhook sets when a pod is created, never on running pods (EKS User Guide, "Configure Pods to
    use a Kubernetes service account"). So a new role must change the pod template, or the
    Deployment keeps its pods on the old role, which the same ``up`` deletes (review T1: 0.3.0's
    role rename). The charts are the pinned ones, rendered by Helm; neither renders the pod
    template from the ServiceAccount, so the ServiceAccount's annotation alone would not do."""
    (release,) = charts.releases(objects.load(stack).run.registrations, chart)
    found = autoscaler_build.cached()
    assert found is not None  # the helm fixture skipped otherwise
    source = found.chart if chart == "cluster-autoscaler" else charts.chart_path(sim_build, "karpenter")
    before = charts.render(helm, source, release, kube_version=sim_build.kubernetes_version)
    old_arn = _role_account(before)["metadata"]["annotations"][IRSA_ANNOTATION]
    new_arn = old_arn.replace(":role/", ":role/renamed-")
    after = charts.render(helm, source, _with_role(release, old_arn, new_arn), kube_version=sim_build.kubernetes_version)
    assert _role_account(after)["metadata"]["annotations"][IRSA_ANNOTATION] == new_arn
    assert _pod_template(before) != _pod_template(after)
    assert _pod_template(after)["metadata"]["annotations"]["gpupools.io/role-arn"] == new_arn
