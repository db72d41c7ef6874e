"""Read a stack the way ``pulumi up`` and offline synth do, without Pulumi's engine.

``Pulumi.<stack>.yaml`` (with the project's config defaults from ``Pulumi.yaml``) is read by the same
function offline synth uses (``gpupools.testing.stack_config``), turned into the strings the engine
hands a program (``gpupools.testing``'s engine conversion: scalars as strings, objects as JSON),
and validated by ``gpupools.config.parse``, the function ``config.load()`` calls inside the
program. So a bad stack config fails here with the same one-line ``ConfigError`` that offline synth
and ``pulumi up`` print, before any cloud is asked anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from gpupools import config
from gpupools.errors import ConfigError
from gpupools.specs import Cloud, StackSpec

AWS_REGION_KEY = "aws:region"
AZURE_LOCATION_KEY = "azure-native:location"
AZURE_SUBSCRIPTION_KEY = "azure-native:subscriptionId"
SUBSCRIPTION_ENV = ("AZURE_SUBSCRIPTION_ID", "ARM_SUBSCRIPTION_ID")
"""Where the Azure subscription comes from when the stack config has no ``azure-native:subscriptionId``:
``AZURE_SUBSCRIPTION_ID`` (the Azure SDKs' and CLI's variable), then ``ARM_SUBSCRIPTION_ID`` (the one
pulumi-azure-native reads, and the one ``preview.yml`` sets)."""


@dataclass(frozen=True)
class Target:
    """A validated stack and where it deploys.

    Attributes:
        stack: the stack name.
        spec: the validated config.
        region: the AWS region or Azure location.
        subscription_id: Azure only: the subscription (stack config, else the environment); ``None``
            when neither says.
    """

    stack: str
    spec: StackSpec
    region: str
    subscription_id: str | None = None

    @property
    def cloud(self) -> Cloud:
        return self.spec.cloud


def engine_values(stack: str, root: Path) -> dict[str, str]:
    """The stack's config as the engine passes it to the program. Raises ``FileNotFoundError``."""
    from gpupools.testing import _engine_config, stack_config

    return _engine_config(stack_config(stack, root))


def target_from_values(stack: str, values: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Target:
    """Validate ``values`` (the engine's config strings) the way the program does.

    The AWS region is ``aws:region``, else ``AWS_REGION``, else botocore's (``AWS_DEFAULT_REGION`` or
    the profile's), as for pulumi-aws. Azure needs
    ``azure-native:location``, exactly as ``stacks/azure.py`` does.
    """
    environ = os.environ if environ is None else environ
    cloud = config.cloud_of(values)
    if cloud is Cloud.AWS:
        region = values.get(AWS_REGION_KEY) or environ.get("AWS_REGION") or _aws_profile_region()
        spec = config.parse(values, region=values.get(AWS_REGION_KEY))
        if not region:
            raise ConfigError(AWS_REGION_KEY, "is required: set it in the stack or AWS_REGION in the environment", None)
        return Target(stack, spec, str(region))
    spec = config.parse(values, region=values.get(AZURE_LOCATION_KEY))
    location = values.get(AZURE_LOCATION_KEY)
    if not location:
        # The same error stacks/azure.py raises (load_location), so synth and preflight agree.
        raise ConfigError(AZURE_LOCATION_KEY, "is required: the Azure region (e.g. eastus)", location)
    subscription = values.get(AZURE_SUBSCRIPTION_KEY) or next((environ[k] for k in SUBSCRIPTION_ENV if environ.get(k)), None)
    return Target(stack, spec, str(location), str(subscription) if subscription else None)


def load_target(stack: str, root: Path) -> Target:
    """``Pulumi.<stack>.yaml`` in ``root``, validated. Raises ``ConfigError`` or ``FileNotFoundError``."""
    return target_from_values(stack, engine_values(stack, root))


def _aws_profile_region() -> str | None:
    """``AWS_DEFAULT_REGION`` or the profile's region, as botocore resolves it (botocore reads
    ``AWS_DEFAULT_REGION`` only; ``AWS_REGION`` is checked before this)."""
    try:
        import botocore.session
    except ImportError:
        return os.environ.get("AWS_DEFAULT_REGION")
    region = botocore.session.Session().get_config_variable("region")
    return str(region) if region else None
