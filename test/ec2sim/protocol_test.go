package ec2sim

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// post sends a raw EC2 Query request and returns the status and body.
func post(t *testing.T, endpoint string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(endpoint, form)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp.StatusCode, string(body)
}

func TestWireFormat(t *testing.T) {
	sim := New(Options{InstanceTypes: testTypes()})
	sim.SeedDefault(testCluster)
	endpoint := sim.Start(t)

	// Success: <ActionResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
	// with a requestId and EC2's lower-camel <item> lists.
	status, body := post(t, endpoint, url.Values{"Action": {"DescribeAvailabilityZones"}, "Version": {"2016-11-15"}})
	var ok struct {
		XMLName   xml.Name
		RequestID string   `xml:"requestId"`
		Zones     []string `xml:"availabilityZoneInfo>item>zoneName"`
	}
	if err := xml.Unmarshal([]byte(body), &ok); err != nil {
		t.Fatalf("success body does not parse: %v\n%s", err, body)
	}
	if status != 200 || ok.XMLName.Local != "DescribeAvailabilityZonesResponse" || ok.XMLName.Space != ec2Namespace || ok.RequestID == "" || len(ok.Zones) != 3 {
		t.Errorf("status %d, body %s", status, body)
	}

	cases := []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"no action", url.Values{}, 400, "MissingAction"},
		{"an action the simulator lacks names it", url.Values{"Action": {"RunInstances"}}, 400, "UnsupportedOperation"},
		{"unknown parameter", url.Values{"Action": {"DescribeSubnets"}, "Colour": {"red"}}, 400, "UnknownParameter"},
		{"dry run", url.Values{"Action": {"DescribeSubnets"}, "DryRun": {"true"}}, 412, "DryRunOperation"},
		{"bad boolean", url.Values{"Action": {"DescribeSubnets"}, "DryRun": {"maybe"}}, 400, "InvalidParameterValue"},
		{"filter without values", url.Values{"Action": {"DescribeSubnets"}, "Filter.1.Name": {"vpc-id"}}, 400, "MissingParameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, endpoint, tc.form)
			var e struct {
				XMLName   xml.Name
				Code      string `xml:"Errors>Error>Code"`
				Message   string `xml:"Errors>Error>Message"`
				RequestID string `xml:"RequestID"`
			}
			if err := xml.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("error body does not parse: %v\n%s", err, body)
			}
			if status != tc.status || e.XMLName.Local != "Response" || e.Code != tc.code || e.Message == "" || e.RequestID == "" {
				t.Errorf("status %d body %s; want %d %s", status, body, tc.status, tc.code)
			}
			if tc.code == "UnsupportedOperation" && !strings.Contains(e.Message, "RunInstances") {
				t.Errorf("message %q does not name the action", e.Message)
			}
		})
	}
}

func TestUnsupportedActionThroughTheSDK(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.ec2.RunInstances(f.ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	wantCode(t, err, "UnsupportedOperation")
	if !strings.Contains(err.Error(), "RunInstances") {
		t.Errorf("error %v does not name the action", err)
	}
}

// Injected throttling and server errors are retried by the SDK's standard
// retryer; more failures than it has attempts surface to the caller.
func TestFaultsAreRetriedBySDK(t *testing.T) {
	cases := []struct {
		name     string
		code     string
		status   int
		n        int
		wantCode string
		calls    int
	}{
		{"throttled twice", "RequestLimitExceeded", 503, 2, "", 3},
		{"internal error once", "InternalError", 500, 1, "", 2},
		{"unavailable once", "Unavailable", 503, 1, "", 2},
		{"throttled past the retry budget", "RequestLimitExceeded", 503, 5, "RequestLimitExceeded", 3},
		{"client errors are not retried", "UnauthorizedOperation", 403, 1, "UnauthorizedOperation", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.sim.FailNext("DescribeSubnets", tc.code, tc.status, tc.n)
			f.sim.FailNext("DescribeImages", "RequestLimitExceeded", 503, 1) // other actions are not touched
			out, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{})
			wantCode(t, err, tc.wantCode)
			if err == nil && len(out.Subnets) != 3 {
				t.Errorf("subnets %+v", out.Subnets)
			}
			if got := f.sim.Calls("DescribeSubnets"); got != tc.calls {
				t.Errorf("%d calls reached the simulator, want %d", got, tc.calls)
			}
			if got := f.sim.Invocations("DescribeSubnets"); got != 1 {
				t.Errorf("%d operations counted, want 1 (retries are one operation)", got)
			}
		})
	}

	// "" injects into whichever action comes next.
	f := newFixture(t, Options{})
	f.sim.FailNext("", "RequestLimitExceeded", 503, 1)
	_, err := f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{})
	mustNil(t, err)
	if got := f.sim.Calls("DescribeSecurityGroups"); got != 2 {
		t.Errorf("%d calls, want 2", got)
	}
}

func TestAdminSurface(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.launch(t, "t3.large", zoneA, Spot, nil)
	srv := f.ec2.Options().BaseEndpoint
	base := aws.ToString(srv)

	get := func(path string) (int, []byte) {
		resp, err := http.Get(base + path)
		mustNil(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		mustNil(t, err)
		return resp.StatusCode, b
	}
	postAdmin := func(path string) int {
		resp, err := http.Post(base+path, "", nil)
		mustNil(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	if status, body := get("/_ec2sim/health"); status != 200 || string(body) != "ok\n" {
		t.Errorf("health %d %q", status, body)
	}
	status, body := get("/_ec2sim/instances")
	var insts []Instance
	if err := json.Unmarshal(body, &insts); err != nil || status != 200 || len(insts) != 1 || insts[0].ID != id || insts[0].UserData == "" {
		t.Errorf("instances %d %s (%v)", status, body, err)
	}
	if got := postAdmin("/_ec2sim/terminate?id=" + id); got != 204 {
		t.Errorf("terminate: %d", got)
	}
	if snap, _ := f.sim.Instance(id); snap.StateReason != "Server.SpotInstanceTermination" {
		t.Errorf("after admin terminate: %+v", snap)
	}
	if got := postAdmin("/_ec2sim/capacity?instanceType=t3.large&capacityType=spot&insufficient=true"); got != 204 {
		t.Errorf("capacity: %d", got)
	}
	out, err := f.ec2.CreateFleet(f.ctx, fleetInput("joist-lt", Spot, f.overrides(testAMI, []string{"t3.large"}, zoneA)))
	if err != nil || len(launched(out)) != 0 || len(out.Errors) != 1 {
		t.Errorf("after admin ICE: %v %+v", err, out)
	}
	if got := postAdmin("/_ec2sim/fail?action=DescribeVpcs&code=InternalError&status=500&n=1"); got != 204 {
		t.Errorf("fail: %d", got)
	}
	if got := postAdmin("/_ec2sim/fail?action=DescribeVpcs"); got != 400 {
		t.Errorf("fail without code: %d", got)
	}
	var calls map[string]int
	if _, body := get("/_ec2sim/calls"); json.Unmarshal(body, &calls) != nil || calls["CreateFleet"] != 2 {
		t.Errorf("calls %s", body)
	}
	if status, _ := get("/_ec2sim/nope"); status != 404 {
		t.Errorf("unknown admin route: %d", status)
	}
}
