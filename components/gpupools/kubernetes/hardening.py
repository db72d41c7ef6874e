"""The container security context every container gpupools runs gets, in one place."""

from __future__ import annotations

from typing import Any


def locked_down_security_context() -> dict[str, Any]:
    """No privilege escalation, every Linux capability dropped, the runtime's default seccomp profile.

    A fresh dict each call, so one object's spec can never alias another's. Neither the device
    plugin nor the CUDA sample needs a capability: the plugin only writes a socket under the
    kubelet's device-plugins directory (as root, which the image requires), and GPU access comes
    from the container runtime, not from privileges.
    """
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
