"""Make the AKS user kubeconfig usable by a non-interactive ``pulumi up``.

With local accounts disabled, the only credentials are Entra ID tokens obtained by ``kubelogin``.
``listClusterUserCredential`` with ``format=exec`` returns a kubeconfig whose exec plugin runs
``kubelogin get-token --login devicecode ...``: every Kubernetes call from the Pulumi engine would
stop at a device-code prompt nobody sees (pulumi-azure-native#2399, Azure/AKS#4990). This module
rewrites the exec arguments exactly as ``kubelogin convert-kubeconfig -l azurecli`` does
(``get-token --login azurecli --server-id <id>``), keeping ``--environment`` when AKS sets it (the
Azure cloud the token comes from: ``AzurePublicCloud``, ``AzureChinaCloud``, ``AzureUSGovernmentCloud``;
kubelogin's ``get-token`` flag, Azure/kubelogin ``pkg/internal/token/options.go``; without it
kubelogin asks the public cloud, which fails in a sovereign one), so kubelogin reuses the ``az login`` session of
whoever runs Pulumi. kubelogin's environment variables (``AAD_LOGIN_METHOD`` and friends) still
override the login method at run time, e.g. for a service principal or workload identity in CI.

Pure: string in, string out.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpupools.errors import ConfigError

AZURE_CLI = "azurecli"
DEVICE_CODE = "devicecode"
LOGIN_MODES = (AZURE_CLI, DEVICE_CODE)
"""``azurecli`` (default): reuse the deployer's ``az login``. ``devicecode``: keep AKS's kubeconfig
unchanged (interactive; only for people who know they want it)."""


def _arg_after(args: list[Any], flag: str) -> str | None:
    for index, arg in enumerate(args[:-1]):
        if arg == flag:
            return str(args[index + 1])
    return None


def with_kubelogin_login(kubeconfig: str, login: str = AZURE_CLI) -> str:
    """``kubeconfig`` with every kubelogin exec user switched to ``login``.

    Users that do not run kubelogin are left alone. With ``devicecode`` the input is returned as is.

    Raises:
        ConfigError: for an unknown login mode, or a kubelogin user without ``--server-id`` (which
            every login mode needs; AKS always sets it).
    """
    if login not in LOGIN_MODES:
        raise ConfigError("kubeloginLogin", "must be one of " + ", ".join(LOGIN_MODES), login)
    if login == DEVICE_CODE:
        return kubeconfig
    document = yaml.safe_load(kubeconfig)
    for entry in document.get("users") or []:
        exec_config = (entry.get("user") or {}).get("exec")
        if not exec_config or "kubelogin" not in str(exec_config.get("command", "")).lower():
            continue
        args = list(exec_config.get("args") or [])
        server_id = _arg_after(args, "--server-id")
        if server_id is None:
            raise ConfigError(f"kubeconfig.users[{entry.get('name')}].exec.args", "must contain --server-id", args)
        environment = _arg_after(args, "--environment")
        kept = ["--environment", environment] if environment is not None else []
        exec_config["args"] = ["get-token", *kept, "--login", login, "--server-id", server_id]
    return yaml.safe_dump(document, sort_keys=False)
