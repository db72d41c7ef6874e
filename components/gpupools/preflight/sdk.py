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


def distribution(module: str) -> str:
    """The package (on PyPI) that installs ``module``: Azure's namespace packages are named after
    the module (``azure.mgmt.compute`` -> ``azure-mgmt-compute``); any other dotted module is part of
    its top-level package (``botocore.config`` -> ``botocore``, not a ``botocore-config`` that does
    not exist)."""
    return module.replace(".", "-") if module.startswith("azure.") else module.split(".", 1)[0]


class MissingSdkError(RuntimeError):
    """A cloud SDK the preflight needs is not installed; the message names its packages (as pip
    installs them, ``distribution``) and how to install them."""

    def __init__(self, cloud: str, modules: list[str]) -> None:
        self.modules = modules
        self.packages = list(dict.fromkeys(distribution(m) for m in modules))
        names = ", ".join(self.packages)
        verb = "is" if len(self.packages) == 1 else "are"
        super().__init__(f"the {cloud} preflight needs {names}, which {verb} not installed: {INSTALL_HINT}")


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
