// The pulumi-kubernetes provider the sim's engine commands use, pinned in one place.
//
// v4.0.0-20260115033456-f47bc2d6f199 is the commit tagged v4.25.0 (the provider/v4 module path has
// no tag of its own, so the Go module proxy serves it as this pseudo-version). Its go.mod replaces
// sdk/v4 with ../sdk, a path only its repository has: `python -m gpupools.sim.engine_build` builds a
// copy with that replace dropped and sdk/v4 at the version required here (v4.24.0, the version the
// provider's go.mod requires), and with the two gitignored embedded files generated.
module gpupools.dev/sim/kubernetes

go 1.26.0

require (
	github.com/pulumi/pulumi-kubernetes/provider/v4 v4.0.0-20260115033456-f47bc2d6f199
	github.com/pulumi/pulumi-kubernetes/sdk/v4 v4.24.0
)
