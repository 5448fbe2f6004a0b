package provisioning

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// SpreadDefaults gives pods to plan the cluster's default topology spread
// constraints (Karpenter's --scheduler-config, JOIST_SCHEDULER_CONFIG):
// scheduling.WithDefaultSpread, with the objects it deduces each pod's
// selector from read here — the Services of the namespaces of the pods
// that declare no spread, and their controllers (ReplicationController,
// ReplicaSet, StatefulSet) by name — each once per SpreadDefaults, so one
// per pass. Nothing is read without defaults, and nothing for a pod with
// spreads of its own. A controller that is gone adds nothing (as in
// kube-scheduler); any other read error fails the pass, which the next
// one retries.
type SpreadDefaults struct {
	Kube     *kube.Client
	Defaults []corev1.TopologySpreadConstraint

	namespaces map[string]bool
	owners     map[scheduling.SpreadOwner]bool
	src        scheduling.SpreadSources
}

// NewSpreadDefaults is nil when the config has no default constraints.
func NewSpreadDefaults(k *kube.Client, cfg *scheduling.SchedulerConfig) *SpreadDefaults {
	d := cfg.Defaults()
	if len(d) == 0 {
		return nil
	}
	return &SpreadDefaults{Kube: k, Defaults: d}
}

// Apply returns the pods, those the defaults apply to as copies carrying
// them (a nil SpreadDefaults returns pods).
func (s *SpreadDefaults) Apply(ctx context.Context, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	if s == nil || len(s.Defaults) == 0 {
		return pods, nil
	}
	if err := s.read(ctx, pods); err != nil {
		return nil, err
	}
	return scheduling.WithDefaultSpread(s.Defaults, pods, s.src), nil
}

func (s *SpreadDefaults) read(ctx context.Context, pods []*corev1.Pod) error {
	if s.namespaces == nil {
		s.namespaces, s.owners = map[string]bool{}, map[scheduling.SpreadOwner]bool{}
	}
	namespaces, owners := scheduling.DefaultSpreadReads(s.Defaults, pods)
	for _, ns := range namespaces {
		if s.namespaces[ns] {
			continue
		}
		list, err := s.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list services in %s (default spread constraints): %w", ns, err)
		}
		s.namespaces[ns] = true
		for i := range list.Items {
			svc := &list.Items[i]
			// Only the selector is read: keep no more of it.
			s.src.Services = append(s.src.Services, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace},
				Spec:       corev1.ServiceSpec{Selector: svc.Spec.Selector},
			})
		}
	}
	for _, o := range owners {
		if s.owners[o] {
			continue
		}
		if err := s.readOwner(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("get %s %s/%s (default spread constraints): %w", o.Kind, o.Namespace, o.Name, err)
		}
		s.owners[o] = true
	}
	return nil
}

// readOwner gets a controller and keeps its selector only (a ReplicaSet's
// pod template can be large).
func (s *SpreadDefaults) readOwner(ctx context.Context, o scheduling.SpreadOwner) error {
	meta := metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace}
	switch o.Kind {
	case "ReplicationController":
		rc, err := s.Kube.CoreV1().ReplicationControllers(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.src.ReplicationControllers = append(s.src.ReplicationControllers, &corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Selector: rc.Spec.Selector}})
	case "ReplicaSet":
		rs, err := s.Kube.AppsV1().ReplicaSets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.src.ReplicaSets = append(s.src.ReplicaSets, &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: rs.Spec.Selector}})
	case "StatefulSet":
		ss, err := s.Kube.AppsV1().StatefulSets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.src.StatefulSets = append(s.src.StatefulSets, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: ss.Spec.Selector}})
	}
	return nil
}
