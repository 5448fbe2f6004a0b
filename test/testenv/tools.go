// Package testenv is Joist's local test ground: a real kube-apiserver and
// etcd (envtest), the AWS emulator kumo, Lambda bootstraps under
// aws-lambda-rie, and an SQS event-source poller that behaves like
// Lambda's. Each program is a Go tool of the separate tools module
// (tools/go.mod), built once by `make tools` into bin/tools.
//
// Heavy tests call Kube, Kumo or Lambda; without the tools those skip with
// a message saying how to run them, unless JOIST_REQUIRE_TOOLS=1 (set by
// `make test`, and so in CI), where a missing tool fails the test instead.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot is the repository's top folder, found from this file's path so
// it works from any package's test binary.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ToolsDir is where the test programs are: $JOIST_TOOLS or bin/tools.
func ToolsDir() string {
	if d := os.Getenv("JOIST_TOOLS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin", "tools")
}

// Tool returns the path of a test program, or skips (or fails, under
// JOIST_REQUIRE_TOOLS=1) the test when it has not been built.
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(ToolsDir(), name)
	if _, err := os.Stat(p); err != nil {
		msg := "test program " + name + " not found in " + ToolsDir() + ": run `make tools` once (or `make test`, which builds them) to run this test"
		if os.Getenv("JOIST_REQUIRE_TOOLS") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return p
}
