package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog/internal/awsfake"
	"github.com/joist-dev/joist/pkg/catalog/internal/record"
)

func TestMerge(t *testing.T) {
	nitro := "nitro"
	base := func() *record.File {
		return &record.File{
			Generated:         "2026-11-29",
			OnDemandPriceAsOf: map[string]string{"us-east-1": "2026-07-20", "other regions": "2025-04-24"},
			SpotPriceAsOf:     "2025-04-24",
			Types: []record.Type{
				{Name: "c5.large", Family: "c5", Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 4096, PublishedMaxPods: 29,
					OnDemandPrice: map[string]float64{"us-east-1": 0.085, "eu-west-1": 0.096}, SpotPrice: map[string]float64{"us-east-1": 0.03, "eu-west-1": 0.04}},
				{Name: "m5.large", Family: "m5", Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192,
					OnDemandPrice: map[string]float64{"us-east-1": 0.096}},
			},
		}
	}
	m8 := record.Type{Name: "m8g.large", Family: "m8g", Size: "large", Category: "m", Generation: 8, Arch: "arm64", VCPU: 2, MemoryMiB: 8192, Hypervisor: &nitro, SpotSupported: true, CurrentGeneration: true}
	tests := []struct {
		name      string
		live      []liveRegion
		wantTypes []record.Type // nil: same names as base, checked through wantOD/wantSpot
		wantOD    map[string]map[string]float64
		wantSpot  map[string]map[string]float64
		wantStats map[string]mergeStats
		wantAsOf  map[string]string
	}{
		{
			name: "no regions changes nothing",
			wantOD: map[string]map[string]float64{
				"c5.large": {"us-east-1": 0.085, "eu-west-1": 0.096},
				"m5.large": {"us-east-1": 0.096},
			},
			wantSpot: map[string]map[string]float64{"c5.large": {"us-east-1": 0.03, "eu-west-1": 0.04}, "m5.large": nil},
			wantAsOf: map[string]string{"us-east-1": "2026-07-20", "other regions": "2025-04-24"},
		},
		{
			name: "a region's prices are replaced, other regions kept, spot is the lowest zone's",
			live: []liveRegion{{Region: "us-east-1",
				OnDemand: map[string]float64{"c5.large": 0.09, "m5.large": 0.1},
				Spot:     map[string]map[string]float64{"c5.large": {"us-east-1a": 0.035, "us-east-1b": 0.031}, "m5.large": {"us-east-1c": 0.05}},
			}},
			wantOD: map[string]map[string]float64{
				"c5.large": {"us-east-1": 0.09, "eu-west-1": 0.096},
				"m5.large": {"us-east-1": 0.1},
			},
			wantSpot: map[string]map[string]float64{
				"c5.large": {"us-east-1": 0.031, "eu-west-1": 0.04},
				"m5.large": {"us-east-1": 0.05},
			},
			wantStats: map[string]mergeStats{"us-east-1": {OnDemandSet: 2, SpotSet: 2}},
			wantAsOf:  map[string]string{"us-east-1": "2026-12-01", "other regions": "2025-04-24"},
		},
		{
			name: "a price AWS no longer quotes is dropped, the type is kept",
			live: []liveRegion{{Region: "eu-west-1",
				OnDemand: map[string]float64{"c5.large": 0.1},
				Spot:     map[string]map[string]float64{"m5.large": {"eu-west-1a": 0.02}},
			}},
			wantOD: map[string]map[string]float64{
				"c5.large": {"us-east-1": 0.085, "eu-west-1": 0.1},
				"m5.large": {"us-east-1": 0.096},
			},
			wantSpot: map[string]map[string]float64{
				"c5.large": {"us-east-1": 0.03},
				"m5.large": {"eu-west-1": 0.02},
			},
			wantStats: map[string]mergeStats{"eu-west-1": {OnDemandSet: 1, SpotSet: 1, SpotDropped: 1}},
			wantAsOf:  map[string]string{"us-east-1": "2026-07-20", "eu-west-1": "2026-12-01", "other regions": "2025-04-24"},
		},
		{
			name: "a type the file lacks is added once with its specs and each region's prices; known types keep the file's specs",
			live: []liveRegion{
				{Region: "us-east-1",
					Types:    []record.Type{m8, {Name: "c5.large", Family: "c5", Size: "large", Arch: "amd64", VCPU: 4, MemoryMiB: 1}},
					OnDemand: map[string]float64{"m8g.large": 0.08, "c5.large": 0.085, "m5.large": 0.096},
					Spot:     map[string]map[string]float64{"m8g.large": {"us-east-1a": 0.03}, "c5.large": {"us-east-1a": 0.03}},
				},
				{Region: "eu-west-1",
					Types:    []record.Type{m8},
					OnDemand: map[string]float64{"m8g.large": 0.09, "c5.large": 0.096},
					Spot:     map[string]map[string]float64{"c5.large": {"eu-west-1b": 0.04}},
				},
			},
			wantTypes: []record.Type{
				base().Types[0],
				base().Types[1],
				func() record.Type {
					t := m8
					t.OnDemandPrice = map[string]float64{"us-east-1": 0.08, "eu-west-1": 0.09}
					t.SpotPrice = map[string]float64{"us-east-1": 0.03}
					return t
				}(),
			},
			wantStats: map[string]mergeStats{
				"us-east-1": {Added: []string{"m8g.large"}, OnDemandSet: 3, SpotSet: 2},
				"eu-west-1": {OnDemandSet: 2, SpotSet: 1},
			},
			wantAsOf: map[string]string{"us-east-1": "2026-12-01", "eu-west-1": "2026-12-01", "other regions": "2025-04-24"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			got, stats := merge(in, tc.live, "2026-12-01")
			if !reflect.DeepEqual(in, base()) {
				t.Fatal("merge changed its input")
			}
			if tc.wantTypes != nil {
				if !reflect.DeepEqual(got.Types, tc.wantTypes) {
					t.Errorf("types\n got %+v\nwant %+v", got.Types, tc.wantTypes)
				}
			} else {
				if len(got.Types) != len(in.Types) {
					t.Fatalf("%d types, want %d", len(got.Types), len(in.Types))
				}
				for _, ty := range got.Types {
					if want := tc.wantOD[ty.Name]; !reflect.DeepEqual(ty.OnDemandPrice, want) {
						t.Errorf("%s on-demand %v, want %v", ty.Name, ty.OnDemandPrice, want)
					}
					if want := tc.wantSpot[ty.Name]; !reflect.DeepEqual(ty.SpotPrice, want) {
						t.Errorf("%s spot %v, want %v", ty.Name, ty.SpotPrice, want)
					}
				}
			}
			if len(tc.live) == 0 {
				tc.wantStats = map[string]mergeStats{}
			}
			if !reflect.DeepEqual(stats, tc.wantStats) {
				t.Errorf("stats %+v, want %+v", stats, tc.wantStats)
			}
			if !reflect.DeepEqual(got.OnDemandPriceAsOf, tc.wantAsOf) {
				t.Errorf("OnDemandPriceAsOf %v, want %v", got.OnDemandPriceAsOf, tc.wantAsOf)
			}
			for _, lr := range tc.live {
				if got.Refreshed[lr.Region] != "2026-12-01" {
					t.Errorf("Refreshed %v lacks %s", got.Refreshed, lr.Region)
				}
			}
			if len(tc.live) == 0 && got.Refreshed != nil {
				t.Errorf("Refreshed %v without a refresh", got.Refreshed)
			}
		})
	}
}

func TestParseRegions(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"us-east-1", []string{"us-east-1"}, ""},
		{" us-east-1, eu-west-1,,us-east-1 ", []string{"us-east-1", "eu-west-1"}, ""},
		{"ap-southeast-2,cn-north-1", []string{"ap-southeast-2", "cn-north-1"}, ""},
		{"us-east-1a", nil, "not a region name"},
		{"us-gov-west-1", nil, "GovCloud"},
	}
	for _, tc := range tests {
		got, err := parseRegions(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// regionRouter sends each EC2 request to the fake of the region it was
// signed for, as the real regional endpoints would.
type regionRouter map[string]*awsfake.EC2

var signedRegion = regexp.MustCompile(`Credential=[^/]+/[0-9]+/([^/]+)/ec2/`)

func (rr regionRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := signedRegion.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || rr[m[1]] == nil {
		http.Error(w, "no fake for this region", http.StatusBadRequest)
		return
	}
	rr[m[1]].ServeHTTP(w, r)
}

// awsEnv points the default SDK configuration at the fakes, with static
// credentials from the environment and no shared files or IMDS.
func awsEnv(t *testing.T, ec2URL, pricingURL string, withCredentials bool) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":                        filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE":            filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":              "true",
		"AWS_PROFILE":                            "",
		"AWS_DEFAULT_PROFILE":                    "",
		"AWS_SESSION_TOKEN":                      "",
		"AWS_WEB_IDENTITY_TOKEN_FILE":            "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI":     "",
		"AWS_ENDPOINT_URL":                       "",
		"AWS_ENDPOINT_URL_EC2":                   ec2URL,
		"AWS_ENDPOINT_URL_PRICING":               pricingURL,
		"AWS_MAX_ATTEMPTS":                       "1",
		"AWS_ACCESS_KEY_ID":                      "",
		"AWS_SECRET_ACCESS_KEY":                  "",
	} {
		t.Setenv(k, v)
	}
	if withCredentials {
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	}
}

// refreshWorld is a file with two types and two regions of fake AWS:
// us-east-1 also lists m8g.large (unknown to the file), an i386 type (not
// added) and a type it describes but offers in no zone (not added).
func refreshWorld(t *testing.T) (in string, east, west *awsfake.EC2, p *awsfake.Pricing) {
	c5 := strings.NewReplacer(`"m5.large"`, `"c5.large"`, `"m5"`, `"c5"`, `"memoryMiB": 8192`, `"memoryMiB": 4096`,
		`"onDemandPrice": {"us-east-1": 0.096}`, `"onDemandPrice": {"us-east-1": 0.085, "eu-west-1": 0.096, "ap-south-1": 0.05}, "spotPrice": {"us-east-1": 0.04, "eu-west-1": 0.05}`).Replace(goodType)
	in = filepath.Join(t.TempDir(), "data.json")
	if err := os.WriteFile(in, file(goodType, c5), 0o644); err != nil {
		t.Fatal(err)
	}
	east = awsfake.NewEC2(t)
	east.Types = []awsfake.Type{
		{Name: "m5.large", VCPU: 2, MemoryMiB: 8192, Arch: "x86_64", Manufacturer: "Intel", ENIs: 3, DefaultENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", UsageClasses: []string{"on-demand", "spot"}},
		{Name: "c5.large", VCPU: 2, MemoryMiB: 4096, Arch: "x86_64", Manufacturer: "Intel", ENIs: 3, DefaultENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", UsageClasses: []string{"on-demand", "spot"}},
		{Name: "m8g.large", VCPU: 2, MemoryMiB: 8192, Arch: "arm64", Manufacturer: "AWS", ENIs: 3, DefaultENIs: 3, IPv4PerENI: 10, EFA: 1, Hypervisor: "nitro", UsageClasses: []string{"on-demand", "spot"}, NVMeGB: 118, EBSMaxMbps: 10000, Burstable: false},
		{Name: "trn9.metal", VCPU: 128, MemoryMiB: 524288, Arch: "x86_64", Manufacturer: "AMD", ENIs: 8, DefaultENIs: 4, IPv4PerENI: 50, BareMetal: true, UsageClasses: []string{"on-demand"}, Neuron: &awsfake.Device{Name: "Trainium9", Count: 4}, NeuronCores: 8, GPU: &awsfake.Device{Name: "L4", Manufacturer: "NVIDIA", Count: 1, MemoryMiB: 24576}},
		{Name: "m1.small", VCPU: 1, MemoryMiB: 1740, Arch: "i386", Manufacturer: "Intel", ENIs: 2, DefaultENIs: 2, IPv4PerENI: 4, Hypervisor: "xen"},
		{Name: "x9.huge", VCPU: 4, MemoryMiB: 4096, Arch: "x86_64", ENIs: 2, DefaultENIs: 2, IPv4PerENI: 4, Hypervisor: "nitro"},
	}
	east.Zones = map[string][]string{
		"m5.large": {"us-east-1a", "us-east-1b"}, "c5.large": {"us-east-1a"}, "m8g.large": {"us-east-1a"},
		"trn9.metal": {"us-east-1b"}, "m1.small": {"us-east-1a"},
	}
	east.Spot = []awsfake.Spot{
		{Type: "m5.large", Zone: "us-east-1a", Price: "0.0300", At: now.Add(-time.Hour)},
		{Type: "m5.large", Zone: "us-east-1a", Price: "0.0100", At: now.Add(-2 * time.Hour)}, // older: ignored
		{Type: "m5.large", Zone: "us-east-1b", Price: "0.0350", At: now.Add(-time.Hour)},
		{Type: "m8g.large", Zone: "us-east-1a", Price: "0.0200", At: now.Add(-time.Hour)},
	}
	west = awsfake.NewEC2(t)
	west.Types = []awsfake.Type{east.Types[0], east.Types[1]}
	west.Zones = map[string][]string{"m5.large": {"eu-west-1a"}, "c5.large": {"eu-west-1a"}}
	west.Spot = []awsfake.Spot{{Type: "c5.large", Zone: "eu-west-1a", Price: "0.0450", At: now.Add(-time.Hour)}}
	p = awsfake.NewPricing(t)
	p.Shared["us-east-1"] = map[string]float64{"m5.large": 0.1, "c5.large": 0.09, "m8g.large": 0.08}
	p.Metal["us-east-1"] = map[string]float64{"trn9.metal": 20}
	p.Shared["eu-west-1"] = map[string]float64{"m5.large": 0.107, "c5.large": 0.097}
	return in, east, west, p
}

func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func readOutput(t *testing.T, path string) *record.File {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var f record.File
	if err := json.NewDecoder(zr).Decode(&f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// The whole -refresh-regions path: the default SDK configuration from the
// environment, the real EC2 and Pricing clients, the fakes' wire protocols,
// the merge and the written file.
func TestRefreshFromAWSEndToEnd(t *testing.T) {
	in, east, west, p := refreshWorld(t)
	awsEnv(t, serve(t, regionRouter{"us-east-1": east, "eu-west-1": west}), serve(t, p), true)
	out := filepath.Join(t.TempDir(), "out.json.gz")
	regions, err := parseRegions("us-east-1,eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), in, out, regions, awsClients, clocktesting.NewFakePassiveClock(now)); err != nil {
		t.Fatal(err)
	}
	f := readOutput(t, out)

	var names []string
	byName := map[string]record.Type{}
	for _, ty := range f.Types {
		names = append(names, ty.Name)
		byName[ty.Name] = ty
	}
	if want := []string{"c5.large", "m5.large", "m8g.large", "trn9.metal"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("types %v, want %v (i386 and unoffered types are not added)", names, want)
	}
	prices := []struct {
		name          string
		od, spot      map[string]float64
		publishedPods int64
		fromFileSpecs bool
	}{
		{"m5.large", map[string]float64{"us-east-1": 0.1, "eu-west-1": 0.107}, map[string]float64{"us-east-1": 0.03}, 29, true},
		// ap-south-1 was not refreshed and keeps its price; eu-west-1 spot is AWS's
		{"c5.large", map[string]float64{"us-east-1": 0.09, "eu-west-1": 0.097, "ap-south-1": 0.05}, map[string]float64{"eu-west-1": 0.045}, 29, true},
		{"m8g.large", map[string]float64{"us-east-1": 0.08}, map[string]float64{"us-east-1": 0.02}, 0, false},
		{"trn9.metal", map[string]float64{"us-east-1": 20}, nil, 0, false},
	}
	for _, w := range prices {
		ty := byName[w.name]
		if !reflect.DeepEqual(ty.OnDemandPrice, w.od) {
			t.Errorf("%s on-demand %v, want %v", w.name, ty.OnDemandPrice, w.od)
		}
		if !reflect.DeepEqual(ty.SpotPrice, w.spot) {
			t.Errorf("%s spot %v, want %v", w.name, ty.SpotPrice, w.spot)
		}
		if ty.PublishedMaxPods != w.publishedPods {
			t.Errorf("%s published max pods %d, want %d (file specs kept, none invented)", w.name, ty.PublishedMaxPods, w.publishedPods)
		}
	}
	nitro := "nitro"
	wantM8 := record.Type{Name: "m8g.large", Family: "m8g", Category: "m", Generation: 8, Size: "large", Arch: "arm64", VCPU: 2, MemoryMiB: 8192,
		CPUManufacturer: "aws", LocalNVMeGB: 118, EBSBandwidthMbps: 10000, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10, EFACount: 1,
		Hypervisor: &nitro, SpotSupported: true, CurrentGeneration: true,
		OnDemandPrice: map[string]float64{"us-east-1": 0.08}, SpotPrice: map[string]float64{"us-east-1": 0.02}}
	if got := byName["m8g.large"]; !reflect.DeepEqual(got, wantM8) {
		t.Errorf("m8g.large\n got %+v\nwant %+v", got, wantM8)
	}
	trn := byName["trn9.metal"]
	if !trn.BareMetal || trn.Hypervisor == nil || *trn.Hypervisor != "" || trn.SpotSupported {
		t.Errorf("trn9.metal: bare metal %t, hypervisor %v, spot supported %t", trn.BareMetal, trn.Hypervisor, trn.SpotSupported)
	}
	if trn.AcceleratorName != "trainium9" || trn.AcceleratorManufacturer != "aws" || trn.AcceleratorCount != 4 || trn.NeuronCoreCount != 32 {
		t.Errorf("trn9.metal Neuron: %q %q %d devices %d cores", trn.AcceleratorName, trn.AcceleratorManufacturer, trn.AcceleratorCount, trn.NeuronCoreCount)
	}
	if trn.GPUName != "l4" || trn.GPUManufacturer != "nvidia" || trn.GPUCount != 1 || trn.GPUMemoryMiB != 24576 {
		t.Errorf("trn9.metal GPU: %q %q %d %d", trn.GPUName, trn.GPUManufacturer, trn.GPUCount, trn.GPUMemoryMiB)
	}
	if trn.MaxENIs != 8 || trn.MaxENIsDefaultCard != 4 || trn.IPv4PerENI != 50 || trn.VCPU != 128 || trn.CPUManufacturer != "amd" {
		t.Errorf("trn9.metal specs: %+v", trn)
	}
	if want := map[string]string{"us-east-1": "2026-12-01", "eu-west-1": "2026-12-01"}; !reflect.DeepEqual(f.Refreshed, want) {
		t.Errorf("Refreshed %v, want %v", f.Refreshed, want)
	}
	if f.OnDemandPriceAsOf["us-east-1"] != "2026-12-01" || f.OnDemandPriceAsOf["eu-west-1"] != "2026-12-01" {
		t.Errorf("OnDemandPriceAsOf %v", f.OnDemandPriceAsOf)
	}
	for _, action := range []string{"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory"} {
		if east.Count(action) == 0 || west.Count(action) == 0 {
			t.Errorf("%s: us-east-1 %d calls, eu-west-1 %d", action, east.Count(action), west.Count(action))
		}
	}

	// The same run without -refresh-regions is the offline file.
	offline := filepath.Join(t.TempDir(), "offline.json.gz")
	if err := run(context.Background(), in, offline, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if g := readOutput(t, offline); g.Refreshed != nil || len(g.Types) != 2 {
		t.Errorf("offline run: Refreshed %v, %d types", g.Refreshed, len(g.Types))
	}
}

func TestRefreshFailsClearly(t *testing.T) {
	tests := []struct {
		name        string
		credentials bool
		breakIt     func(east *awsfake.EC2, p *awsfake.Pricing)
		wantErr     string
	}{
		{"no credentials", false, nil, "no AWS credentials for us-east-1"},
		{"an EC2 error", true, func(e *awsfake.EC2, _ *awsfake.Pricing) {
			e.SetFail("DescribeSpotPriceHistory", "UnauthorizedOperation")
		}, "DescribeSpotPriceHistory"},
		{"a Pricing error", true, func(_ *awsfake.EC2, p *awsfake.Pricing) { p.SetFail("AccessDeniedException") }, "GetProducts"},
		{"no prices", true, func(_ *awsfake.EC2, p *awsfake.Pricing) { delete(p.Shared, "us-east-1"); delete(p.Metal, "us-east-1") }, "no on-demand prices"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, east, west, p := refreshWorld(t)
			if tc.breakIt != nil {
				tc.breakIt(east, p)
			}
			awsEnv(t, serve(t, regionRouter{"us-east-1": east, "eu-west-1": west}), serve(t, p), tc.credentials)
			out := filepath.Join(t.TempDir(), "out.json.gz")
			err := run(context.Background(), in, out, []string{"us-east-1"}, awsClients, clocktesting.NewFakePassiveClock(now))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			t.Log(err)
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a failed refresh wrote %s", out)
			}
		})
	}
}
