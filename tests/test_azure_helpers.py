"""Pure Azure helpers: the autoscaler profile's canonical strings, the node subnet, kubeconfig login."""

from __future__ import annotations

import base64
import inspect
import ipaddress
import json
import re

import pytest
import yaml
from gpupools.azure.autoscaler_profile import autoscaler_profile
from gpupools.azure.kubeconfig import with_kubelogin_login
from gpupools.azure.network import node_subnet_prefix
from gpupools.errors import ConfigError
from gpupools.specs import AutoscalerSpec
from gpupools.testing import fakes
from hypothesis import given
from hypothesis import strategies as st
from pulumi_azure_native import containerservice

# --- autoscaler profile ---------------------------------------------------------------------------

# The forms AKS echoes back (AKS cluster-autoscaler docs and GET responses), per field kind.
DURATION = re.compile(r"^(0|[1-9]\d*)[sm]$")
INTEGER = re.compile(r"^(0|[1-9]\d*)$")
BOOLEAN_STRING = {"true", "false"}
DURATION_FIELDS = {
    "max_node_provision_time",
    "new_pod_scale_up_delay",
    "scale_down_delay_after_add",
    "scale_down_delay_after_delete",
    "scale_down_delay_after_failure",
    "scale_down_unneeded_time",
    "scale_down_unready_time",
    "scan_interval",
}
INTEGER_FIELDS = {
    "max_empty_bulk_delete",
    "max_graceful_termination_sec",
    "max_total_unready_percentage",
    "ok_total_unready_count",
}
BOOLEAN_STRING_FIELDS = {"balance_similar_node_groups", "skip_nodes_with_local_storage", "skip_nodes_with_system_pods"}
BOOLEAN_FIELDS = {"daemonset_eviction_for_empty_nodes", "daemonset_eviction_for_occupied_nodes", "ignore_daemonsets_utilization"}


def sdk_profile_fields() -> set[str]:
    signature = inspect.signature(containerservice.ManagedClusterPropertiesAutoScalerProfileArgs.__init__)
    return {name for name in signature.parameters if name != "__self__"}


def test_profile_sets_every_field_the_sdk_knows_so_refresh_has_nothing_to_add() -> None:
    assert set(autoscaler_profile(AutoscalerSpec())) == sdk_profile_fields()


def test_profile_uses_the_priority_expander_from_the_sdk_enum() -> None:
    assert autoscaler_profile(AutoscalerSpec())["expander"] == containerservice.Expander.PRIORITY.value == "priority"


@given(st.integers(1, 60), st.integers(1, 60))
def test_profile_values_are_in_canonical_form(provision: int, unneeded: int) -> None:
    spec = AutoscalerSpec(max_node_provision_time=f"{provision}m", scale_down_unneeded_time=f"{unneeded}m")
    profile = autoscaler_profile(spec)
    assert profile["max_node_provision_time"] == f"{provision}m"
    assert profile["scale_down_unneeded_time"] == f"{unneeded}m"
    for field in DURATION_FIELDS:
        assert DURATION.match(str(profile[field])), field
    for field in INTEGER_FIELDS:
        assert INTEGER.match(str(profile[field])), field
    for field in BOOLEAN_STRING_FIELDS:
        assert profile[field] in BOOLEAN_STRING, field
    for field in BOOLEAN_FIELDS:
        assert isinstance(profile[field], bool), field
    assert profile["scale_down_utilization_threshold"] == "0.5"


def test_field_kinds_cover_the_whole_profile() -> None:
    kinds = DURATION_FIELDS | INTEGER_FIELDS | BOOLEAN_STRING_FIELDS | BOOLEAN_FIELDS
    assert kinds | {"expander", "scale_down_utilization_threshold"} == sdk_profile_fields()


def test_profile_keeps_aks_documented_defaults_for_untuned_fields() -> None:
    profile = autoscaler_profile(AutoscalerSpec())
    # AKS docs (cluster-autoscaler.md) defaults, in the strings GET returns.
    assert profile["scan_interval"] == "10s"
    assert profile["scale_down_delay_after_delete"] == "10s"
    assert profile["skip_nodes_with_local_storage"] == "false"
    assert profile["skip_nodes_with_system_pods"] == "true"
    assert profile["new_pod_scale_up_delay"] == "0s"


# --- node subnet ----------------------------------------------------------------------------------


@given(st.integers(16, 22), st.integers(0, 255))
def test_node_subnet_is_the_first_half_of_the_network(prefix: int, second_octet: int) -> None:
    network = ipaddress.ip_network(f"10.{second_octet}.0.0/{prefix}", strict=False)
    subnet = ipaddress.ip_network(node_subnet_prefix(str(network)))
    assert subnet.subnet_of(network)  # type: ignore[arg-type]
    assert subnet.prefixlen == network.prefixlen + 1
    assert subnet.network_address == network.network_address
    assert subnet.num_addresses - 2 >= 510


# --- kubeconfig -----------------------------------------------------------------------------------


def aks_kubeconfig() -> str:
    """What listClusterUserCredential(format=exec) returns (the fake mirrors the real shape)."""
    encoded = fakes.CALLS["azure-native:containerservice:listManagedClusterUserCredentials"]({"resourceName": "c"})
    return base64.b64decode(encoded["kubeconfigs"][0]["value"]).decode()


def test_device_code_kubeconfig_is_switched_to_azure_cli_like_kubelogin_convert() -> None:
    original = yaml.safe_load(aks_kubeconfig())
    assert "devicecode" in original["users"][0]["user"]["exec"]["args"]
    converted = yaml.safe_load(with_kubelogin_login(aks_kubeconfig()))
    server_id = original["users"][0]["user"]["exec"]["args"]
    server_id = server_id[server_id.index("--server-id") + 1]
    # kubelogin convert-kubeconfig -l azurecli: get-token --login azurecli --server-id <id>, and the
    # cloud AKS named (--environment) kept, so sovereign clouds get their own token endpoint.
    assert converted["users"][0]["user"]["exec"]["args"] == [
        "get-token",
        "--environment",
        "AzurePublicCloud",
        "--login",
        "azurecli",
        "--server-id",
        server_id,
    ]
    assert converted["users"][0]["user"]["exec"]["command"] == "kubelogin"
    assert converted["clusters"] == original["clusters"]


def test_a_sovereign_cloud_keeps_its_environment() -> None:
    """Issue 28 (review m13): the rewrite dropped ``--environment``, so kubelogin asked the public
    cloud for a token of a cluster in Azure China or US Government."""
    china = aks_kubeconfig().replace("AzurePublicCloud", "AzureChinaCloud")
    args = yaml.safe_load(with_kubelogin_login(china))["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--environment") + 1] == "AzureChinaCloud"
    without = yaml.safe_load(aks_kubeconfig())
    exec_args = without["users"][0]["user"]["exec"]["args"]
    at = exec_args.index("--environment")
    del exec_args[at : at + 2]
    assert (
        "--environment" not in yaml.safe_load(with_kubelogin_login(yaml.safe_dump(without)))["users"][0]["user"]["exec"]["args"]
    )


def test_device_code_mode_keeps_the_kubeconfig_unchanged() -> None:
    assert with_kubelogin_login(aks_kubeconfig(), "devicecode") == aks_kubeconfig()


def test_non_kubelogin_users_are_left_alone() -> None:
    config = {"users": [{"name": "u", "user": {"exec": {"command": "aws", "args": ["eks", "get-token"]}}}]}
    assert yaml.safe_load(with_kubelogin_login(json.dumps(config))) == config


def test_kubelogin_user_without_server_id_and_unknown_modes_are_errors() -> None:
    config = json.dumps({"users": [{"name": "u", "user": {"exec": {"command": "kubelogin", "args": ["get-token"]}}}]})
    with pytest.raises(ConfigError, match="--server-id"):
        with_kubelogin_login(config)
    with pytest.raises(ConfigError, match="kubeloginLogin"):
        with_kubelogin_login(config, "spn")
