"""Entry point of the gpupools policy pack: ``pulumi preview --policy-pack policy``.

The only place that constructs ``PolicyPack``: its constructor starts the analyzer's gRPC server
and blocks, so tests import ``gpupools_policy.pack`` / ``gpupools_policy.rules`` instead.

The rules read the project's catalog and conventions (``gpupools.catalog``,
``gpupools.conventions``: plain data, no cloud SDKs). When ``gpupools`` is not installed in
the pack's environment, the package of the repository this pack sits in (``components/``) is put
on the import path.
"""

import sys
from pathlib import Path

try:
    import gpupools.conventions  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "components"))

from gpupools_policy.pack import PACK_ENFORCEMENT, PACK_NAME, POLICIES
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=PACK_ENFORCEMENT)
