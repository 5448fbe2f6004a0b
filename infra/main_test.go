package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/joist-dev/joist/infra/stack"
)

func TestMain(m *testing.M) {
	// The machine's Node.js 20 makes the jsii runtime print a large
	// end-of-life banner on every start; it says nothing about the code.
	if os.Getenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION") == "" {
		os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	}
	os.Exit(m.Run())
}

func TestParseContextFlags(t *testing.T) {
	got, err := parseContextFlags([]string{"-c", "clusterName=a", "--context", "region=eu-west-1", "--context=specSource=crd", "-c", "clusterCA=YQ=="})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{"clusterName": "a", "region": "eu-west-1", "specSource": "crd", "clusterCA": "YQ=="}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range [][]string{{"-c"}, {"-c", "novalue"}, {"-c", "=x"}, {"synth"}} {
		if _, err := parseContextFlags(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFindRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "infra", "stack")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := findRoot(deep); err == nil {
		t.Errorf("found a root without cdk.json")
	}
	if err := os.WriteFile(filepath.Join(root, "cdk.json"), []byte(`{"app":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := findRoot(deep)
	if err != nil || got != root {
		t.Errorf("findRoot = %q, %v; want %q", got, err, root)
	}
	ctx, err := readCDKJSONContext(filepath.Join(root, "cdk.json"))
	if err != nil || len(ctx) != 0 {
		t.Errorf("context of a cdk.json without one = %v, %v", ctx, err)
	}
}

// TestRepoCDKJSON keeps the repository's cdk.json runnable from the root
// and its defaults those of the seed cluster.
func TestRepoCDKJSON(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		App     string                 `json:"app"`
		Context map[string]interface{} `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.App != "go run -C infra ." {
		t.Errorf("app = %q", f.App)
	}
	if f.Context[stack.CtxClusterName] != "hoon-cluster" || f.Context[stack.CtxRegion] != "ap-northeast-2" {
		t.Errorf("default context = %v", f.Context)
	}
}

// TestRun synthesizes the way `make synth` does without the CDK CLI: the
// defaults from cdk.json, flags on top, the cloud assembly in CDK_OUTDIR.
func TestRun(t *testing.T) {
	assets := t.TempDir()
	for _, name := range stack.FunctionNames {
		p := filepath.Join(assets, name, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(".") // run changes to the repository root; come back after.
	t.Setenv("CDK_CONTEXT_JSON", "")
	os.Unsetenv("CDK_CONTEXT_JSON")

	for _, c := range []struct {
		args    []string
		cluster string
	}{
		{[]string{"-c", "assetDir=" + assets}, "hoon-cluster"},
		{[]string{"-c", "assetDir=" + assets, "-c", "clusterName=other"}, "other"},
	} {
		out := t.TempDir()
		t.Setenv("CDK_OUTDIR", out)
		path, err := run(c.args)
		if err != nil {
			t.Fatalf("run(%q): %v", c.args, err)
		}
		if path != filepath.Join(out, "JoistStack.template.json") {
			t.Errorf("template at %s, want in %s", path, out)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tpl struct {
			Resources map[string]struct {
				Type       string
				Properties map[string]interface{}
			}
		}
		if err := json.Unmarshal(b, &tpl); err != nil {
			t.Fatal(err)
		}
		var buses []interface{}
		for _, r := range tpl.Resources {
			if r.Type == "AWS::Events::EventBus" {
				buses = append(buses, r.Properties["Name"])
			}
		}
		if want := []interface{}{"joist-" + c.cluster}; !reflect.DeepEqual(buses, want) {
			t.Errorf("run(%q): buses %v, want %v", c.args, buses, want)
		}
	}

	if _, err := run([]string{"-c", "assetDir=" + t.TempDir()}); err == nil {
		t.Errorf("run with an empty asset directory succeeded")
	}
}
