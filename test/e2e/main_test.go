// Package e2e runs Joist's whole loop on the local test ground: a real
// kube-apiserver, kumo, the EC2 simulator, and the functions as real
// Lambda bootstraps under aws-lambda-rie.
package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, noUnusedIAM, noUnusedRBAC) }

// iamExempt are grants the ground cannot exercise, and why they are kept.
var iamExempt = map[string]string{
	// The ground gives the functions CLUSTER_ENDPOINT and CLUSTER_CA; a
	// deploy does not, and the functions read them from EKS.
	"provisioner/DescribeCluster": "endpoint and CA given on the ground",
	"reaper/DescribeCluster":      "endpoint and CA given on the ground",
	"binder/DescribeCluster":      "endpoint and CA given on the ground",
	// The live catalog (JOIST_CATALOG=live, what the stack sets) reads
	// types, offerings and prices; the ground plans with the embedded one
	// (the live catalog's own tests run it against fakes of these APIs).
	"provisioner/Pricing": "live catalog only",
	"reaper/Pricing":      "live catalog only",
	"provisioner/RegionalReads/ec2:DescribeInstanceTypes":         "live catalog only",
	"reaper/RegionalReads/ec2:DescribeInstanceTypes":              "live catalog only",
	"provisioner/RegionalReads/ec2:DescribeInstanceTypeOfferings": "live catalog only",
	"reaper/RegionalReads/ec2:DescribeInstanceTypeOfferings":      "live catalog only",
	"provisioner/RegionalReads/ec2:DescribeSpotPriceHistory":      "live catalog only",
	"reaper/RegionalReads/ec2:DescribeSpotPriceHistory":           "live catalog only",
}

// noUnusedIAM fails the run when a statement's action was never the only
// grant of some request: removing it would break nothing the tests see.
func noUnusedIAM() error {
	var policies []iampolicy.Policy
	for _, p := range iampolicy.Principals() {
		policies = append(policies, iampolicy.MustFor(p, testenv.IAMParams("hoon-cluster")))
	}
	if unused := testenv.Unneeded(policies, testenv.Grants(), iamExempt); len(unused) > 0 {
		return fmt.Errorf("IAM grants no test needed (remove them, or exempt them in main_test.go with the reason):\n  %s", strings.Join(unused, "\n  "))
	}
	return nil
}

// rbacExempt are RBAC rules the ground cannot exercise, and why.
var rbacExempt = map[string]string{}

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
	if unused := testenv.RBACUnneeded("hoon-cluster", reqs, rbacExempt); len(unused) > 0 {
		return fmt.Errorf("RBAC rules no test needed (remove them, or exempt them in main_test.go with the reason):\n  %s", strings.Join(unused, "\n  "))
	}
	return nil
}
