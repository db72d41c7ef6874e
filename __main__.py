"""Pulumi entry point: run the stack program of the cloud named by ``gpupools:cloud``.

Everything else (config parsing, validation, resources) lives in ``components`` and ``stacks``.
"""

import importlib

from components.config import load_cloud

importlib.import_module(f"stacks.{load_cloud().value}").main()
