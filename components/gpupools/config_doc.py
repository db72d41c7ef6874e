"""How a key of the declaration (``gpupools.config_keys``) is documented: its ``Doc``, and the Markdown helpers its text uses.

A ``Doc`` is a key's row of the reference table in ``docs/configuration.md`` (built by
``gpupools.config_reference``) and its description in the JSON Schema (``gpupools.config_schema``).
Each text part is a string, or a callable that takes the parsed defaults (``ParsedDefaults``: what
``gpupools.config.parse`` fills in on a minimal stack of each cloud) and reads the constants the rules
check against, so the page follows the code instead of copying it.

This module imports only ``gpupools.specs``, so the declaration can use it without importing the
parser (``gpupools.config`` imports the declaration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, Union

from gpupools.specs import StackSpec


class ParsedDefaults(Protocol):
    """What ``gpupools.config.parse`` fills in when a key is left out (``gpupools.config_reference.Defaults``)."""

    @property
    def azure(self) -> StackSpec:
        """A minimal AKS stack under cluster-autoscaler."""
        ...

    @property
    def aws(self) -> StackSpec:
        """A minimal EKS stack under cluster-autoscaler."""
        ...

    @property
    def nap(self) -> StackSpec:
        """A minimal AKS stack under Node Auto Provisioning (``provisioner: karpenter``)."""
        ...

    @property
    def aws_karpenter(self) -> StackSpec:
        """A minimal EKS stack under ``provisioner: karpenter``."""
        ...


Text = Union[str, Callable[[ParsedDefaults], str]]
"""A part of a row: fixed text, or text computed from the parsed defaults and the rules' constants."""


@dataclass(frozen=True)
class Doc:
    """A key's row of the reference table (``Key.doc``).

    Attributes:
        notes: what the key does and its limits; also the key's description in the JSON Schema.
        type: the type column; ``None`` (default) names the key's kind (``TYPE_NAMES``: ``int``,
            ``bool``, ``list``...).
        default: the default column; ``None`` (default) is ``required`` for a required key, the
            declared ``Key.default`` in backticks, or empty.
        key_tail: text after the key's name in the key column, naming the other keys the row
            documents (`` / `maxSize``); those keys carry ``Doc(on=...)``.
        on: the dotted path of the key whose row documents this one (``systemPool.minSize``); the
            key gets no row of its own, and the reference fails if that row does not name it.
        includes_keys: the notes document the key's own keys too (``{key, value, effect}``), so
            they need no ``Doc`` (default: each of them needs one, or is a section of documented keys).
        rows: further rows after this key's row, as ``(key column, Doc)``, in place of its keys'
            own rows: for what is not a key of the declaration (the provider region keys after
            ``cloud``) or is documented differently there (``cpuPools``: only where a CPU pool
            differs from the ``gpuPools`` rows of the same keys). Their ``type`` and ``default``
            are given (``None`` is empty).
    """

    notes: Text = ""
    type: Text | None = None
    default: Text | None = None
    key_tail: str = ""
    on: str = ""
    includes_keys: bool = False
    rows: tuple[tuple[str, Doc], ...] = ()


def text(part: Text, defaults: ParsedDefaults) -> str:
    """A ``Text`` made a string."""
    return part if isinstance(part, str) else part(defaults)


def code(value: Any) -> str:
    """A value as the YAML a user writes, in backticks: ``true``, ``"1.35"``, ``[Standard_D4s_v5]``."""
    if isinstance(value, bool):
        shown = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        shown = str(int(value))
    elif isinstance(value, (tuple, list)):
        shown = "[" + ", ".join(str(getattr(v, "value", v)) for v in value) + "]"
    else:
        shown = str(getattr(value, "value", value))
    return f"`{shown}`"


def choices(values: Sequence[Any]) -> str:
    """``a`` \\| ``b``: a closed set of values, in table-safe Markdown."""
    return " \\| ".join(code(v) for v in values)
