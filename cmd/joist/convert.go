package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/joist-dev/joist/pkg/specs"
)

func init() {
	rootCmd.AddCommand(newConvertCmd())
}

type convertOptions struct {
	files           []string
	recursive       bool
	to              string
	output          string
	instanceProfile string
	role            string
}

func newConvertCmd() *cobra.Command {
	o := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert [-f] FILE|DIR ... --to v1",
		Short: "Rewrite v1alpha5 Provisioners and v1alpha1 AWSNodeTemplates as v1 NodePools and EC2NodeClasses",
		Long: `Rewrite Karpenter v0.20 specs as v1 NodePools and EC2NodeClasses that behave
the same: every default the old APIs applied implicitly (instance
requirements, IMDS hop limit 2, no disruption budget, no expiry) is written
out, since v1's defaults differ. v1 objects pass through unchanged.

The YAML goes to standard output (or -o FILE); a warning for everything
without an exact v1 equivalent goes to standard error. Invalid input is
reported and not converted, and the exit code is then 1.`,
		Args: filesFromArgs(&o.files),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConvert(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "file or folder of YAML/JSON specs (repeatable; - for standard input)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read folders recursively")
	f.StringVar(&o.to, "to", "v1", "API version to convert to (only v1)")
	f.StringVarP(&o.output, "output", "o", "", "write the YAML to this file instead of standard output")
	f.StringVar(&o.instanceProfile, "instance-profile", "", "instance profile for templates that name none (Karpenter's aws.defaultInstanceProfile)")
	f.StringVar(&o.role, "role", "", "node IAM role for templates that name no instance profile (instead of --instance-profile)")
	return cmd
}

func runConvert(stdin io.Reader, stdout, stderr io.Writer, o *convertOptions) error {
	if o.to != "v1" {
		return fmt.Errorf("--to %q: only v1 is supported", o.to)
	}
	objs, problems := specs.ReadFiles(o.files, o.recursive, stdin)
	conv, errs := specs.ConvertToV1(objs, specs.ConvertOptions{InstanceProfile: o.instanceProfile, Role: o.role})
	problems = append(problems, errs...)
	for _, w := range conv.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	out, err := conv.YAML()
	if err != nil {
		return err
	}
	if o.output != "" {
		if err := os.WriteFile(o.output, out, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.output, err)
		}
	} else if _, err := stdout.Write(out); err != nil {
		return err
	}
	if len(problems) > 0 {
		for _, l := range specs.ProblemLines(problems) {
			fmt.Fprintln(stderr, l)
		}
		return exitError{code: 1}
	}
	return nil
}
