package specstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/specs"
)

// KubeAPI is what the CRD store needs from the cluster: listing the spec
// kinds, and writing Events about bad ones.
type KubeAPI interface {
	Resource(resource schema.GroupVersionResource) dynamic.NamespaceableResourceInterface
}

// Resources are the spec kinds as API resources, in the order the
// CRD store lists them. Older is listed instead when GVR is not served: a
// cluster that still has Karpenter v0.32–v0.37's CRDs (v1beta1 only)
// keeps its NodePools and EC2NodeClasses there, and Joist reads them as
// the v1 objects Karpenter v1.0 converted them to (pkg/specs).
var Resources = []struct {
	GVR   schema.GroupVersionResource
	Kind  string
	Older schema.GroupVersionResource
}{
	{GVR: schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1alpha5", Resource: "provisioners"}, Kind: specs.KindProvisioner},
	{GVR: schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1alpha1", Resource: "awsnodetemplates"}, Kind: specs.KindAWSNodeTemplate},
	{GVR: schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}, Kind: specs.KindNodePool,
		Older: schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1beta1", Resource: "nodepools"}},
	{GVR: schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"}, Kind: specs.KindEC2NodeClass,
		Older: schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1beta1", Resource: "ec2nodeclasses"}},
	{GVR: schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1alpha1", Resource: "nodeoverlays"}, Kind: specs.KindNodeOverlay},
}

// EventNamespace holds Events about the (cluster-scoped) spec objects, as
// Kubernetes does for cluster-scoped objects.
const EventNamespace = "default"

// CRDStore reads the spec kinds from the cluster's API. A kind whose CRD
// is not installed is simply absent (a cluster may hold only v1 CRDs).
type CRDStore struct {
	Client KubeAPI
	// Events, when set, receives a Warning Event on each bad object.
	Events typedcorev1.EventsGetter
	Logger *slog.Logger
	// Clock is the clock for Event timestamps (nil: the real one; tests
	// pass a k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock

	mu   sync.Mutex
	seen map[string]objectRef // kind/name -> object, from the last Load
}

type objectRef struct {
	apiVersion, kind, name string
	uid                    types.UID
}

// Load lists the spec kinds.
func (s *CRDStore) Load(ctx context.Context) ([]specs.Object, []error, error) {
	var (
		objs     []specs.Object
		problems []error
	)
	seen := map[string]objectRef{}
	for _, r := range Resources {
		list, err := s.Client.Resource(r.GVR).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) && !r.Older.Empty() {
			list, err = s.Client.Resource(r.Older).List(ctx, metav1.ListOptions{})
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, nil, fmt.Errorf("list %s: %w", r.GVR.GroupResource(), err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			raw, err := json.Marshal(item.Object)
			if err != nil {
				problems = append(problems, fmt.Errorf("crd: %s %q: %w", r.Kind, item.GetName(), err))
				continue
			}
			o, err := specs.Decode(raw, "crd")
			if err != nil {
				problems = append(problems, err)
			}
			objs = append(objs, o...)
			seen[r.Kind+"/"+item.GetName()] = objectRef{apiVersion: item.GetAPIVersion(), kind: r.Kind, name: item.GetName(), uid: item.GetUID()}
		}
	}
	for i := range objs {
		objs[i].Index = i
	}
	s.mu.Lock()
	s.seen = seen
	s.mu.Unlock()
	return objs, problems, nil
}

// Report logs each problem and records a Warning Event (reason
// InvalidSpec) on each bad object. The Event's name is derived from the
// object and the message, so the same problem found again on the next
// run bumps the Event's count instead of adding another.
func (s *CRDStore) Report(ctx context.Context, problems []error) {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	logProblems(log, "crd", problems)
	if s.Events == nil {
		return
	}
	s.mu.Lock()
	seen := s.seen
	s.mu.Unlock()
	for _, p := range problems {
		var oe *specs.ObjectError
		if !errors.As(p, &oe) {
			continue
		}
		ref, ok := seen[oe.Kind+"/"+oe.Name]
		if !ok {
			continue
		}
		if err := s.recordEvent(ctx, ref, oe.Error()); err != nil {
			log.Warn("could not record an Event on an invalid spec object", "kind", ref.kind, "name", ref.name, "error", err)
		}
	}
}

func (s *CRDStore) recordEvent(ctx context.Context, ref objectRef, message string) error {
	const maxMessage = 1024
	if len(message) > maxMessage {
		message = message[:maxMessage-3] + "..."
	}
	now := metav1.NewTime(time.Now())
	if s.Clock != nil {
		now = metav1.NewTime(s.Clock.Now())
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(ref.kind + "\x00" + message))
	name := ref.name
	if len(name) > 200 {
		name = name[:200]
	}
	name = fmt.Sprintf("%s.joist-%08x", strings.TrimSuffix(name, "."), h.Sum32())
	events := s.Events.Events(EventNamespace)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: EventNamespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: ref.apiVersion, Kind: ref.kind, Name: ref.name, UID: ref.uid,
		},
		Reason:         "InvalidSpec",
		Message:        message,
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "joist"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	_, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := events.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	old.Count++
	old.LastTimestamp = now
	_, err = events.Update(ctx, old, metav1.UpdateOptions{})
	return err
}
