"""``gpupools:cluster.permissionsBoundary`` (issue 37, M1'): every IAM role the EKS stack creates carries
it, pulumi-eks creates none of its own, and the config refuses it where it cannot apply."""

from __future__ import annotations

import functools
import hashlib

import pytest
from gpupools import config
from gpupools.aws import iam
from gpupools.errors import ConfigError
from gpupools.testing import Run, run_stack, stack_config

from tests.test_config import AWS, AZURE, with_key

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


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_pulumi_eks_creates_no_role_of_its_own_with_a_boundary(stack: str) -> None:
    [cluster] = bounded(stack).of_type(EKS_CLUSTER)
    inputs = cluster.inputs
    [service_role] = [r for r in bounded(stack).of_type(ROLE) if r.name.endswith("-eksRole-role")]
    assert inputs["serviceRole"]["urn"] == service_role.urn
    assert inputs["skipDefaultNodeGroup"] is True
    assert not inputs.get("createInstanceRole") and "fargate" not in inputs and "autoMode" not in inputs


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_without_a_boundary_nothing_changes_for_existing_stacks(stack: str) -> None:
    """No boundary: pulumi-eks keeps creating its own service role (an existing cluster's role, whose
    ARN the cluster cannot change), and no role gets a ``permissionsBoundary``."""
    run = run_stack(stack)
    [cluster] = run.of_type(EKS_CLUSTER)
    assert "serviceRole" not in cluster.inputs
    assert all("permissionsBoundary" not in r.inputs for r in run.of_type(ROLE))


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
