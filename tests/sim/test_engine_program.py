"""The engine's program (``gpupools.sim.engine_program``) is the stack's Kubernetes half, not a copy of it.

Run on the recording runtime (no engine, no cluster: part of the fast suite), the program that
``sim deploy`` hands the real engine must register exactly the Kubernetes objects, with exactly the
inputs, that the stack program registers for ``pulumi up``, except the Helm releases and URL-fetched
YAML the sim cannot install (listed in ``StackFacts.skipped``).
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi_kubernetes as k8s
import pytest
from gpupools.sim import engine_program, objects
from gpupools.testing import run_program, stack_config
from gpupools.testing.manifests import to_manifest

from tests.examples import EXAMPLE_STACKS

STACKS = list(EXAMPLE_STACKS)


def _key(manifest: dict[str, Any]) -> str:
    return objects.describe(manifest)


def engine_manifests(facts: engine_program.StackFacts) -> dict[str, dict[str, Any]]:
    def program() -> None:
        engine_program.kubernetes_half(facts, k8s.Provider("sim", kubeconfig="{}"))

    run = run_program(program)
    return {_key(m): m for m in (to_manifest(r, redact=False) for r in run.kubernetes_objects())}


@pytest.mark.parametrize("stack", STACKS)
def test_the_engine_program_registers_the_stacks_kubernetes_objects(stack: str) -> None:
    facts = engine_program.facts(stack)
    expected = {_key(m): m for m in objects.load(stack).manifests}
    got = engine_manifests(facts)
    assert sorted(got) == sorted(expected)
    for key, manifest in expected.items():
        assert got[key] == manifest, key


def with_warm(stack: str) -> dict[str, Any]:
    """``stack`` with a scheduled warm node on its first GPU pool without sharing (no committed stack has one)."""
    pools = copy.deepcopy(stack_config(stack)["gpupools:gpuPools"])
    first = next(p for p in pools if not p.get("sharing"))
    first["warm"] = {"nodes": 1, "schedule": {"start": "08:00", "end": "18:00"}}
    return {"gpupools:gpuPools": pools}


@pytest.mark.parametrize("stack", STACKS)
def test_the_engine_program_registers_a_warm_stacks_buffers_as_the_stack_does(stack: str) -> None:
    overrides = with_warm(stack)
    expected = {_key(m): m for m in objects.load(stack, overrides=overrides).manifests}
    assert any(m["metadata"].get("namespace") == "gpupools-warm" for m in expected.values())
    got = engine_manifests(engine_program.facts(stack, overrides))
    assert sorted(got) == sorted(expected)
    for key, manifest in expected.items():
        assert got[key] == manifest, key


@pytest.mark.parametrize("stack", STACKS)
def test_facts_take_the_pools_the_stack_gives_its_components(stack: str) -> None:
    facts = engine_program.facts(stack)
    assert facts.system_pool.pool == "system"
    spec_pools = {p.name for p in facts.spec.pools}
    if facts.karpenter:
        # NAP/Karpenter stacks build their NodePools in the program: only the system pool is a node group.
        assert [p.pool for p in facts.pools] == ["system", *[p.name for p in facts.spec.pools]]
    else:
        assert {p.pool for p in facts.pools[1:]} == spec_pools


def test_helm_releases_are_reported_not_dropped() -> None:
    facts = engine_program.facts("aws-dev")
    assert any("cluster-autoscaler" in line and "rendered from the pinned chart" in line for line in facts.skipped)
