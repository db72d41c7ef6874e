"""A preflight without working credentials: a failure with one line saying why, not a green run.

Run as a new user or a CI job with a broken secret would: the real SDK credential chains (botocore's
default chain, azure-identity's ``DefaultAzureCredential``) with an environment that has nothing
in it, so the errors are the SDKs' own. No request leaves the machine: both chains fail before
sending (no credentials, instance metadata disabled or excluded).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from gpupools.preflight.cli import main
from gpupools.preflight.credentials import explain, why_nothing_ran
from gpupools.preflight.report import EXIT_NO_ANSWER, Check, CheckKind, Status, unknown
from gpupools.testing import PROJECT_ROOT

AWS_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ENDPOINT_URL",
)
AZURE_ENV = (
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_USERNAME",
    "AZURE_PASSWORD",
    "IDENTITY_ENDPOINT",
    "MSI_ENDPOINT",
)


@pytest.fixture
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No credential anywhere: a fresh HOME, no credential variables, no cloud CLIs on PATH."""
    for name in AWS_ENV + AZURE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(tmp_path / "no-azure-config"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path


def table_lines(stdout: str) -> list[str]:
    """The table's rows: after the title and the column header, before the tally; a row whose FOUND
    or NEEDED wraps (the table fits 160 columns) is its first line with its continuation lines
    (indented) joined to it, so each row still ends with its status."""
    lines = stdout.splitlines()
    assert lines[0].startswith("preflight ") and lines[1].startswith("CHECK")
    rows: list[str] = []
    for line in lines[2:-1]:
        if line.startswith(" ") and rows:
            head, status = rows[-1].rsplit(" ", 1)
            rows[-1] = f"{head} {line.strip()} {status}"
        else:
            rows.append(line)
    return rows


def test_aws_without_credentials_exits_4_with_one_line_naming_the_sdk_error(
    empty_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["aws-dev", "--root", str(PROJECT_ROOT)]) == EXIT_NO_ANSWER
    captured = capsys.readouterr()
    rows = table_lines(captured.out)
    assert rows and all(row.endswith("?") and "NoCredentialsError" in row for row in rows)
    assert captured.out.splitlines()[-1] == f"0 ✓  0 ✗  {len(rows)} ?"
    [line] = captured.err.splitlines()
    assert line.startswith("no check could run: no AWS credentials found (botocore NoCredentialsError); set AWS_PROFILE")


def test_azure_failing_credential_is_one_line_per_check_and_one_line_why(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import azure.identity

    real = azure.identity.DefaultAzureCredential
    # The real chain, minus managed identity (it would probe the instance metadata endpoint).
    monkeypatch.setattr(azure.identity, "DefaultAzureCredential", lambda: real(exclude_managed_identity_credential=True))
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", "00000000-0000-0000-0000-000000000000")
    caplog.set_level(logging.DEBUG)
    assert main(["azure-dev", "--root", str(PROJECT_ROOT)]) == EXIT_NO_ANSWER
    captured = capsys.readouterr()
    rows = table_lines(captured.out)
    # One line per check: every pool x zone offered, every quota, the version, the permission rows;
    # and the access row, answered from the config (the example leaves the allow-list empty: ?).
    cloud_rows = [row for row in rows if not row.startswith("access")]
    assert len(cloud_rows) == len(rows) - 1
    assert len(rows) >= 10 and all(row.endswith("?") and "ClientAuthenticationError" in row for row in cloud_rows)
    assert captured.out.splitlines()[-1] == f"0 ✓  0 ✗  {len(rows)} ?"
    [line] = captured.err.splitlines()
    assert line.startswith("no check could run: no Azure credential could get a token (azure-core ClientAuthenticationError)")
    # The SDK's per-credential warnings never reach a handler (Python would print them to stderr).
    assert [r.getMessage()[:60] for r in caplog.records if r.name.startswith("azure")] == []
    assert logging.getLogger("azure").level == logging.NOTSET  # restored after the run


def test_why_takes_the_most_common_reason_and_explains_known_errors() -> None:
    rows = [unknown(CheckKind.OFFERED, "p", "z", "n", "DescribeInstanceTypeOfferings ExpiredToken: token expired")] * 3
    rows.append(unknown(CheckKind.VERSION, "-", "-", "n", "EndpointConnectionError: Could not connect"))
    assert why_nothing_ran(rows).startswith("no check could run: the AWS credentials have expired (ExpiredToken)")
    # A quota row names its quota before "no answer:".
    quota = Check(CheckKind.QUOTA, "p", "-", "G (L-1): no answer: NoCredentialsError: Unable to locate", "n", Status.UNKNOWN)
    assert why_nothing_ran([quota]).startswith("no check could run: no AWS credentials found")
    # An unknown cause is quoted as it is.
    assert explain("no subscription: set AZURE_SUBSCRIPTION_ID") == "no subscription: set AZURE_SUBSCRIPTION_ID"
    # A name inside a longer word is not a match.
    assert explain("MyAuthFailureHandler broke") == "MyAuthFailureHandler broke"
