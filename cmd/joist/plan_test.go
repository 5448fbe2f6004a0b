package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joist-dev/joist/pkg/catalog"
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

// deploymentYAML is a Deployment of replicas pods of one container with
// the requests (a YAML flow map), for the plans' manifests.
func deploymentYAML(name string, replicas int, requests string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: %[1]s
        image: nginx
        resources: {requests: %[3]s}
`, name, replicas, requests)
}

// planStdin plans manifest (from standard input) in us-east-1 with the
// embedded catalog and the options o sets, returning the JSON output
// (when the plan succeeded), what went to stderr, and the error.
func planStdin(t *testing.T, manifest string, o planOptions) (planOutput, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	o.files, o.region, o.catalog, o.output = []string{"-"}, "us-east-1", "embedded", "json"
	err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &o)
	var out planOutput
	if err == nil {
		if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
			t.Fatalf("%v: %s", jerr, stdout.String())
		}
	}
	return out, stderr.String(), err
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

// TestPlanSaysWhenTheBoundIsLoose: a plan far above the lower bound
// (one pod per node, by hostname anti-affinity) says why the bound may
// be loose; a plan near it (the same pods packed) does not.
func TestPlanSaysWhenTheBoundIsLoose(t *testing.T) {
	deployment := deploymentYAML("web", 64, `{cpu: 500m, memory: 1Gi}`)
	const anti = `      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
`
	const hint = "the bound buys fractions of nodes and counts resources only"
	for _, tc := range []struct {
		name, manifest string
		hint           bool
	}{{"packed", deployment, false}, {"one pod per node", deployment + anti, true}} {
		var stdout, stderr bytes.Buffer
		err := runPlan(strings.NewReader(tc.manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "table"})
		if err != nil {
			t.Fatalf("%s: plan: %v\n%s", tc.name, err, stderr.String())
		}
		if got := strings.Contains(stdout.String(), hint); got != tc.hint {
			t.Errorf("%s: says the bound is loose %v, want %v:\n%s", tc.name, got, tc.hint, stdout.String())
		}
	}
}

func TestPlanTableAndDefaultPool(t *testing.T) {
	manifest := deploymentYAML("web", 3, `{cpu: "1", memory: 1Gi}`) + `---
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

// A pool whose node class is not in the files is planned anyway, with the
// AMI family's default node settings and a warning on stderr; `joist
// validate` still refuses the same files.
func TestPlanMissingNodeClassWarns(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: web}
spec:
  providerRef: {name: elsewhere}
  requirements:
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
` + deploymentYAML("web", 2, `{cpu: "1", memory: 1Gi}`)
	var stdout, stderr bytes.Buffer
	err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "json"})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	var out planOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.ScheduledPods != 2 || out.DefaultPool || len(out.Nodes) == 0 || out.Nodes[0].Pool != "web" {
		t.Errorf("plan %+v, want both pods on pool web", out)
	}
	want := `joist plan: warning: Provisioner "web": spec.providerRef.name: AWSNodeTemplate "elsewhere" not found; planned with the AMI family's default node settings`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
	var vOut, vErr bytes.Buffer
	if err := runValidate(strings.NewReader(manifest), &vOut, &vErr, &validateOptions{files: []string{"-"}}); err == nil || !strings.Contains(vErr.String(), `AWSNodeTemplate "elsewhere" not found`) {
		t.Errorf("validate accepted a missing node class: %v\n%s", err, vErr.String())
	}
}

// --min-values-policy BestEffort plans a pod whose node cannot meet its
// pool's minValues (two types allowed and asked for, only the larger holds
// the pod); the default (Strict)
// leaves its pod unschedulable, as Karpenter does. A bad value is refused.
func TestPlanMinValuesPolicy(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: one-type}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge], minValues: 2}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: x
    image: x
    resources: {requests: {cpu: "3"}}
`
	for _, c := range []struct {
		policy string
		want   string
	}{
		{"Strict", "1 pods: 0 on 0 new node(s), 1 unschedulable"},
		{"BestEffort", "1 pods: 1 on 1 new node(s)"},
	} {
		var stdout, stderr bytes.Buffer
		err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "table", minValuesPolicy: c.policy})
		if err != nil {
			t.Fatalf("%s: plan: %v\n%s", c.policy, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.policy, c.want, stdout.String())
		}
	}
	var out, errOut bytes.Buffer
	err := runPlan(strings.NewReader(manifest), &out, &errOut, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "table", minValuesPolicy: "Loose"})
	if err == nil || !strings.Contains(err.Error(), "--min-values-policy") {
		t.Errorf("--min-values-policy Loose: %v, want an error naming the flag", err)
	}
}

// --scheduler-config gives the Deployment's pods the default hostname
// spread (their selector deduced from the ReplicaSet the Deployment
// would create), so the three replicas get a node each; without it they
// share one. A bad config is refused naming the flag and the field.
func TestPlanSchedulerConfig(t *testing.T) {
	manifest := deploymentYAML("web", 3, `{cpu: 100m}`)
	dir := t.TempDir()
	good := filepath.Join(dir, "spread.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: Never}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		config string
		want   string
	}{
		{"", "3 pods: 3 on 1 new node(s)"},
		{good, "3 pods: 3 on 3 new node(s)"},
	} {
		var stdout, stderr bytes.Buffer
		err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "table", schedulerConfig: c.config})
		if err != nil {
			t.Fatalf("%q: plan: %v\n%s", c.config, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), c.want) {
			t.Errorf("%q: output lacks %q:\n%s", c.config, c.want, stdout.String())
		}
	}
	var out, errOut bytes.Buffer
	err := runPlan(strings.NewReader(manifest), &out, &errOut, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "table", schedulerConfig: bad})
	if err == nil || !strings.Contains(err.Error(), "--scheduler-config") || !strings.Contains(err.Error(), "defaultConstraints[0].whenUnsatisfiable") {
		t.Errorf("a bad --scheduler-config: %v, want an error naming the flag and the field", err)
	}
}

// A node class that selects capacity reservations: the plan, which reads
// no EC2, says it buys every node; one that names a placement group: the
// plan says it leaves the group out.
func TestPlanWarnsOfReservationsAndPlacementGroupsItCannotSee(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ml}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: ml}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: ml}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {k: v}}]
  securityGroupSelectorTerms: [{tags: {k: v}}]
  capacityReservationSelectorTerms: [{tags: {team: ml}}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: c
    image: trainer
    resources: {requests: {cpu: "1", memory: 1Gi}}
`
	var stdout, stderr bytes.Buffer
	if err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "json"}); err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	want := `joist plan: warning: EC2NodeClass "ml" selects capacity reservations; this plan buys every node`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
	// Nor does it read the placement group a class names.
	placed := strings.Replace(manifest, "  capacityReservationSelectorTerms: [{tags: {team: ml}}]\n", "  placementGroupSelector: {name: racks}\n", 1)
	_, errOut, err := planStdin(t, placed, planOptions{})
	want = `joist plan: warning: EC2NodeClass "ml" names a placement group; this plan leaves it out`
	if err != nil || !strings.Contains(errOut, want) {
		t.Errorf("placement group: %v, stderr %q lacks %q", err, errOut, want)
	}
}

// A static NodePool (replicas): the plan, which launches no static node,
// says so; its pods go to the dynamic pool beside it.
func TestPlanWarnsOfStaticPools(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: warm}
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {k: v}}]
  securityGroupSelectorTerms: [{tags: {k: v}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: c
    image: web
    resources: {requests: {cpu: "1", memory: 1Gi}}
`
	var stdout, stderr bytes.Buffer
	if err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "json"}); err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	want := `joist plan: warning: NodePool "warm" is static (2 nodes); this plan puts no pod on its nodes`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
	if !strings.Contains(stdout.String(), `"pool": "default"`) || strings.Contains(stdout.String(), `"pool": "warm"`) {
		t.Errorf("plan %s, want the pod on a node of the dynamic pool", stdout.String())
	}
}

// Zone IDs given with --zone-ids (zone letters or names): a pod selecting
// one is planned in its zone; without them the zone ID is a label no pool
// defines; a zone not in the region is an error naming the flag.
func TestPlanZoneIDs(t *testing.T) {
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  nodeSelector: {topology.k8s.aws/zone-id: use1-az1}
  containers:
  - name: c
    image: web
    resources: {requests: {cpu: "1", memory: 1Gi}}
`
	plan := func(ids map[string]string) (planOutput, string, error) {
		return planStdin(t, manifest, planOptions{zoneIDs: ids})
	}
	out, errOut, err := plan(map[string]string{"a": "use1-az4", "us-east-1b": "use1-az1", "c": "use1-az2"})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	if len(out.Nodes) != 1 || out.Nodes[0].Zone != "us-east-1b" {
		t.Errorf("nodes %+v, want one in us-east-1b (use1-az1)", out.Nodes)
	}
	out, errOut, err = plan(nil)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	if out.Unschedulable != 1 {
		t.Errorf("without zone IDs: %d unschedulable, want the pod", out.Unschedulable)
	}
	if _, _, err = plan(map[string]string{"us-west-2a": "usw2-az1"}); err == nil || !strings.Contains(err.Error(), "--zone-ids us-west-2a=usw2-az1") {
		t.Errorf("a zone of another region: err %v, want one naming the flag", err)
	}
}

// A Windows pool (a windows2022 alias, kubernetes.io/os In [windows]) plans
// the pods selecting Windows on new nodes of amd64 types, and the pods
// selecting Linux on the Linux pool; a pod asking for Windows Server
// 2019's build fits no node of it.
func TestPlanWindowsPool(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: windows}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: windows}
      requirements:
      - {key: kubernetes.io/os, operator: In, values: [windows]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: windows}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: windows2022@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: linux}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: linux}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: linux}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: iis}
spec:
  replicas: 3
  selector: {matchLabels: {app: iis}}
  template:
    metadata: {labels: {app: iis}}
    spec:
      nodeSelector: {kubernetes.io/os: windows}
      containers:
      - name: iis
        image: mcr.microsoft.com/windows/servercore/iis
        resources: {requests: {cpu: "1", memory: 2Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: "1", memory: 2Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: old-windows}
spec:
  nodeSelector: {kubernetes.io/os: windows, node.kubernetes.io/windows-build: 10.0.17763}
  containers:
  - name: x
    image: mcr.microsoft.com/windows/servercore:ltsc2019
`
	path := filepath.Join(t.TempDir(), "windows.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runPlanJSON(t, &planOptions{files: []string{path}, region: "us-west-2", catalog: "embedded"})
	if out.Pods != 6 || out.ScheduledPods != 5 || out.Unschedulable != 1 {
		t.Fatalf("pods %d, scheduled %d, unschedulable %d: %+v", out.Pods, out.ScheduledPods, out.Unschedulable, out.UnschedulablePods)
	}
	if f := out.UnschedulablePods[0]; !strings.Contains(f.Pod, "old-windows") || !strings.Contains(f.Reason, "windows-build") {
		t.Errorf("unschedulable %+v, want old-windows for its build", f)
	}
	pods := map[string]int{}
	for _, n := range out.Nodes {
		for _, name := range n.PodNames {
			if app := strings.SplitN(strings.TrimPrefix(name, "default/"), "-", 2)[0]; (app == "iis") != (n.Pool == "windows") {
				t.Errorf("%s planned onto pool %s", name, n.Pool)
			}
		}
		pods[n.Pool] += n.Pods
		if n.Pool != "windows" {
			continue
		}
		for _, o := range n.Options {
			if it, ok := catalog.Lookup(o); !ok || it.Arch != "amd64" {
				t.Errorf("a Windows node may be %s", o)
			}
		}
	}
	if pods["windows"] != 3 || pods["linux"] != 2 {
		t.Errorf("pods per pool %v, want 3 windows and 2 linux", pods)
	}
}

// TestPlanAppliesNodeOverlays: an overlay in the files prices the plan
// (here r6a made nearly free), and one in conflict with another of its
// weight is a warning naming it.
func TestPlanAppliesNodeOverlays(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: r6a-deal}
spec:
  weight: 5
  price: "0.001"
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [r6a]}]
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: all-dear}
spec:
  weight: 5
  priceAdjustment: "+1"
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: c
    image: web
    resources: {requests: {cpu: "1", memory: 1Gi}}
`
	var stdout, stderr bytes.Buffer
	if err := runPlan(strings.NewReader(manifest), &stdout, &stderr, &planOptions{files: []string{"-"}, region: "us-east-1", catalog: "embedded", output: "json"}); err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"instanceType": "r6a.`) {
		t.Errorf("plan %s, want an r6a node", stdout.String())
	}
	want := `joist plan: warning: NodeOverlay "all-dear": conflicts with another overlay of weight 5`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}

// --reserved-enis (Karpenter's RESERVED_ENIS) lowers every type's
// ENI-limited pods: 25 small pods on m5.large nodes (29 pods each) take
// one node, with one ENI reserved (20 pods each) two; a negative count is
// an error naming the flag.
func TestPlanReservedENIs(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: small}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: small}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: small}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]
---
` + deploymentYAML("tiny", 25, `{cpu: 10m, memory: 16Mi}`)
	plan := func(reserved int64) (planOutput, error) {
		out, _, err := planStdin(t, manifest, planOptions{reservedENIs: reserved})
		return out, err
	}
	for _, tc := range []struct {
		reserved int64
		nodes    int
	}{{0, 1}, {1, 2}} {
		out, err := plan(tc.reserved)
		if err != nil {
			t.Fatal(err)
		}
		if out.NodeCount != tc.nodes || out.Unschedulable != 0 {
			t.Errorf("%d reserved: %d nodes, %d unschedulable; want %d nodes", tc.reserved, out.NodeCount, out.Unschedulable, tc.nodes)
		}
	}
	if _, err := plan(-1); err == nil || !strings.Contains(err.Error(), "--reserved-enis") {
		t.Errorf("-1 reserved: err %v, want one naming the flag", err)
	}
}

// Kubelet settings given as CEL expressions (Karpenter's NodeClassCEL
// gate, off by default): validate accepts the class, as Karpenter's CRD
// does, and warns that its pools launch nothing; plan leaves the pool out
// (its pods go to the next pool, here none: unschedulable), as the
// provisioner does. With --feature-gates NodeClassCEL=true the expressions
// size each type (here 2 pods per vCPU, where the type's ENIs would give a
// 2-vCPU node 17 or more), and one that does not compile is a warning
// naming it.
func TestKubeletExpressionsLeaveThePoolOut(t *testing.T) {
	manifest := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: cel}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: cel}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: cel}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]
  kubelet: {maxPods: "min(vcpus * 8, max_pods)"}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: web
    resources: {requests: {cpu: "1", memory: 1Gi}}
`
	why := `node class "cel": spec.kubelet.maxPods: CEL expressions need Karpenter's NodeClassCEL feature gate`
	var vOut, vErr bytes.Buffer
	if err := runValidate(strings.NewReader(manifest), &vOut, &vErr, &validateOptions{files: []string{"-"}}); err != nil || !strings.Contains(vErr.String(), `warning: pool "cel" will not launch nodes: `+why) {
		t.Errorf("validate: %v, stderr %q; want OK and a warning", err, vErr.String())
	}
	out, stderr, err := planStdin(t, manifest, planOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Unschedulable != 1 || len(out.Nodes) != 0 || !strings.Contains(stderr, `pool "cel" is left out: `+why) {
		t.Errorf("plan %+v, stderr %q; want the pod unschedulable and a warning", out, stderr)
	}

	// The gate on: the pool plans, each type with its own max pods.
	gated := strings.Replace(manifest, `kubelet: {maxPods: "min(vcpus * 8, max_pods)"}`, `kubelet: {maxPods: "vcpus * 2"}`, 1) +
		"---\n" + deploymentYAML("tiny", 14, "{cpu: 10m, memory: 16Mi}")
	out, stderr, err = planStdin(t, gated, planOptions{featureGates: "NodeClassCEL=true"})
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, n := range out.Nodes {
		placed += n.Pods
		if it, ok := catalog.Lookup(n.InstanceType); !ok || int64(n.Pods) > it.VCPU*2 {
			t.Errorf("%d pods on a %s (%d vCPUs): want at most 2 per vCPU", n.Pods, n.InstanceType, it.VCPU)
		}
	}
	if out.Unschedulable != 0 || placed != 15 {
		t.Fatalf("plan %+v, stderr %q; want the 15 pods placed", out, stderr)
	}
	vOut.Reset()
	vErr.Reset()
	bad := strings.Replace(manifest, "vcpus * 8", "cores * 8", 1) // min(cores * 8, max_pods)
	if err := runValidate(strings.NewReader(bad), &vOut, &vErr, &validateOptions{files: []string{"-"}, featureGates: "NodeClassCEL=true"}); err != nil ||
		!strings.Contains(vErr.String(), `warning: pool "cel" will not launch nodes: node class "cel": spec.kubelet.maxPods: expression "min(cores * 8, max_pods)": at 1:5: undeclared reference to 'cores'`) {
		t.Errorf("validate: %v, stderr %q; want OK and a warning naming the expression", err, vErr.String())
	}
	if err := runValidate(strings.NewReader(manifest), &vOut, &vErr, &validateOptions{files: []string{"-"}, featureGates: "NodeClassCEL=maybe"}); err == nil || !strings.Contains(err.Error(), "--feature-gates") {
		t.Errorf("a bad --feature-gates: %v, want an error naming the flag", err)
	}
}
