"""Warm GPU capacity (``gpuPools[].warm``): spare nodes of a pool kept ready, taken at once by the
next pod and bought again behind it, only during the hours of a schedule. Pure decisions and the
Kubernetes objects as plain manifests; ``gpupools.kubernetes.warm.WarmCapacity`` registers them.

**The mechanism per provisioner** (``mechanism``):

* **CapacityBuffer** (``autoscaling.x-k8s.io/v1beta1``) where the autoscaler serves it:

  - EKS with cluster-autoscaler, when the pinned image reads the v1beta1 API
    (``CAPACITY_BUFFER_AUTOSCALER_TAGS``: Kubernetes 1.35 and 1.36). The controller and the pod
    injection are off by default (``config/flags/flags.go``: ``--capacity-buffer-controller-enabled``,
    ``--capacity-buffer-pod-injection-enabled``, both ``false``); ``gpupools.aws.autoscaler`` turns
    both on through the chart's ``extraArgs`` (``capacity_buffer_args``). The chart (9.59.0,
    ``templates/clusterrole.yaml``) grants ``get/list/watch`` on ``capacitybuffers``,
    ``update/patch`` on ``capacitybuffers/status`` and the ``podtemplates`` verbs; it does not ship
    the CRD, so the CRD of the image's tag is vendored (``gpupools.kubernetes.crds``) and registered
    like the ProvisioningRequest CRD. 1.33 and 1.34 clusters get placeholder pods.
  - EKS with Karpenter v1.14.1: the ``CapacityBuffer`` feature gate (``charts/karpenter/values.yaml``
    ``settings.featureGates.capacityBuffer``, "ALPHA and is disabled by default"); the CRD ships in
    the ``karpenter-crd`` chart gpupools already installs (``charts/karpenter-crd/templates/
    autoscaling.x-k8s.io_capacitybuffers.yaml``, served as v1beta1) and the controller's ClusterRole
    reads ``capacitybuffers`` and patches their status (``templates/clusterrole-core.yaml``).

  The buffer points at a ``PodTemplate`` of one chunk (``pod_spec``) with ``replicas`` chunks. Its
  pods are virtual: nothing runs on the warm node.

* **Placeholder pods** elsewhere (AKS's managed cluster-autoscaler, which exposes no CapacityBuffer
  switch in its autoscaler profile, and Node Auto Provisioning): a Deployment of ``pause`` pods of
  the same shape with the PriorityClass ``gpupools-warm`` at -10, "the lowest priority that
  triggers scaling clusters" (cluster-autoscaler ``FAQ.md``, "How can I configure overprovisioning
  with Cluster Autoscaler?", at 1.36.1; pods below ``--expendable-pods-priority-cutoff``, default
  -10, are ignored by the autoscaler), and ``preemptionPolicy: Never``, so a placeholder never
  preempts anything itself. A real pod (priority 0 or more) preempts it at once; the placeholder
  goes Pending and the autoscaler buys the replacement.

**One chunk is one whole node of the pool**: the pod requests every GPU slot the node advertises
(``NodePoolInfo.gpu_slots_per_node``), selects the pool (``gpupools.io/pool``) and tolerates exactly
the taints of the pool's groups, so no other pool's node can hold it and no second chunk fits.

**The schedule** (``schedule``): two CronJobs per pool in ``WARM_NAMESPACE`` (``spec.timeZone`` the
schedule's zone), at ``start`` setting the buffer's ``replicas`` to ``nodes`` and at ``end`` to 0,
with ``kubectl patch`` from a pinned image (``KUBECTL_IMAGE``) under a ServiceAccount whose Role may
``get`` and ``patch`` that one object and nothing else (``resourceNames``). A scheduled buffer is
created at 0 and its ``replicas`` left to the CronJobs afterwards (``ignoreChanges``), so a deploy
outside the hours buys nothing. The warm nodes are ready one node start-up after ``start`` (the
CronJob controller's tick, the autoscaler's loop, then the cloud's boot, driver and image pull:
minutes, the pool's cold time-to-GPU); set ``start`` that much earlier. At ``end`` the buffer is 0
at once, and the idle nodes go after the autoscaler's ``scaleDownUnneededTime``.

**Kueue**: the placeholders and PodTemplates live in ``WARM_NAMESPACE``, which must not be a queue
namespace (``check_warm_namespace``), carry no ``kueue.x-k8s.io/queue-name`` label, and are a
Deployment, not one of the batch kinds Kueue manages (``gpupools.queueing.kueue.FRAMEWORKS``): a
buffer never counts against a team's quota.
"""

from __future__ import annotations

import json
import re
import zoneinfo
from datetime import datetime
from enum import Enum
from typing import Any, Iterable, Sequence

from gpupools.catalog.prices import HOURS_PER_MONTH
from gpupools.conventions import POOL_LABEL, ROLE_LABEL, Role, Taint
from gpupools.errors import ConfigError
from gpupools.pools import NodePoolInfo
from gpupools.specs import Cloud, PoolSpec, Provisioner, WarmScheduleSpec, WarmSpec, WeekDay

WARM_NAMESPACE = "gpupools-warm"
"""Where every warm object lives; not a Kueue-managed namespace (``check_warm_namespace``)."""

PRIORITY_CLASS = "gpupools-warm"
PRIORITY = -10
"""cluster-autoscaler ``FAQ.md`` (1.36.1), overprovisioning: "Priority -10 will be reserved for
overprovisioning pods as it is the lowest priority that triggers scaling clusters"."""

PAUSE_IMAGE = "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
"""The placeholder container: Kubernetes' pause image, 3.10, pinned by the digest registry.k8s.io
serves for that tag (the same digest in many public manifests that pin it)."""

KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.34.1@sha256:59bafa07ff3a6d4b417e7633ddb9d79a9606ca98bf64bac080b3e65748669250"
"""The schedule's CronJobs: the Kubernetes project's kubectl image (no shell; ``/bin/kubectl``),
pinned by the digest registry.k8s.io serves for v1.34.1 (the same digest pinned in several public
Dockerfiles). Within kubectl's one-minor skew of the 1.33 to 1.35 clusters; the one call it makes
(a merge patch of one field) is stable API on every supported minor."""

CAPACITY_BUFFER_API = "autoscaling.x-k8s.io/v1beta1"
CAPACITY_BUFFER_AUTOSCALER_TAGS = ("v1.35.2", "v1.36.1")
"""cluster-autoscaler image tags that read CapacityBuffer ``v1beta1``: ``main.go`` at
cluster-autoscaler-1.35.2 and ``builder/autoscaler.go`` at cluster-autoscaler-1.36.1 import only
``apis/capacitybuffer/autoscaling.x-k8s.io/v1beta1``. 1.34.5 still builds its buffer controller
from the older packages (``capacitybuffer/common``), so 1.33 and 1.34 clusters get placeholder pods."""

WARM_LABEL = "gpupools.io/warm"
"""On every warm object, the pool's name: what the sim and ``kubectl get -l`` find them by."""

TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d\Z")


class Mechanism(str, Enum):
    """How a stack keeps its warm nodes (module docstring)."""

    CAPACITY_BUFFER = "CapacityBuffer"
    PLACEHOLDER_PODS = "placeholder pods"


def mechanism(cloud: Cloud, provisioner: Provisioner, autoscaler_image_tag: str | None = None) -> Mechanism:
    """CapacityBuffer on EKS Karpenter and on EKS cluster-autoscaler images in
    ``CAPACITY_BUFFER_AUTOSCALER_TAGS``; placeholder pods on AKS (managed autoscaler, NAP), on EKS Auto
    Mode (its Karpenter's feature gates are AWS's, not settable: aws/containers-roadmap #2612) and older images."""
    if cloud is Cloud.AWS and provisioner is Provisioner.KARPENTER:
        return Mechanism.CAPACITY_BUFFER
    if (
        cloud is Cloud.AWS
        and provisioner is Provisioner.CLUSTER_AUTOSCALER
        and autoscaler_image_tag in CAPACITY_BUFFER_AUTOSCALER_TAGS
    ):
        return Mechanism.CAPACITY_BUFFER
    return Mechanism.PLACEHOLDER_PODS


# --- validation ----------------------------------------------------------------------------------


def minutes(text: str) -> int:
    """``HH:MM`` as minutes after midnight."""
    hours, mins = text.split(":")
    return int(hours) * 60 + int(mins)


def check_warm(pool: PoolSpec, path: str) -> None:
    """``gpuPools[].warm``: 1 to ``maxSize`` nodes; a schedule that opens (at least one day, ``end``
    after ``start``), ``HH:MM`` times and a time zone of the IANA database.

    ``spot: false`` is accepted on purpose: an on-demand warm node is never evicted, which is what a
    latency-bound pool may want, and its on-demand price is what the cost output shows."""
    warm = pool.warm
    if warm is None:
        return
    at = f"{path}.warm"
    if isinstance(warm.nodes, bool) or not isinstance(warm.nodes, int) or warm.nodes < 1:
        raise ConfigError(f"{at}.nodes", "must be a whole number >= 1 (leave warm out for none)", warm.nodes)
    if warm.nodes > pool.max_size:
        raise ConfigError(
            f"{at}.nodes",
            f"must be <= the pool's maxSize ({pool.max_size}): the autoscaler never buys past it, so the rest would never be warm",
            warm.nodes,
        )
    if warm.schedule is not None:
        check_schedule(warm.schedule, f"{at}.schedule")


def check_schedule(schedule: WarmScheduleSpec, path: str) -> None:
    """One ``ConfigError`` per rule of ``WarmScheduleSpec`` (see ``check_warm``)."""
    for key, value in (("start", schedule.start), ("end", schedule.end)):
        if not isinstance(value, str) or not TIME.match(value):
            raise ConfigError(f"{path}.{key}", 'must be a time "HH:MM" (00:00 to 23:59)', value)
    if not schedule.days:
        raise ConfigError(f"{path}.days", "must list at least one day: a schedule without days never opens", [])
    if len(set(schedule.days)) != len(schedule.days):
        raise ConfigError(f"{path}.days", "must not repeat a day", [d.value for d in schedule.days])
    if minutes(schedule.end) <= minutes(schedule.start):
        raise ConfigError(
            f"{path}.end",
            f"must be after start ({schedule.start}) on the same day: this window never opens "
            "(a window across midnight is not supported; end it at 23:59)",
            schedule.end,
        )
    try:
        zoneinfo.ZoneInfo(schedule.time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{path}.timeZone", "must be a time zone of the IANA database, like Europe/Berlin or UTC", schedule.time_zone
        ) from None


def check_warm_namespace(queue_namespaces: Iterable[str], any_warm: bool, path: str) -> None:
    """A warm stack's ``WARM_NAMESPACE`` must not be a Kueue namespace: placeholders there would be
    queued work (module docstring)."""
    if any_warm and WARM_NAMESPACE in set(queue_namespaces):
        raise ConfigError(
            path,
            f"must not list {WARM_NAMESPACE}: it holds the warm pools' placeholders, which must not count against a queue's quota",
            WARM_NAMESPACE,
        )


# --- the schedule --------------------------------------------------------------------------------


def open_hours_per_week(warm: WarmSpec) -> float:
    """Hours per week the buffer is kept: every hour without a schedule."""
    if warm.schedule is None:
        return 168.0
    return len(warm.schedule.days) * (minutes(warm.schedule.end) - minutes(warm.schedule.start)) / 60


def open_hours_per_month(warm: WarmSpec) -> float:
    """``open_hours_per_week`` over a month of ``HOURS_PER_MONTH`` hours (730, the catalog's month)."""
    return open_hours_per_week(warm) * HOURS_PER_MONTH / 168


def is_open(schedule: WarmScheduleSpec | None, now: datetime) -> bool:
    """Whether the buffer should be kept at ``now`` (an aware datetime)."""
    if schedule is None:
        return True
    local = now.astimezone(zoneinfo.ZoneInfo(schedule.time_zone))
    day = WeekDay(local.strftime("%A"))
    at = local.hour * 60 + local.minute
    return day in schedule.days and minutes(schedule.start) <= at < minutes(schedule.end)


def cron(time: str, days: Sequence[WeekDay]) -> str:
    """A five-field cron schedule at ``time`` on ``days`` (cron day numbers, 0 = Sunday)."""
    hours, mins = time.split(":")
    day_field = "*" if len(set(days)) == 7 else ",".join(str(d.cron_day) for d in sorted(set(days), key=lambda d: d.cron_day))
    return f"{int(mins)} {int(hours)} * * {day_field}"


# --- the objects ---------------------------------------------------------------------------------


def object_name(pool: str) -> str:
    """The buffer, PodTemplate, Deployment and Role name of a pool: ``warm-<pool>``."""
    return f"warm-{pool}"


def pool_taints(infos: Sequence[NodePoolInfo]) -> list[Taint]:
    """Every taint of every group of the pool, once, sorted: what one chunk tolerates."""
    return sorted({taint for info in infos for taint in info.taints})


def gpu_slots(infos: Sequence[NodePoolInfo], path: str) -> int:
    """The ``nvidia.com/gpu`` one node of the pool advertises; every group of a pool has one shape."""
    slots = {info.gpu_slots_per_node for info in infos}
    if len(slots) != 1 or 0 in slots:
        raise ConfigError(path, "must be one GPU pool whose groups share one GPU count", sorted(slots))
    return slots.pop()


def labels(pool: str) -> dict[str, str]:
    return {WARM_LABEL: pool, "app.kubernetes.io/managed-by": "gpupools"}


def pod_spec(pool: str, infos: Sequence[NodePoolInfo], placeholder: bool) -> dict[str, Any]:
    """One chunk: a pause container requesting the node's GPU slots, on the pool's nodes only."""
    gpus = str(gpu_slots(infos, f"warm({pool})"))
    spec: dict[str, Any] = {
        "nodeSelector": {POOL_LABEL: pool},
        "tolerations": [taint.toleration() for taint in pool_taints(infos)],
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 0,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65535, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "pause",
                "image": PAUSE_IMAGE,
                "resources": {
                    "requests": {"cpu": "10m", "memory": "16Mi", "nvidia.com/gpu": gpus},
                    "limits": {"memory": "16Mi", "nvidia.com/gpu": gpus},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
    }
    if placeholder:
        spec["priorityClassName"] = PRIORITY_CLASS
    return spec


def initial_replicas(warm: WarmSpec) -> int:
    """What the program sends: ``nodes`` without a schedule, 0 with one (the CronJobs own it then)."""
    return warm.nodes if warm.schedule is None else 0


def metadata(name: str, pool: str) -> dict[str, Any]:
    return {"name": name, "namespace": WARM_NAMESPACE, "labels": labels(pool)}


def pod_template(pool: str, infos: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """The ``PodTemplate`` a CapacityBuffer points at."""
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": metadata(object_name(pool), pool),
        "template": {"metadata": {"labels": labels(pool)}, "spec": pod_spec(pool, infos, placeholder=False)},
    }


def capacity_buffer(pool: str, warm: WarmSpec) -> dict[str, Any]:
    """The ``CapacityBuffer``: ``replicas`` chunks of the pool's PodTemplate, actively provisioned."""
    return {
        "apiVersion": CAPACITY_BUFFER_API,
        "kind": "CapacityBuffer",
        "metadata": metadata(object_name(pool), pool),
        "spec": {
            "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
            "podTemplateRef": {"name": object_name(pool)},
            "replicas": initial_replicas(warm),
        },
    }


SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
"""On the placeholder Deployment: ``pulumi up`` does not wait for the placeholders to run. Whether they
run is the autoscaler's business: pulumi-kubernetes otherwise waits for a created or updated
Deployment to be ``Available`` for up to 10 minutes and then fails the ``up``
(``provider/pkg/await/deployment.go``, ``DefaultDeploymentTimeoutMins``), which a buffer whose pool
cannot get a node in that time (a Spot shortage before the fallback, no quota, a pool at ``maxSize``)
would hit (third AKS review, NM4). ``skipAwait`` is honoured on create and update
(``provider/pkg/metadata/overrides.go``, ``SkipAwaitLogic``)."""


def placeholder_deployment(pool: str, infos: Sequence[NodePoolInfo], warm: WarmSpec) -> dict[str, Any]:
    """The placeholder Deployment: ``replicas`` pause pods of one node each at priority -10, not
    awaited by ``pulumi up`` (``SKIP_AWAIT``)."""
    meta = metadata(object_name(pool), pool)
    meta["annotations"] = {**meta.get("annotations", {}), **SKIP_AWAIT}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": initial_replicas(warm),
            "selector": {"matchLabels": labels(pool)},
            # Recreate: a changed template must not hold two nodes' worth during a rollout.
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": labels(pool)}, "spec": pod_spec(pool, infos, placeholder=True)},
        },
    }


def priority_class() -> dict[str, Any]:
    """The placeholders' PriorityClass (module docstring)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": PRIORITY_CLASS, "labels": {"app.kubernetes.io/managed-by": "gpupools"}},
        "value": PRIORITY,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "gpupools warm GPU placeholders: preempted by any workload, never preempting one",
    }


def scaled_target(kind: Mechanism) -> tuple[str, str, list[str]]:
    """(API group, resource, kubectl arguments) of what the schedule patches."""
    if kind is Mechanism.CAPACITY_BUFFER:
        return "autoscaling.x-k8s.io", "capacitybuffers", ["capacitybuffers.autoscaling.x-k8s.io"]
    return "apps", "deployments/scale", ["deployment", "--subresource=scale"]


def scale_command(pool: str, kind: Mechanism, replicas: int) -> list[str]:
    """The CronJob container's command: one merge patch of ``spec.replicas``."""
    _, _, target = scaled_target(kind)
    resource, *flags = target
    patch = json.dumps({"spec": {"replicas": replicas}}, separators=(",", ":"))
    return [
        "/bin/kubectl",
        "patch",
        resource,
        object_name(pool),
        "--namespace",
        WARM_NAMESPACE,
        *flags,
        "--type=merge",
        "--patch",
        patch,
    ]


def schedule_role(pool: str, kind: Mechanism) -> dict[str, Any]:
    """The scheduler's Role: ``get`` and ``patch`` on the pool's one buffer object."""
    group, resource, _ = scaled_target(kind)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(f"{object_name(pool)}-schedule", pool),
        "rules": [
            {"apiGroups": [group], "resources": [resource], "resourceNames": [object_name(pool)], "verbs": ["get", "patch"]}
        ],
    }


def schedule_service_account(pool: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(f"{object_name(pool)}-schedule", pool)}


def schedule_role_binding(pool: str) -> dict[str, Any]:
    name = f"{object_name(pool)}-schedule"
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(name, pool),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": WARM_NAMESPACE}],
    }


STARTING_DEADLINE_SECONDS = 3600
"""A CronJob run missed (controller down) still runs within the hour; later, the next edge fixes it."""


def schedule_cron_job(pool: str, kind: Mechanism, warm: WarmSpec, edge: str, system_pool: NodePoolInfo) -> dict[str, Any]:
    """The ``open`` (``replicas: nodes`` at ``start``) or ``close`` (0 at ``end``) CronJob, on the
    system pool, as the schedule's ServiceAccount."""
    schedule = warm.schedule
    assert schedule is not None
    time, replicas = (schedule.start, warm.nodes) if edge == "open" else (schedule.end, 0)
    name = f"{object_name(pool)}-{edge}"
    pod = {
        "serviceAccountName": f"{object_name(pool)}-schedule",
        "restartPolicy": "OnFailure",
        "nodeSelector": {ROLE_LABEL: Role.SYSTEM.value},
        "tolerations": [taint.toleration() for taint in sorted(system_pool.taints)],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "scale",
                "image": KUBECTL_IMAGE,
                "command": scale_command(pool, kind, replicas),
                "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": metadata(name, pool),
        "spec": {
            "schedule": cron(time, schedule.days),
            "timeZone": schedule.time_zone,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": labels(pool)},
                "spec": {
                    "backoffLimit": 3,
                    "ttlSecondsAfterFinished": 86400,
                    "template": {"metadata": {"labels": labels(pool)}, "spec": pod},
                },
            },
        },
    }


def namespace() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": WARM_NAMESPACE, "labels": {"app.kubernetes.io/managed-by": "gpupools"}},
    }


def manifests(
    pools: Sequence[PoolSpec], infos: Sequence[NodePoolInfo], kind: Mechanism, system_pool: NodePoolInfo
) -> list[dict[str, Any]]:
    """Every warm object of a stack, in apply order: the namespace, the PriorityClass (placeholders),
    then per warm pool its PodTemplate and CapacityBuffer (or Deployment) and its schedule."""
    warm_pools = [pool for pool in pools if pool.warm is not None]
    if not warm_pools:
        return []
    out = [namespace()]
    if kind is Mechanism.PLACEHOLDER_PODS:
        out.append(priority_class())
    for pool in warm_pools:
        warm = pool.warm
        assert warm is not None
        groups = [info for info in infos if info.pool == pool.name]
        if not groups:
            raise ConfigError(f"warm({pool.name})", "has no node group or NodePool of that pool", pool.name)
        if kind is Mechanism.CAPACITY_BUFFER:
            out += [pod_template(pool.name, groups), capacity_buffer(pool.name, warm)]
        else:
            out.append(placeholder_deployment(pool.name, groups, warm))
        if warm.schedule is not None:
            out += [schedule_service_account(pool.name), schedule_role(pool.name, kind), schedule_role_binding(pool.name)]
            out += [schedule_cron_job(pool.name, kind, warm, edge, system_pool) for edge in ("open", "close")]
    return out
