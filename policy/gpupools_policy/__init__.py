"""gpupools policy rules: guardrails for GPU spot node pools on AKS and EKS.

- ``gpupools_policy.rules``: the rules as plain functions over (resource type, properties); no
  dependency on ``pulumi_policy``, so they are unit-tested by calling them directly.
- ``gpupools_policy.pack``: the same rules as ``pulumi_policy`` policies (``POLICIES``).
- ``gpupools_policy.shapes``: reading pools, taints and tolerations out of engine properties.

Importing any of these never starts the policy server; ``policy/__main__.py`` does.
"""
