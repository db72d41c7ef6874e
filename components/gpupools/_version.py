"""The version of gpupools: the one place it is written (``pyproject.toml`` reads it for the wheel)."""

__version__ = "0.3.0"
