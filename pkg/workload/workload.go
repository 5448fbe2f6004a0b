// Package workload reads Kubernetes manifests the way `joist plan` needs
// them: multi-document YAML (or JSON) of Pods, Deployments, StatefulSets,
// ReplicaSets, Jobs and DaemonSets becomes the pods their controllers would
// create (replicas expanded, names and UIDs derived deterministically from
// the manifest) and the DaemonSets; volume objects and namespaces are kept
// typed for the simulator, and Services and the pods' controllers with
// their selectors (for default spread constraints); every other document
// is returned untouched.
//
// The package is pure: no client, no clock, no randomness.
package workload

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/decodeerr"
)

// Labels the controllers put on their pods.
const (
	LabelPodTemplateHash        = appsv1.DefaultDeploymentUniqueLabelKey // pod-template-hash
	LabelControllerRevisionHash = appsv1.ControllerRevisionHashLabelKey
	LabelStatefulSetPodName     = appsv1.StatefulSetPodNameLabel
	LabelJobName                = batchv1.JobNameLabel
)

// Result is what a set of manifests holds.
type Result struct {
	// Pods are the pods of the workloads, pending (PodScheduled=False,
	// Unschedulable), in manifest order. Pods expanded from one template
	// share their spec's slices and pointers: treat them as read-only.
	Pods       []*corev1.Pod
	DaemonSets []*appsv1.DaemonSet
	// PersistentVolumeClaims include the claims StatefulSets'
	// volumeClaimTemplates would create (unbound).
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	Namespaces             []*corev1.Namespace
	// Services, and the ReplicaSets and StatefulSets that control Pods
	// (a Deployment's as the ReplicaSet it would create, whose selector
	// adds pod-template-hash), with their selectors only: what default
	// topology spread constraints deduce a pod's selector from.
	Services     []*corev1.Service
	ReplicaSets  []*appsv1.ReplicaSet
	StatefulSets []*appsv1.StatefulSet
	// Others are the documents of any other kind, unchanged.
	Others []Object
}

// Object is a document the package does not interpret.
type Object struct {
	Source     string
	Index      int
	APIVersion string
	Kind       string
	Name       string
	// Raw is the document as JSON.
	Raw []byte
}

// Merge appends another result's contents.
func (r *Result) Merge(o *Result) {
	r.Pods = append(r.Pods, o.Pods...)
	r.DaemonSets = append(r.DaemonSets, o.DaemonSets...)
	r.PersistentVolumeClaims = append(r.PersistentVolumeClaims, o.PersistentVolumeClaims...)
	r.PersistentVolumes = append(r.PersistentVolumes, o.PersistentVolumes...)
	r.StorageClasses = append(r.StorageClasses, o.StorageClasses...)
	r.Namespaces = append(r.Namespaces, o.Namespaces...)
	r.Services = append(r.Services, o.Services...)
	r.ReplicaSets = append(r.ReplicaSets, o.ReplicaSets...)
	r.StatefulSets = append(r.StatefulSets, o.StatefulSets...)
	r.Others = append(r.Others, o.Others...)
}

// Read parses multi-document YAML or JSON (a v1 List counts as its items).
// source names the input in errors. A document that does not parse is an
// error naming it; documents without a kind are skipped.
func Read(data []byte, source string) (*Result, error) {
	res := &Result{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	index := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", source, index+1, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		if err := res.add(js, source, &index); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (r *Result) add(js []byte, source string, index *int) error {
	var tm struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &tm); err != nil {
		return fmt.Errorf("%s (document %d): %w", source, *index+1, err)
	}
	if tm.Kind == "" {
		return nil
	}
	if tm.Kind == "List" || (len(tm.Items) > 0 && len(tm.Kind) > 4 && tm.Kind[len(tm.Kind)-4:] == "List") {
		for _, it := range tm.Items {
			if err := r.add(it, source, index); err != nil {
				return err
			}
		}
		return nil
	}
	i := *index
	*index++
	where := fmt.Sprintf("%s (document %d, %s %q)", source, i+1, tm.Kind, tm.Metadata.Name)
	decode := func(into any) error {
		if err := json.Unmarshal(js, into); err != nil {
			// Every value that does not decode, by its path (a
			// quantity's error names no field).
			if fs := decodeerr.Find(js, reflect.TypeOf(into)); len(fs) > 0 {
				errs := make([]error, len(fs))
				for i, f := range fs {
					errs[i] = fmt.Errorf("%s: %w", where, f)
				}
				return errors.Join(errs...)
			}
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
	group := tm.APIVersion
	switch {
	case tm.Kind == "Pod" && group == "v1":
		var p corev1.Pod
		if err := decode(&p); err != nil {
			return err
		}
		r.Pods = append(r.Pods, pendingPod(&p))
	case tm.Kind == "Deployment" && group == "apps/v1":
		var d appsv1.Deployment
		if err := decode(&d); err != nil {
			return err
		}
		if err := r.room(where, "spec.replicas", replicas(d.Spec.Replicas)); err != nil {
			return err
		}
		r.Pods = append(r.Pods, expandDeployment(&d)...)
		sel := d.Spec.Selector.DeepCopy()
		if sel == nil {
			sel = &metav1.LabelSelector{}
		}
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels[LabelPodTemplateHash] = templateHash(&d.Spec.Template)
		r.ReplicaSets = append(r.ReplicaSets, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + templateHash(&d.Spec.Template), Namespace: d.Namespace},
			Spec:       appsv1.ReplicaSetSpec{Selector: sel}})
	case tm.Kind == "ReplicaSet" && group == "apps/v1":
		var rs appsv1.ReplicaSet
		if err := decode(&rs); err != nil {
			return err
		}
		if err := r.room(where, "spec.replicas", replicas(rs.Spec.Replicas)); err != nil {
			return err
		}
		r.Pods = append(r.Pods, expandReplicaSet(&rs)...)
		r.ReplicaSets = append(r.ReplicaSets, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: rs.Name, Namespace: rs.Namespace}, Spec: appsv1.ReplicaSetSpec{Selector: rs.Spec.Selector}})
	case tm.Kind == "StatefulSet" && group == "apps/v1":
		var ss appsv1.StatefulSet
		if err := decode(&ss); err != nil {
			return err
		}
		if err := r.room(where, "spec.replicas", replicas(ss.Spec.Replicas)); err != nil {
			return err
		}
		pods, claims := expandStatefulSet(&ss)
		r.StatefulSets = append(r.StatefulSets, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: ss.Name, Namespace: ss.Namespace}, Spec: appsv1.StatefulSetSpec{Selector: ss.Spec.Selector}})
		r.Pods = append(r.Pods, pods...)
		r.PersistentVolumeClaims = append(r.PersistentVolumeClaims, claims...)
	case tm.Kind == "Job" && group == "batch/v1":
		var j batchv1.Job
		if err := decode(&j); err != nil {
			return err
		}
		if err := r.room(where, "spec.parallelism", jobPods(&j)); err != nil {
			return err
		}
		r.Pods = append(r.Pods, expandJob(&j)...)
	case tm.Kind == "DaemonSet" && group == "apps/v1":
		var ds appsv1.DaemonSet
		if err := decode(&ds); err != nil {
			return err
		}
		defaultNamespace(&ds.ObjectMeta)
		r.DaemonSets = append(r.DaemonSets, &ds)
	case tm.Kind == "PersistentVolumeClaim" && group == "v1":
		var c corev1.PersistentVolumeClaim
		if err := decode(&c); err != nil {
			return err
		}
		defaultNamespace(&c.ObjectMeta)
		r.PersistentVolumeClaims = append(r.PersistentVolumeClaims, &c)
	case tm.Kind == "PersistentVolume" && group == "v1":
		var v corev1.PersistentVolume
		if err := decode(&v); err != nil {
			return err
		}
		r.PersistentVolumes = append(r.PersistentVolumes, &v)
	case tm.Kind == "StorageClass" && group == "storage.k8s.io/v1":
		var sc storagev1.StorageClass
		if err := decode(&sc); err != nil {
			return err
		}
		r.StorageClasses = append(r.StorageClasses, &sc)
	case tm.Kind == "Service" && group == "v1":
		var svc corev1.Service
		if err := decode(&svc); err != nil {
			return err
		}
		defaultNamespace(&svc.ObjectMeta)
		r.Services = append(r.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace}, Spec: corev1.ServiceSpec{Selector: svc.Spec.Selector}})
	case tm.Kind == "Namespace" && group == "v1":
		var ns corev1.Namespace
		if err := decode(&ns); err != nil {
			return err
		}
		r.Namespaces = append(r.Namespaces, &ns)
	default:
		r.Others = append(r.Others, Object{Source: source, Index: i, APIVersion: tm.APIVersion, Kind: tm.Kind, Name: tm.Metadata.Name, Raw: js})
	}
	return nil
}

func defaultNamespace(m *metav1.ObjectMeta) {
	if m.Namespace == "" {
		m.Namespace = metav1.NamespaceDefault
	}
}

// pendingPod fills what the API server and kube-scheduler would have set
// on a pod that is waiting for a node.
func pendingPod(p *corev1.Pod) *corev1.Pod {
	defaultNamespace(&p.ObjectMeta)
	if p.UID == "" {
		p.UID = uid("Pod", p.Namespace, p.Name)
	}
	if p.Spec.NodeName == "" {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}
	}
	return p
}

// uid derives a stable UID (a name-based UUID) from an object's identity.
func uid(kind, ns, name string) types.UID {
	h := sha1.Sum([]byte(kind + "/" + ns + "/" + name))
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

// templateHash is the pod-template-hash the Deployment controller would
// compute for a template (FNV-32a, encoded as it encodes it).
func templateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	b, _ := json.Marshal(t)
	h.Write(b)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// suffix is a deterministic 5-character pod name suffix.
func suffix(owner string, i int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", owner, i)
	s := rand.SafeEncodeString(strconv.FormatUint(h.Sum64(), 10))
	return s[len(s)-5:]
}

// MaxPods is the most pods Read makes from its files in all: a replica
// count mistyped by a few digits would otherwise take the machine's memory
// before the plan could say anything. Joist plans 100,000 pods in seconds
// (docs/scale.md); ten times that is no cluster's pending batch.
const MaxPods = 1_000_000

// room says whether n more pods fit under MaxPods, and names the object
// and field when they do not.
func (r *Result) room(where, field string, n int) error {
	if len(r.Pods)+n > MaxPods {
		return fmt.Errorf("%s: %s: %d pods would make %d in all, more than the %d joist plan reads", where, field, n, len(r.Pods)+n, MaxPods)
	}
	return nil
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(max(*r, 0))
}

// fromTemplate makes the pods of a controller. Pods share the template's
// spec (a shallow copy each), which keeps 10,000 replicas cheap.
func fromTemplate(t *corev1.PodTemplateSpec, ns string, owner metav1.OwnerReference, name func(i int) string, extraLabels func(i int) map[string]string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	spec := *t.Spec.DeepCopy()
	for i := 0; i < n; i++ {
		p := &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name:            name(i),
				Namespace:       ns,
				Labels:          map[string]string{},
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Spec: spec,
		}
		for k, v := range t.Labels {
			p.Labels[k] = v
		}
		for k, v := range extraLabels(i) {
			p.Labels[k] = v
		}
		if len(t.Annotations) > 0 {
			p.Annotations = map[string]string{}
			for k, v := range t.Annotations {
				p.Annotations[k] = v
			}
		}
		out = append(out, pendingPod(p))
	}
	return out
}

func controllerRef(apiVersion, kind, ns, name string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid(kind, ns, name), Controller: &yes, BlockOwnerDeletion: &yes}
}

func expandDeployment(d *appsv1.Deployment) []*corev1.Pod {
	defaultNamespace(&d.ObjectMeta)
	hash := templateHash(&d.Spec.Template)
	rsName := d.Name + "-" + hash
	owner := controllerRef("apps/v1", "ReplicaSet", d.Namespace, rsName)
	return fromTemplate(&d.Spec.Template, d.Namespace, owner,
		func(i int) string { return rsName + "-" + suffix(rsName, i) },
		func(int) map[string]string { return map[string]string{LabelPodTemplateHash: hash} },
		replicas(d.Spec.Replicas))
}

func expandReplicaSet(rs *appsv1.ReplicaSet) []*corev1.Pod {
	defaultNamespace(&rs.ObjectMeta)
	owner := controllerRef("apps/v1", "ReplicaSet", rs.Namespace, rs.Name)
	return fromTemplate(&rs.Spec.Template, rs.Namespace, owner,
		func(i int) string { return rs.Name + "-" + suffix(rs.Name, i) },
		func(int) map[string]string { return nil },
		replicas(rs.Spec.Replicas))
}

// expandStatefulSet makes pods <name>-<ordinal> and, for each
// volumeClaimTemplate, the claim <template>-<name>-<ordinal> the controller
// would create, wired into the pod's volumes.
func expandStatefulSet(ss *appsv1.StatefulSet) ([]*corev1.Pod, []*corev1.PersistentVolumeClaim) {
	defaultNamespace(&ss.ObjectMeta)
	n := replicas(ss.Spec.Replicas)
	start := 0
	if ss.Spec.Ordinals != nil {
		start = int(ss.Spec.Ordinals.Start)
	}
	owner := controllerRef("apps/v1", "StatefulSet", ss.Namespace, ss.Name)
	revision := ss.Name + "-" + templateHash(&ss.Spec.Template)
	pods := fromTemplate(&ss.Spec.Template, ss.Namespace, owner,
		func(i int) string { return ss.Name + "-" + strconv.Itoa(start+i) },
		func(i int) map[string]string {
			return map[string]string{LabelStatefulSetPodName: ss.Name + "-" + strconv.Itoa(start+i), LabelControllerRevisionHash: revision}
		}, n)
	var claims []*corev1.PersistentVolumeClaim
	if len(ss.Spec.VolumeClaimTemplates) == 0 {
		return pods, nil
	}
	for i, p := range pods {
		// The pod's volumes differ per ordinal: give it its own slice.
		vols := append([]corev1.Volume(nil), p.Spec.Volumes...)
		for _, t := range ss.Spec.VolumeClaimTemplates {
			claimName := t.Name + "-" + ss.Name + "-" + strconv.Itoa(start+i)
			c := &corev1.PersistentVolumeClaim{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: ss.Namespace, Labels: t.Labels},
				Spec:       *t.Spec.DeepCopy(),
			}
			c.UID = uid("PersistentVolumeClaim", ss.Namespace, claimName)
			claims = append(claims, c)
			replaced := false
			for j := range vols {
				if vols[j].Name == t.Name {
					vols[j].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}
					replaced = true
				}
			}
			if !replaced {
				vols = append(vols, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}})
			}
		}
		p.Spec.Volumes = vols
	}
	return pods, claims
}

// jobPods is how many pods a Job runs at once: parallelism (default 1),
// capped by completions when set.
func jobPods(j *batchv1.Job) int {
	n := int32(1)
	if j.Spec.Parallelism != nil {
		n = *j.Spec.Parallelism
	}
	if j.Spec.Completions != nil {
		n = min(n, *j.Spec.Completions)
	}
	return int(max(n, 0))
}

// expandJob makes the pods a Job runs at once (jobPods).
func expandJob(j *batchv1.Job) []*corev1.Pod {
	defaultNamespace(&j.ObjectMeta)
	n := jobPods(j)
	owner := controllerRef("batch/v1", "Job", j.Namespace, j.Name)
	return fromTemplate(&j.Spec.Template, j.Namespace, owner,
		func(i int) string { return j.Name + "-" + suffix(j.Name, i) },
		func(int) map[string]string {
			return map[string]string{LabelJobName: j.Name, "batch.kubernetes.io/controller-uid": string(owner.UID)}
		}, n)
}
