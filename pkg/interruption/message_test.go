package interruption

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const samples = "../../events/testdata/aws"

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samples, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse_AWSSamplesGiveTheirKindAndInstances(t *testing.T) {
	for _, tc := range []struct {
		file      string
		kind      Kind
		instances []string
		state     string
		action    string
		timed     bool
	}{
		{"ec2-spot-instance-interruption-warning.json", KindSpotInterruption, []string{"i-1234567890abcdef0"}, "", "action", false},
		{"ec2-instance-rebalance-recommendation.json", KindRebalance, []string{"i-1234567890abcdef0"}, "", "", false},
		{"ec2-capacity-reservation-instance-interruption-warning.json", KindCapacityReservation, []string{"i-1234567890abcdef0"}, "", "terminate", true},
		{"ec2-instance-state-change-notification.json", KindNoop, []string{"i-1234567890abcdef0"}, "pending", "", true},
		{"ec2-instance-state-change-notification-stopping.json", KindInstanceStopped, []string{"i-1234567890abcdef0"}, "stopping", "", true},
		{"ec2-instance-state-change-notification-stopped.json", KindInstanceStopped, []string{"i-1234567890abcdef0"}, "stopped", "", true},
		{"ec2-instance-state-change-notification-shutting-down.json", KindInstanceTerminated, []string{"i-1234567890abcdef0"}, "shutting-down", "", true},
		{"ec2-instance-state-change-notification-terminated.json", KindInstanceTerminated, []string{"i-1234567890abcdef0"}, "terminated", "", true},
		{"aws-health-event-ec2-scheduled-change.json", KindScheduledChange, []string{"i-abcd1111"}, "", "", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			m, err := Parse(sample(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tc.kind || !reflect.DeepEqual(m.Instances, tc.instances) || m.State != tc.state || m.Action != tc.action {
				t.Fatalf("got kind %q instances %v state %q action %q; want %q %v %q %q", m.Kind, m.Instances, m.State, m.Action, tc.kind, tc.instances, tc.state, tc.action)
			}
			if _, ok := m.SentAt(); ok != tc.timed {
				t.Fatalf("SentAt ok = %v, want %v (time %q)", ok, tc.timed, m.Envelope.Time)
			}
		})
	}
}

// Every field AWS documents survives a parse: re-encoding the envelope
// with the typed detail gives the sample's JSON back.
func TestParse_AWSSamplesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(samples, "*.json"))
	if len(files) < 9 {
		t.Fatalf("found %d samples", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw := sample(t, filepath.Base(f))
			m, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			detail, err := json.Marshal(m.Detail)
			if err != nil {
				t.Fatal(err)
			}
			env := m.Envelope
			env.Detail = detail
			out, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			// aws-lambda-go's envelope always writes version; AWS's
			// state-change sample omits it.
			if _, ok := want["version"]; !ok && got["version"] == "" {
				delete(got, "version")
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("round trip changed the event:\n in: %s\nout: %s", raw, out)
			}
		})
	}
}

func TestParse_MalformedMessagesAreErrMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"not json":           "not json at all",
		"empty object":       "{}",
		"joist event":        `{"source":"joist.forwarder","detail-type":"Pending Pods","detail":{"cluster":"c","pods":[]}}`,
		"no detail":          `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning"}`,
		"null detail":        `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":null}`,
		"detail not object":  `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":"x"}`,
		"no instance id":     `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`,
		"bad instance id":    `{"source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","detail":{"instance-id":"../../etc"}}`,
		"unknown state":      `{"source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","detail":{"instance-id":"i-0123456789abcdef0","state":"exploded"}}`,
		"health no entities": `{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange"}}`,
		"wrong source":       `{"source":"aws.health","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-0123456789abcdef0"}}`,
		"detail-type wrong":  `{"source":"aws.ec2","detail-type":["x"],"detail":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(body)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestParse_HealthEventsOtherThanEC2ScheduledChangeAreNoops(t *testing.T) {
	for _, d := range []string{
		`{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[]}`,
		`{"service":"EC2","eventTypeCategory":"issue","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}`,
	} {
		m, err := Parse([]byte(`{"source":"aws.health","detail-type":"AWS Health Event","detail":` + d + `}`))
		if err != nil || m.Kind != KindNoop || len(m.Instances) != 0 {
			t.Fatalf("%s: got %+v, %v; want a noop about no instance", d, m, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(samples, "*.json"))
	for _, file := range files {
		f.Add(sample(f, filepath.Base(file)))
	}
	f.Add([]byte(`{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-0"}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if m.Kind == "" {
			t.Fatal("parsed without a kind")
		}
		if m.Kind != KindNoop && len(m.Instances) == 0 {
			t.Fatalf("%s message about no instance", m.Kind)
		}
		for _, id := range m.Instances {
			if !instanceID.MatchString(id) {
				t.Fatalf("instance %q passed", id)
			}
		}
	})
}
