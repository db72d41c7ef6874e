// cluster-autoscaler for `gpupools sim`, pinned in one place, with its KWOK cloud provider.
//
// This module has no code of its own: it pins k8s.io/autoscaler/cluster-autoscaler at the commit of
// the upstream tag cluster-autoscaler-1.36.1 (35e8a280425c, served as this pseudo-version: the
// repository's cluster-autoscaler-1.x.y tags are not module tags) and builds its main package with
// the `kwok` build tag (cloudprovider/router/router_kwok.go: only the KWOK provider is compiled).
//
// cluster-autoscaler's own go.mod replaces its apis module with ./apis and every Kubernetes staging
// module with v0.36.2; replace directives of a dependency do not apply here, so this module states
// them itself: apis at the same commit, and Kubernetes at the sim control plane's v1.36.3 / v0.36.3
// (sim/cp), a patch bump that lets Go compile the shared Kubernetes packages once for both builds.
// It also builds Helm v4.2.4 (helm.sh/helm/v4, the sim's chart renderer), which agrees with
// cluster-autoscaler on k8s.io/* 0.36 and golang.org/x/net 0.56; the six requires after it lift
// modules to the versions sim/cp selects, so every module the two graphs share has one version.
//
// Where the Go module proxy refuses the module (it answers 403 for k8s.io/autoscaler/cluster-autoscaler
// on some networks), `python -m gpupools.sim.autoscaler_build --source FILE` (or
// GPUPOOLS_CLUSTER_AUTOSCALER_SOURCE) builds from an extract of the same tag, checked against
// SOURCE_SHA256 in gpupools/sim/autoscaler_build.py, with both modules replaced by its
// directories in a temporary copy of this file.
module gpupools.dev/sim/autoscaler

go 1.26.0

require (
	github.com/clipperhouse/uax29/v2 v2.3.0
	github.com/cpuguy83/go-md2man/v2 v2.0.7
	github.com/ianlancetaylor/demangle v0.0.0-20250417193237-f615e6bd150b
	github.com/mattn/go-runewidth v0.0.19
	go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful v0.69.0
	go.opentelemetry.io/otel/exporters/stdout/stdouttrace v1.44.0
	helm.sh/helm/v4 v4.2.4
	k8s.io/autoscaler/cluster-autoscaler v0.0.0-20260722070747-35e8a280425c
	k8s.io/kubernetes v1.36.3
)

replace (
	github.com/aws/aws-sdk-go/service/eks => github.com/aws/aws-sdk-go/service/eks v1.38.49
	github.com/rancher/go-rancher => github.com/rancher/go-rancher v0.1.0
	k8s.io/api => k8s.io/api v0.36.3
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.36.3
	k8s.io/apimachinery => k8s.io/apimachinery v0.36.3
	k8s.io/apiserver => k8s.io/apiserver v0.36.3
	k8s.io/autoscaler/cluster-autoscaler/apis => k8s.io/autoscaler/cluster-autoscaler/apis v0.0.0-20260722070747-35e8a280425c
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.36.3
	k8s.io/client-go => k8s.io/client-go v0.36.3
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.36.3
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.36.3
	k8s.io/code-generator => k8s.io/code-generator v0.36.3
	k8s.io/component-base => k8s.io/component-base v0.36.3
	k8s.io/component-helpers => k8s.io/component-helpers v0.36.3
	k8s.io/controller-manager => k8s.io/controller-manager v0.36.3
	k8s.io/cri-api => k8s.io/cri-api v0.36.3
	k8s.io/cri-client => k8s.io/cri-client v0.36.3
	k8s.io/cri-streaming => k8s.io/cri-streaming v0.36.3
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.36.3
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.36.3
	k8s.io/endpointslice => k8s.io/endpointslice v0.36.3
	k8s.io/externaljwt => k8s.io/externaljwt v0.36.3
	k8s.io/kms => k8s.io/kms v0.36.3
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.36.3
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.36.3
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.36.3
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.36.3
	k8s.io/kubectl => k8s.io/kubectl v0.36.3
	k8s.io/kubelet => k8s.io/kubelet v0.36.3
	k8s.io/metrics => k8s.io/metrics v0.36.3
	k8s.io/mount-utils => k8s.io/mount-utils v0.36.3
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.36.3
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.36.3
	k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.36.3
	k8s.io/sample-controller => k8s.io/sample-controller v0.36.3
	k8s.io/streaming => k8s.io/streaming v0.36.3
)
