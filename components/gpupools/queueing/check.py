"""The rules of ``gpupools:queueing`` against the rest of the stack, before anything is registered.

Each broken rule is one ``ConfigError`` naming the path, the rule and the value:

* ``enabled: false`` (the default) with any other key: a setting that would do nothing;
* no namespace at all (neither ``namespaces`` nor a team's): nobody could submit to the queue;
* a namespace or team name that is not a DNS label, a team named like the shared queue, a team twice;
* ``pools`` naming a pool that is in neither ``gpuPools`` nor ``cpuPools`` (with a close match);
* ``teams[].gpus`` adding up to more GPU slots than the queued pools' ceiling holds (``gpupools.capacity``: the
  GPU slots Kueue's quotas add up to);
* ``atomicScaleUp: true`` under ``provisioner: karpenter``: Karpenter and AKS Node Auto Provisioning
  do not act on ProvisioningRequests (kubernetes-sigs/kueue #5133), so the check would hold every
  GPU workload forever.
"""

from __future__ import annotations

import difflib

from gpupools import rules, sharing
from gpupools.capacity import SCENARIO_NAMES, Scenario, fleet_figures
from gpupools.catalog.sizes import size_facts
from gpupools.errors import ConfigError
from gpupools.pricing.estimate import groups_of_spec
from gpupools.queueing.queues import SHARED_QUEUE
from gpupools.specs import Provisioner, QueueingSpec, StackSpec


def atomic_scale_up(spec: StackSpec) -> bool:
    """Whether the ProvisioningRequest check is wired: ``atomicScaleUp`` if given, else on exactly
    under cluster-autoscaler."""
    queueing = spec.queueing
    if queueing.atomic_scale_up is not None:
        return queueing.atomic_scale_up
    return spec.provisioner is Provisioner.CLUSTER_AUTOSCALER


def gpu_slots_per_node(spec: StackSpec) -> dict[str, int]:
    """GPU slots per node per pool name (GPUs of its first type x sharing slots; 0 for CPU pools)."""
    slots = {}
    for pool in spec.pools:
        facts = size_facts(pool.instance_types[0]) if pool.instance_types else None
        slots[pool.name] = (facts[0] if facts else 0) * sharing.slots_per_gpu(pool.sharing) if pool.is_gpu else 0
    return slots


def _check_name(name: object, path: str, what: str) -> None:
    if not rules.is_dns_label(name):
        raise ConfigError(
            path, f"must be a {what}: lowercase letters, digits and '-', at most {rules.DNS_LABEL_MAX} characters", name
        )


def check_queueing(spec: StackSpec, explicit: frozenset[str] = frozenset(), path: str = "gpupools:queueing") -> None:
    """Every ``gpupools:queueing`` rule (module docstring). ``explicit``: the keys the config wrote."""
    queueing: QueueingSpec = spec.queueing
    if not queueing.enabled:
        extra = sorted(explicit - {"enabled"})
        if extra:
            raise ConfigError(f"{path}.{extra[0]}", "has no effect unless gpupools:queueing.enabled is true", extra[0])
        return
    if not queueing.namespaces and not queueing.teams:
        raise ConfigError(
            f"{path}.namespaces", "must name at least one namespace (here or in teams[].namespaces) for a LocalQueue", []
        )
    for index, namespace in enumerate(queueing.namespaces):
        _check_name(namespace, f"{path}.namespaces[{index}]", "namespace name")
    seen: set[str] = set()
    for index, team in enumerate(queueing.teams):
        at = f"{path}.teams[{index}]"
        _check_name(team.name, f"{at}.name", "queue name")
        if team.name == SHARED_QUEUE:
            raise ConfigError(
                f"{at}.name", f"must not be {SHARED_QUEUE!r}: the shared queue and the teams' cohort have that name", team.name
            )
        if team.name in seen:
            raise ConfigError(f"{at}.name", "must be unique among teams", team.name)
        seen.add(team.name)
        if not team.namespaces:
            raise ConfigError(f"{at}.namespaces", "must name at least one namespace for the team's LocalQueue", [])
        for n, namespace in enumerate(team.namespaces):
            _check_name(namespace, f"{at}.namespaces[{n}]", "namespace name")
        if team.gpus < 0:
            raise ConfigError(f"{at}.gpus", "must be >= 0 (GPU slots guaranteed to the team)", team.gpus)
    names = [pool.name for pool in spec.pools]
    for index, name in enumerate(queueing.pools):
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.5)
            raise ConfigError(
                f"{path}.pools[{index}]",
                "must name a gpuPools or cpuPools entry (" + ", ".join(names) + ")",
                name,
                f"did you mean {close[0]!r}?" if close else None,
            )
    if queueing.atomic_scale_up and spec.provisioner.node_pools:
        raise ConfigError(
            f"{path}.atomicScaleUp",
            f"is not available with provisioner {spec.provisioner.value}: Karpenter (also EKS Auto Mode's) and AKS Node "
            "Auto Provisioning do not act on "
            "ProvisioningRequests (kubernetes-sigs/kueue #5133), so every GPU workload would wait forever; leave it out",
            True,
        )
    queued = [p for p in spec.pools if not queueing.pools or p.name in queueing.pools]
    groups = [g for g in groups_of_spec(spec) if g.pool in {p.name for p in queued}]
    ceiling = fleet_figures(groups).total(Scenario.CEILING)
    wanted = sum(team.gpus for team in queueing.teams)
    if wanted > ceiling.gpu_slots:
        raise ConfigError(
            f"{path}.teams",
            f"must not guarantee more GPU slots than the queued pools' {SCENARIO_NAMES[Scenario.CEILING]} holds "
            f"({ceiling.gpu_slots} GPU slots, every group at its max at once)",
            wanted,
        )
