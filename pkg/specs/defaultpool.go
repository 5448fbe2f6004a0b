package specs

import "github.com/joist-dev/joist/pkg/model"

// defaultManifest is an empty v1alpha5 Provisioner (and the node template
// it needs): what a user who wrote nothing but a name gets.
const defaultManifest = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  providerRef: {name: default}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  subnetSelector: {karpenter.sh/discovery: default}
  securityGroupSelector: {karpenter.sh/discovery: default}
`

// DefaultPool is the pool planning uses when a workload brings no specs:
// an empty v1alpha5 Provisioner defaulted exactly as Karpenter's webhook
// did (linux, amd64, on-demand, categories c, m, r of generation > 2),
// through the same code as every other spec.
func DefaultPool() *model.Pool {
	objs, err := Decode([]byte(defaultManifest), "default pool")
	if err != nil {
		panic("specs: the built-in default pool does not decode: " + err.Error())
	}
	spec, errs := Build(objs)
	if len(errs) > 0 || len(spec.Pools) != 1 {
		panic("specs: the built-in default pool does not build")
	}
	return spec.Pools[0]
}
