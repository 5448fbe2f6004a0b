package kube_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// TestNominateReplacement_SurvivesStatusUpdates: the pod a replacement is
// launched for is running, and its kubelet writes its status at any
// time; a status written between the pass's read and the reservation
// must not drop the reservation (the replacement's room would be given
// to the next pod that comes, and nothing writes it again). A pod of the
// same name made again since the read (a StatefulSet's) is another pod:
// it is not marked, and the caller hears a conflict, as for a pod that
// changed under a plan.
func TestNominateReplacement_SurvivesStatusUpdates(t *testing.T) {
	env := testenv.Kube(t)
	c := kube.New(env.Client)
	ctx := context.Background()
	pc := env.Client.CoreV1().Pods("default")
	mk := func(name string) *corev1.Pod {
		p, err := pc.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		return p
	}
	read := mk(testenv.Fresh("moving"))
	// The kubelet reports on the pod after the pass read it.
	running := read.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	if _, err := pc.UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.NominateReplacement(ctx, read, "i-0123"); err != nil {
		t.Fatalf("reservation after a status update: %v", err)
	}
	got, err := pc.Get(ctx, read.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := pods.ReplacementInstance(got); id != "i-0123" {
		t.Errorf("replacement annotation %q, want i-0123", id)
	}

	// The pod deleted and made again under its name: not the pod read.
	old := mk(testenv.Fresh("sts"))
	if err := pc.Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	again := mk(old.Name)
	err = c.NominateReplacement(ctx, old, "i-0456")
	if !apierrors.IsConflict(err) {
		t.Errorf("reservation for a pod made again since the read: %v, want a conflict", err)
	}
	got, err = pc.Get(ctx, again.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := pods.ReplacementInstance(got); id != "" {
		t.Errorf("the new pod of the same name is marked for %q", id)
	}
}
