"""Kueue in the sim: the real Kueue manager (sigs.k8s.io/kueue v0.19.2, ``cmd/kueue``) run as a local
process against a queueing stack's own ResourceFlavors, ClusterQueues and LocalQueues (applied with
the stack's objects).

**The stack's chart** (``plan``): the stack's ``kueue`` Helm release is rendered with its own values
from ``charts/kueue`` of sigs.k8s.io/kueue v0.19.2, the module Kueue's binary is built from
(``gpupools.sim.charts``). Applied before the stack's objects, in the release namespace (created, as
the release's ``createNamespace`` does): the ServiceAccount, every ClusterRole, Role and binding, the
Services and the manager's ConfigMap. Not applied: the Deployment (Kueue runs as a local process),
the webhook certificate Secret (the sim makes its own, below), the visibility ``APIService``s (an
aggregated API the sim turns off, below: registered, it would be unavailable and fail API discovery),
and the chart's CRDs: the sim installs the same definitions (same names, versions and schemas, a test
checks) from the module's ``config/components/crd/bases``, without the conversion webhook five of the
chart's name (the in-cluster ``kueue-webhook-service``). Kueue runs with the rendered container's
arguments (``--config`` pointed at the local file, ``--zap-log-level`` as rendered) under a token of
the chart's ServiceAccount (``kueue-system/kueue-controller-manager``), so the chart's RBAC is what it
has.

Its configuration is the rendered ConfigMap's (``controller_manager_config.yaml``, the file the
chart mounts at ``--config``: the stack's ``managerConfig.controllerManagerConfigYaml`` as the chart
completes it), with only what running outside a cluster needs changed (the fields of
``config.kueue.x-k8s.io/v1beta2`` ``Configuration``, sigs.k8s.io/kueue v0.19.2
``apis/config/v1beta2/configuration_types.go``):

* ``internalCertManagement.enable: false``: Kueue's own certificate management writes a Secret for
  the Service ``kueue-webhook-service``, which only in-cluster DNS reaches. Instead the sim makes a CA
  and a serving certificate for 127.0.0.1 (``webhook.certDir``: ``tls.crt``, ``tls.key``), and
  rewrites the chart's rendered webhook configurations (their namespace selectors and failure
  policies as the chart sets them from the stack's values) from ``service`` to
  ``url: https://127.0.0.1:<port><path>`` with that CA as ``caBundle``: what controller-runtime's
  envtest does for out-of-cluster webhooks. They are registered once Kueue serves, and removed
  before it stops (``failurePolicy: Fail`` webhooks with no server would refuse every Job).
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

"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from gpupools.sim import charts, pki, processes
from gpupools.sim.build import Build
from gpupools.sim.control_plane import HOST, ClusterState, SimError, _http_ok, free_port
from gpupools.sim.kube import Client
from gpupools.sim.objects import StackObjects

NAME = "kueue"
NAMESPACE = "kueue-system"
"""Kueue's namespace (``Configuration.namespace`` default, the chart's release namespace)."""
CHART = "kueue"
CONTAINER = "manager"
"""The chart's controller container (``templates/manager/manager.yaml``)."""
CONFIG_ARG = "--config"


def uses_kueue(stack_objects: StackObjects) -> bool:
    return any(
        m["kind"] == "ClusterQueue" and str(m["apiVersion"]).startswith("kueue.x-k8s.io/") for m in stack_objects.manifests
    )


@dataclass(frozen=True)
class Plan:
    """How the sim runs the stack's Kueue: the rendered container's arguments and configuration, the
    chart's objects and webhook configurations, its ServiceAccount, notes."""

    args: list[str]
    """The rendered container's arguments, ``--config=…`` without its value (the local file goes there)."""
    config: dict[str, Any]
    objects: list[dict[str, Any]]
    webhooks: list[dict[str, Any]]
    namespace: str
    service_account: str
    notes: list[str]


def mounted_config(rendered: charts.Rendered, container: charts.Container) -> tuple[str, dict[str, Any]]:
    """The ``--config`` file of the rendered container and its content: the ConfigMap key the pod
    mounts at that path (``volumeMounts[].subPath`` of a ``configMap`` volume). SimError when the
    chart mounts none there."""
    path = next((a.split("=", 1)[1] for a in container.args if a.startswith(f"{CONFIG_ARG}=")), None)
    assert rendered.workload is not None
    pod = rendered.workload["spec"]["template"]["spec"]
    spec = next(c for c in pod["containers"] if c["name"] == container.name)
    mount = next((m for m in spec.get("volumeMounts") or [] if m.get("mountPath") == path), None)
    volume = next((v for v in pod.get("volumes") or [] if mount and v.get("name") == mount["name"]), None)
    config_map = ((volume or {}).get("configMap") or {}).get("name")
    found = next((o for o in rendered.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == config_map), None)
    if path is None or mount is None or found is None or mount.get("subPath") not in (found.get("data") or {}):
        raise SimError(
            f"the {CHART} chart's {container.name} container reads {CONFIG_ARG}={path}, which no rendered ConfigMap is mounted at"
        )
    return path, dict(yaml.safe_load(found["data"][mount["subPath"]]))


def plan(stack_objects: StackObjects, build: Build, helm: Path | None = None) -> Plan:
    """Kueue's arguments, configuration, chart objects and identity for the stack (module docstring)."""
    from gpupools.sim import objects

    found = charts.releases(stack_objects.run.registrations, CHART)
    if len(found) != 1:
        raise SimError(f"stack {stack_objects.stack} registers {len(found)} Kueue Helm releases, expected one")
    module_version = build.versions[charts.CHART_MODULES[CHART][1]]
    charts.check_version(found[0], CHART, module_version)
    rendered = charts.render(
        helm or charts.helm(), charts.chart_path(build, CHART), found[0], kube_version=build.kubernetes_version
    )
    container = rendered.container(CONTAINER)
    path, config = mounted_config(rendered, container)
    args = [CONFIG_ARG if a == f"{CONFIG_ARG}={path}" else a for a in container.args]
    installed = {c.name for c in objects.crd_index(build.crds) if c.group == "kueue.x-k8s.io"}
    notes = [
        f"{CONFIG_ARG}={path}: the rendered ConfigMap's file, written locally with internalCertManagement off, "
        "the webhook, metrics and health servers on 127.0.0.1, VisibilityOnDemand off, no leader election",
        *(
            f"{w['kind']} {w['metadata']['name']}: rewritten to https://{HOST}:<port> with the sim's CA"
            for w in rendered.webhooks
        ),
        *charts.crd_notes(rendered, installed),
        f"rendered from charts/kueue of sigs.k8s.io/kueue {module_version}; runs the sim's build of the same version",
        *rendered.notes,
    ]
    if rendered.service_account is None:
        raise SimError(f"the {CHART} chart rendered no workload for release {rendered.release}")
    return Plan(args, config, rendered.objects, rendered.webhooks, rendered.namespace, rendered.service_account, notes)


def prepare(client: Client, kueue_plan: Plan) -> None:
    """The release namespace and the chart's objects, before the stack's objects."""
    client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": kueue_plan.namespace}})
    for manifest in kueue_plan.objects:
        client.apply(manifest)


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


def webhook_configurations(rendered: Sequence[Mapping[str, Any]], port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """The chart's webhook configurations pointed at ``https://127.0.0.1:<port>`` with the sim's CA
    (module docstring); every other field as rendered."""
    rewritten = []
    bundle = base64.b64encode(ca_bundle).decode()
    for document in rendered:
        configuration: dict[str, Any] = copy.deepcopy(dict(document))
        for webhook in configuration.get("webhooks") or []:
            path = webhook["clientConfig"]["service"].get("path", "")
            webhook["clientConfig"] = {"url": f"https://{HOST}:{port}{path}", "caBundle": bundle}
        rewritten.append(configuration)
    return rewritten


def start(state: ClusterState, build: Build, stack_objects: StackObjects, kueue_plan: Plan | None = None) -> processes.Controller:
    """Start Kueue, wait for its readiness probe (its webhook server serves), then register its webhooks."""
    from gpupools.sim import autoscaler

    kueue_plan = kueue_plan or plan(stack_objects, build)
    ports = {name: free_port() for name in ("webhook", "metrics", "health")}
    directory = state.path / NAME
    ca_bundle = serving_certificate(directory / "certs")
    config_path = directory / "config.yaml"
    config_path.write_text(yaml.safe_dump(configuration(kueue_plan.config, ports, directory / "certs"), sort_keys=False))
    metrics_certificate()
    client = state.client()
    kubeconfig = autoscaler.service_account_kubeconfig(state, client, kueue_plan.namespace, kueue_plan.service_account)
    args = [f"{CONFIG_ARG}={config_path}" if a == CONFIG_ARG else a for a in kueue_plan.args]
    controller = processes.Controller(
        name=NAME,
        argv=[str(build.binary("kueue")), *args],
        env={"KUBECONFIG": str(kubeconfig)},
        ports=ports,
        extra={
            "stack": stack_objects.stack,
            "identity": f"ServiceAccount {kueue_plan.namespace}/{kueue_plan.service_account}",
            "notes": "\n".join(kueue_plan.notes),
        },
    )
    webhooks = webhook_configurations(kueue_plan.webhooks, ports["webhook"], ca_bundle)
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
