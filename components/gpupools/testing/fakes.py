"""Fake outputs for the recording mock runtime: what the clouds would compute, per resource type.

Each ``OUTPUTS`` entry takes (logical name, inputs) and returns the outputs the program reads that
are not simply its inputs echoed back (IDs, ARNs, ASG names, kubeconfigs). Each ``CALLS`` entry
answers one invoke. Values are shaped like the real APIs' answers, with obviously fake account and
subscription numbers.

Remote (multi-language) components are opaque under mocks: ``pulumi_eks.Cluster`` registers as one
``eks:index:Cluster`` resource with no children (no provider ``Construct`` runs, so none of its IAM
roles, security groups, ``aws:eks/cluster`` or add-ons exist), and its outputs are exactly what
``OUTPUTS["eks:index:Cluster"]`` returns here, merged over its echoed inputs; an output missing
here reads as ``None``. ``EksCluster`` reads only these: ``kubeconfigJson`` (the secret kubeconfig
and the Kubernetes provider), ``oidcProviderArn`` and ``oidcProviderUrl`` (the IRSA trust policy
and the provider's ``cluster_identifier``). They are shaped like pulumi-eks's own: the issuer URL
keeps its ``https://`` scheme (``oidcIssuer`` is the same without it), the provider ARN embeds the
issuer without it, and the kubeconfig runs ``aws eks get-token``. ``clusterSecurityGroupId`` and
``nodeSecurityGroupId`` are there for programs that read them. To read another output of a remote
component, add it here first. Its inputs are recorded like any resource's, so tests can assert on
what the component was asked for (``name``, ``authenticationMode``, ``skipDefaultNodeGroup``, ...).

The fakes answer in the stack's own region: ``aws:region`` (default ``us-west-2``) and
``azure-native:location`` (default ``eastus``) of the config the program runs with. The zone
lookup (``aws.get_availability_zones``) answers that region's zones from the region catalog
(``gpupools.catalog.regions.AWS_ZONES``: ``ap-northeast-1`` has ``a``, ``c`` and ``d``), and ARNs,
endpoints and issuer URLs carry the region, as the clouds' own answers do.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any, Callable, Mapping

import pulumi

from gpupools.catalog import regions
from gpupools.specs import Cloud

OutputFake = Callable[[str, Mapping[str, Any]], dict[str, Any]]
CallFake = Callable[[Mapping[str, Any]], dict[str, Any]]


class InvokeError(Exception):
    """Raised by a ``CallFake`` to answer the invoke with a failure, as a provider does when a data
    source errors (HTTP 404, access denied): the program sees the invoke raise and may handle it."""


SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
TENANT = "11111111-1111-1111-1111-111111111111"
ACCOUNT = "123456789012"
FAKE_NAMESPACE = uuid.UUID("6f1c1f0e-8d0c-4a55-9a57-2a1f3f0b6d3e")
DEFAULT_AWS_REGION = "us-west-2"
"""The region the AWS fakes answer in when the program's config has no ``aws:region``."""
DEFAULT_AZURE_LOCATION = "eastus"
"""The location the Azure fakes answer in when neither the resource nor the config names one."""


def aws_region() -> str:
    """The stack's ``aws:region`` (the config the program runs with), else ``DEFAULT_AWS_REGION``."""
    return pulumi.runtime.get_config("aws:region") or DEFAULT_AWS_REGION


def azure_location(inputs: Mapping[str, Any] | None = None) -> str:
    """The resource's ``location`` input, else the stack's ``azure-native:location`` (programmatic
    name: ``East US`` -> ``eastus``), else ``DEFAULT_AZURE_LOCATION``."""
    location = (inputs or {}).get("location") or pulumi.runtime.get_config("azure-native:location") or DEFAULT_AZURE_LOCATION
    return regions.normalize(Cloud.AZURE, str(location))


def fake_uuid(seed: str) -> str:
    """A deterministic UUID for ``seed``, so two runs produce identical documents."""
    return str(uuid.uuid5(FAKE_NAMESPACE, seed))


def _arm_id(rg: str, provider: str, kind: str, name: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}/providers/{provider}/{kind}/{name}"


def _kubeconfig(server: str, user: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "cluster", "cluster": {"server": server, "certificate-authority-data": "ZmFrZQ=="}}],
            "contexts": [{"name": "cluster", "context": {"cluster": "cluster", "user": "user"}}],
            "current-context": "cluster",
            "users": [{"name": "user", "user": user}],
        },
        sort_keys=True,
    )


# --- Azure ---------------------------------------------------------------------------------------


def _resource_group(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    rg = inputs.get("resourceGroupName") or name
    return {"name": rg, "__id": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}"}


def _vnet(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    vnet = inputs.get("virtualNetworkName") or name
    return {"name": vnet, "__id": _arm_id(inputs["resourceGroupName"], "Microsoft.Network", "virtualNetworks", vnet)}


def _subnet(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    subnet = inputs.get("subnetName") or name
    vnet = _arm_id(inputs["resourceGroupName"], "Microsoft.Network", "virtualNetworks", inputs["virtualNetworkName"])
    return {"name": subnet, "__id": f"{vnet}/subnets/{subnet}"}


def _identity(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    identity = inputs.get("resourceName") or name
    return {
        "name": identity,
        "principalId": fake_uuid(f"principal/{identity}"),
        "clientId": fake_uuid(f"client/{identity}"),
        "tenantId": TENANT,
        "__id": _arm_id(inputs["resourceGroupName"], "Microsoft.ManagedIdentity", "userAssignedIdentities", identity),
    }


def _managed_cluster(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    cluster = inputs.get("resourceName") or name
    outputs: dict[str, Any] = {}
    identity = inputs.get("identity")
    if isinstance(identity, Mapping) and isinstance(identity.get("userAssignedIdentities"), list):
        # Inputs list identity IDs; the API answers with a map of ID -> {principalId, clientId}.
        outputs["identity"] = {
            **identity,
            "userAssignedIdentities": {
                i: {"principalId": fake_uuid(f"principal/{i}"), "clientId": fake_uuid(f"client/{i}")}
                for i in identity["userAssignedIdentities"]
            },
        }
    location = azure_location(inputs)
    return {
        **outputs,
        "name": cluster,
        "fqdn": f"{cluster}-dns.hcp.{location}.azmk8s.io",
        "oidcIssuerProfile": {
            "enabled": True,
            "issuerURL": f"https://{location}.oic.prod-aks.azure.com/{TENANT}/{fake_uuid(cluster)}/",
        },
        "__id": _arm_id(inputs["resourceGroupName"], "Microsoft.ContainerService", "managedClusters", cluster),
    }


def _agent_pool(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    pool = inputs.get("agentPoolName") or name
    cluster_id = _arm_id(inputs["resourceGroupName"], "Microsoft.ContainerService", "managedClusters", inputs["resourceName"])
    return {"name": pool, "__id": f"{cluster_id}/agentPools/{pool}"}


def _role_assignment(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    assignment = fake_uuid(f"role-assignment/{name}")
    return {
        "name": assignment,
        "__id": f"{inputs.get('scope', '')}/providers/Microsoft.Authorization/roleAssignments/{assignment}",
    }


def _aks_credentials(args: Mapping[str, Any]) -> dict[str, Any]:
    cluster = args["resourceName"]
    config = _kubeconfig(
        f"https://{cluster}-dns.hcp.{azure_location()}.azmk8s.io:443",
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "kubelogin",
                # What AKS returns for format=exec: kubelogin in device-code mode.
                "args": [
                    "get-token",
                    "--environment",
                    "AzurePublicCloud",
                    "--server-id",
                    "6dae42f8-4368-4678-94ff-3960e28e3630",
                    "--client-id",
                    "80faf920-1908-4b52-b5ef-a8e7bedfc67a",
                    "--tenant-id",
                    TENANT,
                    "--login",
                    "devicecode",
                ],
            }
        },
    )
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(config.encode()).decode()}]}


def arm_not_found(args: Mapping[str, Any], child: str = "") -> str:
    """What pulumi-azure-native's invoke of an AKS GET fails with when ARM answers 404: ``request
    failed <ID>: `` (``provider/pkg/provider/provider.go``, ``Invoke``) and
    ``Status=404 Code="..." Message="..."`` (``provider/pkg/azure/client_azcore.go``,
    ``PulumiAzcoreResponseError.Error``)."""
    group = args.get("resourceGroupName") or "rg"
    cluster = args.get("resourceName")
    resource_id = (
        f"/subscriptions/{fake_uuid('subscription')}/resourceGroups/{group}/providers/Microsoft.ContainerService/"
        f"managedClusters/{cluster}{child}"
    )
    return (
        f'request failed {resource_id}: Status=404 Code="ResourceNotFound" '
        f"Message=\"The Resource 'Microsoft.ContainerService/managedClusters/{cluster}' under resource group "
        f"'{group}' was not found.\""
    )


def _agent_pool_absent(args: Mapping[str, Any]) -> dict[str, Any]:
    """``Agent Pools - Get`` before the cluster exists: ARM's 404, so no pool has a live count."""
    raise InvokeError(arm_not_found(args, f"/agentPools/{args.get('agentPoolName')}"))


def _managed_cluster_absent(args: Mapping[str, Any]) -> dict[str, Any]:
    """``Managed Clusters - Get`` before the cluster exists: ARM's 404, so there is no pool list."""
    raise InvokeError(arm_not_found(args))


def _azure_client_config(_: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "clientId": fake_uuid("client/deployer"),
        "objectId": fake_uuid("principal/deployer"),
        "subscriptionId": SUBSCRIPTION,
        "tenantId": TENANT,
    }


def fake_jwt(claims: Mapping[str, Any]) -> str:
    """An unsigned JWT with ``claims`` (header ``{"alg": "none"}``): only the payload is ever read."""

    def part(value: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(dict(value)).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.signature"


USER_TOKEN_CLAIMS: dict[str, Any] = {
    "aud": "https://management.core.windows.net/",
    "idtyp": "user",
    "scp": "user_impersonation",
    "oid": "00000000-0000-0000-0000-00000000d0d0",
}
"""The claims of an ARM token issued to a user (``az login`` at a desk): ``idtyp: user`` and delegated
scopes in ``scp`` (Microsoft identity platform "Access token claims reference")."""

SERVICE_PRINCIPAL_TOKEN_CLAIMS: dict[str, Any] = {
    "aud": "https://management.core.windows.net/",
    "idtyp": "app",
    "oid": "00000000-0000-0000-0000-00000000c1c1",
}
"""The claims of an app-only ARM token (a service principal: CI's OIDC federated credential or a
client secret): ``idtyp: app`` and no ``scp``."""


def _azure_client_token(_: Mapping[str, Any]) -> dict[str, Any]:
    return {"token": fake_jwt(USER_TOKEN_CLAIMS)}


# --- AWS -----------------------------------------------------------------------------------------


def _arn(service: str, resource: str, region: str | None = None) -> str:
    return f"arn:aws:{service}:{region or aws_region()}:{ACCOUNT}:{resource}"


def _node_group(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    group = inputs.get("nodeGroupName") or name
    return {
        "arn": _arn("eks", f"nodegroup/{inputs.get('clusterName')}/{group}/{fake_uuid(group)}"),
        "status": "ACTIVE",
        "resources": [
            {"autoscalingGroups": [{"name": f"eks-{group}-{fake_uuid('asg/' + group)}"}], "remoteAccessSecurityGroupId": ""}
        ],
        "__id": f"{inputs.get('clusterName')}:{group}",
    }


def _eks_cluster(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    cluster = inputs.get("name") or name
    region = aws_region()
    issuer = f"oidc.eks.{region}.amazonaws.com/id/{fake_uuid(cluster).replace('-', '').upper()}"
    kubeconfig = _kubeconfig(
        f"https://{fake_uuid('endpoint/' + cluster).replace('-', '').upper()}.gr7.{region}.eks.amazonaws.com",
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "aws",
                "args": ["eks", "get-token", "--cluster-name", cluster],
            }
        },
    )
    return {
        "kubeconfigJson": kubeconfig,
        "kubeconfig": json.loads(kubeconfig),
        "oidcIssuer": issuer,
        "oidcProviderUrl": f"https://{issuer}",
        "oidcProviderArn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{issuer}",
        "clusterSecurityGroupId": "sg-0cluster000000000",
        "nodeSecurityGroupId": "sg-0node00000000000",
    }


def _iam_role(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    role = inputs.get("name") or name
    return {"name": role, "arn": f"arn:aws:iam::{ACCOUNT}:role/{role}", "uniqueId": "AROA" + fake_uuid(role)[:16].upper()}


def _iam_policy(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    policy = inputs.get("name") or name
    return {"name": policy, "arn": f"arn:aws:iam::{ACCOUNT}:policy/{policy}"}


def _ec2_id(prefix: str) -> OutputFake:
    def fake(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {"__id": f"{prefix}-{fake_uuid(name).replace('-', '')[:17]}", "arn": _arn("ec2", f"{prefix}/{name}")}

    return fake


def _placement_group(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """An EC2 placement group: the provider names it (auto-naming) when ``name`` is not given."""
    group = inputs.get("name") or f"{name}-{fake_uuid('pg/' + name)[:7]}"
    return {"__id": group, "name": group, "placementGroupId": f"pg-{fake_uuid(name).replace('-', '')[:17]}"}


def _proximity_placement_group(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    group = inputs.get("proximityPlacementGroupName") or name
    return {
        "name": group,
        "__id": _arm_id(inputs["resourceGroupName"], "Microsoft.Compute", "proximityPlacementGroups", group),
    }


def _sqs_queue(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # namePrefix: the provider appends a 26-character unique suffix (an 18-digit timestamp, 8 hex digits);
    # here a fixed one, so two runs give identical documents.
    queue = inputs.get("name") or (inputs["namePrefix"] + "202601010000000000" + "00000001" if inputs.get("namePrefix") else name)
    url = f"https://sqs.{aws_region()}.amazonaws.com/{ACCOUNT}/{queue}"
    return {"name": queue, "arn": _arn("sqs", queue), "url": url, "__id": url}


def _event_rule(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    rule = inputs.get("name") or name
    return {"name": rule, "arn": _arn("events", f"rule/{rule}"), "__id": rule}


def _launch_template(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {**_ec2_id("lt")(name, inputs), "latestVersion": 1, "defaultVersion": 1}


def _availability_zones(_: Mapping[str, Any]) -> dict[str, Any]:
    """``DescribeAvailabilityZones`` in the stack's region: its zones that need no opt-in, in name
    order, from the region catalog (``regions.AWS_ZONES``)."""
    region = aws_region()
    zones = regions.AWS_ZONES.get(region)
    if not zones:
        raise InvokeError(f"DescribeAvailabilityZones: no zones known for region {region} (gpupools.catalog.regions.AWS_ZONES)")
    return {
        "names": [name for name, _ in zones],
        "zoneIds": [zone_id for _, zone_id in zones],
        "id": region,
        "groupNames": [region] * len(zones),
    }


def _caller_identity(_: Mapping[str, Any]) -> dict[str, Any]:
    return {"accountId": ACCOUNT, "arn": f"arn:aws:iam::{ACCOUNT}:user/deployer", "userId": "AIDAFAKE", "id": ACCOUNT}


def _partition(_: Mapping[str, Any]) -> dict[str, Any]:
    return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws", "reverseDnsPrefix": "com.amazonaws"}


def _eks_clusters(_: Mapping[str, Any]) -> dict[str, Any]:
    """``eks:ListClusters`` in a fresh account: no cluster yet, so no node group has a live size."""
    return {"names": [], "id": aws_region()}


def _region(_: Mapping[str, Any]) -> dict[str, Any]:
    region = aws_region()
    return {"name": region, "region": region, "id": region, "endpoint": f"ec2.{region}.amazonaws.com"}


OUTPUTS: dict[str, OutputFake] = {
    "azure-native:resources:ResourceGroup": _resource_group,
    "azure-native:network:VirtualNetwork": _vnet,
    "azure-native:network:Subnet": _subnet,
    "azure-native:managedidentity:UserAssignedIdentity": _identity,
    "azure-native:containerservice:ManagedCluster": _managed_cluster,
    "azure-native:containerservice:AgentPool": _agent_pool,
    "azure-native:authorization:RoleAssignment": _role_assignment,
    "aws:eks/nodeGroup:NodeGroup": _node_group,
    "eks:index:Cluster": _eks_cluster,
    "aws:iam/role:Role": _iam_role,
    "aws:iam/policy:Policy": _iam_policy,
    "aws:ec2/vpc:Vpc": _ec2_id("vpc"),
    "aws:ec2/subnet:Subnet": _ec2_id("subnet"),
    "aws:ec2/internetGateway:InternetGateway": _ec2_id("igw"),
    "aws:ec2/natGateway:NatGateway": _ec2_id("nat"),
    "aws:ec2/eip:Eip": _ec2_id("eipalloc"),
    "aws:ec2/routeTable:RouteTable": _ec2_id("rtb"),
    "aws:ec2/securityGroup:SecurityGroup": _ec2_id("sg"),
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    "azure-native:compute:ProximityPlacementGroup": _proximity_placement_group,
    "aws:sqs/queue:Queue": _sqs_queue,
    "aws:cloudwatch/eventRule:EventRule": _event_rule,
}

CALLS: dict[str, CallFake] = {
    "azure-native:containerservice:listManagedClusterUserCredentials": _aks_credentials,
    "azure-native:authorization:getClientConfig": _azure_client_config,
    "azure-native:authorization:getClientToken": _azure_client_token,
    "azure-native:containerservice:getAgentPool": _agent_pool_absent,
    "azure-native:containerservice:getManagedCluster": _managed_cluster_absent,
    "aws:eks/getClusters:getClusters": _eks_clusters,
    "aws:index/getAvailabilityZones:getAvailabilityZones": _availability_zones,
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:index/getPartition:getPartition": _partition,
    "aws:index/getRegion:getRegion": _region,
}
