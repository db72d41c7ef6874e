"""Preflight: what ``pulumi up`` would fail on, asked of the account before anything is created.

``python -m gpupools.preflight <stack> [--strict]`` reads ``Pulumi.<stack>.yaml`` with the same
loader and validation as offline synth (``gpupools.preflight.stack``), then asks the cloud, with
the caller's own credentials and read-only calls only:

* is every VM size / instance type offered in every zone of its pool, for this subscription or
  account (``gpupools.preflight.aws``, ``gpupools.preflight.azure``)?
* does the regional vCPU quota cover every pool at its maximum, Spot and on-demand apart?
* is the stack's Kubernetes version offered in the region?
* may the deployer do what ``pulumi up`` does, where the cloud can tell without creating anything?

It prints one table (``gpupools.preflight.report``) and exits 1 on any ✗. A check the cloud cannot
answer (no permission, an API the endpoint lacks) is ``?`` with the reason, and fails the run only
with ``--strict``; when no check could run at all (every row ``?``: no credentials, no subscription)
it exits 4 with one line saying why (``gpupools.preflight.credentials``). A bad stack config exits 2 with the one-line ``ConfigError`` synth prints.

The cloud SDKs are the optional extra ``gpupools[preflight]`` (boto3; azure-identity,
azure-mgmt-compute, azure-mgmt-containerservice, azure-mgmt-authorization).

Library use::

    from gpupools.preflight import preflight
    checks = preflight("aws-dev")            # list of report.Check rows
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpupools.preflight.report import Check
from gpupools.preflight.stack import Target, load_target
from gpupools.specs import Cloud


def run_checks(target: Target, **options: Any) -> list[Check]:
    """Every check of ``target`` on its cloud. ``options`` go to the cloud's checker: AWS
    ``clients=`` (a botocore client factory); Azure ``credential=`` and client options such as
    ``transport=``."""
    if target.cloud is Cloud.AWS:
        from gpupools.preflight.aws import AwsPreflight

        return AwsPreflight(target, **options).run()
    from gpupools.preflight.azure import AzurePreflight

    return AzurePreflight(target, **options).run()


def preflight(stack: str, root: Path | None = None, **options: Any) -> list[Check]:
    """Load ``Pulumi.<stack>.yaml`` from ``root`` (default: as synth) and run every check."""
    from gpupools.synth import default_root

    return run_checks(load_target(stack, root or default_root()), **options)
