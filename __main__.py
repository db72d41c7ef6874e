"""Pulumi entry point: run the stack program of the cloud named by ``gpupools:cloud``.

Everything else (config parsing, validation, resources) lives in the ``gpupools`` package
(``components/gpupools``) and in ``stacks``.
"""

import importlib

from gpupools.config import load_cloud

importlib.import_module(f"stacks.{load_cloud().value}").main()
