"""The one declaration of the stack config's keys: every ``gpupools:*`` key, its shape and where it applies.

Each ``Key`` says a key's name, its kind of value (``string``, ``integer``, ``number``, ``boolean``,
``strings`` (a list of strings), ``labels`` (a mapping of strings to strings), ``nodes`` (a node
count or a percentage, ``"33%"``), ``section`` (a mapping of keys) or ``list`` (a list of
sections)), whether it is required, its allowed values, its constant bounds, its default where one
default holds on every cloud, the clouds it applies to and whether it is for GPU pools only.

From this table come:

* the parsing of every value (``gpupools.config.read_keys``): each key is read by its kind, with
  the kind's message for a wrong type (or the key's ``type_error``), ``is required`` (or its
  ``required_error``), its choices with the nearest one as a hint, and its default, into the spec
  field named after it (``maxSize`` -> ``max_size``);
* the key lists ``gpupools.config`` checks every mapping against (unknown keys, with the "did you
  mean"), and its cloud-only and GPU-only refusals (``keys_of``, ``cloud_only``, ``gpu_only``);
* the JSON Schema of a stack file (``gpupools.config_schema``; ``python -m gpupools.config schema``);
* the reference table in ``docs/configuration.md``: each key's ``doc`` (a ``gpupools.config_doc.Doc``:
  its type, default and notes, fixed or computed from the parsed defaults and the rules' constants)
  is its row, rendered by ``gpupools.config_reference``, which fails on a key without one; the notes
  are also the key's description in the JSON Schema;
* the key sets of the component package's input types (``gpupools.xlang.args``; a test compares them).

Rules that need more than one key or a catalog (a size in a region, zones, quotas, ``maxSize >=
minSize``) stay in ``gpupools.rules``; ``Key.rules`` names them, so every rule of a key can be
found from the key. Adding a key is one ``Key`` here, with its ``doc``, plus the code that uses it:
the spec field it fills (named after the key) and what reads that field; no parser line (a default
that depends on the stack, or a check between keys, is its section's ``parse_*`` in
``gpupools.config``). The key lists, the reference row, the schema and the checks follow.

Why a table of our own and not pydantic or msgspec: the errors must keep their exact form
(``gpupools:gpuPools[1].maxSize: must be >= minSize (2), got 1``, the unknown key refused first with
its nearest known key, defaults that depend on the cloud, the region and the pool's role). pydantic
v2 reports a cross-key check at the model (``gpuPools[1]``, not ``.maxSize``) with a ``Value error,``
prefix and without the value, reports a missing key before an unknown one, wraps our
``ConfigError`` (a ``ValueError``) into its own, and costs about as much to import as all of
``gpupools.config``; msgspec imports fast but stops at the first error with its own wording, has no
"did you mean" and would be a new dependency. Keeping the messages would mean translating every
error type back, which is the parser we have.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Literal

from gpupools import conventions, rules, sharing, versions
from gpupools.catalog import regions
from gpupools.catalog.azure_vm_sizes import MIG_INSTANCES_PER_GPU
from gpupools.config_doc import Doc, ParsedDefaults, choices, code
from gpupools.conventions import TaintEffect
from gpupools.specs import AKS_SKUS, AmiType, Cloud, GpuDriver, Provisioner, WeekDay

Kind = Literal["string", "integer", "number", "boolean", "strings", "labels", "nodes", "section", "list"]

NO_DEFAULT: Any = object()
"""``Key.default`` when the default depends on the cloud, the region or the pool (or there is none)."""

AZURE = (Cloud.AZURE,)
AWS = (Cloud.AWS,)
BOTH = (Cloud.AZURE, Cloud.AWS)

EVICTION_RATE_TYPE = "a number from 0 to 1 (share of Spot runs interrupted)"
"""What ``gpupools:cost.evictionRate`` and ``gpuPools[].evictionRate`` take (ranges in ``rules.check_cost``)."""
EVICTION_RATE_RULE = f"must be {EVICTION_RATE_TYPE}"
REDONE_SHARE_RULE = "must be a number from 0 to 1 (share of an interrupted run redone)"
POOLS_RULE = "must be a list of pools"
NO_GPU_POOL = "is required: list at least one GPU pool"

UPGRADE_NODES_PATTERN = r"^(\d+)(%?)$"

RELEASES_UPGRADED_FROM = ("0.2.0",)
"""Releases a stack may name in ``gpupools:upgrade.fromVersion``: those whose first ``up`` under
this release needs something kept (see the key's notes)."""
"""``upgrade.maxSurge`` / ``maxUnavailable`` as text: digits, optionally a percent sign (``specs.UPGRADE_VALUE``)."""


@dataclass(frozen=True)
class Key:
    """One config key.

    Attributes:
        name: the key as written in the stack file (``maxSize``).
        kind: the kind of value (see the module docstring).
        required: the program refuses the stack without it (default: optional).
        choices: the allowed values of a ``string`` (or of each item of ``strings``).
        minimum, maximum: constant bounds of a number; bounds that depend on the cloud or on
            another key are rules (``rules``).
        default: the value when left out, where it is the same on every cloud (else ``NO_DEFAULT``).
        clouds: the clouds the key applies to; on another cloud it is an error naming the key.
        gpu_only: a pool key that only means something on a GPU pool (an error in ``cpuPools``).
        keys: the keys of a ``section``, or of each entry of a ``list``.
        rules: the ``gpupools.rules`` (or other) checks that read this key beyond its shape.
        doc: the key's row of the reference table and its description in the JSON Schema
            (``gpupools.config_doc.Doc``: notes, type and default text, each fixed or computed from
            the parsed defaults and the rules' constants). Every key needs one except a section or
            list whose keys all have one (``cluster``) and a key inside a key whose doc covers
            its keys (``Doc.includes_keys``, ``Doc.rows``); ``gpupools.config_reference`` fails
            naming a key without one.
        type_error: the rule a value of the wrong type breaks, where it says more than its kind's
            (``gpupools.config.KIND_RULES``: ``must be an integer``...), e.g. ``must be a list of
            {id, zone}``; empty: the kind's.
        required_error: the rule a required key left out breaks, where it says more than ``is
            required`` (``is required (at least a name)``); empty: ``is required``.
    """

    name: str
    kind: Kind
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    default: Any = NO_DEFAULT
    clouds: tuple[Cloud, ...] = BOTH
    gpu_only: bool = False
    keys: tuple[Key, ...] = ()
    rules: tuple[str, ...] = ()
    doc: Doc | None = None
    type_error: str = ""
    required_error: str = ""

    def key(self, name: str) -> Key:
        """The sub-key ``name`` of a section or list."""
        for key in self.keys:
            if key.name == name:
                return key
        raise KeyError(name)


def _values(enum: Any) -> tuple[str, ...]:
    return tuple(member.value for member in enum)


# --- computed parts of the keys' docs ------------------------------------------------------------
# Each reads the constant the rules check against when the table is built (a callable, not a value
# taken at import), so a changed rule changes the page (tests/test_config_reference.py). Only enums'
# members (clouds, provisioners, taint effects, drivers, weekdays) are read at import.


def _declared(path: str) -> Key:
    """The key at a dotted path (``cluster.supportType``), read when a doc is rendered."""
    section_path, _, name = path.rpartition(".")
    return section(section_path).key(name)


def _shape(keys: tuple[Key, ...]) -> str:
    """``{nodes, schedule: {days, start, end, timeZone}}``: the keys of a section, nested."""
    return "{" + ", ".join(f"{k.name}: {_shape(k.keys)}" if k.kind == "section" else k.name for k in keys) + "}"


def _supported_minors() -> str:
    parts = []
    checked = set()
    for cloud, service in (("azure", "AKS"), ("aws", "EKS")):
        table = versions.VERSION_TABLES[cloud]
        parts.append(f"{service} " + ", ".join(table.supported(table.checked)))
        checked.add(table.checked.isoformat())
    return "; ".join(parts) + " per tables checked " + ", ".join(sorted(checked))


def _reserved_prefixes() -> str:
    return ", ".join(f"`{p.rstrip('/')}`" for p in conventions.RESERVED_LABEL_PREFIXES)


def _mig_profiles() -> str:
    return ", ".join(f"`{profile}` ({count})" for profile, count in MIG_INSTANCES_PER_GPU.items())


def _ami_types(gpu: bool) -> list[AmiType]:
    return [a for a in AmiType if a.is_gpu is gpu]


def _disk_bounds(_: ParsedDefaults) -> str:
    return "; ".join(
        f"{cloud.value.capitalize() if cloud is Cloud.AZURE else 'AWS'} {low}-{high} GiB"
        for cloud, (low, high) in rules.DISK_GB_RANGE.items()
    )


def _cidr_notes(_: ParsedDefaults) -> str:
    low, high = rules.CIDR_PREFIX_RANGE
    reserved = rules.RESERVED_CIDRS
    shared = [str(n) for n in reserved[Cloud.AWS]]
    azure_only = [str(n) for n in reserved[Cloud.AZURE] if str(n) not in shared]
    return f"a created network; RFC 1918, /{low}-/{high}, not overlapping {', '.join(shared)} (services)" + (
        f" or, on Azure, {', '.join(azure_only)} (pods)" if azure_only else ""
    )


def _dataplane_default(d: ParsedDefaults) -> str:
    aks = "unset (AKS's default, `azure`)" if d.azure.network.dataplane is None else code(d.azure.network.dataplane)
    return f"{code(d.nap.network.dataplane)} under NAP, else {aks}"


def _provisioner_notes(_: ParsedDefaults) -> str:
    return (
        "who buys the pools' nodes: on EKS `karpenter` installs Karpenter ([Karpenter on EKS](karpenter-nap.md#karpenter-on-eks)), "
        "on AKS it is Node Auto Provisioning ([NAP on AKS](karpenter-nap.md#node-auto-provisioning-on-aks)); under it "
        + ", ".join(f"`…{k}`" for k in KARPENTER_MEANINGLESS_POOL_KEYS)
        + " (other than their defaults) and "
        + ", ".join(f"`autoscaler.{k}`" for k in KARPENTER_MEANINGLESS_AUTOSCALER_KEYS)
        + " are errors that say why, and the per-zone node group rules do not apply; on AKS also "
        + ", ".join(f"`…{k}`" for k in NAP_MEANINGLESS_POOL_KEYS)
        + " (other than -1), `…sharing` (MIG, time-slicing, MPS: [Shared GPUs under Karpenter](karpenter-nap.md#shared-gpus-under-karpenter)) "
        "and a `systemPool.maxSize` other than `minSize`"
    )


def _autoscaler_limit() -> str:
    return f"1m to {rules.AUTOSCALER_MINUTES_MAX}m"


def _none_or_code(value: Any) -> str:
    return "none" if value is None else code(value)


def _spot_share(d: ParsedDefaults) -> str:
    share = float(d.azure.cost.spot_share)
    return code(share) if not share.is_integer() else f"`{d.azure.cost.spot_share:.1f}`"


KARPENTER_MEANINGLESS_POOL_KEYS = {
    "onDemandMaxSize": "one NodePool serves Spot and on-demand together, and its limits (from maxSize) cap both; "
    "leave it out, or use cluster-autoscaler for a separate on-demand cap",
    "minSize": "Karpenter keeps no minimum: it buys nodes for pending pods and removes empty ones; "
    "leave it out (or 0), or run a placeholder Deployment to keep nodes warm",
}
"""Pool keys that cannot mean anything under ``provisioner: karpenter``, with why (set to a
non-default value, they are an error naming the key: ``gpupools.config.check_provisioner_keys``)."""

NAP_MEANINGLESS_POOL_KEYS = {
    "upgrade": "NAP nodes are not in agent pools; Karpenter replaces them by drift inside gpupools:maintenance's window, "
    "one node per NodePool at a time (docs/karpenter-nap.md); leave it out",
    "spotMaxPrice": "Node Auto Provisioning buys Spot VMs with a max price of -1 (up to the on-demand price; "
    "Azure/karpenter-provider-azure pkg/providers/instance/vminstance.go, setVMPropertiesBillingProfile); leave it out",
}
"""Pool keys without a meaning under AKS Node Auto Provisioning only."""

KARPENTER_MEANINGLESS_AUTOSCALER_KEYS = {
    "maxNodeProvisionTime": "Karpenter has no provision timeout to tune: a Spot capacity error marks the offering "
    "unavailable and it launches the next one (on-demand) at once; leave it out",
}
"""``gpupools:autoscaler`` keys without a Karpenter meaning. ``scaleDownUnneededTime`` keeps one: it
becomes each NodePool's ``disruption.consolidateAfter``."""

LARGE_GPU_PROVISION_TIME = "15m"
"""``gpupools:autoscaler.maxNodeProvisionTime`` default on EKS when a GPU pool has a large GPU type
(``is_large_gpu_type``): cluster-autoscaler's own default (``--max-node-provision-time``, 15m,
kubernetes/autoscaler ``cluster-autoscaler/FAQ.md``). The timeout only covers an instance that
launched and has not registered yet (a failed Spot launch is seen from the group's scaling
activities within a loop or two, whatever the timeout: ``cloudprovider/aws/auto_scaling_groups.go``),
and an 8-GPU NVSwitch node with EFA spends longer there than a 1-GPU node: EC2 boot of a metal-sized
instance ("GPU instance types often take much longer to boot within EC2", awslabs/amazon-eks-ami
issue 1099, where a c5.xlarge registers in about 40 s), the NVIDIA driver and Fabric Manager start
(required before any GPU of an NVSwitch system is usable: NVIDIA Fabric Manager user guide), the EFA
driver, then the device plugins. Giving up at 10m on a node that registers at 11m buys a second
p5.48xlarge; waiting 5 more minutes on a truly broken one costs only time."""


# --- the keys -------------------------------------------------------------------------------------

WARM = (
    Key("nodes", "integer", required=True, minimum=1, rules=("warm.check_warm",)),
    Key(
        "schedule",
        "section",
        keys=(
            Key("days", "strings", choices=_values(WeekDay), type_error="must be a list of week days (Monday ... Sunday)"),
            Key("start", "string", required=True, rules=("warm.check_warm",)),
            Key("end", "string", required=True, rules=("warm.check_warm",)),
            Key("timeZone", "string", default="UTC", rules=("warm.check_warm",)),
        ),
    ),
)
"""``gpuPools[].warm`` (``gpupools.warm``): spare nodes, and the hours they are kept."""

TAINT = (
    Key("key", "string", required=True, rules=("rules.check_taints",)),
    Key("value", "string", required=True),
    Key("effect", "string", required=True, choices=_values(TaintEffect)),
)

RESERVATION = (
    Key("id", "string", required=True, rules=("rules.check_reservations",)),
    Key("zone", "string"),
    Key("kind", "string", choices=("odcr", "capacityBlock"), default="odcr", rules=("rules.check_reservations",)),
    Key("count", "integer", minimum=1, type_error=rules.RESERVATION_COUNT_RULE),
)
"""``reservations[].kind``: ``capacityBlock`` is AWS only (``rules.check_reservations`` refuses it on Azure)."""

USER_SIZE = (
    Key("name", "string", required=True),
    Key("vcpus", "integer", required=True, minimum=1),
    Key("memoryGib", "number", required=True, minimum=1),
    Key("gpus", "integer", default=0, minimum=0),
    Key("gpuModel", "string", default=""),
    Key("architecture", "string", choices=("x86_64", "arm64"), default="x86_64"),
    Key("efaInterfaces", "integer", default=0, minimum=0, clouds=AWS),
)
"""``catalog.instanceTypes[]``: a size the offline catalog lacks, with the facts gpupools needs of it
(``gpupools.catalog.user_sizes``)."""

SHARING = (
    Key(
        "timeSlicing",
        "section",
        keys=(
            Key(
                "replicas",
                "integer",
                required=True,
                rules=("rules.check_sharing",),
                doc=Doc(
                    key_tail="` / `…sharing.mps.replicas",
                    notes=lambda d: (
                        f"pods per GPU, {sharing.MIN_REPLICAS}-{sharing.MAX_REPLICAS}; every GPU of the pool's "
                        "nodes is advertised N times as `nvidia.com/gpu`"
                    ),
                ),
            ),
        ),
    ),
    Key(
        "mps",
        "section",
        keys=(
            Key(
                "replicas",
                "integer",
                required=True,
                rules=("rules.check_sharing",),
                doc=Doc(on="gpuPools.sharing.timeSlicing.replicas"),
            ),
        ),
    ),
    Key(
        "mig",
        "section",
        keys=(
            Key(
                "profile",
                "string",
                required=True,
                rules=("rules.check_sharing",),
                doc=Doc(
                    notes=lambda d: (
                        f"AKS `gpuInstanceProfile` (instances per GPU): {_mig_profiles()}; A100, H100 and H200 "
                        "sizes only; create-only (a new profile is a new pool)"
                    )
                ),
            ),
        ),
    ),
)

UPGRADE = (
    Key("maxSurge", "nodes", default="0", rules=("rules.check_upgrade",)),
    Key("maxUnavailable", "nodes", default="1", rules=("rules.check_upgrade",)),
    Key("drainTimeoutMinutes", "integer", default=60, rules=("rules.check_upgrade",)),
)

POOL = (
    Key(
        "name",
        "string",
        required=True,
        rules=("rules.check_gpu_pool",),
        doc=Doc(
            notes=lambda d: (
                f"a lowercase letter then letters/digits; Azure at most {rules.AKS_GPU_POOL_NAME_MAX} (a role "
                f"letter and a 4-character digest are appended within AKS's {rules.AKS_POOL_NAME_MAX}), AWS at most "
                f"{rules.EKS_GPU_POOL_NAME_MAX}; not `{rules.RESERVED_POOL_NAME}` (the system pool's)"
            )
        ),
    ),
    Key(
        "instanceTypes",
        "strings",
        required=True,
        rules=("rules.check_gpu_pool",),
        doc=Doc(
            notes=lambda d: (
                f"Azure exactly one GPU size; AWS at most {rules.EKS_MAX_INSTANCE_TYPES} types: under "
                "cluster-autoscaler of one shape (same vCPU, memory, GPUs: its scale-from-zero template is the first "
                "type's), under `karpenter` of one GPU count and architecture, sizes may differ (`[g6.xlarge, g6.2xlarge]`)"
            )
        ),
    ),
    Key(
        "maxSize",
        "integer",
        required=True,
        minimum=1,
        rules=("rules.check_gpu_pool",),
        doc=Doc(
            notes=lambda d: (
                "total across the pool's zones (EKS splits it over per-zone groups, remainder to the first "
                f"zones); at most {rules.AKS_MAX_NODES_PER_POOL} on AKS, {rules.EKS_MAX_NODES_PER_GROUP} per zone on EKS, "
                f"{rules.KARPENTER_MAX_NODES_PER_POOL} under Karpenter; on EKS at least one per zone"
            )
        ),
    ),
    Key(
        "minSize",
        "integer",
        default=0,
        minimum=0,
        rules=("rules.check_gpu_pool",),
        doc=Doc(default=lambda d: str(d.azure.gpu_pools[0].min_size), notes="from 0 to `maxSize`"),
    ),
    Key("spot", "boolean", default=True, doc=Doc(default=lambda d: code(d.azure.gpu_pools[0].spot))),
    Key(
        "spotMaxPrice",
        "number",
        default=-1,
        clouds=AZURE,
        doc=Doc(
            default=lambda d: code(d.azure.gpu_pools[0].spot_max_price),
            notes="Azure only: -1 (up to on-demand) or a price with at most 5 decimals",
        ),
    ),
    Key(
        "onDemandFallback",
        "boolean",
        doc=Doc(
            default=lambda d: f"{code(d.azure.gpu_pools[0].on_demand_fallback)} ({code(False)} when `spot: false`)",
            notes="an on-demand pool of the same shape, lower priority",
        ),
    ),
    Key(
        "onDemandMaxSize",
        "integer",
        rules=("rules.check_gpu_pool",),
        doc=Doc(default="`maxSize`", notes="total across zones"),
    ),
    Key("zones", "strings", rules=("rules.check_gpu_pool",), doc=Doc(default="the cluster's zones", notes="a subset of them")),
    Key(
        "labels",
        "labels",
        rules=("rules.check_labels",),
        doc=Doc(default="`{}`", notes=lambda d: f"extra node labels; reserved prefixes ({_reserved_prefixes()}) rejected"),
    ),
    Key(
        "taints",
        "list",
        type_error="must be a list of {key, value, effect}",
        keys=TAINT,
        doc=Doc(
            type="list",
            default="`[]`",
            notes="extra taints `{key, value, effect}`, effect " + choices(list(TaintEffect)) + ", a value is required",
            includes_keys=True,
        ),
    ),
    Key(
        "diskSizeGb",
        "integer",
        rules=("rules.check_disk",),
        doc=Doc(
            default=lambda d: f"Azure {d.azure.gpu_pools[0].disk_size_gb}, AWS {d.aws.gpu_pools[0].disk_size_gb}",
            notes=_disk_bounds,
        ),
    ),
    Key(
        "amiType",
        "string",
        choices=_values(AmiType),
        clouds=AWS,
        rules=("rules.check_gpu_pool",),
        doc=Doc(
            default=lambda d: code(d.aws.gpu_pools[0].ami_type),
            notes=lambda d: (
                "AWS only; or "
                + " or ".join(code(a) for a in _ami_types(True) if a is not d.aws.gpu_pools[0].ami_type)
                + " (ships its own device plugin)"
            ),
        ),
    ),
    Key(
        "sharing",
        "section",
        gpu_only=True,
        keys=SHARING,
        doc=Doc(
            type="map",
            default="none",
            notes=lambda d: (
                "one mode per pool, see [Sharing GPUs](sharing.md): "
                + ", ".join(f"`{mode}: {{replicas: N}}`" for mode in ("timeSlicing", "mps"))
                + f" (N from {sharing.MIN_REPLICAS} to {sharing.MAX_REPLICAS}), or, AKS only, `mig: {{profile: "
                + next(iter(MIG_INSTANCES_PER_GPU))
                + "}`"
            ),
        ),
    ),
    Key(
        "evictionRate",
        "number",
        type_error=EVICTION_RATE_RULE,
        gpu_only=True,
        minimum=0,
        maximum=1,
        doc=Doc(
            type="0-1",
            default="`gpupools:cost.evictionRate`",
            notes="this Spot pool's share of Spot runs interrupted, for the monthly estimate (overrides the stack's); "
            "an error on a pool with `spot: false`",
        ),
    ),
    Key(
        "reservations",
        "list",
        type_error="must be a list of {id, zone}",
        gpu_only=True,
        keys=RESERVATION,
        doc=Doc(
            type=lambda d: f"list of `{_shape(RESERVATION)}`",
            default="none",
            notes="capacity already paid for, used before Spot: AWS an On-Demand Capacity Reservation or a Capacity Block "
            "(`cr-` and 17 hex digits), `zone` its Availability Zone (may be left out when the pool has one zone), "
            "`kind` `odcr` (default) or `capacityBlock`; "
            "Azure a Capacity Reservation Group ARM ID. `count`: instances reserved (a whole number >= 1), the "
            "reserved group's max; `maxSize` keeps bounding Spot and on-demand; without `count`, the pool's "
            "`maxSize` (as before `count` existed). GPU pools only",
            includes_keys=True,
        ),
    ),
    Key(
        "efa",
        "boolean",
        default=False,
        clouds=AWS,
        gpu_only=True,
        rules=("rules.check_efa",),
        doc=Doc(
            notes="AWS only: EFA network interfaces (one per EFA-capable network card), a cluster placement group, the "
            "EFA security group and the EFA device plugin, for multi-node training; EFA-capable types only, exactly "
            "one zone, cluster-autoscaler only ([EFA pools](eks.md#multi-node-training-efa-pools)). GPU pools only"
        ),
    ),
    Key(
        "proximityPlacement",
        "boolean",
        default=False,
        clouds=AZURE,
        gpu_only=True,
        rules=("rules.check_proximity_placement",),
        doc=Doc(
            notes="Azure only: the pool's nodes in a proximity placement group of their own (create-only: a new pool "
            "name); one zone or none ([proximity placement](aks.md#multi-node-training-proximity-placement-and-infiniband)). "
            "GPU pools only"
        ),
    ),
    Key(
        "infiniband",
        "boolean",
        default=False,
        gpu_only=True,
        clouds=AZURE,
        rules=("rules.check_infiniband",),
        doc=Doc(
            notes="Azure only: the pool runs InfiniBand (RDMA) jobs, so its size must be an InfiniBand-capable ND size; "
            "the IB network stack is yours ([InfiniBand](aks.md#multi-node-training-proximity-placement-and-infiniband)). "
            "GPU pools only"
        ),
    ),
    Key(
        "gpuDriver",
        "string",
        choices=_values(GpuDriver),
        default=GpuDriver.INSTALL.value,
        gpu_only=True,
        doc=Doc(
            default=lambda d: code(d.azure.gpu_pools[0].gpu_driver),
            notes="who owns the NVIDIA driver and device plugin: "
            + choices(list(GpuDriver))
            + "; `none` brings your own (the GPU Operator: AKS `gpuProfile.driver: None`, AKSNodeClass `gpu.mode: None`, "
            "no gpupools device plugin there), `managed` (AKS managed GPU, preview) is refused with the reason "
            "([GPU driver](gpu-driver.md)); no sharing unless `install`. GPU pools only",
        ),
    ),
    Key(
        "upgrade",
        "section",
        clouds=AZURE,
        keys=UPGRADE,
        doc=Doc(
            type=lambda d: f"`{_shape(UPGRADE)}`",
            default=lambda d: ", ".join(code(key.default) for key in UPGRADE),
            notes="Azure, cluster-autoscaler only: how AKS upgrades the pool's on-demand and reserved agent pools "
            "(their `upgradeSettings`; the Spot pool takes none, AKS refuses surge settings on Spot). `maxSurge` and "
            '`maxUnavailable`: a node count or a percentage of the pool (`"33%"`, rounded up, at most 100%), not both '
            "0; `drainTimeoutMinutes`: 1-1440, per node, PDBs honoured, the upgrade fails past it. In place (no new "
            "pool). The synth summary states the stack's worst-case upgrade time from these "
            "([AKS: Upgrades](aks.md#upgrades))",
            includes_keys=True,
        ),
    ),
    Key(
        "warm",
        "section",
        gpu_only=True,
        keys=WARM,
        rules=("warm.check_warm",),
        doc=Doc(
            type=lambda d: f"`{_shape(WARM)}`",
            default="none",
            notes="Spare GPU nodes kept ready, taken at once by the next pod and bought again behind it "
            "([Warm GPU capacity](warm.md)). `nodes`: 1 to the pool's `maxSize`. `schedule` (optional, default "
            'always): `days` (default every day, `Monday`...`Sunday`), `start` and `end` (quoted `"HH:MM"`, '
            "`end` after `start` on the same day), `timeZone` (IANA, default `UTC`); outside it the buffer is "
            "zero. A CapacityBuffer on EKS (cluster-autoscaler on 1.35+, Karpenter), placeholder pods on AKS "
            "and NAP. `spot: false` is allowed (an on-demand warm node is never evicted). GPU pools only",
            includes_keys=True,
        ),
    ),
)
"""A ``gpuPools`` entry; a ``cpuPools`` entry takes the same keys but the ``gpu_only`` ones."""

CPU_POOL_ROWS: tuple[tuple[str, Doc], ...] = (
    (
        "…instanceTypes",
        Doc(
            type="list",
            default="required",
            notes="Azure one general-purpose size (`Standard_D8s_v5`; `Standard_D8ps_v5` for Arm64); AWS several types: "
            "under cluster-autoscaler of one shape, architecture included (`[m6i.2xlarge, m7i.2xlarge, m6a.2xlarge]`), "
            "under `karpenter` of one architecture (`[m6i.xlarge, m6i.2xlarge]`); a GPU size is an error pointing to "
            "`gpuPools`",
        ),
    ),
    (
        "…minSize` / `spot` / `onDemandFallback",
        Doc(
            type="",
            default=lambda d: (
                f"{d.azure.cpu_pools[0].min_size} / {code(d.azure.cpu_pools[0].spot)} / "
                f"{code(d.azure.cpu_pools[0].on_demand_fallback)}"
            ),
            notes="CPU pools scale from zero too, Spot first with an on-demand fallback",
        ),
    ),
    (
        "…amiType",
        Doc(
            type="string",
            default=lambda d: code(d.aws.cpu_pools[0].ami_type),
            notes=lambda d: (
                "AWS only; "
                + " / ".join(code(a) for a in _ami_types(False) if a is not d.aws.cpu_pools[0].ami_type)
                + "; an `ARM_64` type with Graviton types; never an NVIDIA AMI"
            ),
        ),
    ),
    (
        "…diskSizeGb",
        Doc(
            type="int",
            default=lambda d: f"Azure {d.azure.cpu_pools[0].disk_size_gb}, AWS {d.aws.cpu_pools[0].disk_size_gb}",
            notes=_disk_bounds,
        ),
    ),
    (
        "…name",
        Doc(
            type="string",
            default="required",
            notes=lambda d: (
                "unique across `gpuPools` and `cpuPools`; GPU-only keys ("
                + ", ".join(f"`{k}`" for k in gpu_only())
                + ") are errors here"
            ),
        ),
    ),
)
"""The ``cpuPools`` rows of the reference: only where a CPU pool differs from a GPU pool (its keys
are the same ``POOL`` declarations, documented on the ``gpuPools`` rows)."""

REGION_ROW = (
    "` / `".join(regions.REGION_KEYS[cloud] for cloud in (Cloud.AZURE, Cloud.AWS)),
    Doc(
        type="string",
        default="provider config",
        notes="a public region of the cloud (AWS commercial regions, Azure public-cloud regions; "
        "`components/gpupools/catalog/regions.py`); an unknown one is a config error with the nearest name suggested, "
        "e.g. `aws:region: must be a known AWS region (did you mean eu-west-1?), got 'eu-west-9'`. A region the price "
        "catalog lacks is valid: synth shows `no price` for it, with why",
    ),
)
"""The row of the provider keys the region is read from (``REGION_KEYS``), after ``gpupools:cloud``."""

STACK = Key(
    "gpupools",
    "section",
    keys=(
        Key(
            "cloud",
            "string",
            required=True,
            choices=_values(Cloud),
            required_error="is required (azure or aws)",
            doc=Doc(type=choices(list(Cloud)), rows=(REGION_ROW,)),
        ),
        Key(
            "cluster",
            "section",
            required_error="is required (at least a name)",
            required=True,
            keys=(
                Key(
                    "name",
                    "string",
                    required=True,
                    rules=("rules.check_cluster",),
                    doc=Doc(
                        notes=lambda d: (
                            f"lowercase letters, digits, `-`; a letter first; at most {rules.CLUSTER_NAME_MAX} "
                            "characters; prefixes every name"
                        )
                    ),
                ),
                Key(
                    "kubernetesVersion",
                    "string",
                    rules=("rules.check_cluster",),
                    doc=Doc(
                        default=lambda d: f'`"{d.azure.cluster.kubernetes_version}"`',
                        notes=lambda d: (
                            f"a minor in the cloud's standard support ({_supported_minors()}; see "
                            "[Kubernetes versions](#kubernetes-versions)); quote it: `1.30` in YAML is a number"
                        ),
                    ),
                ),
                Key(
                    "zones",
                    "strings",
                    rules=("rules.check_cluster",),
                    doc=Doc(
                        default=lambda d: (
                            "Azure `["
                            + ", ".join(f'"{z}"' for z in d.azure.cluster.zones)
                            + "]`, none in a region without availability zones (`westus`); AWS the region's first 3"
                        ),
                        notes=lambda d: (
                            "Azure: "
                            + ", ".join(f'`"{z}"`' for z in rules.AZURE_ZONES)
                            + ", only in a region with availability zones (Azure's regions list); AWS: zone names of the "
                            "stack's region such as `us-west-2a`, checked against the region's zones "
                            "(`components/gpupools/catalog/regions.py`: `eu-central-1d` is an error, eu-central-1 has a, b and c)"
                        ),
                    ),
                ),
                Key(
                    "sku",
                    "string",
                    choices=AKS_SKUS,
                    default="Base",
                    clouds=AZURE,
                    rules=("config.check_automatic_keys",),
                    doc=Doc(
                        type=lambda d: " or ".join(f"`{t}`" for t in AKS_SKUS),
                        default=lambda d: code(d.azure.cluster.sku),
                        notes="Azure only; `Automatic`: AKS Automatic, new clusters only, with `provisioner: karpenter` "
                        "(AKS runs the system pool, NAP, the GPU driver and device plugin; [AKS Automatic](aks-automatic.md))",
                    ),
                ),
                Key(
                    "allowLocalAccounts",
                    "boolean",
                    default=False,
                    clouds=AZURE,
                    doc=Doc(
                        default=lambda d: code(d.azure.cluster.allow_local_accounts),
                        notes="Azure only; `true` for sandboxes (static admin credentials)",
                    ),
                ),
                Key(
                    "adminGroupObjectIds",
                    "strings",
                    clouds=AZURE,
                    doc=Doc(
                        default=lambda d: code(list(d.azure.cluster.admin_group_object_ids)),
                        notes="Azure only; Entra ID groups that get cluster-admin",
                    ),
                ),
                Key(
                    "apiAllowedCidrs",
                    "strings",
                    rules=("rules.check_cluster",),
                    doc=Doc(
                        default=lambda d: code(list(d.azure.cluster.api_allowed_cidrs)) + " (open to every address)",
                        notes="IPv4 CIDRs allowed to reach the API server (AKS authorized IP ranges, EKS public access "
                        "CIDRs); the preflight warns when empty",
                    ),
                ),
                Key(
                    "admins",
                    "strings",
                    clouds=AWS,
                    rules=("rules.check_cluster",),
                    doc=Doc(
                        default=lambda d: code(list(d.aws.cluster.admins)),
                        notes="AWS only; IAM role or user ARNs that get cluster-admin through EKS access entries (CI "
                        "roles, engineers)",
                    ),
                ),
                Key(
                    "controlPlaneLogs",
                    "strings",
                    clouds=AWS,
                    choices=rules.EKS_LOG_TYPES,
                    rules=("rules.check_cluster",),
                    doc=Doc(
                        type=lambda d: "list of " + ", ".join(f"`{t}`" for t in rules.EKS_LOG_TYPES),
                        default=lambda d: code(list(d.aws.cluster.control_plane_logs)),
                        notes="AWS only; EKS control plane logs sent to CloudWatch Logs (billed per GB); `[]` turns them off",
                    ),
                ),
                Key(
                    "supportType",
                    "string",
                    choices=("STANDARD", "EXTENDED"),
                    default="STANDARD",
                    clouds=AWS,
                    doc=Doc(
                        type=lambda d: " or ".join(f"`{t}`" for t in _declared("cluster.supportType").choices),
                        default=lambda d: code(d.aws.cluster.support_type),
                        notes="AWS only; the cluster's `upgradePolicy.supportType`: `STANDARD` lets EKS upgrade a minor "
                        "that leaves standard support, `EXTENDED` keeps it and bills extended support",
                    ),
                ),
                Key(
                    "permissionsBoundary",
                    "string",
                    clouds=AWS,
                    rules=("rules.check_permissions_boundary",),
                    doc=Doc(
                        type="IAM policy ARN",
                        notes="AWS only; the permissions boundary of every IAM role the stack creates (node, cluster, "
                        "controller roles); pair it with `deployer_policy --permissions-boundary` so the deployer cannot "
                        "write a role without it",
                    ),
                ),
            ),
        ),
        Key(
            "network",
            "section",
            keys=(
                Key(
                    "cidr",
                    "string",
                    default="10.40.0.0/16",
                    rules=("rules.check_network",),
                    doc=Doc(type="CIDR", default=lambda d: code(d.azure.network.cidr), notes=_cidr_notes),
                ),
                Key(
                    "subnetId",
                    "string",
                    clouds=AZURE,
                    rules=("rules.check_network",),
                    doc=Doc(type="ARM ID", notes="Azure, bring your own node subnet"),
                ),
                Key(
                    "vpcId",
                    "string",
                    clouds=AWS,
                    rules=("rules.check_network",),
                    doc=Doc(
                        key_tail="`, `privateSubnetIds",
                        type="IDs",
                        notes="AWS, bring your own VPC and one private subnet per zone (same order as `cluster.zones`)",
                    ),
                ),
                Key("privateSubnetIds", "strings", clouds=AWS, rules=("rules.check_network",), doc=Doc(on="network.vpcId")),
                Key(
                    "dataplane",
                    "string",
                    choices=("azure", "cilium"),
                    clouds=AZURE,
                    doc=Doc(
                        type=lambda d: choices(_declared("network.dataplane").choices),
                        default=_dataplane_default,
                        notes="Azure only; `cilium` is Azure CNI Overlay powered by Cilium (network policy by Cilium "
                        "too); AKS changes it in place by reimaging every node, and not while NAP is on",
                    ),
                ),
            ),
        ),
        Key(
            "systemPool",
            "section",
            keys=(
                Key(
                    "instanceTypes",
                    "strings",
                    rules=("rules.check_system_pool",),
                    doc=Doc(
                        default=lambda d: (
                            f"Azure {code(d.azure.system_pool.instance_types)}, AWS {code(d.aws.system_pool.instance_types)}"
                        ),
                        notes=lambda d: (
                            f"Azure exactly one size with >= {rules.AKS_SYSTEM_POOL_MIN_VCPUS} vCPUs; never a GPU type"
                        ),
                    ),
                ),
                Key(
                    "minSize",
                    "integer",
                    default=2,
                    rules=("rules.check_system_pool",),
                    doc=Doc(
                        key_tail="` / `maxSize",
                        default=lambda d: f"{d.azure.system_pool.min_size} / {d.azure.system_pool.max_size}",
                        notes=lambda d: (
                            f"min >= {rules.SYSTEM_POOL_MIN_NODES}; under NAP the pool has a fixed size of "
                            "`minSize` (leave `maxSize` out)"
                        ),
                    ),
                ),
                Key(
                    "maxSize",
                    "integer",
                    default=4,
                    rules=("rules.check_system_pool", "config.check_nap_system_pool"),
                    doc=Doc(on="systemPool.minSize"),
                ),
                Key(
                    "diskSizeGb",
                    "integer",
                    default=128,
                    rules=("rules.check_disk",),
                    doc=Doc(default=lambda d: str(d.azure.system_pool.disk_size_gb), notes=_disk_bounds),
                ),
            ),
        ),
        Key(
            "gpuPools",
            "list",
            required=True,
            keys=POOL,
            type_error=POOLS_RULE,
            required_error=NO_GPU_POOL,
            doc=Doc(type="list", notes="at least one"),
        ),
        Key(
            "cpuPools",
            "list",
            type_error=POOLS_RULE,
            keys=POOL,
            doc=Doc(
                type="list",
                default="`[]`",
                notes="optional CPU worker pools: the `gpuPools` keys and rules, with these differences",
                rows=CPU_POOL_ROWS,
            ),
        ),
        Key(
            "provisioner",
            "string",
            choices=_values(Provisioner),
            default=Provisioner.CLUSTER_AUTOSCALER.value,
            doc=Doc(type=choices(list(Provisioner)), default=lambda d: code(d.azure.provisioner), notes=_provisioner_notes),
        ),
        Key(
            "devicePlugin",
            "section",
            keys=(
                Key(
                    "version",
                    "string",
                    rules=("rules.check_device_plugin",),
                    doc=Doc(
                        type="tag",
                        default=lambda d: code(d.azure.device_plugin.version),
                        notes="image tag of `nvcr.io/nvidia/k8s-device-plugin`, a release tag `vX.Y.Z`",
                    ),
                ),
            ),
        ),
        Key(
            "autoscaler",
            "section",
            keys=(
                Key(
                    "maxNodeProvisionTime",
                    "string",
                    rules=("rules.check_autoscaler",),
                    doc=Doc(
                        type="`<n>m`",
                        default=lambda d: (
                            code(d.azure.autoscaler.max_node_provision_time)
                            + f"; {code(LARGE_GPU_PROVISION_TIME)} on EKS with an 8-GPU or multi-EFA type"
                        ),
                        notes=lambda d: (
                            "how long a Spot node may take before fallback (cluster-autoscaler only); " + _autoscaler_limit()
                        ),
                    ),
                ),
                Key(
                    "scaleDownUnneededTime",
                    "string",
                    default="10m",
                    rules=("rules.check_autoscaler",),
                    doc=Doc(
                        type="`<n>m`",
                        default=lambda d: code(d.azure.autoscaler.scale_down_unneeded_time),
                        notes=lambda d: (
                            "how long an idle GPU node lives; under Karpenter each NodePool's "
                            "`disruption.consolidateAfter`; " + _autoscaler_limit()
                        ),
                    ),
                ),
            ),
        ),
        Key(
            "smokeTest",
            "section",
            keys=(
                Key(
                    "enabled", "boolean", default=False, doc=Doc(notes="a CUDA Job per GPU pool on `pulumi up` (buys a GPU node)")
                ),
            ),
        ),
        Key(
            "upgrade",
            "section",
            keys=(
                Key(
                    "fromVersion",
                    "string",
                    choices=RELEASES_UPGRADED_FROM,
                    doc=Doc(
                        default="none (a stack this release created)",
                        notes="the gpupools release that last deployed the stack, for the first `up` after upgrading: "
                        "`0.2.0` keeps an EKS Karpenter stack's 0.2 EC2NodeClasses (`nvidia-al2023-100g`, ...) "
                        "registered as they are and never deleted by Pulumi, so the `up` does not wait for their "
                        "nodes to drift; no effect on other stacks ([Upgrading from 0.2.0](karpenter-nap.md#upgrading-from-020))",
                    ),
                ),
            ),
        ),
        Key(
            "cost",
            "section",
            keys=(
                Key(
                    "gpuHoursPerMonth",
                    "number",
                    type_error="must be a number of hours",
                    minimum=0,
                    doc=Doc(
                        default=lambda d: _none_or_code(d.azure.cost.gpu_hours_per_month),
                        notes="GPU node-hours of work per month, spread evenly over the GPU pools; without it, no "
                        "monthly estimate (see [Costs](costs.md)); >= 0",
                    ),
                ),
                Key(
                    "cpuNodeHoursPerMonth",
                    "number",
                    type_error="must be a number of hours",
                    minimum=0,
                    default=0,
                    doc=Doc(
                        notes="CPU node-hours of work per month beyond the CPU pools' `minSize`, spread evenly over the "
                        "CPU pools, `spotShare` of them on Spot like the GPU hours; in the monthly estimate only "
                        "(with `gpuHoursPerMonth`); >= 0",
                    ),
                ),
                Key(
                    "spotShare",
                    "number",
                    type_error="must be a number from 0 to 1",
                    default=1,
                    minimum=0,
                    maximum=1,
                    doc=Doc(
                        type="0-1",
                        default=_spot_share,
                        notes="share of those hours served by Spot (lower it to fold in evictions and fallbacks)",
                    ),
                ),
                Key(
                    "budgetPerHour",
                    "number",
                    type_error="must be a number (USD per hour)",
                    rules=("config.check_budget",),
                    doc=Doc(
                        type="USD",
                        default=lambda d: _none_or_code(d.azure.cost.budget_per_hour),
                        notes="the fleet's ceiling (every pool and fallback at `maxSize`) must not exceed it; checked "
                        "before anything is registered; > 0",
                    ),
                ),
                Key(
                    "evictionRate",
                    "number",
                    type_error=EVICTION_RATE_RULE,
                    default=0,
                    minimum=0,
                    maximum=1,
                    doc=Doc(
                        type="0-1",
                        default=lambda d: f"`{d.azure.cost.eviction_rate:g}`",
                        notes='share of Spot runs interrupted (AWS Spot Instance Advisor "frequency of interruption", '
                        "Azure Spot eviction rate; 0.05 for 5%); the monthly estimate's Spot hours grow by "
                        "`evictionRate x redoneShare` ([Evictions](costs.md#evictions-in-the-monthly-estimate)); "
                        "default: no adjustment",
                    ),
                ),
                Key(
                    "redoneShare",
                    "number",
                    type_error=REDONE_SHARE_RULE,
                    default=0.5,
                    minimum=0,
                    maximum=1,
                    doc=Doc(
                        type="0-1",
                        default=lambda d: code(d.azure.cost.redone_share),
                        notes="share of an interrupted run's work that is lost and run again: 0.5 without checkpoints, "
                        "lower with them",
                    ),
                ),
            ),
        ),
        Key(
            "maintenance",
            "section",
            keys=(
                Key(
                    "day",
                    "string",
                    choices=_values(WeekDay),
                    default=WeekDay.SUNDAY.value,
                    doc=Doc(
                        key_tail="` / `.startTime` / `.utcOffset",
                        type='weekday / `"HH:MM"` / `"+HH:MM"`',
                        default=lambda d: (
                            f'{code(d.nap.maintenance.day)} / `"{d.nap.maintenance.start_time}"` / '
                            f'`"{d.nap.maintenance.utc_offset}"`'
                        ),
                        notes="the weekly window in which nodes may be replaced for a new image: Karpenter and NAP "
                        "NodePools ([When nodes are replaced](karpenter-nap.md#when-karpenter-and-nap-replace-nodes)) and "
                        "every AKS cluster (node-OS and patch auto-upgrades, [Maintenance windows](aks.md#maintenance-windows)); "
                        "an error with EKS cluster-autoscaler; quote the times; days: "
                        + ", ".join(w.value for w in WeekDay)
                        + "; offsets from -12:00 to +14:00",
                    ),
                ),
                Key("startTime", "string", default="02:00", rules=("rules.check_maintenance",), doc=Doc(on="maintenance.day")),
                Key(
                    "durationHours",
                    "integer",
                    default=4,
                    rules=("rules.check_maintenance",),
                    doc=Doc(
                        type=lambda d: f"int, {rules.MAINTENANCE_MIN_HOURS}-{rules.MAINTENANCE_MAX_HOURS}",
                        default=lambda d: code(d.nap.maintenance.duration_hours),
                        notes=lambda d: (
                            f"the window's length (AKS accepts {rules.MAINTENANCE_MIN_HOURS} to "
                            f"{rules.MAINTENANCE_MAX_HOURS} hours and recommends at least {rules.MAINTENANCE_MIN_HOURS})"
                        ),
                    ),
                ),
                Key("utcOffset", "string", default="+00:00", rules=("rules.check_maintenance",), doc=Doc(on="maintenance.day")),
                Key(
                    "terminationGracePeriod",
                    "string",
                    rules=("rules.check_maintenance",),
                    doc=Doc(
                        type=lambda d: f"`<n>h` or `<n>m`, at most `{rules.GRACE_PERIOD_MAX_HOURS}h`",
                        default=lambda d: _none_or_code(d.nap.maintenance.termination_grace_period),
                        notes="Karpenter and NAP only: every NodePool's `terminationGracePeriod`, how long a node being "
                        "replaced waits for pods that block eviction (`karpenter.sh/do-not-disrupt`, PDBs) before "
                        "deleting them; unset, running jobs are never force-deleted and a drifted node waits for them "
                        "([When nodes are replaced](karpenter-nap.md#when-karpenter-and-nap-replace-nodes))",
                    ),
                ),
            ),
        ),
        Key(
            "nodeRepair",
            "section",
            keys=(
                Key(
                    "enabled",
                    "boolean",
                    rules=("config.parse_node_repair",),
                    doc=Doc(
                        default=lambda d: (
                            f"EKS managed node groups {code(d.aws.node_repair.enabled)}; EKS Karpenter "
                            f"{code(d.aws_karpenter.node_repair.enabled)}; AKS {code(d.azure.node_repair.enabled)}"
                        ),
                        notes="GPU node auto-repair where the cloud offers it: EKS `nodeRepairConfig` on every GPU managed "
                        "node group and the `eks-node-monitoring-agent` add-on; under Karpenter its alpha `NodeRepair` "
                        "gate and the add-on (off by default: alpha, and a repair there skips the drain); AKS node "
                        "auto-repair is always on, so `false` is an error there. See [node repair](node-repair.md)",
                    ),
                ),
            ),
        ),
        Key(
            "gpuMetrics",
            "section",
            keys=(
                Key(
                    "enabled",
                    "boolean",
                    default=True,
                    doc=Doc(
                        default=lambda d: code(d.azure.gpu_metrics.enabled),
                        notes="NVIDIA's DCGM exporter, one DaemonSet and a headless Service with `prometheus.io/*` scrape "
                        "annotations per GPU pool that has no exporter: not on `gpuDriver: none`/`managed` or "
                        "Bottlerocket pools ([GPU metrics](gpu-metrics.md))",
                    ),
                ),
                Key(
                    "serviceMonitor",
                    "boolean",
                    default=False,
                    doc=Doc(
                        default=lambda d: code(d.azure.gpu_metrics.service_monitor),
                        notes="also a Prometheus Operator `monitoring.coreos.com/v1` ServiceMonitor; only where its CRDs "
                        "are installed (`pulumi preview` cannot check, the create fails without them)",
                    ),
                ),
                Key(
                    "serviceMonitorLabels",
                    "labels",
                    rules=("rules.check_labels",),
                    doc=Doc(
                        default="`{}`",
                        notes="extra labels on the ServiceMonitor, for a Prometheus that selects by label "
                        "(kube-prometheus-stack: `{release: <its release>}`); only with `serviceMonitor: true`",
                    ),
                ),
            ),
        ),
        Key(
            "queueing",
            "section",
            keys=(
                Key(
                    "enabled",
                    "boolean",
                    default=False,
                    rules=("queueing.check.check_queueing",),
                    doc=Doc(
                        default=lambda d: code(d.azure.queueing.enabled),
                        notes="install Kueue (pinned chart, on the system pool) with a ResourceFlavor per pool and "
                        "capacity type (per NodePool under Karpenter/NAP) in buying order and quotas equal to the pools "
                        "at their ceiling (every group at max, [Queueing](queueing.md)); every other `queueing` key "
                        "needs it",
                    ),
                ),
                Key(
                    "namespaces",
                    "strings",
                    rules=("queueing.check.check_queueing",),
                    doc=Doc(
                        type="list of namespaces",
                        default="`[]`",
                        notes="a LocalQueue `gpupools` in each (gpupools creates the Namespaces); at least one namespace "
                        "here or in `teams`",
                    ),
                ),
                Key(
                    "teams",
                    "list",
                    type_error="must be a list of {name, namespaces, gpus}",
                    keys=(
                        Key(
                            "name",
                            "string",
                            required=True,
                            rules=("queueing.check.check_queueing",),
                            doc=Doc(type="DNS label", notes="the team's ClusterQueue and LocalQueue name; not `gpupools`"),
                        ),
                        Key(
                            "namespaces",
                            "strings",
                            doc=Doc(type="list of namespaces", default="required", notes="where the team's LocalQueues go"),
                        ),
                        Key(
                            "gpus",
                            "integer",
                            default=0,
                            rules=("queueing.check.check_queueing",),
                            doc=Doc(
                                type="int >= 0",
                                notes="GPU slots guaranteed to the team (nominal quota, taken from the flavours in buying "
                                "order); all teams together at most the GPU slots of the queued pools' ceiling (every "
                                "group at its max at once)",
                            ),
                        ),
                    ),
                    doc=Doc(
                        type="list",
                        default="`[]`",
                        notes="per team a ClusterQueue in the cohort `gpupools` and a LocalQueue named after the team in "
                        "its namespaces; unused quota is borrowed across the cohort, running jobs are never preempted",
                    ),
                ),
                Key(
                    "pools",
                    "strings",
                    rules=("queueing.check.check_queueing",),
                    doc=Doc(
                        type="list of pool names",
                        default="every pool",
                        notes="the `gpuPools`/`cpuPools` entries the queue admits to; an unknown name is an error",
                    ),
                ),
                Key(
                    "atomicScaleUp",
                    "boolean",
                    rules=("queueing.check.check_queueing",),
                    doc=Doc(
                        default="on under cluster-autoscaler",
                        notes="Kueue's ProvisioningRequest admission check: a job's GPU nodes are asked for at once "
                        "(atomic on AKS, best effort on EKS); an error under `provisioner: karpenter`, which has no "
                        "ProvisioningRequest support",
                    ),
                ),
            ),
        ),
        Key(
            "catalog",
            "section",
            keys=(
                Key(
                    "allowUnlisted",
                    "strings",
                    rules=("rules.check_offered",),
                    doc=Doc(
                        type="list of sizes",
                        default="`[]`",
                        notes="sizes the stack may use although the offline catalog says its region does not offer them "
                        "(a catalog that lags the cloud); without it such a size is a config error naming the regions "
                        "that list it. Also AWS zone names the offline list lacks for the region: AWS maps zone names per "
                        "account in older regions for accounts created before November 2025. Each must be a size of the "
                        "stack's pools or one of its zones. The online preflight asks the cloud and "
                        "is the final word ([Preflight](preflight.md))",
                    ),
                ),
                Key(
                    "instanceTypes",
                    "list",
                    type_error="must be a list of {name, vcpus, memoryGib, gpus}",
                    keys=USER_SIZE,
                    rules=("catalog.user_sizes.install",),
                    doc=Doc(
                        type=lambda d: f"list of `{_shape(USER_SIZE)}`",
                        default="`[]`",
                        notes="sizes the offline catalog does not know ([Instance types](instance-types.md) lists the ones "
                        "it does), with the facts gpupools sizes nodes, quotas and scale-from-zero templates from: `name` as "
                        "the cloud spells it, `vcpus`, `memoryGib`, `gpus` (whole NVIDIA GPUs; default 0), `gpuModel` "
                        "(e.g. `nvidia-a10g`), `architecture` (`x86_64` or `arm64`), `efaInterfaces` (AWS, default 0). "
                        "Such a size counts as offered in the stack's region and has no price: no cost estimate for "
                        "its pool, and a `budgetPerHour` cannot be checked with it. A name the catalog already knows "
                        "is an error (its facts are kept)",
                        includes_keys=True,
                    ),
                ),
            ),
        ),
    ),
)
"""The ``gpupools:*`` keys of a stack's ``config:`` map (the reference table follows this order but
for two sections, ``gpupools.config_reference.PLACED_AFTER``)."""


REGION_KEYS = regions.REGION_KEYS
"""The provider keys the program reads the region from (``rules.check_region``)."""


def section(path: str) -> Key:
    """The declaration at a dotted path of section names (``""`` is the top level, ``gpuPools.sharing``)."""
    key = STACK
    for name in filter(None, path.split(".")):
        key = key.key(name)
    return key


def keys_of(path: str) -> tuple[str, ...]:
    """The key names of the section at ``path``, in declaration order."""
    return tuple(key.name for key in section(path).keys)


def cloud_only(path: str, cloud: Cloud) -> tuple[str, ...]:
    """The keys of the section at ``path`` that apply to ``cloud`` only."""
    return tuple(key.name for key in section(path).keys if key.clouds == (cloud,))


def gpu_only(path: str = "gpuPools") -> tuple[str, ...]:
    """The pool keys that only mean something on a GPU pool."""
    return tuple(key.name for key in section(path).keys if key.gpu_only)


def cpu_pool() -> Key:
    """A ``cpuPools`` entry: the pool keys without the GPU-only ones."""
    pools = section("cpuPools")
    return replace(pools, keys=tuple(key for key in pools.keys if not key.gpu_only))


TYPE_NAMES = {"string": "string", "integer": "int", "number": "number", "boolean": "bool", "strings": "list", "labels": "map"}
"""How the reference table names each kind of scalar value."""


def walk(key: Key = STACK, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Key]]:
    """Every key below ``key`` with its path of names, depth first in declaration order."""
    for sub in key.keys:
        path = (*prefix, sub.name)
        yield path, sub
        yield from walk(sub, path)
