"""``gpupools:cluster.apiAllowedCidrs`` (both clouds) and ``gpupools:cluster.admins`` (AWS): parsing and errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from gpupools import config
from gpupools.errors import ConfigError

from tests.test_config import AWS, AZURE


def _cluster(base: dict[str, Any], **keys: Any) -> dict[str, Any]:
    result = copy.deepcopy(base)
    result["gpupools:cluster"].update(keys)
    return result


def test_defaults_are_empty_on_both_clouds() -> None:
    for raw in (AZURE, AWS):
        cluster = config.parse(raw).cluster
        assert cluster.api_allowed_cidrs == ()
        assert cluster.admins == ()


def test_cidrs_and_admins_are_kept_in_order() -> None:
    aws = config.parse(
        _cluster(
            AWS,
            apiAllowedCidrs=["203.0.113.0/24", "198.51.100.7/32"],
            admins=["arn:aws:iam::123456789012:role/ci-deployer", "arn:aws-us-gov:iam::123456789012:user/ops/alice"],
        )
    ).cluster
    assert aws.api_allowed_cidrs == ("203.0.113.0/24", "198.51.100.7/32")
    assert aws.admins[1] == "arn:aws-us-gov:iam::123456789012:user/ops/alice"
    assert config.parse(_cluster(AZURE, apiAllowedCidrs=["203.0.113.0/24"])).cluster.api_allowed_cidrs == ("203.0.113.0/24",)


@pytest.mark.parametrize(
    ("value", "path", "rule"),
    [
        (["203.0.113.7"], "gpupools:cluster.apiAllowedCidrs[0]", "CIDR notation"),
        (["203.0.113.1/24"], "gpupools:cluster.apiAllowedCidrs[0]", "no host bits"),
        (["2001:db8::/32"], "gpupools:cluster.apiAllowedCidrs[0]", "IPv4"),
        (["10.0.0.0/8", "10.0.0.0/8"], "gpupools:cluster.apiAllowedCidrs[1]", "unique"),
        ("10.0.0.0/8", "gpupools:cluster.apiAllowedCidrs", "list"),
    ],
)
def test_bad_cidrs_name_the_entry(value: Any, path: str, rule: str) -> None:
    with pytest.raises(ConfigError) as error:
        config.parse(_cluster(AZURE, apiAllowedCidrs=value))
    assert error.value.path == path
    assert rule in str(error.value)


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::123456789012:group/admins",
        "arn:aws:iam::12345:role/ci",
        "arn:aws:sts::123456789012:assumed-role/ci/session",
        "ci-deployer",
    ],
)
def test_admins_must_be_role_or_user_arns(arn: str) -> None:
    with pytest.raises(ConfigError) as error:
        config.parse(_cluster(AWS, admins=[arn]))
    assert error.value.path == "gpupools:cluster.admins[0]"
    assert "IAM role or user ARN" in str(error.value)


def test_admins_are_aws_only() -> None:
    with pytest.raises(ConfigError) as error:
        config.parse(_cluster(AZURE, admins=["arn:aws:iam::123456789012:role/ci"]))
    assert error.value.path == "gpupools:cluster.admins"
    assert "AWS only" in str(error.value)
