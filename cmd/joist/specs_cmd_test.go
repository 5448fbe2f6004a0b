package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/spf13/cobra"

	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/specstore"
)

const seedPath = "../../examples/seed/seed.yaml"

// runSpecCmd executes a command in-process and returns its output and error.
func runSpecCmd(t *testing.T, cmd *cobra.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func specExitCode(err error) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return -1
	}
	return 0
}

func writeSpecFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateSeedSaysOK(t *testing.T) {
	out, errOut, err := runSpecCmd(t, newValidateCmd(), "-f", seedPath)
	if specExitCode(err) != 0 {
		t.Fatalf("exit %d: %v\n%s", specExitCode(err), err, errOut)
	}
	want := "OK: 2 pool(s): management (v1alpha5), service (v1alpha5); 2 node class(es): management-lt, service-lt; 1 other object(s) ignored\n"
	if out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
}

// TestFileCommandsTakeFilesAsArguments: validate, convert, plan and
// specs push read files named as arguments as they read -f ones, after
// them (`joist validate seed.yaml` was "unknown command").
func TestFileCommandsTakeFilesAsArguments(t *testing.T) {
	dir := t.TempDir()
	bad := writeSpecFile(t, dir, "bad.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: broken}\nspec: {template: {spec: {}}}\n")
	out, errOut, err := runSpecCmd(t, newValidateCmd(), seedPath)
	if specExitCode(err) != 0 || !strings.HasPrefix(out, "OK: 2 pool(s): management (v1alpha5), service (v1alpha5)") {
		t.Errorf("validate seed.yaml: exit %d, stdout %q, stderr %q", specExitCode(err), out, errOut)
	}
	// Both: the -f file and the argument are read.
	_, errOut, err = runSpecCmd(t, newValidateCmd(), "-f", seedPath, bad)
	if specExitCode(err) != 1 || !strings.Contains(errOut, `NodePool "broken"`) {
		t.Errorf("validate -f seed.yaml bad.yaml: exit %d, stderr %q", specExitCode(err), errOut)
	}
	out, errOut, err = runSpecCmd(t, newConvertCmd(), seedPath, "--to", "v1", "--instance-profile", "p")
	if specExitCode(err) != 0 || !strings.Contains(out, "kind: NodePool") {
		t.Errorf("convert seed.yaml: exit %d, stderr %q", specExitCode(err), errOut)
	}
	out, errOut, err = runSpecCmd(t, newPlanCmd(), "../../examples/seed/seed.yaml", "--region", "ap-northeast-2", "-o", "json")
	if specExitCode(err) != 0 || !strings.Contains(out, `"scheduledPods": 2`) {
		t.Errorf("plan seed.yaml: exit %d, stdout %q, stderr %q", specExitCode(err), out, errOut)
	}
	fake := &fakeParameterStore{params: map[string]ssmtypes.Parameter{}}
	push := newSpecsCmd(func(context.Context, string) (specstore.SSMAPI, error) { return fake, nil })
	_, errOut, err = runSpecCmd(t, push, "push", "--cluster", "c", seedPath)
	if specExitCode(err) != 0 || len(fake.puts) != 4 {
		t.Errorf("specs push seed.yaml: exit %d, %d parameters written, stderr %q", specExitCode(err), len(fake.puts), errOut)
	}
}

func TestValidateSaysWhichPoolsAreReadFromV1Beta1(t *testing.T) {
	out, errOut, err := runSpecCmd(t, newValidateCmd(), "-f", "../../pkg/specs/testdata/v1beta1-rich.yaml")
	if specExitCode(err) != 0 {
		t.Fatalf("exit %d: %v\n%s", specExitCode(err), err, errOut)
	}
	want := "OK: 3 pool(s): batch (v1beta1, read as v1), default (v1beta1, read as v1), steady (v1beta1, read as v1); 3 node class(es): bottlerocket, default, ubuntu\n"
	if out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
}

// TestValidateSaysWhichPoolsAreStatic: a NodePool with replicas is
// named static with the nodes Joist keeps (its replicas, at most its
// limits.nodes).
func TestValidateSaysWhichPoolsAreStatic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "static.yaml")
	const manifest = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: warm}
spec:
  replicas: 3
  limits: {nodes: 2}
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
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runSpecCmd(t, newValidateCmd(), "-f", path)
	if specExitCode(err) != 0 {
		t.Fatalf("exit %d: %v\n%s", specExitCode(err), err, errOut)
	}
	want := "OK: 1 pool(s): warm (v1, static: 2 nodes); 1 node class(es): default\n"
	if out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
}

func TestValidateReadsFoldersAndReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	writeSpecFile(t, dir, "seed.yaml", string(seed))
	bad := writeSpecFile(t, dir, "bad.yml", `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: broken}
spec:
  providerRef: {name: missing}
  weight: 0
  requirements: [{key: karpenter.sh/capacity-type, operator: Inn, values: [spot]}]
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: old}
`)
	writeSpecFile(t, dir, "notes.txt", "not read")
	out, errOut, err := runSpecCmd(t, newValidateCmd(), "-f", dir)
	if specExitCode(err) != 1 {
		t.Fatalf("exit %d, want 1; stdout %q", specExitCode(err), out)
	}
	want := []string{
		bad + `: object 2: karpenter.sh/v1 NodeClaim "old" is not supported: Joist reads karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, karpenter.sh/v1beta1 and v1 NodePool, karpenter.k8s.aws/v1beta1 and v1 EC2NodeClass, karpenter.sh/v1alpha1 NodeOverlay`,
		bad + `: Provisioner "broken": spec.weight: invalid value 0: must be between 1 and 100`,
		bad + `: Provisioner "broken": spec.requirements[0].operator: unsupported value "Inn": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt`,
		"invalid: 3 problem(s)",
	}
	if got := strings.TrimSpace(errOut); got != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
}

func TestValidateNeedsInput(t *testing.T) {
	_, errOut, err := runSpecCmd(t, newValidateCmd())
	if specExitCode(err) != 1 || !strings.Contains(errOut, "no input") {
		t.Fatalf("exit %d, stderr %q", specExitCode(err), errOut)
	}
}

func TestConvertSeedToV1(t *testing.T) {
	out, errOut, err := runSpecCmd(t, newConvertCmd(), "-f", seedPath, "--to", "v1", "--instance-profile", "KarpenterNodeInstanceProfile-hoon-cluster")
	if specExitCode(err) != 0 {
		t.Fatalf("exit %d: %v %s", specExitCode(err), err, errOut)
	}
	objs, derr := specs.Decode([]byte(out), "out")
	if derr != nil {
		t.Fatal(derr)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind+"/"+o.Name)
	}
	if got := strings.Join(kinds, " "); got != "NodePool/management EC2NodeClass/management-lt NodePool/service EC2NodeClass/service-lt" {
		t.Errorf("converted = %s", got)
	}
	if _, errs := specs.Build(objs); len(errs) != 0 {
		t.Errorf("converted output does not validate: %v", errs)
	}
	for _, w := range []string{
		`warning: ../../examples/seed/seed.yaml (object 5) Deployment "nginx-karpenter": not a spec kind, skipped`,
		`warning: AWSNodeTemplate "service-lt": AL2 maps to alias al2@latest, which EKS 1.33 and later refuse; plan a move to al2023@latest`,
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if !strings.Contains(out, "httpPutResponseHopLimit: 2") || !strings.Contains(out, "consolidateAfter: 30s") || !strings.Contains(out, "expireAfter: 336h") {
		t.Errorf("output lacks the spelled-out v1alpha5 behaviour:\n%s", out)
	}
}

func TestConvertWritesAFileAndRefusesOtherVersions(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "v1.yaml")
	if _, errOut, err := runSpecCmd(t, newConvertCmd(), "-f", seedPath, "--role", "NodeRole", "-o", dest); err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	b, err := os.ReadFile(dest)
	if err != nil || !strings.Contains(string(b), "role: NodeRole") {
		t.Fatalf("file: %v\n%s", err, b)
	}
	if _, _, err := runSpecCmd(t, newConvertCmd(), "-f", seedPath, "--to", "v1beta1"); err == nil || !strings.Contains(err.Error(), "only v1") {
		t.Errorf("err = %v", err)
	}
}

func TestConvertExitsOneOnInvalidInput(t *testing.T) {
	f := writeSpecFile(t, t.TempDir(), "p.yaml", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {providerRef: {name: t}, weight: 500}\n")
	_, errOut, err := runSpecCmd(t, newConvertCmd(), "-f", f)
	if specExitCode(err) != 1 || !strings.Contains(errOut, `Provisioner "p": spec.weight: invalid value 500`) {
		t.Fatalf("exit %d, stderr %q", specExitCode(err), errOut)
	}
}

// fakeParameterStore is an in-memory parameter store.
type fakeParameterStore struct {
	params map[string]ssmtypes.Parameter
	puts   []*ssm.PutParameterInput
}

func (f *fakeParameterStore) GetParametersByPath(_ context.Context, in *ssm.GetParametersByPathInput, _ ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	var names []string
	for n := range f.params {
		if strings.HasPrefix(n, aws.ToString(in.Path)+"/") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := &ssm.GetParametersByPathOutput{}
	for _, n := range names {
		out.Parameters = append(out.Parameters, f.params[n])
	}
	return out, nil
}

func (f *fakeParameterStore) PutParameter(_ context.Context, in *ssm.PutParameterInput, _ ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	f.puts = append(f.puts, in)
	f.params[aws.ToString(in.Name)] = ssmtypes.Parameter{Name: in.Name, Value: in.Value, Type: in.Type}
	return &ssm.PutParameterOutput{}, nil
}

func (f *fakeParameterStore) DeleteParameter(_ context.Context, in *ssm.DeleteParameterInput, _ ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error) {
	delete(f.params, aws.ToString(in.Name))
	return &ssm.DeleteParameterOutput{}, nil
}

func TestSpecsPushWritesOneParameterPerObject(t *testing.T) {
	fake := &fakeParameterStore{params: map[string]ssmtypes.Parameter{
		"/joist/hoon-cluster/provisioner/stale": {Name: aws.String("/joist/hoon-cluster/provisioner/stale"), Value: aws.String("x")},
	}}
	cmd := newSpecsCmd(func(context.Context, string) (specstore.SSMAPI, error) { return fake, nil })
	out, errOut, err := runSpecCmd(t, cmd, "push", "--cluster", "hoon-cluster", "-f", seedPath, "--prune")
	if err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	want := `wrote /joist/hoon-cluster/provisioner/management
wrote /joist/hoon-cluster/awsnodetemplate/management-lt
wrote /joist/hoon-cluster/provisioner/service
wrote /joist/hoon-cluster/awsnodetemplate/service-lt
deleted /joist/hoon-cluster/provisioner/stale
`
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	for _, p := range fake.puts {
		if !aws.ToBool(p.Overwrite) || p.Type != ssmtypes.ParameterTypeString {
			t.Errorf("put %s: overwrite %v type %s", aws.ToString(p.Name), aws.ToBool(p.Overwrite), p.Type)
		}
	}
	// What was pushed reads back as the same spec.
	store := &specstore.SSMStore{Client: fake, Cluster: "hoon-cluster"}
	spec, err := specstore.Read(context.Background(), store)
	if err != nil || len(spec.Pools) != 2 || len(spec.NodeClasses) != 2 {
		t.Fatalf("read back: %v %+v", err, spec)
	}
}

func TestSpecsPushRefusesInvalidSpecs(t *testing.T) {
	fake := &fakeParameterStore{params: map[string]ssmtypes.Parameter{}}
	f := writeSpecFile(t, t.TempDir(), "p.yaml", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {providerRef: {name: missing}}\n")
	cmd := newSpecsCmd(func(context.Context, string) (specstore.SSMAPI, error) { return fake, nil })
	_, errOut, err := runSpecCmd(t, cmd, "push", "--cluster", "c", "-f", f)
	if specExitCode(err) != 1 || len(fake.puts) != 0 {
		t.Fatalf("exit %d, puts %d", specExitCode(err), len(fake.puts))
	}
	want := f + `: Provisioner "p": spec.providerRef.name: AWSNodeTemplate "missing" not found
nothing pushed: fix the problems above first
`
	if errOut != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, want)
	}
}

func TestSpecsPushDryRunWritesNothing(t *testing.T) {
	cmd := newSpecsCmd(func(context.Context, string) (specstore.SSMAPI, error) {
		t.Fatal("dry run must not reach SSM")
		return nil, nil
	})
	out, _, err := runSpecCmd(t, cmd, "push", "--cluster", "c", "-f", seedPath, "--dry-run", "--secure")
	if err != nil || !strings.Contains(out, "would write /joist/c/provisioner/service\n") {
		t.Fatalf("%v %q", err, out)
	}
}

func TestSpecsPushNeedsACluster(t *testing.T) {
	_, _, err := runSpecCmd(t, newSpecsCmd(nil), "push", "-f", seedPath)
	if err == nil || !strings.Contains(err.Error(), `required flag(s) "cluster" not set`) {
		t.Fatalf("err = %v", err)
	}
}

// TestValidateListsNodeOverlays: NodeOverlays are read with the pools,
// highest weight first.
func TestValidateListsNodeOverlays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overlays.yaml")
	const manifest = `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: spot-discount}
spec:
  priceAdjustment: "-10%"
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: hugepages}
spec:
  weight: 20
  capacity: {hugepages-2Mi: 100Mi}
`
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runSpecCmd(t, newValidateCmd(), "-f", path)
	if specExitCode(err) != 0 {
		t.Fatalf("exit %d: %v\n%s", specExitCode(err), err, errOut)
	}
	want := "OK: 0 pool(s): ; 0 node class(es): ; 2 node overlay(s): hugepages (weight 20), spot-discount (weight 0)\n"
	if out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
}
