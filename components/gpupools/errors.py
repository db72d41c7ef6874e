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


class MissingOutputError(RuntimeError):
    """A cloud output that a component reads came back absent.

    A real deployment always returns it (it is computed by the cloud on create); it is absent when a
    test's ``pulumi.runtime.Mocks`` echoes the inputs back without it. The message names the
    resource, the output and the supported mocks (``gpupools.testing.GpupoolsMocks``), which return it.

    Attributes:
        resource: the resource's type and logical name (``aws.eks.NodeGroup(t4-spot-us-west-2a)``).
        output: the output property (``resources[0].autoscalingGroups[0].name``).
    """

    def __init__(self, resource: str, output: str, got: Any, why: str) -> None:
        self.resource = resource
        self.output = output
        super().__init__(
            f"{resource}.{output}: {why}, got {got!r}. Under pulumi.runtime.set_mocks, return it from your "
            "Mocks.new_resource or pass gpupools.testing.GpupoolsMocks(), which does"
        )


def yaml_error(name: str, text: str, error: Exception) -> ConfigError:
    """One line for a YAML syntax error instead of PyYAML's traceback (issue 48, 5.): ``<file> line
    L, column C: must be valid YAML: <problem> (<context> at line L'), got '<the line>'``; an
    indentation slip is the common case, hence the hint."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    context_mark = getattr(error, "context_mark", None)
    where = f"{name} line {mark.line + 1}, column {mark.column + 1}" if mark is not None else name
    lines = text.splitlines()
    line = lines[mark.line].rstrip() if mark is not None and mark.line < len(lines) else ""
    rule = f"must be valid YAML: {problem}"
    if context and context_mark is not None:
        rule += f" ({context} at line {context_mark.line + 1})"
    return ConfigError(where, rule, line, "check the indentation: keys of one mapping start in the same column")
