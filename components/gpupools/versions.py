"""Pinned upstream versions: Kubernetes, cluster-autoscaler, the NVIDIA device plugin, the smoke test.

Everything here is a pin, not a range, so the same config always deploys the same bits. Bump them
deliberately, in a pull request whose synth diff shows what changes. The Kubernetes version tables
carry their source and the date they were checked; ``tests/test_versions.py`` fails when a check
is more than 180 days old.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class KubernetesRelease:
    """One Kubernetes minor as one cloud offers it.

    Attributes:
        minor: ``"1.35"``.
        ga: the date the cloud made it generally available.
        end_of_support: the first day it is no longer in the cloud's standard support (AKS: "End of
            life", after which a cluster needs the paid Long Term Support plan; EKS: "End of standard
            support", after which a cluster is billed for extended support). Sources that give only
            a month are stored as the 1st of that month: a version is treated as unsupported for
            the whole month in which its support ends, never as supported for a day too long.
    """

    minor: str
    ga: date
    end_of_support: date


@dataclass(frozen=True)
class VersionTable:
    """The Kubernetes minors one managed service offers, with where the facts come from.

    Attributes:
        service: ``"AKS"`` or ``"EKS"`` (for messages).
        releases: oldest first.
        source: the page the dates come from.
        checked: the date the table was last compared with ``source``
            (``tests/test_versions.py`` fails when it is more than 180 days old).
        refresh: how to bring it up to date.
    """

    service: str
    releases: tuple[KubernetesRelease, ...]
    source: str
    checked: date
    refresh: str

    def supported(self, on: date) -> tuple[str, ...]:
        """Minors generally available and still in standard support on ``on``, oldest first."""
        return tuple(r.minor for r in self.releases if r.ga <= on < r.end_of_support)

    def release(self, version: str) -> KubernetesRelease | None:
        """The row of ``version``, or None."""
        return next((r for r in self.releases if r.minor == version), None)


AKS_VERSIONS = VersionTable(
    service="AKS",
    releases=(
        KubernetesRelease("1.33", date(2025, 6, 1), date(2026, 7, 1)),
        KubernetesRelease("1.34", date(2025, 11, 1), date(2026, 11, 1)),
        KubernetesRelease("1.35", date(2026, 3, 1), date(2027, 3, 1)),
        KubernetesRelease("1.36", date(2026, 6, 1), date(2027, 6, 1)),
    ),
    source=(
        "https://learn.microsoft.com/azure/aks/supported-kubernetes-versions#aks-kubernetes-release-calendar "
        "(MicrosoftDocs/azure-aks-docs articles/aks/supported-kubernetes-versions.md, revision of 2026-08-21: "
        "columns 'AKS GA' and 'End of life'; 1.37's 'AKS GA: Oct 2026' was still a plan then, so 1.37 is not listed)"
    ),
    checked=date(2026, 11, 23),
    refresh="compare AKS_VERSIONS in components/gpupools/versions.py with the AKS release calendar "
    "(or `az aks get-versions --location <region>`), then set `checked` to today",
)
"""AKS minors: GA month and end-of-life month from the AKS release calendar."""

EKS_VERSIONS = VersionTable(
    service="EKS",
    releases=(
        KubernetesRelease("1.33", date(2025, 5, 28), date(2026, 7, 29)),
        KubernetesRelease("1.34", date(2025, 10, 6), date(2026, 12, 2)),
        KubernetesRelease("1.35", date(2026, 1, 28), date(2027, 3, 27)),
    ),
    source=(
        "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar "
        "(columns 'Amazon EKS release' and 'End of standard support', as tabulated at "
        "https://endoflife.date/amazon-eks; an EKS release date for 1.36 could not be confirmed, so it is not listed)"
    ),
    # 1.36, checked again 2026-11-23 and still not listed: the nodes' side supports it (awslabs/amazon-eks-ami
    # CHANGELOG.md "AMI Release v20260714": amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260714; Karpenter
    # v1.14.1 hack/docs/compatibilitymatrix_gen/compatibility.yaml: 1.14.x maxK8sVersion 1.36), but the
    # stored copies of the EKS release calendar (awsdocs/amazon-eks-user-guide kubernetes-versions.adoc)
    # predate 1.36, so its release and end-of-standard-support dates have no official source here. Adding
    # it also makes 1.36 the newest common minor, which moves DEFAULT_KUBERNETES_VERSION (a test pins it).
    checked=date(2026, 11, 23),
    refresh="compare EKS_VERSIONS in components/gpupools/versions.py with the Amazon EKS Kubernetes release calendar "
    "(or `aws eks describe-cluster-versions`), then set `checked` to today",
)
"""EKS minors: release date and end of standard support from the Amazon EKS release calendar."""

VERSION_TABLES = {"azure": AKS_VERSIONS, "aws": EKS_VERSIONS}
"""Per ``specs.Cloud`` value."""


def minor_key(version: str) -> tuple[int, ...]:
    """``"1.35"`` -> ``(1, 35)``, for ordering."""
    return tuple(int(part) for part in version.split("."))


def newest_common_minor(tables: tuple[VersionTable, ...], on: date) -> str:
    """The newest minor every table supports on ``on``."""
    common = set.intersection(*(set(t.supported(on)) for t in tables))
    if not common:
        raise LookupError(f"no Kubernetes minor is in standard support on {', '.join(t.service for t in tables)} on {on}")
    return max(common, key=minor_key)


DEFAULT_KUBERNETES_VERSION = "1.35"
"""Default ``gpupools:cluster.kubernetesVersion``: the newest minor that AKS and EKS both offer in
standard support (``newest_common_minor`` over both tables on their check date, which a test
pins), so one default serves both clouds. A fixed value, not computed at run time: a default that
moved under a stack on some later ``pulumi up`` would upgrade its cluster without a config change."""

CLUSTER_AUTOSCALER_IMAGE_TAGS: dict[str, str] = {
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
    "1.36": "v1.36.1",
}
"""registry.k8s.io/autoscaling/cluster-autoscaler tag per Kubernetes minor, for EKS (AKS runs its
own managed autoscaler). cluster-autoscaler supports only the minor it was built for, so every EKS
minor in ``EKS_VERSIONS`` needs an entry (a test checks). Each is the latest patch of its minor
among kubernetes/autoscaler's ``cluster-autoscaler-1.3x.y`` release tags: 1.33.6, 1.34.5, 1.35.2
and 1.36.1 were all tagged 2026-07-22."""

CLUSTER_AUTOSCALER_CHART = "cluster-autoscaler"
CLUSTER_AUTOSCALER_CHART_VERSION = "9.59.0"
CLUSTER_AUTOSCALER_CHART_REPO = "https://kubernetes.github.io/autoscaler"
"""The official chart (kubernetes/autoscaler ``charts/cluster-autoscaler``), pinned."""

DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"
DEFAULT_DEVICE_PLUGIN_VERSION = "v0.20.0"
"""NVIDIA/k8s-device-plugin v0.20.0 (2026-08-19), the current release."""

DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter"
DEFAULT_DCGM_EXPORTER_VERSION = "4.6.0-4.8.3-distroless"
"""NVIDIA/dcgm-exporter 4.8.3 on DCGM 4.6.0, the distroless image: the tag upstream's README quick
start runs (``docker run ... nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless``) and the one the
GPU Operator v26.7.0 deploys (``deployments/gpu-operator/values.yaml``, ``dcgmExporter``), the newest
read. Tags are ``<DCGM version>-<exporter version>-<base>``; distroless is the smallest base."""

SMOKE_TEST_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
"""The CUDA vector-add sample NVIDIA's device-plugin and GPU Operator docs use; CUDA 12.5 runs on
every driver that AKS and the EKS NVIDIA AMIs ship (>= 525 via minor-version compatibility)."""


def minor(version: str) -> str:
    """``"1.34.2"`` -> ``"1.34"``."""
    return ".".join(version.split(".")[:2])


def check_minor(version: object, cloud: str, on: date | None = None) -> str | None:
    """Why ``version`` cannot be deployed on ``cloud`` (``"azure"``/``"aws"``), or None if it can.

    Judged on ``on``, by default the date the cloud's table was checked, not today: synth and
    ``pulumi up`` never depend on the clock (docs/safety.md, "Stable across runs"), so the same commit always
    accepts the same versions. What keeps this honest over time is the 180-day limit on the table's
    age (``tests/test_versions.py``) and the preflight, which asks the cloud which versions it
    offers today. The message names the newest supported minor.
    """
    table = VERSION_TABLES[cloud]
    when = on or table.checked
    supported = table.supported(when)
    offer = f"supported on {table.service}: {', '.join(supported)}; newest {supported[-1]}" if supported else "none is"
    release = table.release(version) if isinstance(version, str) else None
    if release is None:
        return f"must be a Kubernetes minor in standard support ({offer})"
    if when >= release.end_of_support:
        return f"left {table.service} standard support on {release.end_of_support.isoformat()} ({offer})"
    if when < release.ga:
        return f"is not generally available on {table.service} before {release.ga.isoformat()} ({offer})"
    return None


KARPENTER_VERSION = "1.14.1"
"""aws/karpenter-provider-aws v1.14.1 (tag v1.14.1, 2026-08-20), the newest stable release tag of
the repository when checked (2026-08-21 snapshot, commit 1d927085 "docs: update for patch release
v1.14.1"). Serves ``karpenter.sh/v1`` NodePool and ``karpenter.k8s.aws/v1`` EC2NodeClass. Chart and
controller share the version (``charts/karpenter/Chart.yaml``: ``version`` = ``appVersion``)."""

KARPENTER_CHART = "oci://public.ecr.aws/karpenter/karpenter"
KARPENTER_CRD_CHART = "oci://public.ecr.aws/karpenter/karpenter-crd"
"""The official OCI charts (the getting-started guide's ``helm upgrade --install karpenter
oci://public.ecr.aws/karpenter/karpenter``; the upgrade guide recommends the separate
``karpenter-crd`` chart, because Helm installs a chart's ``crds/`` only once and never upgrades them)."""

AL2023_AMI_ALIAS = "al2023@v20260714"
"""EC2NodeClass ``amiSelectorTerms`` alias for AL2023 nodes (NVIDIA and standard: with an alias,
Karpenter picks the NVIDIA variant for GPU instance types and the arm64 one for Graviton,
``pkg/providers/amifamily/al2023.go``). v20260714 is the newest amazon-eks-ami release with release
notes (awslabs/amazon-eks-ami ``CHANGELOG.md``, "AMI Release v20260714"). Pinned, not ``latest``:
Karpenter drifts every node to a new AMI when the alias resolves to one ("not recommended for
production", Karpenter ``concepts/nodeclasses.md``), so an AMI roll happens only when this pin moves."""

BOTTLEROCKET_AMI_ALIAS = "bottlerocket@v1.46.0"
"""EC2NodeClass alias for Bottlerocket pools; Karpenter picks the ``aws-k8s-<minor>-nvidia`` variant
for GPU types (``pkg/providers/amifamily/bottlerocket.go``). v1.46.0 is the newest Bottlerocket
version Karpenter v1.14.1's own tests select (``pkg/providers/amifamily/bottlerocket_test.go``);
Bottlerocket's release list itself could not be checked here."""

EFA_DEVICE_PLUGIN_IMAGE = "public.ecr.aws/eks/aws-efa-k8s-device-plugin"
DEFAULT_EFA_DEVICE_PLUGIN_VERSION = "v0.5.13"
"""The AWS EFA device plugin image tag: the ``appVersion`` of aws/eks-charts
``stable/aws-efa-k8s-device-plugin/Chart.yaml`` (chart v0.5.20, commit de5fdc1d), the newest read."""

NODE_MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
"""The EKS add-on's name (EKS user guide ``nodes/node-health.adoc``; the chart's ``Chart.yaml`` ``name``)."""

NODE_MONITORING_AGENT_ADDON_VERSION = "v1.7.0-eksbuild.1"
"""The ``eks-node-monitoring-agent`` EKS add-on version, pinned (not ``DescribeAddonVersions``'
default): aws/eks-node-monitoring-agent v1.7.0 (tag v1.7.0, 2026-08-04, commit c399089d,
``CHANGELOG.md`` "[v1.7.0] - 2026-08-04"), whose chart ships the agent image tag
``v1.7.0-eksbuild.1`` (``charts/eks-node-monitoring-agent/values.yaml``, ``nodeAgent.image.tag``),
the form EKS add-on versions take (``v<upstream>-eksbuild.<n>``). Which Kubernetes minors EKS
offers this build for could not be read here (``aws eks describe-addon-versions --addon-name
eks-node-monitoring-agent``); the preflight asks (``gpupools.preflight.aws``, ``addon_version``)."""

KUEUE_VERSION = "0.19.2"
"""kubernetes-sigs/kueue v0.19.2 (tag 2026-08-20, commit 8eab6877), the newest release tag of the
repository when read (2026-11-24; snapshot of 2026-08-22). Newer than the 0.17.1 the AKS article
"Provision capacity for Kueue batch jobs with the cluster autoscaler on AKS" installs; both serve
``kueue.x-k8s.io/v1beta2``, the version that article writes. Chart and controller share the version
(``charts/kueue/Chart.yaml``: ``version: 0.19.2``, ``appVersion: "v0.19.2"``; the release script
``hack/helm-chart-package.sh`` points the published chart's image at the promoted ``v0.19.2``
controller). The schemas of the kinds gpupools creates are pinned under ``tests/crds/kueue``."""

KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
"""The official OCI chart (Kueue ``charts/kueue/README.md`` at v0.19.2: ``helm install kueue oci://registry.k8s.io/kueue/charts/kueue --version="0.19.2" --create-namespace --namespace=kueue-system``; the AKS article's
``helm install kueue oci://registry.k8s.io/kueue/charts/kueue``)."""


@dataclass(frozen=True)
class EksCoreAddons:
    """The EKS managed add-on versions of one Kubernetes minor that every EKS cluster runs.

    Attributes:
        kube_proxy: ``kube-proxy``, whose version follows the minor (``v1.35.x-eksbuild.n``).
        vpc_cni: ``vpc-cni`` (the Amazon VPC CNI, ``aws-node``).
        coredns: ``coredns``.
    """

    kube_proxy: str
    vpc_cni: str
    coredns: str


EKS_CORE_ADDONS: dict[str, EksCoreAddons] = {
    "1.33": EksCoreAddons(kube_proxy="v1.33.0-eksbuild.2", vpc_cni="v1.19.5-eksbuild.1", coredns="v1.12.1-eksbuild.2"),
    "1.34": EksCoreAddons(kube_proxy="v1.34.0-eksbuild.2", vpc_cni="v1.20.4-eksbuild.2", coredns="v1.12.3-eksbuild.1"),
    "1.35": EksCoreAddons(kube_proxy="v1.35.0-eksbuild.2", vpc_cni="v1.21.1-eksbuild.3", coredns="v1.13.2-eksbuild.1"),
}
"""kube-proxy, VPC CNI and CoreDNS add-on versions per EKS minor, pinned: a ``pulumi up`` without a
config change never moves them. Before the pin, pulumi-eks resolved kube-proxy and the VPC CNI with
``mostRecent: true`` (pulumi/pulumi-eks ``nodejs/eks/cluster/cluster.ts`` and
``nodejs/eks/addons/cni-addon.ts``, v4.3.0 and HEAD) and CoreDNS followed EKS's default build, so every
build AWS published rolled ``aws-node``, ``kube-proxy`` and CoreDNS on the next unrelated ``up``.
A Kubernetes minor change moves all three, in the same ``up`` as the control plane.

Where the versions come from: builds seen deployed together with clusters of that minor (EKS add-on
versions are not in a public repository; the EKS user guide's version tables stop at 1.31). They are
not taken on trust: the preflight asks EKS (``DescribeAddonVersions``) whether each is offered for
the stack's minor, and its ✗ row names the newest offered builds to bump to
(``gpupools.preflight.aws``, ``core_addons``). Every EKS minor in ``EKS_VERSIONS`` needs a row (a test
checks). Bump: ``aws eks describe-addon-versions --kubernetes-version <minor> --addon-name <name>``."""
