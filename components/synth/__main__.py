"""``python -m components.synth <stack>``: offline synth; ``python -m components.synth diff ...``: synth diff."""

import sys

from components.synth import main

sys.exit(main())
