"""A GPU smoke test: one Job that needs a GPU node of one pool and runs NVIDIA's CUDA vector-add.

``pulumi up`` waits for a Job to complete (pulumi-kubernetes' await logic), so with a smoke test the
update fails when the pool cannot give a pod a working GPU: no node bought (quota, Spot capacity and
no fallback), the device plugin not landing, a driver that does not load. Success means the pod
printed ``Test PASSED``: a node scaled up, the plugin advertised ``nvidia.com/gpu``, CUDA ran.

Timing, the one judgement call here: the pod starts Pending and the pool is usually at zero, so
the Job has to cover a scale-from-zero. Cluster-autoscaler reacts within seconds, a GPU VM or
instance boots and joins in 5-10 minutes, AKS installs the driver on first boot, the CUDA image
pull takes a minute or two, and when Spot is unavailable the fallback to on-demand is bounded by
the autoscaler's ``max-node-provision-time`` (10-15 minutes; about 20 minutes reported on AKS,
Azure/AKS#4405). ``ACTIVE_DEADLINE_SECONDS`` = 30 minutes covers one such fallback; the Pulumi
create timeout is a little longer, so the Job's own ``DeadlineExceeded`` is what gets reported.
"""

from __future__ import annotations

import hashlib
import re

import pulumi
import pulumi_kubernetes as k8s

from gpupools.conventions import CAPACITY_TYPE_LABEL, GPU_RESOURCE, POOL_LABEL, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import JOB
from gpupools.kubernetes.hardening import locked_down_security_context
from gpupools.pools import NodePoolInfo
from gpupools.scheduling import tolerations
from gpupools.versions import SMOKE_TEST_IMAGE

TYPE = "gpupools:index:GpuSmokeTest"

KINDS = (JOB,)
"""What it creates (``KubernetesAccessGate`` checks it): one Job."""

NAMESPACE = "default"
"""Where the Job goes by default."""

ACTIVE_DEADLINE_SECONDS = 1800
"""30 minutes from the Job's start, Pending time included: a scale-from-zero plus one Spot to
on-demand fallback (see the module docstring)."""

CREATE_TIMEOUT = "35m"
"""How long ``pulumi up`` waits for the Job: the deadline plus five minutes."""

TTL_SECONDS_AFTER_FINISHED = 86400
"""Keep the finished Job and its pod (and logs) for a day, then let Kubernetes delete them. After
that a ``pulumi refresh`` sees the Job gone, and the next ``pulumi up`` runs the test again."""

BACKOFF_LIMIT = 0
"""No retries: a smoke test that passes on the second try hides the failure it exists to show."""

RESOURCES = {
    "requests": {"cpu": "100m", "memory": "256Mi", GPU_RESOURCE: "1"},
    "limits": {"memory": "1Gi", GPU_RESOURCE: "1"},
}
"""One GPU (an extended resource: request and limit must be equal) and a small CPU and memory
request, with a memory limit as a guard."""

CONTAINER_NAME = "cuda-vectoradd"

NAME_MAX = 63
"""Job names become the ``batch.kubernetes.io/job-name`` label value on its pods: at most 63 characters."""


def job_name(pool: NodePoolInfo) -> str:
    """``gpu-smoke-<pool name>``, lowercased into a DNS label; a long name is cut and suffixed with
    a short digest so it stays unique and at most 63 characters."""
    base = re.sub(r"[^a-z0-9-]+", "-", f"gpu-smoke-{pool.name}".lower()).strip("-")
    if len(base) <= NAME_MAX:
        return base
    digest = hashlib.sha256(pool.name.encode()).hexdigest()[:8]
    return f"{base[: NAME_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def validate(name: str, pool: NodePoolInfo) -> None:
    """Check the arguments. Raises ConfigError naming the argument."""
    path = f"GpuSmokeTest({name}).pool"
    if pool.role is not Role.GPU:
        raise ConfigError(f"{path}.role", "must be a GPU pool", pool.role.value, f"pool {pool.name}")
    # The capacity label of a Karpenter NodePool is set by Karpenter on each node, not by the pool.
    checked = [(POOL_LABEL, pool.pool)] + (
        [(CAPACITY_TYPE_LABEL, pool.capacity.value)] if pool.capacity_label == CAPACITY_TYPE_LABEL else []
    )
    for key, value in checked:
        if pool.labels.get(key) != value:
            raise ConfigError(
                f"{path}.labels.{key}",
                f"must be {value!r}, or the Job's nodeSelector matches no node of the pool",
                pool.labels.get(key),
            )


class GpuSmokeTest(pulumi.ComponentResource):
    """A ``batch/v1`` Job that runs the CUDA vector-add sample on one GPU of one pool.

    The pod selects the pool by ``gpupools.io/pool`` and the pool's capacity label
    (``gpupools.io/capacity-type``, or ``karpenter.sh/capacity-type`` on a Karpenter NodePool, whose
    preferred capacity is Spot: so a Spot pool's test runs on Spot), tolerates exactly that pool's taints and limits ``nvidia.com/gpu``
    to 1. Jobs are immutable, so any change to the spec replaces the Job (deleted first: the name
    is fixed). Pass the device plugin in ``opts.depends_on`` so the test starts after it::

        GpuSmokeTest("t4", pool, opts=pulumi.ResourceOptions(provider=k8s_provider, depends_on=[plugin]))

    Args:
        name: the component's name; also ``app.kubernetes.io/instance``.
        pool: the GPU pool to test (one ``NodePoolInfo``).
        namespace: where the Job runs; default ``default``.
        opts: resource options; ``provider`` should be the cluster's. Its ``depends_on`` is also
            applied to the Job.

    Attributes:
        job: the Job; ``job_name`` its ``metadata.name``.

    Raises:
        ConfigError: the pool is not a GPU pool, or lacks the labels the Job selects on. Raised
            before anything is registered.
    """

    job: k8s.batch.v1.Job
    job_name: str

    def __init__(
        self,
        name: str,
        pool: NodePoolInfo,
        namespace: str = NAMESPACE,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        validate(name, pool)
        super().__init__(TYPE, name, None, opts)
        self.job_name = job_name(pool)
        labels = {
            "app.kubernetes.io/name": "gpu-smoke-test",
            "app.kubernetes.io/instance": name,
            "app.kubernetes.io/managed-by": "pulumi",
        }
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"name": self.job_name, "namespace": namespace, "labels": labels},
            spec={
                "backoffLimit": BACKOFF_LIMIT,
                "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
                "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "restartPolicy": "Never",
                        "automountServiceAccountToken": False,
                        "nodeSelector": {POOL_LABEL: pool.pool, pool.capacity_label: pool.capacity.value},
                        "tolerations": tolerations(pool.taints),
                        "containers": [
                            {
                                "name": CONTAINER_NAME,
                                "image": SMOKE_TEST_IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "securityContext": locked_down_security_context(),
                                "resources": RESOURCES,
                            }
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=opts.depends_on if opts is not None else None,
                replace_on_changes=["spec"],
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create=CREATE_TIMEOUT),
            ),
        )
        self.register_outputs({"jobName": self.job_name})
