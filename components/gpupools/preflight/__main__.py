"""``python -m gpupools.preflight <stack> [--strict]``: what would fail, before anything is created."""

import sys

from gpupools.preflight.cli import main

sys.exit(main())
