"""``GpuNodeGroup`` and ``CpuNodeGroup``: one ``gpuPools`` or ``cpuPools`` entry as per-zone Spot and
on-demand EKS managed node groups.

Per zone, a SPOT managed node group and (unless ``onDemandFallback`` is false) an ON_DEMAND one of
the same shape: cluster-autoscaler's priority expander tries the Spot groups first and falls back
to on-demand when a Spot launch fails. One group per zone (not one group over all zones) because a
managed node group's ASG balances across its subnets on its own, which fights cluster-autoscaler's
zone-aware scheduling simulation; per-zone groups with ``--balance-similar-node-groups`` let the
autoscaler pick and balance zones itself.

Each group is a plain ``aws.eks.NodeGroup`` (every input visible to tests and previews):

* the pool's instance types (validated to share vCPU, memory and GPU count, because
  cluster-autoscaler builds its scale-from-zero template from the first type) and AMI type
  (``AL2023_x86_64_NVIDIA`` by default, ``BOTTLEROCKET_x86_64_NVIDIA`` as an option). ``gpuDriver:
  none`` changes nothing on the group: EKS has no switch to leave the driver out of an NVIDIA AMI,
  so the pool keeps the AL2023 NVIDIA AMI (driver and container toolkit in the image) and only the
  device plugin is the user's (the GPU Operator with its driver and toolkit disabled, as AWS
  documents for that AMI; ``docs/gpu-driver.md``);
* sizes: the pool's ``maxSize`` (and ``minSize``) are totals, split over the zones with the
  remainder going to the first zones; the on-demand fallback's max is ``onDemandMaxSize`` (default
  ``maxSize``) split the same way, and its min is 0 (the pool's minimum is kept on Spot: keeping
  on-demand nodes warm as well would double the idle cost). ``desiredSize`` starts at the group's
  min (0 by default, so a Spot capacity shortage at create time cannot fail the stack); after that
  the autoscaler owns it, and every update sends the group's *live* size (``live_capacity``; see
  ``create_managed_node_group`` for how and why);
* labels: the conventions' pool labels, the pool's extra labels and
  ``k8s.amazonaws.com/accelerator`` (``accelerator_label_value``: the GPU model when every
  instance type of the pool has the same one, else ``nvidia-mixed``, so no node is ever labelled
  with a model it may not have);
* a shared pool (``sharing``: time-slicing or MPS) also carries
  ``nvidia.com/device-plugin.config=<config>``, the label the device plugin's config-manager reads,
  and its scale-from-zero GPU count (ASG tag and node group tag) is GPUs x replicas: what one node
  advertises, so cluster-autoscaler buys one node for ``replicas`` pods, not one per pod. MIG is
  rejected on EKS (``rules.check_sharing``);
* taints: the GPU taint and the pool's extra taints, every one with a value, in EKS spelling
  (``NO_SCHEDULE``);
* one launch template per pool (``launch_template``): IMDSv2 only with hop limit 1, encrypted gp3
  volumes sized from ``diskSizeGb``, no SSH;
* ``efa: true`` (multi-node training): the launch template lists one EFA interface per EFA-capable
  network card of the pool's types (``aws_instance_types.EFA_INTERFACES``) and puts every node in
  the pool's cluster placement group (``aws.ec2.PlacementGroup``, strategy ``cluster``); the
  interfaces carry the cluster security group and the pool's EFA security group, which allows all
  traffic from and to itself (EC2 User Guide, "Get started with EFA", step 1: "a security group
  that allows all inbound and outbound traffic to and from the security group itself"); the groups
  are labelled ``vpc.amazonaws.com/efa.present=true`` and advertise ``vpc.amazonaws.com/efa`` in
  their scale-from-zero tags; the pool has one zone (``rules.check_efa``);
* ``node_repair_config`` ``{enabled: true}`` on a GPU pool's groups (``gpupools:nodeRepair``;
  ``gpupools.aws.node_repair``): EKS reboots or replaces a node whose GPU the node monitoring
  agent reports unhealthy;
* ``update_config`` ``maxUnavailable: 1``: a launch template or AMI roll drains one GPU node at a
  time, so a running job loses at most one node to it;
* a deterministic name with the capacity token and a digest of the create-only fields
  (``naming.gpu_node_group_name``), so a change that EKS cannot make in place replaces the group
  create-before-destroy.

A pool with ``reservations`` also gets one group per EC2 capacity reservation (ODCR or Capacity
Block), in the reservation's zone, with the pool's first instance type, min 0 and max the
reservation's ``count`` (the pool's ``maxSize`` without one), labelled ``gpupools.io/capacity-type=reserved``, with a launch template of its own that
targets the reservation; the priority expander ranks these above the pool's Spot and on-demand
groups (``gpupools.aws.reservations`` says why each choice).

For each group, the cluster-autoscaler scale-from-zero tags go on the group's Auto Scaling group
(``asg_tags``), and ``groups`` describes it as a ``NodePoolInfo`` for the Kubernetes side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpupools import config, rules, sharing
from gpupools.aws import naming
from gpupools.aws.asg_tags import NodeTemplateTag, create_asg_tags, node_template_tags, resource_tags
from gpupools.aws.launch_template import create_launch_template
from gpupools.aws.live_capacity import NodeGroupSizes, desired_size_on_update
from gpupools.aws.node_repair import node_repair_config
from gpupools.aws.reservations import ReservationKind, check_capacity_blocks, reservation_kind, reservation_zone
from gpupools.aws.stack_tag import stack_tags
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.conventions import (
    CA_TAG_PREFIX,
    EFA_PRESENT_LABEL,
    EFA_RESOURCE,
    EKS_ACCELERATOR_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    POOL_LABEL,
    CapacityType,
    Role,
    Taint,
    device_plugin_labels,
    pool_labels,
)
from gpupools.errors import ConfigError, MissingOutputError
from gpupools.pools import NodePoolInfo
from gpupools.specs import Cloud, GpuPoolSpec
from gpupools.versions import check_minor

TYPE = "gpupools:index:GpuNodeGroup"

IGNORE_CHANGES = ["scalingConfig.desiredSize"]
"""Engine (camelCase) path of the autoscaler-owned desired size, ignored when its live value is unknown."""

ROLL_AT_ZERO_PATHS = ("version", "releaseVersion", "launchTemplate.version")
"""What a reserved group (ODCR or Capacity Block) holds while it runs nodes: EKS updates a managed
node group by launching replacements first ("It increments the Auto Scaling Group's maximum size and
desired size by the larger of either: Up to twice the number of Availability Zones ... The maximum
unavailable of upgrade", EKS user guide ``nodes/managed-node-update-behavior.adoc``, "Scale up
phase"), and a reservation in use has no spare instance for them: the launches fail and the update
ends in ``NodeCreationFailure`` after its timeout. At zero nodes there is nothing to replace and the
update is immediate, so gpupools sends a reserved group's new Kubernetes version or launch template
only when the group is at zero (the autoscaler takes an idle group there within
``scaleDownUnneededTime``), and holds it, with a warning, while it runs. The provider sends these
through ``UpdateNodegroupVersion`` (terraform-provider-aws ``internal/service/eks/node_group.go``,
``resourceNodeGroupUpdate``: ``if d.HasChanges("launch_template", "release_version", "version")``).
Held, the nodes keep their kubelet one minor behind the control plane, which Kubernetes' version skew
policy allows (kubelet up to three minors older than kube-apiserver)."""

MAX_UNAVAILABLE = 1
"""``update_config``: drain one node at a time when EKS rolls a group to a new launch template or AMI."""


def split(total: int, parts: int) -> list[int]:
    """``total`` over ``parts`` as evenly as possible, the remainder to the first parts.

    >>> split(10, 3)
    [4, 3, 3]
    """
    base, remainder = divmod(total, parts)
    return [base + (1 if index < remainder else 0) for index in range(parts)]


def eks_taints(taints: Sequence[Taint]) -> list[aws.eks.NodeGroupTaintArgs]:
    """Taints in the EKS API's form (effect ``NO_SCHEDULE`` etc.)."""
    return [aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=t.effect.eks) for t in taints]


@dataclass(frozen=True)
class GroupPlan:
    """One managed node group, decided before anything is registered (pure)."""

    name: str
    capacity: CapacityType
    zone: str
    min_size: int
    max_size: int
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    instance_types: tuple[str, ...]
    ami_type: str
    gpus_per_node: int
    gpu_model: str
    slots_per_gpu: int = 1
    efa_interfaces: int = 0
    reservation_id: str | None = None
    reservation_kind: ReservationKind | None = None

    @property
    def eks_capacity_type(self) -> str:
        """``capacityType`` of ``CreateNodegroup``: ``SPOT``, ``ON_DEMAND``, or for a reserved group
        its reservation's (``ON_DEMAND`` targeting an ODCR, ``CAPACITY_BLOCK``)."""
        if self.reservation_kind is not None:
            return self.reservation_kind.eks_capacity_type
        return naming.EKS_CAPACITY_TYPE[self.capacity]

    @property
    def capacity_block(self) -> bool:
        """A Capacity Block's group: its instance type goes in its launch template, not on the group."""
        return self.reservation_kind is ReservationKind.CAPACITY_BLOCK

    @property
    def gpu_slots_per_node(self) -> int:
        """``nvidia.com/gpu`` one node advertises: what the scale-from-zero tags say."""
        return self.gpus_per_node * self.slots_per_gpu

    def info(self, pool: GpuPoolSpec) -> NodePoolInfo:
        return NodePoolInfo(
            name=self.name,
            pool=pool.name,
            role=pool.role,
            capacity=self.capacity,
            zones=(self.zone,),
            instance_types=self.instance_types,
            min_size=self.min_size,
            max_size=self.max_size,
            labels=self.labels,
            taints=self.taints,
            gpus_per_node=self.gpus_per_node,
            gpu_model=self.gpu_model,
            autoscaler_group_regex=naming.asg_name_regex(self.name),
            needs_device_plugin=pool.needs_device_plugin,
            gpu_driver=pool.gpu_driver,
            sharing=pool.sharing,
            slots_per_gpu=self.slots_per_gpu,
            efa_interfaces=self.efa_interfaces,
        )


MIXED_GPU_MODELS = "nvidia-mixed"
"""The accelerator label's value on a pool whose instance types have different GPU models."""


def gpu_models(instance_types: Sequence[str]) -> tuple[str, ...]:
    """The distinct GPU models of ``instance_types``, sorted (catalog facts)."""
    return tuple(sorted({INSTANCE_TYPES[name].gpu_model for name in instance_types}))


def accelerator_label_value(instance_types: Sequence[str]) -> str:
    """The ``k8s.amazonaws.com/accelerator`` value for a group of ``instance_types``.

    Why the label is there at all: it is cluster-autoscaler's AWS GPU label (``GPULabel`` in
    ``cloudprovider/aws/aws_cloud_provider.go``). A node that has the label but no allocatable
    ``nvidia.com/gpu`` yet (the device plugin is still starting) is treated as unready instead of
    as a ready node without GPUs, so pending GPU pods do not trigger a second scale-up
    (``processors/customresources/gpu_processor.go``, ``FilterOutNodesWithUnreadyResources``, which
    tests only that the label is present). Its value is read as a GPU type only for ``--gpu-total``
    limits, which gpupools does not set.

    Why the value is not always a model: a managed node group's labels apply to every node it
    starts, whatever instance type EC2 picks, so a ``g4dn.xlarge, g5.xlarge, g6.xlarge`` pool
    labelled with the first type's model would call A10G and L4 nodes ``nvidia-tesla-t4``. A pool
    of one model gets that model (``nvidia-tesla-t4``); a mixed pool gets ``nvidia-mixed``, which
    keeps the autoscaler's readiness check and names no model. EKS rejects an empty label value
    (botocore ``eks`` model, ``labelValue``: min length 1), so ``""`` is not an option. To select
    nodes by GPU model, select by ``node.kubernetes.io/instance-type`` (set by the kubelet), or run
    NVIDIA GPU Feature Discovery for ``nvidia.com/gpu.product``.

    >>> accelerator_label_value(["g4dn.xlarge", "g4dn.2xlarge"]), accelerator_label_value(["g5.xlarge", "g6.xlarge"])
    ('nvidia-tesla-t4', 'nvidia-mixed')
    """
    models = gpu_models(instance_types)
    return models[0] if len(models) == 1 else MIXED_GPU_MODELS


def group_labels(pool: GpuPoolSpec, capacity: CapacityType) -> dict[str, str]:
    """Every label a group of ``pool`` carries: extras, then the conventions, the accelerator label and,
    on a shared pool, the device plugin config label."""
    if not pool.is_gpu:
        return {**pool.labels, **pool_labels(pool.name, pool.role, capacity)}
    accelerator = accelerator_label_value(pool.instance_types)
    return {
        **pool.labels,
        **pool_labels(pool.name, Role.GPU, capacity),
        EKS_ACCELERATOR_LABEL: accelerator,
        **sharing.node_labels(pool.sharing),
        **({EFA_PRESENT_LABEL: "true"} if pool.efa else {}),
        **device_plugin_labels(True, pool.needs_device_plugin),
    }


def plan_reserved_groups(
    pool: GpuPoolSpec, cluster_name: str, zones: Sequence[str], capacity_blocks: Sequence[str] = (), path: str = "pool"
) -> list[GroupPlan]:
    """One managed node group per reservation of ``pool`` (``gpupools.aws.reservations``): in the
    reservation's zone, the pool's first instance type, min 0, max the reservation's ``count``
    (without one, the pool's ``maxSize``: ``ReservationSpec.reserved_max``)."""
    zones = list(pool.zones or zones)
    check_capacity_blocks(pool.reservations, capacity_blocks, path)
    first = pool.instance_types[0]
    taints = (GPU_TAINT, *pool.taints) if pool.is_gpu else pool.taints
    plans = []
    for index, reservation in enumerate(pool.reservations):
        zone = reservation_zone(reservation, zones, f"{path}.reservations[{index}]")
        kind = reservation_kind(reservation, capacity_blocks)
        create_only = {
            "instanceTypes": [first],
            "amiType": pool.ami_type.value,
            "capacityType": kind.eks_capacity_type,
            "capacityReservationId": reservation.id,
        }
        plans.append(
            GroupPlan(
                name=naming.gpu_node_group_name(
                    cluster_name, pool.name, CapacityType.RESERVED, zone, create_only, f"{path}.name"
                ),
                capacity=CapacityType.RESERVED,
                zone=zone,
                min_size=0,
                max_size=reservation.reserved_max(pool.max_size),
                labels=MappingProxyType(group_labels(pool, CapacityType.RESERVED)),
                taints=taints,
                instance_types=(first,),
                ami_type=pool.ami_type.value,
                gpus_per_node=INSTANCE_TYPES[first].gpus,
                gpu_model=",".join(gpu_models((first,))) if pool.is_gpu else "",
                slots_per_gpu=sharing.slots_per_gpu(pool.sharing),
                reservation_id=reservation.id,
                reservation_kind=kind,
            )
        )
    return plans


def plan_gpu_groups(
    pool: GpuPoolSpec, cluster_name: str, zones: Sequence[str], path: str = "pool", capacity_blocks: Sequence[str] = ()
) -> list[GroupPlan]:
    """The managed node groups for ``pool`` over ``zones`` (the pool's zones win if it has any):
    one per reservation first (``plan_reserved_groups``), then per zone Spot then on-demand, or only
    on-demand for a pool with ``spot: false``. ``capacity_blocks``: the reservation IDs that are
    Capacity Blocks."""
    facts = INSTANCE_TYPES[pool.instance_types[0]]
    efa_interfaces = facts.efa_interfaces if pool.efa else 0
    reserved = [
        replace(plan, efa_interfaces=efa_interfaces)
        for plan in plan_reserved_groups(pool, cluster_name, zones, capacity_blocks, path)
    ]
    zones = list(pool.zones or zones)
    taints = (GPU_TAINT, *pool.taints) if pool.is_gpu else pool.taints
    tiers: list[tuple[CapacityType, list[int], list[int]]] = []
    if pool.spot:
        tiers.append((CapacityType.SPOT, split(pool.min_size, len(zones)), split(pool.max_size, len(zones))))
        if pool.on_demand_fallback:
            tiers.append((CapacityType.ON_DEMAND, [0] * len(zones), split(pool.fallback_max_size, len(zones))))
    else:
        tiers.append((CapacityType.ON_DEMAND, split(pool.min_size, len(zones)), split(pool.max_size, len(zones))))
    plans = []
    for index, zone in enumerate(zones):
        for capacity, mins, maxes in tiers:
            create_only = {"instanceTypes": list(pool.instance_types), "amiType": pool.ami_type.value}
            plans.append(
                GroupPlan(
                    name=naming.gpu_node_group_name(cluster_name, pool.name, capacity, zone, create_only, f"{path}.name"),
                    capacity=capacity,
                    zone=zone,
                    min_size=mins[index],
                    max_size=maxes[index],
                    labels=MappingProxyType(group_labels(pool, capacity)),
                    taints=taints,
                    instance_types=pool.instance_types,
                    ami_type=pool.ami_type.value,
                    gpus_per_node=facts.gpus,
                    gpu_model=",".join(gpu_models(pool.instance_types)) if pool.is_gpu else "",
                    slots_per_gpu=sharing.slots_per_gpu(pool.sharing),
                    efa_interfaces=efa_interfaces,
                )
            )
    return [*reserved, *plans]


def group_template_tags(plan: GroupPlan, disk_size_gb: int) -> list[NodeTemplateTag]:
    """The scale-from-zero tags of one group: labels, taints, ``nvidia.com/gpu``, ``ephemeral-storage``
    from ``disk_size_gb`` and, on an EFA pool, ``vpc.amazonaws.com/efa`` and ``hugepages-2Mi``
    (cluster-autoscaler reads any ``node-template/resources/<name>`` tag as that resource's
    allocatable on the template node, ``aws_manager.go`` ``extractAllocatableResourcesFromAsg``), so
    a pending pod requesting any of them can scale the group up from zero (``asg_tags.resource_tags``)."""
    tags = node_template_tags(plan.labels, plan.taints, plan.gpu_slots_per_node)
    if plan.efa_interfaces:
        tags.append(NodeTemplateTag("resource", EFA_RESOURCE, str(plan.efa_interfaces)))
    return tags + resource_tags(disk_size_gb, efa=bool(plan.efa_interfaces))


PLACEMENT_STRATEGY = "cluster"
"""EC2 placement group strategy for EFA pools: instances packed close together in one Availability
Zone for low-latency, high-throughput node-to-node traffic (EC2 User Guide, "Placement strategies")."""


def create_efa_network(
    name: str, *, vpc_id: pulumi.Input[str], tags: Mapping[str, str], parent: pulumi.Resource, cluster_name: str = ""
) -> tuple[aws.ec2.PlacementGroup, aws.ec2.SecurityGroup, list[pulumi.CustomResource]]:
    """An EFA pool's cluster placement group and its EFA security group with the two rules EFA
    needs: all traffic from the group itself in, all traffic to the group itself out (EC2 User
    Guide, "Get started with EFA and MPI", "Prepare an EFA-enabled security group"; EFA's OS-bypass
    traffic is allowed only by these self-referencing rules). The group is separate from the
    EKS-managed cluster security group, whose own rules EKS owns."""
    opts = pulumi.ResourceOptions(parent=parent)
    # The stack tag: the deployer policy writes these only where it is the stack's (gpupools.aws.stack_tag).
    tags = {**tags, **(stack_tags(cluster_name) if cluster_name else {})}
    placement_group = aws.ec2.PlacementGroup(f"{name}-placement-group", strategy=PLACEMENT_STRATEGY, tags=dict(tags), opts=opts)
    group = aws.ec2.SecurityGroup(
        f"{name}-efa",
        vpc_id=vpc_id,
        description="gpupools EFA: all traffic within this group (EFA OS-bypass)",
        tags=dict(tags),
        opts=opts,
    )
    rules_: list[pulumi.CustomResource] = [
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-efa-ingress-self",
            security_group_id=group.id,
            referenced_security_group_id=group.id,
            ip_protocol="-1",
            description="EFA: all traffic from this group",
            tags=dict(tags),
            opts=opts,
        ),
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-efa-egress-self",
            security_group_id=group.id,
            referenced_security_group_id=group.id,
            ip_protocol="-1",
            description="EFA: all traffic to this group",
            tags=dict(tags),
            opts=opts,
        ),
    ]
    return placement_group, group, rules_


def check_cluster_name(cluster_name: str, path: str) -> None:
    if (
        not isinstance(cluster_name, str)
        or not rules.CLUSTER_NAME.match(cluster_name)
        or len(cluster_name) > rules.CLUSTER_NAME_MAX
    ):
        raise ConfigError(
            path,
            f"must be the EKS cluster's name: lowercase letters, digits and '-', at most {rules.CLUSTER_NAME_MAX} characters",
            cluster_name,
        )


def check_kubernetes_version(version: str | None, path: str) -> None:
    problem = None if version is None else check_minor(version, Cloud.AWS.value)
    if problem:
        raise ConfigError(path, problem, version)


def depends_on_of(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    """The resources in ``opts.depends_on``, so a component can hand them to its children."""
    if opts is None or opts.depends_on is None:
        return []
    deps = opts.depends_on
    if isinstance(deps, pulumi.Resource):
        return [deps]
    if isinstance(deps, (list, tuple)):
        return [d for d in deps if isinstance(d, pulumi.Resource)]
    return []


def create_managed_node_group(
    resource_name: str,
    *,
    cluster_name: pulumi.Input[str],
    node_group_name: str,
    node_role_arn: pulumi.Input[str],
    subnet_ids: Sequence[pulumi.Input[str]],
    capacity: CapacityType,
    ami_type: str,
    instance_types: Sequence[str],
    min_size: int,
    max_size: int,
    labels: Mapping[str, str],
    taints: Sequence[Taint],
    launch_template: aws.ec2.LaunchTemplate,
    kubernetes_version: str | None,
    tags: Mapping[str, str],
    parent: pulumi.Resource,
    live_desired_size: int | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    eks_capacity_type: str | None = None,
    node_repair: bool = False,
    instance_types_in_template: bool = False,
    roll_only_at_zero: bool = False,
) -> aws.eks.NodeGroup:
    """One managed node group with gpupools' fixed choices (launch template by latest version,
    ``MAX_UNAVAILABLE``, no remote access) and an autoscaler-safe desired size; with
    ``node_repair``, EKS node auto repair on (``gpupools.aws.node_repair``).

    The desired size, and why: an update of a node group's scaling config sends ``desiredSize``
    whole with min and max (terraform-provider-aws ``internal/service/eks/node_group.go``,
    ``resourceNodeGroupUpdate``: ``ScalingConfig`` from ``expandNodegroupScalingConfig`` whenever
    ``scaling_config`` changed), and EKS resizes the group to it, terminating nodes the autoscaler
    started (EKS API reference, ``NodegroupScalingConfig.desiredSize``). So:

    * ``live_desired_size`` known (the group exists and ``live_capacity.NodeGroupSizes`` read it):
      ``desiredSize`` is the live size brought into the new bounds
      (``live_capacity.desired_size_on_update``) and is *not* ignored. A ``maxSize`` change then
      sends exactly the live size, whatever the state holds (``pulumi up --refresh=false`` too);
      raising ``minSize`` above the live size sends the new minimum instead of a desired size EKS
      would reject ("Minimum capacity X can't be greater than desired size Y").
    * unknown (a group about to be created, or one whose size could not be read): ``desiredSize``
      is ``min_size`` (the create-time value; 0 for GPU groups, so a Spot shortage cannot fail the
      create) and is in ``ignore_changes``. Pulumi then sends the *stored* desired size on an
      update (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``, ``processIgnoreChanges``),
      which is the live one only because the project refreshes before every update
      (``Pulumi.yaml`` ``options.refresh: always``; the bridge's ``Read`` writes the refreshed
      ``desiredSize`` back into the stored inputs: pulumi/pulumi-terraform-bridge
      ``pkg/tfbridge/provider.go``, ``Read`` -> ``ExtractInputsFromOutputs``).

    The node group's name and create-only fields do not depend on any of this, so neither path
    ever replaces a group.

    ``eks_capacity_type`` overrides the API spelling of ``capacity`` (``CAPACITY_BLOCK`` for a
    Capacity Block's group; ``GroupPlan.eks_capacity_type``). ``instance_types_in_template``: the
    launch template names the instance type, so the group sends none (a Capacity Block's group:
    ``launch_template`` module docstring); ``instance_types`` then only describes the group.

    ``roll_only_at_zero`` (reserved groups, ``ROLL_AT_ZERO_PATHS``): while the group runs nodes
    (live size above 0), its Kubernetes version and launch template version are held
    (``ignore_changes``) and a warning says what waits; once it is at zero, the next ``up`` sends them.
    """
    live = live_desired_size is not None
    desired = desired_size_on_update(live_desired_size, min_size, max_size) if live_desired_size is not None else min_size
    held = roll_only_at_zero and live_desired_size is not None and live_desired_size > 0
    if held:
        pulumi.log.warn(
            f"EKS node group {node_group_name} (a capacity reservation's) runs {live_desired_size} node(s): a change of "
            "its Kubernetes version or launch template waits until it is at 0 nodes, because EKS rolls a group by "
            "launching replacements first and a reservation has no room for them. Let the autoscaler scale it down "
            "(or drain its nodes), then run `pulumi up` again",
            resource=parent,
        )
    return aws.eks.NodeGroup(
        resource_name,
        cluster_name=cluster_name,
        node_group_name=node_group_name,
        node_role_arn=node_role_arn,
        subnet_ids=list(subnet_ids),
        capacity_type=eks_capacity_type or naming.EKS_CAPACITY_TYPE[capacity],
        ami_type=ami_type,
        instance_types=None if instance_types_in_template else list(instance_types),
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=min_size, max_size=max_size, desired_size=desired),
        labels=dict(labels),
        taints=eks_taints(taints),
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
            id=launch_template.id, version=launch_template.latest_version.apply(str)
        ),
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=MAX_UNAVAILABLE),
        node_repair_config=node_repair_config(node_repair),
        version=kubernetes_version,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(
            parent=parent,
            ignore_changes=([] if live else list(IGNORE_CHANGES)) + (list(ROLL_AT_ZERO_PATHS) if held else []) or None,
            depends_on=list(depends_on),
        ),
    )


def first_autoscaling_group(resources: Any, node_group: str = "") -> str:
    """The name of the first Auto Scaling group in an EKS node group's ``resources`` output.

    EKS creates exactly one Auto Scaling group per managed node group and returns it after create,
    so an absent one (``None``, an empty list, a group without a name) is not a state of a real
    deployment: it is what a test's mocks return when they echo the inputs back. Raises
    ``MissingOutputError`` naming the node group, instead of a ``TypeError`` from indexing ``None``.

    >>> first_autoscaling_group([{"autoscalingGroups": [{"name": "eks-ml-dev-t4-spot-1a-6c"}]}])
    'eks-ml-dev-t4-spot-1a-6c'
    """

    def field(item: Any, snake: str, camel: str) -> Any:
        value = getattr(item, snake, None)
        if value is None and isinstance(item, Mapping):
            value = item.get(camel, item.get(snake))
        return value

    groups = field(resources[0], "autoscaling_groups", "autoscalingGroups") if resources else None
    name = field(groups[0], "name", "name") if groups else None
    if not name:
        raise MissingOutputError(
            f"aws.eks.NodeGroup({node_group})",
            "resources[0].autoscalingGroups[0].name",
            resources,
            "EKS returns the node group's Auto Scaling group after create, and the scale-from-zero tags name it",
        )
    return str(name)


def autoscaling_group_name(node_group: aws.eks.NodeGroup, name: str = "") -> pulumi.Output[str]:
    """The name of the Auto Scaling group EKS created for ``node_group`` (known after create);
    ``name`` (the node group's logical name) only labels the error when the output is absent."""
    return node_group.resources.apply(lambda resources: first_autoscaling_group(resources, name))


class GpuNodeGroup(pulumi.ComponentResource):
    """One ``gpuPools`` entry on an existing EKS cluster: per zone a Spot managed node group and its
    on-demand fallback, a group per capacity reservation of the pool, their launch templates and
    their cluster-autoscaler scale-from-zero tags.

    Usable without ``EksCluster``: it needs only the cluster's name, a node role and a private
    subnet per zone::

        GpuNodeGroup("t4", pool={"name": "t4", "instanceTypes": ["g4dn.xlarge", "g5.xlarge"], "maxSize": 6},
                     cluster_name="ml-dev", node_role_arn=role.arn,
                     subnet_ids_by_zone={"us-west-2a": subnet_a.id, "us-west-2b": subnet_b.id})

    Args:
        name: the component's name; child resources are named ``<name>-<spot|od>-<zone>``, and
            ``<name>-rsv-<reservation ID>`` for a reservation's group.
        pool: a ``GpuPoolSpec`` or a plain mapping in the ``gpuPools`` config shape (validated by
            ``config.parse_gpu_pool``). Specs are re-validated with ``rules.check_gpu_pool``.
        cluster_name: the EKS cluster's name (plain: node group names derive from it).
        node_role_arn: the node IAM role. With API authentication mode it needs an access entry of
            type ``EC2_LINUX`` (``EksCluster`` creates one; EKS also creates one for a managed node
            group's role if none exists).
        subnet_ids_by_zone: one private subnet per zone, zone name to subnet ID. The pool's zones
            must be among these; without pool zones, every zone here gets groups.
        kubernetes_version: the node groups' Kubernetes minor; default none (EKS uses the
            cluster's version at create and leaves nodes behind on a control-plane upgrade, so pass
            it when you manage the cluster).
        region: the stack's region; when given, zones are checked to belong to it.
        security_group_id: the cluster security group EKS created (``EksCluster.eks_cluster.cluster_security_group_id``);
            required with ``efa: true``, where the launch template names the interfaces' security
            groups and EKS then no longer adds it on its own. Unused otherwise.
        vpc_id: the cluster's VPC; required with ``efa: true`` (the pool's EFA security group).
        live_sizes: where to read the groups' live desired sizes (``EksCluster.live_sizes`` shares
            one reader); default: a ``live_capacity.NodeGroupSizes`` of ``cluster_name``. Every
            update sends each existing group's live size; see ``create_managed_node_group``.
        opts: resource options; ``depends_on`` is passed on to the node groups.
        capacity_blocks: the IDs of the pool's ``reservations`` that are Capacity Blocks for ML
            (``CAPACITY_BLOCK`` groups); default none: every reservation is an On-Demand Capacity
            Reservation (``gpupools.aws.reservations``: the kind is not in the ID).
        node_repair: EKS node auto repair (``nodeRepairConfig``) on every group of the pool;
            default None: on for a GPU pool (GA on managed node groups), off for a CPU pool. GPU
            conditions come from the node monitoring agent add-on
            (``gpupools.aws.node_repair.create_node_monitoring_agent``), which the EKS stack adds.

    Attributes:
        spec: the validated pool.
        node_pools: one ``NodePoolInfo`` per node group: the reserved groups first, then Spot before
            on-demand within each zone; the same name on every pool component of both clouds.
        groups: the same list (its name before ``node_pools``).
        node_groups: node group name to ``aws.eks.NodeGroup``.
        launch_template: the pool's launch template (its Spot and on-demand groups).
        reservation_launch_templates: reserved node group name to its own launch template.
        asg_tags: node group name to its ``aws.autoscaling.Tag`` resources.
        placement_group, efa_security_group, efa_security_group_rules: with ``efa: true``, the
            pool's cluster placement group, its EFA security group and that group's two
            self-referencing rules (all traffic in, all traffic out); None / empty otherwise.

    Raises:
        ConfigError: naming the argument (``GpuNodeGroup(t4).pool.instanceTypes[1]``, ...), before
            anything is registered.
    """

    TYPE = TYPE
    ROLE = Role.GPU

    spec: GpuPoolSpec
    node_pools: list[NodePoolInfo]
    groups: list[NodePoolInfo]
    node_groups: dict[str, aws.eks.NodeGroup]
    launch_template: aws.ec2.LaunchTemplate
    reservation_launch_templates: dict[str, aws.ec2.LaunchTemplate]
    asg_tags: dict[str, list[aws.autoscaling.Tag]]
    placement_group: aws.ec2.PlacementGroup | None
    efa_security_group: aws.ec2.SecurityGroup | None
    efa_security_group_rules: list[pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        pool: GpuPoolSpec | Mapping[str, Any],
        cluster_name: str,
        node_role_arn: pulumi.Input[str],
        subnet_ids_by_zone: Mapping[str, pulumi.Input[str]],
        kubernetes_version: str | None = None,
        region: str | None = None,
        live_sizes: NodeGroupSizes | None = None,
        opts: pulumi.ResourceOptions | None = None,
        security_group_id: pulumi.Input[str] | None = None,
        vpc_id: pulumi.Input[str] | None = None,
        capacity_blocks: Sequence[str] = (),
        node_repair: bool | None = None,
    ) -> None:
        path = f"{type(self).__name__}({name})"
        if isinstance(pool, GpuPoolSpec):
            spec = pool
            if spec.role is not self.ROLE:
                raise ConfigError(f"{path}.pool", f"must be a {self.ROLE.value} pool spec", spec.role.value)
        else:
            spec = config.parse_pool(pool, Cloud.AWS, f"{path}.pool", self.ROLE)
        check_cluster_name(cluster_name, f"{path}.cluster_name")
        check_kubernetes_version(kubernetes_version, f"{path}.kubernetes_version")
        if not subnet_ids_by_zone:
            raise ConfigError(f"{path}.subnet_ids_by_zone", "must map at least one zone to a subnet ID", {})
        for zone in subnet_ids_by_zone:
            rules.check_zone(zone, Cloud.AWS, f"{path}.subnet_ids_by_zone[{zone}]", region)
        zones = tuple(subnet_ids_by_zone)
        rules.check_gpu_pool(spec, Cloud.AWS, f"{path}.pool", zones, region)
        if spec.efa:
            for argument, value in (("security_group_id", security_group_id), ("vpc_id", vpc_id)):
                if value is None:
                    raise ConfigError(
                        f"{path}.{argument}",
                        "is required for an efa pool (its EFA interfaces carry the cluster security group and the "
                        "pool's EFA security group in the cluster's VPC)",
                        None,
                    )
        plans = plan_gpu_groups(spec, cluster_name, zones, f"{path}.pool", tuple(capacity_blocks))

        super().__init__(self.TYPE, name, None, opts)
        self.spec = spec
        deps = depends_on_of(opts)
        sizes = live_sizes if live_sizes is not None else NodeGroupSizes(cluster_name, parent=self)
        pool_tags = {"Name": f"{cluster_name}-{spec.name}", POOL_LABEL: spec.name}
        efa_interfaces = INSTANCE_TYPES[spec.instance_types[0]].efa_interfaces if spec.efa else 0
        self.placement_group = self.efa_security_group = None
        self.efa_security_group_rules = []
        security_group_ids: list[pulumi.Input[str]] = []
        if efa_interfaces and vpc_id is not None and security_group_id is not None:  # both checked above
            self.placement_group, self.efa_security_group, self.efa_security_group_rules = create_efa_network(
                name, vpc_id=vpc_id, tags=pool_tags, parent=self, cluster_name=cluster_name
            )
            security_group_ids = [security_group_id, self.efa_security_group.id]
        efa_template: dict[str, Any] = {
            "efa_interfaces": efa_interfaces,
            "security_group_ids": security_group_ids,
            "placement_group_name": self.placement_group.name if self.placement_group else None,
        }
        self.launch_template = create_launch_template(
            f"{name}-launch-template",
            cluster_name=cluster_name,
            ami_type=spec.ami_type.value,
            disk_size_gb=spec.disk_size_gb,
            tags=pool_tags,
            parent=self,
            **efa_template,
        )
        self.groups = []
        self.node_pools = self.groups  # the name every pool component shares; groups stays
        self.node_groups = {}
        self.asg_tags = {}
        self.reservation_launch_templates = {}
        for plan in plans:
            resource_name = f"{name}-{naming.CAPACITY_TOKEN[plan.capacity]}-{plan.zone}"
            launch_template = self.launch_template
            if plan.reservation_id is not None:
                resource_name = f"{name}-{naming.CAPACITY_TOKEN[plan.capacity]}-{plan.reservation_id}"
                launch_template = self.reservation_launch_templates[plan.name] = create_launch_template(
                    f"{resource_name}-launch-template",
                    cluster_name=cluster_name,
                    ami_type=spec.ami_type.value,
                    disk_size_gb=spec.disk_size_gb,
                    tags={"Name": f"{cluster_name}-{spec.name}-{plan.reservation_id}", POOL_LABEL: spec.name},
                    parent=self,
                    capacity_reservation_id=plan.reservation_id,
                    capacity_block=plan.capacity_block,
                    # A Capacity Block's type is in its template, not on its group (launch_template docstring).
                    instance_type=plan.instance_types[0] if plan.capacity_block else None,
                    # An EFA pool's reserved nodes get the same EFA interfaces, but not the pool's
                    # placement group: a launch into a reservation lands where the reservation is (a
                    # Capacity Block is co-located already; an ODCR may be in a placement group of its own).
                    efa_interfaces=efa_interfaces,
                    security_group_ids=security_group_ids,
                )
            node_group = create_managed_node_group(
                resource_name,
                cluster_name=cluster_name,
                node_group_name=plan.name,
                node_role_arn=node_role_arn,
                subnet_ids=[subnet_ids_by_zone[plan.zone]],
                capacity=plan.capacity,
                ami_type=plan.ami_type,
                instance_types=plan.instance_types,
                min_size=plan.min_size,
                max_size=plan.max_size,
                labels=plan.labels,
                taints=plan.taints,
                launch_template=launch_template,
                kubernetes_version=kubernetes_version,
                tags={
                    POOL_LABEL: spec.name,
                    # cluster-autoscaler also reads resource overrides from the node group's own
                    # tags (eks:DescribeNodegroup), and they win over the ASG's (kubernetes/autoscaler
                    # cloudprovider/aws/aws_manager.go, buildNodeFromTemplate), so the GPU count is
                    # there as well as on the ASG: GPUs x slots per GPU, what one node advertises.
                    **({f"{CA_TAG_PREFIX}/resources/{GPU_RESOURCE}": str(plan.gpu_slots_per_node)} if spec.is_gpu else {}),
                    **({f"{CA_TAG_PREFIX}/resources/{EFA_RESOURCE}": str(plan.efa_interfaces)} if plan.efa_interfaces else {}),
                },
                parent=self,
                live_desired_size=sizes.desired(plan.name),
                depends_on=deps,
                eks_capacity_type=plan.eks_capacity_type,
                instance_types_in_template=plan.capacity_block,
                # A reservation has no room for EKS's surge: roll its group only at zero (ROLL_AT_ZERO_PATHS).
                roll_only_at_zero=plan.reservation_id is not None,
                node_repair=spec.is_gpu if node_repair is None else node_repair,
            )
            self.node_groups[plan.name] = node_group
            self.asg_tags[plan.name] = create_asg_tags(
                resource_name,
                autoscaling_group_name(node_group, resource_name),
                group_template_tags(plan, spec.disk_size_gb),
                parent=self,
            )
            self.groups.append(plan.info(spec))

        self.register_outputs({"nodeGroupNames": [g.name for g in self.groups]})


class CpuNodeGroup(GpuNodeGroup):
    """One ``cpuPools`` entry on an existing EKS cluster: per zone a Spot managed node group and its
    on-demand fallback, with a standard AMI (``AL2023_x86_64_STANDARD`` by default;
    ``AL2023_ARM_64_STANDARD`` or ``BOTTLEROCKET_ARM_64`` with Graviton types).

    Type token ``gpupools:index:CpuNodeGroup``. The same component as ``GpuNodeGroup`` (same
    arguments, sizes, live desired sizes, launch template and scale-from-zero tags for labels and
    taints), minus the GPU parts: role label ``gpupools.io/role=cpu``, no GPU taint, no accelerator
    label, no ``nvidia.com/gpu`` resource tag.
    """

    TYPE = "gpupools:index:CpuNodeGroup"
    ROLE = Role.CPU
