"""``python -m gpupools.pricing refresh ...`` (see ``gpupools.pricing.refresh``) and
``python -m gpupools.pricing import-coroot FILE ...`` (see ``gpupools.pricing.import_coroot``)."""

import sys

if sys.argv[1:2] == ["import-coroot"]:
    from gpupools.pricing.import_coroot import main

    sys.exit(main(sys.argv[2:]))

from gpupools.pricing.refresh import main  # noqa: E402

sys.exit(main())
