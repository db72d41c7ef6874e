"""Shared pytest setup: the project root and ``components/`` on sys.path, so ``stacks`` and ``gpupools``
import from this checkout (ahead of any installed copy)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT / "components", ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
