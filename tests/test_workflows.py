"""preview.yml and deploy.yml can reach an AKS cluster for the whole job: kubelogin is installed
(GitHub runners do not ship it: actions/runner-images #14752) and logs in with workload identity
from a token file kept fresh, because `az login`'s federated token expires in minutes and cannot be
renewed (Azure/azure-cli #28708, Azure/login #372) while a cluster takes longer to create. kubelogin
takes AAD_LOGIN_METHOD and the AZURE_* variables from the environment over the kubeconfig's
`--login` (Azure/kubelogin pkg/internal/token/options.go, UpdateFromEnv)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.testing import PROJECT_ROOT

WORKFLOWS = {"preview.yml": "preview", "deploy.yml": "deploy"}


def steps(name: str) -> list[dict[str, Any]]:
    workflow = yaml.safe_load(Path(PROJECT_ROOT, ".github/workflows", name).read_text())
    return list(workflow["jobs"][WORKFLOWS[name]]["steps"])


def index_of(all_steps: list[dict[str, Any]], predicate: Any) -> int:
    found = [i for i, step in enumerate(all_steps) if predicate(step)]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_kubelogin_is_installed_at_a_pinned_version_for_azure_stacks(name: str) -> None:
    all_steps = steps(name)
    i = index_of(all_steps, lambda s: str(s.get("uses", "")).startswith("azure/use-kubelogin@"))
    step = all_steps[i]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", step["with"]["kubelogin-version"])  # never "latest"
    assert step["if"] == "matrix.cloud == 'azure'"
    pulumi = index_of(all_steps, lambda s: str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert i < pulumi


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_workload_identity_login_uses_a_token_file_refreshed_in_the_background(name: str) -> None:
    all_steps = steps(name)
    i = index_of(all_steps, lambda s: "AZURE_FEDERATED_TOKEN_FILE" in str(s.get("run", "")))
    step = all_steps[i]
    script = step["run"]
    assert step["if"] == "matrix.cloud == 'azure'"
    assert step["env"]["AUDIENCE"] == "api://AzureADTokenExchange"  # Entra ID's audience for GitHub federation
    assert "ACTIONS_ID_TOKEN_REQUEST_URL" in script and "ACTIONS_ID_TOKEN_REQUEST_TOKEN" in script
    loop = re.search(r"while sleep (\d+); do fetch_token", script)
    assert loop and int(loop.group(1)) <= 120, "refresh well inside a GitHub OIDC token's lifetime"
    assert re.search(r"done\).*&\s*$", script, re.M), "the refresh loop runs in the background"
    exported = set(re.findall(r'echo "([A-Z_]+)=', script))
    assert exported == {"AAD_LOGIN_METHOD", "AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE"}
    assert 'echo "AAD_LOGIN_METHOD=workloadidentity"' in script and '>> "$GITHUB_ENV"' in script
    pulumi = index_of(all_steps, lambda s: str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert i < pulumi


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_the_job_may_request_oidc_tokens(name: str) -> None:
    workflow = yaml.safe_load(Path(PROJECT_ROOT, ".github/workflows", name).read_text())
    permissions = {**workflow.get("permissions", {}), **workflow["jobs"][WORKFLOWS[name]].get("permissions", {})}
    assert permissions.get("id-token") == "write"


def test_preflight_gates_the_preview_and_nothing_swallows_its_exit_status() -> None:
    """A preflight that could ask nothing (a broken CI credential) exits 4: the step must fail the job."""
    all_steps = steps("preview.yml")
    i = index_of(all_steps, lambda s: "gpupools.preflight" in str(s.get("run", "")))
    step = all_steps[i]
    assert not step.get("continue-on-error") and "if" not in step
    [command] = [line for line in step["run"].splitlines() if "gpupools.preflight" in line]
    assert not re.search(r"\|\||; *true|set \+e", step["run"]), step["run"]
    assert command.strip().startswith(".venv/bin/python -m gpupools.preflight")
    pulumi = index_of(all_steps, lambda s: str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert i < pulumi
