// Package e2e runs Joist's whole loop on the local test ground: a real
// kube-apiserver, kumo, the EC2 simulator, and the functions as real
// Lambda bootstraps under aws-lambda-rie.
package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, noUnusedIAM, noUnusedRBAC) }

// The reaper is the safety net: it runs the provisioner's very pass
// (functions/reaper calls the same reconciler), and the interruption
// function runs it with the interrupted nodes left out
// (provisioning.Replace); so whatever that pass needed in any scenario,
// theirs need too.
var (
	iamSameAs = map[string]string{
		iampolicy.Reaper: iampolicy.Provisioner, iampolicy.Interruption: iampolicy.Provisioner,
	}
	rbacSameAs = map[string]string{
		rbac.User(iampolicy.Reaper):       rbac.User(iampolicy.Provisioner),
		rbac.User(iampolicy.Interruption): rbac.User(iampolicy.Provisioner),
	}
)

// iamExempt are grants the ground cannot exercise, and why they are kept.
var iamExempt = map[string]string{
	// The ground gives the functions CLUSTER_ENDPOINT and CLUSTER_CA; a
	// deploy without -c clusterEndpoint does not, and every function reads
	// them from EKS (pkg/eksauth's tests). The launching functions also
	// read the cluster's details for user data, which the ground exercises.
	"binder/DescribeCluster": "endpoint and CA given on the ground",
	// The installer runs only as the stack's custom resource; the ground
	// installs the same objects as an administrator (pkg/install's tests
	// run the custom resource's requests on envtest).
	"installer/DescribeCluster": "custom resource only; pkg/install tests",
	// The live catalog (JOIST_CATALOG=live, what the stack sets) reads
	// types, offerings and prices; the ground plans with the embedded one
	// (pkg/catalog/live's tests run it against fakes of these APIs).
	"provisioner/Pricing": "live catalog only",
	"reaper/Pricing":      "live catalog only",
	"provisioner/RegionalReads/ec2:DescribeInstanceTypes":         "live catalog only",
	"reaper/RegionalReads/ec2:DescribeInstanceTypes":              "live catalog only",
	"provisioner/RegionalReads/ec2:DescribeInstanceTypeOfferings": "live catalog only",
	"reaper/RegionalReads/ec2:DescribeInstanceTypeOfferings":      "live catalog only",
	"provisioner/RegionalReads/ec2:DescribeSpotPriceHistory":      "live catalog only",
	"reaper/RegionalReads/ec2:DescribeSpotPriceHistory":           "live catalog only",
	// amiSelectorTerms by id, name or tags (pkg/launch's AMI tests); the
	// scenarios use the SSM aliases.
	"provisioner/RegionalReads/ec2:DescribeImages":                 "AMI selector terms; pkg/launch tests",
	"reaper/RegionalReads/ec2:DescribeImages":                      "AMI selector terms; pkg/launch tests",
	"interruption/Pricing":                                         "live catalog only",
	"interruption/RegionalReads/ec2:DescribeInstanceTypes":         "live catalog only",
	"interruption/RegionalReads/ec2:DescribeInstanceTypeOfferings": "live catalog only",
	"interruption/RegionalReads/ec2:DescribeSpotPriceHistory":      "live catalog only",
	"interruption/RegionalReads/ec2:DescribeImages":                "AMI selector terms; pkg/launch tests",
}

// noUnusedIAM fails the run when a statement's action was never the only
// grant of some request: removing it would break nothing the tests see.
func noUnusedIAM() error {
	var policies []iampolicy.Policy
	for _, p := range iampolicy.Principals() {
		policies = append(policies, iampolicy.MustFor(p, testenv.IAMParams("hoon-cluster")))
	}
	if unused := testenv.Unneeded(policies, testenv.Grants(), iamExempt, iamSameAs); len(unused) > 0 {
		return fmt.Errorf("IAM grants no test needed (remove them, or exempt them in main_test.go with the reason):\n  %s", strings.Join(unused, "\n  "))
	}
	return nil
}

// rbacExempt are RBAC verbs the ground cannot exercise, and why.
var rbacExempt = map[string]string{
	// A repeat of an identical Event is a patch of its count; pkg/kube's
	// TestEvent_WorksWithJoistsClusterRole proves create+patch suffice.
	"joist:binder: patch /events": "repeated Events; pkg/kube tests",
	// A planned pod that no longer fits its node is handed back (its plan
	// annotation removed); pkg/binding's tests.
	"joist:binder: patch /pods": "unplan; pkg/binding tests",
	// The pass labels a node only if it binds onto it before any binder
	// pass saw it; pkg/binding's tests label nodes.
	"joist:provisioner: patch /nodes": "labels before binding; pkg/binding tests",
	// The interruption function runs the same pass for the replacement:
	// whether it labels a node first depends on the same race.
	"joist:interruption: patch /nodes": "labels before binding (the provisioner's pass); pkg/binding tests",
	// The drain waits for the VolumeAttachments of drained pods' volumes
	// (pkg/termination's envtest tests); no scenario attaches volumes.
	"joist:reaper: get /persistentvolumes": "volume attachments; pkg/termination tests",
	// client-go's informers stream the initial list in a watch where the
	// API server can (WatchList); list is their fallback on older servers.
	"system:serviceaccount:joist:joist-forwarder: list /pods":  "informer fallback",
	"system:serviceaccount:joist:joist-forwarder: list /nodes": "informer fallback",
}

// noUnusedRBAC fails the run when an RBAC verb was never used.
func noUnusedRBAC() error {
	k := testenv.SharedKube()
	if k == nil {
		return nil
	}
	reqs, err := k.AuditRequests()
	if err != nil {
		return err
	}
	if unused := testenv.RBACUnneeded(reqs, rbacExempt, rbacSameAs); len(unused) > 0 {
		return fmt.Errorf("RBAC rules no test needed (remove them, or exempt them in main_test.go with the reason):\n  %s", strings.Join(unused, "\n  "))
	}
	return nil
}
