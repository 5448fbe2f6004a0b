package catalog

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestUnavailableMarksExpireAfterTheTTL(t *testing.T) {
	u := NewUnavailable(0)
	if u.TTL() != 3*time.Minute {
		t.Fatalf("default TTL %v", u.TTL())
	}
	u.Mark(t0, "m5.large", "us-east-1a", "spot")
	tests := []struct {
		name             string
		at               time.Time
		typ, zone, ctype string
		want             bool
	}{
		{"marked at once", t0, "m5.large", "us-east-1a", "spot", true},
		{"still marked just before expiry", t0.Add(3*time.Minute - time.Nanosecond), "m5.large", "us-east-1a", "spot", true},
		{"free at expiry", t0.Add(3 * time.Minute), "m5.large", "us-east-1a", "spot", false},
		{"other capacity type is free", t0, "m5.large", "us-east-1a", "on-demand", false},
		{"other zone is free", t0, "m5.large", "us-east-1b", "spot", false},
		{"other type is free", t0, "m5.xlarge", "us-east-1a", "spot", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := u.IsUnavailable(tc.at, tc.typ, tc.zone, tc.ctype); got != tc.want {
				t.Errorf("IsUnavailable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnavailableKeepsTheLaterExpiry(t *testing.T) {
	u := NewUnavailable(time.Minute)
	u.MarkUntil(t0.Add(10*time.Minute), "m5.large", "us-east-1a", "spot")
	u.Mark(t0, "m5.large", "us-east-1a", "spot") // would end sooner
	if !u.IsUnavailable(t0.Add(5*time.Minute), "m5.large", "us-east-1a", "spot") {
		t.Error("a shorter mark cut a longer one")
	}
	u.Mark(t0.Add(15*time.Minute), "m5.large", "us-east-1a", "spot")
	if !u.IsUnavailable(t0.Add(15*time.Minute+30*time.Second), "m5.large", "us-east-1a", "spot") {
		t.Error("a later mark did not extend")
	}
}

func TestUnavailablePruneDropsOnlyExpiredMarks(t *testing.T) {
	u := NewUnavailable(time.Minute)
	u.Mark(t0, "a.large", "z1a", "spot")
	u.Mark(t0.Add(30*time.Second), "b.large", "z1a", "spot")
	if n := u.Prune(t0.Add(time.Minute)); n != 1 {
		t.Errorf("pruned %d, want 1", n)
	}
	if u.Len() != 1 || !u.IsUnavailable(t0.Add(time.Minute), "b.large", "z1a", "spot") {
		t.Errorf("the live mark went: %v", u.Keys(t0.Add(time.Minute)))
	}
}

func TestUnavailableSurvivesEncodeAndDecode(t *testing.T) {
	u := NewUnavailable(2 * time.Minute)
	u.Mark(t0, "m5.large", "us-east-1a", "spot")
	u.Mark(t0.Add(500*time.Millisecond), "c6g.xlarge", "us-east-1b", "on-demand")
	u.MarkUntil(t0.Add(time.Hour), "p5.48xlarge", "us-east-1c", "reserved")
	u.Mark(t0, "x.large", "us-east-1a", "capacity-block")

	s := u.Encode()
	want := "v1 120 c6g.xlarge/us-east-1b/od/1800000121 m5.large/us-east-1a/sp/1800000120 p5.48xlarge/us-east-1c/rs/1800003600 x.large/us-east-1a/capacity-block/1800000120"
	if s != want {
		t.Errorf("Encode =\n%s\nwant\n%s", s, want)
	}
	got, err := DecodeUnavailable(s)
	if err != nil {
		t.Fatal(err)
	}
	if got.TTL() != 2*time.Minute {
		t.Errorf("TTL %v", got.TTL())
	}
	if got.Encode() != s {
		t.Errorf("round trip changed the set: %s", got.Encode())
	}
	// Sub-second marks round up, so a mark never ends early.
	if !got.IsUnavailable(t0.Add(2*time.Minute+600*time.Millisecond), "c6g.xlarge", "us-east-1b", "on-demand") {
		t.Error("the half-second mark ended early after the round trip")
	}
	if !got.IsUnavailable(t0.Add(59*time.Minute), "p5.48xlarge", "us-east-1c", "reserved") {
		t.Error("the reserved mark was lost")
	}
}

func TestDecodeUnavailable(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantLen int
		wantErr string
	}{
		{"empty is an empty set", "", 0, ""},
		{"header only", "v1 180", 0, ""},
		{"one entry", "v1 180 m5.large/us-east-1a/sp/1800000000", 1, ""},
		{"unknown version", "v9 180", 0, "unknown encoding"},
		{"missing TTL", "v1", 0, "missing TTL"},
		{"bad TTL", "v1 soon", 0, "bad TTL"},
		{"short entry", "v1 180 m5.large/us-east-1a/1800000000", 0, "bad entry"},
		{"empty field", "v1 180 m5.large//sp/1800000000", 0, "bad entry"},
		{"bad expiry", "v1 180 m5.large/us-east-1a/sp/tomorrow", 0, "bad expiry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := DecodeUnavailable(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.Len() != tc.wantLen {
				t.Errorf("%d marks, want %d", u.Len(), tc.wantLen)
			}
		})
	}
}

func TestUnavailableMergeKeepsTheLaterExpiryOfEach(t *testing.T) {
	a := NewUnavailable(0)
	a.MarkUntil(t0.Add(time.Minute), "m5.large", "z1a", "spot")
	b := NewUnavailable(0)
	b.MarkUntil(t0.Add(5*time.Minute), "m5.large", "z1a", "spot")
	b.MarkUntil(t0.Add(2*time.Minute), "c5.large", "z1a", "spot")
	a.Merge(b)
	a.Merge(nil)
	keys := a.Keys(t0.Add(90 * time.Second))
	if len(keys) != 2 || keys[0].InstanceType != "c5.large" || keys[1].InstanceType != "m5.large" {
		t.Errorf("keys %v", keys)
	}
	if !a.IsUnavailable(t0.Add(4*time.Minute), "m5.large", "z1a", "spot") {
		t.Error("the later expiry was not kept")
	}
}

func TestNilUnavailableMarksNothing(t *testing.T) {
	var u *Unavailable
	if u.IsUnavailable(t0, "m5.large", "z1a", "spot") {
		t.Error("nil set marks something")
	}
}

func TestIsCapacityError(t *testing.T) {
	for _, code := range CapacityErrorCodes() {
		if !IsCapacityError(code) {
			t.Errorf("%s is not a capacity error", code)
		}
	}
	if len(CapacityErrorCodes()) != len(capacityErrorCodes) {
		t.Errorf("CapacityErrorCodes lists %d codes, the classifier knows %d", len(CapacityErrorCodes()), len(capacityErrorCodes))
	}
	for _, code := range []string{"", "UnauthorizedOperation", "InvalidParameterValue", "RequestLimitExceeded", "insufficientinstancecapacity"} {
		if IsCapacityError(code) {
			t.Errorf("%q is a capacity error", code)
		}
	}
}
