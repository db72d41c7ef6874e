"""The gpupools policy rules, as plain functions: unit-test them by calling them directly.

Resource rules take ``(resource_type, props, *, name, urn, ignore_changes, config)`` and return the
violation messages (an empty list when the resource complies or the rule does not apply). Stack
rules take every resource of the stack (:class:`Resource`) and return ``(message, urn)`` pairs.
``props`` are the engine's camelCase properties (``{"vmSize": ..., "nodeTaints": [...]}``), with
values unknown during preview replaced by ``shapes.UNKNOWN``; an unknown value never produces a
violation (the engine runs the rules again during ``pulumi up``, with the values known).

``gpupools_policy.pack`` wraps these in ``pulumi_policy`` policies; nothing here imports it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupools.conventions import GPU_PRESENT_LABEL, GPU_RESOURCE, GPU_TAINT

from gpupools_policy import paths
from gpupools_policy.shapes import (
    BLOCKING_EFFECTS,
    LAUNCH_TEMPLATE,
    UNKNOWN,
    Pool,
    as_number,
    gpu_pools,
    is_device_plugin,
    is_gpu_instance_type,
    is_gpu_taint,
    is_gpu_vm_size,
    is_true,
    is_unknown,
    mapping,
    nodepool_pool,
    parse_eks_taint,
    pod_template_spec,
    pools,
    sequence,
    tolerates,
    tolerations,
)

ResourceCheck = Callable[..., list[str]]
"""``(resource_type, props, *, name="", urn="", ignore_changes=(), config=None) -> [message, ...]``."""


@dataclass(frozen=True)
class Resource:
    """One resource of a stack, as a stack rule sees it."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""
    ignore_changes: tuple[str, ...] = field(default=())


Violation = tuple[str, str | None]
"""A stack rule's finding: the message and the URN of the resource to attach it to (None: the stack)."""

DEFAULT_MAX_NODES_PER_POOL = 50
"""The advisory upper bound on a GPU pool's autoscaler maximum (config ``maxNodesPerPool``)."""


def _eks_taint_literal() -> str:
    return f"{{key: {GPU_TAINT.key}, value: {GPU_TAINT.value}, effect: {GPU_TAINT.effect.eks}}}"


def _gpu_evidence(pool: Pool) -> str:
    if pool.cloud == "aks":
        return f"vmSize {pool.raw.get('vmSize')}"
    ami = pool.raw.get("amiType")
    types = list(sequence(pool.raw.get("instanceTypes")))
    parts = ([f"amiType {ami}"] if isinstance(ami, str) else []) + ([f"instanceTypes {types}"] if types else [])
    return ", ".join(parts)


def _show(value: Any) -> str:
    """A value for a message: whole numbers without a fraction (the engine sends every number as a
    float, a program's own inputs are ints; both read the same)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _taint_list(pool: Pool) -> list[str]:
    return [str(t) for t in pool.declared_taints]


# --- 1. gpu-pool-taint (mandatory) ---------------------------------------------------------------


def check_gpu_taint(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Every GPU pool carries the GPU taint (key ``nvidia.com/gpu``, effect NoSchedule or NoExecute).

    A GPU pool without it accepts any pod: CPU pods fill the expensive nodes and keep them from
    scaling down. GPU pools: AKS pools whose ``vmSize`` is a GPU size (catalog or N family), EKS
    node groups with an NVIDIA AMI type or a GPU instance type.
    """
    messages = []
    for pool in gpu_pools(resource_type, props, name):
        if not pool.taints_known or any(is_gpu_taint(t) for t in pool.declared_taints):
            continue
        if pool.cloud == "aks":
            where, add = f"{pool.field_prefix}nodeTaints", f"'{GPU_TAINT}'"
        else:
            where, add = "taints", _eks_taint_literal()
        messages.append(
            f"{pool.describe()} is a GPU pool ({_gpu_evidence(pool)}) without the GPU taint: {where} has no "
            f"'{GPU_TAINT.key}' taint with effect NoSchedule or NoExecute, got {_taint_list(pool)}. Add {add} so "
            "pods that request no GPU cannot land on (and keep alive) GPU nodes."
        )
    return messages


# --- 2. gpu-spot-scale-to-zero (mandatory) -------------------------------------------------------


def check_spot_scale_to_zero(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """GPU Spot pools can scale to zero: autoscaled with a minimum of 0.

    A Spot GPU pool with a floor above zero pays for idle GPUs around the clock, and cannot be
    created at all while the region has no Spot capacity.
    """
    return _spot_floor_messages(gpu_pools(resource_type, props, name), "GPU")


def check_cpu_spot_scale_to_zero(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """CPU Spot pools (``cpuPools``) can scale to zero too. Advisory, unlike the GPU rule: a small
    warm floor for pipeline controllers is a legitimate choice, but it is paid around the clock and
    a Spot shortage at create time fails the deployment."""
    cpu = [pool for pool in pools(resource_type, props, name) if pool.gpu is False]
    return _spot_floor_messages(cpu, "CPU")


def _spot_floor_messages(candidates: Sequence[Pool], kind: str) -> list[str]:
    messages = []
    for pool in candidates:
        if not pool.spot:
            continue
        prefix = pool.field_prefix
        if pool.cloud == "aks":
            if pool.autoscaled is False:
                messages.append(
                    f"{pool.describe()} is a Spot {kind} pool without autoscaling: {prefix}enableAutoScaling must be "
                    f"true with {prefix}minCount 0, got {pool.raw.get('enableAutoScaling')!r}; a fixed-size Spot "
                    "pool can neither scale to zero when idle nor replace evicted nodes on demand."
                )
                continue
            field_name, value = f"{prefix}minCount", pool.min_size
        else:
            field_name, value = "scalingConfig.minSize", pool.min_size
        if pool.autoscaled is None or is_unknown(value):
            continue
        if as_number(value) != 0:
            messages.append(
                f"{pool.describe()} is a Spot {kind} pool that cannot scale to zero: {field_name} must be 0, got "
                f"{_show(value)}; idle Spot {kind} nodes are billed around the clock, and a Spot shortage at create "
                "time fails the deployment."
            )
    return messages


# --- 3. autoscaled-count-ignored (mandatory) -----------------------------------------------------

LIVE_SIZING_COMPONENTS: tuple[str, ...] = (
    "gpupools:index:EksCluster",
    "gpupools:index:GpuNodeGroup",
    "gpupools:index:CpuNodeGroup",
    "gpupools:index:AksCluster",
    "gpupools:index:GpuNodePool",
    "gpupools:index:CpuNodePool",
)
"""gpupools' own components, which set an existing pool's count from its live size, read at deploy
time, and keep the count in ``ignoreChanges`` only when they could not read it
(``components/gpupools/aws/live_capacity.py``, ``components/gpupools/azure/live_capacity.py``)."""


def sized_from_live(urn: str) -> bool:
    """Whether the resource of ``urn`` is a child of one of ``LIVE_SIZING_COMPONENTS``.

    A URN is ``urn:pulumi:<stack>::<project>::<parent types, '$'-separated>$<type>::<name>``."""
    parts = urn.split("::")
    if len(parts) < 4:
        return False
    return any(t in LIVE_SIZING_COMPONENTS for t in parts[2].split("$")[:-1])


def check_autoscaled_count_ignored(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Every autoscaled pool has its autoscaler-owned count in ``ignoreChanges``.

    AKS ``count`` (of an AgentPool with ``enableAutoScaling``, or ``agentPoolProfiles[i].count``
    of an inline one) and EKS ``scalingConfig.desiredSize`` (of a node group with
    ``minSize < maxSize``) belong to the autoscaler after creation; without the ignore, the next
    ``pulumi up`` resets them and removes nodes under running jobs. Applies to every pool, GPU or
    not. The engine passes ``ignoreChanges`` to policies as ``args.opts.ignore_changes``; a parent
    path (``scalingConfig``) or a wildcard (``agentPoolProfiles[*].count``) counts.

    The one exception: children of gpupools' own components (``sized_from_live``), which send an
    existing pool's live count instead of ignoring it (tested in ``tests/test_capacity_updates.py``).
    """
    if sized_from_live(urn):
        return []
    messages = []
    for pool in pools(resource_type, props, name):
        if pool.autoscaled is not True or paths.any_covers(ignore_changes, pool.count_path):
            continue
        messages.append(
            f"{pool.describe()} is autoscaled but ignoreChanges does not cover '{pool.count_path}', got "
            f"{sorted(ignore_changes)}; the next `pulumi up` would reset the node count the autoscaler chose. "
            f"Add '{pool.count_path}' to the resource's ignore_changes."
        )
    return messages


# --- 4. launch-template-imdsv2-encrypted (mandatory) ---------------------------------------------


def check_launch_template_imdsv2(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """EC2 launch templates (those of EKS node groups included) require IMDSv2.

    ``metadataOptions.httpTokens: required`` (or the metadata endpoint disabled). With IMDSv1
    allowed, anything that can reach the node's metadata endpoint reads the node role's
    credentials with one unauthenticated GET.
    """
    if resource_type != LAUNCH_TEMPLATE:
        return []
    options = props.get("metadataOptions")
    if is_unknown(options):
        return []
    options = mapping(options)
    tokens, endpoint = options.get("httpTokens"), options.get("httpEndpoint")
    if tokens == "required" or endpoint == "disabled" or is_unknown(tokens) or is_unknown(endpoint):
        return []
    return [
        f"launch template '{name}' does not require IMDSv2: metadataOptions.httpTokens must be 'required', got "
        f"{tokens!r}; with IMDSv1 allowed, a pod that reaches the node's metadata endpoint reads the node "
        "role's credentials without a session token."
    ]


def check_launch_template_encryption(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """EC2 launch templates encrypt every EBS volume they declare, and declare the root volume.

    Each ``blockDeviceMappings[i].ebs`` needs ``encrypted: "true"`` (pulumi-aws types it as a
    string). A template with no EBS mapping leaves the root volume's encryption to the AMI's
    snapshot and the account's encryption-by-default setting, so it is a violation too.
    """
    if resource_type != LAUNCH_TEMPLATE:
        return []
    mappings = props.get("blockDeviceMappings")
    if is_unknown(mappings):
        return []
    messages = []
    ebs_seen = False
    for index, item in enumerate(sequence(mappings)):
        ebs = UNKNOWN if is_unknown(item) else mapping(item).get("ebs")
        if ebs is None:
            continue  # an instance-store or no-device mapping
        ebs_seen = True
        if is_unknown(ebs):
            continue
        encrypted = mapping(ebs).get("encrypted")
        if is_unknown(encrypted) or is_true(encrypted):
            continue
        device = mapping(item).get("deviceName")
        messages.append(
            f"launch template '{name}' has an unencrypted volume: blockDeviceMappings[{index}].ebs.encrypted "
            f"({device}) must be 'true', got {encrypted!r}."
        )
    if not ebs_seen:
        messages.append(
            f"launch template '{name}' declares no EBS blockDeviceMappings, so whether the root volume is encrypted "
            "depends on the AMI's snapshot and the account's EBS encryption-by-default setting; declare the root "
            "volume with ebs.encrypted 'true'."
        )
    return messages


# --- 5. no-public-node-ips (mandatory) -----------------------------------------------------------


def check_no_public_node_ips(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Nodes get no public IPs: AKS ``enableNodePublicIP`` is not true (AgentPool or inline
    profile); no network interface of an EC2 launch template sets ``associatePublicIpAddress``."""
    messages = []
    for pool in pools(resource_type, props, name):
        if pool.cloud == "aks" and pool.raw.get("enableNodePublicIP") is True:
            messages.append(
                f"{pool.describe()} gives its nodes public IPs: {pool.field_prefix}enableNodePublicIP must be false "
                "(the default), got True; every node would be reachable from the internet."
            )
    if resource_type == LAUNCH_TEMPLATE:
        for index, interface in enumerate(sequence(props.get("networkInterfaces"))):
            value = mapping(interface).get("associatePublicIpAddress")
            if is_true(value):
                messages.append(
                    f"launch template '{name}' gives its nodes public IPs: networkInterfaces[{index}]."
                    f"associatePublicIpAddress must be false or unset, got {value!r}; use private subnets."
                )
    return messages


# --- 6. device-plugin-tolerates-gpu-pools (mandatory, stack) -------------------------------------


def _gpu_pools_needing_plugin(resources: Sequence[Resource]) -> list[tuple[Resource, Pool]]:
    """GPU agent pools and node groups whose image has no plugin of its own, and GPU Karpenter
    NodePools (their node class, which says Bottlerocket, is another resource: a Bottlerocket GPU
    NodePool is checked too, which only matters if its taints differ from the other pools')."""
    found = [
        (resource, pool)
        for resource in resources
        for pool in gpu_pools(resource.type, resource.props, resource.name)
        if not pool.ships_device_plugin and not pool.own_gpu_stack
    ]
    for resource in resources:
        if KARPENTER_NODEPOOL.match(resource.type) and _nodepool_gpu_evidence(mapping(resource.props.get("spec"))):
            found.append((resource, nodepool_pool(resource.props, resource.name, gpu=True)))
    return found


def _tolerations_known(props: Mapping[str, Any]) -> bool:
    raw = pod_template_spec(props).get("tolerations")
    return not is_unknown(raw) and not any(is_unknown(t) for t in sequence(raw))


def _toleration_text(taint: Any) -> str:
    t = taint.toleration()
    return f"{{key: {t['key']}, operator: Equal, value: {t['value']}, effect: {t['effect']}}}"


def check_device_plugin_tolerations(resources: Sequence[Resource], *, config: Mapping[str, Any] | None = None) -> list[Violation]:
    """The NVIDIA device plugin tolerates every blocking taint of every GPU pool it must serve.

    A GPU pool whose device plugin cannot land never advertises ``nvidia.com/gpu``: GPU pods stay
    Pending and the autoscaler keeps buying nodes. The taints checked are the declared ones plus,
    on AKS Spot pools, ``kubernetes.azure.com/scalesetpriority=spot:NoSchedule`` (AKS adds it
    even when the program does not declare it). Pools on Bottlerocket NVIDIA AMIs are skipped: the
    OS runs its own device plugin; so are AKS pools with ``gpuProfile.driver: None``, whose driver
    and plugin the user brings (the GPU Operator). gpupools' ``gpuDriver: none`` pools on EKS and
    under NAP look like any other GPU pool here (nothing in their inputs says otherwise): their
    taints count, and a stack of only such pools needs ``devicePluginOutsideStack: true``. A pool is served when at least one device-plugin DaemonSet in
    the stack tolerates all its taints. With GPU pools and no device-plugin DaemonSet at all, the
    rule fires unless the policy config sets ``devicePluginOutsideStack: true`` (the plugin comes
    from the GPU Operator or a Helm release, which the pack cannot see).
    """
    config = config or {}
    needing = _gpu_pools_needing_plugin(resources)
    if not needing:
        return []
    plugins = [r for r in resources if is_device_plugin(r.type, r.props)]
    if not plugins:
        if config.get("devicePluginOutsideStack") is True:
            return []
        names = sorted(pool.name for _, pool in needing)
        return [
            (
                f"the stack has GPU pools {names} but no NVIDIA device plugin DaemonSet: their nodes never advertise "
                "nvidia.com/gpu, GPU pods stay Pending and the autoscaler keeps adding nodes. Deploy one "
                "(gpupools.kubernetes), or set this policy's config devicePluginOutsideStack: true if the plugin "
                "is installed outside this program (GPU Operator, Helm release).",
                None,
            )
        ]
    violations: list[Violation] = []
    for _resource, pool in needing:
        if not pool.taints_known:
            continue
        blocking = [t for t in pool.taints if t.effect in BLOCKING_EFFECTS]
        best: tuple[Resource, list[Any]] | None = None
        for plugin in plugins:
            if not _tolerations_known(plugin.props):
                best = (plugin, [])
                break
            missing = [t for t in blocking if not any(tolerates(tol, t) for tol in tolerations(plugin.props))]
            if best is None or len(missing) < len(best[1]):
                best = (plugin, missing)
        if best is None or not best[1]:
            continue
        plugin, missing = best
        plugin_name = mapping(plugin.props.get("metadata")).get("name") or plugin.name
        violations.append(
            (
                f"the NVIDIA device plugin DaemonSet '{plugin_name}' does not tolerate {[str(t) for t in missing]} of "
                f"{pool.describe()}, so it cannot run on that pool's nodes and their GPUs are never advertised. "
                f"Add to spec.template.spec.tolerations: {', '.join(_toleration_text(t) for t in missing)}.",
                plugin.urn or None,
            )
        )
    return violations


# --- 7. gpu-on-demand-has-spot-sibling (advisory, stack) -----------------------------------------


def _same_cluster(a: Pool, b: Pool) -> bool:
    return a.cloud == b.cloud and (a.cluster is UNKNOWN or b.cluster is UNKNOWN or a.cluster == b.cluster)


def _same_shape(a: Pool, b: Pool) -> bool:
    if a.shape is UNKNOWN or b.shape is UNKNOWN:
        return False
    if isinstance(a.shape, frozenset) and isinstance(b.shape, frozenset):
        return bool(a.shape & b.shape)
    return a.shape == b.shape


def _siblings(a: Pool, b: Pool) -> bool:
    same_label = a.pool_label is not None and a.pool_label == b.pool_label
    return _same_cluster(a, b) and (same_label or _same_shape(a, b))


def check_spot_sibling(resources: Sequence[Resource], *, config: Mapping[str, Any] | None = None) -> list[Violation]:
    """Every on-demand GPU pool has a Spot GPU pool beside it: same cluster, and the same
    ``gpupools.io/pool`` label or the same shape (VM size; for EKS a shared instance shape).

    An on-demand GPU pool alone pays the on-demand price for every GPU node; the pattern is a Spot
    pool the autoscaler tries first and the on-demand pool as its fallback. Advisory: some
    workloads (long training runs that cannot checkpoint) deliberately run on-demand only.
    """
    gpu = [(r, p) for r in resources for p in gpu_pools(r.type, r.props, r.name)]
    spot = [p for _, p in gpu if p.spot]
    violations: list[Violation] = []
    for resource, pool in gpu:
        if pool.spot or any(_siblings(pool, other) for other in spot):
            continue
        shape = pool.raw.get("vmSize") if pool.cloud == "aks" else list(sequence(pool.raw.get("instanceTypes")))
        violations.append(
            (
                f"{pool.describe()} is an on-demand GPU pool with no Spot GPU pool of the same shape ({shape}) or "
                f"pool label ({pool.pool_label}) in its cluster, so every GPU node it adds is billed at the on-demand "
                "price. Add a Spot pool of the same shape that the autoscaler tries first, and keep this one as the "
                "fallback.",
                resource.urn or None,
            )
        )
    return violations


# --- 8. gpu-pool-upper-bound (advisory) ----------------------------------------------------------


def max_nodes_per_pool(config: Mapping[str, Any] | None) -> float:
    value = as_number((config or {}).get("maxNodesPerPool"))
    return value if value is not None and value >= 1 else DEFAULT_MAX_NODES_PER_POOL


def check_upper_bound(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Every autoscaled GPU pool has a maximum, at most ``maxNodesPerPool`` (default 50).

    The autoscaler buys nodes up to the maximum for any Pending GPU pod, a runaway job or a
    mistaken replica count included; the maximum is the budget's last line of defence. Advisory:
    the right bound is a budget decision, set it with the policy config.
    """
    limit = max_nodes_per_pool(config)
    messages = []
    for pool in gpu_pools(resource_type, props, name):
        if pool.cloud == "aks" and pool.autoscaled is not True:
            continue
        field_name = f"{pool.field_prefix}maxCount" if pool.cloud == "aks" else "scalingConfig.maxSize"
        value = pool.max_size
        if is_unknown(value):
            continue
        number = as_number(value)
        if number is None:
            messages.append(
                f"{pool.describe()} is an autoscaled GPU pool without an upper bound: {field_name} is not set; "
                f"set it (this pack's advisory bound is {limit:g} nodes, config maxNodesPerPool)."
            )
        elif number > limit:
            messages.append(
                f"{pool.describe()} can grow to {number:g} GPU nodes ({field_name}), above this pack's advisory bound "
                f"of {limit:g} (config maxNodesPerPool); a runaway job could buy that many GPU nodes."
            )
    return messages


# --- karpenter-gpu-nodepool (mandatory) ------------------------------------------------------------

KARPENTER_NODEPOOL = re.compile(r"^kubernetes:karpenter\.sh/v1(?:beta1)?:NodePool$")
GPU_REQUIREMENT_KEYS = (
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.azure.com/sku-gpu-count",
    "karpenter.azure.com/sku-gpu-manufacturer",
    "karpenter.azure.com/sku-gpu-name",
)
"""Requirement keys that make a NodePool a GPU NodePool whatever its instance types say
(aws/karpenter-provider-aws and Azure/karpenter-provider-azure ``concepts/scheduling.md``)."""


def _nodepool_gpu_evidence(spec: Mapping[str, Any]) -> str | None:
    template = mapping(spec.get("template"))
    labels = mapping(mapping(template.get("metadata")).get("labels"))
    if labels.get(GPU_PRESENT_LABEL) == "true":
        return f"label {GPU_PRESENT_LABEL}=true"
    for requirement in sequence(mapping(template.get("spec")).get("requirements")):
        requirement = mapping(requirement)
        key = requirement.get("key")
        if key in GPU_REQUIREMENT_KEYS:
            return f"requirement on {key}"
        if key == "node.kubernetes.io/instance-type":
            gpu_types = [t for t in sequence(requirement.get("values")) if is_gpu_instance_type(t) or is_gpu_vm_size(t)]
            if gpu_types and requirement.get("operator") == "In":
                return f"GPU instance types {gpu_types}"
    return None


def check_karpenter_gpu_nodepool(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> list[str]:
    """A Karpenter GPU NodePool carries the GPU taint and an ``nvidia.com/gpu`` limit.

    Without the taint, Karpenter's nodes accept any pod and CPU pods keep them alive; without a GPU
    limit, a burst of pending GPU pods can buy GPU nodes up to the account's quota (Karpenter
    ``concepts/nodepools.md``: with no ``spec.limits`` "the maximum resource consumption is
    governed by the quotas set by your cloud provider").
    """
    if not KARPENTER_NODEPOOL.match(resource_type):
        return []
    spec = mapping(props.get("spec"))
    if is_unknown(spec):
        return []
    evidence = _nodepool_gpu_evidence(spec)
    if evidence is None:
        return []
    messages = []
    raw_taints = mapping(mapping(spec.get("template")).get("spec")).get("taints")
    if not is_unknown(raw_taints):
        taints = [t for t in (parse_eks_taint(item) for item in sequence(raw_taints)) if t is not None]
        if not any(is_gpu_taint(t) for t in taints):
            messages.append(
                f"NodePool {name} is a GPU NodePool ({evidence}) without the GPU taint: spec.template.spec.taints has no "
                f"'{GPU_TAINT.key}' taint with effect NoSchedule or NoExecute. Add {{key: {GPU_TAINT.key}, value: "
                f"{GPU_TAINT.value}, effect: {GPU_TAINT.effect.value}}} so pods that request no GPU cannot land on GPU nodes."
            )
    limits = spec.get("limits")
    if not is_unknown(limits) and GPU_RESOURCE not in mapping(limits):
        messages.append(
            f"NodePool {name} is a GPU NodePool ({evidence}) without a '{GPU_RESOURCE}' limit in spec.limits: Karpenter "
            "would buy GPU nodes up to the account's quota. Set spec.limits['nvidia.com/gpu'] (gpupools: maxSize x GPUs per node)."
        )
    return messages


RESOURCE_CHECKS: dict[str, list[ResourceCheck]] = {
    "gpu-pool-taint": [check_gpu_taint],
    "gpu-spot-scale-to-zero": [check_spot_scale_to_zero],
    "cpu-spot-scale-to-zero": [check_cpu_spot_scale_to_zero],
    "autoscaled-count-ignored": [check_autoscaled_count_ignored],
    "launch-template-imdsv2-encrypted": [check_launch_template_imdsv2, check_launch_template_encryption],
    "no-public-node-ips": [check_no_public_node_ips],
    "gpu-pool-upper-bound": [check_upper_bound],
    "karpenter-gpu-nodepool": [check_karpenter_gpu_nodepool],
}
"""Resource rules by policy name."""

STACK_CHECKS: dict[str, Callable[..., list[Violation]]] = {
    "device-plugin-tolerates-gpu-pools": check_device_plugin_tolerations,
    "gpu-on-demand-has-spot-sibling": check_spot_sibling,
}
"""Stack rules by policy name."""


def check_resource(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "",
    urn: str = "",
    ignore_changes: Sequence[str] = (),
    config: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, list[str]]:
    """Run every resource rule on one resource: ``{policy name: [message, ...]}`` for the rules that fired.

    ``config`` maps policy names to their config (as ``--policy-pack-config`` would).
    """
    found: dict[str, list[str]] = {}
    for policy, checks in RESOURCE_CHECKS.items():
        messages = [
            m
            for check in checks
            for m in check(
                resource_type,
                props,
                name=name,
                urn=urn,
                ignore_changes=ignore_changes,
                config=(config or {}).get(policy) or {},
            )
        ]
        if messages:
            found[policy] = messages
    return found


def check_stack(
    resources: Sequence[Resource], *, config: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, list[Violation]]:
    """Run every rule (resource rules on each resource, then the stack rules) over a whole stack:
    ``{policy name: [(message, urn), ...]}`` for the rules that fired."""
    found: dict[str, list[Violation]] = {}
    for resource in resources:
        per_resource = check_resource(
            resource.type,
            resource.props,
            name=resource.name,
            urn=resource.urn,
            ignore_changes=resource.ignore_changes,
            config=config,
        )
        for policy, messages in per_resource.items():
            found.setdefault(policy, []).extend((m, resource.urn or None) for m in messages)
    for policy, stack_check in STACK_CHECKS.items():
        violations = stack_check(resources, config=(config or {}).get(policy) or {})
        if violations:
            found.setdefault(policy, []).extend(violations)
    return found
