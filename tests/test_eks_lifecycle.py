"""Issue 29: the EKS lifecycle a real AWS account accepts, from the first ``up`` to a ``destroy`` that ends.

Each test pins one finding of the EKS pre-production review (``B2``, ``M1``...) and names the
upstream source it rests on; each fails on the code before the fix.
"""

from __future__ import annotations

import functools

from gpupools.testing import Registration, Run, run_stack

NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
IGW = "aws:ec2/internetGateway:InternetGateway"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@functools.cache
def run(stack: str) -> Run:
    return run_stack(stack)


# --- B2: destroy keeps egress until Karpenter's objects are gone ------------------------------------


def deleted_before(result: Run) -> dict[str, set[str]]:
    """For each URN, the URNs ``pulumi destroy`` must delete before it: everything that depends on
    it (``dependencies``) and its children, transitively. Pulumi deletes in reverse dependency
    order (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``, ``GenerateDeletes`` /
    ``scheduleDeletes``: a resource is deleted only after every resource that depends on it and,
    for a parent, after its children)."""
    dependents: dict[str, set[str]] = {r.urn: set() for r in result.registrations}
    for registration in result.registrations:
        for dependency in registration.dependencies:
            dependents.setdefault(dependency, set()).add(registration.urn)
        if registration.parent:
            dependents.setdefault(registration.parent, set()).add(registration.urn)

    @functools.cache
    def closure(urn: str) -> frozenset[str]:
        found: set[str] = set()
        for dependent in dependents.get(urn, ()):
            found |= {dependent, *closure(dependent)}
        return frozenset(found)

    return {urn: set(closure(urn)) for urn in dependents}


def egress(result: Run) -> list[Registration]:
    private = [r for r in result.of_type(ROUTE_TABLE) if "-private-" in r.name]
    private_associations = [r for r in result.of_type(ASSOCIATION) if "-private-" in r.name]
    return [*result.of_type(NAT), *result.of_type(IGW), *private, *private_associations]


def test_karpenter_objects_are_deleted_before_the_egress_they_need() -> None:
    """B2: Karpenter removes a NodeClaim's finalizer only after EC2 reports the instance gone
    (kubernetes-sigs/karpenter ``pkg/controllers/nodeclaim/lifecycle/controller.go``), an
    EC2NodeClass's only after deleting its instance profiles through IAM (aws/karpenter-provider-aws
    v1.14.1 ``pkg/controllers/nodeclass/controller.go``), and the controller runs in private subnets
    whose only way to EC2 and IAM is the NAT gateway. Walked on the registered dependency graph of
    the Karpenter example (a created VPC): the Karpenter release, every NodePool and every
    EC2NodeClass is deleted before every NAT gateway, the internet gateway and every private route
    table and association. On main nothing depended on them: destroy removed egress first."""
    result = run("aws-karpenter-dev")
    order = deleted_before(result)
    karpenter = [
        *[r for r in result.of_type(RELEASE) if r.inputs.get("name") == "karpenter"],
        *result.of_type(NODEPOOL),
        *result.of_type(NODECLASS),
    ]
    gateways = egress(result)
    assert len(karpenter) >= 3 and result.of_type(NAT) and len(gateways) >= 7
    for needed in gateways:
        missing = [k.name for k in karpenter if k.urn not in order[needed.urn]]
        assert missing == [], f"destroy deletes {needed.type} {needed.name} before {missing}"


def test_every_node_group_is_deleted_before_the_egress_its_nodes_joined_through() -> None:
    """The same order for cluster-autoscaler stacks, and on create: a private subnet's nodes join
    and pull images only through NAT, so every node group, the system group included, depends on it."""
    result = run("aws-dev")
    order = deleted_before(result)
    groups = result.of_type(NODE_GROUP)
    assert groups
    for needed in egress(result):
        missing = [g.name for g in groups if g.urn not in order[needed.urn]]
        assert missing == [], f"{needed.name} before {missing}"
