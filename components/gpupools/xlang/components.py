"""The components of the cross-language package: one class per public gpupools component.

Each class here has the shape the Pulumi component provider needs (``pulumi.provider.experimental``
in the pinned SDK): ``__init__(self, name, args: <Name>Args, opts)`` with ``args`` a ``TypedDict``
(``analyzer.analyze_component`` requires a parameter named exactly ``args`` with an annotation),
outputs as ``pulumi.Output[...]`` class annotations with a docstring each, and the class name equal
to the last part of the type token (``ComponentProvider.construct`` looks the class up by
``resource_type.rsplit(":")[-1]`` and calls ``constructor(name, mapped_args, options)``).

They are thin: ``__new__`` turns ``args`` into the Python API's keyword arguments
(``gpupools.xlang.convert``) and returns the **library component itself** (``gpupools.azure.GpuNodePool``
and so on), with the declared outputs set on it. So a component constructed through the package
registers exactly what the Python API registers for the same input: same type token
(``gpupools:index:<Name>``), same name, same children, validated by the same code. Python does not
call ``__init__`` when ``__new__`` returns an object of another class, so ``__init__`` only carries
the signature the analyzer reads.

Why not the library classes themselves: the analyzer takes *every* public class annotation of a
component as a schema output, and the library components annotate Python attributes (child
resources, specs, ``NodePoolInfo`` tuples, ``X | None``) that have no schema type, in modules with
postponed annotations (strings, which the analyzer cannot read). Keeping the package's view in
its own classes leaves the Python API as it is.

No ``from __future__ import annotations`` here (see ``gpupools.xlang.args``).
"""

from typing import Any

import pulumi

from gpupools import config
from gpupools import warm as warm_rules
from gpupools.aws import auto_mode as aws_auto_mode
from gpupools.aws import autoscaler as aws_autoscaler
from gpupools.aws import cluster as aws_cluster
from gpupools.aws import karpenter as aws_karpenter
from gpupools.aws import karpenter_nodes as aws_karpenter_nodes
from gpupools.aws import network as aws_network
from gpupools.aws import node_group as aws_node_group
from gpupools.azure import cluster as azure_cluster
from gpupools.azure import maintenance as azure_maintenance
from gpupools.azure import nap_nodes as azure_nap_nodes
from gpupools.azure import node_pool as azure_node_pool
from gpupools.config import Cloud
from gpupools.errors import ConfigError
from gpupools.kubernetes import dcgm_exporter, device_plugin, efa_device_plugin, priority_expander, smoke_test
from gpupools.kubernetes import warm as kubernetes_warm
from gpupools.queueing import flavors as queue_flavors
from gpupools.queueing import kueue as queue_kueue
from gpupools.xlang import convert
from gpupools.xlang.args import (
    AksClusterArgs,
    AutoModeNodePoolsArgs,
    ClusterAutoscalerArgs,
    CpuNodeGroupArgs,
    CpuNodePoolArgs,
    DcgmExporterArgs,
    EfaDevicePluginArgs,
    EksClusterArgs,
    GpuNodeGroupArgs,
    GpuNodePoolArgs,
    GpuSmokeTestArgs,
    KarpenterArgs,
    KarpenterNodePoolsArgs,
    KueueArgs,
    KueueQueuesArgs,
    NapNodePoolsArgs,
    NodeImageMaintenanceArgs,
    NodePoolInfo,
    NvidiaDevicePluginArgs,
    PriorityExpanderArgs,
    WarmCapacityArgs,
)

Opts = pulumi.ResourceOptions | None


def _args(name: str, component: str, args: Any) -> dict[str, Any]:
    if not isinstance(args, dict):
        raise ConfigError(f"{component}({name}).args", "must be a mapping of the component's arguments", args)
    return args


def _infos(name: str, component: str, value: Any, opts: Opts) -> tuple[list[Any], Opts]:
    """Pool descriptions given as values or as another component's settled output (see ``convert.settled``)."""
    path = f"{component}({name}).pools"
    raw, deps = convert.settled(value, path)
    if deps:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=deps))
    return convert.infos(raw, path), opts


def _served_addon(component: Any, name: str, args: Any, opts: Opts, keys: tuple[str, ...]) -> Any:
    """A DaemonSet add-on (device plugins, DCGM exporter) over ``args["pools"]``, with the optional
    ``keys`` of its Python API, and its ``served_pool_names`` output."""
    a = _args(name, component.__name__, args)
    pools, opts = _infos(name, component.__name__, a.get("pools"), opts)
    addon = component(name, pools, **convert.pick(a, *keys), opts=opts)
    addon.served_pool_names = [i.name for i in addon.served_pools]
    return addon


def _pool_outputs(instance: Any, infos: Any) -> Any:
    instance.pool_names = pulumi.Output.from_input([i.name for i in infos])
    instance.node_pools = pulumi.Output.from_input(convert.infos_out(infos))
    return instance


# -- Azure ------------------------------------------------------------------------------------


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster ready for GPU pools: network, identity, the on-demand system pool, a secret kubeconfig."""

    cluster_name: pulumi.Output[str]
    """The AKS cluster's name."""
    cluster_id: pulumi.Output[str]
    """The cluster's ARM resource ID."""
    resource_group_name: pulumi.Output[str]
    """The resource group holding the cluster."""
    subnet_id: pulumi.Output[str]
    """The node subnet (pass it to GpuNodePool)."""
    kubeconfig: pulumi.Output[str]
    """The user kubeconfig (exec/kubelogin), a secret."""
    oidc_issuer_url: pulumi.Output[str]
    """The OIDC issuer URL (workload identity)."""
    zones: pulumi.Output[list[str]]
    """The cluster's zones."""
    system_node_pool: pulumi.Output[NodePoolInfo]
    """The system pool."""

    def __new__(cls, name: str, args: AksClusterArgs, opts: Opts = None) -> Any:
        a = _args(name, "AksCluster", args)
        path = f"AksCluster({name})"
        c = azure_cluster.AksCluster(
            name,
            cluster=convert.cluster_spec(a.get("cluster"), Cloud.AZURE, f"{path}.cluster"),
            system_pool=convert.system_pool_spec(a.get("system_pool"), Cloud.AZURE, f"{path}.systemPool"),
            network=convert.network_spec(a.get("network"), Cloud.AZURE, f"{path}.network"),
            autoscaler=convert.autoscaler_spec(a.get("autoscaler"), f"{path}.autoscaler"),
            **convert.pick(
                a,
                "location",
                "resource_group_name",
                "identity_id",
                "sku_tier",
                "kubelogin_login",
                "node_auto_provisioning",
                "capacity_reservation_group_ids",
            ),
            opts=opts,
        )
        c.cluster_name = c.name  # type: ignore[attr-defined]
        c.system_node_pool = pulumi.Output.from_input(convert.info_to_dict(c.system_pool))  # type: ignore[attr-defined]
        return c

    def __init__(self, name: str, args: AksClusterArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.azure.AksCluster``."""


def _azure_pool(cls: Any, component: str, name: str, args: Any, opts: Opts) -> Any:
    a = _args(name, component, args)
    pool = convert.to_config(a.get("pool"))
    p = cls(
        name,
        pool,
        **convert.pick(a, "resource_group_name", "cluster_name", "subnet_id", "cluster_zones", "kubernetes_version"),
        opts=opts,
    )
    return _pool_outputs(p, p.pools)


class GpuNodePool(pulumi.ComponentResource):
    """One gpuPools entry as AKS agent pools: a Spot pool and its on-demand fallback (and reserved pools first)."""

    pool_names: pulumi.Output[list[str]]
    """The agent pool names, in creation order."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per agent pool (pass them to NvidiaDevicePlugin and PriorityExpander)."""

    def __new__(cls, name: str, args: GpuNodePoolArgs, opts: Opts = None) -> Any:
        return _azure_pool(azure_node_pool.GpuNodePool, "GpuNodePool", name, args, opts)

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.azure.GpuNodePool``."""


class CpuNodePool(pulumi.ComponentResource):
    """One cpuPools entry as AKS agent pools: a Spot pool and its on-demand fallback."""

    pool_names: pulumi.Output[list[str]]
    """The agent pool names, in creation order."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per agent pool (pass them to PriorityExpander)."""

    def __new__(cls, name: str, args: CpuNodePoolArgs, opts: Opts = None) -> Any:
        return _azure_pool(azure_node_pool.CpuNodePool, "CpuNodePool", name, args, opts)

    def __init__(self, name: str, args: CpuNodePoolArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.azure.CpuNodePool``."""


class NapNodePools(pulumi.ComponentResource):
    """AKS Node Auto Provisioning: a NodePool and AKSNodeClass per pool."""

    pool_names: pulumi.Output[list[str]]
    """The NodePool names."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per NodePool."""

    def __new__(cls, name: str, args: NapNodePoolsArgs, opts: Opts = None) -> Any:
        a = _args(name, "NapNodePools", args)
        path = f"NapNodePools({name})"
        n = azure_nap_nodes.NapNodePools(
            name,
            convert.pools(a.get("pools"), f"{path}.pools"),
            a.get("location"),  # type: ignore[arg-type]
            **convert.pick(a, "zones", "consolidate_after", "order"),
            maintenance=convert.maintenance_spec(a.get("maintenance"), f"{path}.maintenance"),
            cpu_pools=convert.pools(a.get("cpu_pools"), f"{path}.cpuPools"),
            opts=opts,
            automatic=bool(a.get("automatic", False)),
            system_pool=convert.system_pool_spec(a["system_pool"], config.Cloud.AZURE, f"{path}.systemPool")
            if a.get("system_pool") is not None
            else None,
        )
        return _pool_outputs(n, n.pools)

    def __init__(self, name: str, args: NapNodePoolsArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.azure.NapNodePools``."""


class NodeImageMaintenance(pulumi.ComponentResource):
    """The AKS node OS upgrade schedule (aksManagedNodeOSUpgradeSchedule) in the maintenance window."""

    def __new__(cls, name: str, args: NodeImageMaintenanceArgs, opts: Opts = None) -> Any:
        a = _args(name, "NodeImageMaintenance", args)
        return azure_maintenance.NodeImageMaintenance(
            name,
            a.get("resource_group_name"),  # type: ignore[arg-type]
            a.get("cluster_name"),  # type: ignore[arg-type]
            maintenance=convert.maintenance_spec(a.get("maintenance"), f"NodeImageMaintenance({name}).maintenance"),
            opts=opts,
        )

    def __init__(self, name: str, args: NodeImageMaintenanceArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.azure.NodeImageMaintenance``."""


# -- AWS --------------------------------------------------------------------------------------


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster ready for GPU node groups: network, control plane, node role, the system node group, a secret kubeconfig."""

    cluster_name: pulumi.Output[str]
    """The EKS cluster's name."""
    kubeconfig: pulumi.Output[str]
    """The kubeconfig JSON, a secret."""
    node_role_arn: pulumi.Output[str]
    """The node IAM role's ARN (pass it to GpuNodeGroup and Karpenter)."""
    oidc_provider_arn: pulumi.Output[str]
    """The cluster's IAM OIDC provider ARN (IRSA)."""
    oidc_provider_url: pulumi.Output[str]
    """The same provider's URL."""
    private_subnet_ids_by_zone: pulumi.Output[dict[str, str]]
    """Zone to private subnet ID (pass it to GpuNodeGroup)."""
    zones: pulumi.Output[list[str]]
    """The cluster's zones, in order."""
    system_node_pool: pulumi.Output[NodePoolInfo]
    """The system node group."""

    def __new__(cls, name: str, args: EksClusterArgs, opts: Opts = None) -> Any:
        a = _args(name, "EksCluster", args)
        path = f"EksCluster({name})"
        nat = a.get("nat")
        if nat is not None and nat not in [n.value for n in aws_network.NatStrategy]:
            choices = ", ".join(n.value for n in aws_network.NatStrategy)
            raise ConfigError(f"{path}.nat", "must be one of " + choices, nat)
        c = aws_cluster.EksCluster(
            name,
            convert.cluster_spec(a.get("cluster"), Cloud.AWS, f"{path}.cluster"),
            network=convert.network_spec(a.get("network"), Cloud.AWS, f"{path}.network"),
            system_pool=convert.system_pool_spec(a.get("system_pool"), Cloud.AWS, f"{path}.systemPool"),
            nat=aws_network.NatStrategy(nat) if nat is not None else aws_network.NatStrategy.SINGLE,
            **convert.pick(a, "public_access_cidrs", "region", "private_subnet_tags", "autoscaler_tags", "auto_mode"),
            opts=opts,
        )
        if c.system_pool is not None:  # None on Auto Mode: the system pool is AutoModeNodePools'
            c.system_node_pool = pulumi.Output.from_input(convert.info_to_dict(c.system_pool))  # type: ignore[attr-defined]
        return c

    def __init__(self, name: str, args: EksClusterArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.EksCluster``."""


def _aws_group(cls: Any, component: str, name: str, args: Any, opts: Opts) -> Any:
    a = _args(name, component, args)
    g = cls(
        name,
        convert.to_config(a.get("pool")),
        a.get("cluster_name"),
        a.get("node_role_arn"),
        dict(a.get("subnet_ids_by_zone") or {}),
        **convert.pick(a, "kubernetes_version", "region", "security_group_id", "vpc_id", "capacity_blocks"),
        opts=opts,
    )
    return _pool_outputs(g, g.groups)


class GpuNodeGroup(pulumi.ComponentResource):
    """One gpuPools entry as EKS managed node groups: per zone a Spot group and its on-demand fallback (reserved groups first)."""

    pool_names: pulumi.Output[list[str]]
    """The node group names."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per node group (pass them to NvidiaDevicePlugin and PriorityExpander)."""

    def __new__(cls, name: str, args: GpuNodeGroupArgs, opts: Opts = None) -> Any:
        return _aws_group(aws_node_group.GpuNodeGroup, "GpuNodeGroup", name, args, opts)

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.GpuNodeGroup``."""


class CpuNodeGroup(pulumi.ComponentResource):
    """One cpuPools entry as EKS managed node groups: per zone a Spot group and its on-demand fallback."""

    pool_names: pulumi.Output[list[str]]
    """The node group names."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per node group (pass them to PriorityExpander)."""

    def __new__(cls, name: str, args: CpuNodeGroupArgs, opts: Opts = None) -> Any:
        return _aws_group(aws_node_group.CpuNodeGroup, "CpuNodeGroup", name, args, opts)

    def __init__(self, name: str, args: CpuNodeGroupArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.CpuNodeGroup``."""


class KarpenterNodePools(pulumi.ComponentResource):
    """EKS Karpenter: EC2NodeClasses and a NodePool per pool."""

    pool_names: pulumi.Output[list[str]]
    """The NodePool names."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per NodePool."""

    def __new__(cls, name: str, args: KarpenterNodePoolsArgs, opts: Opts = None) -> Any:
        a = _args(name, "KarpenterNodePools", args)
        path = f"KarpenterNodePools({name})"
        n = aws_karpenter_nodes.KarpenterNodePools(
            name,
            convert.pools(a.get("pools"), f"{path}.pools"),
            a.get("cluster_name"),  # type: ignore[arg-type]
            a.get("node_role_name"),  # type: ignore[arg-type]
            list(a.get("zones") or ()),
            **convert.pick(a, "consolidate_after", "order"),
            maintenance=convert.maintenance_spec(a.get("maintenance"), f"{path}.maintenance"),
            cpu_pools=convert.pools(a.get("cpu_pools"), f"{path}.cpuPools"),
            opts=opts,
        )
        return _pool_outputs(n, n.pools)

    def __init__(self, name: str, args: KarpenterNodePoolsArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.KarpenterNodePools``."""


class AutoModeNodePools(pulumi.ComponentResource):
    """EKS Auto Mode: a NodeClass and a NodePool per pool (and the system pool's)."""

    pool_names: pulumi.Output[list[str]]
    """The NodePool names."""
    node_pools: pulumi.Output[list[NodePoolInfo]]
    """One description per NodePool (the GPU and CPU pools)."""

    def __new__(cls, name: str, args: AutoModeNodePoolsArgs, opts: Opts = None) -> Any:
        a = _args(name, "AutoModeNodePools", args)
        path = f"AutoModeNodePools({name})"
        system = a.get("system_pool")
        n = aws_auto_mode.AutoModeNodePools(
            name,
            convert.pools(a.get("pools"), f"{path}.pools"),
            a.get("cluster_name"),  # type: ignore[arg-type]
            a.get("node_role_name"),  # type: ignore[arg-type]
            list(a.get("zones") or ()),
            system_pool=None if system is None else convert.system_pool_spec(system, Cloud.AWS, f"{path}.systemPool"),
            **convert.pick(a, "consolidate_after", "order"),
            maintenance=convert.maintenance_spec(a.get("maintenance"), f"{path}.maintenance"),
            cpu_pools=convert.pools(a.get("cpu_pools"), f"{path}.cpuPools"),
            opts=opts,
        )
        return _pool_outputs(n, n.pools)

    def __init__(self, name: str, args: AutoModeNodePoolsArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.auto_mode.AutoModeNodePools``."""


class Karpenter(pulumi.ComponentResource):
    """Karpenter for one EKS cluster: IRSA role, interruption queue and rules, CRD and controller releases."""

    interruption_queue_name: pulumi.Output[str]
    """The SQS interruption queue's name."""
    role_arn: pulumi.Output[str]
    """The controller's IRSA role ARN."""

    def __new__(cls, name: str, args: KarpenterArgs, opts: Opts = None) -> Any:
        a = _args(name, "Karpenter", args)
        k = aws_karpenter.Karpenter(
            name,
            a.get("cluster_name"),  # type: ignore[arg-type]
            a.get("region"),  # type: ignore[arg-type]
            a.get("node_role_arn"),  # type: ignore[arg-type]
            a.get("oidc_provider_arn"),  # type: ignore[arg-type]
            a.get("oidc_provider_url"),  # type: ignore[arg-type]
            list(a.get("subnet_ids") or ()),
            a.get("security_group_id"),  # type: ignore[arg-type]
            **convert.pick(a, "tag_subnets", "node_overlay", "reserved_capacity", "permissions_boundary"),
            opts=opts,
        )
        k.interruption_queue_name = k.queue.name  # type: ignore[attr-defined]
        k.role_arn = k.role.arn  # type: ignore[attr-defined]
        return k

    def __init__(self, name: str, args: KarpenterArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.Karpenter``."""


class ClusterAutoscaler(pulumi.ComponentResource):
    """cluster-autoscaler for one EKS cluster: its IRSA role and the official Helm chart."""

    role_arn: pulumi.Output[str]
    """The IRSA role's ARN."""
    image_tag: pulumi.Output[str]
    """The cluster-autoscaler image tag."""

    def __new__(cls, name: str, args: ClusterAutoscalerArgs, opts: Opts = None) -> Any:
        a = _args(name, "ClusterAutoscaler", args)
        c = aws_autoscaler.ClusterAutoscaler(
            name,
            a.get("cluster_name"),  # type: ignore[arg-type]
            a.get("region"),  # type: ignore[arg-type]
            a.get("kubernetes_version"),  # type: ignore[arg-type]
            a.get("oidc_provider_arn"),  # type: ignore[arg-type]
            a.get("oidc_provider_url"),  # type: ignore[arg-type]
            autoscaler=convert.autoscaler_spec(a.get("autoscaler"), f"ClusterAutoscaler({name}).autoscaler"),
            **convert.pick(a, "namespace", "permissions_boundary"),
            opts=opts,
        )
        c.role_arn = c.role.arn  # type: ignore[attr-defined]
        return c

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.aws.ClusterAutoscaler``."""


# -- Kubernetes -------------------------------------------------------------------------------


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The NVIDIA device plugin DaemonSet for the GPU pools among pools."""

    served_pool_names: pulumi.Output[list[str]]
    """The pools the plugin runs on."""
    image: pulumi.Output[str]
    """The container image."""

    def __new__(cls, name: str, args: NvidiaDevicePluginArgs, opts: Opts = None) -> Any:
        return _served_addon(device_plugin.NvidiaDevicePlugin, name, args, opts, ("version", "namespace"))

    def __init__(self, name: str, args: NvidiaDevicePluginArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.kubernetes.NvidiaDevicePlugin``."""


class DcgmExporter(pulumi.ComponentResource):
    """NVIDIA's DCGM exporter, a DaemonSet and a headless Service per GPU pool among pools that lacks an exporter."""

    served_pool_names: pulumi.Output[list[str]]
    """The pools the exporter runs on."""
    image: pulumi.Output[str]
    """The container image."""

    def __new__(cls, name: str, args: DcgmExporterArgs, opts: Opts = None) -> Any:
        keys = ("version", "service_monitor", "service_monitor_labels", "namespace")
        return _served_addon(dcgm_exporter.DcgmExporter, name, args, opts, keys)

    def __init__(self, name: str, args: DcgmExporterArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.kubernetes.DcgmExporter``."""


class EfaDevicePlugin(pulumi.ComponentResource):
    """The AWS EFA device plugin DaemonSet for the EFA pools among pools."""

    served_pool_names: pulumi.Output[list[str]]
    """The pools the plugin runs on."""
    image: pulumi.Output[str]
    """The container image."""

    def __new__(cls, name: str, args: EfaDevicePluginArgs, opts: Opts = None) -> Any:
        return _served_addon(efa_device_plugin.EfaDevicePlugin, name, args, opts, ("version", "namespace"))

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.kubernetes.EfaDevicePlugin``."""


class Kueue(pulumi.ComponentResource):
    """The Kueue controller (official chart, pinned) on the system pool, managing Jobs in the given namespaces."""

    namespaces: pulumi.Output[list[str]]
    """The namespaces Kueue manages Jobs in."""

    def __new__(cls, name: str, args: KueueArgs, opts: Opts = None) -> Any:
        a = _args(name, "Kueue", args)
        raw, deps = convert.settled(a.get("system_pool"), f"Kueue({name}).system_pool")
        if deps:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=deps))
        system_pool = convert.info_from_dict(raw, f"Kueue({name}).system_pool")
        namespaces = list(a.get("namespaces") or [])
        k = queue_kueue.Kueue(name, system_pool, namespaces, opts=opts)
        k.namespaces = namespaces  # type: ignore[attr-defined]
        return k

    def __init__(self, name: str, args: KueueArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.queueing.Kueue``."""


class KueueQueues(pulumi.ComponentResource):
    """Kueue ResourceFlavors in buying order with quotas at the pools' max, ClusterQueues, LocalQueues and, under cluster-autoscaler, the ProvisioningRequest admission check."""

    flavour_names: pulumi.Output[list[str]]
    """The ResourceFlavors, in the order the ClusterQueue tries them (the buying order)."""

    def __new__(cls, name: str, args: KueueQueuesArgs, opts: Opts = None) -> Any:
        a = _args(name, "KueueQueues", args)
        path = f"KueueQueues({name})"
        pools, opts = _infos(name, "KueueQueues", a.get("pools"), opts)
        raw_teams = [convert.to_config(t) for t in a.get("teams") or []]
        queueing = config.parse_queueing({"enabled": True, "teams": raw_teams}, path) if raw_teams else None
        ordered = queue_flavors.flavours(
            pools, prices=a.get("prices"), weights=a.get("weights"), only=tuple(a.get("only_pools") or ()), path=path
        )
        q = queue_kueue.KueueQueues(
            name,
            ordered,
            namespaces=list(a.get("namespaces") or []),
            teams=queueing.teams if queueing else (),
            atomic_scale_up=bool(a.get("atomic_scale_up", False)),
            opts=opts,
        )
        q.flavour_names = [f.name for f in ordered]  # type: ignore[attr-defined]
        return q

    def __init__(self, name: str, args: KueueQueuesArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.queueing.KueueQueues``."""


class PriorityExpander(pulumi.ComponentResource):
    """The cluster-autoscaler-priority-expander ConfigMap: reserved first, the cheapest Spot next, on-demand last."""

    priorities: pulumi.Output[str]
    """The rendered priorities YAML."""

    def __new__(cls, name: str, args: PriorityExpanderArgs, opts: Opts = None) -> Any:
        a = _args(name, "PriorityExpander", args)
        pools, opts = _infos(name, "PriorityExpander", a.get("pools"), opts)
        return priority_expander.PriorityExpander(name, pools, **convert.pick(a, "namespace", "prices"), opts=opts)

    def __init__(self, name: str, args: PriorityExpanderArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.kubernetes.PriorityExpander``."""


class WarmCapacity(pulumi.ComponentResource):
    """Warm pools' spare GPU nodes: a CapacityBuffer or placeholder pods per pool, and its schedule."""

    def __new__(cls, name: str, args: WarmCapacityArgs, opts: Opts = None) -> Any:
        a = _args(name, "WarmCapacity", args)
        pools, opts = _infos(name, "WarmCapacity", a.get("pools"), opts)
        raw_system, deps = convert.settled(a.get("system_pool"), f"WarmCapacity({name}).system_pool")
        if deps:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=deps))
        system = convert.info_from_dict(raw_system, f"WarmCapacity({name}).system_pool")
        choices = [m.value for m in warm_rules.Mechanism]
        if a.get("mechanism") not in choices:
            raise ConfigError(f"WarmCapacity({name}).mechanism", "must be one of " + ", ".join(choices), a.get("mechanism"))
        specs = []
        for pool, raw in (a.get("warm") or {}).items():
            path = f"WarmCapacity({name}).warm.{pool}"
            groups = [i for i in pools if i.pool == pool]
            if not groups:
                raise ConfigError(path, "names no pool of pools", pool)
            spec = config.PoolSpec(
                name=pool,
                instance_types=groups[0].instance_types,
                max_size=max(i.max_size for i in groups),
                warm=config.parse_warm(convert.to_config(dict(raw)), path),
            )
            warm_rules.check_warm(spec, path.removesuffix(".warm"))
            specs.append(spec)
        return kubernetes_warm.WarmCapacity(name, specs, pools, warm_rules.Mechanism(a["mechanism"]), system, opts=opts)

    def __init__(self, name: str, args: WarmCapacityArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.kubernetes.warm.WarmCapacity``."""


class GpuSmokeTest(pulumi.ComponentResource):
    """A Job running the CUDA vector-add sample on one GPU of one pool."""

    job_name: pulumi.Output[str]
    """The Job's metadata.name."""

    def __new__(cls, name: str, args: GpuSmokeTestArgs, opts: Opts = None) -> Any:
        a = _args(name, "GpuSmokeTest", args)
        raw, deps = convert.settled(a.get("pool"), f"GpuSmokeTest({name}).pool")
        if deps:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=deps))
        pool = convert.info_from_dict(raw, f"GpuSmokeTest({name}).pool")
        return smoke_test.GpuSmokeTest(name, pool, **convert.pick(a, "namespace"), opts=opts)

    def __init__(self, name: str, args: GpuSmokeTestArgs, opts: Opts = None) -> None:  # pragma: no cover
        """Not called: ``__new__`` returns the ``gpupools.kubernetes.GpuSmokeTest``."""
