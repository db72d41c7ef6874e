"""``python -m gpupools.pricing refresh ...`` (see ``gpupools.pricing.refresh``) and
``python -m gpupools.pricing import-coroot FILE ...`` (see ``gpupools.pricing.import_coroot``)."""

import sys

from gpupools.pricing import import_coroot, refresh

if sys.argv[1:2] == ["import-coroot"]:
    sys.exit(import_coroot.main(sys.argv[2:]))
sys.exit(refresh.main())
