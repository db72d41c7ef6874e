"""The Kubernetes version tables: fresh, consistent with each other and with the pins that depend
on them, and the rules built on them (components/gpupools/versions.py)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from gpupools import config
from gpupools.errors import ConfigError
from gpupools.specs import Cloud
from gpupools.testing import stack_config
from gpupools.versions import (
    AKS_VERSIONS,
    CLUSTER_AUTOSCALER_IMAGE_TAGS,
    DEFAULT_KUBERNETES_VERSION,
    EKS_VERSIONS,
    VERSION_TABLES,
    KubernetesRelease,
    VersionTable,
    check_minor,
    minor_key,
    newest_common_minor,
)

MAX_AGE = timedelta(days=180)
TABLES = [AKS_VERSIONS, EKS_VERSIONS]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.service)
def test_table_was_checked_in_the_last_180_days(table: VersionTable) -> None:
    age = date.today() - table.checked
    assert age <= MAX_AGE, (
        f"{table.service} version table last checked {table.checked} ({age.days} days ago, limit {MAX_AGE.days}): "
        f"{table.refresh}. Source: {table.source}"
    )


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.service)
def test_table_is_ordered_and_each_release_ends_after_it_starts(table: VersionTable) -> None:
    minors = [r.minor for r in table.releases]
    assert minors == sorted(minors, key=minor_key) and len(set(minors)) == len(minors)
    for release in table.releases:
        assert release.ga < release.end_of_support
        # AKS supports a minor for 12 months, EKS for 14 (both release calendars); allow a month of slack.
        assert timedelta(days=300) < release.end_of_support - release.ga < timedelta(days=460), release
    assert table.source.startswith("https://") and table.refresh


def test_default_is_the_newest_minor_both_clouds_support_on_the_check_date() -> None:
    checked = min(t.checked for t in TABLES)
    assert newest_common_minor(tuple(TABLES), checked) == DEFAULT_KUBERNETES_VERSION


def test_every_eks_minor_has_a_cluster_autoscaler_image_of_the_same_minor() -> None:
    for release in EKS_VERSIONS.releases:
        tag = CLUSTER_AUTOSCALER_IMAGE_TAGS[release.minor]
        assert tag.startswith(f"v{release.minor}."), tag


def test_end_of_life_is_refused_from_its_first_day_naming_the_newest_supported() -> None:
    table = VersionTable(
        "EKS",
        (
            KubernetesRelease("1.40", date(2030, 1, 10), date(2031, 3, 1)),
            KubernetesRelease("1.41", date(2030, 5, 1), date(2031, 7, 1)),
        ),
        "https://example.invalid/calendar",
        date(2030, 6, 1),
        "refresh it",
    )
    original = VERSION_TABLES["aws"]
    VERSION_TABLES["aws"] = table
    try:
        assert check_minor("1.40", "aws", on=date(2031, 2, 28)) is None
        gone = check_minor("1.40", "aws", on=date(2031, 3, 1))
        assert gone == "left EKS standard support on 2031-03-01 (supported on EKS: 1.41; newest 1.41)"
        early = check_minor("1.41", "aws", on=date(2030, 4, 30))
        assert early is not None and early.startswith("is not generally available on EKS before 2030-05-01")
        unknown = check_minor("1.39", "aws", on=date(2030, 6, 1))
        assert unknown is not None and "newest 1.41" in unknown
    finally:
        VERSION_TABLES["aws"] = original


@pytest.mark.parametrize("cloud", [Cloud.AZURE, Cloud.AWS])
def test_a_minor_out_of_support_is_one_config_error_naming_the_newest(cloud: Cloud) -> None:
    table = VERSION_TABLES[cloud.value]
    gone = [r.minor for r in table.releases if r.end_of_support <= table.checked]
    assert gone, f"{table.service}: the table should keep at least one retired minor, to name it in errors"
    example = stack_config("azure-dev" if cloud is Cloud.AZURE else "aws-dev")
    raw = {**example, "gpupools:cluster": {**example["gpupools:cluster"], "kubernetesVersion": gone[-1]}}
    with pytest.raises(ConfigError) as caught:
        config.parse(raw)
    message = str(caught.value)
    assert message.startswith(f"gpupools:cluster.kubernetesVersion: left {table.service} standard support on ")
    assert f"newest {table.supported(table.checked)[-1]}" in message
    assert message.endswith(f"got '{gone[-1]}'")


def test_supported_minors_are_judged_on_the_check_date_not_the_clock() -> None:
    """Synth must not depend on the clock (tests/test_safety.py); the staleness test above is
    what forces a refresh."""
    for cloud, table in VERSION_TABLES.items():
        for release in table.releases:
            expected = release.ga <= table.checked < release.end_of_support
            assert (check_minor(release.minor, cloud) is None) is expected, (cloud, release)
