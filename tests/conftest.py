"""Shared pytest setup: the project root on sys.path, so ``components`` and ``stacks`` import."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
