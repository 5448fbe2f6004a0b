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
	// The interruption function launches with the provisioner's pass
	// (provisioning.Replace): the same code, proven by the provisioner's
	// scenarios for what the interruption scenarios (al2023@latest, specs
	// in SSM by path, templates the provisioner already made) do not reach.
	"interruption/DescribeCluster":                                 "endpoint and CA given on the ground",
	"interruption/Pricing":                                         "live catalog only",
	"interruption/RegionalReads/ec2:DescribeInstanceTypes":         "live catalog only",
	"interruption/RegionalReads/ec2:DescribeInstanceTypeOfferings": "live catalog only",
	"interruption/RegionalReads/ec2:DescribeSpotPriceHistory":      "live catalog only",
	"interruption/RegionalReads/ec2:DescribeAvailabilityZones":     "the provisioner's pass; proven by its scenarios",
	"interruption/RegionalReads/ec2:DescribeImages":                "AMI selection by name or id; the provisioner's scenarios",
	"interruption/ReadSpecs/ssm:GetParameter":                      "the spec store; the provisioner's scenarios",
	"interruption/ReadSpecs/ssm:GetParameters":                     "the spec store; the provisioner's scenarios",
	"interruption/CreateTaggedResources/ec2:CreateLaunchTemplate":  "a replacement needing a template the provisioner has not made",
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
var rbacExempt = map[string]string{
	// The interruption function's replacement is the provisioner's pass
	// (provisioning.Replace); these verbs are that pass's, proven by the
	// provisioner's scenarios, and not reached by the interruption ones.
	"joist:interruption: create /pods/binding":                    "a replacement pass that finds a Ready node with room binds",
	"joist:interruption: get /nodes":                              "the same binding path",
	"joist:interruption: patch /nodes":                            "the same binding path (a node's missing labels)",
	"joist:interruption: list /persistentvolumeclaims":            "pods with volumes",
	"joist:interruption: list /persistentvolumes":                 "pods with volumes",
	"joist:interruption: list storage.k8s.io/storageclasses":      "pods with volumes",
	"joist:interruption: list karpenter.sh/provisioners":          "specs as CRDs",
	"joist:interruption: list karpenter.sh/nodepools":             "specs as CRDs",
	"joist:interruption: list karpenter.k8s.aws/awsnodetemplates": "specs as CRDs",
	"joist:interruption: list karpenter.k8s.aws/ec2nodeclasses":   "specs as CRDs",
	"joist:interruption: patch /events":                           "a repeated Event",
	"joist:interruption: create coordination.k8s.io/leases":       "the provisioner creates the Lease first on the ground",
	"joist:interruption: get coordination.k8s.io/leases":          "the check names hoon-cluster's Lease; the interruption scenarios run as their own clusters",
	"joist:interruption: update coordination.k8s.io/leases":       "as get",
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
	if unused := testenv.RBACUnneeded("hoon-cluster", reqs, rbacExempt); len(unused) > 0 {
		return fmt.Errorf("RBAC rules no test needed (remove them, or exempt them in main_test.go with the reason):\n  %s", strings.Join(unused, "\n  "))
	}
	return nil
}
