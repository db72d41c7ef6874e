"""cluster-autoscaler scale-from-zero tags on a managed node group's Auto Scaling group.

A node group at zero has no node for cluster-autoscaler to copy, so it builds a template node from
the ASG: CPU, memory and GPU count from the first instance type, labels from
``k8s.io/cluster-autoscaler/node-template/label/<key>`` tags, taints from
``.../node-template/taint/<key>`` tags whose value matches ``<value>:<NoSchedule|NoExecute|PreferNoSchedule>``
(Kubernetes spelling; anything else is silently ignored, which is eksctl's bug), and resource
overrides from ``.../node-template/resources/<name>`` (cluster-autoscaler ``aws_manager.go``).
EKS does not copy a managed node group's labels and taints to its ASG, and cluster-autoscaler's
other source, ``eks:DescribeNodegroup``, skips taints without a value and is consulted only in some
states, so gpupools writes the tags itself: belt and braces.

One ``aws.autoscaling.Tag`` per tag, with ``propagate_at_launch=False`` (the autoscaler reads them
from the group; instances have no use for them). Logical names are
``<node group resource name>-<label|taint|resource>-<key>``: deterministic, and unique because
keys are unique within each kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpupools.conventions import CA_TAG_PREFIX, EFA_HUGEPAGES_2MI, GPU_RESOURCE, HUGEPAGES_2MI_RESOURCE, Taint

EPHEMERAL_STORAGE_RESOURCE = "ephemeral-storage"

LABEL_PREFIX = f"{CA_TAG_PREFIX}/label/"
TAINT_PREFIX = f"{CA_TAG_PREFIX}/taint/"
RESOURCE_PREFIX = f"{CA_TAG_PREFIX}/resources/"

TAG_KEY_MAX = 128
"""Auto Scaling tag keys are at most 128 characters (``CreateOrUpdateTags``)."""

TAG_VALUE_MAX = 256
"""Auto Scaling tag values are at most 256 characters."""


@dataclass(frozen=True, order=True)
class NodeTemplateTag:
    """One scale-from-zero tag: ``kind`` is ``label``, ``taint`` or ``resource``."""

    kind: str
    key: str
    value: str

    @property
    def tag_key(self) -> str:
        prefix = {"label": LABEL_PREFIX, "taint": TAINT_PREFIX, "resource": RESOURCE_PREFIX}[self.kind]
        return prefix + self.key


def node_template_tags(labels: Mapping[str, str], taints: Sequence[Taint], gpu_slots_per_node: int) -> list[NodeTemplateTag]:
    """Every tag for a group with these labels, taints and ``nvidia.com/gpu`` per node (0: no resource tag).

    ``gpu_slots_per_node`` is what one node advertises: its GPUs, times the replicas of a shared
    pool, so the autoscaler sizes a time-sliced pool by slots, not by physical GPUs.

    Taint values are ``<value>:<Effect>`` with the Kubernetes effect name (``NoSchedule``), the only
    form cluster-autoscaler parses.
    """
    tags = [NodeTemplateTag("label", key, value) for key, value in sorted(labels.items())]
    tags += [NodeTemplateTag("taint", taint.key, f"{taint.value}:{taint.effect.value}") for taint in sorted(taints)]
    if gpu_slots_per_node:
        tags.append(NodeTemplateTag("resource", GPU_RESOURCE, str(gpu_slots_per_node)))
    return tags


KUBE_RESERVED_EPHEMERAL_GIB = 1
"""``kubeReserved["ephemeral-storage"]`` of the EKS AL2023 AMIs: ``1Gi`` (awslabs/amazon-eks-ami
``nodeadm/internal/kubelet/config.go``, ``withDefaultReservedResources``)."""

EVICTION_NODEFS_AVAILABLE = 0.10
"""``evictionHard["nodefs.available"]`` of the same kubelet configuration: ``10%`` (``defaultKubeletSubConfig``;
also the upstream kubelet's default, which Bottlerocket keeps)."""

FILESYSTEM_MARGIN_GIB = 1
"""What the root filesystem's own metadata takes from the volume (the kubelet's capacity is the
filesystem's size, a little under the volume's), rounded up to a whole GiB: the template must never
promise more than a node reports, or the autoscaler buys a node the pod then does not fit on."""


def ephemeral_storage_gib(disk_size_gb: int) -> int:
    """The ``ephemeral-storage`` a node of ``disk_size_gb`` advertises, in whole GiB, rounded down:
    the filesystem (the volume less ``FILESYSTEM_MARGIN_GIB``) less the eviction threshold
    (``EVICTION_NODEFS_AVAILABLE``) less kube-reserved (``KUBE_RESERVED_EPHEMERAL_GIB``), the
    kubelet's allocatable formula (capacity - reserved - hard eviction threshold). The disk is the
    AL2023 root volume or the Bottlerocket data volume, both ``diskSizeGb`` (``launch_template``).

    >>> ephemeral_storage_gib(100), ephemeral_storage_gib(128)
    (88, 113)
    """
    filesystem = disk_size_gb - FILESYSTEM_MARGIN_GIB
    return int(filesystem * (1 - EVICTION_NODEFS_AVAILABLE)) - KUBE_RESERVED_EPHEMERAL_GIB


def resource_tags(disk_size_gb: int, efa: bool = False) -> list[NodeTemplateTag]:
    """The scale-from-zero resources every group needs besides GPUs: ``ephemeral-storage`` from
    ``disk_size_gb`` and, on an EFA group, ``hugepages-2Mi``. cluster-autoscaler's AWS template node
    has neither unless a ``node-template/resources/<name>`` tag says so (kubernetes/autoscaler
    ``cluster-autoscaler/cloudprovider/aws/README.md``, whose example tag is exactly
    ``k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage``; ``aws_manager.go``
    ``buildNodeFromTemplate``), so a pending pod requesting either (a LimitRange default, an EFA
    job) never scales an empty group up."""
    tags = [NodeTemplateTag("resource", EPHEMERAL_STORAGE_RESOURCE, f"{ephemeral_storage_gib(disk_size_gb)}Gi")]
    if efa:
        tags.append(NodeTemplateTag("resource", HUGEPAGES_2MI_RESOURCE, f"{EFA_HUGEPAGES_2MI * 2}Mi"))
    return tags


def create_asg_tags(
    name: str,
    autoscaling_group_name: pulumi.Input[str],
    tags: Sequence[NodeTemplateTag],
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> list[aws.autoscaling.Tag]:
    """One ``aws.autoscaling.Tag`` per tag on ``autoscaling_group_name``, named ``<name>-<kind>-<key>``."""
    return [
        aws.autoscaling.Tag(
            f"{name}-{tag.kind}-{tag.key}",
            autoscaling_group_name=autoscaling_group_name,
            tag={"key": tag.tag_key, "value": tag.value, "propagate_at_launch": False},
            opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)),
        )
        for tag in tags
    ]
