"""``gpupools:cluster.permissionsBoundary`` (issue 37, M1'): every IAM role the EKS stack creates carries
it, pulumi-eks creates none of its own, and the config refuses it where it cannot apply."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

import pytest
from gpupools import config
from gpupools.aws import iam
from gpupools.errors import ConfigError
from gpupools.testing import Run, run_stack, stack_config

from tests.test_config import AWS, AZURE, with_key
from tests.test_eks_lifecycle import alias_urns

BOUNDARY = "arn:aws:iam::123456789012:policy/gpupools/deployer-boundary"

AWS_STACKS = ("aws-dev", "aws-karpenter-dev", "aws-training-dev")
"""Every committed EKS example stack."""

ROLE = "aws:iam/role:Role"
EKS_CLUSTER = "eks:index:Cluster"


@functools.cache
def bounded(stack: str) -> Run:
    cluster = dict(stack_config(stack)["gpupools:cluster"], permissionsBoundary=BOUNDARY)
    return run_stack(stack, overrides={"gpupools:cluster": cluster})


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_every_role_the_stack_registers_carries_the_boundary(stack: str) -> None:
    """Node role, cluster service role and the provisioner's IRSA role: ``permissionsBoundary`` on
    each ``aws.iam.Role`` (the provider's ``CreateRole.PermissionsBoundary``)."""
    run = bounded(stack)
    roles = run.of_type(ROLE)
    names = {r.name for r in roles}
    cluster = stack_config(stack)["gpupools:cluster"]["name"]
    assert f"{cluster}-node-role" in names and f"{cluster}-eks-eksRole-role" in names
    assert names & {f"{cluster}-cluster-autoscaler-role", f"{cluster}-karpenter-controller"}
    for role in roles:
        assert role.inputs.get("permissionsBoundary") == BOUNDARY, role.name


# What makes pulumi-eks v4.3.0 create an IAM role itself (nodejs/eks/cluster/cluster.ts, createCore):
# the EKS service role unless `serviceRole` is given; an instance role when `createInstanceRole`, or
# when the default node group is not skipped and `createInstanceRole` is unset; Fargate's pod execution
# role with `fargate` and no `podExecutionRoleArn`; Auto Mode's node role with `autoMode.enabled`.
# Its ServiceRole component takes no permissions boundary (nodejs/eks/servicerole.ts).


@pytest.mark.parametrize("bounded_run", [True, False], ids=["with-boundary", "without"])
@pytest.mark.parametrize("stack", AWS_STACKS)
def test_pulumi_eks_creates_no_role_of_its_own(stack: str, bounded_run: bool) -> None:
    """The service role is the stack's, boundary or not (review T2): pulumi-eks gets it as
    ``serviceRole`` and creates none."""
    run = bounded(stack) if bounded_run else run_stack(stack)
    [cluster] = run.of_type(EKS_CLUSTER)
    inputs = cluster.inputs
    [service_role] = [r for r in run.of_type(ROLE) if r.name.endswith("-eksRole-role")]
    assert inputs["serviceRole"]["urn"] == service_role.urn
    assert inputs["skipDefaultNodeGroup"] is True
    assert not inputs.get("createInstanceRole") and "fargate" not in inputs and "autoMode" not in inputs


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_without_a_boundary_no_role_gets_one(stack: str) -> None:
    run = run_stack(stack)
    assert all("permissionsBoundary" not in r.inputs for r in run.of_type(ROLE))


# --- T2: adding and removing the boundary, as the engine matches old state ---------------------------


@dataclass(frozen=True)
class Registered:
    """One resource of a run as the engine sees its registration: its URN, the URNs its aliases
    resolve to, and its inputs."""

    urn: str
    type: str
    aliases: tuple[str, ...]
    inputs: dict[str, Any]


def registered(stack: str, boundary: str | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, Registered]:
    """Every resource ``stack`` registers with (or without) ``boundary``, by URN, with its aliases
    resolved as the engine resolves them (``tests.test_eks_lifecycle.alias_urns``)."""
    from gpupools.testing import RecordingMonitor

    seen: dict[tuple[str, str, str], tuple[str, ...]] = {}
    register = RecordingMonitor.RegisterResource

    def recording(self: RecordingMonitor, request: Any) -> Any:
        seen[(request.type, request.name, request.parent)] = tuple(alias_urns(request, stack, "gpupools"))
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", recording)
    cluster = dict(stack_config(stack)["gpupools:cluster"])
    cluster.pop("permissionsBoundary", None)
    if boundary:
        cluster["permissionsBoundary"] = boundary
    run = run_stack(stack, overrides={"gpupools:cluster": cluster})
    return {r.urn: Registered(r.urn, r.type, seen.get((r.type, r.name, r.parent), ()), dict(r.inputs)) for r in run.registrations}


def next_up(state: dict[str, Registered], program: dict[str, Registered]) -> tuple[dict[str, str], set[str], set[str]]:
    """What the engine does with ``state`` (the last ``up``'s resources) when ``program`` registers:
    each registration takes the old resource at its own URN, else at the first of its aliases that
    state holds ("We look up first by URN and then by any provided aliases", pulumi/pulumi
    ``pkg/resource/deploy/step_generator.go``, ``generateSteps``); old resources nobody took are
    deleted, registrations that took none are created. Returns (new URN -> old URN, created,
    deleted)."""
    taken: dict[str, str] = {}
    for urn, resource in program.items():
        old = urn if urn in state else next((a for a in resource.aliases if a in state), None)
        if old is not None:
            taken[urn] = old
    created = set(program) - set(taken)
    deleted = set(state) - set(taken.values())
    return taken, created, deleted


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_adding_removing_and_adding_the_boundary_keeps_the_one_service_role(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review T2: add, remove and add again ``permissionsBoundary``, each an ``up`` on the last one's
    state. No IAM role is created or deleted, the cluster keeps pointing at the same role (its
    ``roleArn`` is ``ForceNew``, so another role would replace the cluster), and the boundary is an
    input change of the role (an in-place ``PutRolePermissionsBoundary`` /
    ``DeleteRolePermissionsBoundary``). Before the fix the removal moved the role back to
    pulumi-eks's URN, and nothing on the new registration pointed at the old one: a new role."""
    state = registered(stack, None, monkeypatch)
    for boundary in (BOUNDARY, None, BOUNDARY):
        program = registered(stack, boundary, monkeypatch)
        taken, created, deleted = next_up(state, program)
        assert not {u for u in created if program[u].type == ROLE}, f"boundary {boundary}: roles created: {created}"
        assert not {u for u in deleted if state[u].type == ROLE}, f"boundary {boundary}: roles deleted: {deleted}"
        [cluster] = [r for r in program.values() if r.type == EKS_CLUSTER]
        [old_cluster] = [r for r in state.values() if r.type == EKS_CLUSTER]
        assert taken[cluster.inputs["serviceRole"]["urn"]] == old_cluster.inputs["serviceRole"]["urn"]
        role = program[cluster.inputs["serviceRole"]["urn"]]
        assert role.inputs.get("permissionsBoundary") == boundary
        state = program


def test_a_stack_whose_service_role_pulumi_eks_made_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stack before 0.3.0 has pulumi-eks's service role (``<name>-eksRole`` ServiceRole >
    ``<name>-eksRole-role``): the first ``up`` after upgrading, without a boundary, takes that role
    through the alias instead of creating one."""
    program = registered("aws-dev", None, monkeypatch)
    [cluster] = [r for r in program.values() if r.type == EKS_CLUSTER]
    role = program[cluster.inputs["serviceRole"]["urn"]]
    [component] = [r for r in program.values() if r.type == "gpupools:index:EksCluster"]
    pulumi_eks_role, pulumi_eks_attachment = iam.pulumi_eks_service_role_urns(component.urn, cluster.urn.rsplit("::", 1)[1])
    state = {pulumi_eks_role: Registered(pulumi_eks_role, ROLE, (), {})}
    taken, created, _ = next_up(state, program)
    assert taken[role.urn] == pulumi_eks_role and role.urn not in created
    assert any(pulumi_eks_attachment in r.aliases for r in program.values())


def child_urn(parent_urn: str, type_: str, name: str) -> str:
    """Pulumi's URN of a child resource: the parent's type chain with ``$<type>`` appended, and the
    child's name (``urn:pulumi:<stack>::<project>::<parent types>$<type>::<name>``)."""
    head, types, _ = parent_urn.rsplit("::", 2)
    return f"{head}::{types}${type_}::{name}"


def test_the_service_role_is_aliased_to_the_one_pulumi_eks_made() -> None:
    """Adding a boundary to an existing stack keeps the cluster's role: our role and its attachment
    are aliased to pulumi-eks's, whose URNs follow from the recorded ``eks:index:Cluster`` URN and
    pulumi-eks's names (``${name}-eksRole`` ServiceRole > ``${name}-role`` Role and
    ``${name}-${sha1hash(policy id)}`` attachment, both children of the ServiceRole)."""
    [cluster] = bounded("aws-dev").of_type(EKS_CLUSTER)
    # The recording runtime spells the root stack's type into a top-level component's URN; the
    # children's URNs (the eks.Cluster's here) show the chain without it, as the engine makes them.
    [component] = [r for r in bounded("aws-dev").registrations if r.type == "gpupools:index:EksCluster"]
    service_role = child_urn(cluster.urn, "eks:index:ServiceRole", f"{cluster.name}-eksRole")
    digest = hashlib.sha1(b"arn:aws:iam::aws:policy/AmazonEKSClusterPolicy").hexdigest()[:8]
    assert iam.pulumi_eks_service_role_urns(component.urn, cluster.name) == (
        child_urn(service_role, ROLE, f"{cluster.name}-eksRole-role"),
        child_urn(service_role, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", f"{cluster.name}-eksRole-{digest}"),
    )


def test_the_boundary_is_parsed_and_aws_only() -> None:
    spec = config.parse(with_key(AWS, "gpupools:cluster", {**AWS["gpupools:cluster"], "permissionsBoundary": BOUNDARY}))
    assert spec.cluster.permissions_boundary == BOUNDARY
    assert config.parse(AWS).cluster.permissions_boundary is None
    with pytest.raises(ConfigError, match=r"gpupools:cluster.permissionsBoundary: is AWS only"):
        config.parse(with_key(AZURE, "gpupools:cluster", {**AZURE["gpupools:cluster"], "permissionsBoundary": BOUNDARY}))
