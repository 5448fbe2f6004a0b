package events

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParse_Samples(t *testing.T) {
	b, err := os.ReadFile("testdata/pending-pods.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse pending pods: %v", err)
	}
	pp, ok := got.(*PendingPods)
	if !ok || pp.Cluster != "hoon-cluster" || len(pp.Pods) != 2 || pp.Pods[0].Namespace != "default" {
		t.Fatalf("pending pods parsed as %#v", got)
	}

	b, err = os.ReadFile("testdata/node-ready.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err = Parse(b)
	if err != nil {
		t.Fatalf("Parse node ready: %v", err)
	}
	nr, ok := got.(*NodeReady)
	if !ok || nr.Node != "ip-10-0-1-23.ap-northeast-2.compute.internal" || nr.ProviderID == "" {
		t.Fatalf("node ready parsed as %#v", got)
	}
}

func TestParse_RejectsWhatIsNotAJoistEvent(t *testing.T) {
	for name, body := range map[string]string{
		"not json":           `hello`,
		"empty object":       `{}`,
		"other source":       `{"source":"aws.ec2","detail-type":"Pending Pods","detail":{}}`,
		"unknown type":       `{"source":"joist.forwarder","detail-type":"Pods Gone","detail":{}}`,
		"no detail":          `{"source":"joist.forwarder","detail-type":"Pending Pods"}`,
		"detail of bad type": `{"source":"joist.forwarder","detail-type":"Pending Pods","detail":{"pods":"x"}}`,
		"ready without node": `{"source":"joist.forwarder","detail-type":"Node Ready","detail":{"cluster":"c"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(body))
			if !errors.Is(err, ErrNotJoist) {
				t.Fatalf("Parse(%s) = %v, want ErrNotJoist", body, err)
			}
		})
	}
}

func TestPattern_MatchesSourceAndDetailType(t *testing.T) {
	want := `{"detail-type":["Pending Pods"],"source":["joist.forwarder"]}`
	if got := Pattern(DetailTypePendingPods); got != want {
		t.Fatalf("Pattern = %s, want %s", got, want)
	}
}

func TestParse_NodeReadyWithMalformedNodeIsNotJoist(t *testing.T) {
	for _, node := range []string{"../../etc", "Node_With_Underscores", "a/b"} {
		body := `{"source":"joist.forwarder","detail-type":"` + DetailTypeNodeReady + `","detail":{"cluster":"c","node":"` + node + `"}}`
		_, err := Parse([]byte(body))
		if !errors.Is(err, ErrNotJoist) || !strings.Contains(err.Error(), node) {
			t.Errorf("node %q: err = %v, want ErrNotJoist naming the node", node, err)
		}
	}
}

func TestParse_NodesDeleting(t *testing.T) {
	body := `{"source":"joist.forwarder","detail-type":"Nodes Deleting","detail":{"cluster":"c","nodes":["ip-10-0-1-23.ec2.internal","b"],"observedAt":"2026-12-01T12:00:00Z"}}`
	got, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	nd, ok := got.(*NodesDeleting)
	if !ok || nd.Cluster != "c" || len(nd.Nodes) != 2 || nd.Nodes[1] != "b" || nd.ObservedAt.IsZero() {
		t.Fatalf("nodes deleting parsed as %#v", got)
	}
	got, err = Parse([]byte(`{"source":"joist.forwarder","detail-type":"Nodes Emptied","detail":{"cluster":"c","nodes":["a"],"observedAt":"2026-12-01T12:00:00Z"}}`))
	if ne, ok := got.(*NodesEmptied); err != nil || !ok || ne.Nodes[0] != "a" {
		t.Fatalf("nodes emptied parsed as %#v, %v", got, err)
	}
	for name, body := range map[string]string{
		"no nodes":              `{"source":"joist.forwarder","detail-type":"Nodes Deleting","detail":{"cluster":"c","nodes":[]}}`,
		"bad node":              `{"source":"joist.forwarder","detail-type":"Nodes Deleting","detail":{"cluster":"c","nodes":["ok","../x"]}}`,
		"bad shape":             `{"source":"joist.forwarder","detail-type":"Nodes Deleting","detail":{"nodes":"a"}}`,
		"emptied without nodes": `{"source":"joist.forwarder","detail-type":"Nodes Emptied","detail":{"cluster":"c"}}`,
		"emptied bad node":      `{"source":"joist.forwarder","detail-type":"Nodes Emptied","detail":{"cluster":"c","nodes":["A_B"]}}`,
	} {
		if _, err := Parse([]byte(body)); !errors.Is(err, ErrNotJoist) {
			t.Errorf("%s: err = %v, want ErrNotJoist", name, err)
		}
	}
}

func TestPattern_MatchesSeveralDetailTypes(t *testing.T) {
	want := `{"detail-type":["Nodes Deleting","Node Ready"],"source":["joist.forwarder"]}`
	if got := Pattern(DetailTypeNodesDeleting, DetailTypeNodeReady); got != want {
		t.Fatalf("Pattern = %s, want %s", got, want)
	}
}
