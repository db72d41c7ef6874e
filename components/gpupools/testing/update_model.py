"""A model of what ``pulumi up`` sends to the cloud when it updates an autoscaled pool.

The recording mock runtime captures what a program *registers*; it runs neither Pulumi's engine nor
the providers, so it cannot say what an update *sends*. Capacity safety depends on exactly that,
so this module models the few steps between the two, each after the source it follows (read at
pulumi/pulumi v3.259, pulumi/pulumi-terraform-bridge of 2026-08, pulumi/pulumi-azure-native,
hashicorp/terraform-provider-aws):

* ``refresh_requested``: whether ``pulumi up``/``preview`` refreshes first: an explicit
  ``--refresh[=bool]`` wins, else the project's ``options.refresh: always``
  (pulumi/pulumi ``pkg/cmd/pulumi/operations/io.go``, ``getRefreshOption``).
* ``bridge_refresh`` / ``azure_native_refresh``: a refresh replaces the stored inputs with the
  inputs the provider's ``Read`` returns (pulumi/pulumi ``pkg/resource/deploy/step.go``,
  ``RefreshStep.Apply``: "If the provider specified new inputs for this resource, pick them up
  now"). pulumi-aws (bridged) returns the old inputs with every key they have set to the read value
  (pulumi-terraform-bridge ``pkg/tfbridge/provider.go`` ``Read`` -> ``schema.go``
  ``ExtractInputsFromOutputs`` with ``isRefresh``: ``extractInputsObject``/``extractInputs``);
  pulumi-azure-native returns the old inputs with the *changes* between the old and the new
  outputs applied (``provider/pkg/provider/provider.go`` ``Read``: ``applyDiff`` /
  ``applyValueDiff`` of the two output projections).
* ``reset_ignored``: on update, every ``ignoreChanges`` path of the new inputs takes the stored
  old input's value, or is deleted when the old inputs lack it (pulumi/pulumi
  ``pkg/resource/deploy/step_generator.go`` ``processIgnoreChanges`` ->
  ``sdk/go/common/resource/properties_path.go`` ``PropertyPath.Reset``).
* ``eks_update_request`` / ``eks_check``: terraform-provider-aws sends ``UpdateNodegroupConfig``
  with ``ScalingConfig`` whole (min, max *and* desired, from the planned inputs) whenever
  ``scaling_config`` differs from the prior state, i.e. the stored outputs
  (``internal/service/eks/node_group.go``, ``resourceNodeGroupUpdate``,
  ``expandNodegroupScalingConfig``); EKS rejects a desired size outside ``[minSize, maxSize]``
  ("Minimum capacity 8 can't be greater than desired size 4": terraform-aws-modules/terraform-aws-eks
  #3306; "desiredSize can't be greater than maxSize").
* ``azure_native_put``: pulumi-azure-native updates a resource whose inputs changed with one PUT
  whose body is built from the new inputs (``provider.go`` ``Update`` -> ``defaultUpdate`` ->
  ``PrepareAzureRESTBody(id, inputs)``), ``count`` included.

What is not modelled: anything that does not decide the sent count (request shapes, waits, the
other properties' diffs). Property paths are the engine's: ``a.b``, ``a[0].b``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class Stored:
    """One resource as the stack's state holds it: the inputs Pulumi stored and the provider's last read."""

    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]


class EksRejectedError(Exception):
    """``UpdateNodegroupConfig`` answered ``InvalidParameterException``."""


def parse_path(path: str) -> list[str | int]:
    """``"agentPoolProfiles[0].count"`` -> ``["agentPoolProfiles", 0, "count"]``."""
    return [int(index) if index else key for key, index in _PATH_PART.findall(path)]


def get_path(value: Any, path: str) -> Any:
    """The value at ``path``; KeyError/IndexError when it is not there."""
    for part in parse_path(path):
        value = value[part]
    return value


def set_path(value: Any, path: str, new: Any) -> Any:
    """A deep copy of ``value`` with ``path`` set to ``new`` (the containers on the way must exist)."""
    result = copy.deepcopy(value)
    parts = parse_path(path)
    target = result
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = new
    return result


def refresh_requested(project: Mapping[str, Any], flag: bool | None = None) -> bool:
    """Whether the operation refreshes first: ``flag`` is ``--refresh``/``--refresh=false`` (None:
    not given), ``project`` the parsed ``Pulumi.yaml``."""
    if flag is not None:
        return flag
    options = project.get("options") or {}
    return options.get("refresh") == "always"


def reset_ignored(new_inputs: Mapping[str, Any], old_inputs: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """The inputs the engine hands the provider: each ignored path reset to its old value."""
    result: dict[str, Any] = copy.deepcopy(dict(new_inputs))
    for path in paths:
        parts = parse_path(path)
        old: Any = old_inputs
        new: Any = result
        for part in parts[:-1]:
            old = old[part] if _has(old, part) else None
            if not _has(new, part):
                break  # PropertyPath.Reset never creates intermediate locations
            new = new[part]
        else:
            leaf = parts[-1]
            if _has(old, leaf):
                new[leaf] = copy.deepcopy(old[leaf])
            elif isinstance(new, dict):
                new.pop(leaf, None)
    return result


def _has(container: Any, part: str | int) -> bool:
    if isinstance(part, int):
        return isinstance(container, list) and 0 <= part < len(container)
    return isinstance(container, dict) and part in container


def _extract_inputs(old_input: Any, new_state: Any) -> Any:
    """pulumi-terraform-bridge ``extractInputs`` on refresh: keep the old input's shape, take the read values."""
    if isinstance(old_input, dict) and isinstance(new_state, dict):
        return {k: _extract_inputs(v, new_state[k]) for k, v in old_input.items() if k in new_state}
    if isinstance(old_input, list) and isinstance(new_state, list):
        return [_extract_inputs(o, n) for o, n in zip(old_input, new_state, strict=False)]
    return copy.deepcopy(new_state)


def bridge_refresh(stored: Stored, read: Mapping[str, Any]) -> Stored:
    """A refresh of a pulumi-aws resource whose provider read returns ``read`` (its outputs)."""
    return Stored(inputs=_extract_inputs(dict(stored.inputs), dict(read)), outputs=copy.deepcopy(dict(read)))


def _apply_value_diff(base: Any, old: Any, new: Any) -> Any:
    """pulumi-azure-native ``applyValueDiff``: only what changed between ``old`` and ``new`` reaches ``base``."""
    if isinstance(base, dict) and isinstance(old, dict) and isinstance(new, dict):
        return _apply_diff(base, old, new)
    if isinstance(base, list) and isinstance(old, list) and isinstance(new, list):
        return [
            _apply_value_diff(base[i], old[i], item) if i < len(base) and i < len(old) else copy.deepcopy(item)
            for i, item in enumerate(new)
        ]
    return copy.deepcopy(new)


def _apply_diff(values: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """pulumi-azure-native ``applyDiff``: deletes, adds and updates of ``old`` -> ``new`` applied to ``values``."""
    result = {k: copy.deepcopy(v) for k, v in values.items() if not (k in old and k not in new)}
    for key, value in new.items():
        if key not in old:
            result[key] = copy.deepcopy(value)
        elif old[key] != value:
            result[key] = _apply_value_diff(values[key], old[key], value) if key in values else copy.deepcopy(value)
    return result


def azure_native_refresh(stored: Stored, read: Mapping[str, Any]) -> Stored:
    """A refresh of a pulumi-azure-native resource whose GET returns ``read`` (input-shaped outputs)."""
    return Stored(inputs=_apply_diff(stored.inputs, stored.outputs, read), outputs=copy.deepcopy(dict(read)))


def eks_update_request(stored: Stored, new_inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``ScalingConfig`` of the ``UpdateNodegroupConfig`` call, or None when it is not sent."""
    planned = dict(new_inputs.get("scalingConfig") or {})
    prior = dict(stored.outputs.get("scalingConfig") or {})
    keys = ("minSize", "maxSize", "desiredSize")
    if all(planned.get(k) == prior.get(k) for k in keys):
        return None
    return {k: planned[k] for k in keys}


OPTIONAL_COMPUTED_NODE_GROUP_BLOCKS = ("nodeRepairConfig", "updateConfig")
"""``aws_eks_node_group`` blocks that are ``Optional: true, Computed: true`` in the provider's schema
(terraform-provider-aws ``internal/service/eks/node_group.go``, ``resourceNodeGroup``: ``node_repair_config``,
``update_config``). For such a block the plan keeps the prior state's value when the configuration
leaves it out (terraform-plugin-sdk v2: a Computed attribute absent from the config is not a diff)."""


def eks_node_group_config_update(stored: Stored, new_inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The Optional+Computed members of the ``UpdateNodegroupConfig`` call an update sends
    (``resourceNodeGroupUpdate``: each block only ``if d.HasChange(...)``): a block left out of the
    new inputs plans as the stored value, so nothing is sent for it; a block present and different
    from the stored outputs is sent whole. Empty when nothing is sent."""
    sent: dict[str, Any] = {}
    for key in OPTIONAL_COMPUTED_NODE_GROUP_BLOCKS:
        prior = stored.outputs.get(key)
        planned = new_inputs[key] if new_inputs.get(key) is not None else prior
        if planned != prior:
            sent[key] = copy.deepcopy(planned)
    return sent


def eks_check(scaling: Mapping[str, Any]) -> None:
    """EKS's validation of a scaling config; raises ``EksRejectedError`` with EKS's own wording."""
    low, high, desired = scaling["minSize"], scaling["maxSize"], scaling["desiredSize"]
    if low > desired:
        raise EksRejectedError(f"Minimum capacity {low} can't be greater than desired size {desired}")
    if desired > high:
        raise EksRejectedError("desiredSize can't be greater than maxSize")


def azure_native_put(stored: Stored, new_inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The PUT body of an update, or None when the inputs did not change (no update)."""
    if dict(new_inputs) == dict(stored.inputs):
        return None
    return copy.deepcopy(dict(new_inputs))
