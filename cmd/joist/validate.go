package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/featuregates"
	"github.com/joist-dev/joist/pkg/specs"
)

func init() {
	rootCmd.AddCommand(newValidateCmd())
}

type validateOptions struct {
	files        []string
	recursive    bool
	featureGates string
}

func newValidateCmd() *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [-f] FILE|DIR ...",
		Short: "Check Provisioners, AWSNodeTemplates, NodePools and EC2NodeClasses as Karpenter would",
		Long: `Decode, default and validate spec files with every rule Karpenter's webhooks
and CRD schemas enforced, and check that each pool's node class exists.
Other Kubernetes objects in the files (Deployments, say) are ignored.

Prints every problem, one per line, and exits 1 if there is any; otherwise
prints a short summary and exits 0.`,
		Args: filesFromArgs(&o.files),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "file or folder of YAML/JSON specs (repeatable; - for standard input)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read folders recursively")
	featureGatesFlag(f, &o.featureGates)
	return cmd
}

func runValidate(stdin io.Reader, stdout, stderr io.Writer, o *validateOptions) error {
	gates, err := featuregates.Parse(o.featureGates)
	if err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	objs, problems := specs.ReadFiles(o.files, o.recursive, stdin)
	spec, errs := specs.Build(objs)
	problems = append(problems, errs...)
	if len(problems) > 0 {
		lines := specs.ProblemLines(problems)
		for _, l := range lines {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintf(stderr, "invalid: %d problem(s)\n", len(lines))
		return exitError{code: 1}
	}
	// A v1beta1 pool is read as the v1 pool it converts to; say so.
	beta := map[string]bool{}
	for _, ob := range objs {
		if !ob.Ignored && ob.Kind == specs.KindNodePool && strings.HasSuffix(ob.APIVersion, "/v1beta1") {
			beta[ob.Name] = true
		}
	}
	var pools, classes []string
	for _, p := range spec.Pools {
		api := p.API
		if beta[p.Name] {
			api = "v1beta1, read as v1"
		}
		if p.Replicas != nil {
			api += fmt.Sprintf(", static: %d nodes", p.StaticTarget())
		}
		pools = append(pools, p.Name+" ("+api+")")
	}
	for name := range spec.NodeClasses {
		classes = append(classes, name)
	}
	sort.Strings(classes)
	ignored := 0
	for _, ob := range objs {
		if ob.Ignored {
			ignored++
		}
	}
	fmt.Fprintf(stdout, "OK: %d pool(s): %s; %d node class(es): %s", len(pools), strings.Join(pools, ", "), len(classes), strings.Join(classes, ", "))
	if len(spec.Overlays) > 0 {
		var overlays []string
		for _, ov := range spec.Overlays {
			overlays = append(overlays, fmt.Sprintf("%s (weight %d)", ov.Name, ov.Weight))
		}
		fmt.Fprintf(stdout, "; %d node overlay(s): %s", len(overlays), strings.Join(overlays, ", "))
	}
	if ignored > 0 {
		fmt.Fprintf(stdout, "; %d other object(s) ignored", ignored)
	}
	fmt.Fprintln(stdout)
	// Valid, as Karpenter's CRDs admit them, but not launched from.
	spec = spec.WithNodeClassCEL(gates.NodeClassCEL)
	for _, p := range spec.Pools {
		if nc := spec.NodeClasses[p.NodeClass]; nc != nil {
			if why := catalog.KubeletNotReady(nc, p.Kubelet); why != "" {
				fmt.Fprintf(stderr, "warning: pool %q will not launch nodes: %s\n", p.Name, why)
			}
		}
	}
	return nil
}

// featureGatesFlag is --feature-gates: Karpenter's FEATURE_GATES, as the
// functions read it (featuregates.Parse).
func featureGatesFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "feature-gates", "", "Karpenter's FEATURE_GATES (Name=true, comma-separated; the functions' JOIST_FEATURE_GATES): NodeClassCEL=true evaluates kubelet settings given as CEL expressions per instance type")
}
