package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func runPlanJSON(t *testing.T, o *planOptions) planOutput {
	t.Helper()
	var stdout, stderr bytes.Buffer
	o.output = "json"
	if err := runPlan(strings.NewReader(""), &stdout, &stderr, o); err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	var out planOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	return out
}

// The seed workload (a Karpenter v0.20 user's manifests) plans exactly one
// t3.large or t3.xlarge for pool "service" holding both nginx pods, and
// nothing for "management", whose taint the pods do not tolerate.
func TestPlanSeed(t *testing.T) {
	out := runPlanJSON(t, &planOptions{files: []string{"../../examples/seed/seed.yaml"}, region: "ap-northeast-2", catalog: "embedded"})
	if out.Pods != 2 || out.ScheduledPods != 2 || out.Unschedulable != 0 {
		t.Fatalf("pods %d, scheduled %d, unschedulable %d", out.Pods, out.ScheduledPods, out.Unschedulable)
	}
	if out.NodeCount != 1 || len(out.Nodes) != 1 {
		t.Fatalf("%d nodes: %+v", out.NodeCount, out.Nodes)
	}
	n := out.Nodes[0]
	if n.Pool != "service" || (n.InstanceType != "t3.large" && n.InstanceType != "t3.xlarge") || n.Pods != 2 {
		t.Errorf("node %+v", n)
	}
	if n.Zone != "ap-northeast-2a" && n.Zone != "ap-northeast-2c" {
		t.Errorf("zone %s outside the pool's zones", n.Zone)
	}
	if out.TotalPricePerHour <= 0 || out.LowerBoundPricePerHour <= 0 || out.LowerBoundPricePerHour > out.TotalPricePerHour {
		t.Errorf("price %v, bound %v", out.TotalPricePerHour, out.LowerBoundPricePerHour)
	}
}

func TestPlanTableAndDefaultPool(t *testing.T) {
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: "1", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  containers:
  - name: x
    image: x
    resources: {requests: {cpu: "5000"}}
`
	var stdout, stderr bytes.Buffer
	err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "table"})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{"POOL", "default", "4 pods: 3 on 1 new node(s), 1 unschedulable", "lower bound", "used the default", "default/huge: no instance type has 5000 cpu"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestPlanRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runPlan(strings.NewReader(""), &out, &errOut, &planOptions{files: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "--region") {
		t.Errorf("missing region: %v", err)
	}
	if err := runPlan(strings.NewReader(""), &out, &errOut, &planOptions{files: []string{"x"}, region: "us-east-1", output: "xml"}); err == nil {
		t.Error("xml output accepted")
	}
}
