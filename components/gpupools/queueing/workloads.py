"""``gang_job``: a multi-node PyTorch job that Kueue admits whole (all its nodes) or not at all.

What a gang job needs under Kueue, and why:

* **one Workload for every node**: an Indexed ``batch/v1`` Job with ``parallelism == completions ==
  nodes`` (``completionMode: Indexed``). Kueue admits a Job as one Workload whose pod set counts
  ``parallelism`` pods (Kueue ``tasks/run/jobs.md``), so quota for all the nodes is reserved at
  once, and under cluster-autoscaler its one ProvisioningRequest asks for all of them
  (``gpupools.queueing.queues``).
* **the queue**: label ``kueue.x-k8s.io/queue-name: <LocalQueue>``, and ``suspend: true`` so no pod
  starts before admission (Kueue's webhook suspends a labelled Job anyway; the AKS Kueue articles
  create them suspended).
* **rendezvous**: a headless Service (``clusterIP: None``) selecting the Job's pods
  (``batch.kubernetes.io/job-name``, set by the Job controller) with ``publishNotReadyAddresses``,
  and the pod template's ``subdomain`` naming it: each pod of an Indexed Job gets the hostname
  ``<job>-<index>`` (Kubernetes "Indexed Job": "the Pod hostname is set to $(job-name)-$(index)";
  with ``subdomain`` it resolves as ``<job>-<index>.<service>``), so rank 0 is
  ``<job>-0.<service>``.
* **torchrun**: ``--nnodes``, ``--nproc-per-node`` (the GPUs per node), ``--node-rank`` from
  ``JOB_COMPLETION_INDEX`` (which the Job controller sets in every pod of an Indexed Job),
  ``--master-addr`` rank 0's name and ``--master-port`` (PyTorch ``torch.distributed.run``).
* **placement**: ``gpupools.scheduling.gpu_workload`` (the GPU taint, the AKS Spot taint, a pool
  pin if asked); Kueue adds the admitted flavour's node labels and tolerations on top.
* **no voluntary disruption** under Karpenter/NAP: ``scheduling.do_not_disrupt()``.
* **EFA** (``efa_per_node``, EKS ``efa: true`` pools): each pod requests the node's EFA interfaces
  (``vpc.amazonaws.com/efa``) and the EFA driver's huge pages with some memory, as the EKS user
  guide's NCCL example does (``ml/node-efa.adoc``: ``hugepages-2Mi: 5120Mi``, ``memory: 8000Mi``;
  Kubernetes refuses huge pages without a CPU or memory request). The stack's ClusterQueue covers
  both resources (``gpupools.queueing.quotas``).
"""

from __future__ import annotations

from typing import Any, Sequence

from gpupools import rules, scheduling
from gpupools.conventions import EFA_RESOURCE, GPU_RESOURCE, HUGEPAGES_2MI_RESOURCE
from gpupools.errors import ConfigError
from gpupools.queueing.queues import QUEUE_LABEL, SHARED_QUEUE

DEFAULT_PORT = 29500
"""torchrun's default ``--master-port``."""

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Set by the Job controller on the Job's pods (Kubernetes 1.27+)."""

NAME_MAX = 50
"""Room for ``-<index>`` in the pods' hostnames (a DNS label is at most 63 characters)."""

EFA_POD_HUGEPAGES = "5120Mi"
EFA_POD_MEMORY = "8000Mi"
"""What the EKS user guide's NCCL-over-EFA example requests per pod besides the EFA interfaces."""


def gang_job(
    name: str,
    *,
    image: str,
    script: Sequence[str],
    nodes: int,
    gpus_per_node: int,
    queue: str = SHARED_QUEUE,
    namespace: str = "default",
    pool: str | None = None,
    extra_taints: Sequence[scheduling.TaintArg] = (),
    port: int = DEFAULT_PORT,
    backoff_limit: int = 0,
    efa_per_node: int = 0,
) -> list[dict[str, Any]]:
    """The headless Service and the Indexed Job of a ``nodes``-node PyTorch job (module docstring).

    Args:
        name: the Job's and Service's name (a DNS label of at most 50 characters).
        image: the container image (with PyTorch and ``torchrun``).
        script: the training script and its arguments, run as ``torchrun ... <script>``.
        nodes: nodes (pods) the job needs at once; at least 2 (one node needs no gang).
        gpus_per_node: GPUs each pod requests (``nvidia.com/gpu``), and torchrun's ``--nproc-per-node``.
        queue: the LocalQueue (``gpupools`` or a team's name from ``gpupools:queueing.teams``).
        namespace: where the LocalQueue is; default ``default``.
        pool: a pool to pin the job to (``gpu_workload(pool=...)``); default any GPU pool.
        extra_taints: the pool's extra taints, to tolerate them: ``Taint`` objects or the config's
            ``{key, value, effect}`` mappings (``scheduling.taint_arg``).
        port: rank 0's rendezvous port; default 29500.
        backoff_limit: pod failures before the Job fails; default 0 (a lost rank fails the run,
            which is then re-queued by whoever submitted it).
        efa_per_node: EFA interfaces each pod requests (the pool's type's, on an ``efa: true``
            pool), with the EFA huge pages and memory (module docstring); default 0, none.

    Returns:
        ``[service, job]`` as plain manifests: apply the Service first.

    Raises:
        ConfigError: a name, count or port out of range.
    """
    if not rules.is_dns_label(name, NAME_MAX):
        raise ConfigError("gang_job.name", f"must be a DNS label of at most {NAME_MAX} characters", name)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 2:
        raise ConfigError("gang_job.nodes", "must be an integer >= 2 (a one-node job needs no gang)", nodes)
    if not isinstance(gpus_per_node, int) or isinstance(gpus_per_node, bool) or gpus_per_node < 1:
        raise ConfigError("gang_job.gpus_per_node", "must be an integer >= 1", gpus_per_node)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError("gang_job.port", "must be a port number (1-65535)", port)
    if not isinstance(efa_per_node, int) or isinstance(efa_per_node, bool) or efa_per_node < 0:
        raise ConfigError("gang_job.efa_per_node", "must be an integer >= 0", efa_per_node)
    if not script:
        raise ConfigError("gang_job.script", "must name the training script to run", list(script))
    rules.check_label_value(queue, "gang_job.queue", allow_empty=False)
    placement = scheduling.gpu_workload(pool, extra_taints=scheduling.taint_args(extra_taints, "gang_job.extra_taints"))
    limits = {GPU_RESOURCE: str(gpus_per_node)}
    if efa_per_node:
        limits |= {EFA_RESOURCE: str(efa_per_node), HUGEPAGES_2MI_RESOURCE: EFA_POD_HUGEPAGES, "memory": EFA_POD_MEMORY}
    master = f"{name}-0.{name}"
    torchrun = [
        "torchrun",
        f"--nnodes={nodes}",
        f"--nproc-per-node={gpus_per_node}",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        f"--master-addr={master}",
        f"--master-port={port}",
        *script,
    ]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {JOB_NAME_LABEL: name},
            "ports": [{"name": "rendezvous", "port": port, "targetPort": port}],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "suspend": True,
            "completionMode": "Indexed",
            "completions": nodes,
            "parallelism": nodes,
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"annotations": scheduling.do_not_disrupt()},
                "spec": {
                    "subdomain": name,
                    "restartPolicy": "Never",
                    **placement,
                    "containers": [
                        {
                            "name": "trainer",
                            "image": image,
                            "command": torchrun,
                            "ports": [{"containerPort": port, "name": "rendezvous"}],
                            "resources": {"limits": limits},
                        }
                    ],
                },
            },
        },
    }
    return [service, job]
