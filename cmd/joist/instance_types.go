package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/live"
	"github.com/joist-dev/joist/pkg/model"
)

func init() {
	rootCmd.AddCommand(newInstanceTypesCmd())
}

// instanceTypesOptions are the flags of `joist instance-types`.
type instanceTypesOptions struct {
	region   string
	zones    []string
	selector string
	output   string
	live     bool
	timeout  time.Duration
}

func newInstanceTypesCmd() *cobra.Command {
	o := &instanceTypesOptions{}
	cmd := &cobra.Command{
		Use:   "instance-types",
		Short: "List the instance types Joist can launch in a region, with allocatable resources and prices",
		Long: `List the instance types Joist can launch in a region: specs, the pods and
allocatable cpu and memory a node gets after the kubelet's reservations
(AL2023, default kubelet settings, 20Gi root volume, as Karpenter computes
them), and the on-demand and spot price per hour from the embedded catalog.

-l filters with a Kubernetes label selector over the labels a node of the
type carries, e.g.
  -l 'kubernetes.io/arch=arm64,karpenter.k8s.aws/instance-cpu>3'
  -l 'karpenter.k8s.aws/instance-family in (m7g,c7g)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInstanceTypes(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.region, "region", "", "AWS region (default $AWS_REGION, then $AWS_DEFAULT_REGION)")
	f.StringSliceVar(&o.zones, "zones", nil, "zones to offer, as letters (a,b) or names (us-east-1a); default a,b,c")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector over the instance-type labels")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	f.BoolVar(&o.live, "live", false, "ask EC2 and the Pricing API (with the usual AWS credentials) as the Lambda functions do, falling back to the embedded data")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "with --live, how long to wait for AWS")
	return cmd
}

// instanceTypeRow is one listed type. Its JSON/YAML form is the command's
// machine-readable output.
type instanceTypeRow struct {
	Name          string              `json:"name"`
	Arch          string              `json:"arch"`
	CPU           int64               `json:"cpu"`
	MemoryMiB     int64               `json:"memoryMiB"`
	Pods          int64               `json:"pods"`
	Allocatable   corev1.ResourceList `json:"allocatable"`
	OnDemandPrice *float64            `json:"onDemandPrice,omitempty"`
	SpotPrice     *float64            `json:"spotPrice,omitempty"`
	Zones         []string            `json:"zones"`
}

func runInstanceTypes(ctx context.Context, w, stderr io.Writer, o *instanceTypesOptions) error {
	region := o.region
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return fmt.Errorf("no region: pass --region or set AWS_REGION")
	}
	switch o.output {
	case "table", "json", "yaml":
	default:
		return fmt.Errorf("unknown output format %q: use table, json or yaml", o.output)
	}
	sel := labels.Everything()
	if o.selector != "" {
		s, err := labels.Parse(o.selector)
		if err != nil {
			return fmt.Errorf("parse selector %q: %w", o.selector, err)
		}
		sel = s
	}
	var cat *catalog.Catalog
	var err error
	if o.live {
		cat, err = liveCatalog(ctx, stderr, region, o)
	} else {
		cat, err = catalog.Offline(region, o.zones)
	}
	if err != nil {
		return fmt.Errorf("build the catalog for %s: %w", region, err)
	}
	// Family, then size by cpu and memory, reads better than name order
	// (m5.large before m5.12xlarge).
	types := append([]*catalog.InstanceType(nil), cat.Types()...)
	sort.SliceStable(types, func(i, j int) bool {
		a, b := types[i], types[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if a.VCPU != b.VCPU {
			return a.VCPU < b.VCPU
		}
		if a.MemoryMiB != b.MemoryMiB {
			return a.MemoryMiB < b.MemoryMiB
		}
		return a.Name < b.Name
	})
	rows := []instanceTypeRow{}
	for _, it := range types {
		if !sel.Matches(labels.Set(it.Labels())) {
			continue
		}
		rows = append(rows, newInstanceTypeRow(cat, it))
	}
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(rows)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	default:
		return writeInstanceTypeTable(w, rows)
	}
}

func newInstanceTypeRow(cat *catalog.Catalog, it *catalog.InstanceType) instanceTypeRow {
	alloc := it.Allocatable(nil)
	row := instanceTypeRow{
		Name:        it.Name,
		Arch:        it.Arch,
		CPU:         it.VCPU,
		MemoryMiB:   it.MemoryMiB,
		Pods:        it.MaxPods(nil),
		Allocatable: alloc,
	}
	if p, ok := cat.Price(it.Name, model.CapacityTypeOnDemand); ok {
		row.OnDemandPrice = &p
	}
	if p, ok := cat.Price(it.Name, model.CapacityTypeSpot); ok {
		row.SpotPrice = &p
	}
	seen := map[string]bool{}
	for _, off := range cat.Offerings(it.Name) {
		if !seen[off.Zone] {
			seen[off.Zone] = true
			row.Zones = append(row.Zones, off.Zone)
		}
	}
	return row
}

func writeInstanceTypeTable(w io.Writer, rows []instanceTypeRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tARCH\tCPU\tMEMORY\tPODS\tALLOC CPU\tALLOC MEMORY\tON-DEMAND $/H\tSPOT $/H")
	for _, r := range rows {
		allocCPU := r.Allocatable[corev1.ResourceCPU]
		allocMem := r.Allocatable[corev1.ResourceMemory]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n",
			r.Name, r.Arch, r.CPU,
			resource.NewQuantity(r.MemoryMiB<<20, resource.BinarySI).String(),
			r.Pods, allocCPU.String(), allocMem.String(),
			price(r.OnDemandPrice), price(r.SpotPrice))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

func price(p *float64) string {
	if p == nil {
		return "-"
	}
	s := strconv.FormatFloat(*p, 'f', 4, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// liveCatalog builds the catalog the way the functions do, from EC2 and the
// Pricing API, and tells on stderr what came from the embedded data.
func liveCatalog(ctx context.Context, stderr io.Writer, region string, o *instanceTypesOptions) (*catalog.Catalog, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	pricingCfg := cfg.Copy()
	pricingCfg.Region = live.PricingRegion(region)
	p, err := live.New(ec2.NewFromConfig(cfg), pricing.NewFromConfig(pricingCfg), live.Options{
		Region:        region,
		Zones:         o.zones,
		PricingBudget: o.timeout,
	})
	if err != nil {
		return nil, err
	}
	cat, err := p.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	st := p.Status()
	fmt.Fprintf(stderr, "sources: types %s, zones %s, on-demand prices %s, spot prices %s\n", st.Types, st.Offerings, st.OnDemand, st.Spot)
	for _, e := range st.Errors {
		fmt.Fprintf(stderr, "warning: %s\n", e)
	}
	return cat, nil
}
