// Package v1 holds Karpenter's v1 spec APIs: karpenter.sh/v1 NodePool
// (sigs.k8s.io/karpenter v1.15 pkg/apis/v1) and karpenter.k8s.aws/v1
// EC2NodeClass (karpenter-provider-aws v1.15 pkg/apis/v1).
//
// Durations and volume sizes are kept as the strings the user wrote, so
// that validation can apply the CRD patterns to the exact text and
// conversion can write them back unchanged. Types only: defaulting,
// validation and mapping are in pkg/specs.
package v1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Groups, version and kinds of the v1 APIs.
const (
	GroupCore            = "karpenter.sh"
	GroupAWS             = "karpenter.k8s.aws"
	Version              = "v1"
	KindNodePool         = "NodePool"
	KindEC2NodeClass     = "EC2NodeClass"
	APIVersionNodePool   = GroupCore + "/" + Version
	APIVersionNodeClass  = GroupAWS + "/" + Version
	Never                = "Never"
	NodeSelectorOpGte    = corev1.NodeSelectorOperator("Gte")
	NodeSelectorOpLte    = corev1.NodeSelectorOperator("Lte")
	DefaultExpireAfter   = "720h"
	DefaultConsolidation = "WhenEmptyOrUnderutilized"
)

// Consolidation policies.
const (
	ConsolidationPolicyWhenEmpty                = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized = "WhenEmptyOrUnderutilized"
	ConsolidationPolicyBalanced                 = "Balanced"
)

// NodePool is a Karpenter v1 node pool.
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePoolSpec    `json:"spec"`
	Status json.RawMessage `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired state of a NodePool.
type NodePoolSpec struct {
	// Template is what every node of the pool starts from. Required.
	Template NodeClaimTemplate `json:"template"`
	// Disruption says when the pool's nodes may be retired.
	Disruption Disruption `json:"disruption,omitempty"`
	// Limits caps the pool's total resources, including "nodes".
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Weight orders pools, higher first (1-100; unset counts as 0).
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the pool static: a fixed number of nodes (alpha).
	Replicas *int64 `json:"replicas,omitempty"`
}

// Disruption configures consolidation and disruption budgets.
type Disruption struct {
	// ConsolidateAfter is a duration such as 30s or 1h5m, or Never.
	ConsolidateAfter *string `json:"consolidateAfter,omitempty"`
	// ConsolidationPolicy is WhenEmpty, WhenEmptyOrUnderutilized or Balanced.
	ConsolidationPolicy string `json:"consolidationPolicy,omitempty"`
	// Budgets limit how many nodes may be disrupted at once.
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits concurrent disruptions, optionally only during a window.
type Budget struct {
	// Reasons the budget applies to: Underutilized, Empty, Drifted,
	// Unhealthy. All reasons when empty.
	Reasons []string `json:"reasons,omitempty"`
	// Nodes is a count ("5") or a percentage ("10%").
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC) when the budget window opens.
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the window stays open (hours and minutes).
	Duration *string `json:"duration,omitempty"`
}

// NodeClaimTemplate is the metadata and spec every node starts from.
type NodeClaimTemplate struct {
	ObjectMeta TemplateMeta          `json:"metadata,omitempty"`
	Spec       NodeClaimTemplateSpec `json:"spec"`
}

// TemplateMeta is the labels and annotations put on every node.
type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the scheduling and lifetime part of a template.
type NodeClaimTemplateSpec struct {
	Taints        []corev1.Taint `json:"taints,omitempty"`
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes; required (may be empty).
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef names the EC2NodeClass. Required.
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod caps drain time (e.g. 48h); unset waits
	// forever.
	TerminationGracePeriod *string `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is the maximum node lifetime, or Never.
	ExpireAfter *string `json:"expireAfter,omitempty"`
}

// NodeSelectorRequirementWithMinValues is a node selector requirement
// with Karpenter's minValues and the Gte/Lte operators.
type NodeSelectorRequirementWithMinValues struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

// NodeClassReference names a node class object.
type NodeClassReference struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Group string `json:"group"`
}
