package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is a trimmed copy of pkg/catalog/live's fakes_test.go (the
// generator must not import that package; see refresh.go), with Pricing
// answering for several regions. The two fakes speak the real wire
// protocols, so the refresh is tested through the real SDK clients: EC2's
// Query API (form-encoded requests, XML answers) and the Pricing API's
// JSON 1.1 protocol for GetProducts.

// fakeType is one instance type as the fake EC2 describes it.
type fakeType struct {
	Name          string
	VCPU          int
	MemoryMiB     int
	Arch          string // x86_64, arm64, i386 ...
	Manufacturer  string
	ENIs          int
	DefaultENIs   int
	IPv4PerENI    int
	EFA           int
	Hypervisor    string
	BareMetal     bool
	UsageClasses  []string
	GPU           *fakeDevice
	Neuron        *fakeDevice
	NeuronCores   int
	NVMeGB        int
	EBSMaxMbps    int
	Burstable     bool
	NotCurrentGen bool
}

type fakeDevice struct {
	Name, Manufacturer string
	Count, MemoryMiB   int
}

type fakeSpot struct {
	Type, Zone string
	Price      string
	At         time.Time
}

type fakeEC2 struct {
	t        *testing.T
	mu       sync.Mutex
	types    []fakeType
	zones    map[string][]string // type -> zones offered
	spot     []fakeSpot
	pageSize int
	fail     map[string]string // action -> error code
	calls    map[string]int
}

func newFakeEC2(t *testing.T) *fakeEC2 {
	return &fakeEC2{t: t, zones: map[string][]string{}, pageSize: 2, fail: map[string]string{}, calls: map[string]int{}}
}

func (f *fakeEC2) setFail(action, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code == "" {
		delete(f.fail, action)
		return
	}
	f.fail[action] = code
}

func (f *fakeEC2) count(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[action]
}

func (f *fakeEC2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("fake EC2: bad form: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	action := r.Form.Get("Action")
	if r.Form.Get("Version") == "" {
		f.t.Errorf("fake EC2: %s without Version", action)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[action]++
	if code, ok := f.fail[action]; ok {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>injected</Message></Error></Errors><RequestID>req-1</RequestID></Response>`, code)
		return
	}
	start := 0
	if tok := r.Form.Get("NextToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil {
			f.t.Errorf("fake EC2: bad NextToken %q", tok)
		}
		start = n
	}
	var items []string
	var wrapper string
	switch action {
	case "DescribeInstanceTypes":
		wrapper = "instanceTypeSet"
		for _, it := range f.types {
			items = append(items, it.xml())
		}
	case "DescribeInstanceTypeOfferings":
		if lt := r.Form.Get("LocationType"); lt != "availability-zone" {
			f.t.Errorf("fake EC2: LocationType %q, want availability-zone", lt)
		}
		wrapper = "instanceTypeOfferingSet"
		names := make([]string, 0, len(f.zones))
		for n := range f.zones {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, z := range f.zones[n] {
				items = append(items, fmt.Sprintf("<item><instanceType>%s</instanceType><locationType>availability-zone</locationType><location>%s</location></item>", n, z))
			}
		}
	case "DescribeSpotPriceHistory":
		got := []string{r.Form.Get("ProductDescription.1"), r.Form.Get("ProductDescription.2")}
		if got[0] != "Linux/UNIX" || got[1] != "Linux/UNIX (Amazon VPC)" {
			f.t.Errorf("fake EC2: spot product descriptions %v", got)
		}
		if r.Form.Get("StartTime") == "" {
			f.t.Errorf("fake EC2: spot price history without StartTime")
		}
		wrapper = "spotPriceHistorySet"
		for _, s := range f.spot {
			items = append(items, fmt.Sprintf("<item><instanceType>%s</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>%s</spotPrice><timestamp>%s</timestamp><availabilityZone>%s</availabilityZone></item>",
				s.Type, s.Price, s.At.UTC().Format("2006-01-02T15:04:05.000Z"), s.Zone))
		}
	default:
		f.t.Errorf("fake EC2: unexpected action %s", action)
		http.Error(w, "unsupported", http.StatusBadRequest)
		return
	}
	end := min(start+f.pageSize, len(items))
	if start > len(items) {
		start = len(items)
	}
	next := ""
	if end < len(items) {
		next = "<nextToken>" + strconv.Itoa(end) + "</nextToken>"
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><%sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>req-1</requestId><%s>%s</%s>%s</%sResponse>`,
		action, wrapper, strings.Join(items[start:end], ""), wrapper, next, action)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (it fakeType) xml() string {
	var b strings.Builder
	b.WriteString("<item>")
	fmt.Fprintf(&b, "<instanceType>%s</instanceType>", it.Name)
	fmt.Fprintf(&b, "<currentGeneration>%t</currentGeneration>", !it.NotCurrentGen)
	b.WriteString("<supportedUsageClasses>")
	for _, u := range it.UsageClasses {
		fmt.Fprintf(&b, "<item>%s</item>", u)
	}
	b.WriteString("</supportedUsageClasses>")
	fmt.Fprintf(&b, "<bareMetal>%t</bareMetal>", it.BareMetal)
	if it.Hypervisor != "" {
		fmt.Fprintf(&b, "<hypervisor>%s</hypervisor>", it.Hypervisor)
	}
	fmt.Fprintf(&b, "<processorInfo><supportedArchitectures><item>%s</item></supportedArchitectures><manufacturer>%s</manufacturer></processorInfo>", it.Arch, esc(it.Manufacturer))
	fmt.Fprintf(&b, "<vCpuInfo><defaultVCpus>%d</defaultVCpus></vCpuInfo>", it.VCPU)
	fmt.Fprintf(&b, "<memoryInfo><sizeInMiB>%d</sizeInMiB></memoryInfo>", it.MemoryMiB)
	if it.NVMeGB > 0 {
		fmt.Fprintf(&b, "<instanceStorageSupported>true</instanceStorageSupported><instanceStorageInfo><totalSizeInGB>%d</totalSizeInGB><nvmeSupport>required</nvmeSupport></instanceStorageInfo>", it.NVMeGB)
	} else {
		b.WriteString("<instanceStorageSupported>false</instanceStorageSupported>")
	}
	if it.EBSMaxMbps > 0 {
		fmt.Fprintf(&b, "<ebsInfo><ebsOptimizedSupport>default</ebsOptimizedSupport><ebsOptimizedInfo><maximumBandwidthInMbps>%d</maximumBandwidthInMbps></ebsOptimizedInfo></ebsInfo>", it.EBSMaxMbps)
	} else {
		b.WriteString("<ebsInfo><ebsOptimizedSupport>supported</ebsOptimizedSupport></ebsInfo>")
	}
	fmt.Fprintf(&b, "<networkInfo><maximumNetworkInterfaces>%d</maximumNetworkInterfaces><ipv4AddressesPerInterface>%d</ipv4AddressesPerInterface><defaultNetworkCardIndex>0</defaultNetworkCardIndex><networkCards><item><networkCardIndex>0</networkCardIndex><maximumNetworkInterfaces>%d</maximumNetworkInterfaces></item></networkCards>",
		it.ENIs, it.IPv4PerENI, it.DefaultENIs)
	if it.EFA > 0 {
		fmt.Fprintf(&b, "<efaSupported>true</efaSupported><efaInfo><maximumEfaInterfaces>%d</maximumEfaInterfaces></efaInfo>", it.EFA)
	}
	b.WriteString("</networkInfo>")
	if g := it.GPU; g != nil {
		fmt.Fprintf(&b, "<gpuInfo><gpus><item><name>%s</name><manufacturer>%s</manufacturer><count>%d</count><memoryInfo><sizeInMiB>%d</sizeInMiB></memoryInfo></item></gpus></gpuInfo>", esc(g.Name), esc(g.Manufacturer), g.Count, g.MemoryMiB)
	}
	if n := it.Neuron; n != nil {
		fmt.Fprintf(&b, "<neuronInfo><neuronDevices><item><name>%s</name><count>%d</count><coreInfo><count>%d</count></coreInfo></item></neuronDevices></neuronInfo>", esc(n.Name), n.Count, it.NeuronCores)
	}
	fmt.Fprintf(&b, "<burstablePerformanceSupported>%t</burstablePerformanceSupported>", it.Burstable)
	b.WriteString("</item>")
	return b.String()
}

// fakePricing answers GetProducts with price list items for the products
// it holds, filtered by the request's tenancy and productFamily filters.
type fakePricing struct {
	t        *testing.T
	mu       sync.Mutex
	shared   map[string]map[string]float64 // region -> type -> price: Compute Instance, Shared tenancy
	metal    map[string]map[string]float64 // region -> type -> price: Compute Instance (bare metal), Dedicated
	pageSize int
	failCode string
	calls    int
}

func newFakePricing(t *testing.T) *fakePricing {
	return &fakePricing{t: t, shared: map[string]map[string]float64{}, metal: map[string]map[string]float64{}, pageSize: 2}
}

func (f *fakePricing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	failCode := f.failCode
	f.mu.Unlock()
	if got := r.Header.Get("X-Amz-Target"); got != "AWSPriceListService.GetProducts" {
		f.t.Errorf("fake Pricing: X-Amz-Target %q", got)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		f.t.Errorf("fake Pricing: Content-Type %q", ct)
	}
	if failCode != "" {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amzn-Errortype", failCode)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":%q,"message":"injected"}`, failCode)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ServiceCode   string
		FormatVersion string
		NextToken     string
		Filters       []struct{ Type, Field, Value string }
	}
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("fake Pricing: body %s: %v", body, err)
	}
	filters := map[string]string{}
	for _, flt := range req.Filters {
		if flt.Type != "TERM_MATCH" {
			f.t.Errorf("fake Pricing: filter type %q", flt.Type)
		}
		filters[flt.Field] = flt.Value
	}
	for field, want := range map[string]string{"operatingSystem": "Linux", "preInstalledSw": "NA", "capacitystatus": "Used", "marketoption": "OnDemand"} {
		if filters[field] != want {
			f.t.Errorf("fake Pricing: filter %s = %q, want %q", field, filters[field], want)
		}
	}
	if req.ServiceCode != "AmazonEC2" {
		f.t.Errorf("fake Pricing: ServiceCode %q", req.ServiceCode)
	}
	var prices map[string]float64
	switch {
	case filters["productFamily"] == "Compute Instance" && filters["tenancy"] == "Shared":
		prices = f.shared[filters["regionCode"]]
	case filters["productFamily"] == "Compute Instance (bare metal)" && filters["tenancy"] == "Dedicated":
		prices = f.metal[filters["regionCode"]]
	default:
		f.t.Errorf("fake Pricing: unexpected product filter %v", filters)
	}
	names := make([]string, 0, len(prices))
	for n := range prices {
		names = append(names, n)
	}
	sort.Strings(names)
	start := 0
	if req.NextToken != "" {
		start, _ = strconv.Atoi(req.NextToken)
	}
	end := min(start+f.pageSize, len(names))
	var list []string
	for i, n := range names[start:end] {
		list = append(list, priceListItem(n, filters["regionCode"], filters["tenancy"], prices[n], i))
	}
	resp := map[string]any{"FormatVersion": "aws_v1", "PriceList": list}
	if end < len(names) {
		resp["NextToken"] = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(resp)
}

// priceListItem is a price list item in the Pricing API's aws_v1 format.
func priceListItem(name, region, tenancy string, price float64, i int) string {
	sku := fmt.Sprintf("SKU%04d%s", i, strings.ReplaceAll(name, ".", ""))
	item := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"attributes": map[string]any{
				"instanceType": name, "regionCode": region, "operatingSystem": "Linux",
				"tenancy": tenancy, "preInstalledSw": "NA", "capacitystatus": "Used",
			},
			"sku": sku,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + ".JRTCKXETXF": map[string]any{
					"priceDimensions": map[string]any{
						sku + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
							"unit": "Hrs", "endRange": "Inf", "beginRange": "0",
							"description":  fmt.Sprintf("$%v per On Demand Linux %s Instance Hour", price, name),
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(price, 'f', 10, 64)},
						},
					},
					"sku": sku, "offerTermCode": "JRTCKXETXF", "effectiveDate": "2026-07-01T00:00:00Z",
				},
			},
		},
		"version": "20260701000000", "publicationDate": "2026-07-01T00:00:00Z",
	}
	b, _ := json.Marshal(item)
	return string(b)
}
