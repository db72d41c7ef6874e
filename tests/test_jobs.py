"""``gpupools.jobs.gpu_job``: valid ``batch/v1`` Jobs (kubernetes-validate, strict, every minor in the
version tables), placed on GPU nodes (the scheduler model), with a grace period inside the cloud's
Spot notice and disruptions that do not count against ``backoffLimit``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gpupools.config import load_file
from gpupools.conventions import GPU_TAINT, Taint, TaintEffect
from gpupools.errors import ConfigError
from gpupools.jobs import GRACE_PERIOD_SECONDS, QUEUE_LABEL, SPOT_NOTICE_SECONDS, WHOLE_NODE, gpu_job, gpu_job_for_pool
from gpupools.specs import Cloud
from gpupools.testing import PROJECT_ROOT

from tests.k8s_schema import (
    affinity_matches,
    aks_gpu_pool,
    eks_gpu_group,
    eks_system_group,
    node_labels,
    untolerated,
    validate_all_versions,
)

ROOT = Path(PROJECT_ROOT)
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
        ({"pool": "a b"}, "gpu_job.pool", "63 characters"),
    ],
)
def test_bad_arguments_are_one_error_naming_the_argument(changes: dict[str, Any], path: str, words: str) -> None:
    arguments: dict[str, Any] = {"name": "train", "image": "img:1", "cloud": "aws", **changes}
    name, image = arguments.pop("name"), arguments.pop("image")
    with pytest.raises(ConfigError) as caught:
        gpu_job(name, image, **arguments)
    assert caught.value.path == path and words in str(caught.value)


# --- the config's own taint form, and a Job for a pool of the stack (issue 39) --------------------

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _nodepool(stack: str, pool: str) -> dict[str, Any]:
    """The Karpenter NodePool of ``pool`` as the stack's component renders it (the committed synth
    snapshot, kept equal to the code by tests/test_synth_snapshots.py)."""
    document = json.loads((SNAPSHOTS / f"{stack}.json").read_text())
    [nodepool] = [
        r["inputs"]
        for r in document["resources"]
        if r["type"] == "kubernetes:karpenter.sh/v1:NodePool" and r["name"] == f"nodepools-{pool}"
    ]
    return dict(nodepool)


def _taints(nodepool: dict[str, Any]) -> list[Taint]:
    return [Taint(t["key"], t.get("value", ""), TaintEffect(t["effect"])) for t in nodepool["spec"]["template"]["spec"]["taints"]]


def test_extra_taints_take_the_configs_own_form_with_a_string_effect() -> None:
    """The form a ``gpuPools[].taints`` entry has (a mapping, the effect a string) used to raise
    ``TypeError: unhashable type: 'dict'``; a ``Taint`` with a string effect ``AttributeError``."""
    mapping = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}
    for given in (mapping, DEDICATED, Taint("dedicated", "training", "NoSchedule")):  # type: ignore[arg-type]
        pod = gpu_job("train", "img:1", cloud="aws", extra_taints=[given])["spec"]["template"]["spec"]
        assert untolerated(pod["tolerations"], [DEDICATED, GPU_TAINT]) == []
    validate_all_versions(gpu_job("train", "img:1", cloud="aws", extra_taints=[mapping]))


def test_a_taint_without_a_value_is_tolerated() -> None:
    """``value`` is optional in a mapping: Kubernetes' ``Equal`` toleration with an empty value
    matches a taint written without one (``tolerates`` mirrors ``Toleration.ToleratesTaint``)."""
    pod = gpu_job("train", "img:1", cloud="azure", extra_taints=[{"key": "gpu-exclusive", "effect": "NoExecute"}])
    tolerations = pod["spec"]["template"]["spec"]["tolerations"]
    assert untolerated(tolerations, [Taint("gpu-exclusive", "", TaintEffect.NO_EXECUTE)]) == []


@pytest.mark.parametrize(
    ("taint", "path", "words"),
    [
        (
            {"key": "a", "value": "b", "effect": "NO_SCHEDULE"},
            "gpu_job.extra_taints[0].effect",
            "use the Kubernetes spelling 'NoSchedule'",
        ),
        ({"key": "a", "value": "b", "effect": "Never"}, "gpu_job.extra_taints[0].effect", "must be one of NoSchedule"),
        ({"key": "a", "value": "b"}, "gpu_job.extra_taints[0].effect", "is required"),
        ({"key": "a", "efect": "NoSchedule"}, "gpu_job.extra_taints[0].efect", "did you mean 'effect'?"),
        ({"value": "b", "effect": "NoSchedule"}, "gpu_job.extra_taints[0].key", "is required"),
        ({"key": "a", "value": 3, "effect": "NoSchedule"}, "gpu_job.extra_taints[0].value", "must be a string"),
        ("dedicated=training:NoSchedule", "gpu_job.extra_taints[0]", "must be a Taint or a mapping"),
    ],
)
def test_a_bad_taint_is_one_error_naming_the_argument(taint: Any, path: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        gpu_job("train", "img:1", cloud="aws", extra_taints=[taint])
    assert caught.value.path == path and words in str(caught.value)


def test_extra_taints_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match=r"gpu_job.extra_taints: must be a list"):
        gpu_job("train", "img:1", cloud="aws", extra_taints={"key": "a", "value": "b", "effect": "NoSchedule"})  # type: ignore[arg-type]


def test_a_job_for_a_pool_lands_on_the_nodepool_the_stack_renders() -> None:
    """``gpu4`` of the Karpenter example carries ``dedicated=training:NoSchedule``: a Job pinned by
    name alone (``gpu_job(pool=...)``) tolerates only the GPU taint and stays Pending; the Job
    built from the stack's spec tolerates every taint of the NodePool and matches its labels."""
    nodepool = _nodepool("aws-karpenter-dev", "gpu4")
    taints = _taints(nodepool)
    labels = dict(nodepool["spec"]["template"]["metadata"]["labels"])
    assert DEDICATED in taints
    by_name = gpu_job("train", "img:1", cloud="aws", pool="gpu4")["spec"]["template"]["spec"]
    assert untolerated(by_name["tolerations"], taints) == [DEDICATED]

    stack = load_file(ROOT / "Pulumi.aws-karpenter-dev.yaml")
    job = gpu_job_for_pool(stack, "train", "img:1", pool="gpu4", gpus=WHOLE_NODE)
    pod = job["spec"]["template"]["spec"]
    assert untolerated(pod["tolerations"], taints) == [] and affinity_matches(pod["affinity"], labels)
    # g5.12xlarge and g6.12xlarge carry 4 GPUs each; the NodePool's limits say 3 nodes, 12 GPUs.
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    assert int(nodepool["spec"]["limits"]["nvidia.com/gpu"]) == 4 * int(nodepool["spec"]["limits"]["nodes"])
    assert pod["terminationGracePeriodSeconds"] == GRACE_PERIOD_SECONDS[Cloud.AWS]
    validate_all_versions(job)
    assert not affinity_matches(
        pod["affinity"], dict(_nodepool("aws-karpenter-dev", "gpu1")["spec"]["template"]["metadata"]["labels"])
    )


def test_a_job_for_a_shared_pool_counts_slots_and_a_pool_spec_works_alone() -> None:
    stack = load_file(ROOT / "Pulumi.aws-karpenter-dev.yaml")
    [gpu1] = [p for p in stack.gpu_pools if p.name == "gpu1"]
    # time-slicing x4 on 1-GPU sizes: the NodeOverlay tells Karpenter a node holds 4 nvidia.com/gpu.
    job = gpu_job_for_pool(
        gpu1, "infer", "img:1", cloud="aws", gpus=WHOLE_NODE, extra_taints=[{"key": "x", "effect": "NoSchedule"}]
    )
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    assert {"key": "x", "operator": "Equal", "value": "", "effect": "NoSchedule"} in pod["tolerations"]


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"pool": "gpu5"}, "gpu_job_for_pool.pool", "must be one of the stack's gpuPools: gpu1, gpu4"),
        ({"pool": None}, "gpu_job_for_pool.pool", "is required with a StackSpec"),
        ({"pool": "general"}, "gpu_job_for_pool.pool", "must be a gpuPools entry"),
        ({"gpus": 5}, "gpu_job_for_pool.gpus", "must be <= 4, the nvidia.com/gpu one node of pool gpu4 advertises"),
        ({"gpus": "all"}, "gpu_job_for_pool.gpus", "must be an integer >= 1 or 'node'"),
    ],
)
def test_a_bad_job_for_a_pool_is_one_error_naming_the_argument(changes: dict[str, Any], path: str, words: str) -> None:
    stack = load_file(ROOT / "Pulumi.aws-karpenter-dev.yaml")
    arguments: dict[str, Any] = {"pool": "gpu4", **changes}
    with pytest.raises(ConfigError) as caught:
        gpu_job_for_pool(stack, "train", "img:1", **arguments)
    assert caught.value.path == path and words in str(caught.value)


def test_a_misspelt_pool_gets_a_did_you_mean() -> None:
    stack = load_file(ROOT / "Pulumi.aws-karpenter-dev.yaml")
    with pytest.raises(ConfigError, match="did you mean 'gpu4'"):
        gpu_job_for_pool(stack, "train", "img:1", pool="gpu44")
