"""``gpu_job()``: a ``batch/v1`` Job manifest for GPU work that survives Spot reclaims.

What each part is for:

* **Placement**: ``gpupools.scheduling.gpu_workload`` (GPU taint and AKS Spot taint tolerated,
  a gpupools GPU node required, Spot preferred), and ``nvidia.com/gpu`` in the container's limits.
* **Grace period that fits the notice** (``GRACE_PERIOD_SECONDS``): when a Spot node is reclaimed,
  whoever drains it (EKS managed node groups, Karpenter's interruption queue, AKS node auto-drain)
  evicts the pod on the notice, and the kubelet gives the container ``terminationGracePeriodSeconds``
  between SIGTERM and SIGKILL. The VM goes away at the end of the notice whatever the grace
  period says, so a longer one buys nothing and hides from the job author how little time there
  is; a shorter one cuts a checkpoint that would have fitted. The default is the notice minus a
  margin for the drain to reach the pod: EC2 gives 2 minutes ("Spot Instance interruption notices":
  "a warning two minutes before Amazon EC2 stops or terminates your Spot Instance"; Karpenter
  ``concepts/disruption.md``: "Spot interruptions have a __2 minute notice__"), so 90 s; Azure
  gives at least 30 s for ``Preempt`` (Azure Scheduled Events, "Event scheduling": "Preempt | 30
  seconds"), often less in practice (karpenter-provider-azure #1769: "best effort up to 30 s, often
  < 10 s"), so 20 s, and a job on Azure Spot should checkpoint continuously rather than on SIGTERM.
* **Retries that do not count reclaims** (``podFailurePolicy``): a pod that failed because its
  node was drained, preempted or garbage-collected carries the ``DisruptionTarget`` condition
  (Kubernetes docs, "Pod disruption conditions": ``EvictionByEvictionAPI``, ``DeletionByTaintManager``,
  ``DeletionByPodGC`` when its node is gone, ``TerminationByKubelet``, ``PreemptionByScheduler``);
  the rule ``{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}`` restarts it without
  counting it against ``backoffLimit`` (Kubernetes docs, "Handling Pod and container failures":
  "Ignore: indicates that the counter towards the .spec.backoffLimit is not incremented and a
  replacement Pod is created"; GA in Kubernetes 1.31). So ``backoffLimit`` counts only the
  program's own failures. A pod failure policy needs ``restartPolicy: Never`` (the same docs), which
  the template sets.
* **Queueing**: with ``queue``, the Kueue label ``kueue.x-k8s.io/queue-name`` on the Job, naming a
  LocalQueue. Kueue's webhook suspends a Job that has the label until its Workload is admitted
  (kubernetes-sigs/kueue ``pkg/controller/jobframework/defaults.go``, ``ApplyDefaultForSuspend``:
  ``if QueueName(job) != "" ... job.Suspend()``), so the manifest does not set ``suspend`` itself:
  without Kueue installed the Job simply runs.
* ``do_not_disrupt`` (optional): ``scheduling.do_not_disrupt()`` on the pod template, for Karpenter
  and AKS NAP nodes. Spot reclaims are not stopped by it.
* **A pool's own placement** (``gpu_job_for_pool``): a Job pinned to a pool must tolerate the
  pool's ``taints`` as well as the GPU taint, or no node of the pool takes it and it stays Pending
  (the only trace a provisioner's event). ``gpu_job_for_pool`` reads the pool from the stack's spec
  (``config.load()`` in a program, ``config.load_file()`` outside one): the pool's name for the
  selector, its taints tolerated, and the ``nvidia.com/gpu`` one node advertises as the bound of
  ``gpus`` (``WHOLE_NODE`` asks for all of it).

Pure: it returns a dict and registers nothing. Give ``metadata`` and ``spec`` to
``pulumi_kubernetes.batch.v1.Job``, or dump the dict as YAML for ``kubectl apply``.
"""

from __future__ import annotations

import difflib
from typing import Any, Mapping, Sequence, Union

from gpupools import rules, sharing
from gpupools.catalog.sizes import size_facts
from gpupools.conventions import GPU_RESOURCE, KUEUE_QUEUE_LABEL
from gpupools.errors import ConfigError
from gpupools.scheduling import TaintArg, gpu_workload, taint_args
from gpupools.scheduling import do_not_disrupt as do_not_disrupt_annotations
from gpupools.specs import Cloud, PoolSpec, StackSpec

SPOT_NOTICE_SECONDS = {Cloud.AWS: 120, Cloud.AZURE: 30}
"""How long before a Spot VM goes a cluster hears of it (module docstring): EC2's interruption
notice, Azure Scheduled Events' minimum ``Preempt`` notice."""

DRAIN_MARGIN_SECONDS = {Cloud.AWS: 30, Cloud.AZURE: 10}
"""Time the notice loses before the pod gets SIGTERM: the event reaching the drainer (EventBridge
to SQS for Karpenter, IMDS polling for AKS auto-drain), the cordon, the eviction, the kubelet."""

GRACE_PERIOD_SECONDS = {cloud: SPOT_NOTICE_SECONDS[cloud] - DRAIN_MARGIN_SECONDS[cloud] for cloud in Cloud}
"""Default ``terminationGracePeriodSeconds`` per cloud: AWS 90, Azure 20."""

DISRUPTION_TARGET = "DisruptionTarget"
"""The pod condition Kubernetes adds to a pod it is about to delete for a disruption."""

QUEUE_LABEL = KUEUE_QUEUE_LABEL
"""Kueue's label naming a Job's LocalQueue (``conventions.KUEUE_QUEUE_LABEL``)."""

DEFAULT_BACKOFF_LIMIT = 3
"""Retries for the program's own failures (disruptions are not counted); Kubernetes' default is 6."""


def _cloud(value: Cloud | str) -> Cloud:
    try:
        return Cloud(value)
    except ValueError:
        raise ConfigError("gpu_job.cloud", "must be one of " + ", ".join(c.value for c in Cloud), value) from None


def pod_failure_policy() -> dict[str, Any]:
    """``{rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}``: disruptions are
    retried without counting against ``backoffLimit``."""
    return {"rules": [{"action": "Ignore", "onPodConditions": [{"type": DISRUPTION_TARGET, "status": "True"}]}]}


def gpu_job(
    name: str,
    image: str,
    *,
    cloud: Cloud | str,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    gpus: int = 1,
    namespace: str | None = None,
    pool: str | None = None,
    extra_taints: Sequence[TaintArg] = (),
    prefer_spot: bool = True,
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT,
    termination_grace_period_seconds: int | None = None,
    queue: str | None = None,
    do_not_disrupt: bool = False,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ``batch/v1`` Job manifest for one GPU container (module docstring says why each part).

    Args:
        name: the Job's name (and its container's): a DNS-1123 label, at most 63 characters.
        image: the container image.
        cloud: ``"aws"`` or ``"azure"``: picks the default grace period (``GRACE_PERIOD_SECONDS``).
        command: the container's ``command``; default the image's entrypoint.
        args: the container's ``args``; default the image's.
        gpus: ``nvidia.com/gpu`` in the container's limits; default 1, at least 1.
        namespace: the Job's namespace; default none (the provider's or kubectl's).
        pool: a ``gpuPools`` entry to pin the Job to (``gpupools.scheduling.gpu_workload``); default any.
        extra_taints: the pool's extra taints, tolerated too (``gpu_workload``): ``Taint`` objects or
            the config's own mappings ``{key, value, effect}`` (``value`` optional, ``effect`` a
            string such as ``"NoSchedule"``; ``scheduling.taint_arg``). Default none.
            ``gpu_job_for_pool`` fills it in from the pool.
        prefer_spot: prefer Spot nodes (``gpu_workload``); default True.
        backoff_limit: retries for the program's own failures; default 3, at least 0.
        termination_grace_period_seconds: default the cloud's ``GRACE_PERIOD_SECONDS``; at most the
            cloud's Spot notice (a longer one is cut by the VM's end anyway), at least 0.
        queue: a Kueue LocalQueue name; adds the ``kueue.x-k8s.io/queue-name`` label. Default none.
        do_not_disrupt: add the ``karpenter.sh/do-not-disrupt`` pod annotation; default False.
        env: plain environment variables for the container; default none.

    Raises:
        ConfigError: naming the argument (``gpu_job.gpus: must be >= 1, got 0``).
    """
    cloud = _cloud(cloud)
    # A Job's name is a DNS-1123 label of at most 63 characters: the Job controller puts it in the
    # ``batch.kubernetes.io/job-name`` label of its pods (a label value, 63 at most).
    if not rules.is_dns_label(name):
        raise ConfigError("gpu_job.name", "must be a DNS-1123 label: at most 63 lowercase letters, digits or '-'", name)
    if not image:
        raise ConfigError("gpu_job.image", "must not be empty", image)
    for argument, value, low in (("gpus", gpus, 1), ("backoff_limit", backoff_limit, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"gpu_job.{argument}", f"must be an integer >= {low}", value)
    grace = GRACE_PERIOD_SECONDS[cloud] if termination_grace_period_seconds is None else termination_grace_period_seconds
    notice = SPOT_NOTICE_SECONDS[cloud]
    if isinstance(grace, bool) or not isinstance(grace, int) or not 0 <= grace <= notice:
        raise ConfigError(
            "gpu_job.termination_grace_period_seconds",
            f"must be an integer from 0 to {notice} (the {cloud.value} Spot notice: a node is gone after it, whatever the "
            "grace period)",
            grace,
        )
    if queue is not None:
        rules.check_label_value(queue, "gpu_job.queue", allow_empty=False)
    taints = taint_args(extra_taints, "gpu_job.extra_taints")
    if pool is not None:
        rules.check_label_value(pool, "gpu_job.pool", allow_empty=False)

    container: dict[str, Any] = {"name": name, "image": image, "resources": {"limits": {GPU_RESOURCE: str(gpus)}}}
    if command is not None:
        container["command"] = list(command)
    if args is not None:
        container["args"] = list(args)
    if env:
        container["env"] = [{"name": key, "value": value} for key, value in sorted(env.items())]
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if queue is not None:
        metadata["labels"] = {QUEUE_LABEL: queue}
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": grace,
            "containers": [container],
            **gpu_workload(pool, extra_taints=taints, prefer_spot=prefer_spot),
        }
    }
    if do_not_disrupt:
        template["metadata"] = {"annotations": do_not_disrupt_annotations()}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {"backoffLimit": backoff_limit, "podFailurePolicy": pod_failure_policy(), "template": template},
    }


WHOLE_NODE = "node"
"""``gpu_job_for_pool(gpus=WHOLE_NODE)``: every ``nvidia.com/gpu`` one node of the pool advertises."""

PoolSource = Union[StackSpec, PoolSpec]
"""Where ``gpu_job_for_pool`` reads a pool from: the stack's spec (with the pool's name) or the pool's."""


def _pool_of(source: object, pool: str | None) -> PoolSpec:
    """The ``gpuPools`` entry ``pool`` of a ``StackSpec`` (or a ``PoolSpec`` itself)."""
    if isinstance(source, PoolSpec):
        spec = source
        if pool is not None and pool != spec.name:
            raise ConfigError("gpu_job_for_pool.pool", f"must be the given PoolSpec's name ({spec.name!r}) or left out", pool)
    elif isinstance(source, StackSpec):
        names = [p.name for p in source.gpu_pools]
        if pool is None:
            raise ConfigError("gpu_job_for_pool.pool", "is required with a StackSpec: one of " + ", ".join(names), pool)
        by_name = {p.name: p for p in source.pools}
        if pool not in by_name:
            close = difflib.get_close_matches(str(pool), names, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else None
            raise ConfigError("gpu_job_for_pool.pool", "must be one of the stack's gpuPools: " + ", ".join(names), pool, hint)
        spec = by_name[pool]
    else:
        raise ConfigError("gpu_job_for_pool.source", "must be a StackSpec (config.load()) or a PoolSpec", type(source).__name__)
    if not spec.is_gpu:
        raise ConfigError("gpu_job_for_pool.pool", "must be a gpuPools entry (a cpuPools entry has no GPUs)", spec.name)
    return spec


def gpu_slots_per_node(pool: PoolSpec) -> int | None:
    """``nvidia.com/gpu`` one node of ``pool`` advertises: GPUs of its size x sharing slots per GPU
    (``sharing.slots_per_gpu``). With several sizes (a Karpenter pool), the smallest, so a Job that
    asks for it fits whichever size is bought. None when no size catalog knows a size."""
    counts = []
    for size in pool.instance_types:
        facts = size_facts(size)
        if facts is None:
            return None
        counts.append(facts[0] * sharing.slots_per_gpu(pool.sharing))
    return min(counts) if counts else None


def gpu_job_for_pool(
    source: PoolSource,
    name: str,
    image: str,
    *,
    pool: str | None = None,
    cloud: Cloud | str | None = None,
    gpus: int | str = 1,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    namespace: str | None = None,
    extra_taints: Sequence[TaintArg] = (),
    prefer_spot: bool = True,
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT,
    termination_grace_period_seconds: int | None = None,
    queue: str | None = None,
    do_not_disrupt: bool = False,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``gpu_job`` for one pool of the stack, with the pool's own placement (module docstring).

    ``command``, ``args``, ``namespace``, ``prefer_spot``, ``backoff_limit``,
    ``termination_grace_period_seconds``, ``queue``, ``do_not_disrupt`` and ``env`` are ``gpu_job``'s,
    with its defaults.

    Args:
        source: the stack's ``StackSpec`` (``gpupools.config.load()`` in a program,
            ``gpupools.config.load_file("Pulumi.<stack>.yaml")`` outside one) with ``pool`` naming a
            ``gpuPools`` entry; or that entry's ``PoolSpec`` itself (then give ``cloud``).
        name: the Job's name (``gpu_job``).
        image: the container image.
        pool: the ``gpuPools`` entry's name; required with a ``StackSpec``.
        cloud: default the stack's; required with a ``PoolSpec``.
        gpus: ``nvidia.com/gpu`` for the container; default 1; ``WHOLE_NODE`` for every slot one node
            of the pool advertises (``gpu_slots_per_node``). More than one node advertises is refused:
            such a pod never fits a node of the pool.
        extra_taints: taints to tolerate besides the pool's own (``gpu_job``); default none.

    Returns:
        The ``gpu_job`` manifest, pinned to ``gpupools.io/pool=<pool>`` and tolerating the GPU taint,
        the AKS Spot taint and every taint of the pool.

    Raises:
        ConfigError: naming the argument (``gpu_job_for_pool.pool: must be one of the stack's
            gpuPools: a100, t4, got 'a10'``), or one ``gpu_job`` raises.
    """
    spec = _pool_of(source, pool)
    if cloud is None:
        if not isinstance(source, StackSpec):
            raise ConfigError("gpu_job_for_pool.cloud", "is required with a PoolSpec: aws or azure", cloud)
        cloud = source.cloud
    slots = gpu_slots_per_node(spec)
    if gpus == WHOLE_NODE:
        if slots is None:
            raise ConfigError(
                "gpu_job_for_pool.gpus", f"cannot be {WHOLE_NODE!r}: no size catalog lists pool {spec.name}'s sizes", gpus
            )
        gpus = slots
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ConfigError("gpu_job_for_pool.gpus", f"must be an integer >= 1 or {WHOLE_NODE!r}", gpus)
    if slots is not None and gpus > slots:
        raise ConfigError(
            "gpu_job_for_pool.gpus",
            f"must be <= {slots}, the nvidia.com/gpu one node of pool {spec.name} advertises (a bigger pod never fits)",
            gpus,
        )
    extra = taint_args(extra_taints, "gpu_job_for_pool.extra_taints")
    return gpu_job(
        name,
        image,
        cloud=cloud,
        command=command,
        args=args,
        gpus=gpus,
        namespace=namespace,
        pool=spec.name,
        extra_taints=(*spec.taints, *extra),
        prefer_spot=prefer_spot,
        backoff_limit=backoff_limit,
        termination_grace_period_seconds=termination_grace_period_seconds,
        queue=queue,
        do_not_disrupt=do_not_disrupt,
        env=env,
    )
