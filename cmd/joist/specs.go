package main

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"

	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/specstore"
)

func init() {
	rootCmd.AddCommand(newSpecsCmd(nil))
}

type specsPushOptions struct {
	cluster   string
	files     []string
	recursive bool
	region    string
	secure    bool
	prune     bool
	dryRun    bool
}

// newSpecsCmd builds `joist specs`. newClient makes the SSM client; nil
// means the SDK's default configuration (tests pass an emulator's).
func newSpecsCmd(newClient func(ctx context.Context, region string) (specstore.SSMAPI, error)) *cobra.Command {
	if newClient == nil {
		newClient = defaultSSMClient
	}
	cmd := &cobra.Command{
		Use:   "specs",
		Short: "Manage the specs Joist reads from SSM Parameter Store",
	}
	o := &specsPushOptions{}
	push := &cobra.Command{
		Use:   "push --cluster NAME [-f] FILE|DIR ...",
		Short: "Validate specs and store each as an SSM parameter under /joist/NAME/",
		Long: `Validate the specs (as joist validate does) and, only if every one is
valid, write each to the SSM parameter /joist/NAME/<kind>/<name>
(overwriting), where the Joist functions read them. Other Kubernetes
objects in the files are skipped.`,
		Args: filesFromArgs(&o.files),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSpecsPush(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, newClient)
		},
	}
	f := push.Flags()
	f.StringVar(&o.cluster, "cluster", "", "EKS cluster name (required)")
	f.StringSliceVarP(&o.files, "filename", "f", nil, "file or folder of YAML/JSON specs (repeatable; - for standard input)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read folders recursively")
	f.StringVar(&o.region, "region", "", "AWS region (default from the AWS configuration)")
	f.BoolVar(&o.secure, "secure", false, "store as SecureString")
	f.BoolVar(&o.prune, "prune", false, "delete parameters under /joist/NAME/ that the files no longer hold")
	f.BoolVar(&o.dryRun, "dry-run", false, "validate and list the parameters, write nothing")
	_ = push.MarkFlagRequired("cluster")
	cmd.AddCommand(push)
	return cmd
}

func defaultSSMClient(ctx context.Context, region string) (specstore.SSMAPI, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return ssm.NewFromConfig(cfg), nil
}

func runSpecsPush(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o *specsPushOptions, newClient func(context.Context, string) (specstore.SSMAPI, error)) error {
	if ctx == nil {
		ctx = context.Background()
	}
	objs, problems := specs.ReadFiles(o.files, o.recursive, stdin)
	_, errs := specs.Build(objs)
	problems = append(problems, errs...)
	if len(problems) > 0 {
		for _, l := range specs.ProblemLines(problems) {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintln(stderr, "nothing pushed: fix the problems above first")
		return exitError{code: 1}
	}
	if o.dryRun {
		for _, ob := range objs {
			if !ob.Ignored {
				fmt.Fprintln(stdout, "would write", specstore.ParameterName(o.cluster, ob.Kind, ob.Name))
			}
		}
		return nil
	}
	client, err := newClient(ctx, o.region)
	if err != nil {
		return err
	}
	store := &specstore.SSMStore{Client: client, Cluster: o.cluster}
	written, deleted, err := store.Push(ctx, objs, specstore.PushOptions{Secure: o.secure, Prune: o.prune})
	for _, n := range written {
		fmt.Fprintln(stdout, "wrote", n)
	}
	for _, n := range deleted {
		fmt.Fprintln(stdout, "deleted", n)
	}
	return err
}
