"""A Karpenter pool's capacity reservation, used first, in the sim (issue 39).

``aws-karpenter-dev`` with its training pool given an EC2 capacity reservation in one zone, as
docs/eks.md ("Capacity reservations") describes it: the NodePool allows ``reserved`` first and its
EC2NodeClass selects the reservation. The real Karpenter v1.14.1 (KWOK provider) gets the
reservation as a reserved offering (``gpupools.sim.karpenter.reserved_offerings``), and the sim's
Karpenter binary keys reservations by the AWS provider's label (``gpupools.sim.build``). What is
asserted is what the AWS provider does with such a reservation, from the config alone: the pool's
first node is ``karpenter.sh/capacity-type: reserved`` (``getCapacityType``: reserved, then Spot,
then on-demand), in the reservation's zone, labelled with its ID (karpenter-provider-aws v1.14.1
``pkg/cloudprovider/cloudprovider.go``, ``instanceToNodeClaim``), of the reserved type.

The Job states no Spot preference (``gpu_job(..., prefer_spot=False)``): Karpenter treats a pod's
preferred node affinity as required until it cannot be met (sigs.k8s.io/karpenter v1.14.1
``pkg/controllers/provisioning/scheduling/preferences.go``, ``Relax``), so a pod preferring
``karpenter.sh/capacity-type: spot`` (``gpu_job``'s default) gets Spot, in the sim as in the cloud
(docs/sim.md, "Karpenter").
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from gpupools.conventions import KARPENTER_CAPACITY_TYPE_LABEL, POOL_LABEL
from gpupools.jobs import gpu_job
from gpupools.sim.build import KARPENTER_RESERVATION_ID_LABEL, Build
from gpupools.sim.control_plane import ClusterState
from gpupools.testing import PROJECT_ROOT, stack_config

from tests.sim.test_autoscalers import IMAGE, SCALE_DOWN, WORKLOADS, Running, delete_job, running, running_node

pytestmark = pytest.mark.sim

STACK = "aws-karpenter-dev"
RESERVATION = "cr-0123456789abcdef0"
ZONE = "us-west-2b"


def with_reservation() -> dict[str, Any]:
    """The stack's config with its last GPU pool (``gpu4``) in one zone holding a 2-instance reservation."""
    pools = [dict(p) for p in stack_config(STACK, PROJECT_ROOT)["gpupools:gpuPools"]]
    pools[-1] = {**pools[-1], "zones": [ZONE], "reservations": [{"id": RESERVATION, "count": 2}]}
    return {"gpupools:gpuPools": pools, "gpupools:autoscaler": {"scaleDownUnneededTime": SCALE_DOWN}}


@pytest.fixture(scope="module")
def reserved_stack(session_cluster: ClusterState, sim_build: Build) -> Iterator[Running]:
    with running(STACK, session_cluster, sim_build, with_reservation()) as run:
        yield run


def test_a_reserved_pools_first_node_is_reserved(reserved_stack: Running) -> None:
    run = reserved_stack
    pool = next(p for p in run.objects.spec.pools if p.reservations)
    assert [r.id for r in pool.reservations] == [RESERVATION]
    job = gpu_job(
        f"reserved-{pool.name}",
        IMAGE,
        cloud=run.objects.spec.cloud,
        namespace=WORKLOADS,
        pool=pool.name,
        extra_taints=pool.taints,
        prefer_spot=False,
        command=["sleep", "infinity"],
    )
    run.client.apply(job)
    labels = running_node(run, f"reserved-{pool.name}")["metadata"]["labels"]
    assert labels[POOL_LABEL] == pool.name
    assert labels[KARPENTER_CAPACITY_TYPE_LABEL] == "reserved"
    assert labels[KARPENTER_RESERVATION_ID_LABEL] == RESERVATION
    assert labels["topology.kubernetes.io/zone"] == ZONE
    assert labels["node.kubernetes.io/instance-type"] == pool.instance_types[0]
    delete_job(run, job)
