"""A stack's Kubernetes half, as the sim applies it: the objects the stack program registers, the
CRDs they need, and the server-side apply (dry run first) onto the sim's API server.

The objects come from running the stack program itself on the recording runtime
(``gpupools.synth.synthesize``: the same ``__main__.py``, components and config as ``pulumi up``),
taking every ``kubernetes:<group>/<version>:<Kind>`` registration with its real (unredacted) inputs.

What cannot be applied here, and is reported instead of silently dropped:

* ``kubernetes:helm.sh/v3:Release`` (cluster-autoscaler, Karpenter, Kueue charts) are no single
  object: each is rendered from the pinned chart, its objects applied and its controller run
  locally as the chart's ServiceAccount (``gpupools.sim.charts``, ``autoscaler``, ``karpenter``,
  ``kueue``). Karpenter's ``karpenter-crd`` release is not rendered: its templates are the CRD files
  the sim installs from the same module zip (``pkg/apis/crds``).
* ``kubernetes:yaml/v2:ConfigFile`` of the ProvisioningRequest CRD (fetched from GitHub by URL): the
  sim installs the same CRD from the Go module zip (``build.CRD_FILES``).
* On AKS nothing of the stack installs the ProvisioningRequest CRD: AKS's managed autoscaler does.
  The sim installs the vendored one for a stack whose queues use it (``managed_provisioning_request_crd``).

The CRDs: every CRD of each upstream family that defines a kind the stack creates (Kueue's chart
installs all of Kueue's, Karpenter's chart or NAP all of their provider's), the provider matching
the stack's cloud (the AWS and Azure providers each ship their own ``karpenter.sh`` NodePool CRD),
plus the ProvisioningRequest CRD when the stack installs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from gpupools.sim.kube import Client, KubeError, wait_for
from gpupools.specs import StackSpec
from gpupools.testing import Run

NOT_APPLIED = ("kubernetes:helm.sh/", "kubernetes:yaml/")
"""Registrations that are no single Kubernetes object (Helm releases, YAML groups)."""

RENDERED_CHARTS = {
    "cluster-autoscaler": "gpupools.sim.autoscaler",
    "karpenter": "gpupools.sim.karpenter",
    "kueue": "gpupools.sim.kueue",
}
"""Charts the sim renders, and the module that runs their controller."""

KARPENTER_CRD_DIRS = {"aws": "karpenter-provider-aws", "azure": "karpenter-provider-azure"}


@dataclass(frozen=True)
class StackObjects:
    """Everything the sim needs from one run of the stack program."""

    stack: str
    spec: StackSpec
    region: str
    run: Run
    manifests: list[dict[str, Any]]
    skipped: list[str]
    """``type name`` of every registration not applied (Helm releases, YAML groups), with why."""


def load(stack: str, root: Path | None = None, overrides: Mapping[str, Any] | None = None) -> StackObjects:
    """Run ``stack``'s program on the recording runtime; ConfigError / FileNotFoundError as synth raises them."""
    from gpupools import config
    from gpupools.synth import default_root, stack_targets, synthesize
    from gpupools.testing import stack_config
    from gpupools.testing.manifests import to_manifest

    root = root or default_root()
    synthesis = synthesize(stack, root, overrides)
    run = synthesis.run
    values = {**stack_config(stack, root), **(overrides or {})}
    region = next((t["region"] for t in stack_targets(root) if t["stack"] == stack), "")
    spec = config.parse(values, region=region or None)
    manifests = [to_manifest(r, redact=False) for r in run.kubernetes_objects()]
    skipped = []
    for registration in run.registrations:
        if registration.type.startswith("kubernetes:helm.sh/"):
            chart = str(registration.inputs.get("chart", "")).rstrip("/").rsplit("/", 1)[-1]
            if chart in RENDERED_CHARTS:
                skipped.append(
                    f"{registration.type} {registration.name}: rendered from the pinned chart; its objects applied, "
                    f"its controller run locally as the chart's ServiceAccount ({RENDERED_CHARTS[chart]})"
                )
            else:
                skipped.append(
                    f"{registration.type} {registration.name}: chart {chart} not rendered; the sim installs the same "
                    "CRDs from the module zip"
                )
        elif registration.type.startswith("kubernetes:yaml/"):
            skipped.append(
                f"{registration.type} {registration.name}: fetched by URL; the sim installs its CRDs from the Go module zips"
            )
    return StackObjects(stack=stack, spec=spec, region=region, run=run, manifests=order(manifests), skipped=skipped)


def order(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces first, then RBAC and service accounts, then the rest (each by kind, namespace, name)."""
    first = {"Namespace": 0, "ServiceAccount": 1, "ClusterRole": 1, "Role": 1, "ClusterRoleBinding": 2, "RoleBinding": 2}

    def key(m: Mapping[str, Any]) -> tuple[int, str, str, str]:
        metadata = m.get("metadata") or {}
        return (first.get(str(m["kind"]), 3), str(m["kind"]), str(metadata.get("namespace", "")), str(metadata.get("name", "")))

    return [dict(m) for m in sorted(manifests, key=key)]


def describe(manifest: Mapping[str, Any]) -> str:
    metadata = manifest.get("metadata") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{manifest['kind']} {where}{metadata.get('name', '?')}"


@dataclass(frozen=True)
class Crd:
    path: Path
    family: str
    group: str
    kind: str
    name: str
    document: dict[str, Any] = field(repr=False, compare=False)


def crd_index(crd_dir: Path) -> list[Crd]:
    """Every CRD the build extracted (``<build>/crds/<family>/*.yaml``)."""
    crds = []
    for path in sorted(crd_dir.glob("*/*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                spec = document["spec"]
                crds.append(
                    Crd(path, path.parent.name, spec["group"], spec["names"]["kind"], document["metadata"]["name"], document)
                )
    return crds


def crds_for(objects: StackObjects, crd_dir: Path) -> list[Crd]:
    """The CRDs to install before ``objects`` (see the module docstring); KeyError naming a kind no
    extracted CRD defines."""
    index = crd_index(crd_dir)
    karpenter_family = KARPENTER_CRD_DIRS[objects.spec.cloud.value]
    builtin_groups = {
        "",
        "apps",
        "rbac.authorization.k8s.io",
        "batch",
        "policy",
        "scheduling.k8s.io",
        "networking.k8s.io",
        "storage.k8s.io",
        # A CRD the stack registers itself (the vendored ProvisioningRequest CRD,
        # gpupools.kubernetes.crds) is one of its objects, served by the API server itself.
        "apiextensions.k8s.io",
    }
    families: set[str] = set()
    for manifest in objects.manifests:
        group = str(manifest["apiVersion"]).rpartition("/")[0]
        if group in builtin_groups or manifest["kind"] == "CapacityBuffer":  # its CRD: capacity_buffer_crds
            continue
        if group == AUTO_MODE_GROUP:  # Auto Mode's own NodeClass CRD: auto_mode_crds
            continue
        candidates = [c for c in index if c.group == group and c.kind == manifest["kind"]]
        preferred = [c for c in candidates if c.family == karpenter_family] or [
            c for c in candidates if not c.family.startswith("karpenter-provider")
        ]
        if not preferred:
            raise KeyError(f"no CRD for {manifest['apiVersion']} {manifest['kind']} among the extracted ones ({crd_dir})")
        families.add(preferred[0].family)
    return (
        [c for c in index if c.family in families]
        + managed_provisioning_request_crd(objects)
        + capacity_buffer_crds(objects)
        + auto_mode_crds(objects)
    )


AUTO_MODE_GROUP = "eks.amazonaws.com"


def auto_mode_crds(stack_objects: StackObjects) -> list[Crd]:
    """EKS Auto Mode's NodeClass CRD when the stack has NodeClasses: the cloud installs it with Auto
    Mode; the sim installs the pinned schema (``gpupools.kubernetes.crds.auto_mode_node_class_crd``)."""
    from gpupools.kubernetes.crds import AUTO_MODE_NODE_CLASS_SCHEMA, auto_mode_node_class_crd

    if not any(str(m["apiVersion"]).startswith(f"{AUTO_MODE_GROUP}/") for m in stack_objects.manifests):
        return []
    document = auto_mode_node_class_crd()
    spec = document["spec"]
    return [
        Crd(
            AUTO_MODE_NODE_CLASS_SCHEMA,
            "eks-auto-mode",
            spec["group"],
            spec["names"]["kind"],
            document["metadata"]["name"],
            document,
        )
    ]


def managed_provisioning_request_crd(objects: StackObjects) -> list[Crd]:
    """The ProvisioningRequest CRD that AKS's managed cluster-autoscaler serves, on every AKS stack under
    cluster-autoscaler: AKS runs it with ProvisioningRequests on from Kubernetes 1.33 (Azure/AKS PR
    #5867; the sim's ``autoscaler.AKS_PROVISIONING_REQUESTS``), and the autoscaler waits for the API
    it watches; none elsewhere. On EKS the stack registers the CRD itself (with the
    cluster-autoscaler release), on AKS the cloud installs it ("Provision capacity for Kueue batch
    jobs with the cluster autoscaler on AKS"; the stack's access gate waits for it,
    ``gpupools.azure.kubernetes_access.gate_served``), so without it here Kueue's admission check and
    the ClusterQueue stay inactive. The file is the one gpupools vendors for the cluster-autoscaler
    of the cluster's Kubernetes version (``gpupools.kubernetes.crds``: kubernetes/autoscaler
    ``cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml`` at the
    release tag; for 1.36 the commit ``sim/autoscaler/go.mod`` pins, 35e8a280425c)."""
    from gpupools.kubernetes.crds import provisioning_request_crd, provisioning_request_crd_path
    from gpupools.specs import Cloud, Provisioner
    from gpupools.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS

    spec = objects.spec
    if spec.cloud is not Cloud.AZURE or spec.provisioner is not Provisioner.CLUSTER_AUTOSCALER:
        return []
    tag = CLUSTER_AUTOSCALER_IMAGE_TAGS[spec.cluster.kubernetes_version]
    document = provisioning_request_crd(tag)
    crd_spec = document["spec"]
    return [
        Crd(
            provisioning_request_crd_path(tag),
            "provisioningrequests",
            crd_spec["group"],
            crd_spec["names"]["kind"],
            document["metadata"]["name"],
            document,
        )
    ]


class ApplyError(RuntimeError):
    """The API server rejected objects; the message lists each with the server's reason."""


def _apply_all(client: Client, manifests: Sequence[Mapping[str, Any]]) -> None:
    """Dry-run every manifest (``dryRun=All``: admission, schema, CEL, all of it), and only if all
    pass, apply them for real."""
    rejected = []
    for manifest in manifests:
        try:
            client.apply(manifest, dry_run=True)
        except KubeError as error:
            rejected.append(f"  {describe(manifest)}: {error}")
    if rejected:
        raise ApplyError("the API server rejected (server-side apply, dry run):\n" + "\n".join(rejected))
    for manifest in manifests:
        try:
            client.apply(manifest)
        except KubeError as error:
            raise ApplyError(f"the API server rejected {describe(manifest)} (server-side apply): {error}") from None


def install_crds(client: Client, crds: Sequence[Crd], *, timeout: float = 60.0) -> None:
    """Apply the CRDs and wait until each is Established (its API is served)."""
    _apply_all(client, [c.document for c in crds])
    for crd in crds:

        def established(crd: Crd = crd) -> bool:
            live = client.get(crd.document) or {}
            return any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (live.get("status") or {}).get("conditions") or []
            )

        wait_for(established, timeout=timeout, what=f"CRD {crd.name} to be established")


def apply(client: Client, manifests: Sequence[Mapping[str, Any]]) -> None:
    """Apply the stack's objects: namespaces first (the others' dry run needs them), then the rest."""
    namespaces = [m for m in manifests if m["kind"] == "Namespace"]
    _apply_all(client, namespaces)
    _apply_all(client, [m for m in manifests if m["kind"] != "Namespace"])


def delete(client: Client, manifests: Sequence[Mapping[str, Any]], *, timeout: float = 120.0) -> None:
    """Delete the objects (reverse order) and wait until every one is gone (finalizers and
    namespace termination included); TimeoutError naming what is left."""
    for manifest in reversed(list(manifests)):
        client.delete(manifest, propagation="Foreground" if manifest["kind"] != "Namespace" else "Background")

    def gone() -> bool:
        left = [describe(m) for m in manifests if client.get(m) is not None]
        gone.left = left  # type: ignore[attr-defined]
        return not left

    try:
        wait_for(gone, timeout=timeout, interval=1.0, what="the stack's objects to be deleted")
    except TimeoutError as error:
        raise TimeoutError(f"{error}; still there: {', '.join(getattr(gone, 'left', []))}") from None


CAPACITY_BUFFER_CRD_NAME = "capacitybuffers.autoscaling.x-k8s.io"
KARPENTER_CRD_MODULE = "github.com/aws/karpenter-provider-aws"
CAPACITY_BUFFER_CRD_FILE = "pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml"


def capacity_buffers(stack_objects: StackObjects) -> list[dict[str, Any]]:
    return [m for m in stack_objects.manifests if m["kind"] == "CapacityBuffer"]


def capacity_buffer_crds(stack_objects: StackObjects) -> list[Crd]:
    """The CapacityBuffer CRD when the stack has warm buffers (``gpupools.warm``); empty otherwise.
    Under cluster-autoscaler it is the one the stack registers itself (vendored per image tag,
    ``gpupools.kubernetes.crds``); under Karpenter the one the ``karpenter-crd`` chart installs, read
    from karpenter-provider-aws v1.14.1's module (``pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml``,
    the same file as the chart's template), which the sim's CRD module pins."""
    if not capacity_buffers(stack_objects):
        return []
    own = [
        m
        for m in stack_objects.manifests
        if m["kind"] == "CustomResourceDefinition" and m["metadata"]["name"] == CAPACITY_BUFFER_CRD_NAME
    ]
    if own:
        document, path = dict(own[0]), Path("stack")
    else:
        from gpupools.sim import build, layout

        source = build.module_dir(layout.module_root() / build.CRD_MODULE_DIR, KARPENTER_CRD_MODULE) / CAPACITY_BUFFER_CRD_FILE
        document, path = yaml.safe_load(source.read_text()), source
    spec = document["spec"]
    return [Crd(path, "capacitybuffers", spec["group"], spec["names"]["kind"], document["metadata"]["name"], document)]
