"""The node-image maintenance window: when Karpenter and AKS Node Auto Provisioning may replace nodes. Pure.

``gpupools:maintenance`` (``MaintenanceSpec``) names one weekly window, in a UTC offset of the
user's choice. Two things follow from it, both derived here so they cannot disagree:

* **AKS NAP** picks up a new node image only inside the cluster's ``aksManagedNodeOSUpgradeSchedule``
  maintenance configuration. Without one "AKS might use a fallback schedule to pick up new images,
  which can cause images to be picked up at unexpected times" (MicrosoftDocs/azure-aks-docs
  ``articles/aks/node-auto-provisioning-upgrade-image.md``). That configuration only says when NAP
  *picks up* an image, not when nodes are disrupted: "The upgrade mechanism and decision criteria are
  specific to NAP/Karpenter and are evaluated by NAP's drift logic. NAP respects Karpenter Node
  Disruption Budgets" (same page). So the window is also written into every NodePool's budgets.
* **Karpenter** (EKS, and NAP's managed one) replaces a drifted node whenever its NodePool's
  budgets allow a ``Drifted`` disruption. Budgets are evaluated per reason and "Karpenter will take
  the minimum of the budgets that have listed the reason or have left reasons undefined"; a budget
  with ``schedule`` and ``duration`` is active only from each schedule hit for ``duration``, and an
  inactive budget allows any number (aws/karpenter-provider-aws v1.14.1
  ``website/content/en/docs/concepts/disruption.md``, "NodePool Disruption Budgets";
  kubernetes-sigs/karpenter ``pkg/apis/v1/nodepool.go`` at the commit v1.14.1 pins,
  ``GetAllowedDisruptionsByReason`` and ``Budget.IsActive``). Cron cannot describe "always except
  the window", so the closed time is a budget of its own: ``nodes: "0"`` for ``Drifted``,
  scheduled at the window's end (UTC: "Timezones are not currently supported. Schedules are always
  in UTC") for the rest of the week (``168h`` minus the window). Inside the window only the
  always-active ``nodes: "1"`` budget for ``Drifted`` applies: one node of a pool at a time.

``in_window`` states the intended meaning; tests check the budgets against a model of
``Budget.IsActive`` for every minute of a week, for windows that cross midnight and the week's end.
"""

from __future__ import annotations

import re
from typing import Any

from gpupools.specs import MaintenanceSpec

MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY

DRIFTED = "Drifted"
"""The disruption reason of node-image (and any other) drift (``karpenter.sh/v1`` budget reasons:
``Underutilized``, ``Empty``, ``Drifted``)."""

DRIFT_AT_ONCE = "1"
"""Inside the window, drifted nodes of one NodePool are replaced one at a time."""

START_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)\Z")
UTC_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})\Z")


def offset_minutes(utc_offset: str) -> int:
    """``+05:30`` -> 330, ``-07:00`` -> -420 (the form is checked by ``rules.check_maintenance``)."""
    match = UTC_OFFSET.match(utc_offset)
    if match is None:
        raise ValueError(f"not a UTC offset: {utc_offset!r}")
    sign = 1 if match.group(1) == "+" else -1
    return sign * (int(match.group(2)) * 60 + int(match.group(3)))


def start_minute_utc(spec: MaintenanceSpec) -> int:
    """The window's start as minutes after Sunday 00:00 UTC (0 to 10079)."""
    match = START_TIME.match(spec.start_time)
    if match is None:
        raise ValueError(f"not a start time: {spec.start_time!r}")
    local = spec.day.cron_day * MINUTES_PER_DAY + int(match.group(1)) * 60 + int(match.group(2))
    return (local - offset_minutes(spec.utc_offset)) % MINUTES_PER_WEEK


def in_window(spec: MaintenanceSpec, minute_utc: int) -> bool:
    """Whether ``minute_utc`` (minutes after Sunday 00:00 UTC) lies in the window, start inclusive."""
    return (minute_utc - start_minute_utc(spec)) % MINUTES_PER_WEEK < spec.duration_hours * 60


def weekly_cron(minute_utc: int) -> str:
    """A five-field cron schedule that hits once a week at ``minute_utc`` (``M H * * D``, D 0 = Sunday)."""
    minute_utc %= MINUTES_PER_WEEK
    day, rest = divmod(minute_utc, MINUTES_PER_DAY)
    hour, minute = divmod(rest, 60)
    return f"{minute} {hour} * * {day}"


def drift_budgets(spec: MaintenanceSpec) -> list[dict[str, Any]]:
    """The ``Drifted`` budgets of a NodePool (module docstring): one node at a time, none outside the window."""
    end = start_minute_utc(spec) + spec.duration_hours * 60
    closed_hours = 7 * 24 - spec.duration_hours
    return [
        {"nodes": DRIFT_AT_ONCE, "reasons": [DRIFTED]},
        {"nodes": "0", "reasons": [DRIFTED], "schedule": weekly_cron(end), "duration": f"{closed_hours}h"},
    ]


def describe(spec: MaintenanceSpec) -> str:
    """``Sunday 02:00 (+00:00) for 4h``: for outputs and tables."""
    return f"{spec.day.value} {spec.start_time} ({spec.utc_offset}) for {spec.duration_hours}h"
