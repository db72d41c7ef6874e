"""``WarmCapacity``: the warm pools' objects (``gpupools.warm`` decides them; this registers them).

One ``kubernetes`` resource per manifest of ``gpupools.warm.manifests``, with the typed
pulumi-kubernetes class of its kind (a ``CustomResource`` for the CapacityBuffer), so every input is
visible in previews and tests. A scheduled buffer's ``spec.replicas`` is the CronJobs' after
creation (``ignoreChanges``): a later ``up`` does not undo the schedule.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools import warm
from gpupools.pools import NodePoolInfo
from gpupools.specs import PoolSpec

TYPE = "gpupools:index:WarmCapacity"


def _typed(manifest: dict[str, Any]) -> tuple[Callable[..., pulumi.CustomResource], dict[str, Any]]:
    """The pulumi-kubernetes class of a manifest's kind and its keyword arguments."""
    body = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    kind = manifest["kind"]
    classes: dict[str, Callable[..., pulumi.CustomResource]] = {
        "Namespace": k8s.core.v1.Namespace,
        "PodTemplate": k8s.core.v1.PodTemplate,
        "ServiceAccount": k8s.core.v1.ServiceAccount,
        "Deployment": k8s.apps.v1.Deployment,
        "CronJob": k8s.batch.v1.CronJob,
        "Role": k8s.rbac.v1.Role,
        "RoleBinding": k8s.rbac.v1.RoleBinding,
    }
    if kind == "PriorityClass":
        return k8s.scheduling.v1.PriorityClass, {
            "metadata": body["metadata"],
            "value": body["value"],
            "global_default": body["globalDefault"],
            "preemption_policy": body["preemptionPolicy"],
            "description": body["description"],
        }
    if kind == "RoleBinding":
        return k8s.rbac.v1.RoleBinding, {"metadata": body["metadata"], "role_ref": body["roleRef"], "subjects": body["subjects"]}
    if kind == "CapacityBuffer":
        return k8s.apiextensions.CustomResource, {"api_version": manifest["apiVersion"], "kind": kind, **body}
    return classes[kind], body


class WarmCapacity(pulumi.ComponentResource):
    """Every warm pool's buffer and schedule on one cluster.

    Args:
        name: the component's name; prefixes each child's resource name.
        pools: the stack's pools (those with ``warm`` get objects).
        infos: the created groups or NodePools of those pools (``NodePoolInfo``): the buffer's shape.
        mechanism: ``gpupools.warm.mechanism`` of the stack.
        system_pool: where the schedule's CronJobs run (its taints are tolerated).
        after: resources the buffer objects wait for (the CRD or chart that serves them).
        opts: ``provider`` the cluster's Kubernetes provider.

    Attributes:
        manifests: the objects as plain manifests (``gpupools.warm.manifests``).
        resources: the registered resources, in the same order.
    """

    manifests: list[dict[str, Any]]
    resources: list[pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        pools: Sequence[PoolSpec],
        infos: Sequence[NodePoolInfo],
        mechanism: warm.Mechanism,
        system_pool: NodePoolInfo,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        self.manifests = warm.manifests(pools, infos, mechanism, system_pool)
        super().__init__(TYPE, name, None, opts)
        scheduled = {pool.name for pool in pools if pool.warm is not None and pool.warm.schedule is not None}
        namespace: pulumi.Resource | None = None
        self.resources = []
        for manifest in self.manifests:
            cls, kwargs = _typed(manifest)
            pool = manifest["metadata"].get("labels", {}).get(warm.WARM_LABEL)
            kind = manifest["kind"]
            depends: list[pulumi.Resource] = [*([namespace] if namespace else []), *after]
            ignore = ["spec.replicas"] if pool in scheduled and kind in ("CapacityBuffer", "Deployment") else []
            resource = cls(
                f"{name}-{kind.lower()}-{manifest['metadata']['name']}",
                **kwargs,
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends, ignore_changes=ignore or None),
            )
            if kind == "Namespace":
                namespace = resource
            self.resources.append(resource)
        self.register_outputs({"mechanism": mechanism.value, "pools": sorted({p.name for p in pools if p.warm})})
