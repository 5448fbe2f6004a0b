package kubeletcel

import (
	"strings"
	"testing"
)

var m5xlarge = Vars{VCPUs: 4, MemoryMiB: 16384, DefaultENIs: 4, IPsPerENI: 15, MaxPods: 58, InstanceType: "m5.xlarge"}

func TestReserved(t *testing.T) {
	for _, tc := range []struct {
		resource, expr, want, wantErr string
	}{
		{"cpu", "vcpus * 10", "40m", ""},
		{"cpu", "max(60, vcpus * 30)", "120m", ""},
		{"cpu", "70 + vcpus", "80m", ""}, // 74m rounded up to 10m
		{"cpu", "min(double(vcpus) * 2.5, 100)", "10m", ""},
		{"cpu", "vcpus * 0.5", "", "no matching overload"}, // CEL mixes no ints and doubles
		{"memory", "memory_mib / 100", "176Mi", ""},        // 163 rounded up to 16Mi
		{"memory", "11 * max_pods + 255", "896Mi", ""},
		{"memory", "max(double(memory_mib) * 0.01, 255)", "256Mi", ""},
		{"ephemeral-storage", "vcpus / 2", "2Gi", ""},
		{"pid", "default_enis * ips_per_eni", "60", ""},
		{"cpu", "instance_type == 'm5.xlarge' ? 500 : 100", "500m", ""},
		{"cpu", "vcpus - 10", "", "below 0"},
		{"cpu", "double(vcpus) / 0.0", "", "gives +Inf"},
		{"cpu", "cores * 10", "", "undeclared reference to 'cores'"},
		{"cpu", "'ten'", "", "gives string, want an int or a double"},
	} {
		t.Run(tc.resource+": "+tc.expr, func(t *testing.T) {
			got, err := Reserved(tc.resource, tc.expr, m5xlarge)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Reserved = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Reserved = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestMaxPods(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		want    int32
		wantErr string
	}{
		{"vcpus * 8", 32, ""},
		{"min(max_pods, 110)", 58, ""},
		{"default_enis * (ips_per_eni - 1) + 2", 58, ""},
		{"0 - vcpus", 0, "outside 0 to"},
		{"vcpus * 1000000000", 0, "outside 0 to"},
		{"vcpus *", 0, "Syntax error"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := MaxPods(tc.expr, m5xlarge)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MaxPods = %d, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MaxPods = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
