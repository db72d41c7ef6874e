"""The controllers of a stack's sim cluster, beside the control plane: the stack's own autoscaler
and Kueue, as the stack configures them.

* A stack with Karpenter NodePools (``gpupools:provisioner: karpenter``, EKS Karpenter or AKS Node
  Auto Provisioning) runs Karpenter's KWOK provider (``gpupools.sim.karpenter``): on EKS with the
  environment and RBAC of the stack's chart release, on AKS (NAP: no chart) with admin and defaults.
* A stack with Kueue ClusterQueues (``gpupools:queueing``) runs Kueue (``gpupools.sim.kueue``) with
  the arguments, configuration, webhooks and RBAC of the stack's chart release.
* A cluster-autoscaler stack (the default provisioner on both clouds) runs cluster-autoscaler 1.36.1
  with its KWOK cloud provider against the stack's node groups (``gpupools.sim.autoscaler``): on EKS
  with the flags and RBAC of the stack's chart release, on AKS with the flags of the cluster's
  ``autoScalerProfile``.

``prepare`` runs before the stack's objects are applied (CRDs the controllers need, the objects as
the sim applies them), ``start`` after; ``cluster.up`` calls both, ``cluster.down`` stops them first.
"""

from __future__ import annotations

from typing import Any, Callable

from gpupools.sim import autoscaler, autoscaler_build, karpenter, kueue, processes
from gpupools.sim.build import Build
from gpupools.sim.control_plane import ClusterState
from gpupools.sim.kube import Client
from gpupools.sim.objects import StackObjects


def prepare(client: Client, build: Build, stack_objects: StackObjects) -> list[dict[str, Any]]:
    """Install what the controllers need before the stack's objects (CRDs, the charts' objects);
    returns the objects to apply."""
    manifests = [dict(m) for m in stack_objects.manifests]
    if karpenter.uses_karpenter(stack_objects):
        karpenter.install_crds(client, build)
        karpenter.prepare(client, karpenter.plan(stack_objects, build))
        manifests = karpenter.sim_manifests(manifests)
    if kueue.uses_kueue(stack_objects):
        kueue.prepare(client, kueue.plan(stack_objects, build))
    if autoscaler.uses_cluster_autoscaler(stack_objects):
        autoscaler.prepare(client, autoscaler_plan(build, stack_objects))
    return manifests


def autoscaler_plan(build: Build, stack_objects: StackObjects) -> autoscaler.Plan:
    """How cluster-autoscaler runs for the stack, from its cached build (built on first use)."""
    ca = autoscaler_build.cached() or autoscaler_build.build()
    return autoscaler.plan(stack_objects, ca.helm, ca.chart, build.kubernetes_version)


def start(state: ClusterState, build: Build, stack_objects: StackObjects, progress: Callable[[str], None]) -> list[str]:
    """Start the stack's controllers; the names of those started."""
    started = []
    if kueue.uses_kueue(stack_objects):
        progress(
            f"starting Kueue {build.versions.get('sigs.k8s.io/kueue', '')} (webhooks on 127.0.0.1 with the sim's certificates)"
        )
        kueue.start(state, build, stack_objects)
        started.append(kueue.NAME)
    if karpenter.uses_karpenter(stack_objects):
        progress(
            f"starting Karpenter {build.versions.get('sigs.k8s.io/karpenter', '')} (KWOK provider) with the stack's NodePools"
        )
        karpenter.start(state, build, stack_objects)
        started.append(karpenter.NAME)
    if autoscaler.uses_cluster_autoscaler(stack_objects):
        ca = autoscaler_build.cached() or autoscaler_build.build()
        progress(f"starting cluster-autoscaler {autoscaler_build.VERSION} (KWOK provider) with the stack's node groups")
        autoscaler.start(state, ca.binary, stack_objects, autoscaler_plan(build, stack_objects))
        started.append(autoscaler.NAME)
    return started


def stop(state: ClusterState) -> list[str]:
    """Stop every controller (Kueue's webhook configurations removed first); the names of those that ran."""
    stopped = [kueue.NAME] if kueue.stop(state) else []
    stopped += [karpenter.NAME] if karpenter.stop(state) else []
    stopped += [autoscaler.NAME] if autoscaler.stop(state) else []
    return stopped + processes.stop_all(state)
