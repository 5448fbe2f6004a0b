package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/specstore"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func seed(t *testing.T) []specs.Object {
	t.Helper()
	data, err := os.ReadFile("../../../examples/seed/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := specs.Decode(data, "seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestSSMStoreOnKumo pushes the seed, adds parameters the way an operator
// might (SecureString, deeper paths, more than a page), and reads it all
// back through the real SDK.
func TestSSMStoreOnKumo(t *testing.T) {
	kumo := testenv.Kumo(t)
	ctx := context.Background()
	client := ssm.NewFromConfig(kumo.AWSConfig())
	cluster := fmt.Sprintf("kumo-%d", time.Now().UnixNano())
	store := &specstore.SSMStore{Client: client, Cluster: cluster}

	written, _, err := store.Push(ctx, seed(t), specstore.PushOptions{Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4 {
		t.Fatalf("written = %v", written)
	}
	// Twelve more pools, deeper down, so that reading takes more than one
	// page (GetParametersByPath returns at most 10).
	for i := 0; i < 12; i++ {
		doc := fmt.Sprintf("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: extra-%02d}\nspec: {providerRef: {name: service-lt}}\n", i)
		_, err := client.PutParameter(ctx, &ssm.PutParameterInput{
			Name: aws.String(fmt.Sprintf("%steam-%d/pools/extra-%02d", specstore.Prefix(cluster), i%3, i)), Value: aws.String(doc),
			Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	spec, err := specstore.Read(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pools) != 14 || spec.NodeClasses["service-lt"] == nil {
		t.Fatalf("read back %d pools, classes %v", len(spec.Pools), spec.NodeClasses)
	}
}

func create(t *testing.T, dyn dynamic.Interface, o specs.Object) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(o.Raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	for _, r := range specstore.Resources {
		if r.Kind == o.Kind {
			if _, err := dyn.Resource(r.GVR).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", o, err)
			}
			t.Cleanup(func() { _ = dyn.Resource(r.GVR).Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
			return
		}
	}
	t.Fatalf("no resource for %s", o.Kind)
}

// TestCRDStoreOnAPIServer stores the seed as objects of Joist's CRDs,
// and a NodeOverlay, plus one the API server admits but Joist cannot
// serve (its node class does not exist), and checks the store serves the good ones and puts a
// Warning Event on the bad one.
func TestCRDStoreOnAPIServer(t *testing.T) {
	kube := testenv.Kube(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(kube.Config)
	objs := seed(t)
	bad, err := specs.Decode([]byte("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: orphan}\nspec: {providerRef: {name: nowhere}}\n"), "bad")
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := specs.Decode([]byte("apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: spot-discount}\nspec: {weight: 3, priceAdjustment: '-5%'}\n"), "overlay")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range slices.Concat(objs, bad, overlay) {
		if !o.Ignored {
			create(t, dyn, o)
		}
	}
	store, err := specstore.New(specstore.Config{Source: specstore.SourceCRD, Kube: dyn, Events: kube.Client.CoreV1()})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := specstore.Read(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range spec.Pools {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "management,service" {
		t.Errorf("pools = %v", names)
	}
	if len(spec.Overlays) != 1 || spec.Overlays[0].Name != "spot-discount" || spec.Overlays[0].PriceAdjustment != "-5%" || spec.Overlays[0].Weight != 3 {
		t.Errorf("overlays = %+v, want spot-discount read from its CRD", spec.Overlays)
	}
	events, err := kube.Client.CoreV1().Events(specstore.EventNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=orphan"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Reason != "InvalidSpec" ||
		events.Items[0].Message != `Provisioner "orphan": spec.providerRef.name: AWSNodeTemplate "nowhere" not found` {
		t.Fatalf("events = %+v", events.Items)
	}
}
