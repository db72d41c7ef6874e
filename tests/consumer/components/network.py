"""The platform team's existing clusters and networks: identifiers the GPU pools attach to."""

AKS_RESOURCE_GROUP = "rg-platform-ml"
AKS_CLUSTER = "ml-platform"
AKS_LOCATION = "eastus"

EKS_CLUSTER = "ml-platform"
EKS_REGION = "us-west-2"
EKS_NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/ml-platform-nodes"
EKS_SUBNETS = {"us-west-2a": "subnet-0aaaaaaaaaaaaaaa1", "us-west-2b": "subnet-0bbbbbbbbbbbbbbb2"}
