"""The live size of EKS managed node groups, read at deploy time, and the desired size to send.

Why a program reads it: cluster-autoscaler owns a node group's size after create. It sets the
group's Auto Scaling group directly (``SetDesiredCapacity``: kubernetes/autoscaler
``cluster-autoscaler/cloudprovider/aws/auto_scaling_groups.go``, ``setAsgSizeNoLock``), and EKS
resizes the group to whatever ``desiredSize`` an ``UpdateNodegroupConfig`` carries ("If this
parameter is given a value that is smaller than the current number of running worker nodes, the
necessary number of worker nodes are terminated": EKS API reference, ``NodegroupScalingConfig``).
terraform-provider-aws, which pulumi-aws bridges, sends ``ScalingConfig`` whole, ``desiredSize``
included, whenever any of min, max or desired changed (``internal/service/eks/node_group.go``,
``resourceNodeGroupUpdate`` and ``expandNodegroupScalingConfig``). So a ``maxSize`` change carries
*some* desired size: the one from the stored state under ``ignore_changes`` (stale unless the update
started with a refresh), or, here, the live one.

``NodeGroupSizes`` reads, per node group, the live desired capacity of its Auto Scaling group
(authoritative: that is what the autoscaler writes), falling back to the node group's own
``scalingConfig.desiredSize`` (which EKS says "can be out-of-date for short periods of time") when
the group's ASG cannot be read. A group that does not exist yet, or whose size cannot be read, has
no live size: its desired size stays the create-time value under ``ignore_changes``, and the
refresh before every update (``Pulumi.yaml`` ``options.refresh: always``) keeps that stored value
live. Reads are data-source invokes (``eks:ListClusters``, ``eks:ListNodegroups``,
``eks:DescribeNodegroup``, ``autoscaling:DescribeAutoScalingGroups``: the same reads a refresh makes)
and run in previews as well, so a preview shows the size that will be sent.

The same module reads the live control plane's version and its node groups' versions before a
``kubernetesVersion`` change is registered (``check_live_version``): EKS neither downgrades nor
upgrades a control plane past a lagging managed node group.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpupools.errors import ConfigError
from gpupools.rules import VERSION_PATH, version_change_error
from gpupools.versions import minor, minor_key


def desired_size_on_update(live: int, min_size: int, max_size: int) -> int:
    """The desired size to send for a group whose live desired size is ``live``: the live size,
    brought into the new ``[min_size, max_size]``.

    EKS rejects a desired size outside the bounds ("Minimum capacity 8 can't be greater than
    desired size 4": terraform-aws-modules/terraform-aws-eks #3306, #2508; "desiredSize can't be
    greater than maxSize"), so raising ``minSize`` above the live size grows the group to the new
    minimum, and lowering ``maxSize`` below it shrinks the group to the new maximum (EKS terminates
    the surplus nodes; cluster-autoscaler would not keep them either).

    >>> desired_size_on_update(3, 0, 6), desired_size_on_update(1, 2, 6), desired_size_on_update(5, 0, 4)
    (3, 2, 4)
    """
    return min(max(live, min_size), max_size)


class NodeGroupSizes:
    """Live desired sizes of one EKS cluster's managed node groups, read once per group on demand.

    Args:
        cluster_name: the EKS cluster's name (plain: an invoke made while the program runs needs it).
        parent: the component the reads belong to (its providers are used); default none (the
            default provider).
    """

    def __init__(self, cluster_name: str, parent: pulumi.Resource | None = None) -> None:
        self.cluster_name = cluster_name
        self.parent = parent
        self._existing: set[str] | None = None
        self._listing_failed = False
        self._sizes: dict[str, int | None] = {}

    def _opts(self) -> pulumi.InvokeOptions:
        return pulumi.InvokeOptions(parent=self.parent)

    def _existing_groups(self) -> set[str]:
        """The cluster's node groups (none while the cluster does not exist); listed once. A failed
        listing is reported once and leaves every group without a live size."""
        if self._existing is None and not self._listing_failed:
            try:
                clusters = aws.eks.get_clusters(opts=self._opts()).names or []
                if self.cluster_name not in clusters:
                    self._existing = set()
                else:
                    found = aws.eks.get_node_groups(cluster_name=self.cluster_name, opts=self._opts()).names or []
                    self._existing = set(found)
            except Exception as error:
                self._listing_failed = True
                pulumi.log.warn(
                    f"EKS cluster {self.cluster_name}: node groups not listable ({error}); their desiredSize is left "
                    "to ignore_changes, which is only safe when the update starts with a refresh",
                    resource=self.parent,
                )
        return self._existing or set()

    def _read(self, node_group_name: str) -> int | None:
        if node_group_name not in self._existing_groups():
            return None
        group = aws.eks.get_node_group(cluster_name=self.cluster_name, node_group_name=node_group_name, opts=self._opts())
        asg_names = [asg.name for resource in group.resources or [] for asg in resource.autoscaling_groups or [] if asg.name]
        if len(asg_names) == 1:
            try:
                return int(aws.autoscaling.get_group(name=asg_names[0], opts=self._opts()).desired_capacity)
            except Exception as error:  # an unreadable ASG: the node group's own (possibly lagging) size
                pulumi.log.warn(
                    f"EKS node group {node_group_name}: Auto Scaling group {asg_names[0]} not readable ({error}); "
                    "using the node group's desiredSize",
                    resource=self.parent,
                )
        configs = group.scaling_configs or []
        return int(configs[0].desired_size) if configs else None

    def desired(self, node_group_name: str) -> int | None:
        """The group's live desired size, or None when the group does not exist yet or cannot be read."""
        if node_group_name not in self._sizes:
            try:
                self._sizes[node_group_name] = self._read(node_group_name)
            except Exception as error:
                pulumi.log.warn(
                    f"EKS node group {node_group_name}: live size not readable ({error}); its desiredSize is left "
                    "to ignore_changes, which is only safe when the update starts with a refresh",
                    resource=self.parent,
                )
                self._sizes[node_group_name] = None
        return self._sizes[node_group_name]


# --- the live control plane's version against the config's ---------------------------------------


AUTO_MODE_SWITCH = (
    "cannot change on an existing cluster: pulumi-eks sends bootstrapSelfManagedAddons: false whenever Auto Mode is on "
    "and true otherwise (pulumi/pulumi-eks nodejs/eks/cluster/cluster.ts), and changing it 'will force a new cluster "
    "to be created' (pulumi-aws eks.Cluster), so `pulumi up` would replace cluster {cluster} ({live}) with every node "
    "on it; build the new cluster beside it and move the workloads (blue-green: docs/auto-mode.md)"
)
"""Why a stack cannot switch an existing cluster into or out of EKS Auto Mode (``check_live_version``)."""


def auto_mode_switch_error(cluster_name: str, wanted: bool, live: bool) -> ConfigError | None:
    """The error for a config whose provisioner would turn Auto Mode on (or off) for the live cluster, or None."""
    if wanted == live:
        return None
    state = "Auto Mode on" if live else "Auto Mode off"
    return ConfigError(
        "gpupools:provisioner",
        AUTO_MODE_SWITCH.format(cluster=cluster_name, live=f"live with {state}"),
        "auto-mode" if wanted else "not auto-mode",
    )


def check_live_version(cluster_name: str, wanted: str, path: str = VERSION_PATH, auto_mode: bool | None = None) -> None:
    """Raise ``version_change_error`` for the live cluster named ``cluster_name``, if it exists, and,
    when ``auto_mode`` is given, ``auto_mode_switch_error`` when the live cluster's Auto Mode
    (``DescribeCluster``'s ``computeConfig.enabled``, absent on a cluster without it) differs.

    Reads (data-source invokes of the default AWS provider, made before any resource is registered;
    they run in previews too): ``eks:ListClusters``, ``eks:DescribeCluster`` and, for an upgrade only,
    ``eks:ListNodegroups`` and ``eks:DescribeNodegroup`` per group. A read that fails is a warning
    (the preflight states the same check), never a guess.

    Raises:
        ConfigError: naming ``path``, the live version and each lagging group.
    """
    try:
        if cluster_name not in (aws.eks.get_clusters().names or []):
            return
        described = aws.eks.get_cluster(name=cluster_name)
        live = described.version
        live_auto_mode = any(c.enabled for c in (described.compute_configs or []))
        groups: dict[str, str | None] = {}
        if live and minor_key(minor(wanted)) > minor_key(minor(live)):
            for group in aws.eks.get_node_groups(cluster_name=cluster_name).names or []:
                groups[group] = aws.eks.get_node_group(cluster_name=cluster_name, node_group_name=group).version
    except Exception as error:
        pulumi.log.warn(
            f"EKS cluster {cluster_name}: its version and node group versions are not readable ({error}); a "
            "kubernetesVersion change is not checked against them (run the preflight)"
        )
        return
    switched = auto_mode_switch_error(cluster_name, auto_mode, live_auto_mode) if auto_mode is not None else None
    if switched is not None:
        raise switched
    refused = version_change_error(wanted, live, groups, path) if live else None
    if refused is not None:
        raise refused
