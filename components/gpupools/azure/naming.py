"""AKS agent pool names that rotate when a create-only field changes.

AKS cannot change a pool's VM size, Spot priority, Spot price, eviction policy, OS disk type or
size, max pods, GPU driver or MIG profile, zones or subnet in place: an update is rejected, and
Pulumi's replacement of a pool with a fixed name fails too (the default create-before-destroy
would PUT the new pool onto the old name; delete-before-replace would drop the pool's capacity
first). So the agent pool name carries a digest of exactly those values:

    <pool name><s|o|r><4 hex characters>      e.g. t4s3f9a (Spot), t4o81c2 (on-demand), t4r07be (reserved)

A change to any create-only value yields a new name, Pulumi creates the new pool next to the old
one and deletes the old one afterwards: zero downtime, no manual steps. That order holds only
because every ``AgentPool`` states ``delete_before_replace=False``: pulumi-azure-native asks for
delete-first whenever a path parameter such as ``agentPoolName`` changes, and the engine follows it
unless the program sets the option (``gpupools.azure.node_pool``, module docstring). A change to anything AKS
can update in place (min/max size, labels, taints) keeps the name, so it stays an in-place update.

Everything here is pure and deterministic (hashlib over canonical JSON; never random or time), so
the same config always yields the same names, in previews, on every machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Mapping

from gpupools.conventions import CapacityType
from gpupools.errors import ConfigError
from gpupools.rules import AKS_POOL_NAME_MAX, POOL_NAME

DIGEST_LENGTH = 4
"""Hex characters of the create-only digest: 65,536 values, plenty for the handful of
generations a pool goes through, and it leaves 7 characters of AKS's 12 for the pool name."""

CAPACITY_LETTER = {CapacityType.SPOT: "s", CapacityType.ON_DEMAND: "o", CapacityType.RESERVED: "r"}
"""The role letter between pool name and digest, so the Spot, fallback and reserved pools of one
``gpuPools`` entry never share a name even if their digests collide. A reserved pool's digest
covers its Capacity Reservation Group ID, so two reservations of one entry get two names."""

AKS_AGENT_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}\Z")
"""AKS Linux pool names: a lowercase letter, then lowercase letters or digits, 1-12 in total."""


def create_only_digest(values: Mapping[str, Any]) -> str:
    """The first ``DIGEST_LENGTH`` hex characters of the SHA-256 of ``values`` as canonical JSON.

    Keys are sorted and separators fixed, so dict order never changes the digest; only the values do.
    """
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_LENGTH]


def agent_pool_name(base: str, capacity: CapacityType, create_only: Mapping[str, Any], path: str = "name") -> str:
    """``<base><s|o|r><digest of create_only>``, validated against AKS's naming rule.

    Args:
        base: the ``gpuPools`` entry name (lowercase letter, then letters/digits).
        capacity: Spot (``s``), on-demand (``o``) or reserved (``r``, an on-demand pool in a
            Capacity Reservation Group).
        create_only: every value sent to AKS that AKS cannot change in place, keyed by its API name.
        path: the argument path named in a ``ConfigError``.

    Raises:
        ConfigError: if the result is not a valid AKS Linux pool name (at most 12 characters).
    """
    if not POOL_NAME.match(base):
        raise ConfigError(path, "must be a lowercase letter followed by lowercase letters or digits", base)
    name = f"{base}{CAPACITY_LETTER[capacity]}{create_only_digest(create_only)}"
    if len(name) > AKS_POOL_NAME_MAX or not AKS_AGENT_POOL_NAME.match(name):
        raise ConfigError(
            path,
            f"must leave room for the {1 + DIGEST_LENGTH}-character suffix within AKS's {AKS_POOL_NAME_MAX}-character "
            f"pool name limit (at most {AKS_POOL_NAME_MAX - 1 - DIGEST_LENGTH} characters)",
            base,
        )
    return name


def scale_set_regex(agent_pool: str) -> str:
    """An anchored regex for the VMSS AKS creates for ``agent_pool``: ``aks-<pool>-<digits>-vmss``.

    That scale-set name is the node-group name cluster-autoscaler reports (and the priority
    expander matches). The pool name is matched exactly, so ``t4s3f9a`` never matches a pool named
    ``t4s3f9ab``, and the Spot and fallback pools of one entry never share a regex.
    """
    if not AKS_AGENT_POOL_NAME.match(agent_pool):
        raise ConfigError("agentPoolName", "must be a valid AKS pool name", agent_pool)
    return f"^aks-{re.escape(agent_pool)}-[0-9]+-vmss$"
