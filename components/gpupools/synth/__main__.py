"""``python -m gpupools.synth <stack>``: offline synth; ``python -m gpupools.synth diff ...``: synth diff.

The dispatch lives here, not in ``gpupools.synth``, so that ``gpupools.synth.diff`` depends on
``gpupools.synth`` one way (no import circle, ``tests/test_import_cycles.py``).
"""

import sys


def run(argv: list[str]) -> int:
    """``diff ...`` goes to ``gpupools.synth.diff``; anything else to ``gpupools.synth``."""
    if argv[:1] == ["diff"]:
        from gpupools.synth.diff import main as diff_main

        return diff_main(argv[1:])
    from gpupools.synth import main

    return main(argv)


sys.exit(run(sys.argv[1:]))
