package disruption

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestConsolidationGivesMovedPodsTheDefaultSpread: consolidation plans
// the pods it would move with the cluster's default spread constraints,
// as the provisioner plans pending pods. Node a's pod fits beside its
// sibling on node b, so a is deleted; with a default hostname spread
// (maxSkew 1, the selector deduced from the Service selecting both) the
// pod may not join its sibling, and a is replaced by a cheaper node
// instead. A snapshot that cannot read what the defaults need retires
// nothing.
func TestConsolidationGivesMovedPodsTheDefaultSpread(t *testing.T) {
	types := testTypes(t)
	labelled := func(p *corev1.Pod) *corev1.Pod { p.Labels = map[string]string{"app": "web"}; return p }
	nodes := func() []Node {
		return []Node{typed(types, "a", "m5.xlarge", "on-demand", labelled(app("p1", "1"))),
			typed(types, "b", "m5.xlarge", "on-demand", labelled(app("p2", "1", AnnotationDoNotDisrupt)))}
	}
	hostDefault := []corev1.TopologySpreadConstraint{{TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, MaxSkew: 1}}
	src := scheduling.SpreadSources{Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}}}
	for _, c := range []struct {
		name   string
		spread func([]*corev1.Pod) ([]*corev1.Pod, error)
		want   []string
	}{
		{name: "without defaults the pod joins its sibling", want: []string{"a:delete"}},
		{name: "a default hostname spread keeps it apart",
			spread: func(ps []*corev1.Pod) ([]*corev1.Pod, error) {
				return scheduling.WithDefaultSpread(hostDefault, ps, src), nil
			},
			want: []string{"a:replace"}},
		{name: "a failed read retires nothing",
			spread: func([]*corev1.Pod) ([]*corev1.Pod, error) { return nil, errors.New("services forbidden") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Snapshot{Now: now, Pools: []*model.Pool{consolidating(model.CapacityTypeOnDemand)}, Nodes: nodes(),
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}, DefaultSpread: c.spread}
			_, second := twoPassesOf(s)
			if got := describe(second.Retire); !slices.Equal(got, c.want) {
				t.Errorf("retire %v, want %v", got, c.want)
			}
		})
	}
}
