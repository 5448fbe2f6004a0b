// Package awsfake holds two small AWS fakes that speak the real wire
// protocols, so code that calls AWS is tested through the real SDK
// clients: EC2's Query API (form-encoded requests, XML answers) for
// DescribeInstanceTypes, DescribeInstanceTypeOfferings and
// DescribeSpotPriceHistory, and the Pricing API's JSON 1.1 protocol for
// GetProducts. It is for tests of the live catalog and of the catalog
// generator, which cannot share a _test.go file.
package awsfake

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
)

// Type is one instance type as the fake EC2 describes it.
type Type struct {
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
	GPU           *Device
	Neuron        *Device
	NeuronCores   int
	NVMeGB        int
	EBSMaxMbps    int
	Burstable     bool
	NotCurrentGen bool
}

// Device is a GPU or a Neuron device of a Type.
type Device struct {
	Name, Manufacturer string
	Count, MemoryMiB   int
}

// Spot is one spot price record.
type Spot struct {
	Type, Zone string
	Price      string
	At         time.Time
}

// EC2 is a fake EC2 endpoint. Set its fields before the first request.
type EC2 struct {
	t        testing.TB
	mu       sync.Mutex
	Types    []Type
	Zones    map[string][]string // type -> zones offered
	Spot     []Spot
	PageSize int
	fail     map[string]string // action -> error code
	calls    map[string]int
}

// NewEC2 returns a fake EC2 with no types that answers two items a page.
func NewEC2(t testing.TB) *EC2 {
	return &EC2{t: t, Zones: map[string][]string{}, PageSize: 2, fail: map[string]string{}, calls: map[string]int{}}
}

// SetFail makes action fail with the error code; "" makes it answer again.
func (f *EC2) SetFail(action, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code == "" {
		delete(f.fail, action)
		return
	}
	f.fail[action] = code
}

// Count is the number of requests for action so far.
func (f *EC2) Count(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[action]
}

// ServeHTTP answers one EC2 Query API request.
func (f *EC2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		for _, it := range f.Types {
			items = append(items, it.xml())
		}
	case "DescribeInstanceTypeOfferings":
		if lt := r.Form.Get("LocationType"); lt != "availability-zone" {
			f.t.Errorf("fake EC2: LocationType %q, want availability-zone", lt)
		}
		wrapper = "instanceTypeOfferingSet"
		names := make([]string, 0, len(f.Zones))
		for n := range f.Zones {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, z := range f.Zones[n] {
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
		for _, s := range f.Spot {
			items = append(items, fmt.Sprintf("<item><instanceType>%s</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>%s</spotPrice><timestamp>%s</timestamp><availabilityZone>%s</availabilityZone></item>",
				s.Type, s.Price, s.At.UTC().Format("2006-01-02T15:04:05.000Z"), s.Zone))
		}
	default:
		f.t.Errorf("fake EC2: unexpected action %s", action)
		http.Error(w, "unsupported", http.StatusBadRequest)
		return
	}
	end := min(start+f.PageSize, len(items))
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

func (it Type) xml() string {
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

// Pricing answers GetProducts with price list items for the products it
// holds, filtered by the request's regionCode, tenancy and productFamily
// filters. Set its fields before the first request, except Gate and
// FailCode, which may change between requests under SetGate and SetFail.
type Pricing struct {
	t  testing.TB
	mu sync.Mutex
	// Region, when set, is the only regionCode requests may ask for.
	Region   string
	Shared   map[string]map[string]float64 // region -> type -> price: Compute Instance, Shared tenancy
	Metal    map[string]map[string]float64 // region -> type -> price: Compute Instance (bare metal), Dedicated
	PageSize int
	gate     chan struct{} // when set, answers wait for it to close
	failCode string
	calls    int
}

// NewPricing returns a fake Pricing API with no prices that answers two
// items a page.
func NewPricing(t testing.TB) *Pricing {
	return &Pricing{t: t, Shared: map[string]map[string]float64{}, Metal: map[string]map[string]float64{}, PageSize: 2}
}

// SetGate makes answers wait until gate is closed; nil answers at once.
func (f *Pricing) SetGate(gate chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = gate
}

// SetFail makes every request fail with the error code; "" makes it
// answer again.
func (f *Pricing) SetFail(code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCode = code
}

// Calls is the number of requests so far.
func (f *Pricing) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// ServeHTTP answers one GetProducts request.
func (f *Pricing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	gate, failCode := f.gate, f.failCode
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
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
	if f.Region != "" && filters["regionCode"] != f.Region {
		f.t.Errorf("fake Pricing: filter regionCode = %q, want %q", filters["regionCode"], f.Region)
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
		prices = f.Shared[filters["regionCode"]]
	case filters["productFamily"] == "Compute Instance (bare metal)" && filters["tenancy"] == "Dedicated":
		prices = f.Metal[filters["regionCode"]]
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
	end := min(start+f.PageSize, len(names))
	var list []string
	for i, n := range names[start:end] {
		list = append(list, PriceListItem(n, filters["regionCode"], filters["tenancy"], prices[n], i))
	}
	resp := map[string]any{"FormatVersion": "aws_v1", "PriceList": list}
	if end < len(names) {
		resp["NextToken"] = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(resp)
}

// PriceListItem is a price list item in the Pricing API's aws_v1 format;
// i makes its SKU unique within a page.
func PriceListItem(name, region, tenancy string, price float64, i int) string {
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

// SDKConfig is an SDK configuration for a fake endpoint: static
// credentials and no retries, so injected failures fail at once.
func SDKConfig(region string) aws.Config {
	return aws.Config{
		Region:           region,
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
	}
}

// EC2Client serves f until the test ends and returns a client of it that
// signs for region.
func EC2Client(t testing.TB, f *EC2, region string) *ec2.Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return ec2.NewFromConfig(SDKConfig(region), func(o *ec2.Options) { o.BaseEndpoint = aws.String(srv.URL) })
}

// PricingClient serves f until the test ends and returns a client of it.
func PricingClient(t testing.TB, f *Pricing) *pricing.Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return pricing.NewFromConfig(SDKConfig("us-east-1"), func(o *pricing.Options) { o.BaseEndpoint = aws.String(srv.URL) })
}
