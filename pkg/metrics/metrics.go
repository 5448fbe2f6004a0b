// Package metrics publishes Joist's metrics from Lambda functions in
// CloudWatch's embedded metric format (EMF): a function records counters,
// gauges and observations while it works, then writes them to stdout as
// JSON log lines, and CloudWatch Logs extracts the metrics from its log
// group. There is no PutMetricData call to make, wait for, retry or grant,
// and no agent: a Lambda function's stdout already is its log group.
//
// A Recorder holds one invocation's metrics. The names follow Karpenter's
// (karpenter_nodes_created_total becomes joist_nodes_created_total) so
// dashboards and alarms carry over; docs/observability.md has the mapping.
//
// The format is CloudWatch's "Specification: Embedded metric format":
//
//	{"_aws":{"Timestamp":<ms>,"CloudWatchMetrics":[{"Namespace":"Joist",
//	  "Dimensions":[["cluster"],["cluster","pool"]],
//	  "Metrics":[{"Name":"joist_nodes_created_total","Unit":"Count"}]}]},
//	 "cluster":"prod","pool":"default","joist_nodes_created_total":2}
//
// with its limits: at most 100 metrics per directive, 30 keys per
// dimension set, 100 values per metric value array, dimension values of
// 1 to 1024 characters.
package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Namespace is the CloudWatch namespace of every Joist metric.
const Namespace = "Joist"

// Metric names. Each is Karpenter's metric of the same meaning with the
// karpenter_ prefix replaced by joist_ where one exists (see
// docs/observability.md), so that a Karpenter dashboard's queries need
// only the prefix and the data source changed.
const (
	// PendingPods is a gauge: the pods the provisioner found pending
	// (pods.Provisionable) at the start of its reconcile, served or not.
	PendingPods = "joist_pending_pods"
	// PodsUnschedulable is a gauge: the pending pods the simulator could
	// place on no existing, in-flight or new node.
	PodsUnschedulable = "joist_pods_unschedulable"
	// SchedulingDuration is an observation: how long one simulation took.
	SchedulingDuration = "joist_scheduler_scheduling_duration_seconds"
	// NodesCreated counts the instances a CreateFleet call launched, by
	// DimPool, DimCapacityType and DimInstanceType.
	NodesCreated = "joist_nodes_created_total"
	// InstanceLaunchFailures counts CreateFleet failures (whole-call errors
	// and per-offering errors), by DimPool and DimReason (the EC2 error
	// code, e.g. InsufficientInstanceCapacity).
	InstanceLaunchFailures = "joist_cloudprovider_instance_launch_failures_total"
	// PodsCreationToLaunch is an observation per pod: seconds from the pod's
	// creationTimestamp to the CreateFleet request that launched its
	// instance. It is what a user waits for that Joist controls; the boot
	// and the kubelet's registration come after it.
	PodsCreationToLaunch = "joist_pods_creation_to_launch_seconds"
	// LaunchedPricePerHour is a gauge per launch, by DimPool: the hourly
	// price, in US dollars, of the instances just launched (their
	// offering's, or a NodeOverlay's, as for NodePoolCost). Its Sum over
	// a period is the $/h that period added.
	LaunchedPricePerHour = "joist_nodepools_launched_price_per_hour"
	// PodsBound counts the pods the binder bound to their node.
	PodsBound = "joist_pods_bound_total"
	// NodesDisrupted counts the nodes a disruption decision began to
	// retire, by DimPool and DimReason (Empty, Expired, ...).
	NodesDisrupted = "joist_nodeclaims_disrupted_total"
	// DisruptionDecisions counts disruption decisions, by DimReason.
	DisruptionDecisions = "joist_voluntary_disruption_decisions_total"
	// DisruptionSavings is the $/h a disruption decision saves (the
	// retired nodes' price minus their replacement's), by DimPool and
	// DimReason: Joist's, Karpenter has no such metric.
	DisruptionSavings = "joist_disruption_savings_dollars_per_hour"
	// NodesTerminated counts the nodes whose retirement completed
	// (instance terminated, Node released), by DimPool.
	NodesTerminated = "joist_nodes_terminated_total"
	// PodsEvictionRequests counts Eviction API requests of drains, by
	// DimReason: Evicted, or Blocked (a PDB's 429).
	PodsEvictionRequests = "joist_pods_eviction_requests_total"
	// NodePoolCost is a gauge by DimPool: the hourly price, in US
	// dollars, of the pool's nodes now, each priced by its instance
	// type, zone and capacity type as its pool plans it (the catalog's
	// price, or a NodeOverlay's; a node in a capacity reservation at 0:
	// it is paid for either way); a pool without nodes reads 0. Recorded
	// by the reaper every pass.
	NodePoolCost = "joist_nodepools_cost_per_hour"
	// NodePoolNodes is a gauge by DimPool: the pool's nodes now (those
	// being retired too: they are still billed).
	NodePoolNodes = "joist_nodepools_nodes"
	// ConsolidationMoves counts the consolidation commands scored for a
	// pool whose policy is Balanced, by DimPool and DimDecision (approved,
	// rejected): per pass, the command found and the first one refused.
	ConsolidationMoves = "joist_consolidation_moves_total"
)

// The interruption function's metrics, after Karpenter's
// karpenter_interruption_* metrics (pkg/interruption/handler).
const (
	// InterruptionReceivedMessages counts messages by DimMessageType (the
	// kind; "malformed" for those that could not be parsed).
	InterruptionReceivedMessages = "joist_interruption_received_messages_total"
	// InterruptionDeletedMessages counts messages done with (handled,
	// ignored or malformed), i.e. not left for redelivery.
	InterruptionDeletedMessages = "joist_interruption_deleted_messages_total"
	// InterruptionMessageQueueDuration observes seconds from the event's
	// time to its handling.
	InterruptionMessageQueueDuration = "joist_interruption_message_queue_duration_seconds"
	// InterruptionActionsPerformed counts actions by DimReason (Replace,
	// Delete, Notify).
	InterruptionActionsPerformed = "joist_interruption_actions_performed_total"
	// InterruptionReplacementSeconds observes, per replaced node, seconds
	// from the event's time to the replacement's CreateFleet returning
	// (Joist's own: Karpenter launches only after the drain).
	InterruptionReplacementSeconds = "joist_interruption_replacement_seconds"
	// InterruptionInstanceStatusUnhealthy counts, per health check, the
	// instances found unhealthy, by DimMessageType (instance_status,
	// system_status, event_status).
	InterruptionInstanceStatusUnhealthy = "joist_interruption_instance_status_unhealthy_total"
)

// Dimension keys. They are Karpenter's Prometheus label names, except
// DimPool (Karpenter's "nodepool"): Joist's pools are v1alpha5
// Provisioners as often as v1 NodePools.
const (
	// DimCluster is set by the Recorder on every metric; callers must not
	// pass it.
	DimCluster      = "cluster"
	DimPool         = "pool"
	DimCapacityType = "capacity_type"
	DimInstanceType = "instance_type"
	DimZone         = "zone"
	DimReason       = "reason"
	// DimDecision is a Balanced consolidation score's verdict (approved,
	// rejected).
	DimDecision = "decision"
	// DimFunction names the Lambda function (provisioner, reaper, ...);
	// it plays the part of Karpenter's "controller" label.
	DimFunction = "function"
	// DimMessageType is the interruption message's kind
	// (spot_interrupted, rebalance_recommendation, ...).
	DimMessageType = "message_type"
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units Joist uses.
const (
	Count   Unit = "Count"
	Seconds Unit = "Seconds"
	None    Unit = "None"
)

// Limits of the embedded metric format and of a Lambda log line.
const (
	// MaxMetricsPerDirective is the spec's limit on MetricDefinitions in
	// one directive (and so in one line, since Joist writes one directive
	// a line).
	MaxMetricsPerDirective = 100
	// MaxDimensionsPerSet is the spec's limit on keys in a dimension set,
	// DimCluster included.
	MaxDimensionsPerSet = 30
	// MaxValuesPerMetric is the spec's limit on a metric's values array.
	MaxValuesPerMetric = 100
	// MaxDimensionValueLength is the spec's limit on a dimension value.
	MaxDimensionValueLength = 1024
	// MaxDimensionKeyLength is the JSON schema's limit on a dimension key.
	MaxDimensionKeyLength = 250
	// MaxMetricNameLength is the JSON schema's limit on a metric name.
	MaxMetricNameLength = 1024
	// MaxLineBytes bounds one line. An EMF document is one log event; the
	// spec has said both 256 KB and 1 MB for the largest one, so Joist
	// stays under the smaller and splits a line that would not.
	MaxLineBytes = 256 * 1024
)

// gaugeUnits gives the gauges whose unit is not None.
var gaugeUnits = map[string]Unit{
	PendingPods:       Count,
	PodsUnschedulable: Count,
	NodePoolNodes:     Count,
}

type kind int

const (
	counter kind = iota + 1
	gauge
	observation
)

func (k kind) String() string {
	switch k {
	case counter:
		return "counter"
	case gauge:
		return "gauge"
	default:
		return "observation"
	}
}

// series is one metric name with one set of dimension values.
type series struct {
	name   string
	kind   kind
	unit   Unit
	values []float64
}

// group is every series sharing one set of dimension values: they are
// written on the same lines.
type group struct {
	dims   map[string]string // without DimCluster
	series map[string]*series
}

// maxReportedErrors caps the problems Flush reports, so a loop recording
// a bad metric a thousand times yields a short error.
const maxReportedErrors = 10

// Recorder collects one invocation's metrics and writes them with Flush.
// It is safe for concurrent use. Recording never fails and never blocks
// on I/O: a metric that breaks the format is dropped, and Flush reports
// it, so that metrics can never fail the work they measure.
type Recorder struct {
	cluster string
	clock   clock.PassiveClock

	mu      sync.Mutex
	groups  map[string]*group
	kinds   map[string]kind // a name keeps the kind of its first use
	errs    []error
	dropped int
}

// New returns an empty Recorder for cluster, the value of DimCluster on
// every metric. c is the clock that stamps flushed lines and ends
// ObserveSince (nil: the real one; tests pass a k8s.io/utils/clock/testing
// clock), the same injected clock the rest of Joist uses.
func New(cluster string, c clock.PassiveClock) *Recorder {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Recorder{cluster: cleanValue(cluster), clock: c, groups: map[string]*group{}, kinds: map[string]kind{}}
}

// Count adds value (≥ 0) to a counter. Counts with the same name and
// dimensions are summed within the invocation; CloudWatch's Sum statistic
// totals them across invocations.
func (r *Recorder) Count(name string, value float64, dims map[string]string) {
	if value < 0 {
		r.fail(fmt.Errorf("metric %s: counter increment %v is negative", name, value))
		return
	}
	r.record(name, counter, Count, value, dims)
}

// Gauge sets a gauge; the last value recorded in the invocation wins.
func (r *Recorder) Gauge(name string, value float64, dims map[string]string) {
	unit, ok := gaugeUnits[name]
	if !ok {
		unit = None
	}
	r.record(name, gauge, unit, value, dims)
}

// Observe records one duration in seconds. Every observation is kept and
// published (as a values array), so CloudWatch can compute percentiles
// over them, as Karpenter's histograms allow.
func (r *Recorder) Observe(name string, seconds float64, dims map[string]string) {
	r.record(name, observation, Seconds, seconds, dims)
}

// ObserveAmount records one observation that is not a duration (a price
// in $/h, say): kept and published as Observe's, without a unit.
func (r *Recorder) ObserveAmount(name string, value float64, dims map[string]string) {
	r.record(name, observation, None, value, dims)
}

// ObserveSince observes the time from start to the Recorder's clock.
func (r *Recorder) ObserveSince(name string, start time.Time, dims map[string]string) {
	r.Observe(name, r.clock.Since(start).Seconds(), dims)
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failLocked(err)
}

func (r *Recorder) failLocked(err error) {
	r.dropped++
	if len(r.errs) < maxReportedErrors {
		r.errs = append(r.errs, err)
	}
}

func (r *Recorder) record(name string, k kind, unit Unit, value float64, dims map[string]string) {
	if err := checkName(name); err != nil {
		r.fail(err)
		return
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		r.fail(fmt.Errorf("metric %s: value %v is not a finite number", name, value))
		return
	}
	clean, err := cleanDims(name, dims)
	if err != nil {
		r.fail(err)
		return
	}
	key := groupKey(clean)

	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.kinds[name]; ok && prev != k {
		r.failLocked(fmt.Errorf("metric %s: recorded as a %v, was a %v", name, k, prev))
		return
	}
	r.kinds[name] = k
	g := r.groups[key]
	if g == nil {
		g = &group{dims: clean, series: map[string]*series{}}
		r.groups[key] = g
	}
	s := g.series[name]
	if s == nil {
		s = &series{name: name, kind: k, unit: unit}
		g.series[name] = s
	}
	switch k {
	case counter:
		if len(s.values) == 0 {
			s.values = []float64{0}
		}
		s.values[0] += value
	case gauge:
		s.values = []float64{value}
	case observation:
		s.values = append(s.values, value)
	}
}

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("metric name is empty")
	case len(name) > MaxMetricNameLength:
		return fmt.Errorf("metric name %.40q... is longer than %d characters", name, MaxMetricNameLength)
	case name == "_aws" || name == DimCluster:
		return fmt.Errorf("metric name %q is reserved", name)
	}
	return nil
}

// cleanDims checks the keys (they are code's constants: a bad one is a
// bug, and the sample is dropped) and repairs the values (they are data,
// such as a pool or instance type name: a metric with a slightly altered
// label is worth more than no metric).
func cleanDims(name string, dims map[string]string) (map[string]string, error) {
	if len(dims)+1 > MaxDimensionsPerSet {
		return nil, fmt.Errorf("metric %s: %d dimensions, the limit is %d with %q", name, len(dims), MaxDimensionsPerSet-1, DimCluster)
	}
	out := make(map[string]string, len(dims))
	for k, v := range dims {
		switch {
		case strings.TrimSpace(k) == "" || len(k) > MaxDimensionKeyLength:
			return nil, fmt.Errorf("metric %s: dimension key %q must have 1 to %d characters", name, k, MaxDimensionKeyLength)
		case k == DimCluster || k == "_aws":
			return nil, fmt.Errorf("metric %s: dimension key %q is reserved", name, k)
		case k == name:
			return nil, fmt.Errorf("metric %s: dimension key equals the metric name", name)
		case strings.HasPrefix(k, ":") || !printableASCII(k):
			return nil, fmt.Errorf("metric %s: dimension key %q must be printable ASCII not starting with ':'", name, k)
		}
		v = cleanValue(v)
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("metric %s: dimension %s has an empty value", name, k)
		}
		out[k] = v
	}
	return out, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// cleanValue makes v a valid dimension value: printable ASCII (CloudWatch
// takes nothing else), other characters replaced by '_', at most
// MaxDimensionValueLength characters.
func cleanValue(v string) string {
	if printableASCII(v) && len(v) <= MaxDimensionValueLength {
		return v
	}
	var b strings.Builder
	for _, c := range v {
		if b.Len() == MaxDimensionValueLength {
			break
		}
		if c < 0x20 || c > 0x7e {
			c = '_'
		}
		b.WriteRune(c)
	}
	return b.String()
}

func groupKey(dims map[string]string) string {
	keys := sortedKeys(dims)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(dims[k])
		b.WriteByte(0)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Flush writes what was recorded since the last Flush to w, one EMF
// document per line and one Write per line, and forgets it: a Lambda
// container serves many invocations, and each must publish only its own.
// Lines are stamped with the Recorder's clock.
//
// Call it once, at the end of the invocation, with os.Stdout. Flushing
// while other goroutines log to the same stdout could interleave a long
// line with theirs.
//
// The error reports metrics that were dropped for breaking the format and
// any write error; the lines that could be written were. Callers log it
// and carry on: a lost metric must not fail an invocation.
func (r *Recorder) Flush(w io.Writer) error {
	r.mu.Lock()
	groups, errs, dropped := r.groups, r.errs, r.dropped
	r.groups, r.kinds, r.errs, r.dropped = map[string]*group{}, map[string]kind{}, nil, 0
	r.mu.Unlock()

	if dropped > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more dropped metrics", dropped-len(errs)))
	}
	if strings.TrimSpace(r.cluster) == "" && len(groups) > 0 {
		// Every metric would carry an invalid dimension, and CloudWatch
		// would reject the lot.
		errs = append(errs, fmt.Errorf("%d metric groups: the recorder has no cluster name", len(groups)))
		groups = nil
	}
	ts := r.clock.Now().UnixMilli()
	for _, key := range sortedKeys(groups) {
		for _, line := range groups[key].lines(r.cluster, ts) {
			if _, err := w.Write(line); err != nil {
				errs = append(errs, fmt.Errorf("write metrics: %w", err))
				return errors.Join(errs...)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("metrics dropped: %w", errors.Join(errs...))
	}
	return nil
}

// dimensionSets publishes each metric three ways: for the whole cluster,
// per pool, and per every dimension it was recorded with. A dashboard
// wants totals and per-pool lines without metric math, and an alarm wants
// one metric; each set is a separate CloudWatch metric (and bill line).
func dimensionSets(dims map[string]string) [][]string {
	sets := [][]string{{DimCluster}}
	if len(dims) == 0 {
		return sets
	}
	_, hasPool := dims[DimPool]
	if hasPool && len(dims) > 1 {
		sets = append(sets, []string{DimCluster, DimPool})
	}
	full := []string{DimCluster}
	if hasPool {
		full = append(full, DimPool)
	}
	for _, k := range sortedKeys(dims) {
		if k != DimPool {
			full = append(full, k)
		}
	}
	return append(sets, full)
}

// lines renders a group: its metrics in batches of at most
// MaxMetricsPerDirective, and each batch on as many lines as its longest
// values array needs at MaxValuesPerMetric a line. A batch whose lines
// would pass MaxLineBytes is halved until they do not.
func (g *group) lines(cluster string, ts int64) [][]byte {
	names := sortedKeys(g.series)
	all := make([]*series, len(names))
	for i, n := range names {
		all[i] = g.series[n]
	}
	sets := dimensionSets(g.dims)
	var out [][]byte
	var emit func(batch []*series)
	emit = func(batch []*series) {
		chunks := 0
		for _, s := range batch {
			chunks = max(chunks, (len(s.values)+MaxValuesPerMetric-1)/MaxValuesPerMetric)
		}
		var lines [][]byte
		for c := 0; c < chunks; c++ {
			line := g.render(cluster, ts, sets, batch, c)
			if len(line) > MaxLineBytes && len(batch) > 1 {
				emit(batch[:len(batch)/2])
				emit(batch[len(batch)/2:])
				return
			}
			lines = append(lines, line)
		}
		out = append(out, lines...)
	}
	for start := 0; start < len(all); start += MaxMetricsPerDirective {
		emit(all[start:min(start+MaxMetricsPerDirective, len(all))])
	}
	return out
}

// The EMF document's metadata, in the spec's member names.
type (
	emfMeta struct {
		Timestamp         int64          `json:"Timestamp"`
		CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
	}
	emfDirective struct {
		Namespace  string      `json:"Namespace"`
		Dimensions [][]string  `json:"Dimensions"`
		Metrics    []emfMetric `json:"Metrics"`
	}
	emfMetric struct {
		Name string `json:"Name"`
		Unit Unit   `json:"Unit"`
	}
)

// render writes one line: the batch's metrics that have a chunk c of
// values. A single value is written as a number, more as an array.
func (g *group) render(cluster string, ts int64, sets [][]string, batch []*series, c int) []byte {
	dir := emfDirective{Namespace: Namespace, Dimensions: sets}
	var members bytes.Buffer
	for _, s := range batch {
		lo := c * MaxValuesPerMetric
		if lo >= len(s.values) {
			continue
		}
		vals := s.values[lo:min(lo+MaxValuesPerMetric, len(s.values))]
		dir.Metrics = append(dir.Metrics, emfMetric{Name: s.name, Unit: s.unit})
		var v any = vals
		if len(vals) == 1 {
			v = vals[0]
		}
		writeMember(&members, s.name, v)
	}
	var b bytes.Buffer
	b.WriteString(`{"_aws":`)
	meta, _ := json.Marshal(emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{dir}})
	b.Write(meta)
	writeMember(&b, DimCluster, cluster)
	for _, k := range sortedKeys(g.dims) {
		writeMember(&b, k, g.dims[k])
	}
	b.Write(members.Bytes())
	b.WriteString("}\n")
	return b.Bytes()
}

// writeMember appends ,"key":value. Values are strings and finite floats,
// which always marshal.
func writeMember(b *bytes.Buffer, key string, value any) {
	k, _ := json.Marshal(key)
	v, _ := json.Marshal(value)
	b.WriteByte(',')
	b.Write(k)
	b.WriteByte(':')
	b.Write(v)
}
