package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	grace := func(s int64) *int64 { return &s }
	pod := func(f func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{}}}
		p.Status.Phase = corev1.PodRunning
		if f != nil {
			f(p)
		}
		return p
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		deadline time.Time
		want     Disposition
	}{
		{"a running pod is evicted", pod(nil), time.Time{}, Evict},
		{"a finished pod is ignored", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), time.Time{}, Ignore},
		{"a mirror pod is ignored", pod(func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }), time.Time{}, Ignore},
		{"a pod tolerating the disrupted taint is ignored", pod(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}), time.Time{}, Ignore},
		{"a pod tolerating another taint is evicted", pod(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "service", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}), time.Time{}, Evict},
		{"v1 do-not-disrupt blocks", pod(func(p *corev1.Pod) { p.Annotations[AnnotationDoNotDisrupt] = "true" }), time.Time{}, Block},
		{"v0.20 do-not-evict blocks", pod(func(p *corev1.Pod) { p.Annotations[AnnotationDoNotEvict] = "true" }), time.Time{}, Block},
		{"a do-not-disrupt duration blocks while it runs", pod(func(p *corev1.Pod) {
			p.Annotations[AnnotationDoNotDisrupt] = "1h"
			p.Status.StartTime = &metav1.Time{Time: now.Add(-59 * time.Minute)}
		}), time.Time{}, Block},
		{"a do-not-disrupt duration that has run out does not", pod(func(p *corev1.Pod) {
			p.Annotations[AnnotationDoNotDisrupt] = "1h"
			p.Status.StartTime = &metav1.Time{Time: now.Add(-time.Hour)}
		}), time.Time{}, Evict},
		{"an unreadable do-not-disrupt does not block", pod(func(p *corev1.Pod) { p.Annotations[AnnotationDoNotDisrupt] = "yes" }), time.Time{}, Evict},
		{"do-not-evict knows true alone", pod(func(p *corev1.Pod) {
			p.Annotations[AnnotationDoNotEvict] = "1h"
			p.Status.StartTime = &metav1.Time{Time: now}
		}), time.Time{}, Evict},
		{"do-not-disrupt gives way at the deadline", pod(func(p *corev1.Pod) { p.Annotations[AnnotationDoNotDisrupt] = "true" }), now, ForceDelete},
		{"a pod is force-deleted when its grace would end past the deadline", pod(func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = grace(60)
		}), now.Add(59 * time.Second), ForceDelete},
		{"a pod whose grace ends before the deadline is evicted", pod(func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = grace(60)
		}), now.Add(61 * time.Second), Evict},
		{"a terminating pod within its grace is waited on", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(10 * time.Second)}
		}), time.Time{}, Wait},
		{"a pod stuck terminating past its grace is ignored", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Second)}
		}), time.Time{}, Ignore},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.pod, now, tc.deadline); got != tc.want {
				t.Errorf("Classify = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTierOf(t *testing.T) {
	ds := []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d"}}
	cases := []struct {
		name string
		pod  corev1.Pod
		want Tier
	}{
		{"plain pod drains first", corev1.Pod{}, TierNonCritical},
		{"DaemonSet pod after workloads", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ds}}, TierNonCriticalDaemon},
		{"critical pod after non-critical", corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "system-cluster-critical"}}, TierCritical},
		{"critical DaemonSet pod last", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ds}, Spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}}, TierCriticalDaemon},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TierOf(&tc.pod); got != tc.want {
				t.Errorf("TierOf = %s, want %s", got, tc.want)
			}
		})
	}
}
