"""The stack's Helm releases rendered from the pinned charts, as the sim applies and runs them.

A stack registers its controllers as ``kubernetes:helm.sh/v3:Release`` resources (cluster-autoscaler
on EKS, Karpenter on EKS, Kueue): the chart, its version and the stack's own values. The sim renders
each with ``helm template`` (Helm v4, built with cluster-autoscaler by ``gpupools.sim.autoscaler_build``)
from the same chart version, then splits what it rendered:

* **objects the sim applies** as the chart would install them: CRDs, ServiceAccounts, RBAC,
  ConfigMaps, webhook configurations, PriorityClasses, Services, PodDisruptionBudgets;
* **the controller's workload** (the Deployment), which no KWOK node can run: the sim runs the
  controller as a local process with the rendered container's arguments and environment
  (``Workload``), under the chart's ServiceAccount (a token from the TokenRequest API), so the chart's
  RBAC is what the controller has.

Where the charts come from (``chart_path``):

* cluster-autoscaler: chart ``cluster-autoscaler`` 9.59.0 (``gpupools.versions``), a file the
  autoscaler build checks against its sha256 and keeps in its build directory (``charts/``);
* Karpenter: ``charts/karpenter`` of the ``github.com/aws/karpenter-provider-aws`` module zip at the
  version ``sim/crds`` pins (the Karpenter release ``gpupools.versions`` pins);
* Kueue: ``charts/kueue`` of the ``sigs.k8s.io/kueue`` module zip at the version ``sim/kueue`` pins
  (upstream sets ``Chart.yaml``'s version only when it packages a release, so the zip's says an
  older one; the templates are the tag's).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from gpupools.sim.control_plane import SimError
from gpupools.testing import Registration

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "Pod")
"""What the sim does not apply from a rendered chart: workloads whose pods no KWOK node can run."""
NOT_APPLIED_KINDS = ("Secret",)
"""Rendered but left out: certificate Secrets a chart generates with random keys (the sim makes its
own where a controller serves TLS)."""


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

    def container(self, name: str | None = None) -> Container:
        """The workload's container ``name`` (its first when None); SimError when there is none."""
        if self.workload is None:
            raise SimError(f"the {self.chart} chart rendered no workload for release {self.release}")
        containers = self.workload["spec"]["template"]["spec"]["containers"]
        chosen = next((c for c in containers if name is None or c["name"] == name), None)
        if chosen is None:
            raise SimError(f"the {self.chart} chart's workload has no container {name!r}")
        env = {str(e["name"]): str(e["value"]) for e in chosen.get("env") or [] if "value" in e}
        env_from = {
            str(e["name"]): json.dumps(e["valueFrom"], sort_keys=True) for e in chosen.get("env") or [] if "valueFrom" in e
        }
        return Container(
            name=str(chosen["name"]),
            args=tuple(str(a) for a in chosen.get("args") or []),
            command=tuple(str(c) for c in chosen.get("command") or []),
            env=env,
            env_from=env_from,
            image=str(chosen.get("image", "")),
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
            "--include-crds",
        ]
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
    notes: list[str] = []
    for document in documents:
        manifest = dict(document)
        kind = str(manifest.get("kind", ""))
        if kind in WORKLOAD_KINDS:
            workloads.append(manifest)
        elif kind in NOT_APPLIED_KINDS:
            notes.append(f"{kind} {manifest['metadata']['name']} not applied (the sim makes its own certificates)")
        else:
            if kind not in (
                "CustomResourceDefinition",
                "ClusterRole",
                "ClusterRoleBinding",
                "PriorityClass",
            ) and not kind.endswith("WebhookConfiguration"):
                manifest.setdefault("metadata", {}).setdefault("namespace", namespace)
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
            notes.append(f"image {container.get('image')} not pulled: the sim runs the binary it built (its version is in `sim status`)")
        annotations = (next((o for o in objects if o["kind"] == "ServiceAccount"), {}).get("metadata") or {}).get(
            "annotations"
        ) or {}
        for key, value in sorted(annotations.items()):
            notes.append(f"ServiceAccount annotation {key}={value} has no effect here (no cloud identity to assume)")
    return Rendered(release, namespace, chart, objects, workload, service_account, notes)

