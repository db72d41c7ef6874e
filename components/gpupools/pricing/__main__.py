"""``python -m gpupools.pricing refresh ...`` (see ``gpupools.pricing.refresh``)."""

import sys

from gpupools.pricing.refresh import main

sys.exit(main())
