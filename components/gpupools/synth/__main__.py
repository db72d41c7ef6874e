"""``python -m gpupools.synth <stack>``: offline synth; ``python -m gpupools.synth diff ...``: synth diff."""

import sys

from gpupools.synth import main

sys.exit(main())
