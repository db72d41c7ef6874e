"""What the first ``up`` after upgrading does with the last ``up``'s state: the engine's matching of
registrations to state, and the providers' replace rules.

* Matching: a registration takes the old resource at its own URN, else at the first of its aliases
  that state holds ("We look up first by URN and then by any provided aliases", pulumi/pulumi
  ``pkg/resource/deploy/step_generator.go``, ``generateSteps``). Old resources nobody took are
  deleted; registrations that took none are created.
* Replacement of a taken resource: a changed input the provider replaces on or the resource's own
  ``replaceOnChanges`` names, not covered by ``ignoreChanges`` (``gpupools.synth.diff.replace_reason``:
  the providers' force-new fields, name inputs, a Kubernetes object's identity).
* pulumi-eks's ``eks:index:Cluster`` is a multi-language component: its children (the EKS cluster,
  the OIDC provider, pulumi-eks's own service role before 0.3.0) are not registered by this program
  and not in a recording. Its ``aws.eks.Cluster`` is replaced when an argument that reaches a
  force-new field of it changes (``EKS_CLUSTER_FORCE_NEW``); the service role the cluster is given
  (``roleArn``, force-new) must be the same physical role before and after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from gpupools.aws import iam
from gpupools.synth.diff import diff_resource

from tests.upgrade.recorded import Recorded, normalise

EKS_COMPONENT = "eks:index:Cluster"


@dataclass(frozen=True)
class Step:
    """One resource's step: ``create``, ``same``, ``update``, ``replace`` or ``delete``."""

    op: str
    urn: str
    type: str
    old_urn: str = ""
    reasons: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = self.urn.split("::", 2)[-1]
        moved = f" (was {self.old_urn.split('::', 2)[-1]})" if self.old_urn and self.old_urn != self.urn else ""
        why = f": {'; '.join(self.reasons)}" if self.reasons else ""
        return f"{self.op} {where}{moved}{why}"


def _document(r: Recorded) -> dict[str, Any]:
    options = {k: v for k, v in r.options.items() if k in ("replaceOnChanges", "ignoreChanges")}
    return {"address": r.urn, "type": r.type, "name": r.name, "inputs": r.inputs, "options": options}


def replace_reasons(old: Recorded, new: Recorded) -> tuple[list[str], bool]:
    """(why the change of ``old`` to ``new`` replaces the resource, whether any input changed)."""
    change = diff_resource(_document(old), _document(new))
    if change is None:
        return [], False
    inputs = [f for f in change.fields if f.segments[0] == "inputs" and not f.ignored]
    reasons = [f"{'.'.join(str(s) for s in f.segments[1:])} ({f.replaces})" for f in inputs if f.replaces]
    return reasons, bool(inputs)


def match(state: Mapping[str, Recorded], program: Mapping[str, Recorded]) -> dict[str, str]:
    """New URN -> the old URN each registration takes (see the module docstring)."""
    taken: dict[str, str] = {}
    for urn, resource in program.items():
        old = urn if urn in state else next((a for a in resource.aliases if a in state), None)
        if old is not None:
            taken[urn] = old
    return taken


def with_pulumi_eks_children(resources: Iterable[Recorded]) -> dict[str, Recorded]:
    """The resources by URN, plus pulumi-eks's service role and its attachment where pulumi-eks made
    them: an ``eks:index:Cluster`` without a ``serviceRole`` argument (pulumi-eks v4
    ``nodejs/eks/cluster/cluster.ts``, ``createCore``; every stack before 0.3.0)."""
    found = {r.urn: r for r in resources}
    for cluster in [r for r in found.values() if r.type == EKS_COMPONENT and "serviceRole" not in r.inputs]:
        role, attachment = iam.pulumi_eks_service_role_urns(cluster.parent, cluster.name)
        found[role] = Recorded(role, "aws:iam/role:Role", role.rsplit("::", 1)[1], "", True, {}, {}, "")
        found[attachment] = Recorded(
            attachment, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", attachment.rsplit("::", 1)[1], "", True, {}, {}, ""
        )
    return found


def service_role(cluster: Recorded) -> str:
    """The URN of the role an ``eks:index:Cluster`` gives its EKS cluster as ``roleArn``."""
    given = cluster.inputs.get("serviceRole")
    if isinstance(given, dict) and given.get("urn"):
        return normalise(str(given["urn"]))
    return iam.pulumi_eks_service_role_urns(cluster.parent, cluster.name)[0]


def plan(state_resources: Iterable[Recorded], program_resources: Iterable[Recorded]) -> list[Step]:
    """Every step of the ``up`` of ``program_resources`` over ``state_resources``."""
    state = with_pulumi_eks_children(state_resources)
    program = with_pulumi_eks_children(program_resources)
    taken = match(state, program)
    steps: list[Step] = []
    replaced: set[str] = set()
    for urn, new in program.items():
        if urn not in taken:
            steps.append(Step("create", urn, new.type))
            continue
        old = state[taken[urn]]
        reasons, changed = replace_reasons(old, new) if new.inputs or old.inputs else ([], False)
        if reasons:
            replaced.add(urn)
        steps.append(Step("replace" if reasons else "update" if changed else "same", urn, new.type, taken[urn], tuple(reasons)))
    # The EKS cluster inside pulumi-eks's component: its roleArn is force-new (terraform-provider-aws
    # internal/service/eks/cluster.go, "role_arn": ForceNew), so the role must be the one it had.
    by_urn = {s.urn: s for s in steps}
    for urn, new in program.items():
        if new.type != EKS_COMPONENT or urn not in taken:
            continue
        role_now, role_was = service_role(new), service_role(state[taken[urn]])
        if taken.get(role_now) != role_was or role_now in replaced:
            step = by_urn[urn]
            reason = f"serviceRole: the cluster's roleArn (force-new) moves from {role_was.rsplit('::', 1)[1]} to a new role"
            by_urn[urn] = Step("replace", urn, new.type, step.old_urn, (*step.reasons, reason))
    steps = list(by_urn.values())
    steps += [Step("delete", urn, r.type) for urn, r in state.items() if urn not in set(taken.values())]
    return steps
