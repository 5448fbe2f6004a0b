// Command infra is Joist's CDK app: it synthesizes JoistStack for one
// cluster into a cloud assembly (cdk.out at the repository root).
//
// It runs two ways, and both must produce the same template:
//
//   - under the CDK CLI (`npx aws-cdk@2 synth|deploy` at the repository
//     root, which runs cdk.json's "app"); the CLI passes context and the
//     output directory through CDK_CONTEXT_JSON and CDK_OUTDIR;
//   - alone (`go run -C infra .` or `cd infra && go run .`), for an offline
//     synth with no CLI at all: the jsii runtime needs Node.js, not the
//     CLI. Then this program reads cdk.json's "context" itself and accepts
//     the CLI's `-c key=value` flags.
//
// Relative paths (the output directory, -c assetDir) are taken from the
// repository root, the directory holding cdk.json, wherever the program
// was started: `go run -C infra` starts it in infra/, so it first changes
// to the root, where the CLI would have started it.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/joist-dev/joist/infra/stack"
)

// stackID is the construct id, and so the artifact and template name in
// cdk.out (JoistStack.template.json) and what `cdk deploy JoistStack` names.
const stackID = "JoistStack"

func main() {
	path, err := run(os.Args[1:])
	// Ends the Node.js child that runs the CDK; os.Exit would skip a defer.
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "joist infra:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "joist infra: wrote", path)
}

// run synthesizes the app for args (the -c flags) and returns the path of
// the template it wrote.
func run(args []string) (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := findRoot(cwd)
	if err != nil {
		return "", err
	}
	// Work from the root, as the CLI does, before the first jsii call
	// starts the Node.js kernel: the kernel resolves CDK_OUTDIR (which
	// the CLI passes relative) and asset paths against its own working
	// directory, which it inherits from this process.
	if err := os.Chdir(root); err != nil {
		return "", err
	}
	flagCtx, err := parseContextFlags(args)
	if err != nil {
		return "", err
	}
	defaults := map[string]interface{}{}
	if _, underCLI := os.LookupEnv("CDK_CONTEXT_JSON"); !underCLI {
		// Alone, nobody else reads cdk.json: its context is the defaults.
		// Under the CLI it is already in CDK_CONTEXT_JSON, which the App
		// reads and which wins over these.
		if defaults, err = readCDKJSONContext(filepath.Join(root, "cdk.json")); err != nil {
			return "", err
		}
	}
	out := outdir(root)
	app := awscdk.NewApp(&awscdk.AppProps{
		Context:        &defaults,
		PostCliContext: &flagCtx,
		Outdir:         jsii.String(out),
	})
	cfg, err := stack.ConfigFromContext(app)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(cfg.AssetDir) {
		cfg.AssetDir = filepath.Join(root, cfg.AssetDir)
	}
	if _, err := stack.New(app, stackID, cfg); err != nil {
		return "", err
	}
	app.Synth(nil)
	return filepath.Join(out, stackID+".template.json"), nil
}

// findRoot walks up from dir to the directory that holds cdk.json.
func findRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no cdk.json in %s or above: run from the Joist repository", dir)
		}
		d = parent
	}
}

// outdir is where the cloud assembly goes: the CLI's CDK_OUTDIR if set
// (the CLI passes it relative to the root, where it runs), else
// <root>/cdk.out, where the CLI would put it.
func outdir(root string) string {
	d := os.Getenv("CDK_OUTDIR")
	if d == "" {
		d = "cdk.out"
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(root, d)
	}
	return d
}

// readCDKJSONContext returns the "context" object of a cdk.json file.
func readCDKJSONContext(path string) (map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Context map[string]interface{} `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if f.Context == nil {
		f.Context = map[string]interface{}{}
	}
	return f.Context, nil
}

// parseContextFlags reads the CDK CLI's context flags, `-c k=v`,
// `--context k=v` and `--context=k=v`, so that a plain `go run . -c
// clusterName=x` means what `cdk synth -c clusterName=x` means.
func parseContextFlags(args []string) (map[string]interface{}, error) {
	ctx := map[string]interface{}{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-c" || a == "--context":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s needs key=value", a)
			}
			i++
			kv = args[i]
		case strings.HasPrefix(a, "--context="):
			kv = strings.TrimPrefix(a, "--context=")
		case strings.HasPrefix(a, "-c="):
			kv = strings.TrimPrefix(a, "-c=")
		default:
			return nil, fmt.Errorf("unknown argument %q (want -c key=value)", a)
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errors.New("context flag " + kv + ": want key=value")
		}
		ctx[k] = v
	}
	return ctx, nil
}
