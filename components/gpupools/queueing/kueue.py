"""``Kueue`` (the controller, from the official chart) and ``KueueQueues`` (flavours, queues and the
ProvisioningRequest admission check) on the cluster's Kubernetes provider.

* **Chart**: ``oci://registry.k8s.io/kueue/charts/kueue`` at ``gpupools.versions.KUEUE_VERSION``, a
  ``helm.v3.Release`` in ``kueue-system`` (the namespace of Kueue's own install instructions), as
  for cluster-autoscaler and Karpenter: one resource whose values show in previews and tests. The
  chart ships its CRDs as templates (``charts/kueue/templates/crd/``), so Helm upgrades them with
  the release.
* **Placement**: ``controllerManager.nodeSelector`` ``gpupools.io/role=system`` and
  ``controllerManager.tolerations`` exactly for the system pool's taints (AKS:
  ``CriticalAddonsOnly=true:NoSchedule``; EKS: none), values of the pinned chart
  (``values.yaml``: "ControllerManager's nodeSelector", "ControllerManager's tolerations");
  ``priorityClassName: system-cluster-critical``: Kueue's webhooks gate every Job created in the
  cluster, so it must not be preempted by workloads.
* **Only the queues' namespaces**: the chart's default configuration manages Jobs (and with its
  ``pod`` integration every Pod) in every namespace but ``kube-system`` and ``kueue-system``, through
  mutating webhooks with ``failurePolicy: Fail`` (``charts/kueue/templates/webhook/manifests.yaml``),
  so while Kueue's one replica is away no Job could be created anywhere. gpupools gives Kueue its own
  configuration (``managerConfig.controllerManagerConfigYaml``, a ``config.kueue.x-k8s.io/v1beta2``
  Configuration): ``managedJobsNamespaceSelector`` naming exactly the namespaces of
  ``gpupools:queueing`` (the chart turns it into every webhook's ``namespaceSelector``; Kueue's
  "Opt-in Namespace Management"), and ``integrations.frameworks`` the batch kinds (``batch/job``,
  JobSet, Kubeflow MPIJob and TrainJob, RayJob and RayCluster), without the chart's ``pod``,
  ``deployment``, ``statefulset`` and ``leaderworkerset``: serving workloads are not queued here.
  Every other setting is Kueue's default (``apis/config/v1beta2/defaults.go``: webhook port 9443,
  health ``:8081``, metrics ``:8443``, leader election on, client QPS 300 and burst 500, the
  chart's own values).
* **ProvisioningRequests**: Kueue needs no feature gate (``ProvisioningACC`` graduated and was
  removed, kueue #7465), but it sets the controller up only if the API server serves
  ``autoscaling.x-k8s.io/v1`` ProvisioningRequest when it starts ("Skipping provisioning controller
  setup: Provisioning Requests not supported", ``cmd/kueue/main.go`` at v0.19.2). So the release
  ``depends_on`` what serves it: the ProvisioningRequest CRD on EKS (``ClusterAutoscaler``), the
  autoscaled agent pools on AKS, whose managed autoscaler handles ProvisioningRequests (the AKS
  article "Provision capacity for Kueue batch jobs with the cluster autoscaler on AKS" installs
  Kueue on such a cluster and nothing else; dated 2026-07-17, while Azure/AKS #5492 reported in
  February 2026 that the managed autoscaler did not serve them yet: docs/queueing.md says what to
  do if Kueue logs that it skipped the controller).
* **Order**: a ``helm.v3.Release`` waits until the release's resources are ready unless
  ``skip_await`` is set (pulumi-kubernetes 4.34 ``helm.v3.Release``, ``skip_await``: "By default,
  the provider waits until all resources are in a ready state before marking the release as
  successful"), and Kueue's readiness check passes only once its webhook
  certificates are in place and the webhook server has started (``cmd/kueue/main.go``,
  ``AddReadyzCheck``: ``certsReady``, then ``GetWebhookServer().StartedChecker()``). Every Kueue
  object ``depends_on`` the release, so none is sent before the CRDs are served and the webhooks
  answer.

``KueueQueues`` registers ``gpupools.queueing.flavors`` and ``gpupools.queueing.queues``'s objects
as ``apiextensions.CustomResource``, the Namespaces of the LocalQueues, and nothing else.

**Destroy and removal**: every Kueue object ``depends_on`` the release, so Pulumi deletes them
before it uninstalls Kueue (dependents first), while Kueue's controller, CRDs and webhooks still run
and can clear their finalizers. The queue Namespaces are ``retain_on_delete``: they hold the teams'
Jobs and whatever else they put there, which the stack did not create; removing a namespace from
``gpupools:queueing`` or destroying the stack leaves the Namespace (and its workloads) in the cluster,
and no Namespace deletion can race the Kueue uninstall with Workloads still carrying Kueue's
finalizer. Delete a Namespace with ``kubectl delete namespace`` once it is empty (docs/queueing.md).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpupools.conventions import ROLE_LABEL, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import KubernetesKind
from gpupools.pools import NodePoolInfo
from gpupools.queueing import queues
from gpupools.queueing.flavors import Flavour, resource_flavor
from gpupools.queueing.quotas import Quota
from gpupools.rules import is_dns_label
from gpupools.specs import TeamQueueSpec
from gpupools.versions import KUEUE_CHART, KUEUE_VERSION

TYPE = "gpupools:index:Kueue"
QUEUES_TYPE = "gpupools:index:KueueQueues"

NAMESPACE = "kueue-system"
RELEASE_NAME = "kueue"
PRIORITY_CLASS = "system-cluster-critical"

_KUEUE = "kueue.x-k8s.io"
RESOURCE_FLAVOR = KubernetesKind(_KUEUE, "v1beta2", "ResourceFlavor", "resourceflavors", namespaced=False)
CLUSTER_QUEUE = KubernetesKind(_KUEUE, "v1beta2", "ClusterQueue", "clusterqueues", namespaced=False)
COHORT = KubernetesKind(_KUEUE, "v1beta2", "Cohort", "cohorts", namespaced=False)
LOCAL_QUEUE = KubernetesKind(_KUEUE, "v1beta2", "LocalQueue", "localqueues", namespaced=True)
ADMISSION_CHECK = KubernetesKind(_KUEUE, "v1beta2", "AdmissionCheck", "admissionchecks", namespaced=False)
PROVISIONING_REQUEST_CONFIG = KubernetesKind(
    _KUEUE, "v1beta2", "ProvisioningRequestConfig", "provisioningrequestconfigs", namespaced=False
)
NAMESPACE_KIND = KubernetesKind("", "v1", "Namespace", "namespaces", namespaced=False)
PROVISIONING_REQUEST = KubernetesKind(
    "autoscaling.x-k8s.io", "v1", "ProvisioningRequest", "provisioningrequests", namespaced=True
)
"""The API Kueue's ProvisioningRequest controller needs served when it starts (module docstring): the
AKS access gate waits for it with ``atomicScaleUp`` (``gpupools.azure.kubernetes_access.gate_served``),
so Kueue is never installed on a cluster where its check would stay inactive and hold every
ClusterQueue that names it (kueue ``clusterqueue`` controller, reason ``AdmissionCheckInactive``)."""
CUSTOM_RESOURCE_DEFINITION = KubernetesKind(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False
)
DEPLOYMENT = KubernetesKind("apps", "v1", "Deployment", "deployments", namespaced=True)
MUTATING_WEBHOOK = KubernetesKind(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", namespaced=False
)
VALIDATING_WEBHOOK = KubernetesKind(
    "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", namespaced=False
)

RELEASE_KINDS = (NAMESPACE_KIND, CUSTOM_RESOURCE_DEFINITION, DEPLOYMENT, MUTATING_WEBHOOK, VALIDATING_WEBHOOK)
"""What the release creates that the AKS access gate checks (``KubernetesAccessGate``): its
namespace, the CRDs, the controller and the webhooks (the chart's other kinds need the same
cluster-admin grant)."""

KINDS = (RESOURCE_FLAVOR, CLUSTER_QUEUE, COHORT, LOCAL_QUEUE, ADMISSION_CHECK, PROVISIONING_REQUEST_CONFIG, NAMESPACE_KIND)
"""What ``KueueQueues`` creates."""


def depends_on_of(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    """The resources in ``opts.depends_on``, handed on to the children."""
    deps = opts.depends_on if opts is not None else None
    if isinstance(deps, pulumi.Resource):
        return [deps]
    return [d for d in deps if isinstance(d, pulumi.Resource)] if isinstance(deps, (list, tuple)) else []


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every Namespace to its name (Kubernetes 1.22+)."""

FRAMEWORKS = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/mpijob",
    "trainer.kubeflow.org/trainjob",
    "ray.io/rayjob",
    "ray.io/raycluster",
)
"""The integrations Kueue runs (names as in the chart's ``values.yaml``): batch and training kinds only."""


def manager_config(namespaces: Sequence[str]) -> dict[str, Any]:
    """Kueue's Configuration: Jobs managed in ``namespaces`` only, the batch integrations (module docstring)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(namespaces))}]
        },
        "integrations": {"frameworks": list(FRAMEWORKS)},
    }


def helm_values(system_pool: NodePoolInfo, namespaces: Sequence[str]) -> dict[str, Any]:
    """The chart values: the controller on the system pool, managing ``namespaces`` only (module docstring)."""
    return {
        "controllerManager": {
            "nodeSelector": {ROLE_LABEL: Role.SYSTEM.value},
            "tolerations": [taint.toleration() for taint in sorted(system_pool.taints)],
            "manager": {"priorityClassName": PRIORITY_CLASS},
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config(namespaces), sort_keys=False)},
    }


class Kueue(pulumi.ComponentResource):
    """The Kueue controller (official chart, pinned) on the system pool.

    Args:
        name: the component's name.
        system_pool: the cluster's system pool (``NodePoolInfo``): its taints are tolerated.
        namespaces: the namespaces Kueue manages Jobs in (the LocalQueues' namespaces); at least one.
        opts: ``provider`` the cluster's Kubernetes provider; ``depends_on`` is passed to the release
            (what serves ProvisioningRequests, and the system pool).

    Attributes:
        values: the Helm values. release: the ``helm.v3.Release``.
    """

    values: dict[str, Any]
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        system_pool: NodePoolInfo,
        namespaces: Sequence[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if system_pool.role is not Role.SYSTEM:
            raise ConfigError(f"Kueue({name}).system_pool", "must be the system pool", system_pool.name)
        if not namespaces or isinstance(namespaces, str):
            raise ConfigError(f"Kueue({name}).namespaces", "must list the namespaces Kueue manages Jobs in", namespaces)
        super().__init__(TYPE, name, None, opts)
        self.values = helm_values(system_pool, namespaces)
        self.release = k8s.helm.v3.Release(
            name,
            name=RELEASE_NAME,
            chart=KUEUE_CHART,
            version=KUEUE_VERSION,
            namespace=NAMESPACE,
            create_namespace=True,
            values=self.values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on_of(opts)),
        )
        self.register_outputs({"chartVersion": KUEUE_VERSION})


def _custom(name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


def queue_manifests(
    flavours: Sequence[Flavour],
    namespaces: Sequence[str],
    teams: Sequence[TeamQueueSpec] = (),
    atomic_scale_up: bool = False,
) -> list[dict[str, Any]]:
    """Every Kueue object, in creation order: flavours, the admission check's config and check,
    the cohort (with teams), the ClusterQueues, the LocalQueues."""
    objects: list[dict[str, Any]] = [resource_flavor(f) for f in flavours]
    atomic = atomic_scale_up and any(f.is_gpu for f in flavours)
    if atomic:
        objects += [queues.provisioning_request_config(), queues.admission_check()]
    if teams:
        held = queues.team_quotas(flavours, teams)
        objects.append(queues.cohort(queues.SHARED_QUEUE, flavours, queues.cohort_quotas(flavours, held)))
        none = {f.name: Quota() for f in flavours}
        objects.append(
            queues.cluster_queue(queues.SHARED_QUEUE, flavours, quotas=none, cohort=queues.SHARED_QUEUE, atomic_scale_up=atomic)
        )
        for team in teams:
            objects.append(
                queues.cluster_queue(
                    team.name, flavours, quotas=held[team.name], cohort=queues.SHARED_QUEUE, atomic_scale_up=atomic
                )
            )
    else:
        objects.append(queues.cluster_queue(queues.SHARED_QUEUE, flavours, atomic_scale_up=atomic))
    objects += [queues.local_queue(queues.SHARED_QUEUE, ns, queues.SHARED_QUEUE) for ns in namespaces]
    for team in teams:
        objects += [queues.local_queue(team.name, ns, team.name) for ns in team.namespaces]
    return objects


class KueueQueues(pulumi.ComponentResource):
    """ResourceFlavors, ClusterQueues (and with teams a Cohort), LocalQueues in their Namespaces, and
    under cluster-autoscaler the ProvisioningRequest admission check.

    Args:
        name: the component's name; prefixes the resources' names.
        flavours: ``gpupools.queueing.flavors.flavours`` of the stack's pools, in buying order.
        namespaces: LocalQueues ``gpupools`` go here; gpupools creates these Namespaces and never
            deletes them (``retain_on_delete``).
        teams: per-team ClusterQueues and LocalQueues (their Namespaces too).
        atomic_scale_up: wire the ProvisioningRequest admission check on the GPU flavours.
        opts: ``provider`` the cluster's; ``depends_on`` the ``Kueue`` release (every object waits for it).

    Attributes:
        manifests: every Kueue object as registered.
    """

    manifests: list[dict[str, Any]]

    def __init__(
        self,
        name: str,
        flavours: Sequence[Flavour],
        namespaces: Sequence[str],
        teams: Sequence[TeamQueueSpec] = (),
        atomic_scale_up: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        path = f"KueueQueues({name})"
        if not flavours:
            raise ConfigError(f"{path}.flavours", "must include at least one pool's flavour", [])
        all_namespaces = [*namespaces, *(ns for team in teams for ns in team.namespaces)]
        for namespace in all_namespaces:
            if not is_dns_label(namespace):
                raise ConfigError(f"{path}.namespaces", "must be Kubernetes namespace names (DNS labels)", namespace)
        super().__init__(QUEUES_TYPE, name, None, opts)
        after = depends_on_of(opts)
        self.manifests = queue_manifests(flavours, namespaces, teams, atomic_scale_up)
        created: dict[str, pulumi.Resource] = {}
        for namespace in dict.fromkeys(all_namespaces):
            created[f"Namespace/{namespace}"] = k8s.core.v1.Namespace(
                f"{name}-ns-{namespace}",
                metadata={"name": namespace, "labels": dict(queues.MANAGED_BY)},
                # Never deleted by Pulumi: it holds the teams' workloads (module docstring, "Destroy and removal").
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
            )
        for manifest in self.manifests:
            kind, meta = manifest["kind"], manifest["metadata"]
            deps: list[pulumi.Resource] = list(after)
            if kind == "LocalQueue":
                deps.append(created[f"Namespace/{meta['namespace']}"])
            if kind in ("ClusterQueue", "Cohort"):
                # A queue names its flavours, check and cohort: create those first, delete it first.
                deps += [r for key, r in created.items() if key.split("/")[0] in ("ResourceFlavor", "AdmissionCheck", "Cohort")]
            if kind == "LocalQueue":
                deps += [r for key, r in created.items() if key.split("/")[0] == "ClusterQueue"]
            if kind == "AdmissionCheck":
                deps += [r for key, r in created.items() if key.split("/")[0] == "ProvisioningRequestConfig"]
            suffix = f"{meta['namespace']}-{meta['name']}" if "namespace" in meta else meta["name"]
            resource = _custom(f"{name}-{kind.lower()}-{suffix}", manifest, pulumi.ResourceOptions(parent=self, depends_on=deps))
            created[f"{kind}/{suffix}"] = resource
        self.register_outputs({"clusterQueues": [m["metadata"]["name"] for m in self.manifests if m["kind"] == "ClusterQueue"]})
