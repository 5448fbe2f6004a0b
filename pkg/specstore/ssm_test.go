package specstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/joist-dev/joist/pkg/specs"
)

// fakeSSM is an in-memory Parameter Store that pages like the real one
// (at most pageSize parameters per call) and records how it was asked.
type fakeSSM struct {
	params   map[string]ssmtypes.Parameter
	pageSize int
	calls    []*ssm.GetParametersByPathInput
	puts     []*ssm.PutParameterInput
	deleted  []string
	failGet  error
}

func newFakeSSM() *fakeSSM { return &fakeSSM{params: map[string]ssmtypes.Parameter{}, pageSize: 10} }

func (f *fakeSSM) set(name, value string, typ ssmtypes.ParameterType) {
	f.params[name] = ssmtypes.Parameter{Name: aws.String(name), Value: aws.String(value), Type: typ}
}

func (f *fakeSSM) GetParametersByPath(_ context.Context, in *ssm.GetParametersByPathInput, _ ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	f.calls = append(f.calls, in)
	if f.failGet != nil {
		return nil, f.failGet
	}
	prefix := aws.ToString(in.Path) + "/"
	var names []string
	for n := range f.params {
		rest, ok := strings.CutPrefix(n, prefix)
		if ok && (aws.ToBool(in.Recursive) || !strings.Contains(rest, "/")) {
			names = append(names, n)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names))) // the real store promises no order
	start := 0
	if in.NextToken != nil {
		fmt.Sscanf(aws.ToString(in.NextToken), "%d", &start)
	}
	out := &ssm.GetParametersByPathOutput{}
	for i := start; i < len(names) && i < start+f.pageSize; i++ {
		p := f.params[names[i]]
		if p.Type == ssmtypes.ParameterTypeSecureString && !aws.ToBool(in.WithDecryption) {
			p.Value = aws.String("ENCRYPTED")
		}
		out.Parameters = append(out.Parameters, p)
	}
	if start+f.pageSize < len(names) {
		out.NextToken = aws.String(fmt.Sprint(start + f.pageSize))
	}
	return out, nil
}

func (f *fakeSSM) PutParameter(_ context.Context, in *ssm.PutParameterInput, _ ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	f.puts = append(f.puts, in)
	f.set(aws.ToString(in.Name), aws.ToString(in.Value), in.Type)
	return &ssm.PutParameterOutput{}, nil
}

func (f *fakeSSM) DeleteParameter(_ context.Context, in *ssm.DeleteParameterInput, _ ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error) {
	f.deleted = append(f.deleted, aws.ToString(in.Name))
	delete(f.params, aws.ToString(in.Name))
	return &ssm.DeleteParameterOutput{}, nil
}

func seedObjects(t *testing.T) []specs.Object {
	t.Helper()
	data, err := os.ReadFile("../../examples/seed/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := specs.Decode(data, "seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestSSMStoreReadsEveryParameterUnderTheClusterAtAnyDepth(t *testing.T) {
	f := newFakeSSM()
	f.pageSize = 2
	store := &SSMStore{Client: f, Cluster: "c"}
	if _, _, err := store.Push(context.Background(), seedObjects(t), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// A deeper, JSON, SecureString parameter, and another cluster's.
	f.set("/joist/c/teams/data/v1/pool.json", `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"data"},"spec":{"template":{"spec":{"requirements":[],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"data"}}}}}`, ssmtypes.ParameterTypeSecureString)
	f.set("/joist/c/teams/data/v1/class", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: data}\nspec: {role: r, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}\n", ssmtypes.ParameterTypeString)
	f.set("/joist/other/provisioner/x", "garbage", ssmtypes.ParameterTypeString)

	spec, err := Read(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range spec.Pools {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "data,management,service" {
		t.Errorf("pools = %v", names)
	}
	if spec.Partial || len(spec.Declared) != 3 || !spec.Declared["data"] || !spec.Declared["management"] || !spec.Declared["service"] {
		t.Errorf("declared %v, partial %v; want the three pools, whole", spec.Declared, spec.Partial)
	}
	if len(f.calls) != 3 {
		t.Errorf("made %d calls, want 3 pages of 2", len(f.calls))
	}
	for _, c := range f.calls {
		if aws.ToString(c.Path) != "/joist/c" || !aws.ToBool(c.Recursive) || !aws.ToBool(c.WithDecryption) {
			t.Errorf("call = path %s recursive %v decryption %v", aws.ToString(c.Path), aws.ToBool(c.Recursive), aws.ToBool(c.WithDecryption))
		}
	}
}

func TestSSMStoreReportsBadParametersAndServesTheRest(t *testing.T) {
	f := newFakeSSM()
	store := &SSMStore{Client: f, Cluster: "c"}
	if _, _, err := store.Push(context.Background(), seedObjects(t), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	f.set("/joist/c/provisioner/broken", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: broken}\nspec: {providerRef: {name: service-lt}, weight: 0}\n", ssmtypes.ParameterTypeString)
	f.set("/joist/c/provisioner/unreadable", "apiVersion: karpenter.sh/v1alpha6\nkind: Provisioner\nmetadata: {name: future}\n", ssmtypes.ParameterTypeString)
	var logs bytes.Buffer
	store.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	spec, err := Read(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pools) != 2 {
		t.Errorf("pools = %d, want the 2 valid ones", len(spec.Pools))
	}
	// The invalid pool is still declared (its nodes stay); the document
	// that cannot be read at all makes the read partial (no pool counts
	// as deleted while it may be one).
	if !spec.Declared["broken"] || !spec.Partial {
		t.Errorf("declared %v, partial %v; want broken declared and the read partial", spec.Declared, spec.Partial)
	}
	for _, want := range []string{
		`level=WARN msg="unreadable spec document skipped" source=ssm:/joist/c/ error="/joist/c/provisioner/unreadable: object 1: karpenter.sh/v1alpha6 Provisioner \"future\" is not supported`,
		`level=WARN msg="invalid spec object skipped" source=ssm:/joist/c/ error="/joist/c/provisioner/broken: Provisioner \"broken\": spec.weight: invalid value 0: must be between 1 and 100"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s\n%s", want, logs.String())
		}
	}
}

func TestSSMStoreFailsOnlyWhenSSMCannotBeRead(t *testing.T) {
	f := newFakeSSM()
	f.failGet = fmt.Errorf("AccessDenied")
	_, err := Read(context.Background(), &SSMStore{Client: f, Cluster: "c"})
	if err == nil || err.Error() != "read SSM parameters under /joist/c/: AccessDenied" {
		t.Fatalf("err = %v", err)
	}
}

func TestSSMPushStoresYAMLPerObjectAndPrunes(t *testing.T) {
	f := newFakeSSM()
	f.set("/joist/c/nodepool/gone", "x", ssmtypes.ParameterTypeString)
	f.set("/joist/d/nodepool/keep", "x", ssmtypes.ParameterTypeString)
	store := &SSMStore{Client: f, Cluster: "c"}
	written, deleted, err := store.Push(context.Background(), seedObjects(t), PushOptions{Secure: true, Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4 || strings.Join(deleted, ",") != "/joist/c/nodepool/gone" {
		t.Errorf("written %v deleted %v", written, deleted)
	}
	for _, p := range f.puts {
		if p.Type != ssmtypes.ParameterTypeSecureString || !aws.ToBool(p.Overwrite) || p.Tier != ssmtypes.ParameterTierIntelligentTiering {
			t.Errorf("put %s = %s overwrite=%v tier=%s", aws.ToString(p.Name), p.Type, aws.ToBool(p.Overwrite), p.Tier)
		}
	}
	got := aws.ToString(f.params["/joist/c/provisioner/service"].Value)
	if !strings.HasPrefix(got, "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: service\n") {
		t.Errorf("stored:\n%s", got)
	}
	if _, ok := f.params["/joist/d/nodepool/keep"]; !ok {
		t.Error("another cluster's parameter was pruned")
	}
}

func TestParameterNames(t *testing.T) {
	if got := ParameterName("hoon-cluster", "AWSNodeTemplate", "service-lt"); got != "/joist/hoon-cluster/awsnodetemplate/service-lt" {
		t.Errorf("got %s", got)
	}
}

func TestNewPicksTheStoreByConfiguration(t *testing.T) {
	tests := []struct {
		cfg     Config
		want    string
		wantErr string
	}{
		{Config{Cluster: "c", SSM: newFakeSSM()}, "*specstore.SSMStore", ""},
		{Config{Source: "ssm", Cluster: "c", SSM: newFakeSSM()}, "*specstore.SSMStore", ""},
		{Config{Source: "ssm", Cluster: "c"}, "", "spec source ssm needs an SSM client"},
		{Config{Source: "ssm", SSM: newFakeSSM()}, "", "spec source ssm needs the cluster name"},
		{Config{Source: "crd"}, "", "spec source crd needs a Kubernetes client"},
		{Config{Source: "s3"}, "", `unknown spec source "s3": want "ssm" or "crd"`},
	}
	for _, tc := range tests {
		s, err := New(tc.cfg)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%+v: err = %v, want %s", tc.cfg, err, tc.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprintf("%T", s) != tc.want {
			t.Errorf("%+v: %T %v", tc.cfg, s, err)
		}
	}
}
