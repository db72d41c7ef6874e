"""The gpupools policies as ``pulumi_policy`` objects: adapters around the plain rules.

Importing this module has no side effects (it builds policy objects, it does not start a server):
the pack's entry point ``policy/__main__.py`` is the only place that constructs ``PolicyPack``,
whose constructor starts a gRPC server and blocks forever.

Each adapter turns the SDK's arguments into plain data for ``gpupools_policy.rules``: the
properties (read through the SDK's unknown-checking proxies) become dicts and lists with unknown
values replaced by ``shapes.UNKNOWN``, ``args.opts.ignore_changes`` becomes the rule's
``ignore_changes``, ``args.urn`` its ``urn``, ``args.get_config()`` its config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from gpupools_policy import rules
from gpupools_policy.shapes import UNKNOWN

PACK_NAME = "gpupools"
"""The policy pack's name (``pulumi preview`` prints it with each violation)."""

PACK_VERSION = "0.1.0"
"""The pack's version; the CLI reads it from ``PulumiPolicy.yaml``, which must say the same."""

PACK_ENFORCEMENT = EnforcementLevel.MANDATORY
"""The pack default; every policy also sets its own level explicitly."""


def plain(value: Any) -> Any:
    """Deep-copy SDK property proxies into dicts and lists, unknown values as ``UNKNOWN``."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in value:
            try:
                out[key] = plain(value[key])
            except UnknownValueError:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items: list[Any] = []
        for index in range(len(value)):
            try:
                items.append(plain(value[index]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value


def resource_validator(*checks: rules.ResourceCheck) -> Any:
    """A ``ResourceValidation`` that runs the plain ``checks`` and reports each message."""

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        props = plain(args.props)
        ignore_changes = [str(p) for p in (args.opts.ignore_changes if args.opts is not None else [])]
        config = dict(args.get_config() or {})
        for check in checks:
            for message in check(
                args.resource_type, props, name=args.name, urn=args.urn, ignore_changes=ignore_changes, config=config
            ):
                report_violation(message, None)

    validate.__name__ = "_".join(check.__name__ for check in checks)
    return validate


def stack_resources(args: StackValidationArgs) -> list[rules.Resource]:
    """The stack's resources as plain ``rules.Resource`` values."""
    return [
        rules.Resource(
            type=r.resource_type,
            name=r.name,
            props=plain(r.props),
            urn=r.urn,
            ignore_changes=tuple(str(p) for p in (r.opts.ignore_changes if r.opts is not None else [])),
        )
        for r in args.resources
    ]


def stack_validator(check: Any) -> Any:
    """A ``StackValidation`` that runs the plain stack ``check`` and reports each (message, urn)."""

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        for message, urn in check(stack_resources(args), config=dict(args.get_config() or {})):
            report_violation(message, urn)

    validate.__name__ = check.__name__
    return validate


gpu_pool_taint = ResourceValidationPolicy(
    name="gpu-pool-taint",
    description="GPU node pools (AKS agent pools with a GPU VM size, EKS node groups with an NVIDIA AMI or GPU "
    "instance type) carry the nvidia.com/gpu NoSchedule taint.",
    validate=resource_validator(rules.check_gpu_taint),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps="Add nvidia.com/gpu=present:NoSchedule to the pool's nodeTaints (AKS) or taints (EKS).",
)

gpu_spot_scale_to_zero = ResourceValidationPolicy(
    name="gpu-spot-scale-to-zero",
    description="GPU Spot pools are autoscaled with a minimum of 0 (AKS minCount, EKS scalingConfig.minSize).",
    validate=resource_validator(rules.check_spot_scale_to_zero),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
)

cpu_spot_scale_to_zero = ResourceValidationPolicy(
    name="cpu-spot-scale-to-zero",
    description="CPU Spot pools (cpuPools) are autoscaled with a minimum of 0; advisory, a warm floor is a choice.",
    validate=resource_validator(rules.check_cpu_spot_scale_to_zero),
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
)

autoscaled_count_ignored = ResourceValidationPolicy(
    name="autoscaled-count-ignored",
    description="Autoscaled pools ignore the autoscaler-owned count (AKS count, EKS scalingConfig.desiredSize), "
    "so a later `pulumi up` never resets capacity.",
    validate=resource_validator(rules.check_autoscaled_count_ignored),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)

launch_template_imdsv2_encrypted = ResourceValidationPolicy(
    name="launch-template-imdsv2-encrypted",
    description="EC2 launch templates (EKS node groups') require IMDSv2 and encrypt every EBS volume.",
    validate=[
        resource_validator(rules.check_launch_template_imdsv2),
        resource_validator(rules.check_launch_template_encryption),
    ],
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)

no_public_node_ips = ResourceValidationPolicy(
    name="no-public-node-ips",
    description="Nodes get no public IPs (AKS enableNodePublicIP, launch template associatePublicIpAddress).",
    validate=resource_validator(rules.check_no_public_node_ips),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)

device_plugin_tolerates_gpu_pools = StackValidationPolicy(
    name="device-plugin-tolerates-gpu-pools",
    description="An NVIDIA device plugin DaemonSet tolerates every taint of every GPU pool (the AKS Spot taint included).",
    validate=stack_validator(rules.check_device_plugin_tolerations),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(
        properties={
            "devicePluginOutsideStack": {
                "type": "boolean",
                "description": "The device plugin is installed outside this program (GPU Operator, Helm release): "
                "do not require a DaemonSet in the stack.",
            }
        }
    ),
)

gpu_on_demand_has_spot_sibling = StackValidationPolicy(
    name="gpu-on-demand-has-spot-sibling",
    description="Every on-demand GPU pool has a Spot GPU pool of the same shape or pool label in its cluster.",
    validate=stack_validator(rules.check_spot_sibling),
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
)

gpu_pool_upper_bound = ResourceValidationPolicy(
    name="gpu-pool-upper-bound",
    description="Autoscaled GPU pools have a maximum node count no larger than maxNodesPerPool (default 50).",
    validate=resource_validator(rules.check_upper_bound),
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    config_schema=PolicyConfigSchema(
        properties={
            "maxNodesPerPool": {
                "type": "integer",
                "minimum": 1,
                "description": f"Largest acceptable autoscaler maximum of one GPU pool (default {rules.DEFAULT_MAX_NODES_PER_POOL}).",
            }
        }
    ),
)

karpenter_gpu_nodepool = ResourceValidationPolicy(
    name="karpenter-gpu-nodepool",
    description="Karpenter GPU NodePools (GPU instance types, GPU requirements or the nvidia.com/gpu.present label) carry "
    "the nvidia.com/gpu NoSchedule taint and an nvidia.com/gpu limit.",
    validate=resource_validator(rules.check_karpenter_gpu_nodepool),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps="Add {key: nvidia.com/gpu, value: present, effect: NoSchedule} to spec.template.spec.taints and "
    "spec.limits['nvidia.com/gpu'].",
)

POLICIES: list[Policy] = [
    gpu_pool_taint,
    gpu_spot_scale_to_zero,
    cpu_spot_scale_to_zero,
    autoscaled_count_ignored,
    launch_template_imdsv2_encrypted,
    no_public_node_ips,
    device_plugin_tolerates_gpu_pools,
    gpu_on_demand_has_spot_sibling,
    gpu_pool_upper_bound,
    karpenter_gpu_nodepool,
]
"""Every policy of the pack, in the order ``PolicyPack`` gets them."""
