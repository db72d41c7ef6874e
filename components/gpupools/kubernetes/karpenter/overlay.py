"""A Karpenter ``karpenter.sh/v1alpha1`` NodeOverlay per shared GPU pool, so Karpenter buys shared nodes (builds dicts).

The problem: Karpenter sizes new nodes from each instance type's capacity, where ``nvidia.com/gpu``
is the number of physical GPUs (kubernetes-sigs/karpenter #729, aws/karpenter-provider-aws #3376).
On a time-sliced or MPS pool the device plugin advertises ``replicas`` per GPU, but only once the
node is up; k pods pending together each request ``nvidia.com/gpu: 1`` and Karpenter launches k
one-GPU nodes, and kube-scheduler's default spreading then keeps every one of them non-empty, so
``WhenEmpty`` never removes the surplus.

The fix: a NodeOverlay whose ``capacity`` sets ``nvidia.com/gpu`` to what a node of the pool really
advertises (physical GPUs x ``sharing.slots_per_gpu``), selected by ``karpenter.sh/nodepool In
[<pool>]`` and the pool's instance types. What the pinned release does with it (aws/karpenter-provider-aws
v1.14.1, which pins kubernetes-sigs/karpenter at commit 6e7eab7a0f48):

* ``cmd/controller/main.go`` wraps the AWS cloud provider in ``overlay.Decorate``; its
  ``GetInstanceTypes`` applies the overlays when the ``NodeOverlay`` feature gate is on
  (core ``pkg/cloudprovider/overlay/cloudprovider.go``), and the scheduler and consolidation plan
  with those instance types (``nodeoverlays.md``: "Capacity additions are considered during
  consolidation").
* The overlay's capacity is merged with ``lo.Assign(i.Capacity, updatedCapacity)`` (core
  ``pkg/cloudprovider/types.go``, ``ApplyCapacityOverlay``): the overlay's value replaces the
  instance type's ``nvidia.com/gpu``. Only ``cpu``, ``memory``, ``ephemeral-storage`` and ``pods``
  are refused (the CRD's CEL rule; ``WellKnownResources`` in ``pkg/apis/v1/labels.go``).
* The requirements are matched against the NodePool's name as ``karpenter.sh/nodepool``, its
  template labels and the instance type's own requirements (core
  ``pkg/controllers/nodeoverlay/controller.go``, ``getOverlaidOfferings``), so the overlay touches
  this pool's nodes only; the CRD allows ``karpenter.sh/nodepool`` as a requirement key.
* A node counts as initialized once every resource its pods requested is non-zero in its
  allocatable (core ``pkg/controllers/nodeclaim/lifecycle/initialization.go``,
  ``RequestedResourcesRegistered``), which the device plugin's advertised slots satisfy.

The gate is alpha and off by default (chart ``values.yaml``: ``settings.featureGates.nodeOverlay:
false``); ``gpupools.aws.karpenter.Karpenter(node_overlay=True)`` turns it on, which the EKS stack
does only when a pool is shared, and the ``karpenter-crd`` chart at 1.14.1 installs the
NodeOverlay CRD. AKS Node Auto Provisioning runs a managed Karpenter whose feature gates gpupools
cannot set or read, so shared pools are refused there (``config.NAP_SHARING_RULE``).

One overlay per pool is enough: the pool's instance types all have the same GPU count
(``rules.check_aws_gpu_types``), and overlays of different pools select disjoint NodePools, so no
two of them conflict ("If there is a conflict between NodeOverlays with the same weight ... the
NodeOverlay will not be applied", ``nodeoverlays.md``).
"""

from __future__ import annotations

from typing import Any, Sequence

from gpupools import sharing
from gpupools.conventions import GPU_RESOURCE, KARPENTER_NODEPOOL_LABEL
from gpupools.kubernetes.access_gate import KubernetesKind
from gpupools.kubernetes.karpenter.nodepool import INSTANCE_TYPE_LABEL, NodeShape, requirement
from gpupools.specs import PoolSpec

API_VERSION = "karpenter.sh/v1alpha1"
KIND = "NodeOverlay"
NODE_OVERLAY = KubernetesKind("karpenter.sh", "v1alpha1", KIND, "nodeoverlays", namespaced=False)
"""The kind, for ``KubernetesAccessGate`` declarations (cluster-scoped, like NodePools)."""
NAME_SUFFIX = "gpu-sharing"


def needs_overlay(pool: PoolSpec) -> bool:
    """A GPU pool whose nodes advertise more ``nvidia.com/gpu`` than they have GPUs (time-slicing, MPS)."""
    return pool.is_gpu and sharing.slots_per_gpu(pool.sharing) > 1


def any_overlay(pools: Sequence[PoolSpec]) -> bool:
    """Whether a stack needs the ``NodeOverlay`` feature gate."""
    return any(needs_overlay(pool) for pool in pools)


def gpu_slots(pool: PoolSpec, shape: NodeShape) -> int:
    """``nvidia.com/gpu`` one node of the pool advertises: physical GPUs x slots per GPU."""
    return shape.gpus * sharing.slots_per_gpu(pool.sharing)


def node_overlay(node_pool_name: str, pool: PoolSpec, shape: NodeShape) -> dict[str, Any]:
    """The NodeOverlay of one shared pool (module docstring), named ``<nodepool>-gpu-sharing``."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": f"{node_pool_name}-{NAME_SUFFIX}",
            "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "gpupools"},
        },
        "spec": {
            "requirements": [
                requirement(KARPENTER_NODEPOOL_LABEL, [node_pool_name]),
                requirement(INSTANCE_TYPE_LABEL, pool.instance_types),
            ],
            "capacity": {GPU_RESOURCE: str(gpu_slots(pool, shape))},
        },
    }
