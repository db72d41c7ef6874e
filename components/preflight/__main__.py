"""``python -m components.preflight <stack> [--strict]``: what would fail, before anything is created."""

import sys

from components.preflight.cli import main

sys.exit(main())
