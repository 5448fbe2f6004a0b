package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDoNotDisruptUntil(t *testing.T) {
	started := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pod := func(annotations map[string]string, start bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: annotations}}
		if start {
			p.Status.StartTime = &metav1.Time{Time: started}
		}
		return p
	}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		protected bool
		until     time.Time
		err       string // a part of the error; "" for none
	}{
		{"no annotation", pod(nil, true), false, time.Time{}, ""},
		{"true, for good", pod(map[string]string{AnnotationDoNotDisrupt: "true"}, true), true, time.Time{}, ""},
		{"v0.20's do-not-evict, for good", pod(map[string]string{AnnotationDoNotEvict: "true"}, true), true, time.Time{}, ""},
		{"a duration, from the pod's start", pod(map[string]string{AnnotationDoNotDisrupt: "90m"}, true), true, started.Add(90 * time.Minute), ""},
		{"a duration on a pod not started yet: for now, for good", pod(map[string]string{AnnotationDoNotDisrupt: "5m"}, false), true, time.Time{}, ""},
		{"do-not-evict takes no duration", pod(map[string]string{AnnotationDoNotEvict: "1h"}, true), false, time.Time{}, ""},
		{"false protects nothing, and says why", pod(map[string]string{AnnotationDoNotDisrupt: "false"}, true), false, time.Time{}, `pod ns/p: annotation karpenter.sh/do-not-disrupt="false" is neither "true" nor a duration`},
		{"zero protects nothing", pod(map[string]string{AnnotationDoNotDisrupt: "0s"}, true), false, time.Time{}, "not a positive duration"},
		{"a negative duration protects nothing", pod(map[string]string{AnnotationDoNotDisrupt: "-5m"}, true), false, time.Time{}, "not a positive duration"},
		{"do-not-evict=true wins over an unreadable do-not-disrupt", pod(map[string]string{AnnotationDoNotEvict: "true", AnnotationDoNotDisrupt: "x"}, true), true, time.Time{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			until, protected, err := DoNotDisruptUntil(tc.pod)
			if protected != tc.protected || !until.Equal(tc.until) {
				t.Errorf("protected %v until %v, want %v until %v", protected, until, tc.protected, tc.until)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one with %q", err, tc.err)
			}
			// DoNotDisrupt agrees at every moment.
			for _, at := range []time.Time{started, started.Add(89 * time.Minute), started.Add(90 * time.Minute), started.Add(100 * 24 * time.Hour)} {
				want := protected && (until.IsZero() || at.Before(until))
				if got := DoNotDisrupt(tc.pod, at); got != want {
					t.Errorf("DoNotDisrupt at %v = %v, want %v", at, got, want)
				}
			}
		})
	}
}
