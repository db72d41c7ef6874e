// Upstream modules that `gpupools sim` only reads data from: the CustomResourceDefinitions the
// example stacks' objects need, extracted by `scripts/build-sim` from these module zips (checked
// against go.sum) into the sim's cache. Nothing here is compiled.
//
// Do not run `go mod tidy` here: no package of this module imports these, so tidy would drop them.
// Versions are those tests/crds/README.md pins (the releases gpupools' charts and NAP use):
//   sigs.k8s.io/kueue v0.19.2                        config/components/crd/bases/*.yaml
//   github.com/aws/karpenter-provider-aws v1.14.1    pkg/apis/crds/*.yaml (NodePool, NodeClaim, NodeOverlay, EC2NodeClass)
//   github.com/Azure/karpenter-provider-azure v1.14.2 pkg/apis/crds/*.yaml (its own NodePool copy, AKSNodeClass)
//   github.com/prometheus-operator/prometheus-operator v0.93.0
//                                                    example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml
// The ProvisioningRequest CRD: gpupools installs the one of cluster-autoscaler tag 1.35.2
// (gpupools.aws.autoscaler.PROVISIONING_REQUEST_CRD), but the Go module proxy serves no version
// of k8s.io/autoscaler/cluster-autoscaler[/apis] at that commit (nor the 1.36.1 one: 403 "not
// available", 2026-11-27). The nearest served is the apis module at the pseudo-version Kueue
// v0.19.2 itself requires (2024-08-30); its config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml
// serves the same autoscaling.x-k8s.io/v1 API.
module gpupools.dev/sim/crds

go 1.26.0

require (
	github.com/Azure/karpenter-provider-azure v1.14.2
	github.com/aws/karpenter-provider-aws v1.14.1
	github.com/prometheus-operator/prometheus-operator v0.93.0
	k8s.io/autoscaler/cluster-autoscaler/apis v0.0.0-20240830133931-adfbe7e45277
	sigs.k8s.io/kueue v0.19.2
)
