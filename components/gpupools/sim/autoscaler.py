"""cluster-autoscaler in the sim: the real cluster-autoscaler 1.36.1 with its KWOK cloud provider, run
against a cluster-autoscaler stack's own node groups, flags and priority-expander ConfigMap.

**Node groups.** One per group the stack registers (``gpupools.sim.node_shapes``: every AKS agent
pool and the inline system pool, every EKS managed node group), named as the cloud names the
scaling group cluster-autoscaler sees, so the stack's priority-expander regexes are matched against
the names they are written for: AKS scale sets ``aks-<agent pool>-<8 digits>-vmss``, EKS Auto
Scaling groups ``eks-<node group>-<uuid>`` (``group_id``). Min and max are the registered ones (AKS
``minCount``/``maxCount``, EKS ``scalingConfig``). The KWOK provider (kubernetes/autoscaler
``cloudprovider/kwok`` at tag cluster-autoscaler-1.36.1) reads its node groups from template Nodes
in a ConfigMap (``readNodesFrom: configmap``), grouped by the annotation
``cluster-autoscaler.kwok.nodegroup/name`` with ``.../min-count`` and ``.../max-count``
(``kwok_constants.go``, ``kwok_helpers.go`` ``parseAnnotations``). Each template is the node the
cloud would make for the group (``node_shapes.node_manifest``, the shapes ``sim nodes`` adds): its
labels, taints and allocatable GPUs are the scale-from-zero template. The provider taints every
template ``kwok-provider=true:NoSchedule`` unless ``nodes.skipTaint`` (``kwok_provider.go``): the
sim skips it, no cloud node has that taint. A scale-up creates Nodes from the template
(``IncreaseSize``: ``<group>-<5 random characters>``, annotated ``kwok.x-k8s.io/node: fake``), which
the sim's KWOK controller makes Ready; a scale-down deletes them.

**Flags.** What the stack gives its autoscaler:

* EKS: the arguments of the chart's Deployment, rendered by ``helm template`` from the pinned chart
  with the stack's own Helm values (``gpupools.sim.charts``), with two substitutions the sim states:
  ``--cloud-provider=kwok`` for ``aws`` and no ``--node-group-auto-discovery`` (the KWOK provider
  discovers its groups from the templates). The controller runs as the chart's ServiceAccount (a
  token from the TokenRequest API), so the chart's RBAC is what it has; plus one ClusterRole of the
  sim's own (``KWOK_PROVIDER_RULES``) for what the cloud does instead of the autoscaler: creating and
  deleting Node objects (on EKS an instance's kubelet registers its Node; the chart grants no
  ``create`` on nodes).
* AKS: the managed autoscaler's flags are the cluster's ``autoScalerProfile``: AKS documents each
  profile setting under the cluster-autoscaler flag of the same name ("Cluster autoscaler profile
  settings", learn.microsoft.com/azure/aks/cluster-autoscaler-performance, and the REST spec's
  ``ManagedClusterProperties_autoScalerProfile`` field names, which are the flags' kebab-case names).
  ``profile_flags`` maps every field the stack sends (the full profile, AKS defaults included:
  ``gpupools.azure.autoscaler_profile``) to ``--<field>=<value>``, except ``max-empty-bulk-delete``,
  which cluster-autoscaler 1.36 no longer has (``config/flags/flags.go`` at the tag; said in
  ``sim status``). The managed autoscaler runs in AKS's control plane under AKS's identity, so the
  sim runs it with its admin identity.

Both read the stack's ``cluster-autoscaler-priority-expander`` ConfigMap from ``kube-system``
(``--namespace``, the chart's release namespace on EKS; AKS's managed autoscaler reads
``kube-system``), and write their own ``cluster-autoscaler-status`` ConfigMap there.

**A Spot shortage** (``gpupools.sim.spot``): the groups of the pool's Spot capacity get a template
label ``sim.gpupools.io/unavailable=true`` and the autoscaler is restarted (the provider reads its
templates once, at start). The sim's KWOK controller manages only nodes without that label
(``control_plane``: ``--manage-nodes-with-label-selector``), so such a node is created and never
becomes Ready; it is created ``Ready=False`` with the ``not-ready`` taint (``NOT_READY_CONDITION``
says why both), so the pending pod is never bound to it. A cloud's Spot shortage is an instance that
never *registers*, and the KWOK provider cannot express that: it creates the Node object in the
scale-up itself and recounts its groups from their nodes on every loop (``kwok_provider.go``,
``Refresh``), so a node the sim deleted would end the scale-up "successfully" and the autoscaler would
try the Spot group again. A registered node that never becomes Ready is the nearest it can show, and
the autoscaler treats both alike where it matters (observed, ``tests/sim/test_cluster_autoscaler.py``):
it counts the node as starting, waits out the stack's ``--max-node-provision-time``, times the
scale-up out, backs the Spot group off (``clusterstate/clusterstate.go``, ``updateScaleRequests``)
and, in the same loop, the priority expander picks the pool's on-demand group; the never-ready node
is removed later as unneeded. No flag is added for it. What the KWOK provider cannot show: the
faster failure signal a cloud gives (an EC2 ``InsufficientInstanceCapacity`` scaling activity that
the AWS provider turns into an instance error before the timeout,
``cloudprovider/aws/auto_scaling_groups.go``), so the sim shows the timeout path only;
``gpupools.fallback_model`` keeps that part.
"""

from __future__ import annotations

import signal
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from gpupools.conventions import CapacityType
from gpupools.sim import charts, control_plane, node_shapes, pki, processes
from gpupools.sim.autoscaler_build import VERSION
from gpupools.sim.control_plane import HOST, ClusterState, SimError, _http_ok, free_port
from gpupools.sim.kube import Client
from gpupools.sim.objects import StackObjects
from gpupools.specs import Cloud, Provisioner

NAME = "cluster-autoscaler"
NAMESPACE = "kube-system"
PROVIDER_CONFIG = "kwok-provider-config"
"""The KWOK provider's configuration ConfigMap (``KWOK_PROVIDER_CONFIGMAP``'s default, ``kwok_config.go``)."""
TEMPLATES = "kwok-provider-templates"
NG_NAME = "cluster-autoscaler.kwok.nodegroup/name"
NG_MIN = "cluster-autoscaler.kwok.nodegroup/min-count"
NG_MAX = "cluster-autoscaler.kwok.nodegroup/max-count"
NG_DESIRED = "cluster-autoscaler.kwok.nodegroup/desired-count"
"""The group's size at start; the provider refuses one outside [min, max] (``parseAnnotations``) and
recounts the group's nodes on every loop (``Refresh``), so the sim gives ``min``."""
UNAVAILABLE_LABEL = control_plane.UNAVAILABLE_LABEL
"""On the templates of a pool whose Spot capacity the sim has made unavailable (module docstring)."""
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
NOT_READY_CONDITION = {
    "type": "Ready",
    "status": "False",
    "reason": "KubeletNotReady",
    "message": "the sim's Spot shortage: this instance never becomes Ready",
}
"""What a never-ready node of an unavailable Spot group is created with (the API server keeps a Node's
status on create: ``pkg/registry/core/node/strategy.go``). The node lifecycle controller keeps exactly
the NoSchedule condition taints a node's conditions justify and removes the rest
(``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, ``doNoScheduleTaintingPass``): without
``Ready=False`` it would lift the taint, the scheduler would bind the pending pod to the node, and the
pod would wait out the 300 s ``unreachable`` toleration before the autoscaler saw it again. With both,
the pod stays pending on the taint from the node's first moment, as it stays pending on a cloud whose
instance never registers. cluster-autoscaler drops node-condition taints from its templates
(``utils/taints/taints.go``, ``SanitizeTaints``), so the group is still a candidate for the pod."""
STATUS_CONFIG_MAP = "cluster-autoscaler-status"
GPU_LABELS = {Cloud.AWS: "k8s.amazonaws.com/accelerator", Cloud.AZURE: "kubernetes.azure.com/accelerator"}
"""The GPU label cluster-autoscaler's AWS and Azure providers report (``GPULabel``:
``cloudprovider/aws/aws_cloud_provider.go``, ``cloudprovider/azure/azure_cloud_provider.go``)."""

REMOVED_PROFILE_FLAGS = ("max-empty-bulk-delete",)
"""AKS profile fields with no flag in cluster-autoscaler 1.36.1 (removed upstream; AKS still echoes the field)."""

SUBSTITUTED_FLAGS = {"--cloud-provider": "--cloud-provider=kwok", "--node-group-auto-discovery": None}
"""Rendered chart flags the sim replaces (value) or drops (None): the KWOK provider has no ASGs to discover."""

KWOK_PROVIDER_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
]
"""What the KWOK provider needs beyond the chart's RBAC: it creates the Node objects a cloud's
instances would register (``kwok_nodegroups.go`` ``IncreaseSize``) and reads its two ConfigMaps."""

_ASG_NAMESPACE = uuid.UUID("6f1c2a0e-5d4b-4b6e-9a57-2f0d6c8e4b13")


@dataclass(frozen=True)
class ScalingGroup:
    """A node group as cluster-autoscaler sees it: the cloud's scaling-group name and the node shape."""

    id: str
    group: node_shapes.NodeGroup


def provider_id(node_name: str) -> str:
    """The KWOK provider's instance ID of a node (``kwok_helpers.go``, ``getProviderID``): a Node whose
    ``providerID`` differs is, to the autoscaler, an instance that never registered."""
    return f"kwok:{node_name}"


def adopt(group: node_shapes.NodeGroup, node: dict[str, Any]) -> None:
    """Make ``node`` (one the sim adds itself: the system pool at ``up``, ``sim nodes``) an instance of
    its group's scaling group: the group annotation and the provider's form of ``providerID``."""
    node["metadata"].setdefault("annotations", {})[NG_NAME] = group_id(group)
    node["spec"]["providerID"] = provider_id(node["metadata"]["name"])


def uses_cluster_autoscaler(stack_objects: StackObjects) -> bool:
    return stack_objects.spec.provisioner is Provisioner.CLUSTER_AUTOSCALER


def group_id(group: node_shapes.NodeGroup) -> str:
    """The scaling group's name as the cloud gives it: ``aks-<pool>-<8 digits>-vmss`` (AKS names a
    pool's VMSS so), ``eks-<node group>-<uuid>`` (EKS names a managed node group's ASG so)."""
    if group.provider == "aks":
        digits = node_shapes.hash_text(f"vmss/{group.name}") % 10**8
        return f"aks-{group.name}-{digits:08d}-vmss"
    return f"eks-{group.name}-{uuid.uuid5(_ASG_NAMESPACE, group.name)}"


def scaling_groups(stack_objects: StackObjects) -> list[ScalingGroup]:
    """Every cloud node group of the stack (Karpenter NodePools are not cluster-autoscaler's)."""
    groups = node_shapes.node_groups(stack_objects.run, stack_objects.spec, stack_objects.region)
    return [ScalingGroup(group_id(g), g) for g in groups if g.provider in ("aks", "eks")]


def template(scaling: ScalingGroup, unavailable: bool = False) -> dict[str, Any]:
    """The group's template Node for the KWOK provider (module docstring)."""
    node = node_shapes.node_manifest(scaling.group, 0, control_plane.KWOK_ANNOTATION)
    node["metadata"]["name"] = scaling.id
    node["metadata"]["annotations"].update(
        {
            NG_NAME: scaling.id,
            NG_MIN: str(scaling.group.min_size),
            NG_MAX: str(scaling.group.max_size),
            NG_DESIRED: str(scaling.group.min_size),
        }
    )
    node.pop("status", None)
    node["status"] = {
        "allocatable": scaling.group.resources.as_quantities(),
        "capacity": scaling.group.resources.as_quantities(),
    }
    if unavailable:
        node["metadata"]["labels"][UNAVAILABLE_LABEL] = "true"
        node["spec"]["taints"] = [*node["spec"].get("taints", []), NOT_READY_TAINT]
        node["status"]["conditions"] = [NOT_READY_CONDITION]
    return node


def provider_config(cloud: Cloud, groups: Sequence[ScalingGroup]) -> dict[str, Any]:
    """The KWOK provider's configuration (``KwokProviderConfig``, ``kwok_types.go``)."""
    gpu_types = sorted({str(g.group.labels.get(GPU_LABELS[cloud], "")) for g in groups} - {""}) or ["nvidia"]
    return {
        "apiVersion": "v1alpha1",
        "readNodesFrom": "configmap",
        "nodegroups": {"fromNodeAnnotationKey": NG_NAME},
        "nodes": {
            "skipTaint": True,
            "gpuConfig": {"gpuLabelKey": GPU_LABELS[cloud], "availableGPUTypes": {t: {} for t in gpu_types}},
        },
        "configmap": {"name": TEMPLATES},
    }


def config_maps(stack_objects: StackObjects, unavailable_pools: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The provider's two ConfigMaps: its configuration and the template Nodes."""
    groups = scaling_groups(stack_objects)
    templates = [template(g, g.group.pool in unavailable_pools and g.group.capacity is CapacityType.SPOT) for g in groups]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": PROVIDER_CONFIG, "namespace": NAMESPACE},
            "data": {"config": yaml.safe_dump(provider_config(stack_objects.spec.cloud, groups), sort_keys=False)},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": TEMPLATES, "namespace": NAMESPACE},
            "data": {"templates": yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": templates}, sort_keys=False)},
        },
    ]


def _kebab(camel: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in camel)


AKS_PROVISIONING_REQUESTS = "--enable-provisioning-requests=true"
AKS_PROVISIONING_REQUESTS_WHY = (
    "AKS's managed autoscaler serves ProvisioningRequests (from Kubernetes 1.33, Azure/AKS PR #5867; the AKS "
    'article "Provision capacity for Kueue batch jobs with the cluster autoscaler on AKS": Kueue creates the '
    "request and the cluster autoscaler atomically scales up the node pool, with no setting to turn it on)"
)
"""Not a profile field: on AKS it is how the managed autoscaler runs. Without it the sim's autoscaler
left a Kueue ProvisioningRequest without a status and Kueue never admitted the job (issue 48, 4.)."""


def profile_flags(profile: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``--<field>=<value>`` for each AKS ``autoScalerProfile`` field (camelCase as the stack sends
    it, kebab-case on the wire and as the flag), and the notes on fields left out."""
    flags, notes = [], []
    for key in sorted(profile):
        flag = _kebab(key)
        value = profile[key]
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if flag in REMOVED_PROFILE_FLAGS:
            notes.append(f"--{flag}={text} left out: cluster-autoscaler 1.36.1 has no such flag")
            continue
        flags.append(f"--{flag}={text}")
    return flags, notes


def aks_flags(stack_objects: StackObjects) -> tuple[list[str], list[str]]:
    clusters = stack_objects.run.of_type(node_shapes.AKS_CLUSTER)
    if not clusters:
        raise SimError(f"stack {stack_objects.stack} registers no AKS cluster: no autoScalerProfile to run the autoscaler with")
    flags, notes = profile_flags(clusters[0].inputs.get("autoScalerProfile") or {})
    notes.append("AKS runs its managed autoscaler in the control plane under its own identity: the sim runs it as admin")
    notes.append(f"{AKS_PROVISIONING_REQUESTS}: {AKS_PROVISIONING_REQUESTS_WHY}")
    return ["--cloud-provider=kwok", f"--namespace={NAMESPACE}", *flags, AKS_PROVISIONING_REQUESTS], notes


def chart_flags(rendered: charts.Rendered) -> tuple[list[str], list[str]]:
    """The rendered container's arguments with the substitutions of ``SUBSTITUTED_FLAGS``."""
    container = rendered.container()
    flags, notes = [], []
    for arg in (*container.command[1:], *container.args):
        name = arg.split("=", 1)[0]
        if name in SUBSTITUTED_FLAGS:
            replacement = SUBSTITUTED_FLAGS[name]
            notes.append(f"{arg} {'replaced by ' + replacement if replacement else 'left out'} (KWOK cloud provider)")
            if replacement:
                flags.append(replacement)
            continue
        flags.append(arg)
    return flags, notes


@dataclass(frozen=True)
class Plan:
    """How the sim runs the stack's autoscaler: flags, identity, objects from the chart, notes."""

    flags: list[str]
    env: dict[str, str]
    objects: list[dict[str, Any]]
    service_account: str | None
    notes: list[str]


def plan(stack_objects: StackObjects, helm: Path, chart: Path, kube_version: str) -> Plan:
    """The autoscaler's flags, environment and chart objects for the stack (module docstring)."""
    if stack_objects.spec.cloud is Cloud.AZURE:
        flags, notes = aks_flags(stack_objects)
        return Plan(flags, {}, [], None, notes)
    found = charts.releases(stack_objects.run.registrations, "cluster-autoscaler")
    if len(found) != 1:
        raise SimError(f"stack {stack_objects.stack} registers {len(found)} cluster-autoscaler Helm releases, expected one")
    release = found[0]
    rendered = charts.render(helm, chart, release, kube_version=kube_version)
    flags, notes = chart_flags(rendered)
    from gpupools.sim import warm

    flags, warm_notes = warm.autoscaler_flags(flags)
    notes += warm_notes
    container = rendered.container()
    for name, source in sorted(container.env_from.items()):
        notes.append(f"env {name} from {source} not set (no pod to resolve it for)")
    notes.append(f"runs cluster-autoscaler {VERSION} (the sim's build), the version of the sim's Kubernetes minor")
    return Plan(flags, dict(container.env), rendered.objects, rendered.service_account, [*notes, *rendered.notes])


def service_account_kubeconfig(
    state: ClusterState, client: Client, namespace: str, name: str, *, server: str | None = None
) -> Path:
    """A kubeconfig with a token of ``namespace/name`` (TokenRequest API), for a controller that
    must run with its chart's RBAC; ``server`` the API server's address as the controller reaches it
    (default the sim's; Karpenter's is the relay inside its network namespace)."""
    response = client.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 86400}},
    )
    token = str(response["status"]["token"])
    files = pki.Pki(state.path / "pki")
    path = state.path / f"{name}.kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sim", "cluster": {"server": server or state.server, "certificate-authority": str(files.ca_cert)}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": name}}],
        "current-context": "sim",
    }
    return control_plane.write_kubeconfig(path, config)


def kwok_provider_rbac(service_account: str) -> list[dict[str, Any]]:
    """The sim's one addition to the chart's RBAC (``KWOK_PROVIDER_RULES``), bound to its ServiceAccount."""
    return charts.sim_cluster_role("gpupools-sim-kwok-provider", KWOK_PROVIDER_RULES, service_account, NAMESPACE)


def prepare(client: Client, autoscaler_plan: Plan) -> None:
    """Apply the chart's objects (EKS) and the sim's KWOK-provider RBAC before the stack's objects."""
    rbac = kwok_provider_rbac(autoscaler_plan.service_account) if autoscaler_plan.service_account else []
    charts.apply_release(client, autoscaler_plan.objects, rbac)


def start(
    state: ClusterState,
    binary: Path,
    stack_objects: StackObjects,
    autoscaler_plan: Plan,
    unavailable_pools: Sequence[str] = (),
) -> processes.Controller:
    """Write the provider's ConfigMaps and start cluster-autoscaler; returns once ``/health-check``
    answers and its status ConfigMap exists (its first loop ran)."""
    client = state.client()
    for manifest in config_maps(stack_objects, unavailable_pools):
        client.apply(manifest)
    if autoscaler_plan.service_account:
        kubeconfig = service_account_kubeconfig(state, client, NAMESPACE, autoscaler_plan.service_account)
    else:
        kubeconfig = processes.admin_kubeconfig(state)
    port = free_port()
    argv = [str(binary), *autoscaler_plan.flags, f"--kubeconfig={kubeconfig}", f"--address={HOST}:{port}"]
    controller = processes.Controller(
        name=NAME,
        argv=argv,
        env={
            **autoscaler_plan.env,
            "KWOK_PROVIDER_MODE": "local",
            "KUBECONFIG": str(kubeconfig),
            "POD_NAMESPACE": NAMESPACE,
            "KWOK_PROVIDER_CONFIGMAP": PROVIDER_CONFIG,
        },
        ports={"metrics": port},
        extra={
            "stack": stack_objects.stack,
            "unavailable": ",".join(sorted(unavailable_pools)),
            "identity": f"ServiceAccount {NAMESPACE}/{autoscaler_plan.service_account}"
            if autoscaler_plan.service_account
            else "admin",
            "notes": "\n".join(autoscaler_plan.notes),
        },
    )

    def ready() -> bool:
        if not _http_ok(f"http://{HOST}:{port}/health-check"):
            return False
        return (
            client.get({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": STATUS_CONFIG_MAP, "namespace": NAMESPACE}})
            is not None
        )

    return processes.start(state, controller, ready)


def stop(state: ClusterState) -> bool:
    """Stop cluster-autoscaler with SIGKILL: on SIGTERM it runs its cloud provider's ``Cleanup``
    (``main.go`` -> ``StaticAutoscaler.ExitCleanUp``), which for the KWOK provider deletes every node
    of its groups (``kwok_provider.go``, ``Cleanup``); a cloud's provider leaves its instances running
    when the autoscaler restarts, so the sim's restart (``spot``) must leave the nodes too."""
    return processes.stop(state, NAME, first_signal=signal.SIGKILL)
