"""``python -m gpupools.sim``: see ``gpupools.sim``."""

import sys

from gpupools.sim.cli import main

sys.exit(main())
