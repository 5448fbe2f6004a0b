package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type listedType struct {
	Name          string            `json:"name"`
	Arch          string            `json:"arch"`
	CPU           int64             `json:"cpu"`
	MemoryMiB     int64             `json:"memoryMiB"`
	Pods          int64             `json:"pods"`
	Allocatable   map[string]string `json:"allocatable"`
	OnDemandPrice *float64          `json:"onDemandPrice"`
	SpotPrice     *float64          `json:"spotPrice"`
	Zones         []string          `json:"zones"`
}

// runInstanceTypesCmd runs a fresh `instance-types` command in process.
func runInstanceTypesCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	cmd := newInstanceTypesCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func decodeListed(t *testing.T, out string) map[string]listedType {
	t.Helper()
	var rows []listedType
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("output is not a JSON list: %v\n%s", err, out)
	}
	m := map[string]listedType{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}

func TestInstanceTypesJSONShowsKarpenterAllocatable(t *testing.T) {
	out, err := runInstanceTypesCmd(t, "--region", "us-east-1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	rows := decodeListed(t, out)
	if len(rows) != 1367 {
		t.Errorf("%d types listed for us-east-1, want 1367", len(rows))
	}
	m5, ok := rows["m5.large"]
	if !ok {
		t.Fatal("m5.large is not listed")
	}
	if m5.Allocatable["cpu"] != "1930m" || m5.Allocatable["memory"] != "6903Mi" || m5.Pods != 29 {
		t.Errorf("m5.large allocatable cpu %s memory %s pods %d, want 1930m 6903Mi 29", m5.Allocatable["cpu"], m5.Allocatable["memory"], m5.Pods)
	}
	if m5.Arch != "amd64" || m5.CPU != 2 || m5.MemoryMiB != 8192 {
		t.Errorf("m5.large specs %+v", m5)
	}
	if m5.OnDemandPrice == nil || *m5.OnDemandPrice != 0.096 || m5.SpotPrice == nil || *m5.SpotPrice != 0.0315 {
		t.Errorf("m5.large prices %v %v", m5.OnDemandPrice, m5.SpotPrice)
	}
	if strings.Join(m5.Zones, ",") != "us-east-1a,us-east-1b,us-east-1c" {
		t.Errorf("zones %v", m5.Zones)
	}
	if c8a := rows["c8a.large"]; c8a.SpotPrice != nil {
		t.Errorf("c8a.large has no spot price in the data, listed %v", *c8a.SpotPrice)
	}
}

func TestInstanceTypesFiltersWithALabelSelector(t *testing.T) {
	out, err := runInstanceTypesCmd(t, "--region", "us-west-2", "--zones", "a,b", "-o", "json",
		"-l", "kubernetes.io/arch=arm64,karpenter.k8s.aws/instance-family in (m6g,c6g),karpenter.k8s.aws/instance-cpu<3")
	if err != nil {
		t.Fatal(err)
	}
	rows := decodeListed(t, out)
	got := []string{}
	for name := range rows {
		got = append(got, name)
	}
	want := map[string]bool{"c6g.medium": true, "c6g.large": true, "m6g.medium": true, "m6g.large": true}
	if len(rows) != len(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	for name, r := range rows {
		if !want[name] {
			t.Errorf("unexpected %s", name)
		}
		if strings.Join(r.Zones, ",") != "us-west-2a,us-west-2b" {
			t.Errorf("%s zones %v", name, r.Zones)
		}
	}
	// Graviton memory rule shows through: 8192 − 64 − 7.5% − 574Mi − 100Mi.
	if m := rows["m6g.large"].Allocatable["memory"]; m != "6844Mi" {
		t.Errorf("m6g.large allocatable memory %s, want 6844Mi", m)
	}
}

func TestInstanceTypesTableAndYAML(t *testing.T) {
	out, err := runInstanceTypesCmd(t, "--region", "eu-west-1", "-l", "node.kubernetes.io/instance-type=m5.large")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one row:\n%s", out)
	}
	if !strings.HasPrefix(lines[0], "NAME") {
		t.Errorf("header %q", lines[0])
	}
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "m5.large amd64 2 8Gi 29 1930m 6903Mi 0.107 0.0475" {
		t.Errorf("row %q", lines[1])
	}

	out, err = runInstanceTypesCmd(t, "--region", "eu-west-1", "-o", "yaml", "-l", "node.kubernetes.io/instance-type=m5.large")
	if err != nil {
		t.Fatal(err)
	}
	var rows []listedType
	if err := yaml.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, out)
	}
	if len(rows) != 1 || rows[0].Allocatable["memory"] != "6903Mi" {
		t.Errorf("yaml rows %+v", rows)
	}
}

func TestInstanceTypesTakesTheRegionFromTheEnvironment(t *testing.T) {
	cmd := newInstanceTypesCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"-o", "json", "-l", "node.kubernetes.io/instance-type=m5.large"})
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "ap-northeast-2")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	r := decodeListed(t, out.String())["m5.large"]
	if r.OnDemandPrice == nil || *r.OnDemandPrice != 0.118 {
		t.Errorf("price %v, want Seoul's 0.118", r.OnDemandPrice)
	}
}

func TestInstanceTypesRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no region", []string{}, "no region"},
		{"unknown region", []string{"--region", "mars-north-1"}, "no instance type has a price"},
		{"zone of another region", []string{"--region", "us-east-1", "--zones", "eu-west-1a"}, "not in region"},
		{"bad selector", []string{"--region", "us-east-1", "-l", "a in b"}, "parse selector"},
		{"bad output", []string{"--region", "us-east-1", "-o", "xml"}, "unknown output format"},
		{"arguments", []string{"--region", "us-east-1", "m5.large"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runInstanceTypesCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestInstanceTypesIsRegisteredOnTheRoot(t *testing.T) {
	for _, c := range rootCmd.Commands() {
		if c.Name() == "instance-types" {
			return
		}
	}
	t.Error("instance-types is not a subcommand of joist")
}

// --live goes through the real SDK clients and the live catalog. A local
// endpoint stands in for AWS: EC2 says m5.large is offered in one zone and
// fails every other call, Pricing fails, so the rest comes from the
// embedded data and the command says so on stderr.
func TestInstanceTypesLiveUsesAWSAndFallsBack(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "" { // Pricing (JSON 1.1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"AccessDeniedException","message":"no"}`)
			return
		}
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "text/xml")
		if r.Form.Get("Action") == "DescribeInstanceTypeOfferings" {
			fmt.Fprint(w, `<DescribeInstanceTypeOfferingsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><instanceTypeOfferingSet><item><instanceType>m5.large</instanceType><locationType>availability-zone</locationType><location>us-east-1a</location></item></instanceTypeOfferingSet></DescribeInstanceTypeOfferingsResponse>`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>no</Message></Error></Errors><RequestID>r</RequestID></Response>`)
	}))
	defer srv.Close()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2":        srv.URL,
		"AWS_ENDPOINT_URL_PRICING":    srv.URL,
		"AWS_ACCESS_KEY_ID":           "AKIDTEST",
		"AWS_SECRET_ACCESS_KEY":       "secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_MAX_ATTEMPTS":            "1",
	} {
		t.Setenv(k, v)
	}
	cmd := newInstanceTypesCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--region", "us-east-1", "--live", "--timeout", "20s", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	rows := decodeListed(t, out.String())
	if len(rows) != 1 {
		t.Fatalf("listed %d types, want only m5.large (the one EC2 offers)", len(rows))
	}
	m5 := rows["m5.large"]
	if m5.Allocatable["cpu"] != "1930m" || m5.Allocatable["memory"] != "6903Mi" || strings.Join(m5.Zones, ",") != "us-east-1a" {
		t.Errorf("m5.large %+v", m5)
	}
	if m5.OnDemandPrice == nil || *m5.OnDemandPrice != 0.096 {
		t.Errorf("on-demand price %v, want the embedded 0.096", m5.OnDemandPrice)
	}
	stderr := errOut.String()
	for _, want := range []string{"types embedded, zones aws, on-demand prices embedded, spot prices embedded", "UnauthorizedOperation", "AccessDeniedException"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

func TestInstanceTypesListsEachFamilyBySize(t *testing.T) {
	out, err := runInstanceTypesCmd(t, "--region", "us-east-1", "-l", "karpenter.k8s.aws/instance-family=m5")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		names = append(names, strings.Fields(line)[0])
	}
	want := "m5.large m5.xlarge m5.2xlarge m5.4xlarge m5.8xlarge m5.12xlarge m5.16xlarge m5.24xlarge m5.metal"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order\n got %s\nwant %s", got, want)
	}
}
