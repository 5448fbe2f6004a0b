// Command joist is the operator CLI: validate, convert and push specs, list
// what Joist believes about instance types, and plan a workload offline.
//
// Each subcommand lives in its own file and registers itself on rootCmd
// from an init function.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "joist",
	Short:         "Joist: a serverless node autoscaler for Amazon EKS",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// filesFromArgs lets a command that reads files with -f take them as
// arguments too (`joist validate a.yaml b/`, as most tools read files):
// the arguments are added after the -f ones.
func filesFromArgs(files *[]string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		*files = append(*files, args...)
		return nil
	}
}

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	if err := rootCmd.Execute(); err != nil {
		if ee, ok := err.(exitError); ok {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "joist:", err)
		os.Exit(1)
	}
}
