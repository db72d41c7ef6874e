"""Kueue queue objects from the flavours: ClusterQueues, the teams' cohort, LocalQueues, and the
ProvisioningRequest admission check (kubernetes-sigs/kueue v0.19.2, ``kueue.x-k8s.io/v1beta2``).

* **Without teams**: one ClusterQueue ``gpupools`` holding every flavour at its full quota, and a
  LocalQueue ``gpupools`` in each namespace of ``gpupools:queueing.namespaces``. The queue never
  admits more than the pools hold at max (``gpupools.queueing.quotas``).
* **With teams**: a Cohort ``gpupools`` holds the quota (v1beta2 Cohorts carry ``resourceGroups``
  of their own: ``cohort_types.go``, "resourceGroups describes groupings of Resources and Flavors
  ..."), each team a ClusterQueue in that cohort with its guaranteed GPU slots as nominal quota
  (``teams[].gpus``, taken from the flavours in buying order, with the same share of the flavour's
  CPU and memory), and the ``gpupools`` ClusterQueue (for ``namespaces``) in the cohort with none.
  Unused quota is borrowed across the cohort ("A cohort is a group of ClusterQueues that can borrow
  unused quota from each other", Kueue ``site/content/en/docs/concepts/_index.md``); the cohort's and the queues'
  quotas add up to exactly the pools' capacity, so borrowing never admits more than the pools
  hold. No preemption is configured (the ClusterQueue default ``reclaimWithinCohort: Never``):
  the platform does not evict running jobs on its own (docs/safety.md), so a team's guarantee is
  first claim on freed quota, not the eviction of borrowers.
* **All-or-nothing scale-up** (cluster-autoscaler only): a ProvisioningRequestConfig with class
  ``best-effort-atomic-scale-up.autoscaling.x-k8s.io`` and ``managedResources: [nvidia.com/gpu]``
  (only pod sets that request GPUs get a ProvisioningRequest), the AdmissionCheck with controller
  ``kueue.x-k8s.io/provisioning-request`` naming it, and every ClusterQueue running the check on
  its GPU flavours (``admissionChecksStrategy.onFlavors``). Kueue then holds a workload's quota,
  asks the autoscaler for all of its nodes in one ProvisioningRequest, and admits the workload only
  when the request is ``Provisioned`` (Kueue ``admission-check-controllers/provisioning.md``;
  the AKS article "Provision capacity for Kueue batch jobs with the cluster autoscaler on AKS").
  The class is atomic where the cloud provider implements ``AtomicIncreaseSize`` (Azure VMSS:
  kubernetes/autoscaler ``cloudprovider/azure/azure_scale_set.go``, #9514) and best effort
  elsewhere: the AWS provider returns ``ErrNotImplemented`` and the scale-up falls back to an
  ordinary increase (``cloudprovider/aws/aws_cloud_provider.go``; ``core/scaleup/orchestrator/executor.go``
  ``increaseSize``), at the cluster-autoscaler-1.35.2 tag.
"""

from __future__ import annotations

from typing import Any, Sequence

from gpupools.conventions import GPU_RESOURCE, KUEUE_QUEUE_LABEL
from gpupools.queueing.flavors import API_VERSION, Flavour
from gpupools.queueing.quotas import CPU, EFA_RESOURCES, MEMORY, RESOURCES, Quota
from gpupools.specs import TeamQueueSpec

SHARED_QUEUE = "gpupools"
"""The ClusterQueue (and LocalQueue) name of the shared queue, and the teams' Cohort name."""

QUEUE_LABEL = KUEUE_QUEUE_LABEL
"""The label that submits a Job to a LocalQueue (``conventions.KUEUE_QUEUE_LABEL``)."""

PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
"""cluster-autoscaler's atomic ProvisioningClass (kubernetes/autoscaler ``cluster-autoscaler/apis/
provisioningrequest/autoscaling.x-k8s.io/v1/types.go``, ``ProvisioningClassBestEffortAtomicScaleUp``)."""

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""Kueue's ProvisioningRequest admission check controller (``apis/kueue/v1beta2/provisioningrequestconfig_types.go``,
``ProvisioningRequestControllerName``)."""

PROVISIONING_CONFIG = "gpupools-atomic-scale-up"
ADMISSION_CHECK = "gpupools-atomic-scale-up"

MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi"}


def covered_resources(flavours: Sequence[Flavour]) -> tuple[str, ...]:
    """``cpu``, ``memory``, ``nvidia.com/gpu`` when any flavour is a GPU flavour, and
    ``vpc.amazonaws.com/efa`` with ``hugepages-2Mi`` when any flavour has EFA nodes
    (``quotas.EFA_RESOURCES``: Kueue admits nothing that requests a resource its ClusterQueue does
    not cover). Every flavour of a resource group lists every covered resource (the CRD's rule
    ``self.flavors.all(x, size(x.resources) == size(self.coveredResources))``): a CPU flavour's GPU
    quota is 0, so a pod set that requests GPUs never fits it and moves on to the next flavour, and
    likewise a non-EFA flavour for an EFA pod set."""
    base = RESOURCES if any(f.is_gpu for f in flavours) else (CPU, MEMORY)
    return (*base, *EFA_RESOURCES) if any(f.quota.efa for f in flavours) else base


def resource_groups(flavours: Sequence[Flavour], quotas: dict[str, Quota] | None = None) -> list[dict[str, Any]]:
    """One resource group: every flavour in order, each with its quota (or ``quotas[name]``)."""
    covered = covered_resources(flavours)
    return [
        {
            "coveredResources": list(covered),
            "flavors": [
                {
                    "name": f.name,
                    "resources": [
                        {"name": name, "nominalQuota": value}
                        for name, value in (quotas[f.name] if quotas is not None else f.quota).quantities(covered).items()
                    ],
                }
                for f in flavours
            ],
        }
    ]


def team_quotas(flavours: Sequence[Flavour], teams: Sequence[TeamQueueSpec]) -> dict[str, dict[str, Quota]]:
    """Per team, per flavour, its nominal quota: its ``gpus`` taken from the GPU flavours in order
    (each team in config order), with CPU, memory, EFA and huge pages in the same proportion of the flavour (rounded
    down). What the teams do not take is the cohort's (``cohort_quotas``)."""
    left = {f.name: f.quota for f in flavours}
    result: dict[str, dict[str, Quota]] = {}
    for team in teams:
        wanted = team.gpus
        mine: dict[str, Quota] = {}
        for f in flavours:
            free = left[f.name]
            take = min(wanted, free.gpus) if f.quota.gpus else 0
            # take <= free.gpus, so the cap leaves the share's GPU slots (exactly take) as they are.
            quota = f.quota.share(take, f.quota.gpus).at_most(free) if take else Quota()
            mine[f.name] = quota
            left[f.name] = free - quota
            wanted -= take
        result[team.name] = mine
    return result


def cohort_quotas(flavours: Sequence[Flavour], teams: dict[str, dict[str, Quota]]) -> dict[str, Quota]:
    """The flavours' quotas minus what the teams hold: what the Cohort holds."""
    return {f.name: f.quota - sum((t[f.name] for t in teams.values()), Quota()) for f in flavours}


def admission_checks(flavours: Sequence[Flavour]) -> dict[str, Any] | None:
    """``admissionChecksStrategy``: the ProvisioningRequest check on the GPU flavours; None without any."""
    gpu = [f.name for f in flavours if f.is_gpu]
    return {"admissionChecks": [{"name": ADMISSION_CHECK, "onFlavors": gpu}]} if gpu else None


def cluster_queue(
    name: str,
    flavours: Sequence[Flavour],
    *,
    quotas: dict[str, Quota] | None = None,
    cohort: str | None = None,
    atomic_scale_up: bool = False,
) -> dict[str, Any]:
    """A ClusterQueue over ``flavours``: admits from every namespace (the LocalQueues decide which),
    ``BestEffortFIFO`` (the default, stated: a job that does not fit does not block smaller ones)."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": resource_groups(flavours, quotas),
    }
    if cohort:
        spec["cohortName"] = cohort
    checks = admission_checks(flavours) if atomic_scale_up else None
    if checks:
        spec["admissionChecksStrategy"] = checks
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name, "labels": MANAGED_BY}, "spec": spec}


def cohort(name: str, flavours: Sequence[Flavour], quotas: dict[str, Quota]) -> dict[str, Any]:
    """The Cohort that holds what the teams' ClusterQueues do not."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Cohort",
        "metadata": {"name": name, "labels": MANAGED_BY},
        "spec": {"resourceGroups": resource_groups(flavours, quotas)},
    }


def local_queue(name: str, namespace: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace, "labels": MANAGED_BY},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def provisioning_request_config() -> dict[str, Any]:
    """Atomic scale-up for the pod sets that request GPUs; Kueue's default retry strategy (3 retries,
    60 s base, 30 min max backoff: ``provisioningrequestconfig_types.go``)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": PROVISIONING_CONFIG, "labels": MANAGED_BY},
        "spec": {"provisioningClassName": PROVISIONING_CLASS, "managedResources": [GPU_RESOURCE]},
    }


def admission_check() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": ADMISSION_CHECK, "labels": MANAGED_BY},
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": PROVISIONING_CONFIG},
        },
    }
