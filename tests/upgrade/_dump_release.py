"""Run inside a released tree: record one stack program and write its registrations as JSON.

``python _dump_release.py <release root> <stack> <config.json> <out.json>``. Only what every
released ``gpupools.testing.Registration`` has is read (``type``, ``name``, ``urn``, ``parent``,
``custom``, ``inputs``, ``options``, ``provider``): the script runs against that release's code,
not this checkout's.
"""

import json
import runpy
import sys
from pathlib import Path

root, stack, config_file, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
sys.path[:0] = [str(root / "components"), str(root)]

from gpupools.testing import run_program  # noqa: E402  (the release's, from the path set above)

config = json.loads(config_file.read_text())
run = run_program(lambda: runpy.run_path(str(root / "__main__.py"), run_name="__main__"), config, project="gpupools", stack=stack)
records = [
    {
        "type": r.type,
        "name": r.name,
        "urn": r.urn,
        "parent": r.parent,
        "custom": r.custom,
        "inputs": r.inputs,
        "options": r.options,
        "provider": r.provider,
        "aliases": [],
    }
    for r in run.registrations
]
out.write_text(json.dumps(records, default=str))
