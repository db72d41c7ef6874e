"""The stack's Helm releases rendered from the pinned charts, as the sim applies and runs them.

A stack registers its controllers as ``kubernetes:helm.sh/v3:Release`` resources (cluster-autoscaler
on EKS, Karpenter on EKS, Kueue): the chart, its version and the stack's own values. The sim renders
each with ``helm template`` (Helm v4, built with cluster-autoscaler by ``gpupools.sim.autoscaler_build``)
from the same chart version, then splits what it rendered:

* **objects the sim applies** as the chart would install them: ServiceAccounts, RBAC, ConfigMaps,
  PriorityClasses, Services, PodDisruptionBudgets;
* **the controller's workload** (the Deployment), which no KWOK node can run: the sim runs the
  controller as a local process with the rendered container's arguments and environment
  (``Rendered.container``: literal values, and the pod and resource fields the kubelet would resolve),
  under the chart's ServiceAccount (a token from the TokenRequest API), so the chart's RBAC is what
  the controller has;
* **webhook configurations** (``Rendered.webhooks``), kept apart: their ``clientConfig.service`` is an
  in-cluster Service that no local process serves, and a webhook with ``failurePolicy: Fail`` whose
  server is unreachable refuses every request it matches. The controller's module applies them only
  rewritten to the URL its local process serves (Kueue: ``gpupools.sim.kueue``), else not at all;
* **CustomResourceDefinitions** (``Rendered.crds``), kept apart: the sim installs the same
  definitions from the module zips before the stack's objects (``gpupools.sim.objects.crds_for``), and
  a chart's copy may name a conversion webhook served by an in-cluster Service (Kueue's do);
* **not applied, said in ``sim status``** (``NOT_APPLIED``): the certificate Secrets a chart generates
  (the sim makes its own where a controller serves TLS), cert-manager objects (no cert-manager here),
  and ``APIService`` registrations of aggregated APIs served through an in-cluster Service (Kueue's
  visibility API, which the sim turns off).

Every rendered object gets the release namespace unless its kind is cluster-scoped
(``CLUSTER_SCOPED``; Helm renders some cluster-scoped kinds with a namespace, which is dropped).
The release's ``skipCrds`` is honoured as Helm honours it (``--include-crds`` only without it).

Where the charts come from (``chart_path``):

* cluster-autoscaler: chart ``cluster-autoscaler`` 9.59.0 (``gpupools.versions``), a file the
  autoscaler build checks against its sha256 and keeps in its build directory (``charts/``);
* Karpenter: ``charts/karpenter`` of the ``github.com/aws/karpenter-provider-aws`` module zip at the
  version ``sim/crds`` pins (the Karpenter release ``gpupools.versions`` pins);
* Kueue: ``charts/kueue`` of the ``sigs.k8s.io/kueue`` module zip at the version ``sim/kueue`` pins
  (the version Kueue's binary is built from).

Karpenter's ``Chart.yaml`` in the v1.14.1 zip says ``1.13.0`` (upstream sets the chart's version, and
the image it names, when it packages a release; the templates are the tag's), so the stack's release
version is checked against the module's version, not ``Chart.yaml``. Go module zips hold no symbolic
links, so the zip's ``charts/karpenter`` has no ``crds/`` (a link to ``pkg/apis/crds`` in the
repository); the stack's release sets ``skipCrds`` and installs the CRDs with its ``karpenter-crd``
release, whose templates are ``pkg/apis/crds``' files with an annotations block: the files the sim
installs. ``chart_path`` copies a chart out of the Go module cache into the sim's build directory
(``<build>/charts/<chart>``), once.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import yaml

from gpupools.sim.control_plane import SimError
from gpupools.testing import Registration

if TYPE_CHECKING:
    from gpupools.sim.build import Build

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "Pod")
"""What the sim does not apply from a rendered chart: workloads whose pods no KWOK node can run."""
NOT_APPLIED = {
    "Secret": "a certificate Secret the chart generates (the sim makes its own where a controller serves TLS)",
    "APIService": "an aggregated API served through an in-cluster Service no local process serves",
    "Certificate": "cert-manager is not installed in the sim",
    "Issuer": "cert-manager is not installed in the sim",
}
"""Rendered kinds the sim does not apply, with the reason ``sim status`` gives (module docstring)."""
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PriorityClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
    }
)
"""Kinds without a namespace (``kubectl api-resources --namespaced=false``) that charts render."""

CHART_MODULES = {
    "karpenter": ("crds", "github.com/aws/karpenter-provider-aws", "charts/karpenter"),
    "kueue": ("kueue", "sigs.k8s.io/kueue", "charts/kueue"),
}
"""Chart -> (``sim/`` module directory whose ``go.mod`` pins it, Go module, chart directory in its zip)."""


@dataclass(frozen=True)
class Container:
    """One container of a rendered workload: what the sim starts a local process with."""

    name: str
    args: tuple[str, ...]
    command: tuple[str, ...]
    env: Mapping[str, str]
    """Literal ``env`` values, and the pod fields the kubelet would resolve (``metadata.namespace``,
    ``spec.serviceAccountName``); other ``valueFrom`` entries are in ``env_from`` (their source, as text)."""
    env_from: Mapping[str, str] = field(default_factory=dict)
    image: str = ""


@dataclass(frozen=True)
class Rendered:
    """One release rendered: the objects the sim applies, the workload it runs instead, and what
    the sim cannot apply locally (said in ``sim status``)."""

    release: str
    namespace: str
    chart: str
    objects: list[dict[str, Any]]
    workload: dict[str, Any] | None
    service_account: str | None
    notes: list[str]
    crds: list[dict[str, Any]] = field(default_factory=list)
    webhooks: list[dict[str, Any]] = field(default_factory=list)

    def container(self, name: str | None = None) -> Container:
        """The workload's container ``name`` (its first when None); SimError when there is none."""
        if self.workload is None:
            raise SimError(f"the {self.chart} chart rendered no workload for release {self.release}")
        containers = self.workload["spec"]["template"]["spec"]["containers"]
        chosen = next((c for c in containers if name is None or c["name"] == name), None)
        if chosen is None:
            raise SimError(f"the {self.chart} chart's workload has no container {name!r}")
        env: dict[str, str] = {}
        env_from: dict[str, str] = {}
        for entry in chosen.get("env") or []:
            name = str(entry["name"])
            if "valueFrom" not in entry:
                env[name] = str(entry.get("value", ""))
                continue
            resolved = self._resolve(entry["valueFrom"], chosen)
            if resolved is None:
                env_from[name] = json.dumps(entry["valueFrom"], sort_keys=True)
            else:
                env[name] = resolved
        return Container(
            name=str(chosen["name"]),
            args=tuple(str(a) for a in chosen.get("args") or []),
            command=tuple(str(c) for c in chosen.get("command") or []),
            env=env,
            env_from=env_from,
            image=str(chosen.get("image", "")),
        )

    def _resolve(self, source: Mapping[str, Any], container: Mapping[str, Any]) -> str | None:
        """An ``env[].valueFrom`` the kubelet resolves from the pod itself: ``fieldRef``
        ``metadata.namespace`` and ``spec.serviceAccountName``, and ``resourceFieldRef`` on the
        container's own requests and limits (``ceil(quantity / divisor)``, kubernetes
        ``pkg/api/v1/resource/helpers.go`` ``ExtractContainerResourceValue``); None for anything else
        (a Secret, a ConfigMap, the pod's name or IP, a limit the container does not set)."""
        if "fieldRef" in source:
            path = source["fieldRef"].get("fieldPath")
            return {"metadata.namespace": self.namespace, "spec.serviceAccountName": self.service_account}.get(str(path))
        if "resourceFieldRef" in source:
            ref = source["resourceFieldRef"]
            kind, _, resource = str(ref.get("resource", "")).partition(".")
            value = ((container.get("resources") or {}).get(kind) or {}).get(resource)
            if value is None:
                return None
            divisor = quantity(str(ref.get("divisor") or "1")) or Fraction(1)
            return str(math.ceil(quantity(str(value)) / divisor))
        return None


_SUFFIXES = {
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
}


def quantity(text: str) -> Fraction:
    """A Kubernetes quantity (``500m``, ``1``, ``1Gi``, ``0.075``) as an exact number; ValueError otherwise."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            return Fraction(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return Fraction(text)


def chart_path(sim_build: Build, chart: str) -> Path:
    """``<build>/charts/<chart>``: the chart directory copied out of its Go module (``CHART_MODULES``)
    at the version the sim's ``go.mod`` pins, from the module cache (``go mod download``, checked
    against ``go.sum``); copied once, kept with the build, never in the checkout."""
    from gpupools.sim import build as builds
    from gpupools.sim import layout

    target = sim_build.root / "charts" / chart
    if (target / "Chart.yaml").exists():
        return target
    directory, module, inside = CHART_MODULES[chart]
    try:
        source = builds.module_dir(layout.module_root() / directory, module) / inside
    except builds.BuildError as error:
        raise SimError(f"the {chart} chart comes from the {module} module zip: {error}") from None
    staging = target.with_name(f"{chart}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    for file in sorted(p for p in source.rglob("*") if p.is_file()):
        destination = staging / file.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, destination)  # not copy2: the module cache's files are read-only
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)  # another sim copied it first
        if not (target / "Chart.yaml").exists():
            raise
    return target


def helm() -> Path:
    """The sim's Helm binary (built with cluster-autoscaler, ``gpupools.sim.autoscaler_build``; built on first use)."""
    from gpupools.sim import autoscaler_build

    return (autoscaler_build.cached() or autoscaler_build.build()).helm


def check_version(registration: Registration, chart: str, module_version: str) -> None:
    """SimError unless the stack's release pins the chart version of the module the sim renders it from."""
    wanted = str(registration.inputs.get("version", "")).removeprefix("v")
    if wanted and wanted != module_version.removeprefix("v"):
        module = CHART_MODULES[chart][1]
        raise SimError(
            f"the stack's {chart} release pins chart {wanted}, the sim renders {module} {module_version}: "
            f"pin the same version in sim/{CHART_MODULES[chart][0]}/go.mod"
        )


def releases(registrations: Iterable[Registration], chart: str) -> list[Registration]:
    """The stack's Helm releases of ``chart`` (matched on the chart's last path element)."""
    return [
        r
        for r in registrations
        if r.type == RELEASE_TYPE and str(r.inputs.get("chart", "")).rstrip("/").rsplit("/", 1)[-1] == chart
    ]


def render(
    helm: Path,
    chart_path: Path,
    registration: Registration,
    *,
    kube_version: str,
    api_versions: Sequence[str] = (),
) -> Rendered:
    """``helm template`` of ``registration`` (its name, namespace and values) from ``chart_path``."""
    inputs = registration.inputs
    release = str(inputs.get("name") or registration.name)
    namespace = str(inputs.get("namespace") or "default")
    values = inputs.get("values") or {}
    with tempfile.TemporaryDirectory() as scratch:
        values_file = Path(scratch) / "values.json"
        values_file.write_text(json.dumps(values))
        command = [
            str(helm),
            "template",
            release,
            str(chart_path),
            "--namespace",
            namespace,
            "--values",
            str(values_file),
            "--kube-version",
            kube_version,
        ]
        if not inputs.get("skipCrds"):
            command.append("--include-crds")
        for api_version in api_versions:
            command += ["--api-versions", api_version]
        result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SimError(f"helm template {release} ({chart_path.name}) failed: {result.stderr.strip()}")
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    return split(release, namespace, chart_path.name, documents)


def split(release: str, namespace: str, chart: str, documents: Sequence[Mapping[str, Any]]) -> Rendered:
    """Sort rendered documents into applied objects and the one workload (module docstring)."""
    objects: list[dict[str, Any]] = []
    workloads: list[dict[str, Any]] = []
    crds: list[dict[str, Any]] = []
    webhooks: list[dict[str, Any]] = []
    notes: list[str] = []
    for document in documents:
        manifest = dict(document)
        kind = str(manifest.get("kind", ""))
        metadata = manifest.setdefault("metadata", {})
        if kind in CLUSTER_SCOPED:
            metadata.pop("namespace", None)
        else:
            metadata.setdefault("namespace", namespace)
        if kind in WORKLOAD_KINDS:
            workloads.append(manifest)
        elif kind in NOT_APPLIED:
            notes.append(f"{kind} {metadata['name']} not applied: {NOT_APPLIED[kind]}")
        elif kind == "CustomResourceDefinition":
            crds.append(manifest)
        elif kind.endswith("WebhookConfiguration"):
            webhooks.append(manifest)
        else:
            objects.append(manifest)
    if len(workloads) > 1:
        names = ", ".join(f"{w['kind']}/{w['metadata']['name']}" for w in workloads)
        raise SimError(f"the {chart} chart rendered more than one workload for release {release}: {names}")
    workload = workloads[0] if workloads else None
    service_account = None
    if workload is not None:
        pod = workload["spec"]["template"]["spec"]
        service_account = str(pod.get("serviceAccountName") or "default")
        for container in pod.get("containers") or []:
            notes.append(
                f"image {container.get('image')} not pulled: the sim runs the binary it built (its version is in `sim status`)"
            )
        annotations = (next((o for o in objects if o["kind"] == "ServiceAccount"), {}).get("metadata") or {}).get(
            "annotations"
        ) or {}
        for key, value in sorted(annotations.items()):
            notes.append(f"ServiceAccount annotation {key}={value} has no effect here (no cloud identity to assume)")
    return Rendered(release, namespace, chart, objects, workload, service_account, notes, crds, webhooks)


def crd_notes(rendered: Rendered, installed: Iterable[str]) -> list[str]:
    """What ``sim status`` says of the chart's CRDs: the sim installs its own copies (``installed``,
    their names) before the stack's objects, so the chart's are not applied; those that name a
    conversion webhook Service are listed, since no local process serves it."""
    if not rendered.crds:
        return []
    names = sorted(c["metadata"]["name"] for c in rendered.crds)
    ours = [n for n in names if n in set(installed)]
    notes = [
        f"{len(names)} CustomResourceDefinitions rendered, not applied: the sim installs its copies from the module zip "
        f"({len(ours)} of the same names)"
        + ("" if len(ours) == len(names) else f"; not installed: {', '.join(sorted(set(names) - set(ours)))}")
    ]
    services: dict[str, list[str]] = {}
    for crd in rendered.crds:
        service = (crd["spec"].get("conversion") or {}).get("webhook", {}).get("clientConfig", {}).get("service")
        if service:
            services.setdefault(f"{service.get('namespace')}/{service.get('name')}", []).append(crd["metadata"]["name"])
    for service, crds in sorted(services.items()):
        notes.append(
            f"the chart's {', '.join(sorted(crds))} name a conversion webhook on Service {service}, which no local process serves"
        )
    return notes


def webhook_notes(rendered: Rendered) -> list[str]:
    """For a chart whose webhook configurations no local process serves: each is left out, said so."""
    return [
        f"{w['kind']} {w['metadata']['name']} not applied: its webhooks call an in-cluster Service no local process serves"
        for w in rendered.webhooks
    ]


def sim_cluster_role(name: str, rules: list[dict[str, Any]], service_account: str, namespace: str) -> list[dict[str, Any]]:
    """A ClusterRole the sim adds to a chart's RBAC (what its KWOK provider needs and the chart does
    not grant), bound to the chart's ServiceAccount ``namespace/service_account``."""
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
        },
    ]


def apply_release(client: Any, objects: Sequence[Mapping[str, Any]], sim_rbac: Sequence[Mapping[str, Any]]) -> None:
    """Apply a rendered release's objects, then the RBAC the sim adds for its KWOK provider
    (``sim_cluster_role``), before the stack's objects."""
    for manifest in [*objects, *sim_rbac]:
        client.apply(manifest)
