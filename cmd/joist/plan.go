package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/featuregates"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/workload"
)

func init() {
	rootCmd.AddCommand(newPlanCmd())
}

// planOptions are the flags of `joist plan`.
type planOptions struct {
	files   []string
	region  string
	zones   []string
	catalog string
	output  string
	// preferencePolicy and minValuesPolicy are Karpenter's policies
	// (scheduling.PolicyOptions), as the functions' JOIST_PREFERENCE_POLICY
	// and JOIST_MIN_VALUES_POLICY.
	preferencePolicy string
	minValuesPolicy  string
	// schedulerConfig is a file holding Karpenter's --scheduler-config
	// (the functions' JOIST_SCHEDULER_CONFIG): its default spread
	// constraints go to the pods that declare none.
	schedulerConfig string
	// defaults are its default constraints, read by runPlan.
	defaults []corev1.TopologySpreadConstraint
	// reservedENIs is Karpenter's RESERVED_ENIS (the functions'
	// JOIST_RESERVED_ENIS).
	reservedENIs int64
	// zoneIDs are the zones' IDs in the account (zone → ID), which the
	// provisioner reads from the node classes' subnets and a plan cannot.
	zoneIDs map[string]string
	// featureGates is Karpenter's FEATURE_GATES (the functions'
	// JOIST_FEATURE_GATES): NodeClassCEL evaluates kubelet expressions.
	featureGates string
}

func newPlanCmd() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan [-f] WORKLOAD.yaml ... --region REGION",
		Short: "Plan nodes for a workload offline: which instances Joist would launch, and what they cost",
		Long: `Plan nodes for a workload without touching a cluster or AWS.

The files hold Karpenter specs (Provisioner/AWSNodeTemplate or
NodePool/EC2NodeClass; a default pool is used when there is none: linux,
amd64, on-demand, instance categories c, m, r of generation > 2) and
workloads: Pods, Deployments, StatefulSets, ReplicaSets, Jobs and
DaemonSets (plus PersistentVolumeClaims, PersistentVolumes and
StorageClasses for zonal volumes). Every pod is pending; the simulator
places them on new nodes priced from the catalog and prints the nodes, the
plan's price and a proven lower bound on the price of any plan.`,
		Args: filesFromArgs(&o.files),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifest file or folder (repeatable; - for standard input)")
	f.StringVar(&o.region, "region", "", "AWS region to price and place nodes in (required)")
	f.StringSliceVar(&o.zones, "zones", nil, "zones (letters or full names); default the region's a, b and c")
	f.StringVar(&o.catalog, "catalog", "embedded", `instance types: "embedded", or a JSON file of pkg/catalog instance types`)
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	f.StringVar(&o.preferencePolicy, "preference-policy", scheduling.PreferencePolicyRespect, "Respect or Ignore preferred affinities and ScheduleAnyway spreads (Karpenter's --preference-policy)")
	f.StringVar(&o.schedulerConfig, "scheduler-config", "", "a YAML or JSON file of Karpenter's --scheduler-config: its podTopologySpread.defaultConstraints go to pods that declare no spread, with the selector kube-scheduler deduces from the manifests' Services, ReplicaSets, Deployments and StatefulSets")
	f.StringToStringVar(&o.zoneIDs, "zone-ids", nil, "the zones' IDs in your account (zone=ID, e.g. a=usw2-az2,b=usw2-az1; `aws ec2 describe-availability-zones`), for pods and pools that select or spread by topology.k8s.aws/zone-id")
	f.Int64Var(&o.reservedENIs, "reserved-enis", 0, "ENIs per node the VPC CNI may not give pods (Karpenter's RESERVED_ENIS, for custom networking): left out of each type's max pods")
	f.StringVar(&o.minValuesPolicy, "min-values-policy", scheduling.MinValuesPolicyStrict, "Strict or BestEffort: whether a pool's minValues may be lowered to launch (Karpenter's --min-values-policy)")
	featureGatesFlag(f, &o.featureGates)
	return cmd
}

// planNode is one new node in the machine-readable output.
type planNode struct {
	Pool         string   `json:"pool"`
	InstanceType string   `json:"instanceType"`
	OptionCount  int      `json:"optionCount"`
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	PricePerHour float64  `json:"pricePerHour"`
	Pods         int      `json:"pods"`
	Zones        []string `json:"zones"`
	Options      []string `json:"options"`
	PodNames     []string `json:"podNames"`
}

type planExisting struct {
	Node     string   `json:"node"`
	InFlight bool     `json:"inFlight,omitempty"`
	PodNames []string `json:"podNames"`
}

type planFailure struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// planOutput is `joist plan -o json`.
type planOutput struct {
	Pods                   int            `json:"pods"`
	ScheduledPods          int            `json:"scheduledPods"`
	Unschedulable          int            `json:"unschedulable"`
	Nodes                  []planNode     `json:"nodes"`
	NodeCount              int            `json:"nodeCount"`
	TotalPricePerHour      float64        `json:"totalPricePerHour"`
	LowerBoundPricePerHour float64        `json:"lowerBoundPricePerHour"`
	SolveSeconds           float64        `json:"solveSeconds"`
	Region                 string         `json:"region"`
	Zones                  []string       `json:"zones"`
	Existing               []planExisting `json:"existing,omitempty"`
	UnschedulablePods      []planFailure  `json:"unschedulablePods,omitempty"`
	Skipped                []planFailure  `json:"skipped,omitempty"`
	DefaultPool            bool           `json:"defaultPool,omitempty"`
}

// looseBound is how far above the lower bound a plan's price is before
// the table says why the bound may be loose: the bound is a linear
// program over resources alone, so whole nodes (a small workload) and
// constraints between pods (a hostname spread's one pod per node, say)
// lift every plan above it.
const looseBound = 0.10

func runPlan(stdin io.Reader, stdout, stderr io.Writer, o *planOptions) error {
	if o.region == "" {
		return errors.New("--region is required")
	}
	switch o.output {
	case "table", "json", "yaml":
	default:
		return fmt.Errorf("unknown output format %q (table, json or yaml)", o.output)
	}
	if len(o.files) == 0 {
		return errors.New("no input: give -f FILE (or -f - for standard input)")
	}
	policy, err := scheduling.PolicyOptions(o.preferencePolicy, o.minValuesPolicy)
	if err != nil {
		return fmt.Errorf("--preference-policy/--min-values-policy: %w", err)
	}
	var schedulerConfig *scheduling.SchedulerConfig
	if o.schedulerConfig != "" {
		raw, err := os.ReadFile(o.schedulerConfig)
		if err != nil {
			return fmt.Errorf("--scheduler-config: %w", err)
		}
		if schedulerConfig, err = scheduling.ParseSchedulerConfig(string(raw)); err != nil {
			return fmt.Errorf("--scheduler-config %s: %w", o.schedulerConfig, err)
		}
	}
	o.defaults = schedulerConfig.Defaults()
	in, defaultPool, err := readPlanInput(stdin, stderr, o)
	if err != nil {
		return err
	}
	in.Options = policy
	start := time.Now()
	plan := scheduling.Solve(in)
	elapsed := time.Since(start)
	out := summarizePlan(in, plan, elapsed)
	out.Region, out.Zones, out.DefaultPool = in.Region, zonesOf(in), defaultPool
	switch o.output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "yaml":
		b, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	return printPlanTable(stdout, out)
}

// readPlanInput reads every file once for specs and once for workloads.
func readPlanInput(stdin io.Reader, stderr io.Writer, o *planOptions) (scheduling.Input, bool, error) {
	var objs []specs.Object
	wl := &workload.Result{}
	read := func(data []byte, source string) error {
		so, err := specs.Decode(data, source)
		if err != nil {
			return err
		}
		objs = append(objs, so...)
		w, err := workload.Read(data, source)
		if err != nil {
			return err
		}
		wl.Merge(w)
		return nil
	}
	for _, p := range o.files {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return scheduling.Input{}, false, err
			}
			if err := read(data, "<stdin>"); err != nil {
				return scheduling.Input{}, false, err
			}
			continue
		}
		files, err := specs.ListFiles(p, false)
		if err != nil {
			return scheduling.Input{}, false, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return scheduling.Input{}, false, err
			}
			if err := read(data, f); err != nil {
				return scheduling.Input{}, false, err
			}
		}
	}
	// Validation stays strict in `joist validate`; a plan only needs the
	// pools, so a missing node class is a warning here.
	spec, warnings, errs := specs.BuildWith(objs, specs.BuildOptions{MissingNodeClassWarns: true})
	for _, w := range warnings {
		fmt.Fprintln(stderr, "joist plan: warning:", w)
	}
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, "joist plan:", e)
		}
		return scheduling.Input{}, false, exitError{code: 1}
	}
	if o.reservedENIs < 0 {
		return scheduling.Input{}, false, fmt.Errorf("--reserved-enis %d: want 0 or more", o.reservedENIs)
	}
	gates, err := featuregates.Parse(o.featureGates)
	if err != nil {
		return scheduling.Input{}, false, fmt.Errorf("--feature-gates: %w", err)
	}
	spec = spec.WithReservedENIs(o.reservedENIs).WithNodeClassCEL(gates.NodeClassCEL)
	// The plan reads no EC2: reserved room is not in it, where the
	// provisioner fills it before it buys anything.
	// Nor the placement group a class names: its partitions, or a cluster
	// group's zone and types, are not in the plan.
	warned := map[string]bool{}
	for _, p := range spec.Pools {
		nc := spec.NodeClasses[p.NodeClass]
		if nc == nil || warned[nc.Name] {
			continue
		}
		warned[nc.Name] = true
		if len(nc.CapacityReservationSelector) > 0 {
			fmt.Fprintf(stderr, "joist plan: warning: EC2NodeClass %q selects capacity reservations; this plan buys every node (the provisioner fills the reservations' room first)\n", nc.Name)
		}
		if nc.PlacementGroup != nil {
			fmt.Fprintf(stderr, "joist plan: warning: EC2NodeClass %q names a placement group; this plan leaves it out (the provisioner plans its partitions, and a cluster group's zone and types)\n", nc.Name)
		}
	}
	// Nor does it launch a static pool's nodes, which the provisioner
	// keeps whatever the pods and fills before it buys.
	for _, p := range spec.Pools {
		if p.Replicas != nil {
			fmt.Fprintf(stderr, "joist plan: warning: NodePool %q is static (%d nodes); this plan puts no pod on its nodes (the provisioner keeps them and fills them first)\n", p.Name, p.StaticTarget())
		}
	}
	cat, err := loadPlanCatalog(o)
	if err != nil {
		return scheduling.Input{}, false, err
	}
	pools := spec.Pools
	defaultPool := false
	if len(pools) == 0 {
		pools = []*model.Pool{specs.DefaultPool()}
		defaultPool = true
	}
	var zoneIDs map[string]string
	for zone, id := range o.zoneIDs {
		full, err := catalog.NormalizeZones(o.region, []string{zone})
		if err != nil {
			return scheduling.Input{}, false, fmt.Errorf("--zone-ids %s=%s: %w", zone, id, err)
		}
		if zoneIDs == nil {
			zoneIDs = map[string]string{}
		}
		zoneIDs[full[0]] = id
	}
	cluster := fromcatalog.Cluster{
		Pools: pools, NodeClasses: spec.NodeClasses, Overlays: spec.Overlays, DaemonSets: wl.DaemonSets,
		PersistentVolumeClaims: wl.PersistentVolumeClaims, PersistentVolumes: wl.PersistentVolumes,
		StorageClasses: wl.StorageClasses, Namespaces: wl.Namespaces,
		ZoneIDs: zoneIDs,
	}
	in := fromcatalog.Input(cat, cluster)
	// As the provisioner (provisioning.ReadyPools): a pool whose kubelet
	// settings are CEL expressions launches nothing.
	for _, p := range pools {
		if nc := spec.NodeClasses[p.NodeClass]; nc != nil {
			if why := catalog.KubeletNotReady(nc, p.Kubelet); why != "" {
				fmt.Fprintf(stderr, "joist plan: warning: pool %q is left out: %s\n", p.Name, why)
				if in.NotReady == nil {
					in.NotReady = map[string]string{}
				}
				in.NotReady[p.Name] = why
			}
		}
	}
	for _, err := range fromcatalog.OverlayConflicts(cat, cluster) {
		fmt.Fprintln(stderr, "joist plan: warning:", err)
	}
	// Default spread constraints, as the functions give them.
	in.Pods = scheduling.WithDefaultSpread(o.defaults, wl.Pods, scheduling.SpreadSources{
		Services: wl.Services, ReplicaSets: wl.ReplicaSets, StatefulSets: wl.StatefulSets,
	})
	return in, defaultPool, nil
}

// loadPlanCatalog is the embedded catalog for the region, or one built from
// a JSON file of pkg/catalog instance types (a list, or an object with an
// "instanceTypes" list), offered in the zones with their regional prices.
func loadPlanCatalog(o *planOptions) (*catalog.Catalog, error) {
	if o.catalog == "" || o.catalog == "embedded" {
		return catalog.Offline(o.region, o.zones)
	}
	data, err := os.ReadFile(o.catalog)
	if err != nil {
		return nil, err
	}
	var types []*catalog.InstanceType
	if err := json.Unmarshal(data, &types); err != nil {
		var wrapped struct {
			InstanceTypes []*catalog.InstanceType `json:"instanceTypes"`
		}
		if err2 := json.Unmarshal(data, &wrapped); err2 != nil {
			return nil, fmt.Errorf("%s: %w", o.catalog, err)
		}
		types = wrapped.InstanceTypes
	}
	zones, err := catalog.NormalizeZones(o.region, o.zones)
	if err != nil {
		return nil, err
	}
	offerings := map[string][]catalog.Offering{}
	for _, t := range types {
		offerings[t.Name] = t.Offerings(o.region, zones)
	}
	c := catalog.New(o.region, zones, types, offerings)
	if len(c.Types()) == 0 {
		return nil, fmt.Errorf("%s: no instance type has a price in region %q", o.catalog, o.region)
	}
	return c, nil
}

func zonesOf(in scheduling.Input) []string {
	seen := map[string]bool{}
	for _, it := range in.InstanceTypes {
		for _, o := range it.Offerings {
			seen[o.Zone] = true
		}
	}
	out := make([]string, 0, len(seen))
	for z := range seen {
		out = append(out, z)
	}
	sort.Strings(out)
	return out
}

func podName(ns, name string) string { return ns + "/" + name }

func summarizePlan(in scheduling.Input, plan scheduling.Plan, elapsed time.Duration) planOutput {
	out := planOutput{
		Pods: len(in.Pods), Unschedulable: len(plan.Unschedulable),
		Nodes: []planNode{}, NodeCount: len(plan.NewNodes),
		TotalPricePerHour: plan.TotalPricePerHour, LowerBoundPricePerHour: plan.LowerBoundPricePerHour,
		SolveSeconds: elapsed.Seconds(),
	}
	for _, n := range plan.NewNodes {
		pn := planNode{
			Pool: n.Pool, InstanceType: n.Cheapest.InstanceType, OptionCount: len(n.InstanceTypeOptions),
			Zone: n.Cheapest.Zone, CapacityType: n.Cheapest.CapacityType, PricePerHour: n.Cheapest.PricePerHour,
			Pods: len(n.Pods), Zones: n.Zones,
		}
		for _, opt := range n.InstanceTypeOptions {
			pn.Options = append(pn.Options, opt.Name)
		}
		for _, p := range n.Pods {
			pn.PodNames = append(pn.PodNames, podName(p.Namespace, p.Name))
		}
		out.ScheduledPods += len(n.Pods)
		out.Nodes = append(out.Nodes, pn)
	}
	for _, e := range plan.Existing {
		pe := planExisting{Node: e.Node, InFlight: e.InFlight}
		for _, p := range e.Pods {
			pe.PodNames = append(pe.PodNames, podName(p.Namespace, p.Name))
		}
		out.ScheduledPods += len(e.Pods)
		out.Existing = append(out.Existing, pe)
	}
	for _, f := range plan.Unschedulable {
		out.UnschedulablePods = append(out.UnschedulablePods, planFailure{Pod: podName(f.Pod.Namespace, f.Pod.Name), Reason: f.Reason})
	}
	for _, f := range plan.Skipped {
		out.Skipped = append(out.Skipped, planFailure{Pod: podName(f.Pod.Namespace, f.Pod.Name), Reason: f.Reason})
	}
	return out
}

// printPlanTable prints one line per new node, then a summary with the
// price and its lower bound, then why pods could not be placed (the same
// reason is printed once, with the pods it applies to).
func printPlanTable(w io.Writer, out planOutput) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(out.Nodes) > 0 {
		fmt.Fprintln(tw, "POOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/H\tPODS\tOPTIONS")
		for _, n := range out.Nodes {
			zone := n.Zone
			if len(n.Zones) > 1 {
				zone += fmt.Sprintf(" (of %d)", len(n.Zones))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.4f\t%d\t%d\n", n.Pool, n.InstanceType, zone, n.CapacityType, n.PricePerHour, n.Pods, n.OptionCount)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	onExisting := out.ScheduledPods
	for _, n := range out.Nodes {
		onExisting -= n.Pods
	}
	fmt.Fprintf(w, "%d pods: %d on %d new node(s)", out.Pods, out.ScheduledPods-onExisting, out.NodeCount)
	if onExisting > 0 {
		fmt.Fprintf(w, ", %d on existing nodes", onExisting)
	}
	fmt.Fprintf(w, ", %d unschedulable", out.Unschedulable)
	if len(out.Skipped) > 0 {
		fmt.Fprintf(w, ", %d skipped", len(out.Skipped))
	}
	fmt.Fprintln(w)
	over := ""
	if out.LowerBoundPricePerHour > 0 {
		over = fmt.Sprintf(", %.1f%% above", (out.TotalPricePerHour/out.LowerBoundPricePerHour-1)*100)
	}
	fmt.Fprintf(w, "$%.4f/h (lower bound $%.4f/h%s), solved in %.3fs\n", out.TotalPricePerHour, out.LowerBoundPricePerHour, over, out.SolveSeconds)
	if out.LowerBoundPricePerHour > 0 && out.TotalPricePerHour > out.LowerBoundPricePerHour*(1+looseBound) {
		fmt.Fprintln(w, "(the bound buys fractions of nodes and counts resources only: whole nodes, spreads, anti-affinity, host ports, zonal volumes, pool limits and weights can keep every plan above it)")
	}
	if out.DefaultPool {
		fmt.Fprintln(w, "no pool in the input: used the default (linux, amd64, on-demand, c/m/r, generation > 2)")
	}
	if len(out.UnschedulablePods) > 0 {
		fmt.Fprintln(w, "\nunschedulable:")
		byReason := map[string][]string{}
		var order []string
		for _, f := range out.UnschedulablePods {
			if _, ok := byReason[f.Reason]; !ok {
				order = append(order, f.Reason)
			}
			byReason[f.Reason] = append(byReason[f.Reason], f.Pod)
		}
		for _, r := range order {
			pods := byReason[r]
			list := strings.Join(pods, ", ")
			if len(pods) > 3 {
				list = strings.Join(pods[:3], ", ") + fmt.Sprintf(" and %d more", len(pods)-3)
			}
			fmt.Fprintf(w, "  %s: %s\n", list, r)
		}
	}
	return nil
}
