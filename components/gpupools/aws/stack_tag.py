"""The stack tag: ``gpupools.io/cluster=<cluster name>`` on the AWS resources the deployer policy
scopes by tag.

Why a tag: IAM cannot scope writes on some resource types by name, because their ARNs carry only an
ID (``launch-template/lt-0abc...``), yet a write there reaches other workloads: a new version of any
launch template in the account runs the deployer's user data in every Auto Scaling group on
``$Latest``/``$Default``, under that group's instance profile (EC2 User Guide, "Control access to
launch templates with IAM permissions": "You can't use resource-level permissions to restrict the
resources that users can specify in a launch template"; third EKS review, T4). With the tag on the
stack's own launch templates, ``gpupools.aws.deployer_policy`` allows their writes only where
``aws:ResourceTag/gpupools.io/cluster`` is the stack's cluster, and their creation only with that
tag in the request (``aws:RequestTag``), which EC2 checks for these actions (service authorization
reference, Amazon EC2: ``CreateLaunchTemplateVersion``, ``ModifyLaunchTemplate``,
``DeleteLaunchTemplate`` list ``aws:ResourceTag/${TagKey}``; ``CreateLaunchTemplate`` lists
``aws:RequestTag/${TagKey}``).

The tag goes on the launch template itself, never into its ``tag_specifications``: a change there
would be a new template version, and every node group on the template would roll its nodes.
"""

from __future__ import annotations

STACK_TAG = "gpupools.io/cluster"
"""The key; its value is ``gpupools:cluster.name``."""


def stack_tags(cluster_name: str) -> dict[str, str]:
    """``{"gpupools.io/cluster": cluster_name}``."""
    return {STACK_TAG: cluster_name}
