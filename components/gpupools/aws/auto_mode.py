"""EKS Auto Mode (``gpupools:provisioner: auto-mode``): the node role and, per pool, one
``eks.amazonaws.com/v1`` NodeClass and one ``karpenter.sh/v1`` NodePool (``AutoModeNodePools``).

What Auto Mode runs, so gpupools creates none of it (EKS user guide ``automode/auto-accelerated.adoc``,
``automode/automode-learn-instances.adoc``, ``node-health``): the Karpenter controller, the NVIDIA
driver and device plugin ("not visible as a daemon set"), the node monitoring agent with node auto
repair, Spot interruption handling, and the core networking and DNS on its nodes. So an Auto Mode
stack has no node group, launch template, cluster-autoscaler, Karpenter release, interruption queue,
device plugin or node-monitoring add-on.

**Custom pools only** (``computeConfig.nodePools: []``): Auto Mode's built-in ``system`` and
``general-purpose`` pools buy on-demand C/M/R nodes only (``automode/set-builtin-node-pools.adoc``),
so gpupools states every pool itself, the system pool included (on-demand, the ``systemPool`` sizes,
its labels, no taint: the add-ons gpupools installs select it as on the other provisioners). With no
built-in pool EKS does not create the node role's access entry (it does so only for
``computeConfig.nodeRoleArn``, and a role with empty ``nodePools`` is rejected: "When Compute Config
nodeRoleArn is null or empty, nodePool list cannot be populated", terraform-aws-eks #3366, #3483), so
``create_node_role`` makes the role (``AmazonEKSWorkerNodeMinimalPolicy``,
``AmazonEC2ContainerRegistryPullOnly``), its access entry of type ``EC2`` and the
``AmazonEKSAutoNodePolicy`` access policy at cluster scope (``automode/create-node-class.adoc``: a
role used only by custom NodeClasses needs exactly that; type ``EC2``, not ``EC2_LINUX``).

**NodeClass** (``node_class_spec``; ``automode/create-node-class.adoc``, checked against the pinned
schema in ``components/gpupools/kubernetes/crds/eks-auto-mode``): ``role`` the node role's name; subnets by the
``karpenter.sh/discovery: <cluster>`` tag the created VPC's private subnets carry; security groups by
``aws:eks:cluster-name: <cluster>`` (the cluster security group EKS creates and tags, as AWS's own
GPU sample class selects it: aws-samples/sample-aws-eks-auto-mode ``gpu-nodepool.yaml.tpl``);
``ephemeralStorage.size`` from the pool's ``diskSizeGb`` (Auto Mode's default is 80Gi, too small for
GPU images); tags ``gpupools.io/node-class``. Named ``gpupools-<pool>``: never ``default`` (Auto
Mode's own).

**NodePool** (``gpupools.kubernetes.karpenter.nodepool``, as on Karpenter): the pool's sizes, zones,
architecture, ``[spot, on-demand]`` in gpupools' buying order, labels, the GPU taint, limits from
``maxSize``, ``WhenEmpty`` after ``scaleDownUnneededTime``, drift only in the
``gpupools:maintenance`` window, weights by price. Two values differ from Karpenter's, both because
Auto Mode caps a node's life at 21 days ("a maximum node lifetime of 21 days, which you can reduce",
``automode/automode.adoc``):

* ``expireAfter: 336h`` (``AUTO_MODE_EXPIRE_AFTER``), Auto Mode's own default ("Terminates instances
  after 336 hours", ``create-node-pool.adoc``), stated; gpupools' ``Never`` is not possible. Expiry
  is not a budgeted disruption in Karpenter v1: a node is drained at 14 days whatever runs on it, so
  a job longer than that must checkpoint (docs/auto-mode.md).
* ``terminationGracePeriod: 24h`` (``AUTO_MODE_TERMINATION_GRACE_PERIOD``) unless
  ``gpupools:maintenance.terminationGracePeriod`` sets one: what Auto Mode puts on a NodeClaim whose
  NodePool leaves it unset (``create-node-pool.adoc``), stated so the diff shows it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import pulumi
import pulumi_aws as aws

from gpupools.aws.iam import service_principal_policy, to_json
from gpupools.aws.karpenter import DISCOVERY_TAG
from gpupools.aws.karpenter_nodes import check_karpenter_pool, node_shape
from gpupools.aws.node_group import check_cluster_name
from gpupools.errors import ConfigError
from gpupools.kubernetes.karpenter import nodepool
from gpupools.kubernetes.karpenter.nodepool import NodeClassRef
from gpupools.pool_args import DEFAULT_CONSOLIDATE_AFTER, PoolArg, nodepool_arguments, pool_specs
from gpupools.pools import NodePoolInfo
from gpupools.specs import AmiType, Cloud, MaintenanceSpec, PoolSpec, Provisioner, SharingMode, SystemPoolSpec

TYPE = "gpupools:index:AutoModeNodePools"

NODE_CLASS_GROUP = "eks.amazonaws.com"
NODE_CLASS_KIND = "NodeClass"
NODE_CLASS_API_VERSION = f"{NODE_CLASS_GROUP}/v1"

AUTO_MODE_EXPIRE_AFTER = "336h"
"""``expireAfter`` of every Auto Mode NodePool: Auto Mode's default (module docstring)."""
AUTO_MODE_MAX_LIFETIME_HOURS = 21 * 24
"""Auto Mode's maximum node lifetime, 21 days (504h)."""
AUTO_MODE_TERMINATION_GRACE_PERIOD = "24h"
"""Auto Mode's ``terminationGracePeriod`` when a NodePool sets none, stated (module docstring)."""

SYSTEM_POOL_WEIGHT = 1
"""The system NodePool's weight: the lowest (Karpenter tries NodePools from the highest weight), so
an untainted pod that selects no pool gets a CPU pool's node before a system node, as the
cluster-autoscaler priority expander ranks the system pool last on the other provisioners."""

CLUSTER_SECURITY_GROUP_TAG = "aws:eks:cluster-name"
"""The tag EKS puts on the cluster security group it creates (its value: the cluster name)."""

NODE_MANAGED_POLICIES = ("AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly")
"""The Auto Mode node role's managed policies (``automode/auto-learn-iam.adoc``)."""

NODE_ACCESS_ENTRY_TYPE = "EC2"
AUTO_NODE_ACCESS_POLICY = "AmazonEKSAutoNodePolicy"
"""The node role's access entry type and access policy (``automode/create-node-class.adoc``)."""

CLUSTER_ROLE_POLICIES = (
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
)
"""What the cluster role needs beside ``AmazonEKSClusterPolicy`` for Auto Mode
(``automode/auto-learn-iam.adoc``; pulumi-eks attaches the same four to a role it makes)."""


class AutoModeNodeRole:
    """The Auto Mode node role, its policy attachments, its ``EC2`` access entry and access policy."""

    def __init__(
        self,
        name: str,
        cluster_name: pulumi.Input[str],
        parent: pulumi.Resource,
        permissions_boundary: str | None,
        depends_on: Sequence[pulumi.Resource],
    ) -> None:
        partition = aws.get_partition()
        self.role = aws.iam.Role(
            f"{name}-auto-node-role",
            assume_role_policy=to_json(service_principal_policy(f"ec2.{partition.dns_suffix}")),
            description="EKS Auto Mode nodes (gpupools)",
            permissions_boundary=permissions_boundary,
            opts=pulumi.ResourceOptions(parent=parent),
        )
        self.policy_attachments = tuple(
            aws.iam.RolePolicyAttachment(
                f"{name}-auto-node-role-{policy}",
                role=self.role.name,
                policy_arn=f"arn:{partition.partition}:iam::aws:policy/{policy}",
                opts=pulumi.ResourceOptions(parent=self.role),
            )
            for policy in NODE_MANAGED_POLICIES
        )
        self.access_entry = aws.eks.AccessEntry(
            f"{name}-auto-node-access",
            cluster_name=cluster_name,
            principal_arn=self.role.arn,
            type=NODE_ACCESS_ENTRY_TYPE,
            opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)),
        )
        self.access_policy = aws.eks.AccessPolicyAssociation(
            f"{name}-auto-node-policy",
            cluster_name=cluster_name,
            principal_arn=self.access_entry.principal_arn,
            policy_arn=f"arn:{partition.partition}:eks::aws:cluster-access-policy/{AUTO_NODE_ACCESS_POLICY}",
            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
            opts=pulumi.ResourceOptions(parent=parent),
        )


def node_class_name(pool: str) -> str:
    """``gpupools-<pool>``: never ``default``, the class Auto Mode's built-in pools use."""
    return f"gpupools-{pool}"


def node_class_spec(cluster_name: str, role_name: str, disk_size_gb: int, class_name: str) -> dict[str, Any]:
    """The ``eks.amazonaws.com/v1`` NodeClass ``spec`` (module docstring)."""
    return {
        "role": role_name,
        "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {CLUSTER_SECURITY_GROUP_TAG: cluster_name}}],
        "ephemeralStorage": {"size": f"{disk_size_gb}Gi"},
        "tags": {"gpupools.io/node-class": class_name},
    }


def check_auto_mode_pool(pool: PoolSpec, path: str) -> None:
    """What Auto Mode cannot do, for a pool that passed the pool rules (the spec form of
    ``config.check_auto_mode_keys``): Karpenter's limits, and no sharing, EFA or reservations."""
    check_karpenter_pool(pool, path)
    refused: tuple[tuple[str, bool, object], ...] = (
        ("sharing", pool.sharing.mode is not SharingMode.NONE, pool.sharing.mode.value),
        ("efa", pool.efa, pool.efa),
        ("reservations", bool(pool.reservations), [r.id for r in pool.reservations]),
    )
    for key, is_set, value in refused:
        if is_set:
            raise ConfigError(f"{path}.{key}", "is not available with provisioner auto-mode (docs/auto-mode.md)", value)


class AutoModeNodePools(pulumi.ComponentResource):
    """One ``eks.amazonaws.com/v1`` NodeClass and one ``karpenter.sh/v1`` NodePool per pool, the
    system pool's first, on an EKS Auto Mode cluster (module docstring).

    Args:
        name: the component's name; prefixes the resource names.
        pools: ``gpuPools`` entries (``PoolSpec`` or mappings), validated as under Auto Mode.
        cluster_name: the EKS cluster's name (the subnet and security group selectors).
        node_role_name: the Auto Mode node role's name (``AutoModeNodeRole``).
        zones: the cluster's zones (a pool without ``zones`` uses them).
        system_pool: the ``systemPool``; default none (no system NodePool).
        consolidate_after: ``disruption.consolidateAfter``; default 10m.
        order: pool names, most preferred first (NodePool weights); default by size facts.
        maintenance: the drift window and ``terminationGracePeriod``; default ``MaintenanceSpec()``.
        cpu_pools: ``cpuPools`` entries.
        opts: ``provider`` the cluster's Kubernetes provider.

    Attributes:
        manifests: pool name to NodePool manifest; node_classes: pool name to NodeClass name;
        pools: the pools as ``NodePoolInfo`` (GPU and CPU pools); system_pool: the system pool's.
    """

    manifests: dict[str, dict[str, Any]]
    node_classes: dict[str, str]
    pools: list[NodePoolInfo]
    system_pool: NodePoolInfo | None

    def __init__(
        self,
        name: str,
        pools: Sequence[PoolArg],
        cluster_name: str,
        node_role_name: pulumi.Input[str],
        zones: Sequence[str],
        system_pool: SystemPoolSpec | None = None,
        consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER,
        order: Sequence[str] | None = None,
        maintenance: MaintenanceSpec | None = None,
        cpu_pools: Sequence[PoolArg] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        path = f"AutoModeNodePools({name})"
        window = nodepool_arguments(path, maintenance, consolidate_after)
        check_cluster_name(cluster_name, f"{path}.cluster_name")
        specs = pool_specs(
            pools,
            Cloud.AWS,
            path,
            cpu_pools=cpu_pools,
            zones=tuple(zones),
            provisioner=Provisioner.AUTO_MODE,
            check=check_auto_mode_pool,
        )
        shapes = {pool.name: node_shape(pool) for pool in specs}
        weights = nodepool.pool_weights(specs, shapes, order, path)
        system = system_pool.as_nodepool(AmiType.AL2023_STANDARD) if system_pool is not None else None

        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.manifests = {}
        self.node_classes = {}
        self.pools = []
        self.system_pool = None
        entries: list[tuple[PoolSpec, int]] = ([(system, SYSTEM_POOL_WEIGHT)] if system else []) + [
            (pool, weights[pool.name]) for pool in specs
        ]
        for pool, weight in entries:
            class_name = node_class_name(pool.name)
            node_class = nodepool.apply(
                f"{name}-{pool.name}-class",
                {
                    "apiVersion": NODE_CLASS_API_VERSION,
                    "kind": NODE_CLASS_KIND,
                    "metadata": {"name": class_name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
                    "spec": pulumi.Output.from_input(node_role_name).apply(
                        lambda role, pool=pool, class_name=class_name: node_class_spec(  # type: ignore[misc]
                            cluster_name, role, pool.disk_size_gb, class_name
                        )
                    ),
                },
                child,
                window,
            )
            shape = shapes.get(pool.name) or node_shape(pool)
            zones_of_pool = pool.zones or tuple(zones)
            manifest = nodepool.node_pool(
                pool.name,
                pool,
                node_class_ref=NodeClassRef(NODE_CLASS_GROUP, NODE_CLASS_KIND, class_name),
                shape=shape,
                zones=zones_of_pool,
                consolidate_after=consolidate_after,
                weight=weight,
                window=window,
                expire_after=AUTO_MODE_EXPIRE_AFTER,
                termination_grace_period=AUTO_MODE_TERMINATION_GRACE_PERIOD,
            )
            nodepool.apply(f"{name}-{pool.name}", manifest, pulumi.ResourceOptions(parent=self, depends_on=[node_class]), window)
            self.manifests[pool.name] = manifest
            self.node_classes[pool.name] = class_name
            # Auto Mode runs the device plugin on every GPU node itself: nothing of gpupools' serves them.
            # Its nodes pay the Auto Mode fee beside their EC2 price (gpupools.pricing.estimate).
            info = dataclasses.replace(
                nodepool.node_pool_info(pool.name, pool, shape, zones_of_pool, needs_device_plugin=False), auto_mode=True
            )
            if pool is system:
                self.system_pool = info
            else:
                self.pools.append(info)
        self.register_outputs({"nodePools": sorted(self.manifests), "nodeClasses": sorted(self.node_classes.values())})


def auto_mode_cluster_args() -> dict[str, Any]:
    """The ``pulumi_eks.Cluster`` arguments of an Auto Mode cluster, every add-on stated.

    ``auto_mode``: enabled, ``create_node_role=False`` and ``compute_config.node_pools=[]`` (custom
    pools only; module docstring). pulumi-eks then sends ``computeConfig {enabled: true, nodePools:
    []}`` without a ``nodeRoleArn``, ``storageConfig.blockStorage.enabled`` and
    ``kubernetesNetworkConfig.elasticLoadBalancing.enabled`` (the three must be on together) and
    ``bootstrapSelfManagedAddons: false`` (pulumi/pulumi-eks ``nodejs/eks/cluster/cluster.ts`` at
    7bf0c1b, v4.3.0 + 9: the ``computeConfig`` spread and ``bootstrapSelfManagedAddons`` lines).

    The add-ons, not left to what pulumi-eks flips under Auto Mode: Auto Mode nodes run pod
    networking, kube-proxy and cluster DNS themselves (``automode/automode.adoc``), and with no
    node group there is nowhere for the add-ons' pods to run, so the VPC CNI
    (``use_default_vpc_cni=True``: "vpcCniAddonEnabled = useDefaultVpcCni !== undefined ?
    !useDefaultVpcCni : !autoMode.enabled"), kube-proxy and CoreDNS add-ons are off, said here.
    """
    import pulumi_eks as eks

    return {
        "auto_mode": eks.AutoModeOptionsArgs(
            enabled=True,
            create_node_role=False,
            compute_config=aws.eks.ClusterComputeConfigArgs(enabled=True, node_pools=[]),
        ),
        "use_default_vpc_cni": True,
        "kube_proxy_addon_options": eks.KubeProxyAddonOptionsArgs(enabled=False),
        "coredns_addon_options": eks.CoreDnsAddonOptionsArgs(enabled=False),
    }


def auto_mode_cluster_policies(eks_name: str, service_role: aws.iam.Role, parent: pulumi.Resource) -> list[pulumi.Resource]:
    """``CLUSTER_ROLE_POLICIES`` attached to the cluster's service role (its trust already allows
    ``sts:TagSession``: ``gpupools.aws.iam.create_cluster_service_role``)."""
    partition = aws.get_partition()
    return [
        aws.iam.RolePolicyAttachment(
            f"{eks_name}-{policy}",
            role=service_role.name,
            policy_arn=f"arn:{partition.partition}:iam::aws:policy/{policy}",
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for policy in CLUSTER_ROLE_POLICIES
    ]
