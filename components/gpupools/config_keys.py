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
* the key set of the reference table in ``docs/configuration.md`` (``gpupools.config_reference``
  documents exactly these keys and fails on a missing or extra one), whose notes are the schema's
  descriptions;
* the key sets of the component package's input types (``gpupools.xlang.args``; a test compares them).

Rules that need more than one key or a catalog (a size in a region, zones, quotas, ``maxSize >=
minSize``) stay in ``gpupools.rules``; ``Key.rules`` names them, so every rule of a key can be
found from the key. Adding a key is one ``Key`` here plus the code that uses it: the spec field it
fills (named after the key) and what reads that field; no parser line (a default that depends on the
stack, or a check between keys, is its section's ``parse_*`` in ``gpupools.config``). A key without
``notes`` also needs its entry in ``gpupools.config_reference``. The key lists, the schema and the
checks follow.

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

from gpupools import rules
from gpupools.catalog import regions
from gpupools.conventions import TaintEffect
from gpupools.specs import AmiType, Cloud, GpuDriver, Provisioner, WeekDay

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
        notes: what the key does, for the reference table's notes column and the schema's
            description. A key with notes gets its reference row from here (type from ``kind``,
            default from ``default``); one without has an entry in ``gpupools.config_reference``.
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
    notes: str = ""
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

SHARING = (
    Key("timeSlicing", "section", keys=(Key("replicas", "integer", required=True, rules=("rules.check_sharing",)),)),
    Key("mps", "section", keys=(Key("replicas", "integer", required=True, rules=("rules.check_sharing",)),)),
    Key("mig", "section", keys=(Key("profile", "string", required=True, rules=("rules.check_sharing",)),)),
)

UPGRADE = (
    Key("maxSurge", "nodes", default="0", rules=("rules.check_upgrade",)),
    Key("maxUnavailable", "nodes", default="1", rules=("rules.check_upgrade",)),
    Key("drainTimeoutMinutes", "integer", default=60, rules=("rules.check_upgrade",)),
)

POOL = (
    Key("name", "string", required=True, rules=("rules.check_gpu_pool",)),
    Key("instanceTypes", "strings", required=True, rules=("rules.check_gpu_pool",)),
    Key("maxSize", "integer", required=True, minimum=1, rules=("rules.check_gpu_pool",)),
    Key("minSize", "integer", default=0, minimum=0, rules=("rules.check_gpu_pool",)),
    Key("spot", "boolean", default=True),
    Key("spotMaxPrice", "number", default=-1, clouds=AZURE),
    Key("onDemandFallback", "boolean"),
    Key("onDemandMaxSize", "integer", rules=("rules.check_gpu_pool",)),
    Key("zones", "strings", rules=("rules.check_gpu_pool",)),
    Key("labels", "labels", rules=("rules.check_labels",)),
    Key("taints", "list", keys=TAINT, type_error="must be a list of {key, value, effect}"),
    Key("diskSizeGb", "integer", rules=("rules.check_disk",)),
    Key("amiType", "string", choices=_values(AmiType), clouds=AWS, rules=("rules.check_gpu_pool",)),
    Key("sharing", "section", gpu_only=True, keys=SHARING),
    Key("evictionRate", "number", gpu_only=True, minimum=0, maximum=1, type_error=EVICTION_RATE_RULE),
    Key("reservations", "list", gpu_only=True, keys=RESERVATION, type_error="must be a list of {id, zone}"),
    Key("efa", "boolean", default=False, clouds=AWS, gpu_only=True, rules=("rules.check_efa",)),
    Key("proximityPlacement", "boolean", default=False, clouds=AZURE, gpu_only=True, rules=("rules.check_proximity_placement",)),
    Key("infiniband", "boolean", default=False, gpu_only=True, clouds=AZURE, rules=("rules.check_infiniband",)),
    Key("gpuDriver", "string", choices=_values(GpuDriver), default=GpuDriver.INSTALL.value, gpu_only=True),
    Key("upgrade", "section", clouds=AZURE, keys=UPGRADE),
    Key("warm", "section", gpu_only=True, keys=WARM, rules=("warm.check_warm",)),
)
"""A ``gpuPools`` entry; a ``cpuPools`` entry takes the same keys but the ``gpu_only`` ones."""

STACK = Key(
    "gpupools",
    "section",
    keys=(
        Key("cloud", "string", required=True, choices=_values(Cloud), required_error="is required (azure or aws)"),
        Key(
            "cluster",
            "section",
            required=True,
            required_error="is required (at least a name)",
            keys=(
                Key("name", "string", required=True, rules=("rules.check_cluster",)),
                Key("kubernetesVersion", "string", rules=("rules.check_cluster",)),
                Key("zones", "strings", rules=("rules.check_cluster",)),
                Key("allowLocalAccounts", "boolean", default=False, clouds=AZURE),
                Key("adminGroupObjectIds", "strings", clouds=AZURE),
                Key("apiAllowedCidrs", "strings", rules=("rules.check_cluster",)),
                Key("admins", "strings", clouds=AWS, rules=("rules.check_cluster",)),
                Key("controlPlaneLogs", "strings", clouds=AWS, choices=rules.EKS_LOG_TYPES, rules=("rules.check_cluster",)),
                Key("supportType", "string", choices=("STANDARD", "EXTENDED"), default="STANDARD", clouds=AWS),
                Key("permissionsBoundary", "string", clouds=AWS, rules=("rules.check_permissions_boundary",)),
            ),
        ),
        Key(
            "network",
            "section",
            keys=(
                Key("cidr", "string", default="10.40.0.0/16", rules=("rules.check_network",)),
                Key("subnetId", "string", clouds=AZURE, rules=("rules.check_network",)),
                Key("vpcId", "string", clouds=AWS, rules=("rules.check_network",)),
                Key("privateSubnetIds", "strings", clouds=AWS, rules=("rules.check_network",)),
                Key("dataplane", "string", choices=("azure", "cilium"), clouds=AZURE),
            ),
        ),
        Key(
            "systemPool",
            "section",
            keys=(
                Key("instanceTypes", "strings", rules=("rules.check_system_pool",)),
                Key("minSize", "integer", default=2, rules=("rules.check_system_pool",)),
                Key("maxSize", "integer", default=4, rules=("rules.check_system_pool", "config.check_nap_system_pool")),
                Key("diskSizeGb", "integer", default=128, rules=("rules.check_disk",)),
            ),
        ),
        Key("gpuPools", "list", required=True, keys=POOL, type_error=POOLS_RULE, required_error=NO_GPU_POOL),
        Key("cpuPools", "list", keys=POOL, type_error=POOLS_RULE),
        Key("provisioner", "string", choices=_values(Provisioner), default=Provisioner.CLUSTER_AUTOSCALER.value),
        Key("devicePlugin", "section", keys=(Key("version", "string", rules=("rules.check_device_plugin",)),)),
        Key(
            "autoscaler",
            "section",
            keys=(
                Key("maxNodeProvisionTime", "string", rules=("rules.check_autoscaler",)),
                Key("scaleDownUnneededTime", "string", default="10m", rules=("rules.check_autoscaler",)),
            ),
        ),
        Key(
            "smokeTest",
            "section",
            keys=(Key("enabled", "boolean", default=False, notes="a CUDA Job per GPU pool on `pulumi up` (buys a GPU node)"),),
        ),
        Key(
            "cost",
            "section",
            keys=(
                Key("gpuHoursPerMonth", "number", minimum=0, type_error="must be a number of hours"),
                Key("spotShare", "number", default=1, minimum=0, maximum=1, type_error="must be a number from 0 to 1"),
                Key("budgetPerHour", "number", rules=("config.check_budget",), type_error="must be a number (USD per hour)"),
                Key("evictionRate", "number", default=0, minimum=0, maximum=1, type_error=EVICTION_RATE_RULE),
                Key("redoneShare", "number", default=0.5, minimum=0, maximum=1, type_error=REDONE_SHARE_RULE),
            ),
        ),
        Key(
            "maintenance",
            "section",
            keys=(
                Key("day", "string", choices=_values(WeekDay), default=WeekDay.SUNDAY.value),
                Key("startTime", "string", default="02:00", rules=("rules.check_maintenance",)),
                Key("durationHours", "integer", default=4, rules=("rules.check_maintenance",)),
                Key("utcOffset", "string", default="+00:00", rules=("rules.check_maintenance",)),
                Key("terminationGracePeriod", "string", rules=("rules.check_maintenance",)),
            ),
        ),
        Key("nodeRepair", "section", keys=(Key("enabled", "boolean", rules=("config.parse_node_repair",)),)),
        Key(
            "gpuMetrics",
            "section",
            keys=(
                Key("enabled", "boolean", default=True),
                Key("serviceMonitor", "boolean", default=False),
                Key("serviceMonitorLabels", "labels", rules=("rules.check_labels",)),
            ),
        ),
        Key(
            "queueing",
            "section",
            keys=(
                Key("enabled", "boolean", default=False, rules=("queueing.check.check_queueing",)),
                Key("namespaces", "strings", rules=("queueing.check.check_queueing",)),
                Key(
                    "teams",
                    "list",
                    type_error="must be a list of {name, namespaces, gpus}",
                    keys=(
                        Key("name", "string", required=True, rules=("queueing.check.check_queueing",)),
                        Key("namespaces", "strings"),
                        Key("gpus", "integer", default=0, rules=("queueing.check.check_queueing",)),
                    ),
                ),
                Key("pools", "strings", rules=("queueing.check.check_queueing",)),
                Key("atomicScaleUp", "boolean", rules=("queueing.check.check_queueing",)),
            ),
        ),
        Key("catalog", "section", keys=(Key("allowUnlisted", "strings", rules=("rules.check_offered",)),)),
    ),
)
"""The ``gpupools:*`` keys of a stack's ``config:`` map, in the order of the reference table's sections."""

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
