// Package apis holds the Go types of the Karpenter spec APIs Joist reads
// unchanged: karpenter.sh/v1alpha5 Provisioner and
// karpenter.k8s.aws/v1alpha1 AWSNodeTemplate (Karpenter v0.20 era),
// karpenter.sh/v1beta1 NodePool and karpenter.k8s.aws/v1beta1
// EC2NodeClass (v0.32–v0.37), and karpenter.sh/v1 NodePool and
// karpenter.k8s.aws/v1 EC2NodeClass (v1.x).
//
// The types only describe the wire format (JSON/YAML field names and
// shapes). Defaulting, validation, conversion and mapping onto Joist's
// internal model live in pkg/specs, so that these packages stay free of
// logic and can be imported by anything, including generated clients.
package apis

// API groups of the four kinds.
const (
	// GroupCore is Karpenter's core group (Provisioner, NodePool).
	GroupCore = "karpenter.sh"
	// GroupAWS is the AWS provider's group (AWSNodeTemplate, EC2NodeClass).
	GroupAWS = "karpenter.k8s.aws"
)
