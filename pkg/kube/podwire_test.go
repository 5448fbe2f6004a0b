package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/scale"
	"github.com/joist-dev/joist/test/testenv"
)

const (
	protobufType = "application/vnd.kubernetes.protobuf"
	wireNode     = "ip-10-1-0-1.ap-northeast-2.compute.internal"
)

// shape is a pod as created and the status then written for it (nil:
// none).
type shape struct {
	pod    *corev1.Pod
	status *corev1.PodStatus
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem)}
}

// shapes are pods of every shape Joist reads, in namespace ns: the scale
// benchmark's (an app with a sidecar, probes, environment, projected and
// ConfigMap volumes, spread, Running with container statuses; a
// DaemonSet's pod with a hostPath volume), one carrying every field
// ReducePod keeps or drops (affinity, spreads, host ports, claims
// persistent and ephemeral, init containers and a native sidecar, the
// overhead of a RuntimeClass, pod-level resources, a priority, pull
// secrets, host aliases, DNS and security settings, readiness gates,
// kubectl's last-applied copy, a finalizer), pending ones (nominated,
// gated) and a finished one.
func shapes(ns string) []shape {
	always := corev1.ContainerRestartPolicyAlways
	app := scale.AppPod(0, wireNode)
	ds := scale.DaemonSetPod("aws-node", wireNode)
	appStatus, dsStatus := scale.Running(app), scale.Running(ds)

	rich := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: map[string]string{"app": "rich", "pod-template-hash": "6d5f"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod"}`, "karpenter.sh/do-not-disrupt": "true"},
			Finalizers:  []string{"joist.sh/test"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "rich",
				UID: "00000000-0000-0000-0000-00000000000a", Controller: ptr(true)}}},
		Spec: corev1.PodSpec{
			NodeName: wireNode, ServiceAccountName: "rich", PriorityClassName: "podwire-high", RuntimeClassName: ptr("podwire-kata"),
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"ap-northeast-2a", "ap-northeast-2b"}}}}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}}}}},
				},
				PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 5,
					PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rich"}}}}},
			},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr(int32(2)),
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rich"}}},
				{MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway, MatchLabelKeys: []string{"pod-template-hash"},
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rich"}}},
			},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "rich", Effect: corev1.TaintEffectNoSchedule}},
			InitContainers: []corev1.Container{
				{Name: "migrate", Image: "rich:v1", Command: []string{"/migrate"}, Resources: corev1.ResourceRequirements{Requests: rl("200m", "128Mi")}},
				{Name: "proxy", Image: "envoy:v1", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("100m", "64Mi")},
					Ports:        []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}},
					StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(15001)}}}},
			},
			Containers: []corev1.Container{{Name: "app", Image: "rich:v1", Args: []string{"--serve"},
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Resources:       corev1.ResourceRequirements{Requests: rl("500m", "512Mi")},
				Env:             []corev1.EnvVar{{Name: "MODE", Value: "serve"}},
				EnvFrom:         []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "rich"}}}},
				VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "scratch", MountPath: "/scratch"}, {Name: "creds", MountPath: "/creds"}, {Name: "tmp", MountPath: "/tmp"}},
				Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr(true), ReadOnlyRootFilesystem: ptr(true)},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-rich-0"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q("1Gi")}}}}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "rich"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(q("1Gi"))}}},
			},
			Resources:        &corev1.ResourceRequirements{Requests: rl("2", "2Gi"), Limits: rl("4", "4Gi")},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
			HostAliases:      []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"db.local"}}},
			DNSPolicy:        corev1.DNSNone,
			DNSConfig:        &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Searches: []string{"svc.cluster.local"}},
			SecurityContext:  &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(1000))},
			ReadinessGates:   []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}},
		},
	}
	richStatus := scale.Running(rich)
	richStatus.Conditions[0].Message = "a message nothing reads"
	richStatus.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "migrate", Image: "rich:v1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
		{Name: "proxy", Image: "envoy:v1", Ready: true, Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}

	nominated := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nominated", Annotations: map[string]string{"joist.sh/instance": "i-0123456789abcdef0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1", Resources: corev1.ResourceRequirements{Requests: rl("1", "1Gi")},
			Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 81}}}}},
	}
	nominatedStatus := &corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: wireNode, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu.", LastTransitionTime: metav1.Now()}}}

	gated := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated"},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/quota"}},
			Containers: []corev1.Container{{Name: "app", Image: "app:v1", Resources: corev1.ResourceRequirements{Requests: rl("1", "1Gi")}}}},
	}

	done := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "done", OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "done", UID: "00000000-0000-0000-0000-00000000000b"}}},
		Spec: corev1.PodSpec{NodeName: wireNode, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "job", Image: "job:v1", Command: []string{"/job"}, Resources: corev1.ResourceRequirements{Requests: rl("250m", "64Mi")}}}},
	}
	doneStatus := &corev1.PodStatus{Phase: corev1.PodSucceeded, PodIP: "10.1.128.40", PodIPs: []corev1.PodIP{{IP: "10.1.128.40"}},
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", Message: "completed"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "job", Image: "job:v1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}

	out := []shape{{app, &appStatus}, {ds, &dsStatus}, {rich, &richStatus}, {nominated, nominatedStatus}, {gated, nil}, {done, doneStatus}}
	for _, s := range out {
		s.pod.Namespace = ns
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// createShapes creates the shapes in a new namespace through the API
// server, as controllers and kubelets would (created, then the status
// written), gives the rich pod an ephemeral container and deletes it (its
// finalizer keeps it, terminating). It returns the namespace and the
// number of pods.
func createShapes(tb testing.TB, c kubernetes.Interface) (string, int) {
	tb.Helper()
	ctx := context.Background()
	for _, err := range []error{
		ignoreExists(c.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "podwire-high"}, Value: 1000}, metav1.CreateOptions{})),
		ignoreExists(c.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "podwire-kata"}, Handler: "kata",
			Overhead: &nodev1.Overhead{PodFixed: rl("250m", "120Mi")}}, metav1.CreateOptions{})),
	} {
		if err != nil {
			tb.Fatal(err)
		}
	}
	ns, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podwire-"}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("create namespace: %v", err)
	}
	// Tests that list every pod, or count namespaces, must not meet an
	// earlier test's (or an earlier run's, go test -count=N).
	tb.Cleanup(func() {
		if err := testenv.RemoveNamespace(context.Background(), c, ns.Name); err != nil {
			tb.Error(err)
		}
	})
	all := shapes(ns.Name)
	pods := c.CoreV1().Pods(ns.Name)
	for _, s := range all {
		p, err := pods.Create(ctx, s.pod, metav1.CreateOptions{})
		if err != nil {
			tb.Fatalf("create pod %s: %v", s.pod.Name, err)
		}
		if s.status != nil {
			p.Status = *s.status
			if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				tb.Fatalf("write the status of %s: %v", p.Name, err)
			}
		}
	}
	rich, err := pods.Get(ctx, "rich", metav1.GetOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	if rich.Spec.Overhead == nil || rich.Spec.Priority == nil || rich.Spec.Resources == nil {
		tb.Fatalf("the API server left the rich pod without overhead, priority or pod-level resources: %+v", rich.Spec)
	}
	rich.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Command: []string{"sh"}, TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}}}
	if _, err := pods.UpdateEphemeralContainers(ctx, "rich", rich, metav1.UpdateOptions{}); err != nil {
		tb.Fatalf("add an ephemeral container: %v", err)
	}
	if err := pods.Delete(ctx, "rich", metav1.DeleteOptions{}); err != nil {
		tb.Fatalf("delete the rich pod: %v", err)
	}
	return ns.Name, len(all)
}

func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// typedRead is the read EachPod replaced: the typed clientset's list,
// each pod reduced.
func typedRead(tb testing.TB, c kubernetes.Interface, ns, selector string) map[string]*corev1.Pod {
	tb.Helper()
	list, err := c.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		tb.Fatal(err)
	}
	in := kube.NewInterner()
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		kube.ReducePod(p, in)
		if p.Namespace == ns {
			out[p.Name] = p
		}
	}
	return out
}

func sameReads(t *testing.T, what string, want, got map[string]*corev1.Pod) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d pods, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		if g := got[name]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: pod %s differs from the typed read's (- typed, + this read):\n%s", what, name, diff.Diff(w, g))
		}
	}
}

// TestEachPod_SameAsTypedRead checks on the API server that EachPod,
// which drops fields before decoding them, gives exactly the pods the
// typed read and ReducePod give, for every shape, with and without a
// field selector; and that the server answers the page in protobuf (so
// the filtering read is the one compared).
func TestEachPod_SameAsTypedRead(t *testing.T) {
	env := testenv.Kube(t)
	ns, n := createShapes(t, env.Client)
	c := kube.New(env.Client)
	for _, sel := range []string{"", "spec.nodeName!="} {
		want := typedRead(t, env.Client, ns, sel)
		if sel == "" && len(want) != n {
			t.Fatalf("the typed read has %d pods, want %d", len(want), n)
		}
		got := map[string]*corev1.Pod{}
		if err := c.EachPod(context.Background(), sel, kube.NewInterner(), func(p *corev1.Pod) {
			if p.Namespace == ns {
				got[p.Name] = p
			}
		}); err != nil {
			t.Fatal(err)
		}
		sameReads(t, fmt.Sprintf("EachPod(%q)", sel), want, got)
		// EachPodBorrowed hands each pod in one struct: a copy of each
		// is the pod EachPod and the typed read give.
		borrowed, handed := map[string]*corev1.Pod{}, map[*corev1.Pod]bool{}
		if err := c.EachPodBorrowed(context.Background(), sel, kube.NewInterner(), func(p *corev1.Pod) {
			handed[p] = true
			if p.Namespace == ns {
				cp := *p
				borrowed[p.Name] = &cp
			}
		}); err != nil {
			t.Fatal(err)
		}
		sameReads(t, fmt.Sprintf("EachPodBorrowed(%q), copied", sel), want, borrowed)
		if len(handed) != 1 {
			t.Errorf("EachPodBorrowed(%q) handed %d structs, want one for every pod", sel, len(handed))
		}
	}

	var ct string
	if _, err := env.Client.CoreV1().RESTClient().Get().Resource("pods").Namespace(ns).
		SetHeader("Accept", protobufType+", application/json").Do(context.Background()).ContentType(&ct).Raw(); err != nil {
		t.Fatal(err)
	}
	if ct != protobufType {
		t.Fatalf("the API server answered a pod list in %q, want protobuf", ct)
	}
}

// TestPodPage_ContinuesAndFallsBackToJSON reads the namespace's pods two
// to a page, in protobuf and in JSON (the typed decoding, for a server
// that answers JSON): the same pods as the typed read, the same continue
// tokens as the typed list's.
func TestPodPage_ContinuesAndFallsBackToJSON(t *testing.T) {
	env := testenv.Kube(t)
	ns, _ := createShapes(t, env.Client)
	ctx := context.Background()
	want := typedRead(t, env.Client, ns, "")
	for _, accept := range []string{protobufType, "application/json"} {
		got := map[string]*corev1.Pod{}
		in := kube.NewInterner()
		opts := metav1.ListOptions{Limit: 2}
		for pages := 1; ; pages++ {
			typed, err := env.Client.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			var ct string
			body, err := env.Client.CoreV1().RESTClient().Get().Resource("pods").Namespace(ns).VersionedParams(&opts, scheme.ParameterCodec).
				SetHeader("Accept", accept).Do(ctx).ContentType(&ct).Raw()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ct, accept) {
				t.Fatalf("asked for %s, got %s", accept, ct)
			}
			n := 0
			cont, err := kube.PodPage(body, in, func(p *corev1.Pod) { got[p.Name] = p; n++ })
			if err != nil {
				t.Fatalf("%s page %d: %v", accept, pages, err)
			}
			if cont != typed.Continue || n != len(typed.Items) {
				t.Fatalf("%s page %d: %d pods, continue %q; the typed list's: %d, %q", accept, pages, n, cont, len(typed.Items), typed.Continue)
			}
			if cont == "" {
				if pages < 3 {
					t.Fatalf("%s: %d pages of 2, want several", accept, pages)
				}
				break
			}
			opts.Continue = cont
		}
		sameReads(t, accept, want, got)
	}
}

// TestFilterPod_DropsOnlyWhatReducePodDrops checks the filter alone on
// the shapes (with managed fields, as the API server stamps them): what
// it leaves, decoded and reduced, is what the whole pod reduced is, and it
// did drop what nothing reads (a filter that kept everything would pass
// the comparison).
func TestFilterPod_DropsOnlyWhatReducePodDrops(t *testing.T) {
	for _, s := range shapes("shop") {
		p := s.pod.DeepCopy()
		if s.status != nil {
			p.Status = *s.status
		}
		p.UID, p.ResourceVersion, p.CreationTimestamp = types.UID("uid-"+p.Name), "42", metav1.Now()
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`), Subresource: "status"}}
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		for i := range p.Status.Conditions {
			p.Status.Conditions[i].ObservedGeneration = 1
		}
		whole, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		filtered, err := kube.FilterPod(nil, whole)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var got corev1.Pod
		if err := got.Unmarshal(filtered); err != nil {
			t.Fatalf("%s: the filtered pod does not decode: %v", p.Name, err)
		}
		var dropped []string
		for what, gone := range map[string]bool{
			"managed fields":       got.ManagedFields == nil,
			"container images":     got.Spec.Containers[0].Image == "",
			"ephemeral containers": got.Spec.EphemeralContainers == nil,
			"container statuses":   got.Status.ContainerStatuses == nil,
			"pod IP":               got.Status.PodIP == "",
			"conditions but PodScheduled's type, status and reason": func() bool {
				for _, c := range got.Status.Conditions {
					if c.Type != corev1.PodScheduled || c.Message != "" || !c.LastTransitionTime.IsZero() || !c.LastProbeTime.IsZero() || c.ObservedGeneration != 0 {
						return false
					}
				}
				return len(got.Status.Conditions) <= 1
			}(),
		} {
			if gone {
				dropped = append(dropped, what)
			}
		}
		sort.Strings(dropped)
		if len(dropped) != 6 {
			t.Errorf("%s: the filter dropped only %v of managed fields, images, ephemeral containers, statuses, IP and conditions", p.Name, dropped)
		}
		if s.status != nil && s.status.StartTime != nil && (got.Status.StartTime == nil || got.Status.StartTime.Unix() != s.status.StartTime.Unix()) {
			t.Errorf("%s: the filter dropped the start time %v (do-not-disrupt durations run from it): %v", p.Name, s.status.StartTime, got.Status.StartTime)
		}
		if s.pod.Name == "rich" {
			if c := got.Spec.Containers[0]; c.Env != nil || c.EnvFrom != nil || c.VolumeMounts != nil || c.Lifecycle != nil || c.SecurityContext != nil ||
				len(c.Ports) != 1 || len(got.Spec.Volumes) != 2 || got.Spec.DNSConfig != nil || got.Status.InitContainerStatuses != nil {
				t.Errorf("rich: the filter kept what ReducePod drops: %+v, volumes %v", c, got.Spec.Volumes)
			}
		}
		want := &corev1.Pod{} // the whole pod decoded, as the typed read does
		if err := want.Unmarshal(whole); err != nil {
			t.Fatal(err)
		}
		kube.ReducePod(want, kube.NewInterner())
		kube.ReducePod(&got, kube.NewInterner())
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("%s: filtered and reduced differs from reduced (- reduced, + filtered):\n%s", p.Name, diff.Diff(want, &got))
		}
	}
}

// BenchmarkPodPage decodes a page of 500 pods of the scale benchmark's
// shapes (23 app replicas to 2 DaemonSet pods, as its nodes carry them;
// created through the API server, so with its defaults and managed
// fields), reduced: the typed decoding (as client-go's typed list decodes
// a page) against the filtering one.
func BenchmarkPodPage(b *testing.B) {
	list := benchPodList(b)
	benchPage(b, list, func(page []byte, f func(*corev1.Pod)) (string, error) {
		var l corev1.PodList
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(page, nil, &l); err != nil {
			return "", err
		}
		in := kube.NewInterner()
		for i := range l.Items {
			kube.ReducePod(&l.Items[i], in)
			f(&l.Items[i])
		}
		return l.Continue, nil
	}, func(page []byte, f func(*corev1.Pod)) (string, error) {
		return kube.PodPage(page, kube.NewInterner(), f)
	}, func(page []byte, f func(*corev1.Pod)) (string, error) {
		return kube.PodPageBorrowed(page, kube.NewInterner(), f)
	})
}

// benchPodList is a page of 500 pods of the scale benchmark's shapes (23
// app replicas to 2 DaemonSet pods, as its nodes carry them; created
// through the API server, so with its defaults and managed fields).
func benchPodList(b *testing.B) *corev1.PodList {
	env := testenv.Kube(b)
	ns, _ := createShapes(b, env.Client)
	ctx := context.Background()
	var tmpl []corev1.Pod
	for _, name := range []string{scale.AppPod(0, wireNode).Name, scale.DaemonSetPod("aws-node", wireNode).Name} {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		tmpl = append(tmpl, *p)
	}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	for i := 0; i < kube.PageSize; i++ {
		p := tmpl[0].DeepCopy()
		if i%25 >= 23 {
			p = tmpl[1].DeepCopy()
		}
		p.Name = fmt.Sprintf("%s-%05d", p.Name, i)
		p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0001-%012d", i))
		p.Spec.NodeName = fmt.Sprintf("ip-10-1-%d-%d.ap-northeast-2.compute.internal", i/25/256, i/25%256)
		list.Items = append(list.Items, *p)
	}
	return list
}

// pagedClient is a client of the API server, reading two pods a page,
// whose pod lists are counted; fail, when it returns true for the nth
// list, makes that list fail.
func pagedClient(t *testing.T, fail func(n int) bool) (*kube.Client, *atomic.Int32) {
	t.Helper()
	t.Cleanup(kube.SetPodPageSize(2))
	cfg := rest.CopyConfig(testenv.Kube(t).Config)
	lists := new(atomic.Int32)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods") {
				if n := int(lists.Add(1)); fail != nil && fail(n) {
					return nil, fmt.Errorf("list %d refused by the test", n)
				}
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube.New(cs), lists
}

// TestEachPod_ReadsOnePageAhead checks that EachPod asks for the next page
// while the caller still handles the current one (the API server's and
// the client's work overlap), but never more than one page ahead (a read
// holds two pages at most), and still gives the typed read's pods.
func TestEachPod_ReadsOnePageAhead(t *testing.T) {
	env := testenv.Kube(t)
	ns, n := createShapes(t, env.Client)
	want := typedRead(t, env.Client, ns, "")
	t.Cleanup(kube.SplitByNamespace(0, 0)) // one list (TestEachPod_SplitsALargeReadByNamespace: several)
	c, lists := pagedClient(t, nil)
	got := map[string]*corev1.Pod{}
	seen := 0
	err := c.EachPod(context.Background(), "", kube.NewInterner(), func(p *corev1.Pod) {
		seen++
		page := (seen + 1) / 2 // the page this pod came in
		if seen == 1 {
			// The next page is asked for while this one is handled.
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return lists.Load() >= 2, nil
			}); err != nil {
				t.Errorf("the second page was not asked for while the first was handled: %d lists", lists.Load())
			}
		}
		if l := int(lists.Load()); l > page+1 {
			t.Errorf("handling page %d, %d pages were asked for: more than one ahead", page, l)
		}
		if p.Namespace == ns {
			got[p.Name] = p
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := int(lists.Load()); l < n/2 {
		t.Fatalf("%d lists for %d pods or more, two a page", l, n)
	}
	sameReads(t, "EachPod, two pods a page", want, got)
}

// TestEachPod_StopsAtAFailedPage checks that a page that cannot be read
// ends the read with its error, after the pages before it were handed
// over, and that no page is asked for after it.
func TestEachPod_StopsAtAFailedPage(t *testing.T) {
	env := testenv.Kube(t)
	createShapes(t, env.Client)
	t.Cleanup(kube.SplitByNamespace(0, 0)) // one list
	c, lists := pagedClient(t, func(n int) bool { return n == 3 })
	seen := 0
	err := c.EachPod(context.Background(), "", kube.NewInterner(), func(*corev1.Pod) { seen++ })
	if err == nil || !strings.Contains(err.Error(), "list 3 refused by the test") {
		t.Fatalf("EachPod: %v; want the third list's error", err)
	}
	if seen != 4 {
		t.Errorf("%d pods handed over before the failed page, want the 4 of the first two pages", seen)
	}
	if l := lists.Load(); l != 3 {
		t.Errorf("%d lists, want 3 (none after the failed one)", l)
	}
}

// TestPodPage_ReplicasShareWhatTheyHaveInCommon checks that the pods of a
// protobuf page that carry the same labels, scheduling terms and
// container resources (a Deployment's replicas) hold one copy of each,
// decoded once, and that what differs between them is still their own.
func TestPodPage_ReplicasShareWhatTheyHaveInCommon(t *testing.T) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	for i := 0; i < 3; i++ {
		p := scale.AppPod(i, fmt.Sprintf("node-%d", i))
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
		list.Items = append(list.Items, *p)
	}
	list.Items[2].Labels = map[string]string{"app": "other"}
	var body bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &body); err != nil {
		t.Fatal(err)
	}
	var got []*corev1.Pod
	if _, err := kube.PodPage(body.Bytes(), kube.NewInterner(), func(p *corev1.Pod) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d pods, want 3", len(got))
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	a, b, c := got[0], got[1], got[2]
	for what, shared := range map[string]bool{
		"labels":             same(a.Labels, b.Labels),
		"node selector":      same(a.Spec.NodeSelector, b.Spec.NodeSelector),
		"tolerations":        same(a.Spec.Tolerations, b.Spec.Tolerations),
		"spread terms":       same(a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints),
		"requests":           same(a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests),
		"sidecar's requests": same(a.Spec.Containers[1].Resources.Requests, c.Spec.Containers[1].Resources.Requests),
	} {
		if !shared {
			t.Errorf("the replicas do not share their %s", what)
		}
	}
	if same(a.Labels, c.Labels) || c.Labels["app"] != "other" || a.Name == b.Name || a.Spec.NodeName == b.Spec.NodeName {
		t.Errorf("what differs is shared: labels %v and %v, names %s and %s", a.Labels, c.Labels, a.Name, b.Name)
	}
	for i, p := range got {
		want := list.Items[i].DeepCopy()
		kube.ReducePod(want, nil)
		if !reflect.DeepEqual(p, want) {
			t.Errorf("pod %d differs from the whole pod reduced (- whole, + read):\n%s", i, diff.Diff(want, p))
		}
	}
}

// seeing wraps a transport, naming it (so EachPod sees through to
// client-go's transport), and counts the pod lists asked for gzip'd by
// the caller and answered gzip'd.
type seeing struct {
	next           http.RoundTripper
	asked, gzipped atomic.Int32
}

func (s *seeing) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/pods") && r.Header.Get("Accept-Encoding") == "gzip" {
		s.asked.Add(1)
		if resp.Header.Get("Content-Encoding") == "gzip" {
			s.gzipped.Add(1)
		}
	}
	return resp, err
}

func (s *seeing) WrappedRoundTripper() http.RoundTripper { return s.next }

// TestEachPod_GunzipsPagesItself checks on the API server that EachPod
// asks for a page large enough to be gzip'd (the API server gzips
// responses past 128 KB) gzip'd itself, gunzips it, and reads the same
// pods as the typed read.
func TestEachPod_GunzipsPagesItself(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	ns, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podwire-gzip-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := env.Client.CoreV1().Pods(ns.Name)
	t.Cleanup(func() { // the API server is the package's: later tests list every pod
		if err := testenv.RemoveNamespace(context.Background(), env.Client, ns.Name); err != nil {
			t.Error(err)
		}
	})
	for j := range 80 {
		p := scale.AppPod(j, wireNode)
		p.Namespace = ns.Name
		created, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = scale.Running(created)
		if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	s := &seeing{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { s.next = rt; return s })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*corev1.Pod{}
	if err := kube.New(cs).EachPod(ctx, "", kube.NewInterner(), func(p *corev1.Pod) {
		if p.Namespace == ns.Name {
			got[p.Name] = p
		}
	}); err != nil {
		t.Fatal(err)
	}
	if s.asked.Load() == 0 || s.gzipped.Load() == 0 {
		t.Fatalf("%d pod lists asked for gzip'd by EachPod, %d answered gzip'd: want both", s.asked.Load(), s.gzipped.Load())
	}
	want := typedRead(t, env.Client, ns.Name, "")
	if len(want) != 80 {
		t.Fatalf("the typed read has %d pods, want 80", len(want))
	}
	sameReads(t, "EachPod, gzip'd", want, got)
}
