"""Karpenter in the sim: the real Karpenter core (sigs.k8s.io/karpenter v1.14.1) with its KWOK cloud
provider, run against a Karpenter or NAP stack's own NodePools.

What is the stack's, unchanged: every NodePool (weights, limits, requirements, taints, template
labels, disruption: ``consolidateAfter``, ``consolidationPolicy``, budgets) and every NodeOverlay (the
GPU slots of shared pools), as the stack program registers them.

**The stack's chart** (EKS Karpenter stacks; ``plan``): the stack's ``karpenter`` Helm release is
rendered with its own values from ``charts/karpenter`` of karpenter-provider-aws v1.14.1
(``gpupools.sim.charts``). Every rendered object but the Deployment is applied before the stack's
objects (ServiceAccount, ClusterRoles, Roles and their bindings, Service, PodDisruptionBudget; the
chart renders no CRD, webhook or ConfigMap at v1.14.1). The KWOK binary runs with the rendered
container's environment (``FEATURE_GATES`` from ``settings.featureGates``, ``BATCH_*``, the policies,
``LOG_LEVEL``, ``MEMORY_LIMIT`` and ``CPU_REQUESTS`` from the container's resources, as the kubelet
resolves them), except the overrides of ``OVERRIDES``, each with its reason; settings only the AWS
provider reads (``CLUSTER_NAME``, ``INTERRUPTION_QUEUE``, ...: not in ``KWOK_BINARY_ENV``) are passed
and have no effect, said in ``sim status``. It runs under a token of the chart's ServiceAccount
(``kube-system/karpenter``), so the chart's RBAC is what it has, plus one ClusterRole of the sim's
(``KWOK_PROVIDER_RULES``) for what the KWOK provider does that the AWS one does not. NAP stacks
register no Karpenter chart (AKS runs NAP's Karpenter in its control plane): Karpenter runs there
with the sim's admin identity and its own defaults (``DEFAULT_ENV``), said in ``sim status``.

The one change: each NodePool's ``spec.template.spec.nodeClassRef`` points at a ``KWOKNodeClass`` of
the same name (``karpenter.kwok.sh``), because the KWOK provider resolves only its own node class
and fails a launch whose class it cannot find (sigs.k8s.io/karpenter v1.14.1
``kwok/cloudprovider/cloudprovider.go``, ``Create`` / ``resolveNodeClassFromNodeClaim``).

The instance types (``--instance-types-file-path``, ``kwok/options/options.go``) come from gpupools'
size catalog, one entry per size any NodePool allows: capacity (vCPUs, memory, GPUs) from
``gpupools.catalog``; one offering per (zone the NodePools allow, Spot or on-demand as they allow),
priced from ``gpupools.catalog.prices`` (placeholders where it has no figure: ``offering_prices``); a
reserved offering per capacity reservation of an EKS pool whose NodePool allows ``reserved``
(``reserved_offerings``); and, as
single-valued offering requirements, the labels the cloud's provider puts on its nodes, which the
KWOK provider copies onto the Node (``addInstanceLabels``): on EKS
``karpenter.k8s.aws/instance-{family,size,cpu,memory,gpu-count}`` (karpenter-provider-aws v1.14.1
``pkg/providers/instancetype/types.go``, ``computeRequirements``), on AKS
``karpenter.azure.com/sku-{name,cpu,memory,gpu-count}`` (karpenter-provider-azure v1.14.2
``pkg/providers/instancetype/instancetype.go``), and the region.

**A Spot shortage** (``spot``): the KWOK provider marks every offering of its file available
(``setDefaultOptions``: ``opts.Offerings[i].Available = true``), so an "unavailable" flag in the file
would be ignored. The real mechanism is the one a shortage has for Karpenter's scheduler: the pool's
sizes have no Spot offering. ``spot --unavailable`` rewrites the file without the Spot offerings of
the pool's sizes and restarts the provider (it reads the file once, at start); Karpenter then
launches what the NodePool allows next (on-demand, or another NodePool by weight). What this does not
reproduce: a launch that fails with InsufficientCapacity after the decision (Karpenter's
``unavailableOfferings`` cache), since the KWOK provider never fails a launch with an existing class.

**Its network namespace**: Karpenter binds its metrics and health servers to every interface
(v1.14.1 ``pkg/operator/operator.go``, no bind-address option), so it runs in a network namespace of
its own behind the relays of ``gpupools.sim.relay`` (that module's docstring): its kubeconfig names
the in-namespace relay ``127.0.0.1:6443``, its health is read through ``karpenter-health.sock``.

Node capacity: the KWOK provider writes the instance type's own allocatable on the Node, not the
NodeOverlay's (``toNode``: "NodeOverlay will not apply"), and no device plugin runs on a KWOK node.
So a shared pool's node advertises its GPUs, not its slots: Karpenter's packing decision (how many
slot requests one NodeClaim takes) is observable on the NodeClaim, not by running the pods.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.prices import price_table
from gpupools.conventions import GPU_RESOURCE, KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL
from gpupools.sim import charts, control_plane, node_shapes, pki, processes, relay
from gpupools.sim.build import KARPENTER_RESERVATION_ID_LABEL, Build
from gpupools.sim.control_plane import HOST, ClusterState, SimError
from gpupools.sim.kube import Client
from gpupools.sim.objects import StackObjects
from gpupools.specs import Cloud, PoolSpec, Provisioner

NAME = "karpenter"
RELAY = "karpenter-relay"
"""The host side of Karpenter's API-server bridge (``gpupools.sim.relay``), a controller record of its own."""
KWOK_GROUP = "karpenter.kwok.sh"
KWOK_NODE_CLASS = {"apiVersion": f"{KWOK_GROUP}/v1alpha1", "kind": "KWOKNodeClass"}
INSTANCE_TYPES_FILE = "karpenter-instance-types.json"

DEFAULT_FEATURE_GATES = {
    "NodeRepair": "false",
    "ReservedCapacity": "true",
    "SpotToSpotConsolidation": "false",
    "NodeOverlay": "false",
    "StaticCapacity": "false",
    "CapacityBuffer": "false",
}
"""Karpenter v1.14.1's own defaults (``pkg/operator/options/options.go``, ``--feature-gates``)."""

BATCH_IDLE_DURATION = "1s"
BATCH_MAX_DURATION = "10s"
"""Karpenter's defaults (``options.go``), which the stacks keep: a pending pod waits for 1 s of quiet
(at most 10 s) before the provisioner decides; part of the decision loop the sim measures."""

CHART = "karpenter"
NAMESPACE = "kube-system"
"""The stack's release namespace (``gpupools.aws.karpenter.NAMESPACE``): where the chart's ServiceAccount is."""

DEFAULT_ENV = {
    "FEATURE_GATES": ",".join(f"{k}={v}" for k, v in DEFAULT_FEATURE_GATES.items()),
    "BATCH_IDLE_DURATION": BATCH_IDLE_DURATION,
    "BATCH_MAX_DURATION": BATCH_MAX_DURATION,
    "DISABLE_LEADER_ELECTION": "true",
}
"""Karpenter's environment where the stack has no chart (NAP): its own defaults (``options.go``), and
one process without leader election (its namespace is a pod's, which a local process has not)."""

KWOK_BINARY_ENV = frozenset(
    {
        # sigs.k8s.io/karpenter v1.14.1 pkg/operator/options/options.go (AddFlags)
        "BATCH_IDLE_DURATION", "BATCH_MAX_DURATION", "CPU_REQUESTS", "DISABLE_CLUSTER_STATE_OBSERVABILITY",
        "DISABLE_CONTROLLER_WARMUP", "DISABLE_LEADER_ELECTION", "ENABLE_PROFILING", "FEATURE_GATES",
        "HEALTH_PROBE_PORT", "IGNORE_DRA_REQUESTS", "KARPENTER_SERVICE", "KUBE_CLIENT_BURST", "KUBE_CLIENT_QPS",
        "LEADER_ELECTION_NAME", "LEADER_ELECTION_NAMESPACE", "LOG_ERROR_OUTPUT_PATHS", "LOG_LEVEL",
        "LOG_OUTPUT_PATHS", "MEMORY_LIMIT", "METRICS_PORT", "MIN_VALUES_POLICY", "PREFERENCE_POLICY",
        # kwok/options/options.go
        "INSTANCE_TYPES_FILE_PATH",
    }
)  # fmt: skip
"""The settings Karpenter's core and KWOK provider read from the environment (a test checks the list
against the module's source); the AWS provider's own (``CLUSTER_NAME``, ``INTERRUPTION_QUEUE``,
``VM_MEMORY_OVERHEAD_PERCENT``, ...: karpenter-provider-aws ``pkg/operator/options/options.go``) are
not among them."""

OVERRIDES = {
    "KUBECONFIG": "a token of the chart's ServiceAccount, server the API-server relay inside Karpenter's network namespace",
    "INSTANCE_TYPES_FILE_PATH": "the KWOK provider's instance types from gpupools' size catalog (no EC2 API to ask)",
    "DISABLE_LEADER_ELECTION": "one process; with leader election, a restart (`sim spot`) waits out the previous "
    "process's lease (15 s): it cannot release it, its API-server relay stops with it (the chart's lease Role is unused)",
}
"""Environment the sim sets over the rendered container's, with the reason ``sim status`` gives. The
ports stay the rendered ones (8080, 8081): Karpenter has its network namespace to itself."""

KWOK_PROVIDER_RULES = [
    {"apiGroups": [KWOK_GROUP], "resources": ["kwoknodeclasses"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [KWOK_GROUP], "resources": ["kwoknodeclasses", "kwoknodeclasses/status"], "verbs": ["patch", "update"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["create"]},
]
"""What the KWOK provider needs beyond the AWS chart's RBAC, as sigs.k8s.io/karpenter v1.14.1's own
KWOK chart grants it: its node class in place of ``EC2NodeClass`` (``kwok/charts/templates/clusterrole-kwok.yaml``),
and ``create`` on nodes (``clusterrole.yaml``): the provider creates the Node itself
(``kwok/cloudprovider/cloudprovider.go``, ``Create``), where on EKS the instance's kubelet registers it."""
SIM_RBAC_NAME = "gpupools-sim-karpenter-kwok-provider"


def nodepools(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(m) for m in manifests if m["kind"] == "NodePool" and str(m["apiVersion"]).startswith("karpenter.sh/")]


def kwok_nodepools(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The stack's NodePools with ``nodeClassRef`` pointed at a KWOKNodeClass of the same name (the only change)."""
    swapped = []
    for nodepool in nodepools(manifests):
        nodepool = copy.deepcopy(nodepool)
        ref = nodepool["spec"]["template"]["spec"]["nodeClassRef"]
        ref.update({"group": KWOK_GROUP, "kind": KWOK_NODE_CLASS["kind"]})
        swapped.append(nodepool)
    return swapped


def node_classes(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One empty KWOKNodeClass per node class the NodePools reference (no registration delay)."""
    names = sorted({str(n["spec"]["template"]["spec"]["nodeClassRef"]["name"]) for n in nodepools(manifests)})
    return [{**KWOK_NODE_CLASS, "metadata": {"name": name}, "spec": {}} for name in names]


def _requirement(nodepool: Mapping[str, Any], key: str) -> list[str]:
    for requirement in nodepool["spec"]["template"]["spec"].get("requirements") or []:
        if requirement.get("key") == key and requirement.get("operator") == "In":
            return [str(v) for v in requirement.get("values") or []]
    return []


AUTO_MODE_LABEL_PREFIX = "eks.amazonaws.com/instance-"
"""EKS Auto Mode labels its nodes ``eks.amazonaws.com/instance-*``, not ``karpenter.k8s.aws/instance-*``
("EKS Auto Mode uses different labels than Karpenter": EKS user guide ``automode/create-node-pool.adoc``)."""


def cloud_labels(cloud: Cloud, size: str, resources: node_shapes.Resources, auto_mode: bool = False) -> dict[str, str]:
    """The instance-type labels the cloud's Karpenter provider sets (module docstring, with sources);
    ``auto_mode``: EKS Auto Mode's spelling of the same facts (``AUTO_MODE_LABEL_PREFIX``)."""
    if cloud is Cloud.AWS and auto_mode:
        family, _, size_name = size.partition(".")
        labels = {
            f"{AUTO_MODE_LABEL_PREFIX}family": family,
            f"{AUTO_MODE_LABEL_PREFIX}size": size_name,
            f"{AUTO_MODE_LABEL_PREFIX}cpu": str(INSTANCE_TYPES[size].vcpus),
            f"{AUTO_MODE_LABEL_PREFIX}memory": str(INSTANCE_TYPES[size].memory_mib),
            "eks.amazonaws.com/compute-type": "auto",
        }
        if resources.gpus:
            labels[f"{AUTO_MODE_LABEL_PREFIX}gpu-count"] = str(resources.gpus)
            labels[f"{AUTO_MODE_LABEL_PREFIX}gpu-manufacturer"] = "nvidia"
        return labels
    if cloud is Cloud.AWS:
        family, _, size_name = size.partition(".")
        labels = {
            "karpenter.k8s.aws/instance-family": family,
            "karpenter.k8s.aws/instance-size": size_name,
            "karpenter.k8s.aws/instance-cpu": str(INSTANCE_TYPES[size].vcpus),
            "karpenter.k8s.aws/instance-memory": str(INSTANCE_TYPES[size].memory_mib),
        }
        if resources.gpus:
            labels["karpenter.k8s.aws/instance-gpu-count"] = str(resources.gpus)
        return labels
    labels = {
        "karpenter.azure.com/sku-name": size,
        "karpenter.azure.com/sku-cpu": str(resources.cpu),
        "karpenter.azure.com/sku-memory": str(resources.memory_mib),
    }
    if resources.gpus:
        labels["karpenter.azure.com/sku-gpu-count"] = str(resources.gpus)
    return labels


def _in(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": [value]}


PLACEHOLDER_ON_DEMAND = 1000.0
"""$/h of an on-demand offering whose size the price catalog has no on-demand figure for in the region
(a size synth accepts with a price footnote): a stated placeholder above every priced size, so
Karpenter, which launches the cheapest offering it may, takes any priced size the NodePool also
allows first. ``sim status`` lists each placeholder (``price_notes``)."""

SPOT_BELOW_ON_DEMAND = 0.999
"""A Spot offering whose size has no Spot figure is priced at the on-demand figure times this: just
below it, so Spot still comes before on-demand for that size, as the cloud's provider launches Spot
whenever the NodeClaim allows it (karpenter-provider-aws v1.14.1 ``pkg/providers/instance/instance.go``,
``getCapacityType``: reserved, then Spot, then on-demand), while the KWOK provider launches the
cheapest compatible offering (``toNode``): at the on-demand price its pick would be random."""

RESERVED_PRICE = 0.0
"""$/h of a reserved offering. karpenter-provider-aws v1.14.1 prices one at the on-demand price divided by
10,000,000, or 0 when it has no on-demand price (``pkg/providers/instancetype/offering/reserved_capacity_resolver.go``:
"treat the reservation as free ... If the pricing details are unavailable ... leave the price at
zero"). The sim takes 0: the KWOK provider's ``toNode`` (sigs.k8s.io/karpenter v1.14.1
``kwok/cloudprovider/cloudprovider.go``) picks the cheapest offering per instance type of the NodeClaim
and, for a type with no offering the NodeClaim allows (the pool's other sizes, once the NodeClaim is
narrowed to the reservation), compares a price of 0 and keeps no offering when the best so far costs
more, then dereferences it (observed: a nil-pointer panic on every launch of a two-size reserved pool).
At 0 the reserved offering is never displaced."""

RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
RESERVATION_INTERRUPTIBLE_LABEL = "karpenter.k8s.aws/capacity-reservation-interruptible"
"""The other two labels of a reserved offering (karpenter-provider-aws v1.14.1 ``pkg/apis/v1/labels.go``;
type ``default`` or ``capacity-block``, ``pkg/apis/v1/ec2nodeclass_status.go``), which reach the node."""


def offering_prices(stack_objects: StackObjects, size: str) -> tuple[float, float, str | None]:
    """(on-demand, Spot, note) $/h of ``size`` in the stack's region for its KWOK offerings: the price
    catalog's figures, else the placeholders above; the note says which placeholder and why (None
    when the on-demand figure is the catalog's)."""
    prices = price_table(stack_objects.spec.cloud)
    region = stack_objects.region
    price = prices.price(region, size)
    if price is None or price.on_demand is None:
        note = (
            f"{size}: no on-demand price in {region} ({prices.missing_reason(region, size)}); its KWOK offerings are "
            f"priced at a placeholder {PLACEHOLDER_ON_DEMAND:g} $/h (after every priced size), Spot just below it"
        )
        return PLACEHOLDER_ON_DEMAND, PLACEHOLDER_ON_DEMAND * SPOT_BELOW_ON_DEMAND, note
    if price.spot is None:
        return price.on_demand, price.on_demand * SPOT_BELOW_ON_DEMAND, None
    return price.on_demand, price.spot, None


def _pool_of(nodepool: Mapping[str, Any]) -> str:
    return str(((nodepool["spec"]["template"].get("metadata") or {}).get("labels") or {}).get(POOL_LABEL, ""))


def reserved_pools(stack_objects: StackObjects) -> list[tuple[PoolSpec, list[str]]]:
    """(pool, its NodePool's zones) of every EKS pool with reservations whose NodePool allows ``reserved``
    (``gpupools.kubernetes.karpenter.nodepool.capacity_types``; NAP refuses reservations)."""
    if stack_objects.spec.cloud is not Cloud.AWS:
        return []
    specs = {p.name: p for p in stack_objects.spec.pools if p.reservations}
    found = []
    for nodepool in nodepools(stack_objects.manifests):
        pool = specs.get(_pool_of(nodepool))
        if pool is not None and "reserved" in _requirement(nodepool, KARPENTER_CAPACITY_TYPE_LABEL):
            found.append((pool, _requirement(nodepool, "topology.kubernetes.io/zone")))
    return found


def _reservation_zone(zone: str | None, zones: Sequence[str]) -> str:
    """The reservation's zone: its own, else the NodePool's one zone (config rule: a reservation
    without ``zone`` is in a one-zone pool, ``gpupools.rules.check_reservations``)."""
    return zone or (zones[0] if zones else "")


def reserved_offerings(stack_objects: StackObjects, labels: Mapping[str, Mapping[str, str]]) -> dict[str, list[dict[str, Any]]]:
    """Size -> its reserved offerings: one per reservation of each pool of ``reserved_pools``, as the AWS
    provider builds one for a reservation its EC2NodeClass selects (``reserved_capacity_resolver.go``):
    capacity type ``reserved``, the reservation's zone, its ID (under ``KARPENTER_RESERVATION_ID_LABEL``),
    type and ``interruptible: false``, ``ReservationCapacity`` its instance count, priced at
    ``RESERVED_PRICE``. What the sim takes from the config because it cannot ask EC2: the instance
    type is the pool's first (a reservation is for one type: docs/eks.md), the zone the entry's or the
    pool's one zone, the count the entry's ``count``, else the pool's ``maxSize``
    (``ReservationSpec.reserved_max``). ``labels``: each size's cloud labels."""
    found: dict[str, list[dict[str, Any]]] = {}
    for pool, zones in reserved_pools(stack_objects):
        size = pool.instance_types[0]
        for reservation in pool.reservations:
            found.setdefault(size, []).append(
                {
                    "Price": RESERVED_PRICE,
                    "Available": True,
                    "ReservationCapacity": reservation.reserved_max(pool.max_size),
                    "Requirements": [
                        _in(KARPENTER_CAPACITY_TYPE_LABEL, "reserved"),
                        _in("topology.kubernetes.io/zone", _reservation_zone(reservation.zone, zones)),
                        _in(KARPENTER_RESERVATION_ID_LABEL, reservation.id),
                        _in(RESERVATION_TYPE_LABEL, "capacity-block" if reservation.capacity_block else "default"),
                        _in(RESERVATION_INTERRUPTIBLE_LABEL, "false"),
                        *(_in(k, v) for k, v in sorted(labels[size].items())),
                    ],
                }
            )
    return found


def instance_types(stack_objects: StackObjects, spot_unavailable: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The KWOK provider's instance-types file for the stack (module docstring). ``spot_unavailable``:
    pools whose sizes get no Spot offering. Every size synth accepts gets an entry: one the price
    catalog cannot price gets placeholder prices (``offering_prices``)."""
    cloud = stack_objects.spec.cloud
    region = stack_objects.region
    zones: dict[str, set[str]] = {}
    capacity_types: dict[str, set[str]] = {}
    no_spot: set[str] = set()
    for nodepool in nodepools(stack_objects.manifests):
        pool = _pool_of(nodepool)
        for size in _requirement(nodepool, "node.kubernetes.io/instance-type"):
            zones.setdefault(size, set()).update(_requirement(nodepool, "topology.kubernetes.io/zone") or [f"{region}-1"])
            allowed = set(_requirement(nodepool, KARPENTER_CAPACITY_TYPE_LABEL) or ["on-demand"])
            # ``reserved`` is offered per reservation (reserved_offerings), not per zone and size.
            capacity_types.setdefault(size, set()).update(allowed - {"reserved"})
            if pool in spot_unavailable:
                no_spot.add(size)
    resources = {size: node_shapes.resources_of(size) for size in zones}
    auto_mode = stack_objects.spec.provisioner is Provisioner.AUTO_MODE
    labels = {
        size: {"topology.kubernetes.io/region": region, **cloud_labels(cloud, size, resources[size], auto_mode)} for size in zones
    }
    reserved = reserved_offerings(stack_objects, labels)
    entries = []
    for size in sorted(zones):
        on_demand, spot, _ = offering_prices(stack_objects, size)
        offerings = list(reserved.get(size, []))
        for capacity in sorted(capacity_types[size]):
            if capacity == "spot" and size in no_spot:
                continue
            extra = []
            if cloud is Cloud.AZURE:
                # NAP labels a Spot node's priority as AKS does (node_shapes.AZURE_NAP_LABELS).
                extra.append(_in("kubernetes.azure.com/scalesetpriority", "spot" if capacity == "spot" else "regular"))
            for zone in sorted(zones[size]):
                offerings.append(
                    {
                        "Price": spot if capacity == "spot" else on_demand,
                        "Available": True,
                        "Requirements": [
                            _in(KARPENTER_CAPACITY_TYPE_LABEL, capacity),
                            _in("topology.kubernetes.io/zone", zone),
                            *(_in(k, v) for k, v in sorted(labels[size].items())),
                            *extra,
                        ],
                    }
                )
        shape = resources[size]
        quantities = {"cpu": str(shape.cpu), "memory": f"{shape.memory_mib}Mi", "ephemeral-storage": "100Gi"}
        if shape.gpus:
            quantities[GPU_RESOURCE] = str(shape.gpus)
        entries.append(
            {
                "name": size,
                "offerings": offerings,
                "architecture": shape.arch,
                "operatingSystems": ["linux"],
                "resources": quantities,
            }
        )
    return entries


@dataclass(frozen=True)
class Plan:
    """How the sim runs the stack's Karpenter: environment, identity, chart objects, notes."""

    env: dict[str, str]
    objects: list[dict[str, Any]]
    service_account: str | None
    """The chart's ServiceAccount in ``NAMESPACE``; None where the stack has no chart (admin identity)."""
    notes: list[str]


def kwok_provider_rbac(service_account: str) -> list[dict[str, Any]]:
    """The sim's one addition to the chart's RBAC (``KWOK_PROVIDER_RULES``), bound to its ServiceAccount."""
    return charts.sim_cluster_role(SIM_RBAC_NAME, KWOK_PROVIDER_RULES, service_account, NAMESPACE)


def chart_env(rendered: charts.Rendered) -> tuple[dict[str, str], list[str]]:
    """The rendered container's environment as the KWOK binary gets it (without ``OVERRIDES``), and
    the notes on what of it cannot apply here."""
    container = rendered.container()
    env = dict(container.env)
    notes = [
        f"env {name} from {source} not set (no pod to resolve it for)" for name, source in sorted(container.env_from.items())
    ]
    unread = sorted(set(env) - KWOK_BINARY_ENV)
    if unread:
        notes.append(
            f"env {', '.join(unread)} passed as rendered, read only by the AWS provider (no effect on the KWOK provider)"
        )
    return env, notes


def plan(stack_objects: StackObjects, build: Build, helm: Path | None = None) -> Plan:
    """Karpenter's environment, chart objects and identity for the stack (module docstring)."""
    found = charts.releases(stack_objects.run.registrations, CHART)
    if not found:
        return Plan(
            dict(DEFAULT_ENV),
            [],
            None,
            [
                "the stack registers no Karpenter chart (AKS runs Node Auto Provisioning's Karpenter, and EKS Auto Mode "
                "its own, in the control plane under the cloud's identity): the sim runs it as admin, with Karpenter's "
                "default settings"
            ],
        )
    if len(found) != 1:
        raise SimError(f"stack {stack_objects.stack} registers {len(found)} Karpenter Helm releases, expected one")
    release = found[0]
    module_version = build.versions[charts.CHART_MODULES[CHART][1]]
    charts.check_version(release, CHART, module_version)
    rendered = charts.render(
        helm or charts.helm(), charts.chart_path(build, CHART), release, kube_version=build.kubernetes_version
    )
    env, notes = chart_env(rendered)
    if rendered.service_account is None:
        raise SimError(f"the {CHART} chart rendered no workload for release {rendered.release}")
    notes += [f"{name} set by the sim: {why}" for name, why in OVERRIDES.items()]
    notes.append(
        f"ClusterRole {SIM_RBAC_NAME} added, bound to ServiceAccount {NAMESPACE}/{rendered.service_account}: "
        "KWOKNodeClasses (in place of EC2NodeClasses) and nodes create (the KWOK provider creates the Node a kubelet would register)"
    )
    notes += charts.webhook_notes(rendered)
    notes += charts.crd_notes(rendered, ())
    notes.append(f"rendered from charts/karpenter of github.com/aws/karpenter-provider-aws {module_version}")
    notes.append(
        f"runs the sim's build of sigs.k8s.io/karpenter {build.versions.get('sigs.k8s.io/karpenter', '')} (KWOK provider)"
    )
    return Plan(env, rendered.objects, rendered.service_account, [*notes, *rendered.notes])


def prepare(client: Client, karpenter_plan: Plan) -> None:
    """Apply the chart's objects and the sim's KWOK-provider RBAC (before the stack's objects)."""
    rbac = kwok_provider_rbac(karpenter_plan.service_account) if karpenter_plan.service_account else []
    charts.apply_release(client, karpenter_plan.objects, rbac)


def price_notes(stack_objects: StackObjects) -> list[str]:
    """What ``sim status`` says of the instance types: each size priced at a placeholder, and each
    reserved offering with what the sim does not model about it."""
    sizes = sorted({s for n in nodepools(stack_objects.manifests) for s in _requirement(n, "node.kubernetes.io/instance-type")})
    notes = [note for size in sizes if (note := offering_prices(stack_objects, size)[2]) is not None]
    for pool, zones in reserved_pools(stack_objects):
        for reservation in pool.reservations:
            notes.append(
                f"reserved offering {reservation.id} of pool {pool.name} ({pool.instance_types[0]} in "
                f"{_reservation_zone(reservation.zone, zones)}, {reservation.reserved_max(pool.max_size)} instances): "
                "the sim never counts it down (the KWOK provider's offerings are fixed), so launches past its count are reserved too"
            )
    return notes


def uses_karpenter(stack_objects: StackObjects) -> bool:
    return bool(nodepools(stack_objects.manifests))


def write_instance_types(state: ClusterState, stack_objects: StackObjects, spot_unavailable: Sequence[str]) -> Path:
    path = state.path / INSTANCE_TYPES_FILE
    path.write_text(json.dumps(instance_types(stack_objects, spot_unavailable), indent=2) + "\n")
    return path


def install_crds(client: Client, build: Build) -> None:
    """The KWOK provider's own CRD (``KWOKNodeClass``). The ``karpenter.sh`` CRDs stay those of the
    stack's cloud provider (installed with the stack's objects): they accept any node class group
    and validate the stack's NodePools as the cloud's API server would."""
    from gpupools.sim import objects

    objects.install_crds(client, [c for c in objects.crd_index(build.controllers) if c.group == KWOK_GROUP])


def sim_manifests(manifests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The stack's objects as the sim applies them under Karpenter: the KWOKNodeClasses first, then
    every object with its NodePools' ``nodeClassRef`` swapped (on create: the field is immutable)."""
    swapped = {n["metadata"]["name"]: n for n in kwok_nodepools(manifests)}
    rest = [swapped.get(m["metadata"]["name"], dict(m)) if m["kind"] == "NodePool" else dict(m) for m in manifests]
    return [*node_classes(manifests), *rest]


NAMESPACE_PORTS = {"api": 6443, "metrics": 8080, "health": 8081}
"""Ports inside Karpenter's network namespace, where nothing else listens: the API server's relay and
Karpenter's own metrics and health defaults (``pkg/operator/options/options.go``)."""
API_SOCKET = "karpenter-api.sock"
HEALTH_SOCKET = "karpenter-health.sock"


def sockets(state: ClusterState) -> dict[str, Path]:
    """The Unix sockets that bridge Karpenter's network namespace and the host (``gpupools.sim.relay``)."""
    return {"api": state.path / API_SOCKET, "health": state.path / HEALTH_SOCKET}


def namespace_server() -> str:
    """The API server as Karpenter sees it: the relay inside its network namespace (the API server's
    certificate covers 127.0.0.1)."""
    return f"https://{HOST}:{NAMESPACE_PORTS['api']}"


def namespace_kubeconfig(state: ClusterState) -> Path:
    """The admin kubeconfig with the in-namespace relay as server (NAP stacks: no chart, no ServiceAccount)."""
    path = state.path / "karpenter.kubeconfig"
    files = pki.Pki(state.path / "pki")
    control_plane.write_kubeconfig(path, control_plane.kubeconfig(namespace_server(), files, "admin", f"sim-{state.stack}"))
    return path


def kubeconfig(state: ClusterState, karpenter_plan: Plan) -> Path:
    """Karpenter's kubeconfig: a token of the chart's ServiceAccount, or admin where there is no chart."""
    if karpenter_plan.service_account is None:
        return namespace_kubeconfig(state)
    from gpupools.sim import autoscaler

    return autoscaler.service_account_kubeconfig(
        state, state.client(), NAMESPACE, karpenter_plan.service_account, server=namespace_server()
    )


def environment(karpenter_plan: Plan, kubeconfig_path: Path, instance_types_path: Path) -> dict[str, str]:
    """The process environment: the plan's (rendered or default) with the sim's ``OVERRIDES``."""
    env = {
        **karpenter_plan.env,
        "KUBECONFIG": str(kubeconfig_path),
        "INSTANCE_TYPES_FILE_PATH": str(instance_types_path),
        "DISABLE_LEADER_ELECTION": "true",
    }
    env.setdefault("METRICS_PORT", str(NAMESPACE_PORTS["metrics"]))
    env.setdefault("HEALTH_PROBE_PORT", str(NAMESPACE_PORTS["health"]))
    return env


def commands(state: ClusterState, build: Build) -> dict[str, list[str]]:
    """The host relay's and Karpenter's command lines: Karpenter in a network namespace of its own
    (``unshare --net``) behind the relays of ``gpupools.sim.relay`` (its docstring says why)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise SimError("Karpenter runs in its own network namespace and `unshare` (util-linux) is not on PATH")
    paths = sockets(state)
    script = [sys.executable, str(Path(relay.__file__).resolve())]
    for path in paths.values():
        relay.parse_endpoint(f"unix:{path}")  # RelayError naming a path too long for a Unix socket
    return {
        RELAY: [*script, f"unix:{paths['api']}=tcp:{HOST}:{state.ports['kube-apiserver']}"],
        NAME: [
            unshare,
            "--net",
            "--",
            *script,
            "--lo-up",
            f"tcp:{HOST}:{NAMESPACE_PORTS['api']}=unix:{paths['api']}",
            f"unix:{paths['health']}=tcp:{HOST}:{NAMESPACE_PORTS['health']}",
            "--",
            str(build.binary("karpenter-kwok")),
        ],
    }


def start(
    state: ClusterState,
    build: Build,
    stack_objects: StackObjects,
    spot_unavailable: Sequence[str] = (),
    karpenter_plan: Plan | None = None,
) -> processes.Controller:
    """Start Karpenter (KWOK provider) for the stack in its own network namespace, with the host side
    of its API-server relay first; returns once its health probe answers through its socket.
    ``karpenter_plan``: ``plan``'s (rendered again when None, as ``spot`` restarts it)."""
    karpenter_plan = karpenter_plan or plan(stack_objects, build)
    path = write_instance_types(state, stack_objects, spot_unavailable)
    argv = commands(state, build)
    env = environment(karpenter_plan, kubeconfig(state, karpenter_plan), path)
    if int(env["HEALTH_PROBE_PORT"]) != NAMESPACE_PORTS["health"]:
        raise SimError(
            f"Karpenter's rendered HEALTH_PROBE_PORT is {env['HEALTH_PROBE_PORT']}, the sim relays {NAMESPACE_PORTS['health']}"
        )
    paths = sockets(state)
    processes.start(
        state,
        processes.Controller(
            name=RELAY,
            argv=argv[RELAY],
            env={},
            ports={},
            extra={
                "socket": str(paths["api"]),
                "identity": "none (it relays Karpenter's connections; no credentials of its own)",
            },
        ),
        paths["api"].exists,
    )
    controller = processes.Controller(
        name=NAME,
        argv=argv[NAME],
        env=env,
        ports={"api": NAMESPACE_PORTS["api"], "metrics": int(env["METRICS_PORT"]), "health": int(env["HEALTH_PROBE_PORT"])},
        extra={
            "stack": stack_objects.stack,
            "spotUnavailable": ",".join(sorted(spot_unavailable)),
            "networkNamespace": "own (unshare --net); ports are the namespace's",
            "identity": f"ServiceAccount {NAMESPACE}/{karpenter_plan.service_account}"
            if karpenter_plan.service_account
            else "admin",
            "notes": "\n".join([*karpenter_plan.notes, *price_notes(stack_objects)]),
        },
    )
    try:
        return processes.start(state, controller, lambda: relay.unix_http_ok(str(paths["health"]), "/healthz"))
    except SimError:
        stop(state)
        raise


def stop(state: ClusterState) -> bool:
    """Stop Karpenter and its host relay and remove their sockets; True when Karpenter was running."""
    running = processes.stop(state, NAME)
    processes.stop(state, RELAY)
    for path in sockets(state).values():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return running
