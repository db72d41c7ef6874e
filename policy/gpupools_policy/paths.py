"""Pulumi property paths, as written in the ``ignoreChanges`` resource option.

Syntax (Pulumi's ``resource.PropertyPath``): names joined by ``.``, list indexes and quoted keys in
brackets, ``*`` as a wildcard segment: ``scalingConfig.desiredSize``, ``agentPoolProfiles[0].count``,
``agentPoolProfiles[*].count``, ``tags["kubernetes.io/cluster"]``. A path in ``ignoreChanges``
covers every property under it, so ``scalingConfig`` covers ``scalingConfig.desiredSize``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

Segment = str | int

_TOKEN = re.compile(
    r"""
      \[\s*(?P<index>\d+)\s*\]            # [0]
    | \[\s*(?P<star>\*)\s*\]              # [*]
    | \[\s*"(?P<dq>(?:[^"\\]|\\.)*)"\s*\] # ["key"]
    | \[\s*'(?P<sq>(?:[^'\\]|\\.)*)'\s*\] # ['key']
    | \.?(?P<name>[^.\[\]]+)              # name or .name
    """,
    re.VERBOSE,
)


def parse(path: str) -> tuple[Segment, ...] | None:
    """Split a property path into segments (ints for indexes, ``"*"`` for wildcards); None if malformed."""
    segments: list[Segment] = []
    position = 0
    text = path.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            return None
        if match.group("index") is not None:
            segments.append(int(match.group("index")))
        elif match.group("star") is not None:
            segments.append("*")
        elif match.group("dq") is not None:
            segments.append(match.group("dq").replace('\\"', '"'))
        elif match.group("sq") is not None:
            segments.append(match.group("sq").replace("\\'", "'"))
        else:
            segments.append(match.group("name"))
        position = match.end()
    return tuple(segments) if segments else None


def covers(ignored: str, target: str) -> bool:
    """True if ignoring ``ignored`` also ignores changes to ``target``."""
    pattern, wanted = parse(ignored), parse(target)
    if pattern is None or wanted is None or len(pattern) > len(wanted):
        return False
    return all(p == "*" or p == w for p, w in zip(pattern, wanted, strict=False))


def any_covers(ignored: Iterable[str], target: str) -> bool:
    """True if any path in ``ignored`` covers ``target``."""
    return any(isinstance(path, str) and covers(path, target) for path in ignored)
