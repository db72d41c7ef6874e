"""``gpupools.jobs.gpu_job``: valid ``batch/v1`` Jobs (kubernetes-validate, strict, every minor in the
version tables), placed on GPU nodes (the scheduler model), with a grace period inside the cloud's
Spot notice and disruptions that do not count against ``backoffLimit``."""

from __future__ import annotations

from typing import Any

import pytest
from gpupools.conventions import GPU_TAINT, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.jobs import GRACE_PERIOD_SECONDS, QUEUE_LABEL, SPOT_NOTICE_SECONDS, gpu_job
from gpupools.specs import Cloud

from tests.k8s_schema import (
    affinity_matches,
    aks_gpu_pool,
    eks_gpu_group,
    eks_system_group,
    node_labels,
    untolerated,
    validate_all_versions,
)

DEDICATED = Taint("dedicated", "training", TaintEffect.NO_SCHEDULE)

VARIANTS: dict[str, dict[str, Any]] = {
    "aws-minimal": {"cloud": "aws"},
    "azure-minimal": {"cloud": "azure"},
    "everything": {
        "cloud": Cloud.AWS,
        "command": ["python", "train.py"],
        "args": ["--epochs", "3"],
        "gpus": 4,
        "namespace": "ml",
        "pool": "a10g",
        "extra_taints": [DEDICATED],
        "backoff_limit": 0,
        "termination_grace_period_seconds": 120,
        "queue": "team-a",
        "do_not_disrupt": True,
        "env": {"CHECKPOINT_DIR": "/ckpt"},
    },
}


def job(variant: str) -> dict[str, Any]:
    return gpu_job("train", "ghcr.io/example/train:1.0.0", **VARIANTS[variant])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_job_is_valid_at_every_kubernetes_minor(variant: str) -> None:
    validate_all_versions(job(variant))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_disruptions_are_ignored_and_the_pods_never_restart_in_place(variant: str) -> None:
    spec = job(variant)["spec"]
    assert spec["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize("cloud", list(Cloud))
def test_default_grace_period_leaves_a_margin_inside_the_spot_notice(cloud: Cloud) -> None:
    grace = gpu_job("train", "img:1", cloud=cloud)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace == GRACE_PERIOD_SECONDS[cloud]
    assert 0 < grace < SPOT_NOTICE_SECONDS[cloud]


def test_notices_are_the_clouds() -> None:
    """EC2: two minutes; Azure Scheduled Events' minimum ``Preempt`` notice: 30 seconds."""
    assert SPOT_NOTICE_SECONDS == {Cloud.AWS: 120, Cloud.AZURE: 30}


def test_queue_label_only_with_a_queue() -> None:
    assert job("everything")["metadata"]["labels"] == {QUEUE_LABEL: "team-a"}
    assert "labels" not in job("aws-minimal")["metadata"]
    assert QUEUE_LABEL == "kueue.x-k8s.io/queue-name"


def test_container_requests_the_gpus_and_carries_what_was_given() -> None:
    [container] = job("everything")["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    assert container["command"] == ["python", "train.py"] and container["args"] == ["--epochs", "3"]
    assert container["env"] == [{"name": "CHECKPOINT_DIR", "value": "/ckpt"}]
    assert job("everything")["spec"]["template"]["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}


def test_lands_on_gpu_nodes_of_its_pool_and_never_on_system_nodes() -> None:
    pod = job("everything")["spec"]["template"]["spec"]
    pool = eks_gpu_group(pool="a10g", extra_taints=(DEDICATED,))
    assert GPU_TAINT in pool.taints and DEDICATED in pool.taints
    assert affinity_matches(pod["affinity"], node_labels(pool)) and untolerated(pod["tolerations"], pool.taints) == []
    other = eks_gpu_group(pool="t4")
    assert not affinity_matches(pod["affinity"], node_labels(other))
    assert not affinity_matches(pod["affinity"], node_labels(eks_system_group()))
    azure = gpu_job("train", "img:1", cloud="azure")["spec"]["template"]["spec"]
    spot = aks_gpu_pool()
    assert affinity_matches(azure["affinity"], node_labels(spot)) and untolerated(azure["tolerations"], spot.taints) == []


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"cloud": "gcp"}, "gpu_job.cloud", "must be one of azure, aws"),
        ({"gpus": 0}, "gpu_job.gpus", "must be an integer >= 1"),
        ({"gpus": True}, "gpu_job.gpus", "must be an integer >= 1"),
        ({"backoff_limit": -1}, "gpu_job.backoff_limit", ">= 0"),
        ({"termination_grace_period_seconds": 121}, "gpu_job.termination_grace_period_seconds", "from 0 to 120"),
        ({"cloud": "azure", "termination_grace_period_seconds": 60}, "gpu_job.termination_grace_period_seconds", "from 0 to 30"),
        ({"queue": "Team A"}, "gpu_job.queue", "63 characters"),
        ({"name": "Train_1"}, "gpu_job.name", "DNS-1123 label"),
        ({"image": ""}, "gpu_job.image", "must not be empty"),
        ({"pool": "a b"}, "gpu_workload.pool", "63 characters"),
    ],
)
def test_bad_arguments_are_one_error_naming_the_argument(changes: dict[str, Any], path: str, words: str) -> None:
    arguments: dict[str, Any] = {"name": "train", "image": "img:1", "cloud": "aws", **changes}
    name, image = arguments.pop("name"), arguments.pop("image")
    with pytest.raises(ConfigError) as caught:
        gpu_job(name, image, **arguments)
    assert caught.value.path == path and words in str(caught.value)
