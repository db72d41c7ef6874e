"""Third AKS review, NM5: step 3 of the switch from cluster-autoscaler to NAP (docs/karpenter-nap.md)
is ``pulumi destroy --target-dependents --target <URN>`` of each ``GpuNodePool`` and ``CpuNodePool``
component. What it destroys is every resource that depends on a target, transitively: through its
parent, its dependencies, its provider (pulumi/pulumi ``pkg/resource/graph/dependency_graph.go``,
``DependingOn``: "dependencies, parent, provider, property dependencies, deletedWith"). Before, Kueue's
release depended on the chain's last agent pool and the warm buffers on it too, so the step also
destroyed the release, the ClusterQueue (stuck on Kueue's ``resource-in-use`` finalizer with an
admitted job), the LocalQueues and every buffer."""

from __future__ import annotations

import copy

from gpupools.testing import Registration, Run, run_stack, stack_config

POOL_COMPONENTS = ("gpupools:index:GpuNodePool", "gpupools:index:CpuNodePool")
WARM = "gpupools:index:WarmCapacity$"
"""In the URN of every object the WarmCapacity component registers (its children)."""


def switching_stack() -> Run:
    """azure-dev with Kueue and an always-on warm node on its first GPU pool."""
    pools = copy.deepcopy(stack_config("azure-dev")["gpupools:gpuPools"])
    pools[0]["warm"] = {"nodes": 1}
    return run_stack(
        "azure-dev",
        overrides={"gpupools:gpuPools": pools, "gpupools:queueing": {"enabled": True, "namespaces": ["ml"]}},
    )


def dependents(run: Run, targets: set[str]) -> set[str]:
    """The URNs ``--target-dependents`` adds to ``targets`` (module docstring), targets included."""
    found = set(targets)
    changed = True
    while changed:
        changed = False
        for r in run.registrations:
            if r.urn in found:
                continue
            provider = r.provider.rsplit("::", 1)[0] if r.provider else ""
            if r.parent in found or provider in found or found & set(r.options.get("dependencies", [])):
                found.add(r.urn)
                changed = True
    return found


def _of(run: Run, urns: set[str]) -> list[Registration]:
    return [r for r in run.registrations if r.urn in urns]


def test_destroying_the_pool_components_leaves_kueue_and_the_queues() -> None:
    run = switching_stack()
    targets = {r.urn for r in run.registrations if r.type in POOL_COMPONENTS}
    assert targets
    gone = _of(run, dependents(run, targets))
    queueing = [r for r in gone if r.type.startswith("kubernetes:kueue.x-k8s.io/") or r.name == "kueue"]
    assert queueing == [], [f"{r.type} {r.name}" for r in queueing]
    # The step still removes what it is for: every agent pool.
    assert {r.name for r in gone if r.type == "azure-native:containerservice:AgentPool"} == {
        r.name for r in run.of_type("azure-native:containerservice:AgentPool")
    }


def test_a_pools_buffer_goes_with_its_own_pool_only() -> None:
    run = switching_stack()
    warm_pool = stack_config("azure-dev")["gpupools:gpuPools"][0]["name"]
    others = {r.urn for r in run.registrations if r.type in POOL_COMPONENTS and not r.name.endswith(f"-{warm_pool}")}
    assert others
    # The buffer's objects (children of WarmCapacity) do not depend on the other pools: the chain of
    # agent pools runs from the first GPU pool, so the warm pool (the first) depends on none of them.
    assert not [r for r in _of(run, dependents(run, others)) if WARM in r.urn]
    own = {r.urn for r in run.registrations if r.type == "gpupools:index:GpuNodePool" and r.name.endswith(f"-{warm_pool}")}
    assert [r for r in _of(run, dependents(run, own)) if WARM in r.urn and r.type == "kubernetes:apps/v1:Deployment"]
