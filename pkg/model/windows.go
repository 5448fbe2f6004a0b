package model

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// LabelWindowsBuild is the label a Windows node's kubelet sets to its
// operating system's build (node.kubernetes.io/windows-build).
const LabelWindowsBuild = corev1.LabelWindowsBuild

// WindowsServer is a version of the EKS optimized Windows AMIs (Windows
// Server Core, the only edition Karpenter launches) and the build its
// nodes report.
type WindowsServer struct {
	// Family is the amiFamily: Windows2019, Windows2022 or Windows2025.
	Family string
	// Version is the year: 2019, 2022 or 2025.
	Version string
	// Build is the node.kubernetes.io/windows-build value.
	Build string
}

// WindowsServers are the Windows versions Karpenter v1.15 launches, with
// its build numbers (pkg/apis/v1/labels.go there).
var WindowsServers = []WindowsServer{
	{Family: "Windows2019", Version: "2019", Build: "10.0.17763"},
	{Family: "Windows2022", Version: "2022", Build: "10.0.20348"},
	{Family: "Windows2025", Version: "2025", Build: "10.0.26100"},
}

// WindowsServerOf returns the Windows version an AMI family names: an
// amiFamily (Windows2022) or an alias family (windows2022), in any case.
// ok is false for every other family.
func WindowsServerOf(family string) (WindowsServer, bool) {
	for _, w := range WindowsServers {
		if strings.EqualFold(family, w.Family) {
			return w, true
		}
	}
	return WindowsServer{}, false
}

// Windows returns the Windows version the node class's nodes run: its
// amiFamily's, or, when the class names no amiFamily, its alias term's
// (windows2022@latest). ok is false for Linux families and a nil class.
// Planning (the catalog's labels and sizes) and launching (the AMI and the
// bootstrap) both ask here.
func (nc *NodeClass) Windows() (WindowsServer, bool) {
	if nc == nil {
		return WindowsServer{}, false
	}
	if nc.AMIFamily != "" {
		return WindowsServerOf(nc.AMIFamily)
	}
	for _, t := range nc.AMISelector {
		if fam, _, ok := strings.Cut(t.Alias, "@"); ok {
			return WindowsServerOf(fam)
		}
	}
	return WindowsServer{}, false
}
