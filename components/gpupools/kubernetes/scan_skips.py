"""Manifest-scanner findings a component accepts, justified next to the object.

``scripts/scan-manifests`` scans every Kubernetes object of the example stacks with Checkov's
Kubernetes checks and fails on any finding that is neither fixed nor skipped with a reason. A
component that accepts a finding keeps a constant map ``{check id: one-line reason}`` beside the
object it builds and puts ``skip_annotations(map)`` into that object's ``metadata.annotations``,
Checkov's own suppression format (``checkov.io/skip<N>: <CHECK_ID>=<reason>``). The reason then
travels with the object, into the cluster, the diff and the scan report.
"""

from __future__ import annotations

from collections.abc import Mapping

ANNOTATION_PREFIX = "checkov.io/skip"
"""Checkov reads ``checkov.io/skip1``, ``checkov.io/skip2``, ... from an object's annotations."""


def skip_annotations(skips: Mapping[str, str]) -> dict[str, str]:
    """``{"checkov.io/skip1": "CKV_K8S_8=<reason>", ...}``, numbered in check-id order (stable diffs).

    Raises ValueError for an empty reason or one with a line break: a skip states why, on one line.
    """
    annotations: dict[str, str] = {}
    for number, (check, reason) in enumerate(sorted(skips.items()), start=1):
        if not reason.strip() or "\n" in reason:
            raise ValueError(f"skip of {check} needs a one-line reason, got {reason!r}")
        annotations[f"{ANNOTATION_PREFIX}{number}"] = f"{check}={reason.strip()}"
    return annotations
