package iampolicy

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testParams() Params {
	return Params{
		Partition: "aws", Region: "us-west-2", Account: "111122223333", Cluster: "demo",
		NodeRoleARN: "arn:aws:iam::111122223333:role/KarpenterNodeRole-demo",
		EventBusARN: "arn:aws:events:us-west-2:111122223333:event-bus/joist-demo",
	}
}

func TestFor_OnlyTheReaperTerminates(t *testing.T) {
	for _, principal := range Principals() {
		pol := MustFor(principal, testParams())
		_, terminates := pol.Statement("TerminateOwnInstances")
		if want := principal == Reaper; terminates != want {
			t.Errorf("%s: terminate statement present = %v, want %v", principal, terminates, want)
		}
	}
}

func TestFor_NoWildcardActions(t *testing.T) {
	for _, principal := range Principals() {
		for _, a := range MustFor(principal, testParams()).Actions() {
			if strings.Contains(a, "*") {
				t.Errorf("%s: wildcard action %q", principal, a)
			}
		}
	}
}

func TestFor_EveryStatementHasAUniqueSid(t *testing.T) {
	for _, principal := range Principals() {
		seen := map[string]bool{}
		for _, s := range MustFor(principal, testParams()).Statements {
			if s.Sid == "" || seen[s.Sid] {
				t.Errorf("%s: sid %q empty or repeated", principal, s.Sid)
			}
			seen[s.Sid] = true
		}
	}
}

func TestFor_RefusesUnknownPrincipalAndMissingParams(t *testing.T) {
	if _, err := For("scheduler", testParams()); err == nil || !strings.Contains(err.Error(), `"scheduler"`) {
		t.Errorf("unknown principal: err = %v", err)
	}
	p := testParams()
	p.Cluster, p.NodeRoleARN = "", ""
	_, err := For(Provisioner, p)
	if err == nil || !strings.Contains(err.Error(), "Cluster, NodeRoleARN") {
		t.Errorf("missing params: err = %v", err)
	}
}

func TestPolicy_DocumentIsIAMJSON(t *testing.T) {
	pol := MustFor(Forwarder, testParams())
	b, err := json.Marshal(pol.Document())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Statement":[{"Action":"events:PutEvents","Effect":"Allow","Resource":"arn:aws:events:us-west-2:111122223333:event-bus/joist-demo","Sid":"PutEventsOnBus"}],"Version":"2012-10-17"}`
	if string(b) != want {
		t.Errorf("document:\n got %s\nwant %s", b, want)
	}
}

func TestPolicy_WithoutDropsOnlyThatStatement(t *testing.T) {
	pol := MustFor(Reaper, testParams())
	less := pol.Without("TerminateOwnInstances")
	if len(less.Statements) != len(pol.Statements)-1 {
		t.Fatalf("statements: %d, want %d", len(less.Statements), len(pol.Statements)-1)
	}
	if _, ok := less.Statement("TerminateOwnInstances"); ok {
		t.Error("statement still there")
	}
	if _, ok := pol.Statement("TerminateOwnInstances"); !ok {
		t.Error("Without changed the original")
	}
}

func TestFor_CreatedResourcesMustCarryTheClusterTag(t *testing.T) {
	s, _ := MustFor(Provisioner, testParams()).Statement("CreateTaggedResources")
	if got := s.Condition["StringEquals"]["aws:RequestTag/"+ClusterTag]; len(got) != 1 || got[0] != "demo" {
		t.Errorf("request tag condition = %v", got)
	}
	if len(s.Resources) != len(CreatedResourceTypes) {
		t.Errorf("resources %v, want one per created type", s.Resources)
	}
}

var update = flag.Bool("update", false, "rewrite the IAM tables in docs/deploy.md")

// TestDeployDocMatchesStatements: docs/deploy.md's IAM tables are the
// statements, rendered (go test ./pkg/iampolicy -run TestDeployDoc -update).
func TestDeployDocMatchesStatements(t *testing.T) {
	const begin, end = "<!-- iam:begin (generated: go test ./pkg/iampolicy -run TestDeployDoc -update) -->\n", "<!-- iam:end -->"
	path := filepath.Join("..", "..", "docs", "deploy.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q … %q markers", path, begin, end)
	}
	want := doc[:i+len(begin)] + Markdown() + doc[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Errorf("%s's IAM tables are stale: run go test ./pkg/iampolicy -run TestDeployDoc -update", path)
	}
}
