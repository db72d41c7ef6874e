"""A model of Spot-to-on-demand fallback time, per provisioner and cloud, from documented timers.

For each way gpupools can provision GPU nodes, the time from the moment the provisioner asks for a
Spot node the cloud cannot deliver to an on-demand GPU node that pods can use (kubelet Ready and
``nvidia.com/gpu`` allocatable), as a sum of steps. Each step carries its source (upstream file at
a tag, or documentation) or says that it is an assumption; the assumptions are the ``Timers``
fields marked so, to be replaced by your own measurements. Each step has a typical and a
worst-case duration: a periodic check (a loop, a cache refresh, a poll) is half its period in the
typical case and the whole period in the worst.

Sources read (snapshots: kubernetes/autoscaler tag ``cluster-autoscaler-1.36.1``,
kubernetes-sigs/karpenter ``v1.14.1``, aws/karpenter-provider-aws ``v1.14.1``,
Azure/karpenter-provider-azure ``v1.14.2``):

* cluster-autoscaler loop: ``config/const.go`` ``DefaultScanInterval = 10 * time.Second``;
  ``core/static_autoscaler.go`` ``RunOnce`` calls ``CloudProvider.Refresh``, then updates the
  cluster state (which backs off failed groups), then scales up, all in one loop.
* ``--max-node-provision-time``: upstream default 15m (``config/flags/flags.go``); gpupools sets
  ``gpupools:autoscaler.maxNodeProvisionTime`` (default 10m, ``gpupools.specs.AutoscalerSpec``).
  A scale-up whose nodes have not registered by then times out (``clusterstate/clusterstate.go``
  ``updateScaleRequests``: ``ScaleUpTimedOut``, ``RegisterFailedScaleUp``), which backs the group off.
* Backoff (``flags.go``): ``initial-node-group-backoff-duration`` 5m, ``max-node-group-backoff-duration``
  30m. A backed-off group is skipped by the expander, so the backoff decides when Spot is tried
  again, not how fast on-demand is used; it is not part of the fallback time.
* EKS: ``cloudprovider/aws/aws_manager.go`` refreshes the ASG cache at most every
  ``refreshInterval = 1 * time.Minute``; ``auto_scaling_groups.go``
  ``createPlaceholdersForDesiredNonStartedInstances`` adds placeholders for desired-but-missing
  instances and ``isNodeGroupAvailable`` reads ``DescribeScalingActivities``: a ``Failed`` activity
  since the last update marks them ``placeholder-cannot-be-fulfilled``, which
  ``aws_cloud_provider.go`` ``Nodes`` reports as an ``OutOfResourcesErrorClass`` creation error,
  and ``clusterstate.go`` ``handleInstanceCreationErrors`` backs the group off at once.
* AKS: ``cloudprovider/azure/azure_scale_set.go`` ``createOrUpdateInstances`` returns a rejected VMSS
  PUT to ``IncreaseSize`` (``core/scaleup/orchestrator/executor.go`` ``executeScaleUp`` then calls
  ``RegisterFailedScaleUp``), but ``waitForCreateOrUpdateInstances`` only logs a failure of the
  accepted operation and invalidates caches: a Spot allocation failure is noticed only when the
  scale-up times out after ``max-node-provision-time`` (``enableFastDeleteOnFailedProvisioning``,
  the path that would report it sooner, is an upstream option that AKS does not document). AKS users
  measured about 20 minutes from Spot failure to on-demand with the 15m default (Azure/AKS #4405).
* Karpenter: ``launch.go`` (kubernetes-sigs/karpenter ``pkg/controllers/nodeclaim/lifecycle``)
  deletes a NodeClaim whose launch fails with an insufficient-capacity error, and the provisioner
  batches the still-pending pods again (``pkg/operator/options/options.go``: batch idle 1s, batch
  max 10s). On EKS, ``CreateFleet`` is synchronous and the failed offerings are cached unavailable
  for 3 minutes (aws ``pkg/cache/cache.go`` ``UnavailableOfferingsTTL``); the docs
  (``website/content/en/docs/concepts/nodepools.md``, Capacity Type): "Karpenter will attempt to
  fallback to a lower priority capacity type, generally within milliseconds".
* NAP (Karpenter on AKS): a create the AKS API rejects is handled at once
  (``pkg/providers/instance/offerings/``: SKU not available for Spot, Spot quota; offerings marked
  unavailable); an allocation failure inside the accepted operation is seen by the operation poller
  (``pkg/providers/instance/aksmachinepoller/poller.go``, ``PollInterval`` 5s), marked unavailable
  for an hour (``commonerrorhandlers.go`` ``AllocationFailureTTL``), and the NodeClaim is deleted
  (``pkg/cloudprovider/cloudprovider.go`` ``handleInstancePromise``). A rejected create is a
  ``CreateError``, not an insufficient-capacity error, so the same NodeClaim is retried after the
  lifecycle controller's first backoff (1 s) rather than deleted.

What is not modelled: which offering comes next. The model assumes the next launch is on-demand.
On EKS a ``CreateFleet`` request carries every allowed Spot type and zone at once, so one failure
covers them. On AKS each NodeClaim tries one VM size in one zone, and NAP scopes the mark by
error code (``commonerrorhandlers.go``): Spot quota, a Spot ``SkuNotAvailable`` and
``OverconstrainedAllocationRequest`` mark Spot only, so on-demand of the same size is next; but
``ZonalAllocationFailed`` marks the size in that zone for both capacity types, and
``AllocationFailed`` the size in every zone for both, for an hour. A NodePool that allows only one
size can then have no offering left, and one that allows several tries the next size (Spot first).
Spot groups per zone (cluster-autoscaler on EKS): gpupools registers one Spot node group per zone
of a pool on EKS (one ASG each), and a shortage across the pool's zones does *not* fail them
together. cluster-autoscaler scales one group for a pending pod, backs only that group off when it
fails, and the priority expander's next choice is another zone's Spot group of the same priority,
so the on-demand group comes after every Spot group of the pool has failed in turn: observed with
the real cluster-autoscaler 1.36.1 in the sim (``tests/sim/test_cluster_autoscaler.py``: aws-dev's
three Spot groups time out one after another, then the on-demand group is bought). An earlier
version of this model assumed the groups failed together; ``autoscaler_eks`` now repeats the
detection per Spot group (``spot_groups``, ``EKS_SPOT_GROUPS`` in the table). On AKS a pool is one
scale set across its zones, so one Spot group fails.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from gpupools.specs import AutoscalerSpec


class Provisioner(str, enum.Enum):
    CLUSTER_AUTOSCALER = "cluster-autoscaler"
    KARPENTER = "karpenter"
    NAP = "nap"


class Failure(str, enum.Enum):
    """How the cloud reports the Spot capacity error."""

    SYNC = "sync"  # in the response to the launch request, or in a scaling activity the provisioner reads
    ASYNC = "async"  # inside an accepted long-running operation


SOURCE_CA = "kubernetes/autoscaler cluster-autoscaler-1.36.1"
SOURCE_KARPENTER = "kubernetes-sigs/karpenter v1.14.1"
SOURCE_AWS = "aws/karpenter-provider-aws v1.14.1"
SOURCE_AZURE = "Azure/karpenter-provider-azure v1.14.2"
ASSUMPTION = "assumption (a Timers parameter; replace with your measurement)"
EKS_SPOT_GROUPS = 3
"""Spot groups of an EKS pool in the table: one per zone, three in the example stacks (module docstring)."""
SOURCE_SIM = "observed with cluster-autoscaler 1.36.1 in gpupools' sim (tests/sim/test_cluster_autoscaler.py)"


@dataclass(frozen=True)
class Timers:
    """The durations the model adds up, in seconds. Documented timers carry upstream defaults;
    the rest are assumptions, stated as such in each step's source."""

    # documented
    scan_interval: float = 10.0
    """cluster-autoscaler ``--scan-interval`` (``config/const.go`` DefaultScanInterval); AKS uses the same default."""
    max_node_provision_time: float = 600.0
    """cluster-autoscaler ``--max-node-provision-time``: gpupools' ``autoscaler.maxNodeProvisionTime`` (default 10m)."""
    asg_cache_refresh: float = 60.0
    """cluster-autoscaler AWS ASG cache refresh (``aws_manager.go`` refreshInterval)."""
    karpenter_batch_idle: float = 1.0
    """Karpenter ``BATCH_IDLE_DURATION`` (typical re-batch after a failed launch)."""
    karpenter_batch_max: float = 10.0
    """Karpenter ``BATCH_MAX_DURATION`` (worst case, pods keep arriving)."""
    nap_poll_interval: float = 5.0
    """NAP operation poller interval (``aksmachinepoller/poller.go`` PollInterval)."""
    nodeclaim_retry: float = 1.0
    """First requeue of a NodeClaim whose launch failed with a non-capacity error (kubernetes-sigs/karpenter
    ``pkg/controllers/nodeclaim/lifecycle/controller.go``: exponential failure rate limiter from 1 s)."""
    # assumptions
    ec2_launch_call: float = 2.0
    """Assumption: one ``CreateFleet`` (instant) call, answered in the response."""
    asg_activity_failure: float = 15.0
    """Assumption: from ``SetDesiredCapacity`` to the ASG's Failed scaling activity for a Spot launch."""
    azure_request_rejected: float = 5.0
    """Assumption: a VMSS or AKS machine PUT refused synchronously (for example Spot quota)."""
    azure_allocation_failure: float = 60.0
    """Assumption: from an accepted Spot create to the allocation failure inside the operation."""
    ec2_node_ready: float = 90.0
    """Assumption: on-demand GPU instance launched to kubelet Ready (AL2023 NVIDIA AMI: driver preinstalled)."""
    aks_node_ready: float = 180.0
    """Assumption: on-demand GPU VM created to kubelet Ready (AKS installs the NVIDIA driver at boot)."""
    device_plugin_ready: float = 30.0
    """Assumption: device plugin pod started on the node and ``nvidia.com/gpu`` allocatable."""

    @classmethod
    def for_autoscaler(cls, autoscaler: AutoscalerSpec, **overrides: float) -> Timers:
        """Timers with ``max_node_provision_time`` from gpupools' autoscaler config (``<n>m``)."""
        return replace(cls(**overrides), max_node_provision_time=minutes(autoscaler.max_node_provision_time) * 60.0)


def minutes(value: str) -> int:
    """``10m`` -> 10 (the whole-minute form ``gpupools.rules.check_autoscaler`` accepts)."""
    if not value.endswith("m") or not value[:-1].isdigit():
        raise ValueError(f"expected whole minutes like 10m, got {value!r}")
    return int(value[:-1])


@dataclass(frozen=True)
class Step:
    """One step of a fallback, its duration (typical, worst) in seconds, and where it comes from."""

    what: str
    typical: float
    worst: float
    source: str
    decides: bool = False
    """True on the step at whose end the provisioner has acted on the failure (asked for on-demand)."""
    error: bool = False
    """True on the step at whose end the cloud has reported the Spot capacity error."""


def periodic(what: str, period: float, source: str, *, decides: bool = False) -> Step:
    """A wait for the next run of something that runs every ``period``: half of it typically, all of it at worst."""
    return Step(what, period / 2, period, source, decides)


def fixed(what: str, seconds: float, source: str, *, decides: bool = False, error: bool = False) -> Step:
    return Step(what, seconds, seconds, source, decides, error)


@dataclass(frozen=True)
class Fallback:
    """The modelled path from a failed Spot request to a usable on-demand GPU node."""

    provisioner: Provisioner
    cloud: str
    failure: Failure
    steps: tuple[Step, ...]

    @property
    def typical(self) -> float:
        return sum(step.typical for step in self.steps)

    @property
    def worst(self) -> float:
        return sum(step.worst for step in self.steps)

    def _index(self, flag: str) -> int:
        [index] = [i for i, step in enumerate(self.steps) if getattr(step, flag)]
        return index

    def _reaction(self) -> tuple[Step, ...]:
        return self.steps[self._index("error") + 1 : self._index("decides") + 1]

    @property
    def reaction_typical(self) -> float:
        """From the cloud's capacity error to the provisioner asking for on-demand (typical)."""
        return sum(step.typical for step in self._reaction())

    @property
    def reaction_worst(self) -> float:
        return sum(step.worst for step in self._reaction())


def _node_ready(timers: Timers, cloud: str) -> tuple[Step, Step]:
    ready = timers.ec2_node_ready if cloud == "eks" else timers.aks_node_ready
    return (
        fixed(f"on-demand GPU node {'launched' if cloud == 'eks' else 'created'} and Ready", ready, ASSUMPTION),
        fixed("device plugin running, nvidia.com/gpu allocatable", timers.device_plugin_ready, ASSUMPTION),
    )


def autoscaler_eks(timers: Timers, spot_groups: int = 1) -> Fallback:
    """cluster-autoscaler on EKS: each Spot group's Failed scaling activity is read at the next ASG
    cache refresh, and the pool's Spot groups (one per zone) fail one after another before the
    on-demand group is scaled (module docstring)."""
    if spot_groups < 1:
        raise ValueError(f"spot_groups must be at least 1, got {spot_groups}")
    detect: list[Step] = []
    for index in range(spot_groups):
        last = index == spot_groups - 1
        group = f"Spot group {index + 1} of {spot_groups}: " if spot_groups > 1 else ""
        detect.append(
            fixed(f"{group}ASG launch fails (Failed scaling activity)", timers.asg_activity_failure, ASSUMPTION, error=index == 0)
        )
        detect.append(
            periodic(
                f"{group}next ASG cache refresh reads the activity; the loop backs the group off and scales "
                + ("on-demand" if last else "the next zone's Spot group (same priority)"),
                timers.asg_cache_refresh,
                f"{SOURCE_CA}: cloudprovider/aws/aws_manager.go refreshInterval, auto_scaling_groups.go isNodeGroupAvailable, "
                "clusterstate/clusterstate.go handleInstanceCreationErrors" + ("" if last else f"; {SOURCE_SIM}"),
                decides=last,
            )
        )
    return Fallback(Provisioner.CLUSTER_AUTOSCALER, "eks", Failure.SYNC, (*detect, *_node_ready(timers, "eks")))


def autoscaler_aks(timers: Timers, failure: Failure) -> Fallback:
    """cluster-autoscaler on AKS: a rejected VMSS PUT fails the scale-up at once; a Spot allocation
    failure inside the accepted operation is noticed only when the scale-up times out."""
    if failure is Failure.SYNC:
        detect: tuple[Step, ...] = (
            fixed(
                "VMSS PUT rejected; IncreaseSize fails and the Spot pool is backed off",
                timers.azure_request_rejected,
                f"{ASSUMPTION}; {SOURCE_CA}: core/scaleup/orchestrator/executor.go executeScaleUp",
                error=True,
            ),
            periodic(
                "next autoscaler loop: the priority expander picks the on-demand pool",
                timers.scan_interval,
                f"{SOURCE_CA}: config/const.go DefaultScanInterval",
                decides=True,
            ),
        )
    else:
        if timers.azure_allocation_failure > timers.max_node_provision_time:
            raise ValueError("azure_allocation_failure must not exceed max_node_provision_time")
        detect = (
            fixed("Spot allocation fails inside the VMSS operation", timers.azure_allocation_failure, ASSUMPTION, error=True),
            fixed(
                "the autoscaler only invalidates its caches; the scale-up waits out max-node-provision-time",
                timers.max_node_provision_time - timers.azure_allocation_failure,
                f"gpupools autoscaler.maxNodeProvisionTime; {SOURCE_CA}: cloudprovider/azure/azure_scale_set.go "
                "waitForCreateOrUpdateInstances, clusterstate/clusterstate.go updateScaleRequests; Azure/AKS #4405",
            ),
            periodic(
                "the loop that sees the timeout backs Spot off and scales on-demand",
                timers.scan_interval,
                f"{SOURCE_CA}: config/const.go DefaultScanInterval, core/static_autoscaler.go RunOnce",
                decides=True,
            ),
        )
    return Fallback(Provisioner.CLUSTER_AUTOSCALER, "aks", failure, (*detect, *_node_ready(timers, "aks")))


def _rebatch(timers: Timers, what: str, source: str) -> Step:
    return Step(what, timers.karpenter_batch_idle, timers.karpenter_batch_max, source, decides=True)


def karpenter_eks(timers: Timers) -> Fallback:
    """Karpenter on EKS: CreateFleet answers the capacity error synchronously; the next launch is on-demand."""
    return Fallback(
        Provisioner.KARPENTER,
        "eks",
        Failure.SYNC,
        (
            fixed(
                "CreateFleet returns insufficient capacity for every Spot offering",
                timers.ec2_launch_call,
                ASSUMPTION,
                error=True,
            ),
            _rebatch(
                timers,
                "offerings cached unavailable for 3 min; NodeClaim deleted, pods batched again",
                f"{SOURCE_AWS}: pkg/cache/cache.go UnavailableOfferingsTTL; {SOURCE_KARPENTER}: "
                "pkg/controllers/nodeclaim/lifecycle/launch.go, pkg/operator/options/options.go batch durations",
            ),
            fixed("CreateFleet for on-demand", timers.ec2_launch_call, ASSUMPTION),
            *_node_ready(timers, "eks"),
        ),
    )


def nap_aks(timers: Timers, failure: Failure) -> Fallback:
    """NAP on AKS: a rejected create is handled at once; an allocation failure when the poller sees it."""
    if failure is Failure.SYNC:
        steps: tuple[Step, ...] = (
            fixed(
                "AKS machine create rejected (Spot size or Spot quota); Spot offerings marked unavailable",
                timers.azure_request_rejected,
                f"{ASSUMPTION}; {SOURCE_AZURE}: pkg/providers/instance/offerings/commonerrorhandlers.go",
                error=True,
            ),
            fixed(
                "the NodeClaim's launch is retried without them: on-demand create",
                timers.nodeclaim_retry,
                f"{SOURCE_KARPENTER}: pkg/controllers/nodeclaim/lifecycle/launch.go launchNodeClaim, controller.go rate limiter",
                decides=True,
            ),
        )
    else:
        steps = (
            fixed("Spot allocation fails inside the accepted create", timers.azure_allocation_failure, ASSUMPTION, error=True),
            periodic(
                "operation poller sees the failed provisioning state",
                timers.nap_poll_interval,
                f"{SOURCE_AZURE}: pkg/providers/instance/aksmachinepoller/poller.go PollInterval",
            ),
            _rebatch(
                timers,
                "offering marked unavailable; NodeClaim deleted, pods batched again, on-demand create",
                f"{SOURCE_AZURE}: pkg/cloudprovider/cloudprovider.go handleInstancePromise, "
                f"offerings/commonerrorhandlers.go; {SOURCE_KARPENTER}: pkg/operator/options/options.go",
            ),
        )
    return Fallback(Provisioner.NAP, "aks", failure, (*steps, *_node_ready(timers, "aks")))


def fallbacks(timers: Timers, eks_spot_groups: int = EKS_SPOT_GROUPS) -> list[Fallback]:
    """Every modelled path, in table order; ``eks_spot_groups``: the Spot groups (zones) of the EKS pool."""
    return [
        autoscaler_eks(timers, eks_spot_groups),
        karpenter_eks(timers),
        autoscaler_aks(timers, Failure.SYNC),
        autoscaler_aks(timers, Failure.ASYNC),
        nap_aks(timers, Failure.SYNC),
        nap_aks(timers, Failure.ASYNC),
    ]


def human(seconds: float) -> str:
    """``75`` -> ``1m15s``, ``30`` -> ``30s``, ``2.5`` -> ``2.5s``."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s"
