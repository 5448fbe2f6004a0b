// Command ec2sim serves Joist's EC2 simulator on a TCP port, for `make demo`
// and for poking at by hand. Point the AWS SDK at it with
// AWS_ENDPOINT_URL_EC2=http://<addr>.
//
//	ec2sim --addr 127.0.0.1:4599 --cluster hoon-cluster \
//	       --instance-types ec2-instance-types.json --boot-delay 5s
//
// With --addr ...:0 it picks a free port; the first line it prints is
// "ec2sim listening on http://HOST:PORT", for scripts to read.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/joist-dev/joist/test/ec2sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "ec2sim:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, if not nil, receives the endpoint URL
// once the listener is up.
func run(ctx context.Context, args []string, out io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("ec2sim", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:4599", "address to listen on (port 0 picks a free one)")
	region := fs.String("region", "ap-northeast-2", "simulated region")
	zones := fs.String("zones", "", "comma-separated availability zones (default: the region's a, b and c)")
	account := fs.String("account", ec2sim.DefaultAccountID, "simulated account ID")
	cluster := fs.String("cluster", "", "seed a VPC, one subnet per zone and a cluster security group tagged for this EKS cluster")
	bootDelay := fs.Duration("boot-delay", 0, "how long instances stay pending")
	shutdownDelay := fs.Duration("shutdown-delay", 0, "how long terminated instances stay shutting-down")
	typesFile := fs.String("instance-types", "", "JSON file: an array of InstanceTypeInfo, or the shared catalog document ({\"instanceTypes\": [...]}, prices per region)")
	imagesFile := fs.String("images", "", "JSON file: an array of ImageSpec to seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}

	opts := ec2sim.Options{Region: *region, AccountID: *account, BootDelay: *bootDelay, ShutdownDelay: *shutdownDelay}
	if *zones != "" {
		opts.Zones = strings.Split(*zones, ",")
	}
	if *typesFile != "" {
		its, err := loadInstanceTypes(*typesFile, *region)
		if err != nil {
			return err
		}
		opts.InstanceTypes = its
	} else {
		fmt.Fprintln(out, "ec2sim: warning: no --instance-types; every launch will fail with InvalidParameterValue")
	}
	sim := ec2sim.New(opts)
	if *cluster != "" {
		seeded := sim.SeedDefault(*cluster)
		fmt.Fprintf(out, "ec2sim: seeded cluster %s: %s, security group %s, subnets %s\n", *cluster, seeded.VPCID, seeded.SecurityGroupID, formatSubnets(seeded.SubnetIDs))
	}
	if *imagesFile != "" {
		specs, err := loadImages(*imagesFile)
		if err != nil {
			return err
		}
		for _, spec := range specs {
			fmt.Fprintf(out, "ec2sim: image %s %s (%s)\n", sim.AddImage(spec), spec.Name, spec.Architecture)
		}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *addr, err)
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "ec2sim listening on %s (region %s, zones %s, %d instance types)\n", url, sim.Region(), strings.Join(sim.Zones(), ","), len(opts.InstanceTypes))
	if ready != nil {
		ready <- url
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

func formatSubnets(m map[string]string) string {
	var parts []string
	for z, id := range m {
		parts = append(parts, z+"="+id)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// catalogDocument is the shape of the shared instance-type catalog
// (/work/shared/data/ec2-instance-types.json), whose prices are per region.
// Reading it here keeps the demo working before the embedded catalog is
// wired in, without importing pkg/catalog.
type catalogDocument struct {
	InstanceTypes []struct {
		Name            string             `json:"name"`
		Arch            string             `json:"arch"`
		VCPU            int64              `json:"vcpu"`
		MemoryMiB       int64              `json:"memoryMiB"`
		GPUCount        int64              `json:"gpuCount"`
		GPUName         string             `json:"gpuName"`
		GPUManufacturer string             `json:"gpuManufacturer"`
		GPUMemoryMiB    int64              `json:"gpuMemoryMiB"`
		MaxENIs         int64              `json:"maxENIs"`
		IPv4PerENI      int64              `json:"ipv4PerENI"`
		Hypervisor      string             `json:"hypervisor"`
		BareMetal       bool               `json:"bareMetal"`
		SpotSupported   bool               `json:"spotSupported"`
		OnDemandPrice   map[string]float64 `json:"onDemandPrice"`
		SpotPrice       map[string]float64 `json:"spotPrice"`
	} `json:"instanceTypes"`
}

// loadInstanceTypes reads either an array of ec2sim.InstanceTypeInfo or the
// catalog document, taking the catalog's prices for region.
func loadInstanceTypes(path, region string) ([]ec2sim.InstanceTypeInfo, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading instance types: %w", err)
	}
	trimmed := strings.TrimSpace(string(raw))
	if strings.HasPrefix(trimmed, "[") {
		var its []ec2sim.InstanceTypeInfo
		if err := json.Unmarshal(raw, &its); err != nil {
			return nil, fmt.Errorf("parsing %s as []InstanceTypeInfo: %w", path, err)
		}
		return its, nil
	}
	var doc catalogDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parsing %s as a catalog document: %w", path, err)
	}
	if len(doc.InstanceTypes) == 0 {
		return nil, fmt.Errorf("%s has no instanceTypes", path)
	}
	its := make([]ec2sim.InstanceTypeInfo, 0, len(doc.InstanceTypes))
	for _, c := range doc.InstanceTypes {
		spot := c.SpotPrice[region]
		its = append(its, ec2sim.InstanceTypeInfo{
			Name: c.Name, Arch: c.Arch, VCPU: c.VCPU, MemoryMiB: c.MemoryMiB,
			GPUCount: c.GPUCount, GPUName: c.GPUName, GPUManufacturer: c.GPUManufacturer, GPUMemoryMiB: c.GPUMemoryMiB,
			MaxENIs: c.MaxENIs, IPv4PerENI: c.IPv4PerENI, Hypervisor: c.Hypervisor, BareMetal: c.BareMetal,
			OnDemandPrice: c.OnDemandPrice[region], SpotPrice: spot,
			// The catalog never says "no spot"; a spot price in the region is
			// the evidence that spot is offered there.
			SpotSupported: c.SpotSupported && spot > 0,
		})
	}
	return its, nil
}

func loadImages(path string) ([]ec2sim.ImageSpec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading images: %w", err)
	}
	var specs []ec2sim.ImageSpec
	if err := json.Unmarshal(raw, &specs); err != nil {
		return nil, fmt.Errorf("parsing %s as []ImageSpec: %w", path, err)
	}
	return specs, nil
}
