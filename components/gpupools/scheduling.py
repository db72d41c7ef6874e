"""Pod-spec helpers for workloads: where a pod may run, as plain camelCase dicts.

Three placements cover what a GPU platform's users ask for:

* ``gpu_workload()``: "GPU, prefer Spot, fall back to on-demand". Tolerates the GPU taint and the
  AKS Spot taint (harmless on EKS, where Spot nodes carry no taint), requires a GPU node (of one
  pool, if named), and prefers Spot nodes, so the scheduler fills Spot capacity first and uses an
  on-demand fallback node only when no Spot node fits.
* ``cpu_workload()``: "a CPU pool, prefer Spot, fall back to on-demand": the same for ``cpuPools``
  (tolerates the AKS Spot taint, never the GPU taint).
* ``cpu_only()``: "CPU only, never on GPU nodes". Requires a node that is not a gpupools GPU node
  and carries no ``nvidia.com/gpu.present`` label, and tolerates nothing GPU-related.

And one for pod metadata:

* ``do_not_disrupt()``: the ``karpenter.sh/do-not-disrupt`` annotation, for pods on Karpenter / NAP
  nodes that must not be moved while they run (a training job without checkpoints).

The dicts use the Kubernetes field names (camelCase), so they drop into any pulumi-kubernetes pod
spec given as a dict. Everything derives from ``gpupools.conventions``; nothing here registers a
resource. Example, a training Job on the ``t4`` pool::

    import pulumi
    import pulumi_kubernetes as k8s
    from gpupools.scheduling import do_not_disrupt, gpu_workload

    k8s.batch.v1.Job(
        "train",
        metadata={"name": "train", "namespace": "ml"},
        spec={
            "backoffLimit": 2,
            "template": {
                "metadata": {"annotations": do_not_disrupt()},   # Karpenter/NAP: keep the node
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "train",
                        "image": "ghcr.io/example/train:1.0.0",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }],
                    **gpu_workload("t4"),   # tolerations + affinity
                },
            },
        },
        opts=pulumi.ResourceOptions(provider=k8s_provider),
    )

A pod still has to request ``nvidia.com/gpu`` to get a GPU: placement only decides where it may
run. On AKS a CPU-only pod needs a user pool without taints; the system pool's
``CriticalAddonsOnly`` taint keeps workloads off it.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Mapping, Sequence, Union

from gpupools import rules
from gpupools.conventions import (
    AKS_SPOT_TAINT,
    CAPACITY_TYPE_LABEL,
    DO_NOT_DISRUPT_ANNOTATION,
    GPU_PRESENT_LABEL,
    GPU_TAINT,
    KARPENTER_CAPACITY_TYPE_LABEL,
    POOL_LABEL,
    ROLE_LABEL,
    CapacityType,
    Role,
    Taint,
    TaintEffect,
)
from gpupools.errors import ConfigError

SPOT_PREFERENCE_WEIGHT = 100
"""Weight of the "prefer Spot" term: the maximum (1-100), so it outweighs any other preference the
scheduler scores by default."""


def requirement(key: str, operator: str, values: Sequence[str] = ()) -> dict[str, Any]:
    """One node selector requirement (``matchExpressions`` entry). ``Exists``/``DoesNotExist`` take no values."""
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if operator not in ("Exists", "DoesNotExist"):
        expression["values"] = list(values)
    return expression


def required_node_affinity(*terms: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``; the terms are ORed, the
    requirements inside one term ANDed."""
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in terms],
        }
    }


SPOT_LABELS = (CAPACITY_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL)
"""Where a node says it is Spot: gpupools' own label on node groups and agent pools, Karpenter's on
the nodes it launches (a NodePool allowing Spot and on-demand cannot carry a static label)."""


def spot_preferences() -> list[dict[str, Any]]:
    """Weight-100 preferences for Spot nodes, one term per ``SPOT_LABELS`` key. A node carries one
    of the two keys, so a Spot node scores 100 whichever provisioner made it, an on-demand one 0."""
    return [
        {
            "weight": SPOT_PREFERENCE_WEIGHT,
            "preference": {"matchExpressions": [requirement(key, "In", [CapacityType.SPOT.value])]},
        }
        for key in SPOT_LABELS
    ]


TaintArg = Union[Taint, Mapping[str, Any]]
"""A taint as the workload helpers take it: a ``gpupools.conventions.Taint`` or the config's own
form, a mapping ``{key, value, effect}`` (``value`` optional, ``effect`` a string such as
``"NoSchedule"``)."""

TAINT_ARG_KEYS = ("key", "value", "effect")
"""The keys of a taint mapping: those of a ``gpuPools[].taints`` entry."""


def _taint_effect(effect: object, path: str) -> TaintEffect:
    """``effect`` (a ``TaintEffect`` or its Kubernetes spelling) as a ``TaintEffect``."""
    if isinstance(effect, TaintEffect):
        return effect
    spellings = [e.value for e in TaintEffect]
    if isinstance(effect, str) and effect in spellings:
        return TaintEffect(effect)
    eks = {e.eks: e.value for e in TaintEffect}
    hint = f"use the Kubernetes spelling {eks[effect]!r}" if isinstance(effect, str) and effect in eks else None
    raise ConfigError(f"{path}.effect", "must be one of " + ", ".join(spellings), effect, hint)


def taint_arg(raw: object, path: str) -> Taint:
    """One taint argument (``TaintArg``) as a ``Taint``.

    A mapping takes the keys of a ``gpuPools[].taints`` entry; ``value`` may be left out (or empty)
    for a taint written without one: the toleration is then ``Equal`` with an empty value, which
    Kubernetes matches to a taint without a value (kubernetes/api ``core/v1/toleration.go``,
    ``ToleratesTaint``: with operator ``Equal`` the toleration's value must equal the taint's).
    A ``Taint`` whose effect is a string (``Taint("team", "a", "NoSchedule")``) is accepted too.

    Raises:
        ConfigError: naming ``path`` (``gpu_job.extra_taints[0].effect: must be one of ...``).
    """
    key: object
    value: object
    effect: object
    if isinstance(raw, Taint):
        key, value, effect = raw.key, raw.value, raw.effect
    elif isinstance(raw, Mapping):
        unknown = [k for k in raw if k not in TAINT_ARG_KEYS]
        if unknown:
            close = difflib.get_close_matches(str(unknown[0]), TAINT_ARG_KEYS, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(TAINT_ARG_KEYS)
            raise ConfigError(f"{path}.{unknown[0]}", "is not a known key", unknown[0], hint)
        if "effect" not in raw:
            raise ConfigError(f"{path}.effect", "is required: one of " + ", ".join(e.value for e in TaintEffect), None)
        key, value, effect = raw.get("key"), raw.get("value", ""), raw["effect"]
        value = "" if value is None else value
    else:
        raise ConfigError(path, "must be a Taint or a mapping {key, value, effect}", raw)
    if not isinstance(key, str) or not key:
        raise ConfigError(f"{path}.key", "is required and must be a non-empty string", key)
    if not isinstance(value, str):
        raise ConfigError(f"{path}.value", "must be a string", value)
    return Taint(key=key, value=value, effect=_taint_effect(effect, path))


def taint_args(taints: object, path: str) -> tuple[Taint, ...]:
    """A list of taint arguments (``taint_arg`` each, ``path[i]``) as ``Taint`` objects."""
    if isinstance(taints, (str, bytes, Mapping, Taint)) or not isinstance(taints, Sequence):
        raise ConfigError(path, "must be a list of Taints or {key, value, effect} mappings", taints)
    return tuple(taint_arg(taint, f"{path}[{index}]") for index, taint in enumerate(taints))


def tolerations(taints: Sequence[Taint]) -> list[dict[str, str]]:
    """Exact (``Equal``) tolerations for ``taints``, de-duplicated and sorted (key, value, effect),
    so the rendered pod spec does not depend on the order pools were declared in."""
    return [taint.toleration() for taint in sorted(set(taints))]


def gpu_workload(pool: str | None = None, *, extra_taints: Sequence[TaintArg] = (), prefer_spot: bool = True) -> dict[str, Any]:
    """Placement for a GPU workload: "GPU, prefer Spot, fall back to on-demand".

    Args:
        pool: a ``gpuPools`` entry name to pin the pod to (its Spot and on-demand pools alike);
            default None: any gpupools GPU pool. Unpinned, the pod fits every GPU pool with
            enough GPUs, and cluster-autoscaler's priority expander buys the cheapest of them
            (one tier per pool, ordered by price per node-hour; see
            ``gpupools.kubernetes.priority_expander``).
        extra_taints: the pool's extra taints (``gpuPools[].taints``), to tolerate them too:
            ``Taint`` objects or the config's own mappings ``{key, value, effect}`` (``taint_arg``);
            default none.
        prefer_spot: add weight-100 preferences for ``gpupools.io/capacity-type=spot`` and
            ``karpenter.sh/capacity-type=spot`` (``spot_preferences``); default True. The scheduler
            then places the pod on a free Spot node before an on-demand one; when none fits,
            cluster-autoscaler's priority expander (or Karpenter, which prefers Spot within a
            NodePool) buys Spot first and on-demand when Spot is unavailable.

    Returns:
        ``{"tolerations": [...], "affinity": {"nodeAffinity": {...}}}``: merge it into a pod spec.
        The tolerations are the GPU taint, the AKS Spot taint (on EKS no node carries it, so it is
        harmless) and ``extra_taints``; the required affinity is ``gpupools.io/role In [gpu]``
        and, with ``pool``, ``gpupools.io/pool In [pool]``.

    Raises:
        ConfigError: ``pool`` is not a valid label value (it could never match a node), or an
            ``extra_taints`` entry is not a taint (``gpu_workload.extra_taints[0].effect: ...``).
    """
    terms = [requirement(ROLE_LABEL, "In", [Role.GPU.value])]
    if pool is not None:
        rules.check_label_value(pool, "gpu_workload.pool", allow_empty=False)
        terms.append(requirement(POOL_LABEL, "In", [pool]))
    node_affinity = required_node_affinity(terms)
    if prefer_spot:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = spot_preferences()
    return {
        "tolerations": tolerations([GPU_TAINT, AKS_SPOT_TAINT, *taint_args(extra_taints, "gpu_workload.extra_taints")]),
        "affinity": {"nodeAffinity": node_affinity},
    }


def cpu_only() -> dict[str, Any]:
    """Placement for a CPU workload: "CPU only, never on GPU nodes".

    Returns:
        ``{"affinity": {"nodeAffinity": {...}}}`` requiring, in one term, ``gpupools.io/role NotIn
        [gpu]`` and ``nvidia.com/gpu.present DoesNotExist``. The second requirement also keeps
        the pod off GPU nodes gpupools did not create (NVIDIA's GPU feature discovery and the GPU
        Operator set that label). No tolerations: the GPU taint already repels the pod, and the
        affinity keeps it away even from a GPU node someone forgot to taint.
    """
    return {
        "affinity": {
            "nodeAffinity": required_node_affinity(
                [requirement(ROLE_LABEL, "NotIn", [Role.GPU.value]), requirement(GPU_PRESENT_LABEL, "DoesNotExist")]
            )
        }
    }


def cpu_workload(pool: str | None = None, *, extra_taints: Sequence[TaintArg] = (), prefer_spot: bool = True) -> dict[str, Any]:
    """Placement for CPU work on a ``cpuPools`` pool: "CPU pool, prefer Spot, fall back to on-demand".

    The CPU counterpart of ``gpu_workload``; ``cpu_only()`` stays the looser "anywhere but GPU
    nodes" (which on AKS means the system pool only if no CPU pool exists, and there the
    ``CriticalAddonsOnly`` taint keeps ordinary pods off).

    Args:
        pool: a ``cpuPools`` entry name to pin the pod to (its Spot and on-demand pools alike);
            default None: any gpupools CPU pool; the autoscaler then buys the cheapest that fits.
        extra_taints: the pool's extra taints (``cpuPools[].taints``), to tolerate them too:
            ``Taint`` objects or ``{key, value, effect}`` mappings (``taint_arg``).
        prefer_spot: weight-100 preferences for Spot nodes (``spot_preferences``); default True.

    Returns:
        ``{"tolerations": [...], "affinity": {"nodeAffinity": {...}}}``: the AKS Spot taint (on EKS
        no node carries it) and ``extra_taints`` tolerated; required ``gpupools.io/role In [cpu]``
        and, with ``pool``, ``gpupools.io/pool In [pool]``. The GPU taint is not tolerated, so the
        pod can never land on a GPU node.

    Raises:
        ConfigError: ``pool`` is not a valid label value (it could never match a node).
    """
    terms = [requirement(ROLE_LABEL, "In", [Role.CPU.value])]
    if pool is not None:
        rules.check_label_value(pool, "cpu_workload.pool", allow_empty=False)
        terms.append(requirement(POOL_LABEL, "In", [pool]))
    node_affinity = required_node_affinity(terms)
    if prefer_spot:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = spot_preferences()
    taints = taint_args(extra_taints, "cpu_workload.extra_taints")
    return {"tolerations": tolerations([AKS_SPOT_TAINT, *taints]), "affinity": {"nodeAffinity": node_affinity}}


GO_DURATION = re.compile(r"^(?=\d)(\d+h)?(\d+m)?(\d+s)?\Z")
"""The durations ``do_not_disrupt`` accepts: hours, minutes, seconds (``90m``, ``2h30m``), a subset of Go's
``time.ParseDuration`` that Karpenter reads the annotation with."""


def do_not_disrupt(duration: str | None = None) -> dict[str, str]:
    """Pod annotations that keep Karpenter (EKS, AKS NAP) from voluntarily disrupting the pod's node.

    Merge the result into the pod template's ``metadata.annotations`` (it is metadata, so it is not
    part of what ``gpu_workload()`` returns for the pod spec). What it does, from aws/karpenter-provider-aws
    v1.14.1 ``concepts/disruption.md`` ("Pod-Level Controls", "TerminationGracePeriod"):

    * consolidation never removes the node while the pod runs (gpupools' ``WhenEmpty`` already
      keeps nodes with running pods; the annotation also covers DaemonSet-like leftovers);
    * drift (a new node image) starts only inside ``gpupools:maintenance``'s window, and then the
      node is tainted but waits for the pod up to the NodePool's ``terminationGracePeriod``
      (default 24h) before the pod is deleted;
    * it does not stop Spot interruptions (2 minutes' notice on EC2, 30 seconds on Azure), node
      repair, manual deletion, or NAP's forced update of images older than 90 days.

    Args:
        duration: None (default) for ``"true"``, protection for as long as the pod runs; or a
            duration like ``30m`` or ``6h``: protection for that long after the pod starts.

    Returns:
        ``{"karpenter.sh/do-not-disrupt": "true"}`` (or the duration).

    Raises:
        ConfigError: ``duration`` is not like ``90m``, ``6h`` or ``2h30m``.
    """
    if duration is None:
        return {DO_NOT_DISRUPT_ANNOTATION: "true"}
    if not isinstance(duration, str) or not GO_DURATION.match(duration):
        raise ConfigError("do_not_disrupt.duration", "must be a duration like 90m, 6h or 2h30m", duration)
    return {DO_NOT_DISRUPT_ANNOTATION: duration}
