"""Quantities in the form the API server returns (``gpupools.quantity``), for every example stack.

Issue 39: a second ``sim deploy`` of ``aws-training-dev`` updated the ClusterQueue
(``nominalQuota: "256Gi" => "262144Mi"``): Kueue's ClusterQueue controller writes the object back
(its finalizer) re-serialized with apimachinery's ``Quantity.String()``, so anything but the
canonical form comes back changed (``tests/sim/test_queue_objects.py`` shows it). The
expected strings below are apimachinery's own (k8s.io/apimachinery v0.36.3
``pkg/api/resource/quantity_test.go``: ``TestQuantityParseEmit``, ``TestQuantityString`` with its
alternates, ``TestQuantityParseZero``), not this program's.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from gpupools.quantity import canonical, is_canonical
from gpupools.sim import objects
from gpupools.testing import PROJECT_ROOT, stack_config

from tests.examples import EXAMPLE_STACKS

STACKS = list(EXAMPLE_STACKS)

APIMACHINERY = [
    # TestQuantityParseEmit
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    # TestQuantityString: (alternate, expect)
    ("307200Ki", "300Mi"),
    ("1025024Mi", "1001Gi"),
    ("1024Gi", "1Ti"),
    ("6Ki", "6Ki"),
    ("5000m", "5"),
    ("0.5", "500m"),
    ("0.001T", "1G"),
    ("1000u", "1m"),
    ("1.08", "1080m"),
    ("1080000000n", "1080m"),
    ("300M", "300M"),
    ("1234567M", "1234567M"),
    ("3k", "3k"),
    ("00", "0"),
    ("80u", "80u"),
    # TestQuantityParseZero
    ("0", "0"),
]


@pytest.mark.parametrize(("written", "returned"), APIMACHINERY)
def test_canonical_is_apimachinerys_string(written: str, returned: str) -> None:
    assert canonical(written) == returned


def test_exponent_forms_are_refused() -> None:
    with pytest.raises(ValueError):
        canonical("1e3")


QUANTITY_MAPS = {"requests", "limits", "capacity"}
"""Keys whose value maps resource names to quantities (container resources, a NodePool's limits, a
NodeOverlay's capacity)."""
QUANTITY_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit", "sizeLimit"}
"""Keys whose value is one quantity (Kueue's quotas, an emptyDir's size)."""


def quantities(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, quantity) of every quantity in a manifest."""
    if isinstance(value, dict):
        for key, item in value.items():
            at = f"{path}.{key}"
            if key in QUANTITY_MAPS and isinstance(item, dict):
                yield from ((f"{at}.{k}", str(v)) for k, v in item.items() if not isinstance(v, (dict, list)))
            elif key in QUANTITY_KEYS and isinstance(item, (str, int)):
                yield at, str(item)
            else:
                yield from quantities(item, at)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from quantities(item, f"{path}[{index}]")


def non_canonical(loaded: objects.StackObjects) -> list[str]:
    return [
        f"{objects.describe(m)} {path}: {text!r} (the API server returns {canonical(text)!r})"
        for m in loaded.manifests
        for path, text in quantities(m)
        if not is_canonical(text)
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_every_quantity_a_stack_writes_is_canonical(stack: str) -> None:
    loaded = objects.load(stack)
    found = [q for m in loaded.manifests for q in quantities(m)]
    assert found  # every stack writes some (its DaemonSets' resources at least)
    assert non_canonical(loaded) == []


def test_the_training_stacks_nominal_quotas_are_canonical_with_teams() -> None:
    # Teams split the quota: a team's share of a flavour it takes no GPUs from is 0 (Quota()), which
    # the API server returns as "0", not "0Mi".
    config = stack_config("aws-training-dev", PROJECT_ROOT)
    queueing = {**config["gpupools:queueing"], "teams": [{"name": "vision", "gpus": 8, "namespaces": ["vision"]}]}
    loaded = objects.load("aws-training-dev", overrides={"gpupools:queueing": queueing})
    quotas = [text for m in loaded.manifests for path, text in quantities(m) if path.endswith("nominalQuota")]
    assert "0" in quotas
    assert non_canonical(loaded) == []
