"""Warm pools (``gpuPools[].warm``, ``gpupools.warm``) in the sim: what the sim adds so that the
stack's own buffer objects are served and acted on by the real autoscaler.

* **The CapacityBuffer CRD** is installed with the stack's other definitions
  (``gpupools.sim.objects.capacity_buffer_crds``).
* **One flag for the sim's autoscaler** (``autoscaler_flags``): the sim runs cluster-autoscaler
  1.36.1 whatever the stack's minor; its CapacityBuffer controller resolves a buffer's pod by a
  server dry run unless ``--capacity-buffer-pod-dry-run-enabled=false`` (1.36.1
  ``config/flags/flags.go``), which needs ``create`` on pods that the chart does not grant. The
  stack's 1.35.2 image has no dry run (and no such flag), so the sim passes ``false`` to 1.36.1 for
  the behaviour the stack's image has; 1.36 stacks set it themselves.
* **The schedule's action** (``scale``): the CronJob controller (real, in kube-controller-manager)
  creates the Jobs at the schedule's times, but KWOK runs no container, so ``kubectl patch`` never
  runs. ``scale`` sends the very patch the CronJob's command holds, and ``allowed`` asks the API
  server's RBAC (a SubjectAccessReview) whether the CronJob's ServiceAccount may send it.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from gpupools import warm
from gpupools.sim.kube import Client
from gpupools.sim.objects import StackObjects

DRY_RUN_FLAG = "--capacity-buffer-pod-dry-run-enabled"


def autoscaler_flags(flags: Sequence[str]) -> tuple[list[str], list[str]]:
    """``flags`` plus ``--capacity-buffer-pod-dry-run-enabled=false`` where buffers are on and the
    stack's image has no dry run (module docstring), with a note saying so."""
    out = list(flags)
    if "--capacity-buffer-controller-enabled=true" in out and not any(f.startswith(DRY_RUN_FLAG) for f in out):
        out.append(f"{DRY_RUN_FLAG}=false")
        return out, [
            f"{DRY_RUN_FLAG}=false added: the stack's cluster-autoscaler 1.35.2 has no pod dry run; 1.36.1 defaults it on"
        ]
    return out, []


def target(stack_objects: StackObjects, pool: str) -> dict[str, Any]:
    """The pool's buffer object (CapacityBuffer or placeholder Deployment) as the stack registers it."""
    for manifest in stack_objects.manifests:
        metadata = manifest["metadata"]
        ours = metadata.get("namespace") == warm.WARM_NAMESPACE and metadata["name"] == warm.object_name(pool)
        if ours and manifest["kind"] in ("CapacityBuffer", "Deployment"):
            return manifest
    raise KeyError(f"stack {stack_objects.stack} has no warm buffer for pool {pool}")


def cron_job_patch(stack_objects: StackObjects, pool: str, edge: str) -> dict[str, Any]:
    """The merge patch the pool's ``open`` or ``close`` CronJob sends (its command's last argument)."""
    for manifest in stack_objects.manifests:
        if manifest["kind"] == "CronJob" and manifest["metadata"]["name"] == f"{warm.object_name(pool)}-{edge}":
            command = manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
            patch: dict[str, Any] = json.loads(command[-1])
            return patch
    raise KeyError(f"stack {stack_objects.stack} has no {edge} CronJob for pool {pool}")


def scale(client: Client, stack_objects: StackObjects, pool: str, edge: str) -> None:
    """Do what the pool's ``edge`` CronJob does: its merge patch, on the object (the scale
    subresource of a placeholder Deployment, as ``kubectl patch --subresource=scale``)."""
    manifest = target(stack_objects, pool)
    path = client.object_path(manifest) + ("/scale" if manifest["kind"] == "Deployment" else "")
    client.request("PATCH", path, cron_job_patch(stack_objects, pool, edge), content_type="application/merge-patch+json")


def allowed(client: Client, pool: str, name: str, resource: str, group: str, subresource: str = "") -> bool:
    """The API server's RBAC answer: may the pool's schedule ServiceAccount ``patch`` ``name``?"""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{warm.WARM_NAMESPACE}:{warm.object_name(pool)}-schedule",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{warm.WARM_NAMESPACE}", "system:authenticated"],
            "resourceAttributes": {
                "namespace": warm.WARM_NAMESPACE,
                "verb": "patch",
                "group": group,
                "resource": resource,
                "subresource": subresource,
                "name": name,
            },
        },
    }
    answer = client.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool((answer.get("status") or {}).get("allowed"))
