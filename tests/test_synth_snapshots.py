"""Snapshot tests: the synthesized desired state of every committed stack is checked in.

``tests/snapshots/<stack>.json`` holds the ``desired-state.json`` of each ``Pulumi.<stack>.yaml``.
When a change alters what a stack would deploy, these tests fail with a summary of the difference
(the same Markdown the PR comment shows); if the change is intended, run ``scripts/update-snapshots``
and commit the new snapshots with it, so the reviewer sees the desired-state change in the PR diff.

Also here: synth is deterministic (two runs, identical bytes), and every object in each stack's
``kubernetes.yaml`` is valid (strict) at the stack's Kubernetes version.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import yaml
from gpupools.synth import Synthesis, committed_stacks, synthesize
from gpupools.synth.diff import diff_documents, render_stack
from gpupools.testing import PROJECT_ROOT, stack_config
from gpupools.versions import DEFAULT_KUBERNETES_VERSION

from tests.crd_schema import assert_valid_custom_resource, crds_for
from tests.examples import EXAMPLE_STACKS
from tests.k8s_schema import validate_manifest

SNAPSHOTS = Path(__file__).parent / "snapshots"
STACKS = list(EXAMPLE_STACKS)
UPDATE_HINT = "If this change is intended, run scripts/update-snapshots and commit tests/snapshots/ with it."


@cache
def synthesized(stack: str) -> Synthesis:
    return synthesize(stack, PROJECT_ROOT)


def test_every_committed_stack_has_a_snapshot_and_every_snapshot_a_stack() -> None:
    snapshots = sorted(p.stem for p in SNAPSHOTS.glob("*.json"))
    missing = sorted(set(STACKS) - set(snapshots))
    assert not missing, f"no snapshot of the example stacks {missing}. {UPDATE_HINT}"
    # A user's own stacks may have snapshots too (scripts/update-snapshots writes one per stack file).
    orphans = sorted(set(snapshots) - set(committed_stacks(PROJECT_ROOT)))
    assert not orphans, f"snapshots {orphans} have no Pulumi.<stack>.yaml. {UPDATE_HINT}"


@pytest.mark.parametrize("stack", STACKS)
def test_synth_output_matches_the_snapshot(stack: str) -> None:
    path = SNAPSHOTS / f"{stack}.json"
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}. {UPDATE_HINT}")
    expected = path.read_text(encoding="utf-8")
    actual = synthesized(stack).document_json
    if actual != expected:
        diff = diff_documents(json.loads(expected), json.loads(actual), stack)
        summary = render_stack(diff) if not diff.empty else "(only formatting differs)\n"
        pytest.fail(f"synth output of {stack} differs from {path.name}:\n\n{summary}\n{UPDATE_HINT}", pytrace=False)


@pytest.mark.parametrize("stack", STACKS)
def test_synth_is_deterministic(stack: str) -> None:
    first = synthesized(stack)
    second = synthesize(stack, PROJECT_ROOT)
    assert second.document_json == first.document_json
    assert second.manifests_yaml == first.manifests_yaml


@pytest.mark.parametrize("stack", STACKS)
def test_kubernetes_yaml_is_valid_at_the_stacks_kubernetes_version(stack: str) -> None:
    version = (stack_config(stack).get("gpupools:cluster") or {}).get("kubernetesVersion", DEFAULT_KUBERNETES_VERSION)
    documents = list(yaml.safe_load_all(synthesized(stack).manifests_yaml))
    assert documents, f"{stack} has no Kubernetes objects"
    for document in documents:
        if crds_for(str(document.get("apiVersion", "")), str(document.get("kind", ""))):
            # A custom resource (Karpenter, Kueue, Prometheus Operator): kubernetes-validate has no
            # schema for it, so it is checked against its pinned CRD (tests/crds).
            assert_valid_custom_resource(document)
            continue
        validate_manifest(document, version)


@pytest.mark.parametrize("stack", STACKS)
def test_snapshot_has_no_secret_values(stack: str) -> None:
    run = synthesized(stack).run
    text = (SNAPSHOTS / f"{stack}.json").read_text(encoding="utf-8")
    secrets = [str(run.outputs[name]) for name in run.secret_outputs]
    for registration in run.registrations:
        for path in registration.secret_paths:
            value: object = registration.inputs
            for part in path.split("."):
                value = value[part] if isinstance(value, dict) else value
            secrets.append(json.dumps(value)[1:-1] if isinstance(value, str) else json.dumps(value))
    assert secrets, "the stacks export a secret kubeconfig; nothing secret was found to check"
    for secret in secrets:
        assert secret not in text
