"""Synth diff: what a change does to the desired state, as Markdown for a pull-request comment.

Two documents (``desired-state.json`` from ``python -m gpupools.synth``) are compared resource
by resource, by address:

* **added** and **removed** resources;
* **changed** resources with every changed field as a path (``inputs.maxCount``,
  ``inputs.nodeLabels["gpupools.io/pool"]``, ``options.ignoreChanges``), old -> new. Lists of
  scalars (instance types, zones) are compared whole; lists of objects element by element.

Two kinds of change are flagged, because they are the expensive ones to miss in review:

* **replaces** (the cloud resource is deleted and created again): a changed input listed in the
  resource's own ``replaceOnChanges`` option; an input the provider itself replaces on
  (``PROVIDER_REPLACE_FIELDS``: the pulumi-azure-native ``forceNew`` map for AKS, the
  ``ForceNew`` schema fields of ``aws_eks_node_group`` behind pulumi-aws); a name-like input
  (``NAME_FIELDS``: ``agentPoolName``, ``nodeGroupName``, ``metadata.name``, ...); a new parent or
  provider (a new URN without an alias).
* **capacity/cost**: capacity type (``capacityType``, ``scaleSetPriority``, ``spotMaxPrice``),
  instance types (``instanceTypes``, ``vmSize``), node counts (``maxCount``, ``minCount``,
  ``scalingConfig.maxSize``, ``scalingConfig.minSize``, ...), wherever they appear in a resource's
  inputs (``agentPoolProfiles[0].maxCount`` counts), and every added or removed pool or node group.

Everything here is a pure function of the two documents. The command line also synthesizes the
documents itself, for the working tree and for a git ref (``--git-base``): the base tree is
exported with ``git archive`` into a temporary directory and synthesized there by its own code in a
subprocess, so a pull request that changes the library is compared with the library it replaces.

Usage::

    python -m gpupools.synth diff OLD.json NEW.json
    python -m gpupools.synth diff --git-base origin/main              # every committed stack
    python -m gpupools.synth diff --git-base origin/main azure-dev --output diff.md
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gpupools.capacity import SCENARIO_NAMES, Scenario
from gpupools.synth import EXIT_CONFIG_ERROR, committed_stacks, config_error_in, default_root, synthesize
from gpupools.synth.summary import fleet_total


@dataclass(frozen=True, order=True)
class Keyed:
    """A list element found by its ``name`` (rendered ``[name=t4]``), not by its position.

    Lists of objects that all carry a distinct ``name`` (node pools, containers, inline agent
    pool profiles, env vars) are diffed by name, so adding one element does not show every later
    element as changed.
    """

    key: str
    value: str

    def __str__(self) -> str:
        return f"[{self.key}={self.value}]"


Segment = str | int | Keyed
"""One step of a property path: a key, a list index, or a list element by name."""


class _Missing:
    """Marks a side of a change where the field does not exist."""

    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()

COMMENT_MARKER = "<!-- gpupools-synth-diff -->"
"""First line of the PR comment; the commenting workflow finds its earlier comment by it."""

COMMENT_LIMIT = 60_000
"""GitHub rejects comments over 65,536 characters; the Markdown is cut below that, with a note."""

PROVIDER_REPLACE_FIELDS: dict[str, tuple[str, ...]] = {
    # pulumi-azure-native forceNew map (see the AKS reference notes, section 1.4).
    "azure-native:containerservice:AgentPool": ("gpuInstanceProfile", "vmSize", "nodePublicIPTags"),
    "azure-native:containerservice:ManagedCluster": (
        "diskEncryptionSetID",
        "dnsPrefix",
        "fqdnSubdomain",
        "linuxProfile",
        "location",
        "nodeResourceGroup",
        "windowsProfile",
        "networkProfile.serviceCidr",
        "networkProfile.serviceCidrs",
        "networkProfile.podCidr",
        "networkProfile.podCidrs",
        "networkProfile.dnsServiceIP",
        "networkProfile.networkMode",
        "networkProfile.networkPlugin",
        "networkProfile.networkPluginMode",
        "networkProfile.networkDataplane",
        "networkProfile.networkPolicy",
        "networkProfile.outboundType",
        "networkProfile.ipFamilies",
    ),
    # terraform-provider-aws internal/service/eks/node_group.go: the ForceNew schema fields.
    "aws:eks/nodeGroup:NodeGroup": (
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    ),
    # pulumi-eks v4.3.0 nodejs/eks/cluster/cluster.ts, createCore: the arguments that reach a
    # force-new field of its aws.eks.Cluster (terraform-provider-aws v6 internal/service/eks/cluster.go:
    # name, role_arn, kubernetes_network_config.service_ipv4_cidr and .ip_family ForceNew; subnets and
    # security groups in place since v5.25.0). serviceRole is a resource reference: the upgrade model
    # (tests/upgrade/plan.py) compares the physical role instead.
    "eks:index:Cluster": ("name", "kubernetesServiceIpAddressRange", "ipFamily"),
    # terraform-provider-aws v6 internal/service/iam/*.go: ForceNew schema fields.
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": ("url",),
    "aws:iam/role:Role": ("path",),
    "aws:iam/policy:Policy": ("path", "description"),
    "aws:iam/instanceProfile:InstanceProfile": ("path",),
    "aws:iam/rolePolicy:RolePolicy": ("role",),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("role", "policyArn"),
    # internal/service/eks/access_entry.go, addon.go, pod_identity_association.go.
    "aws:eks/accessEntry:AccessEntry": ("principalArn", "type"),
    "aws:eks/addon:Addon": ("addonName", "namespaceConfig"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("namespace", "serviceAccount"),
    # internal/service/sqs/queue.go, internal/service/events/rule.go.
    "aws:sqs/queue:Queue": ("fifoQueue",),
    "aws:cloudwatch/eventRule:EventRule": ("eventBusName",),
}
"""Inputs whose change makes the provider replace the resource even without ``replaceOnChanges``
(name inputs are ``NAME_FIELDS``, for every type)."""

NAME_FIELDS = frozenset(
    {
        "name",
        "namePrefix",
        "agentPoolName",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "resourceName",
        "resourceGroupName",
        "clusterName",
        "virtualNetworkName",
        "subnetName",
        "roleAssignmentName",
    }
)
"""Top-level inputs that name the cloud resource: a new value is a new resource."""

KUBERNETES_IDENTITY = (("metadata", "name"), ("metadata", "namespace"), ("apiVersion",), ("kind",))
"""Kubernetes object fields that identify the object: a change replaces it."""

CAPACITY_FIELDS = frozenset(
    {
        # capacity type
        "capacityType",
        "scaleSetPriority",
        "spotMaxPrice",
        "scaleSetEvictionPolicy",
        # instance types
        "instanceTypes",
        "instanceType",
        "vmSize",
        # node counts
        "maxCount",
        "minCount",
        "maxSize",
        "minSize",
        "count",
        "desiredSize",
        "enableAutoScaling",
        # GPU partitioning changes how many GPUs a node offers
        "gpuInstanceProfile",
    }
)
"""Input keys that change what a pool can buy or what it costs, wherever they appear in the inputs."""

POOL_TYPES = frozenset(
    {
        "azure-native:containerservice:AgentPool",
        "azure-native:containerservice:ManagedCluster",
        "aws:eks/nodeGroup:NodeGroup",
        "aws:autoscaling/group:Group",
        "kubernetes:karpenter.sh/v1:NodePool",
    }
)
"""Resource types whose addition or removal changes capacity (and so cost)."""

NODEPOOL_CAPACITY_PATHS: tuple[tuple[str, ...], ...] = (
    ("inputs", "spec", "limits"),
    ("inputs", "spec", "weight"),
    ("inputs", "spec", "template", "spec", "requirements"),
)
"""Where a Karpenter NodePool says what it may buy: its limits (``maxSize``), its weight (which pool
is preferred) and its requirements (instance types, zones, capacity types)."""

ADDED_REMOVED_DETAIL = ("vmSize", "instanceTypes", "capacityType", "scaleSetPriority", "minCount", "maxCount", "scalingConfig")
"""Inputs shown on the line of an added or removed resource."""


# --- paths ----------------------------------------------------------------------------------------

_SIMPLE_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*\Z")


def format_path(segments: Sequence[Segment]) -> str:
    """``("inputs", "nodeLabels", "gpupools.io/pool")`` -> ``inputs.nodeLabels["gpupools.io/pool"]``."""
    out = ""
    for segment in segments:
        if isinstance(segment, Keyed):
            out += str(segment)
        elif isinstance(segment, int):
            out += f"[{segment}]"
        elif _SIMPLE_KEY.match(segment):
            out += f".{segment}" if out else segment
        else:
            out += f"[{json.dumps(segment)}]"
    return out


def parse_path(path: str) -> tuple[Segment, ...]:
    """A Pulumi property path (``a.b[0].c``, ``a[*]``, ``a["x.y"]``, ``*``) as segments; ``*`` stays ``"*"``."""
    segments: list[Segment] = []
    index = 0
    token = ""
    while index < len(path):
        char = path[index]
        if char == ".":
            if token:
                segments.append(token)
            token = ""
        elif char == "[":
            if token:
                segments.append(token)
            token = ""
            end = path.index("]", index)
            inner = path[index + 1 : end]
            if inner.startswith('"'):
                end = path.index('"]', index + 2) + 1
                segments.append(json.loads(path[index + 1 : end]))
            elif inner == "*":
                segments.append("*")
            else:
                segments.append(int(inner))
            index = end
        else:
            token += char
        index += 1
    if token:
        segments.append(token)
    return tuple(segments)


def path_matches(pattern: Sequence[Segment], segments: Sequence[Segment]) -> bool:
    """True if a change at ``segments`` touches the property ``pattern`` names (``*`` matches any one step).

    A change below the pattern (``vmSize`` vs ``vmSize``; ``gpuProfile`` vs ``gpuProfile.driver``)
    and a change of a whole object above it (``gpuProfile`` added vs ``gpuProfile.driver``) both count.
    """
    return all(want in ("*", have) for want, have in zip(pattern, segments, strict=False))


LIST_KEY = "name"
"""The field that identifies an element of a list of objects (see ``Keyed``)."""


def _list_keys(items: list[Any]) -> list[Keyed] | None:
    names = [item.get(LIST_KEY) if isinstance(item, dict) else None for item in items]
    if names and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
        return [Keyed(LIST_KEY, str(n)) for n in names]
    return None


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) and type(a) is type(b)


def _is_object_list(value: Any) -> bool:
    return isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value)


def diff_values(old: Any, new: Any, prefix: tuple[Segment, ...] = ()) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    """The changes from ``old`` to ``new`` as ``(path, old value, new value)``, ``MISSING`` where absent.

    Dicts are compared key by key. Lists of scalars (instance types, zones) are compared whole.
    Lists of objects are compared element by element: by ``name`` when every element on both
    sides has a distinct one (``[name=t4]``), else by index. A key or element present on one side
    only is one change carrying the whole value, not one change per leaf.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        changes = []
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                changes.append(((*prefix, key), old.get(key, MISSING), new.get(key, MISSING)))
            else:
                changes += diff_values(old[key], new[key], (*prefix, key))
        return changes
    if _is_object_list(old) and _is_object_list(new):
        old_keys, new_keys = _list_keys(old), _list_keys(new)
        if old_keys is not None and new_keys is not None:
            before: dict[Segment, Any] = dict(zip(old_keys, old, strict=True))
            after: dict[Segment, Any] = dict(zip(new_keys, new, strict=True))
        else:
            before, after = dict(enumerate(old)), dict(enumerate(new))
        changes = []
        for key in sorted(set(before) | set(after), key=_segment_sort_key):
            if key not in before or key not in after:
                changes.append(((*prefix, key), before.get(key, MISSING), after.get(key, MISSING)))
            else:
                changes += diff_values(before[key], after[key], (*prefix, key))
        return changes
    return [] if _same(old, new) else [(prefix, old, new)]


def _segment_sort_key(segment: Segment) -> tuple[int, str]:
    return (0, f"{segment:09d}") if isinstance(segment, int) else (1, str(segment))


# --- the diff -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldChange:
    """One changed leaf: its path, both values (``MISSING`` where absent) and why it is flagged."""

    segments: tuple[Segment, ...]
    old: Any
    new: Any
    replaces: str = ""
    capacity: str = ""
    ignored: str = ""
    """The ``ignoreChanges`` entry covering this field: the value is sent on create only."""

    @property
    def path(self) -> str:
        return format_path(self.segments)


@dataclass(frozen=True)
class ResourceChange:
    """A resource present in both documents with at least one changed field."""

    address: str
    type: str
    name: str
    fields: tuple[FieldChange, ...]

    @property
    def replaces(self) -> bool:
        return any(f.replaces for f in self.fields)

    @property
    def capacity(self) -> bool:
        return any(f.capacity for f in self.fields)


@dataclass(frozen=True)
class CostFigureChange:
    """One fleet cost figure before and after (``None``: unknown price or not computed)."""

    label: str
    before: float | None
    after: float | None
    before_exact: bool = True
    after_exact: bool = True
    """False where the figure is an upper bound: an unknown Spot price counted at on-demand
    (``gpupools.pricing.estimate``, the ``cost`` output's ``exact``)."""

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None or not (self.before_exact and self.after_exact):
            return None  # a bound minus a figure is neither
        return self.after - self.before


@dataclass(frozen=True)
class PoolCostChange:
    """A pool's cost per hour at max of one capacity type, before and after (0 where it did not exist)."""

    pool: str
    capacity: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


COST_FIGURES = {
    SCENARIO_NAMES[Scenario.IDLE]: "idlePerHour",
    SCENARIO_NAMES[Scenario.SPOT_FIRST]: "spotAtMaxPerHour",
    SCENARIO_NAMES[Scenario.SPOT_GONE]: "onDemandInsteadAtMaxPerHour",
    SCENARIO_NAMES[Scenario.CEILING]: "ceilingPerHour",
    "monthly estimate": "monthly",
}
"""The ``cost`` output's figures the diff reports, per hour except the monthly estimate, under the
names the synth summary gives the same states (``gpupools.capacity.SCENARIO_NAMES``)."""


def _cost_of(document: Mapping[str, Any] | None) -> Mapping[str, Any]:
    cost = ((document or {}).get("outputs") or {}).get("cost")
    return cost if isinstance(cost, Mapping) else {}


EXACT_KEYS = {
    "idlePerHour": Scenario.IDLE.value,
    "spotAtMaxPerHour": Scenario.SPOT_FIRST.value,
    "onDemandInsteadAtMaxPerHour": Scenario.SPOT_GONE.value,
    "ceilingPerHour": Scenario.CEILING.value,
}


def figure_exact(cost: Mapping[str, Any], key: str) -> bool:
    """Whether the ``cost`` output's figure ``key`` is exact (not a bound resting on an unknown
    price): its state's ``exact`` entry; the monthly estimate is exact when no price is unknown.
    Documents written before bounds existed: exact."""
    if key in EXACT_KEYS:
        return bool((cost.get("exact") or {}).get(EXACT_KEYS[key], True))
    return not cost.get("unknownParts")


def cost_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> tuple[CostFigureChange, ...]:
    """The fleet cost figures that differ between the documents' ``cost`` outputs (in value, or
    in being exact or a bound)."""
    before, after = _cost_of(old), _cost_of(new)
    changes = []
    for label, key in COST_FIGURES.items():
        was, now = before.get(key), after.get(key)
        was_exact, now_exact = figure_exact(before, key), figure_exact(after, key)
        if was != now or was_exact != now_exact:
            changes.append(CostFigureChange(label, was, now, was_exact, now_exact))
    return tuple(changes)


def unknown_notes(document: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What the document's cost figures cannot know: per pool whose price is unknown, why and its
    bound (``unknownParts``), or for a figure that is not computed, that it is not."""
    cost = _cost_of(document)
    notes = [f"`{pool}`: {why}" for pool, why in (cost.get("unknownParts") or {}).items()]
    if cost and not notes and cost.get("ceilingPerHour") is None:
        notes.append("the ceiling is not computed (a price is unknown: " + ", ".join(cost.get("unpriced") or ["?"]) + ")")
    return tuple(notes)


def _pool_costs(document: Mapping[str, Any] | None) -> dict[tuple[str, str], float | None]:
    totals: dict[tuple[str, str], float | None] = {}
    pools = ((document or {}).get("outputs") or {}).get("nodePools") or []
    for pool in pools if isinstance(pools, list) else []:
        key = (str(pool.get("pool", "")), str(pool.get("capacityType", "")))
        cost = pool.get("costPerHourAtMax")
        seen = totals.get(key, 0.0)
        totals[key] = None if cost is None or seen is None else seen + float(cost)
    return totals


def pool_cost_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> tuple[PoolCostChange, ...]:
    """Per pool and capacity type, the cost per hour at max that changed: what caused the fleet change."""
    before, after = _pool_costs(old), _pool_costs(new)
    changes = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key, 0.0), after.get(key, 0.0)
        if was is None or now is None or abs(now - was) > 1e-9:
            changes.append(PoolCostChange(key[0], key[1], was, now))
    return tuple(changes)


@dataclass(frozen=True)
class StackDiff:
    """The diff of one stack's documents."""

    stack: str
    added: tuple[Mapping[str, Any], ...] = ()
    removed: tuple[Mapping[str, Any], ...] = ()
    changed: tuple[ResourceChange, ...] = ()
    outputs: tuple[FieldChange, ...] = ()
    notes: tuple[str, ...] = field(default=())
    fleet: tuple[Mapping[str, int], Mapping[str, int]] | None = None
    """Fleet totals (``FLEET_COLUMNS``: the ceiling and idle GPUs) before and after, when the ``nodePools`` output changed."""
    cost: tuple[CostFigureChange, ...] = ()
    """Fleet cost figures that moved (``outputs.cost``), before and after."""
    cost_causes: tuple[PoolCostChange, ...] = ()
    """Per pool and capacity type, the change in cost per hour at max that moved them."""
    cost_unknown: tuple[str, ...] = ()
    """What the new document's cost figures cannot know, and why (``unknown_notes``)."""

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.outputs)

    @property
    def replacements(self) -> int:
        return sum(1 for c in self.changed if c.replaces)

    @property
    def capacity_changes(self) -> int:
        pools = [r for r in (*self.added, *self.removed) if r.get("type") in POOL_TYPES]
        return sum(1 for c in self.changed if c.capacity) + len(pools)


def replace_reason(resource: Mapping[str, Any], old: Mapping[str, Any], segments: tuple[Segment, ...]) -> str:
    """Why a change at ``segments`` (a document path: ``("inputs", ...)``, ``("parent",)``) replaces the resource, or ""."""
    head = segments[0]
    if head in ("parent", "provider"):
        return f"new {head} (a new URN; replaced unless an alias is set)"
    if head != "inputs" or len(segments) < 2:
        return ""
    inputs_path = segments[1:]
    for source in (resource, old):
        for pattern in source.get("options", {}).get("replaceOnChanges", []):
            if pattern == "*" or path_matches(parse_path(pattern), inputs_path):
                return f"in replaceOnChanges ({pattern})"
    for pattern in PROVIDER_REPLACE_FIELDS.get(str(resource.get("type")), ()):
        if path_matches(parse_path(pattern), inputs_path):
            return "the provider replaces on this field"
    if inputs_path[0] in NAME_FIELDS and str(resource.get("type", "")).partition(":")[0] not in ("kubernetes",):
        return "names the cloud resource"
    if str(resource.get("type", "")).startswith("kubernetes:"):
        for identity in KUBERNETES_IDENTITY:
            if tuple(inputs_path[: len(identity)]) == identity:
                return "identifies the Kubernetes object"
    return ""


def ignored_by(resource: Mapping[str, Any], segments: tuple[Segment, ...]) -> str:
    """The ``ignoreChanges`` pattern that covers an input at ``segments``, or "" (updates of it are not applied)."""
    if segments[0] != "inputs" or len(segments) < 2:
        return ""
    for pattern in resource.get("options", {}).get("ignoreChanges", []):
        wanted = parse_path(pattern)
        if len(wanted) <= len(segments) - 1 and path_matches(wanted, segments[1:]):
            return pattern
    return ""


def _keys_within(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys_within(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys_within(v) for v in value))
    return set()


def capacity_reason(segments: tuple[Segment, ...], old: Any = MISSING, new: Any = MISSING) -> str:
    """Why a change at ``segments`` (old -> new) changes capacity or cost, or "".

    True when the path goes through a ``CAPACITY_FIELDS`` key, or when a whole object that was
    added or removed contains one (an inline agent pool profile, say).
    """
    if segments[0] != "inputs":
        return ""
    for segment in segments[1:]:
        if isinstance(segment, str) and segment in CAPACITY_FIELDS:
            return segment
    inside = sorted((_keys_within(old) | _keys_within(new)) & CAPACITY_FIELDS)
    return inside[0] if inside else ""


def nodepool_capacity_reason(resource: Mapping[str, Any], segments: tuple[Segment, ...]) -> str:
    """For a Karpenter NodePool, the ``NODEPOOL_CAPACITY_PATHS`` entry a change falls under, or ""."""
    if resource.get("type") != "kubernetes:karpenter.sh/v1:NodePool":
        return ""
    for prefix in NODEPOOL_CAPACITY_PATHS:
        if tuple(segments[: len(prefix)]) == prefix:
            return ".".join(prefix[1:])
    return ""


def diff_resource(old: Mapping[str, Any], new: Mapping[str, Any]) -> ResourceChange | None:
    """The changed fields of one resource (inputs, options, parent, provider, custom), or None."""
    fields: list[FieldChange] = []
    for part in ("custom", "parent", "provider", "inputs", "options"):
        for path, was, now in diff_values(old.get(part, MISSING), new.get(part, MISSING), (part,)):
            fields.append(
                FieldChange(
                    segments=path,
                    old=was,
                    new=now,
                    replaces=replace_reason(new, old, path),
                    capacity=capacity_reason(path, was, now) or nodepool_capacity_reason(new, path),
                    ignored=ignored_by(new, path),
                )
            )
    if not fields:
        return None
    return ResourceChange(address=str(new["address"]), type=str(new["type"]), name=str(new["name"]), fields=tuple(fields))


def diff_documents(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, stack: str = "") -> StackDiff:
    """Compare two desired-state documents (``None`` stands for "the stack does not exist there")."""
    old_resources = {r["address"]: r for r in (old or {}).get("resources", [])}
    new_resources = {r["address"]: r for r in (new or {}).get("resources", [])}
    changed = []
    for address in sorted(set(old_resources) & set(new_resources)):
        change = diff_resource(old_resources[address], new_resources[address])
        if change is not None:
            changed.append(change)
    outputs = [
        FieldChange(path, was, now)
        for path, was, now in diff_values((old or {}).get("outputs", {}), (new or {}).get("outputs", {}), ("outputs",))
    ]
    fleet = None
    if any(f.segments[:2] == ("outputs", "nodePools") for f in outputs):
        fleet = (fleet_totals(old), fleet_totals(new))
    notes: list[str] = []
    if old is None and new is not None:
        notes.append("new stack: every resource is added")
    if new is None and old is not None:
        notes.append("stack removed: every resource is removed")
    if old and new and old.get("formatVersion") != new.get("formatVersion"):
        notes.append(
            f"document format changed ({old.get('formatVersion')} -> {new.get('formatVersion')}); some changes may be format only"
        )
    return StackDiff(
        stack=stack or str((new or old or {}).get("stack", "")),
        added=tuple(new_resources[a] for a in sorted(set(new_resources) - set(old_resources))),
        removed=tuple(old_resources[a] for a in sorted(set(old_resources) - set(new_resources))),
        changed=tuple(changed),
        outputs=tuple(outputs),
        notes=tuple(notes),
        fleet=fleet,
        cost=cost_changes(old, new) if old and new else (),
        cost_causes=pool_cost_changes(old, new) if old and new else (),
        cost_unknown=unknown_notes(new),
    )


FLEET_COLUMNS = {
    "ceiling nodes": "maxSize",
    "ceiling GPUs": "gpusAtMax",
    "ceiling GPU slots": "gpuSlotsAtMax",
    "idle GPUs": "idleGpus",
}
"""The fleet totals the diff reports: the synth table's TOTAL row (``summary.fleet_total``), named
after the ``gpupools.capacity`` state each comes from."""


def fleet_totals(document: Mapping[str, Any] | None) -> dict[str, int]:
    """The fleet's ceiling (nodes, GPUs, GPU slots) and idle GPUs of a document, as the synth
    table's TOTAL row has them (``summary.fleet_total``, from the ``cost`` output's ``capacity``
    block): one model, so the diff and the table never disagree."""
    outputs = (document or {}).get("outputs") or {}
    pools = outputs.get("nodePools") or []
    cost = outputs.get("cost")
    total = fleet_total(pools if isinstance(pools, list) else [], cost if isinstance(cost, Mapping) else None)
    return {label: int(total[key] or 0) for label, key in FLEET_COLUMNS.items()}


# --- Markdown -------------------------------------------------------------------------------------


def _value(value: Any, limit: int = 120) -> str:
    if value is MISSING:
        return "_(absent)_"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "`" + text.replace("`", "'") + "`"


def _change_lines(change: FieldChange, indent: str) -> list[str]:
    """One list item for a changed field; multi-line strings (config files) as a fenced unified diff."""
    old, new = change.old, change.new
    multiline = isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new)
    scalar_lists = isinstance(old, list) and isinstance(new, list)
    if scalar_lists and len(json.dumps(old)) + len(json.dumps(new)) > 120:
        removed = [item for item in old if item not in new]
        added = [item for item in new if item not in old]
        if removed or added:
            parts = []
            if removed:
                parts.append("removed " + ", ".join(_value(item, 100) for item in removed))
            if added:
                parts.append("added " + ", ".join(_value(item, 100) for item in added))
            return [f"{indent}- `{change.path}`: {'; '.join(parts)}{_flags(change)}"]
    if not multiline:
        return [f"{indent}- `{change.path}`: {_value(old)} → {_value(new)}{_flags(change)}"]
    body = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "old", "new", n=1, lineterm=""))[2:]
    fence = indent + "  "
    return [
        f"{indent}- `{change.path}`:{_flags(change)}",
        f"{fence}~~~diff",
        *(fence + line.replace("~~~", "~ ~ ~") for line in body),
        f"{fence}~~~",
    ]


def _resource_detail(resource: Mapping[str, Any]) -> str:
    inputs = resource.get("inputs") or {}
    parts = [f"{key}={_value(inputs[key], 60)}" for key in ADDED_REMOVED_DETAIL if key in inputs]
    return (" — " + ", ".join(parts)) if parts else ""


def _flags(change: FieldChange) -> str:
    flags = []
    if change.ignored:
        flags.append(f"_(in ignoreChanges `{change.ignored}`: sent on create only, never updated)_")
    if change.replaces:
        flags.append(f"⚠️ **replaces** ({change.replaces})")
    if change.capacity:
        flags.append("💰 **capacity/cost**")
    return (" " + " ".join(flags)) if flags else ""


def _usd(value: float | None, exact: bool = True) -> str:
    """``$12.35``; ``<=$12.35`` for an upper bound; ``?`` for no figure."""
    return "?" if value is None else f"{'' if exact else '<='}${value:,.2f}"


def _signed(value: float | None) -> str:
    return "?" if value is None else f"{'+' if value >= 0 else '-'}${abs(value):,.2f}"


def _cost_lines(diff: StackDiff) -> list[str]:
    """The cost section: each moved figure, then the pools that moved it."""
    figures = [
        f"{c.label} **{_usd(c.before, c.before_exact)} → {_usd(c.after, c.after_exact)}** "
        f"({_signed(c.delta)}{'' if c.label == 'monthly estimate' else '/h'})"
        for c in diff.cost
    ]
    lines = ["💵 Cost (USD; Spot prices are recent observations): " + "; ".join(figures), ""] if figures else []
    if diff.cost_causes:
        causes = [f"`{c.pool}` {c.capacity} {_signed(c.delta)}/h at max" for c in diff.cost_causes]
        lines += ["Caused by: " + ", ".join(causes), ""]
    if diff.cost_unknown:
        lines += ["Unknown prices (a `<=` figure is an upper bound, a `?` change is not computed): " + "; ".join(diff.cost_unknown), ""]
    return lines


def render_stack(diff: StackDiff) -> str:
    """The Markdown section of one stack."""
    lines = [f"### `{diff.stack}`", ""]
    for note in diff.notes:
        lines.append(f"> {note}")
    if diff.notes:
        lines.append("")
    if diff.empty:
        lines.append("No changes to the desired state.")
        return "\n".join(lines) + "\n"
    summary = [
        f"**{len(diff.added)}** added",
        f"**{len(diff.removed)}** removed",
        f"**{len(diff.changed)}** changed",
    ]
    if diff.replacements:
        summary.append(f"⚠️ **{diff.replacements}** replaced")
    if diff.capacity_changes:
        summary.append(f"💰 **{diff.capacity_changes}** capacity/cost")
    lines += [", ".join(summary), ""]
    if diff.fleet:
        before, after = diff.fleet
        moved = [f"{label}: **{before[label]} → {after[label]}**" for label in FLEET_COLUMNS if before[label] != after[label]]
        if moved:
            lines += ["💰 Fleet totals: " + ", ".join(moved), ""]
    if diff.cost:
        lines += _cost_lines(diff)
    elif diff.capacity_changes and diff.cost_unknown:  # no figure moved: say what they cannot know
        lines += _cost_lines(diff)
    if diff.changed:
        lines += ["#### Changed", ""]
        for change in diff.changed:
            marks = ("⚠️ " if change.replaces else "") + ("💰 " if change.capacity else "")
            lines.append(f"- {marks}`{change.address}`")
            for f in change.fields:
                lines += _change_lines(f, "  ")
        lines.append("")
    for title, resources in (("Added", diff.added), ("Removed", diff.removed)):
        if not resources:
            continue
        lines += [f"#### {title}", ""]
        for resource in resources:
            mark = "💰 " if resource.get("type") in POOL_TYPES else ""
            lines.append(f"- {mark}`{resource['address']}`{_resource_detail(resource)}")
        lines.append("")
    if diff.added and diff.removed:
        lines += ["_A resource removed and another of the same type added is a replacement (new name)._", ""]
    if diff.outputs:
        lines += ["#### Stack outputs", ""]
        for f in diff.outputs:
            lines += _change_lines(f, "")
        lines.append("")
    return "\n".join(lines)


MARKDOWN_NOTE = (
    "Markdown for a pull-request comment: read it rendered. Diff blocks hold values verbatim, so "
    "their lines are not wrapped."
)
"""Why the diff's raw lines may pass 160 columns (docs/synth.md): wrapping a value inside a diff block
would change the value shown, and GitHub renders a comment's prose at the reader's width."""


def render_markdown(diffs: Sequence[StackDiff], *, title: str = "Synth diff", base: str = "") -> str:
    """The whole PR comment: a marker line, a heading, one section per stack; cut below GitHub's size limit."""
    against = f" against `{base}`" if base else ""
    changed = [d for d in diffs if not d.empty]
    lines = [
        COMMENT_MARKER,
        f"## {title}{against}",
        "",
        f"Offline synth of {len(diffs)} stack(s), {len(changed)} with changes, by `python -m gpupools.synth diff` "
        "without cloud credentials.",
        "Flags: ⚠️ replaces the cloud resource, 💰 changes capacity or cost.",
        "",
        f"_{MARKDOWN_NOTE}_",
        "",
        "",
    ]
    text = "\n".join(lines) + "\n".join(render_stack(d) for d in diffs)
    if len(text) > COMMENT_LIMIT:
        cut = text.rfind("\n", 0, COMMENT_LIMIT)
        text = text[:cut] + "\n\n_… cut to fit a comment; the full diff is in the workflow's `synth-diff` artifact._\n"
    return text


# --- documents from a directory tree or a git ref ------------------------------------------------


def synthesize_document(stack: str, root: Path) -> dict[str, Any] | None:
    """The document of ``stack`` in ``root`` (this process), or None if the stack file does not exist there."""
    if not (root / f"Pulumi.{stack}.yaml").exists():
        return None
    return synthesize(stack, root).document


def export_tree(ref: str, repo: Path, destination: Path) -> None:
    """Write the tree of ``ref`` into ``destination`` (``git archive``: no checkout, no worktree, read-only on the repo)."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", ref], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(destination)], input=archive.stdout, check=True)


def synthesize_at_ref(ref: str, stacks: Sequence[str], repo: Path) -> dict[str, dict[str, Any] | str | None]:
    """Each stack's document at git ``ref`` (None if it has no stack file there, a message if synth failed).

    The base tree is synthesized by its own ``gpupools`` package (``components/gpupools``) in a
    subprocess; a base tree from before the package was renamed (``components/synth``, imported as
    ``components``) by its own ``components`` package. A base whose package has no ``synth`` yet gets
    a copy of this one so it can be synthesized too.
    """
    results: dict[str, dict[str, Any] | str | None] = {}
    with tempfile.TemporaryDirectory(prefix="synth-base-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        export_tree(ref, repo, tree)
        package, module, path = base_layout(tree)
        if package.is_dir() and not (package / "synth").exists() and module == "gpupools":
            shutil.copytree(Path(__file__).parent, package / "synth", ignore=shutil.ignore_patterns("__pycache__"))
        for stack in stacks:
            if not (tree / f"Pulumi.{stack}.yaml").exists():
                results[stack] = None
                continue
            out = Path(tmp) / "out" / stack
            process = subprocess.run(
                [sys.executable, "-m", f"{module}.synth", stack, "--root", str(tree), "--out", str(out), "--quiet"],
                cwd=tree,
                capture_output=True,
                text=True,
                env=_subprocess_env(path),
            )
            document = out / "desired-state.json"
            if process.returncode != 0 or not document.exists():
                message = (process.stderr.strip().splitlines() or ["no output"])[-1]
                results[stack] = f"could not synthesize `{stack}` at `{ref}`: {message}"
            else:
                results[stack] = json.loads(document.read_text(encoding="utf-8"))
    return results


def base_layout(tree: Path) -> tuple[Path, str, list[Path]]:
    """Where a checked-out tree keeps its package, the module name to run, and the import path:
    ``components/gpupools`` as ``gpupools`` (``components`` and the tree on the path), or the
    layout before the rename, ``components`` as ``components`` (the tree on the path)."""
    if (tree / "components" / "gpupools").is_dir():
        return tree / "components" / "gpupools", "gpupools", [tree / "components", tree]
    return tree / "components", "components", [tree]


def _subprocess_env(path: Sequence[Path]) -> dict[str, str]:
    import os

    env = dict(os.environ)
    # Ahead of site-packages, so the base tree's package wins over an installed gpupools.
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    return env


def diff_against_ref(ref: str, stacks: Sequence[str] | None, root: Path) -> list[StackDiff]:
    """Diff every stack (default: committed in ``root`` or at ``ref``) between git ``ref`` and the tree at ``root``."""
    if stacks:
        names = list(stacks)
    else:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-tree", "--name-only", ref], check=True, capture_output=True, text=True
        ).stdout.split()
        at_ref = [
            n[len("Pulumi.") : -len(".yaml")]
            for n in listed
            if n.startswith("Pulumi.") and n.endswith(".yaml") and n != "Pulumi.yaml"
        ]
        names = sorted(set(committed_stacks(root)) | set(at_ref))
    base = synthesize_at_ref(ref, names, root)
    diffs = []
    for stack in names:
        new = synthesize_document(stack, root)
        old = base[stack]
        if isinstance(old, str):
            diffs.append(StackDiff(stack=stack, notes=(old,)))
            continue
        diffs.append(diff_documents(old, new, stack))
    return diffs


def _load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.synth diff",
        description="Compare desired-state documents and print Markdown for a pull-request comment.",
    )
    parser.add_argument("paths", nargs="*", help="OLD.json NEW.json, or with --git-base: stack names (default: all)")
    parser.add_argument("--git-base", metavar="REF", help="compare the working tree with the stacks at this git ref")
    parser.add_argument("--root", type=Path, help="project directory (default: the current one if it has Pulumi.yaml)")
    parser.add_argument("--output", "-o", type=Path, help="write the Markdown here instead of stdout")
    parser.add_argument("--exit-code", action="store_true", help="exit 1 when there are changes (like git diff --exit-code)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gpupools.synth diff`` / ``python -m gpupools.synth.diff``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.git_base:
            root = (args.root or default_root()).resolve()
            diffs = diff_against_ref(args.git_base, args.paths, root)
            markdown = render_markdown(diffs, base=args.git_base)
        else:
            if len(args.paths) != 2:
                parser.error("give OLD.json and NEW.json, or --git-base REF")
            old, new = (_load(Path(p)) for p in args.paths)
            diffs = [diff_documents(old, new)]
            markdown = render_markdown(diffs)
    except Exception as error:
        config_error = config_error_in(error)
        if config_error is None:
            raise
        print(str(config_error), file=sys.stderr)
        return EXIT_CONFIG_ERROR
    if args.output:
        args.output.write_text(markdown, encoding="utf-8")
    else:
        sys.stdout.write(markdown)
    return 1 if args.exit_code and any(not d.empty for d in diffs) else 0


def changed_addresses(diffs: Iterable[StackDiff]) -> set[str]:
    """Every address added, removed or changed (handy in tests and scripts)."""
    result: set[str] = set()
    for diff in diffs:
        result.update(str(r["address"]) for r in (*diff.added, *diff.removed))
        result.update(c.address for c in diff.changed)
    return result


if __name__ == "__main__":
    sys.exit(main())
