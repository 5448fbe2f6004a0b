package metrics_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/metrics"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)

// clock stamps every line at t0.
var clock = clocktesting.NewFakePassiveClock(t0)

// emfLine is one parsed line, after checkEMF found it valid.
type emfLine struct {
	Timestamp int64
	Namespace string
	Sets      [][]string
	Units     map[string]string    // metric name -> unit
	Values    map[string][]float64 // metric name -> its values (a number is one value)
	Dims      map[string]string    // every string member of the root
}

// validUnit is the unit pattern of the EMF JSON schema.
var validUnit = regexp.MustCompile(`^(Seconds|Microseconds|Milliseconds|Bytes|Kilobytes|Megabytes|Gigabytes|Terabytes|Bits|Kilobits|Megabits|Gigabits|Terabits|Percent|Count|Bytes/Second|Kilobytes/Second|Megabytes/Second|Gigabytes/Second|Terabytes/Second|Bits/Second|Kilobits/Second|Megabits/Second|Gigabits/Second|Terabits/Second|Count/Second|None)$`)

// checkEMF checks one line against CloudWatch's "Specification: Embedded
// metric format" and returns what it says.
func checkEMF(t *testing.T, line string) emfLine {
	t.Helper()
	if len(line) > metrics.MaxLineBytes {
		t.Errorf("line of %d bytes, the limit is %d", len(line), metrics.MaxLineBytes)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("line is not a JSON object: %v\n%s", err, line)
	}
	if dec.More() {
		t.Fatalf("data after the JSON object: %s", line)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("no _aws object: %s", line)
	}
	out := emfLine{Units: map[string]string{}, Values: map[string][]float64{}, Dims: map[string]string{}}
	ts, ok := aws["Timestamp"].(json.Number)
	if !ok {
		t.Fatalf("_aws.Timestamp is not a number: %v", aws["Timestamp"])
	}
	if out.Timestamp, _ = ts.Int64(); fmt.Sprint(out.Timestamp) != ts.String() {
		t.Errorf("_aws.Timestamp %s is not an integer of milliseconds", ts)
	}
	directives, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(directives) == 0 {
		t.Fatalf("_aws.CloudWatchMetrics is not a non-empty array: %v", aws["CloudWatchMetrics"])
	}
	for k, v := range root {
		if s, ok := v.(string); ok {
			out.Dims[k] = s
		}
	}
	for _, d := range directives {
		dir := d.(map[string]any)
		ns, _ := dir["Namespace"].(string)
		if ns == "" || len(ns) > 1024 {
			t.Errorf("Namespace %q must have 1 to 1024 characters", ns)
		}
		out.Namespace = ns
		sets, ok := dir["Dimensions"].([]any)
		if !ok || len(sets) == 0 {
			t.Fatalf("Dimensions is not a non-empty array of dimension sets: %v", dir["Dimensions"])
		}
		for _, s := range sets {
			set := s.([]any)
			if len(set) > metrics.MaxDimensionsPerSet {
				t.Errorf("dimension set of %d keys, the limit is %d", len(set), metrics.MaxDimensionsPerSet)
			}
			var keys []string
			for _, k := range set {
				key := k.(string)
				if key == "" || len(key) > 250 {
					t.Errorf("dimension key %q must have 1 to 250 characters", key)
				}
				val, ok := root[key].(string)
				if !ok {
					t.Errorf("dimension %q is not a string member of the root: %v", key, root[key])
				}
				if strings.TrimSpace(val) == "" || len(val) > 1024 {
					t.Errorf("dimension %q value %q must have 1 to 1024 characters", key, val)
				}
				keys = append(keys, key)
			}
			out.Sets = append(out.Sets, keys)
		}
		defs, ok := dir["Metrics"].([]any)
		if !ok || len(defs) == 0 {
			t.Fatalf("Metrics is not a non-empty array: %v", dir["Metrics"])
		}
		if len(defs) > metrics.MaxMetricsPerDirective {
			t.Errorf("%d metric definitions in a directive, the limit is %d", len(defs), metrics.MaxMetricsPerDirective)
		}
		for _, m := range defs {
			def := m.(map[string]any)
			name, _ := def["Name"].(string)
			if name == "" || len(name) > 1024 {
				t.Errorf("metric name %q must have 1 to 1024 characters", name)
			}
			if _, dup := out.Units[name]; dup {
				t.Errorf("metric %s is defined twice", name)
			}
			unit, _ := def["Unit"].(string)
			if !validUnit.MatchString(unit) {
				t.Errorf("metric %s: unit %q is not a CloudWatch unit", name, unit)
			}
			out.Units[name] = unit
			switch v := root[name].(type) {
			case json.Number:
				f, err := v.Float64()
				if err != nil {
					t.Errorf("metric %s: %v", name, err)
				}
				out.Values[name] = []float64{f}
			case []any:
				if len(v) == 0 || len(v) > metrics.MaxValuesPerMetric {
					t.Errorf("metric %s: %d values, the limit is 1 to %d", name, len(v), metrics.MaxValuesPerMetric)
				}
				for _, x := range v {
					n, ok := x.(json.Number)
					if !ok {
						t.Fatalf("metric %s: %v is not a number", name, x)
					}
					f, _ := n.Float64()
					out.Values[name] = append(out.Values[name], f)
				}
			default:
				t.Errorf("metric %s is not a root member with a number or an array of numbers: %#v", name, root[name])
			}
		}
	}
	return out
}

// flush flushes r and checks every line.
func flush(t *testing.T, r *metrics.Recorder) ([]emfLine, error) {
	t.Helper()
	var buf bytes.Buffer
	err := r.Flush(&buf)
	text := buf.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		t.Errorf("output does not end with a newline")
	}
	var out []emfLine
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l != "" {
			out = append(out, checkEMF(t, l))
		}
	}
	return out, err
}

// total is every value of a metric over all lines, in order.
func total(lines []emfLine, name string) []float64 {
	var out []float64
	for _, l := range lines {
		out = append(out, l.Values[name]...)
	}
	return out
}

func pool(p string) map[string]string { return map[string]string{metrics.DimPool: p} }

func TestRecorder_OutputFollowsTheEMFSpecification(t *testing.T) {
	nodeDims := map[string]string{metrics.DimPool: "default", metrics.DimCapacityType: "spot", metrics.DimInstanceType: "m5.large"}
	for _, tc := range []struct {
		name   string
		record func(r *metrics.Recorder)
		check  func(t *testing.T, lines []emfLine)
	}{
		{
			name: "counts with the same dimensions are summed",
			record: func(r *metrics.Recorder) {
				r.Count(metrics.NodesCreated, 2, nodeDims)
				r.Count(metrics.NodesCreated, 3, nodeDims)
			},
			check: func(t *testing.T, lines []emfLine) {
				if len(lines) != 1 || !reflect.DeepEqual(lines[0].Values[metrics.NodesCreated], []float64{5}) {
					t.Errorf("want one line with 5, got %+v", lines)
				}
				if u := lines[0].Units[metrics.NodesCreated]; u != "Count" {
					t.Errorf("unit %q, want Count", u)
				}
			},
		},
		{
			name: "a gauge keeps its last value",
			record: func(r *metrics.Recorder) {
				r.Gauge(metrics.PendingPods, 7, nil)
				r.Gauge(metrics.PendingPods, 4, nil)
			},
			check: func(t *testing.T, lines []emfLine) {
				if got := total(lines, metrics.PendingPods); !reflect.DeepEqual(got, []float64{4}) {
					t.Errorf("got %v, want [4]", got)
				}
				if u := lines[0].Units[metrics.PendingPods]; u != "Count" {
					t.Errorf("unit %q, want Count", u)
				}
			},
		},
		{
			name:   "a price gauge has no unit",
			record: func(r *metrics.Recorder) { r.Gauge(metrics.LaunchedPricePerHour, 0.0832, pool("default")) },
			check: func(t *testing.T, lines []emfLine) {
				if u := lines[0].Units[metrics.LaunchedPricePerHour]; u != "None" {
					t.Errorf("unit %q, want None", u)
				}
			},
		},
		{
			name: "observations become a values array in seconds",
			record: func(r *metrics.Recorder) {
				for _, v := range []float64{1.5, 0.25, 3} {
					r.Observe(metrics.PodsCreationToLaunch, v, pool("default"))
				}
			},
			check: func(t *testing.T, lines []emfLine) {
				if got := total(lines, metrics.PodsCreationToLaunch); !reflect.DeepEqual(got, []float64{1.5, 0.25, 3}) {
					t.Errorf("got %v", got)
				}
				if u := lines[0].Units[metrics.PodsCreationToLaunch]; u != "Seconds" {
					t.Errorf("unit %q, want Seconds", u)
				}
			},
		},
		{
			name: "amounts are observations without a unit",
			record: func(r *metrics.Recorder) {
				r.ObserveAmount(metrics.DisruptionSavings, 0.25, pool("default"))
				r.ObserveAmount(metrics.DisruptionSavings, 1.5, pool("default"))
			},
			check: func(t *testing.T, lines []emfLine) {
				if got := total(lines, metrics.DisruptionSavings); !reflect.DeepEqual(got, []float64{0.25, 1.5}) {
					t.Errorf("got %v", got)
				}
				if u := lines[0].Units[metrics.DisruptionSavings]; u != "None" {
					t.Errorf("unit %q, want None", u)
				}
			},
		},
		{
			name:   "the line is stamped in milliseconds by the clock",
			record: func(r *metrics.Recorder) { r.Count(metrics.PodsBound, 1, nil) },
			check: func(t *testing.T, lines []emfLine) {
				if lines[0].Timestamp != t0.UnixMilli() {
					t.Errorf("Timestamp %d, want %d", lines[0].Timestamp, t0.UnixMilli())
				}
				if lines[0].Namespace != metrics.Namespace {
					t.Errorf("Namespace %q", lines[0].Namespace)
				}
			},
		},
		{
			name:   "a cluster metric has the cluster dimension set only",
			record: func(r *metrics.Recorder) { r.Gauge(metrics.PodsUnschedulable, 2, nil) },
			check: func(t *testing.T, lines []emfLine) {
				if want := [][]string{{"cluster"}}; !reflect.DeepEqual(lines[0].Sets, want) {
					t.Errorf("sets %v, want %v", lines[0].Sets, want)
				}
				if lines[0].Dims["cluster"] != "prod" {
					t.Errorf("cluster %q", lines[0].Dims["cluster"])
				}
			},
		},
		{
			name:   "a pool metric rolls up to the cluster",
			record: func(r *metrics.Recorder) { r.Count(metrics.PodsBound, 1, pool("gpu")) },
			check: func(t *testing.T, lines []emfLine) {
				if want := [][]string{{"cluster"}, {"cluster", "pool"}}; !reflect.DeepEqual(lines[0].Sets, want) {
					t.Errorf("sets %v, want %v", lines[0].Sets, want)
				}
			},
		},
		{
			name:   "a metric with more dimensions rolls up to its pool and to the cluster",
			record: func(r *metrics.Recorder) { r.Count(metrics.NodesCreated, 1, nodeDims) },
			check: func(t *testing.T, lines []emfLine) {
				want := [][]string{{"cluster"}, {"cluster", "pool"}, {"cluster", "pool", "capacity_type", "instance_type"}}
				if !reflect.DeepEqual(lines[0].Sets, want) {
					t.Errorf("sets %v, want %v", lines[0].Sets, want)
				}
			},
		},
		{
			name: "different dimension values go on different lines",
			record: func(r *metrics.Recorder) {
				r.Count(metrics.InstanceLaunchFailures, 1, map[string]string{metrics.DimPool: "a", metrics.DimReason: "InsufficientInstanceCapacity"})
				r.Count(metrics.InstanceLaunchFailures, 1, map[string]string{metrics.DimPool: "a", metrics.DimReason: "UnfulfillableCapacity"})
				r.Count(metrics.InstanceLaunchFailures, 1, map[string]string{metrics.DimPool: "b", metrics.DimReason: "InsufficientInstanceCapacity"})
			},
			check: func(t *testing.T, lines []emfLine) {
				if len(lines) != 3 {
					t.Fatalf("%d lines, want 3", len(lines))
				}
				seen := map[string]bool{}
				for _, l := range lines {
					seen[l.Dims["pool"]+"/"+l.Dims["reason"]] = true
				}
				if len(seen) != 3 {
					t.Errorf("lines do not carry distinct dimension values: %v", seen)
				}
			},
		},
		{
			name: "metrics with the same dimensions share a line",
			record: func(r *metrics.Recorder) {
				r.Gauge(metrics.PendingPods, 3, nil)
				r.Gauge(metrics.PodsUnschedulable, 1, nil)
				r.Observe(metrics.SchedulingDuration, 0.02, nil)
			},
			check: func(t *testing.T, lines []emfLine) {
				if len(lines) != 1 || len(lines[0].Units) != 3 {
					t.Errorf("want one line with three metrics, got %+v", lines)
				}
			},
		},
		{
			name: "250 observations are split 100, 100, 50 over three lines",
			record: func(r *metrics.Recorder) {
				for i := range 250 {
					r.Observe(metrics.PodsCreationToLaunch, float64(i), pool("default"))
				}
				r.Count(metrics.NodesCreated, 4, pool("default"))
			},
			check: func(t *testing.T, lines []emfLine) {
				var sizes []int
				for _, l := range lines {
					sizes = append(sizes, len(l.Values[metrics.PodsCreationToLaunch]))
				}
				if !reflect.DeepEqual(sizes, []int{100, 100, 50}) {
					t.Errorf("values per line %v, want [100 100 50]", sizes)
				}
				got := total(lines, metrics.PodsCreationToLaunch)
				for i, v := range got {
					if v != float64(i) {
						t.Fatalf("value %d is %v: values lost or reordered", i, v)
					}
				}
				if c := total(lines, metrics.NodesCreated); !reflect.DeepEqual(c, []float64{4}) {
					t.Errorf("the counter must be published once, got %v", c)
				}
			},
		},
		{
			name: "150 metrics with the same dimensions are split 100 and 50 over two lines",
			record: func(r *metrics.Recorder) {
				for i := range 150 {
					r.Count(fmt.Sprintf("joist_test_%03d_total", i), 1, nil)
				}
			},
			check: func(t *testing.T, lines []emfLine) {
				if len(lines) != 2 || len(lines[0].Units) != 100 || len(lines[1].Units) != 50 {
					t.Errorf("want lines of 100 and 50 metrics, got %d lines", len(lines))
				}
			},
		},
		{
			name: "full values arrays of 100 metrics with long dimensions are split to stay under the line limit",
			record: func(r *metrics.Recorder) {
				long := map[string]string{}
				for d := range metrics.MaxDimensionsPerSet - 1 {
					long[fmt.Sprintf("d%02d", d)] = strings.Repeat("v", 1000)
				}
				for i := range 100 {
					for j := range 100 {
						r.Observe(fmt.Sprintf("joist_test_%03d_seconds", i), -math.Pi*float64(j+1)*1e-200, long)
					}
				}
			},
			check: func(t *testing.T, lines []emfLine) {
				if len(lines) < 2 {
					t.Errorf("%d line(s): 10,000 long values and 29 KB of dimensions do not fit in one", len(lines))
				}
				n := 0
				for _, l := range lines {
					for _, v := range l.Values {
						n += len(v)
					}
				}
				if n != 100*100 {
					t.Errorf("%d values published, want 10000", n)
				}
			},
		},
		{
			name: "dimension values are made printable ASCII of at most 1024 characters",
			record: func(r *metrics.Recorder) {
				r.Count(metrics.PodsBound, 1, map[string]string{metrics.DimPool: "pööl\n" + strings.Repeat("x", 2000)})
			},
			check: func(t *testing.T, lines []emfLine) {
				p := lines[0].Dims["pool"]
				if len(p) != 1024 || !strings.HasPrefix(p, "p__l_x") {
					t.Errorf("pool value %.20q... of %d characters", p, len(p))
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := metrics.New("prod", clock)
			tc.record(r)
			lines, err := flush(t, r)
			if err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if len(lines) == 0 {
				t.Fatal("nothing written")
			}
			tc.check(t, lines)
		})
	}
}

func TestRecorder_DropsAndReportsWhatBreaksTheFormat(t *testing.T) {
	tooMany := map[string]string{}
	for i := range metrics.MaxDimensionsPerSet {
		tooMany[fmt.Sprintf("d%02d", i)] = "v"
	}
	for _, tc := range []struct {
		name   string
		record func(r *metrics.Recorder)
		want   string
	}{
		{"a value that is not a number", func(r *metrics.Recorder) { r.Observe(metrics.SchedulingDuration, math.NaN(), nil) }, "not a finite number"},
		{"an infinite value", func(r *metrics.Recorder) { r.Gauge(metrics.PendingPods, math.Inf(1), nil) }, "not a finite number"},
		{"a negative count", func(r *metrics.Recorder) { r.Count(metrics.PodsBound, -1, nil) }, "negative"},
		{"an empty dimension value", func(r *metrics.Recorder) { r.Count(metrics.PodsBound, 1, pool("")) }, "empty value"},
		{"the cluster passed as a dimension", func(r *metrics.Recorder) {
			r.Count(metrics.PodsBound, 1, map[string]string{metrics.DimCluster: "other"})
		}, "reserved"},
		{"a dimension key that is the metric's name", func(r *metrics.Recorder) {
			r.Count(metrics.PodsBound, 1, map[string]string{metrics.PodsBound: "x"})
		}, "equals the metric name"},
		{"more than 30 dimensions with the cluster", func(r *metrics.Recorder) { r.Count(metrics.PodsBound, 1, tooMany) }, "dimensions"},
		{"an empty metric name", func(r *metrics.Recorder) { r.Count("", 1, nil) }, "empty"},
		{"a name used as a counter then a gauge", func(r *metrics.Recorder) {
			r.Count(metrics.PodsBound, 1, nil)
			r.Gauge(metrics.PodsBound, 1, nil)
		}, "recorded as a gauge, was a counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := metrics.New("prod", clock)
			tc.record(r)
			r.Gauge(metrics.PendingPods, 1, nil) // a good metric beside the bad one
			lines, err := flush(t, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Flush error %v, want one saying %q", err, tc.want)
			}
			if got := total(lines, metrics.PendingPods); !reflect.DeepEqual(got, []float64{1}) {
				t.Errorf("the good metric was not written: %v", got)
			}
		})
	}
}

func TestRecorder_FlushForgetsWhatItWrote(t *testing.T) {
	r := metrics.New("prod", clock)
	r.Count(metrics.PodsBound, 2, nil)
	if lines, err := flush(t, r); err != nil || len(lines) != 1 {
		t.Fatalf("first flush: %d lines, %v", len(lines), err)
	}
	if lines, err := flush(t, r); err != nil || len(lines) != 0 {
		t.Fatalf("second flush wrote %d lines (%v): a warm container would publish the last invocation again", len(lines), err)
	}
	// And a name may change kind after a flush: the kinds are per invocation.
	r.Gauge(metrics.PodsBound, 1, nil)
	if _, err := flush(t, r); err != nil {
		t.Errorf("after a flush: %v", err)
	}
}

func TestRecorder_ReportsTooManyProblemsBriefly(t *testing.T) {
	r := metrics.New("prod", clock)
	for range 1000 {
		r.Count(metrics.PodsBound, -1, nil)
	}
	_, err := flush(t, r)
	if err == nil || !strings.Contains(err.Error(), "and 990 more") || strings.Count(err.Error(), "\n") > 12 {
		t.Errorf("error %q: want 10 problems and a count of the rest", err)
	}
}

func TestRecorder_WithoutAClusterNameWritesNothing(t *testing.T) {
	r := metrics.New("", clock)
	r.Count(metrics.PodsBound, 1, nil)
	lines, err := flush(t, r)
	if err == nil || len(lines) != 0 {
		t.Errorf("%d lines, error %v: want none and an error", len(lines), err)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("stdout closed")
}

func TestRecorder_FlushReturnsTheWriteError(t *testing.T) {
	r := metrics.New("prod", clock)
	r.Count(metrics.PodsBound, 1, pool("a"))
	r.Count(metrics.PodsBound, 1, pool("b"))
	w := &failingWriter{}
	err := r.Flush(w)
	if err == nil || !strings.Contains(err.Error(), "stdout closed") {
		t.Errorf("error %v, want the write error", err)
	}
	if w.n != 1 {
		t.Errorf("%d writes after a failure, want to stop at the first", w.n)
	}
}

func TestRecorder_ObserveSinceUsesTheClock(t *testing.T) {
	r := metrics.New("prod", clock)
	r.ObserveSince(metrics.SchedulingDuration, t0.Add(-1500*time.Millisecond), nil)
	lines, err := flush(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := total(lines, metrics.SchedulingDuration); !reflect.DeepEqual(got, []float64{1.5}) {
		t.Errorf("got %v, want [1.5]", got)
	}
}

func TestRecorder_IsSafeForConcurrentUse(t *testing.T) {
	r := metrics.New("prod", clock)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				r.Count(metrics.NodesCreated, 1, pool(fmt.Sprint("p", g%2)))
				r.Observe(metrics.PodsCreationToLaunch, float64(i), nil)
			}
		})
	}
	wg.Wait()
	lines, err := flush(t, r)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, l := range lines {
		for _, v := range l.Values[metrics.NodesCreated] {
			counts[l.Dims["pool"]] += v
		}
	}
	if counts["p0"] != 2000 || counts["p1"] != 2000 {
		t.Errorf("counts %v, want 2000 per pool", counts)
	}
	if n := len(total(lines, metrics.PodsCreationToLaunch)); n != 4000 {
		t.Errorf("%d observations, want 4000", n)
	}
}

func TestMetricNames_FollowKarpentersConvention(t *testing.T) {
	names := []string{
		metrics.PendingPods, metrics.PodsUnschedulable, metrics.SchedulingDuration, metrics.NodesCreated,
		metrics.InstanceLaunchFailures, metrics.PodsCreationToLaunch, metrics.LaunchedPricePerHour, metrics.PodsBound,
		metrics.InterruptionReceivedMessages, metrics.InterruptionDeletedMessages,
		metrics.InterruptionMessageQueueDuration, metrics.InterruptionActionsPerformed, metrics.InterruptionReplacementSeconds,
	}
	valid := regexp.MustCompile(`^joist_[a-z0-9_]+$`)
	seen := map[string]bool{}
	for _, n := range names {
		if !valid.MatchString(n) {
			t.Errorf("%s is not joist_snake_case", n)
		}
		if seen[n] {
			t.Errorf("%s is defined twice", n)
		}
		seen[n] = true
	}
}

func ExampleRecorder() {
	r := metrics.New("prod", clocktesting.NewFakePassiveClock(time.UnixMilli(1767225600000)))
	r.Count(metrics.NodesCreated, 1, map[string]string{metrics.DimPool: "default", metrics.DimCapacityType: "on-demand", metrics.DimInstanceType: "t3.large"})
	r.Gauge(metrics.PendingPods, 3, nil)
	var out strings.Builder
	_ = r.Flush(&out)
	fmt.Print(out.String())
	// Output:
	// {"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"Joist","Dimensions":[["cluster"]],"Metrics":[{"Name":"joist_pending_pods","Unit":"Count"}]}]},"cluster":"prod","joist_pending_pods":3}
	// {"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"Joist","Dimensions":[["cluster"],["cluster","pool"],["cluster","pool","capacity_type","instance_type"]],"Metrics":[{"Name":"joist_nodes_created_total","Unit":"Count"}]}]},"cluster":"prod","capacity_type":"on-demand","instance_type":"t3.large","pool":"default","joist_nodes_created_total":1}
}
