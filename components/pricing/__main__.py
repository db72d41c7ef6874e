"""``python -m components.pricing refresh ...`` (see ``components.pricing.refresh``)."""

import sys

from components.pricing.refresh import main

sys.exit(main())
