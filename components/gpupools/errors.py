"""The one error type that bad input raises, before any resource is registered."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """Invalid configuration or component arguments.

    The message always has the shape ``<path>: <rule>, got <value>``, for example
    ``gpupools:gpuPools[1].maxSize: must be >= minSize (2), got 1``, so a platform
    engineer can find the offending line without reading code.

    Attributes:
        path: the config path or argument (``gpupools:gpuPools[0].name``,
            ``GpuNodePool(t4).pool.maxSize``).
        rule: what the value must satisfy.
        value: the offending value.
    """

    def __init__(self, path: str, rule: str, value: Any, hint: str | None = None) -> None:
        self.path = path
        self.rule = rule
        self.value = value
        self.hint = hint
        message = f"{path}: {rule}, got {value!r}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)
