// Package docs checks that the documentation says what the code is.
package docs

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/joist-dev/joist"

// TestArchitecturePackageTable: the package table in docs/architecture.md
// names every package of the module (`go list ./...`, less internal
// packages and the test ground under test/), names none that does not
// exist, and its claim holds: imports go down the table, never up.
func TestArchitecturePackageTable(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := packageTable(t, string(doc))
	pkgs := listPackages(t, root)
	rowOf := func(p string) int {
		for i, patterns := range rows {
			for _, pat := range patterns {
				if ok, _ := path.Match(pat, p); ok {
					return i
				}
			}
		}
		return -1
	}
	listed := map[string]bool{}
	for p := range pkgs {
		listed[p] = true
		if rowOf(p) < 0 {
			t.Errorf("package %s is not in the table of docs/architecture.md", p)
		}
	}
	for _, patterns := range rows {
		for _, pat := range patterns {
			found := false
			for p := range listed {
				if ok, _ := path.Match(pat, p); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("docs/architecture.md names %s, which is no package", pat)
			}
		}
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		for _, imp := range pkgs[p] {
			if _, ours := pkgs[imp]; !ours {
				continue
			}
			if from, to := rowOf(p), rowOf(imp); from >= 0 && to > from {
				t.Errorf("%s (row %d) imports %s (row %d): imports go down the table, never up", p, from+1, imp, to+1)
			}
		}
	}
}

// packageTable reads the rows of the "Packages and import direction"
// table: each row's package patterns (`pkg/apis/*`), top row first.
func packageTable(t *testing.T, doc string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "## Packages and import direction")
	if !ok {
		t.Fatal("docs/architecture.md has no \"Packages and import direction\" section")
	}
	var rows [][]string
	code := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 || strings.Contains(cells[1], "---") || strings.TrimSpace(cells[1]) == "packages" {
			continue
		}
		var patterns []string
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			if !strings.Contains(m[1], " ") { // a package, not a command
				patterns = append(patterns, m[1])
			}
		}
		rows = append(rows, patterns)
	}
	if len(rows) == 0 {
		t.Fatal("the package table of docs/architecture.md has no rows")
	}
	return rows
}

// listPackages is `go list ./...` of the module (its internal packages and
// test/ left out), each with the module packages it imports (tests'
// imports not included).
func listPackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok || strings.HasPrefix(rel, "test/") || strings.Contains("/"+rel+"/", "/internal/") {
			continue
		}
		var imps []string
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				imps = append(imps, r)
			}
		}
		pkgs[rel] = imps
	}
	return pkgs
}
