package pods

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// The rules below are kube-scheduler's, written from its documentation,
// for the checkers that read plans and nodes (pkg/scheduling/verify, the
// binder's Fits); the packer keeps its own reading, so a bug in one is not
// repeated in the other.

// HostPort is a host port a pod takes on its node, as the NodePorts
// filter sees it: an empty protocol is TCP and an empty IP is 0.0.0.0.
type HostPort struct {
	IP       string
	Protocol corev1.Protocol
	Port     int32
}

// ClashesWith is the NodePorts rule: the same port and protocol, on the
// same IP or where either side listens on every address (0.0.0.0).
func (a HostPort) ClashesWith(b HostPort) bool {
	if a.Port != b.Port || a.Protocol != b.Protocol {
		return false
	}
	return a.IP == b.IP || a.IP == "0.0.0.0" || b.IP == "0.0.0.0"
}

// HostPorts lists the host ports a pod takes: those of its containers
// and of its init containers (the packer's reading, and the safe one: a
// sidecar keeps its port, and a clash of init containers fails the pod).
func HostPorts(p *corev1.Pod) []HostPort {
	var out []HostPort
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, cp := range c.Ports {
				if cp.HostPort == 0 {
					continue
				}
				bp := HostPort{IP: cp.HostIP, Protocol: cp.Protocol, Port: cp.HostPort}
				if bp.IP == "" {
					bp.IP = "0.0.0.0"
				}
				if bp.Protocol == "" {
					bp.Protocol = corev1.ProtocolTCP
				}
				out = append(out, bp)
			}
		}
	}
	return out
}

// AffinitySelector is an affinity term's or spread's selector as the
// kube-scheduler applies it: the labelSelector, plus, for each key of
// matchLabelKeys the owner has, key in (owner's value), and for each key
// of mismatchLabelKeys, key notin (owner's value). No selector selects
// nothing.
func AffinitySelector(ls *metav1.LabelSelector, owner map[string]string, matchKeys, mismatchKeys []string) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	add := func(keys []string, op selection.Operator) {
		for _, k := range keys {
			v, ok := owner[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, op, []string{v})
			if err != nil {
				continue
			}
			sel = sel.Add(*r)
		}
	}
	add(matchKeys, selection.In)
	add(mismatchKeys, selection.NotIn)
	return sel
}
