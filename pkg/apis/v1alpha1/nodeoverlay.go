package v1alpha1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, version and kind of the NodeOverlay (karpenter.sh/v1alpha1,
// sigs.k8s.io/karpenter v1.15 pkg/apis/v1alpha1; alpha there, behind the
// NodeOverlay feature gate). It shares this package's version, not its
// group: the AWSNodeTemplate is karpenter.k8s.aws's.
const (
	GroupCore             = "karpenter.sh"
	KindNodeOverlay       = "NodeOverlay"
	APIVersionNodeOverlay = GroupCore + "/" + Version
)

// NodeOverlay changes, for the instance types and offerings its
// requirements select in every NodePool, the price the scheduler ranks
// them by and the capacity it sees.
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeOverlaySpec `json:"spec"`
	Status json.RawMessage `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec is what an overlay selects and what it changes.
type NodeOverlaySpec struct {
	// Requirements select instance types and offerings (a pool's name
	// as karpenter.sh/nodepool, its template labels, the types' labels,
	// an offering's zone and capacity type); none selects every one.
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
	// PriceAdjustment changes the price: "+0.5" or "-0.5" (USD per
	// hour), "+10%" or "-10%" (at most -100%). Exclusive with Price.
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the price (USD per hour).
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources to the selected types (never cpu,
	// memory, ephemeral-storage or pods).
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that select the same offering: the highest
	// applies (1 to 10000; unset is lowest).
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is a requirement of a NodeOverlay (no
// minValues). Operators are the core ones plus Gte and Lte.
type NodeSelectorRequirement struct {
	Key      string                      `json:"key"`
	Operator corev1.NodeSelectorOperator `json:"operator"`
	Values   []string                    `json:"values,omitempty"`
}
