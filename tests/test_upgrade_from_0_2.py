"""The first ``up`` after upgrading from 0.2.0, for every example stack 0.2.0 had (issue 46).

The state is what 0.2.0's own program registered (its code from the git history, its stack file);
the program is this checkout's with the same stack file and the one step the CHANGELOG asks for
("Upgrading from 0.2.0": ``gpupools:upgrade.fromVersion: 0.2.0``). ``tests.upgrade.plan`` works
out the engine's steps with the providers' replace rules. The test fails on:

* a replacement or delete of a protected or stateful resource (the EKS or AKS cluster, the OIDC
  provider, a node group or agent pool, the network);
* a controller left on an identity the ``up`` deletes (its role changes and its pod template does
  not: the pods keep the old role's credentials, review T1);
* a delete that waits on nodes (a Karpenter or NAP node class: its finalizer holds it while a
  NodeClaim uses it, review T3);
* a second ``up`` that is not a no-op.

The Kubernetes half of the same upgrade runs through the real engine against the sim in
``tests/sim/test_upgrade.py``. ``aws-training-dev`` is new in 0.3.0: nothing to upgrade from.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator

import pytest

from tests.upgrade import plan, recorded
from tests.upgrade.plan import Step
from tests.upgrade.recorded import Recorded

VERSION = "0.2.0"
if not recorded.have_history():
    pytest.skip("no git history here: the released program is read from it", allow_module_level=True)
STACKS = recorded.released_stacks(VERSION)
UPGRADE_STEP = {"gpupools:upgrade": {"fromVersion": VERSION}}
"""What CHANGELOG.md "Upgrading from 0.2.0" asks a user to add before the first ``up``."""

STATEFUL = frozenset(
    {
        "eks:index:Cluster",  # its aws.eks.Cluster and OIDC provider (tests.upgrade.plan)
        "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
        "aws:eks/nodeGroup:NodeGroup",
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "aws:ec2/natGateway:NatGateway",
        "azure-native:containerservice:ManagedCluster",
        "azure-native:containerservice:AgentPool",
        "azure-native:resources:ResourceGroup",
        "azure-native:network:VirtualNetwork",
        "azure-native:network:Subnet",
    }
)
"""Resources whose replacement or delete loses running nodes, workloads or the cluster's identity."""

NODE_CLASSES = frozenset({"kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "kubernetes:karpenter.azure.com/v1beta1:AKSNodeClass"})
"""Kinds whose delete waits for their nodes: Karpenter's node class finalizer holds a class while a
NodeClaim references it (aws/karpenter-provider-aws v1.14.1 ``pkg/controllers/nodeclass/controller.go``,
``finalize``; Azure/karpenter-provider-azure the same controller for AKSNodeClass)."""

RELEASE = "kubernetes:helm.sh/v3:Release"
IDENTITY_ANNOTATIONS = ("eks.amazonaws.com/role-arn", "azure.workload.identity/client-id")
"""ServiceAccount annotations that give a controller its cloud identity. Both are read once, when
the pod is created: the EKS Pod Identity webhook sets ``AWS_ROLE_ARN`` at pod admission
(aws/amazon-eks-pod-identity-webhook ``pkg/handler/handler.go``), the Azure workload identity
webhook ``AZURE_CLIENT_ID`` likewise (``pkg/webhook/webhook.go``)."""


@functools.cache
def upgrade(stack: str, step: bool = True) -> tuple[dict[str, Recorded], dict[str, Recorded], list[Step]]:
    """(state after 0.2.0's ``up``, this checkout's registrations, the steps of the upgrade ``up``)."""
    state = recorded.record_release(VERSION, stack)
    config = {**recorded.released_config(VERSION, stack), **(UPGRADE_STEP if step else {})}
    program = recorded.record_head(stack, config)
    return {r.urn: r for r in state}, {r.urn: r for r in program}, plan.plan(state, program)


def test_every_stack_0_2_0_had_is_upgraded() -> None:
    assert set(STACKS) == {"aws-dev", "aws-karpenter-dev", "azure-dev", "azure-nap-dev"}


@pytest.mark.parametrize("stack", STACKS)
def test_no_protected_or_stateful_resource_is_replaced_or_deleted(stack: str) -> None:
    state, program, steps = upgrade(stack)
    protected = {u for u, r in {**state, **program}.items() if r.protected}
    bad = [
        s for s in steps if s.op in ("replace", "delete") and (s.type in STATEFUL or s.urn in protected or s.old_urn in protected)
    ]
    assert not bad, "\n".join(map(str, bad))
    # The cluster is there before and after, as the same resource.
    clusters = [s for s in steps if s.type in ("eks:index:Cluster", "azure-native:containerservice:ManagedCluster")]
    assert len(clusters) == 1 and clusters[0].op in ("same", "update"), clusters


@pytest.mark.parametrize("stack", STACKS)
def test_no_delete_waits_on_nodes(stack: str) -> None:
    state, _, steps = upgrade(stack)
    waiting = [
        s
        for s in steps
        if s.op in ("delete", "replace") and s.type in NODE_CLASSES and not state.get(s.old_urn or s.urn, _NONE).retained
    ]
    assert not waiting, "\n".join(map(str, waiting))


_NONE = Recorded("", "", "", "", True, {}, {}, "")


def test_without_the_upgrade_step_the_old_classes_would_be_deleted() -> None:
    """The regression T3 describes: 0.3.0 names each class after its pool, so without
    ``gpupools:upgrade.fromVersion`` the upgrade ``up`` deletes 0.2.0's three classes."""
    _, _, steps = upgrade("aws-karpenter-dev", step=False)
    deleted = sorted(s.urn.rsplit("::", 1)[1] for s in steps if s.op == "delete" and s.type in NODE_CLASSES)
    assert deleted == ["nodepools-nvidia-al2023-100g", "nodepools-nvidia-al2023-200g", "nodepools-standard-al2023-80g"]


def test_the_kept_classes_are_forgotten_not_deleted_once_the_key_goes() -> None:
    """After the upgrade ``up`` the old classes are in state with ``retainOnDelete``; an ``up``
    without the key drops them from the program, and the engine removes a retained resource from
    state without calling the provider's delete (pulumi/pulumi ``pkg/resource/deploy/step.go``,
    ``DeleteStep.Apply``: ``if !s.old.RetainOnDelete``)."""
    _, upgraded, _ = upgrade("aws-karpenter-dev")
    program = recorded.record_head("aws-karpenter-dev", recorded.released_config(VERSION, "aws-karpenter-dev"))
    steps = plan.plan(upgraded.values(), program)
    deleted = [s for s in steps if s.op == "delete"]
    assert deleted and all(s.type in NODE_CLASSES and upgraded[s.urn].retained for s in deleted), "\n".join(map(str, deleted))


def _identity(values: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(values, dict):
        for key, value in values.items():
            if key in IDENTITY_ANNOTATIONS and isinstance(value, str):
                found.add(value)
            else:
                found |= _identity(value)
    elif isinstance(values, list):
        for value in values:
            found |= _identity(value)
    return found


def _releases(stack: str) -> Iterator[tuple[Recorded, Recorded]]:
    state, program, steps = upgrade(stack)
    for step in steps:
        if step.type == RELEASE and step.old_urn:
            yield state[step.old_urn], program[step.urn]


@pytest.mark.parametrize("stack", STACKS)
def test_a_controller_whose_identity_changes_gets_new_pods(stack: str) -> None:
    """Review T1: a Helm release whose ServiceAccount's role changes must change its pod template
    too (``podAnnotations``, which both the cluster-autoscaler and the Karpenter chart render into
    the pod template: tests/test_sim_charts.py), or the running pods keep the old role, which this
    ``up`` deletes."""
    for old, new in _releases(stack):
        was, now = _identity(old.inputs.get("values")), _identity(new.inputs.get("values"))
        if was == now:
            continue
        pod_was = (old.inputs.get("values") or {}).get("podAnnotations") or {}
        pod_now = (new.inputs.get("values") or {}).get("podAnnotations") or {}
        assert pod_now != pod_was and now <= set(pod_now.values()), (
            f"{new.name}: identity {was} -> {now}, podAnnotations {pod_now}"
        )


def test_the_roles_that_change_are_the_ones_0_3_0_renamed() -> None:
    """The identity check above is not vacuous: the upgrade renames both controllers' roles."""
    changed = {
        new.name
        for stack in STACKS
        for old, new in _releases(stack)
        if _identity(old.inputs.get("values")) != _identity(new.inputs.get("values"))
    }
    assert changed == {"cluster-autoscaler", "karpenter"}


@pytest.mark.parametrize("stack", STACKS)
def test_the_second_up_is_a_no_op(stack: str) -> None:
    _, program, _ = upgrade(stack)
    config = {**recorded.released_config(VERSION, stack), **UPGRADE_STEP}
    again = plan.plan(program.values(), recorded.record_head(stack, config))
    assert {s.op for s in again} == {"same"}, "\n".join(str(s) for s in again if s.op != "same")
