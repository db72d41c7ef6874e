"""Kubernetes resource quantities in the form the API server returns them.

The API server stores a CRD field's quantity as written, but a controller that decodes the object
into Go types and writes it back re-serializes every quantity with ``resource.Quantity.String()``.
Kueue's ClusterQueue controller does, when it adds its finalizer (``kueue.x-k8s.io/resource-in-use``,
a full ``Update``: kubernetes-sigs/kueue v0.19.2 ``pkg/controller/core/clusterqueue_controller.go``),
so a ClusterQueue written with ``nominalQuota: 4194304Mi`` reads back as ``4Ti`` (observed in the sim),
and the next ``pulumi up`` shows an update for a change nobody made. Written in the canonical form,
the read-back equals what was written.

``canonical`` is ``String()`` of k8s.io/apimachinery v0.36.3 ``pkg/api/resource`` for the quantities
gpupools writes (a plain or fractional decimal number with an optional SI or binary suffix):
``quantity.go`` ``CanonicalizeBytes`` and ``amount.go`` ``AsCanonicalBytes`` /
``AsCanonicalBase1024Bytes``:

* zero is ``0``;
* a binary suffix (``Ki`` ... ``Ei``) keeps a binary form when the value is a whole number of at
  least 1024 in magnitude, with the largest suffix that keeps it whole (``262144Mi`` -> ``256Gi``,
  ``1536Mi`` stays); otherwise it is written as a decimal SI quantity (``512Ki`` stays ``512Ki``:
  524288 is whole and >= 1024; ``0.5Ki`` -> ``512``);
* a decimal quantity (no suffix or ``n u m k M G T P E``) moves every factor of ten into the
  exponent and then takes the SI suffix at or below it, a multiple of three (``1000`` -> ``1k``,
  ``1500`` stays, ``0.5`` -> ``500m``).

Exponent forms (``1e3``) and values finer than a nano-unit (which the API server rounds up) are
refused: gpupools writes neither.
"""

from __future__ import annotations

import re
from fractions import Fraction

BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_FORM = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?\Z")


def _value(text: str) -> tuple[Fraction, bool]:
    """(exact value, written with a binary suffix); ValueError for another form."""
    match = _FORM.match(text)
    if match is None:
        raise ValueError(f"not a Kubernetes quantity gpupools writes (a number with an optional SI or binary suffix): {text!r}")
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
    value = Fraction(number) * (2 ** BINARY[suffix] if suffix in BINARY else Fraction(10) ** DECIMAL[suffix])
    if (value * 10**9).denominator != 1:
        raise ValueError(f"finer than a nano-unit (the API server rounds it up): {text!r}")
    return (-value if sign == "-" else value), suffix in BINARY


def _decimal(value: Fraction) -> str:
    """``AsCanonicalBytes`` with a DecimalSI suffix: every factor of ten into the exponent, the
    exponent down to a multiple of three."""
    mantissa, exponent = value * 10**9, -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa / 10, exponent + 1
    while exponent % 3:
        mantissa, exponent = mantissa * 10, exponent - 1
    if exponent > 18:
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    suffix = next(s for s, e in DECIMAL.items() if e == exponent)
    return f"{int(mantissa)}{suffix}"


def canonical(text: str) -> str:
    """``text`` as apimachinery's ``Quantity.String()`` writes it (module docstring)."""
    value, binary = _value(text)
    if value == 0:
        return "0"
    if binary and abs(value) >= 1024 and value.denominator == 1:
        amount, exponent = int(value), 0
        while amount % 1024 == 0 and exponent < 60:
            amount, exponent = amount // 1024, exponent + 10
        suffix = next((s for s, e in BINARY.items() if e == exponent), "")
        return f"{amount}{suffix}"
    return _decimal(value)


def is_canonical(text: str) -> bool:
    return canonical(text) == text


def amount(text: str) -> Fraction:
    """The exact value of a quantity (``"4Ti"`` -> 4 x 2**40, ``"500m"`` -> 1/2), to add or compare them."""
    return _value(text)[0]
