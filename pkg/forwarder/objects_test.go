package forwarder

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/joist-dev/joist/pkg/pods"
)

// realisticPod is a bound pod as a cluster holds it: labels, annotations,
// an owner, two containers with resources, env and probes, volumes and a
// status with conditions.
func realisticPod(i int, node string) *corev1.Pod {
	name := fmt.Sprintf("web-7c9f8d6b5-%05d", i)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}, PeriodSeconds: 10}
	c := corev1.Container{
		Name: "app", Image: "registry.example.com/team/web:1.2.3",
		Env:            []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "PORT", Value: "8080"}},
		Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
		Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
		LivenessProbe:  probe,
		ReadinessProbe: probe,
		VolumeMounts:   []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
	}
	sidecar := c
	sidecar.Name = "proxy"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: name, UID: k8stypes.UID(fmt.Sprintf("0b7e2a8c-3f1d-4c55-9a1e-%012d", i)),
			ResourceVersion: "123456", Labels: map[string]string{"app": "web", "pod-template-hash": "7c9f8d6b5"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c9f8d6b5", UID: "rs-uid"}},
		},
		Spec: corev1.PodSpec{
			NodeName: node, Containers: []corev1.Container{c, sidecar},
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.12.34",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}
}

// TestSlimBoundPodKeepsWhatTheForwarderReads: the informer's transform
// keeps the pod's key, UID and node, and decides, from the full pod, the
// same "needs its node" that pods.Reschedulable does, for every way
// a pod can stop needing it.
func TestSlimBoundPodKeepsWhatTheForwarderReads(t *testing.T) {
	mod := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := realisticPod(1, "ip-10-0-1-1")
		f(p)
		return p
	}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		needs bool
	}{
		{"a running ReplicaSet pod", realisticPod(1, "ip-10-0-1-1"), true},
		{"a pending bound pod", mod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), true},
		{"succeeded", mod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed", mod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"terminating", mod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }), false},
		{"a mirror pod", mod(func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }), false},
		{"a DaemonSet's", mod(func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "DaemonSet" }), false},
		{"a Node's (static)", mod(func(p *corev1.Pod) {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: "Node", Name: "n"})
		}), false},
		{"unowned", mod(func(p *corev1.Pod) { p.OwnerReferences = nil }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pods.Reschedulable(tt.pod); got != tt.needs {
				t.Fatalf("table is wrong: Reschedulable = %v", got)
			}
			obj, err := slimBoundPod(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			slim, ok := obj.(*boundPod)
			if !ok {
				t.Fatalf("slimBoundPod returned %T, want *boundPod", obj)
			}
			want := boundPod{Namespace: tt.pod.Namespace, Name: tt.pod.Name, UID: tt.pod.UID, Node: tt.pod.Spec.NodeName, Needs: tt.needs}
			if *slim != want {
				t.Errorf("slimBoundPod = %+v, want %+v", *slim, want)
			}
			// The informer keys (and deletes) the slim object as it would
			// the pod.
			wantKey, _ := cache.MetaNamespaceKeyFunc(tt.pod)
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(slim)
			if err != nil || key != wantKey {
				t.Errorf("informer key = %q, %v; want %q", key, err, wantKey)
			}
			tomb := cache.DeletedFinalStateUnknown{Key: key, Obj: slim}
			if got, ok := unwrap(tomb).(*boundPod); !ok || got != slim {
				t.Errorf("a tombstone does not unwrap to the boundPod")
			}
		})
	}
}

// BenchmarkBoundPodMemory measures what the forwarder keeps per bound pod:
// the informer's store (a cache.Indexer of transformed pods, keyed as the
// informer keys them) plus the outbox's UID→node and node→UIDs maps, over
// N pods on N/30 nodes. It reports retained heap bytes per pod.
//
//	go test -run '^$' -bench BoundPodMemory -benchmem ./pkg/forwarder/
func BenchmarkBoundPodMemory(b *testing.B) {
	const n = 100_000
	pods := make([]*corev1.Pod, 0, 1000)
	for i := range cap(pods) {
		pods = append(pods, realisticPod(i, ""))
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		box := newOutbox(Options{Cluster: "c", Bus: "b"})
		for i := range n {
			// A fresh pod per i, as the watch decodes one: its name and
			// UID strings are the pod's own, not shared.
			p := pods[i%len(pods)].DeepCopy()
			p.Name = fmt.Sprintf("web-7c9f8d6b5-%06d", i)
			p.UID = k8stypes.UID(fmt.Sprintf("0b7e2a8c-3f1d-4c55-9a1e-%012d", i))
			p.Spec.NodeName = fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/30/250, i/30%250)
			obj, _ := slimBoundPod(p)
			if err := store.Add(obj); err != nil {
				b.Fatal(err)
			}
			box.boundPodChanged(obj.(*boundPod), time.Time{})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/pod")
		runtime.KeepAlive(store)
		runtime.KeepAlive(box)
	}
}
