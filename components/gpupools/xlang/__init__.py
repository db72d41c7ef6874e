"""gpupools as a Pulumi component package, usable from TypeScript, Go, C#, Java and YAML.

``COMPONENTS`` is what the package hosts (``package/__main__.py`` passes it to
``pulumi.provider.experimental.component_provider_host``); ``schema()`` is the package schema the
Pulumi SDK infers from it, without the Pulumi CLI. To add a component: a ``<Name>Args``
``TypedDict`` in ``gpupools.xlang.args``, a class in ``gpupools.xlang.components``, one line here,
and its example input in ``tests/test_component_package.py``. See ``docs/other-languages.md``.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi

from gpupools._version import __version__
from gpupools.xlang import components as c

PACKAGE_NAME = "gpupools"
"""The package name: type tokens are ``gpupools:index:<Name>``."""

COMPONENTS: list[type[pulumi.ComponentResource]] = [
    c.AksCluster,
    c.GpuNodePool,
    c.CpuNodePool,
    c.NapNodePools,
    c.NodeImageMaintenance,
    c.EksCluster,
    c.GpuNodeGroup,
    c.CpuNodeGroup,
    c.KarpenterNodePools,
    c.AutoModeNodePools,
    c.Karpenter,
    c.ClusterAutoscaler,
    c.NvidiaDevicePlugin,
    c.DcgmExporter,
    c.EfaDevicePlugin,
    c.PriorityExpander,
    c.GpuSmokeTest,
    c.WarmCapacity,
    c.Kueue,
    c.KueueQueues,
]
"""Every public component, one line each."""


def provider() -> Any:
    """The component provider the package runs (analysis happens here, in-process)."""
    from pulumi.provider.experimental.component import ComponentProvider

    return ComponentProvider(COMPONENTS, PACKAGE_NAME, version=__version__)


def schema() -> dict[str, Any]:
    """The package schema (what ``pulumi package get-schema`` would print)."""
    return json.loads(provider().schema)


def host() -> None:
    """Serve the package (the entry point ``pulumi package add`` runs)."""
    from pulumi.provider.experimental import component_provider_host

    component_provider_host(COMPONENTS, PACKAGE_NAME, version=__version__)
