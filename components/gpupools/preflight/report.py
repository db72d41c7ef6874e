"""The preflight's one table: a row per check, and the exit status it implies.

===========  ==================================================================================
column       meaning
===========  ==================================================================================
CHECK        ``offered`` (size/type offered in the zone), ``quota`` (regional vCPU quota),
             ``version`` (Kubernetes version offered in the region), ``permissions`` (the
             deployer's rights), ``spot-role`` (EKS with Karpenter and Spot pools: the
             account's EC2 Spot service-linked role), ``reservation`` (each
             ``gpuPools[].reservations`` entry: state, type, zone, what is free, end),
             ``reservation-grant`` (AKS: each reserved pool's Contributor grant for the
             cluster's identity on its Capacity Reservation Group's resource group, and its age)
POOL         the ``gpuPools`` entry, ``system``, or ``-`` for the whole stack
ZONE         the zone checked, or ``-`` for a regional check
FOUND        what the cloud answered (for ``?``: why it could not answer)
NEEDED       what the stack needs
(status)     ``✓`` enough, ``✗`` ``pulumi up`` would fail, ``?`` the cloud could not say
===========  ==================================================================================

The exit status is 0 when every row is ``✓`` (or ``?`` without ``--strict``), 1 on any ``✗`` (and,
with ``--strict``, on any ``?``), and 4 when no check could run at all (every row ``?``: no
credentials, no subscription, no network), with or without ``--strict``: a preflight that asked
nothing must not pass a gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Iterable, Sequence

EXIT_OK = 0
EXIT_FAILED = 1
"""A check failed (or, with ``--strict``, could not be answered)."""
EXIT_NO_ANSWER = 4
"""No check could run: every row is ``?`` (``credentials.why_nothing_ran`` says why in one line)."""


class Status(str, Enum):
    """The outcome of one check."""

    OK = "✓"
    FAILED = "✗"
    UNKNOWN = "?"


class CheckKind(str, Enum):
    """What a row checks."""

    OFFERED = "offered"
    QUOTA = "quota"
    VERSION = "version"
    PERMISSIONS = "permissions"
    SPOT_ROLE = "spot-role"
    RESERVATION = "reservation"
    RESERVATION_GRANT = "reservation-grant"
    ACCESS = "access"
    FEATURE = "feature"


RESERVATION_END_WARNING = timedelta(days=14)
"""How soon an end date makes a ``reservation`` row ``?`` (a warning; a failure with ``--strict``),
on both clouds. The assumption: a stack outlives its next two weeks and its GPU pools are sized on
the reservation; when a Capacity Block (AWS; always time-bound, 1 to 182 days: EC2 user guide,
"Capacity Blocks for ML") or an Azure Block capacity reservation (``scheduleProfile.end``) ends, its
VMs are taken back and the pool falls back to Spot and on-demand prices and availability. Two weeks
leave time to buy the next block (AWS sells them up to 8 weeks ahead). ``?`` rather than ✗: nothing
fails today, and ``--strict`` makes it a gate where a gate is wanted."""

GRANT_PROPAGATION = timedelta(minutes=60)
"""How old a role assignment must be before the preflight counts on it having reached the service
that checks it: AKS, "Assign capacity reservation groups to AKS node pools" (learn.microsoft.com
``aks/use-capacity-reservation-groups``, prerequisites): "It can take up to 60 minutes for the role
assignment to propagate". A younger grant is ``?`` with the time left, not ✗: it will be enough
once that time has passed."""

NO_POOL = "-"
NO_ZONE = "-"


@dataclass(frozen=True)
class Check:
    """One row of the table.

    Attributes:
        check: what is checked.
        pool: the ``gpuPools`` entry, ``system``, or ``-``.
        zone: the zone, or ``-`` for a regional check.
        found: what the cloud answered; for ``?`` the reason it could not answer.
        needed: what the stack needs.
        status: ✓, ✗ or ?.
    """

    check: CheckKind
    pool: str
    zone: str
    found: str
    needed: str
    status: Status


def unknown(check: CheckKind, pool: str, zone: str, needed: str, reason: str) -> Check:
    """A row the cloud could not answer, with the reason in FOUND."""
    return Check(check, pool, zone, f"no answer: {reason}", needed, Status.UNKNOWN)


COLUMNS = ("CHECK", "POOL", "ZONE", "FOUND", "NEEDED", "")

WIDTH = 160
"""Columns the table fits in (what synth's summary fits too): FOUND and NEEDED wrap within it."""

WRAPPED = (3, 4)
"""The columns that wrap (FOUND, NEEDED: a cloud's reason, a sum of pools); the others are short."""

MIN_WRAPPED = 24
"""The narrowest a wrapped column gets, however wide the others are."""


def column_widths(rows: Sequence[Sequence[str]], width: int = WIDTH) -> list[int]:
    """Each column's width: its longest cell, except that FOUND and NEEDED share what the other
    columns and the separators leave of ``width``, in proportion to their longest cells."""
    natural = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    room = width - sum(w for i, w in enumerate(natural) if i not in WRAPPED) - 2 * (len(COLUMNS) - 1)
    wanted = sum(natural[i] for i in WRAPPED)
    if wanted <= room:
        return natural
    widths = list(natural)
    for i in WRAPPED:
        widths[i] = max(MIN_WRAPPED, min(natural[i], room * natural[i] // wanted))
    return widths


def render(checks: Sequence[Check], width: int = WIDTH) -> str:
    """The table, aligned within ``width`` columns (FOUND and NEEDED wrap onto continuation lines,
    the status on the row's first line), followed by a one-line tally."""
    import textwrap

    rows = [COLUMNS, *((c.check.value, c.pool, c.zone, c.found, c.needed, c.status.value) for c in checks)]
    widths = column_widths(rows, width)
    lines = []
    for row in rows:
        cells = [
            textwrap.wrap(cell, w, break_on_hyphens=False) or [""] if i in WRAPPED else [cell]
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        for n in range(max(len(c) for c in cells)):
            parts = [(c[n] if n < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)]
            lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n" + tally(checks) + "\n"


def tally(checks: Iterable[Check]) -> str:
    """``12 ✓  1 ✗  2 ?``."""
    statuses = [c.status for c in checks]
    return "  ".join(f"{statuses.count(s)} {s.value}" for s in Status)


def nothing_ran(checks: Sequence[Check]) -> bool:
    """True when there are checks and the cloud answered none of them (every row ``?``)."""
    return bool(checks) and all(c.status is Status.UNKNOWN for c in checks)


def exit_status(checks: Sequence[Check], *, strict: bool = False) -> int:
    """4 when no check could run; else 1 on any ✗ (or, with ``strict``, any ?); else 0."""
    if nothing_ran(checks):
        return EXIT_NO_ANSWER
    failing = {Status.FAILED, Status.UNKNOWN} if strict else {Status.FAILED}
    return EXIT_FAILED if any(c.status in failing for c in checks) else EXIT_OK
