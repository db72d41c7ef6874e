"""Kueue in the sim: the real Kueue manager (sigs.k8s.io/kueue v0.19.2, ``cmd/kueue``) run as a local
process against a queueing stack's own ResourceFlavors, ClusterQueues and LocalQueues (applied with
the stack's objects).

Its configuration is the stack's own (``managerConfig.controllerManagerConfigYaml`` of the stack's
Kueue chart: managed namespaces, integrations), with only what running outside a cluster needs
changed (the fields of ``config.kueue.x-k8s.io/v1beta2`` ``Configuration``, sigs.k8s.io/kueue v0.19.2
``apis/config/v1beta2/configuration_types.go``):

* ``internalCertManagement.enable: false``: Kueue's own certificate management writes a Secret for
  the Service ``kueue-webhook-service``, which only in-cluster DNS reaches. Instead the sim makes a CA
  and a serving certificate for 127.0.0.1 (``webhook.certDir``: ``tls.crt``, ``tls.key``), and
  rewrites Kueue's webhook configurations (``config/components/webhook/manifests.yaml`` of the
  module, named ``kueue-…`` as the chart and kustomize name them) from ``service`` to
  ``url: https://127.0.0.1:<port><path>`` with that CA as ``caBundle``: what controller-runtime's
  envtest does for out-of-cluster webhooks.
* ``webhook.host``, ``metrics.bindAddress``, ``health.healthProbeBindAddress``: 127.0.0.1 and free
  ports (defaults 9443, 8443, 8081 on every interface).
* ``featureGates.VisibilityOnDemand: false``: the visibility server (pending-workloads API) is an
  aggregated API the API server reaches through a Service, and reads its certificate from the fixed
  path ``/visibility`` (``pkg/visibility/server.go``); nothing the sim tests reads it.
* ``leaderElection.leaderElect: false``: one replica.

One path is not Kueue's configuration: with ``internalCertManagement`` off, Kueue v0.19.2 reads its
metrics server's certificate from the fixed directory ``/etc/kueue/metrics/certs``
(``cmd/kueue/main.go``, ``metricsCertPath``; the chart mounts cert-manager's Secret there) and exits
when ``tls.crt`` is missing. The other way out, internal certificate management, issues a
certificate for the Service's DNS name only, which a local process cannot be reached by, and fails
its readiness on CRDs installed without their conversion webhook. So the sim writes a certificate
it makes into ``/etc/kueue/metrics/certs`` (``METRICS_CERT_DIR``) when it may (the directory is
absent, or holds the sim's own marker), and refuses with that reason otherwise.

Kueue runs with the sim's admin identity (``processes.admin_kubeconfig``), not the chart's RBAC.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from gpupools.sim import pki, processes
from gpupools.sim.build import Build
from gpupools.sim.control_plane import HOST, ClusterState, _http_ok, free_port
from gpupools.sim.kube import Client
from gpupools.sim.objects import StackObjects

NAME = "kueue"
NAMESPACE = "kueue-system"
"""Kueue's namespace (``Configuration.namespace`` default, the chart's release namespace)."""
WEBHOOK_PREFIX = "kueue-"
"""kustomize's ``namePrefix`` in Kueue's ``config/default`` (the chart's names are the same)."""


def uses_kueue(stack_objects: StackObjects) -> bool:
    return any(
        m["kind"] == "ClusterQueue" and str(m["apiVersion"]).startswith("kueue.x-k8s.io/") for m in stack_objects.manifests
    )


def stack_configuration(stack_objects: StackObjects) -> dict[str, Any]:
    """The Configuration the stack's Kueue chart is given (empty when it gives none)."""
    for registration in stack_objects.run.registrations:
        if registration.type.startswith("kubernetes:helm.sh/") and "kueue" in str(registration.inputs.get("chart", "")):
            values = registration.inputs.get("values") or {}
            text = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml")
            if text:
                return dict(yaml.safe_load(text))
    return {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}


def configuration(base: Mapping[str, Any], ports: Mapping[str, int], cert_dir: Path) -> dict[str, Any]:
    """``base`` with the out-of-cluster changes of the module docstring (nothing else)."""
    config = dict(base)
    config.update(
        {
            "namespace": NAMESPACE,
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": HOST, "port": ports["webhook"], "certDir": str(cert_dir)},
            "metrics": {"bindAddress": f"{HOST}:{ports['metrics']}"},
            "health": {"healthProbeBindAddress": f"{HOST}:{ports['health']}"},
            "featureGates": {**(base.get("featureGates") or {}), "VisibilityOnDemand": False},
        }
    )
    return config


METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
METRICS_CERT_MARKER = ".written-by-gpupools-sim"


def metrics_certificate(directory: Path = METRICS_CERT_DIR) -> None:
    """Kueue's metrics certificate at its fixed path (module docstring); SimError when the
    directory holds someone else's files or cannot be created."""
    from gpupools.sim.control_plane import SimError

    if directory.exists() and any(directory.iterdir()) and not (directory / METRICS_CERT_MARKER).exists():
        if (directory / "tls.crt").exists() and (directory / "tls.key").exists():
            return  # someone's own certificate (a Kueue install on this machine): Kueue serves it
        raise SimError(f"{directory} holds files the sim did not write and no tls.crt/tls.key: Kueue cannot start")
    try:
        serving_certificate(directory)
    except OSError as error:
        raise SimError(
            f"Kueue v0.19.2 reads its metrics certificate from {directory} when internal certificate management is off, "
            f"and the sim cannot write there ({error.strerror}): create that directory writable for this user"
        ) from None
    (directory / METRICS_CERT_MARKER).write_text("")


def serving_certificate(directory: Path) -> bytes:
    """A CA and a serving certificate for 127.0.0.1 in ``directory`` (``tls.crt``, ``tls.key``);
    returns the CA certificate (PEM) for the webhook configurations' ``caBundle``."""
    return pki.serving_pair(directory, "gpupools-sim-kueue-webhook-ca", "kueue-webhook")


def webhook_configurations(manifests_file: Path, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """Kueue's webhook configurations pointed at ``https://127.0.0.1:<port>`` (module docstring)."""
    rewritten = []
    bundle = base64.b64encode(ca_bundle).decode()
    for document in yaml.safe_load_all(manifests_file.read_text()):
        if not isinstance(document, dict):
            continue
        document = dict(document)
        document["metadata"] = {"name": WEBHOOK_PREFIX + document["metadata"]["name"]}
        for webhook in document.get("webhooks") or []:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"https://{HOST}:{port}{path}", "caBundle": bundle}
        rewritten.append(document)
    return rewritten


def _namespace(client: Client) -> None:
    client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})


def start(state: ClusterState, build: Build, stack_objects: StackObjects) -> processes.Controller:
    """Start Kueue, wait for its readiness probe (its webhook server serves), then register its webhooks."""
    ports = {name: free_port() for name in ("webhook", "metrics", "health")}
    directory = state.path / NAME
    ca_bundle = serving_certificate(directory / "certs")
    config_path = directory / "config.yaml"
    config_path.write_text(
        yaml.safe_dump(configuration(stack_configuration(stack_objects), ports, directory / "certs"), sort_keys=False)
    )
    metrics_certificate()
    client = state.client()
    _namespace(client)
    controller = processes.Controller(
        name=NAME,
        argv=[str(build.binary("kueue")), f"--config={config_path}", "--zap-log-level=2"],
        env={"KUBECONFIG": str(processes.admin_kubeconfig(state))},
        ports=ports,
        extra={"stack": stack_objects.stack},
    )
    webhooks = webhook_configurations(build.controllers / NAME / "manifests.yaml", ports["webhook"], ca_bundle)
    controller.extra["webhooks"] = ",".join(f"{w['kind']}/{w['metadata']['name']}" for w in webhooks)
    started = processes.start(state, controller, lambda: _http_ok(f"http://{HOST}:{ports['health']}/readyz"))
    for configuration_object in webhooks:
        client.apply(configuration_object)
    return started


def stop(state: ClusterState) -> bool:
    """Remove Kueue's webhook configurations (their failure policy is Fail: left behind, they would
    refuse every Job once Kueue is gone), then stop Kueue."""
    record = processes.records(state).get(NAME)
    if record is None:
        return False
    client = state.client()
    for entry in filter(None, record.extra.get("webhooks", "").split(",")):
        kind, _, name = entry.partition("/")
        client.delete({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}})
    return processes.stop(state, NAME)


def admitted(workloads: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the Workloads Kueue admitted (condition ``Admitted`` true)."""
    return [w["metadata"]["name"] for w in workloads if _condition(w, "Admitted")]


def quota_reserved(workloads: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the Workloads with quota reserved in their ClusterQueue (condition ``QuotaReserved`` true)."""
    return [w["metadata"]["name"] for w in workloads if _condition(w, "QuotaReserved")]


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])
