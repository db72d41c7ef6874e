"""The cloud SDKs are an optional extra (``gpupools[preflight]``): the Pulumi program does not need
them, so a missing one is reported with the command that installs it, not a traceback."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = "pip install 'gpupools[preflight]' (or, in a checkout: pip install -e '.[preflight]')"

AWS_MODULES = ("boto3", "botocore")
AZURE_MODULES = (
    "azure.identity",
    "azure.mgmt.compute",
    "azure.mgmt.containerservice",
    "azure.mgmt.authorization",
)


class MissingSdkError(RuntimeError):
    """A cloud SDK the preflight needs is not installed; the message says how to install it."""

    def __init__(self, cloud: str, modules: list[str]) -> None:
        self.modules = modules
        names = ", ".join(m.replace(".", "-") for m in modules)
        super().__init__(f"the {cloud} preflight needs {names}, which is not installed: {INSTALL_HINT}")


def require(cloud: str, modules: tuple[str, ...]) -> dict[str, ModuleType]:
    """Import ``modules``; raises ``MissingSdkError`` naming every one that is missing."""
    found: dict[str, ModuleType] = {}
    missing = []
    for name in modules:
        try:
            found[name] = importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise MissingSdkError(cloud, missing)
    return found
