package scheduling_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestKarpenterCoverageMap keeps testdata/karpenter-coverage.md true: the
// summary table's counts are the rows' (a row whose Joist column starts
// with "not " or "provisioner" is not a plan, not expressible or not
// modelled; every other row is ported or covered), and every "ported:
// TestX (file): case" row names a test function and a case name that
// exist in that file.
func TestKarpenterCoverageMap(t *testing.T) {
	b, err := os.ReadFile("testdata/karpenter-coverage.md")
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ all, ported, not int }
	summary := map[string]counts{}
	rows := map[string]*counts{}
	var order []string
	section := ""
	ported := regexp.MustCompile(`^ported: (Test\w+) \(([\w.]+)\): (.*) \|$`)
	files := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(l, "## "); ok {
			section = s
			rows[section] = &counts{}
			order = append(order, section)
			continue
		}
		cols := strings.Split(l, " | ")
		if section == "" && len(cols) == 4 && strings.HasSuffix(cols[0], "_test.go") {
			all, _ := strconv.Atoi(cols[1])
			p, _ := strconv.Atoi(cols[2])
			n, _ := strconv.Atoi(strings.TrimSuffix(cols[3], " |"))
			summary[strings.TrimPrefix(cols[0], "| ")] = counts{all, p, n}
			continue
		}
		if section == "" || len(cols) < 3 {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimPrefix(cols[0], "| ")); err != nil {
			continue
		}
		joist := strings.Join(cols[2:], " | ")
		c := rows[section]
		c.all++
		if strings.HasPrefix(joist, "not ") || strings.HasPrefix(joist, "provisioner") {
			c.not++
		} else {
			c.ported++
		}
		m := ported.FindStringSubmatch(joist)
		if m == nil {
			continue
		}
		src, ok := files[m[2]]
		if !ok {
			fb, err := os.ReadFile(m[2])
			if err != nil {
				t.Errorf("%s line %s: %v", section, cols[0], err)
				continue
			}
			src = string(fb)
			files[m[2]] = src
		}
		if !strings.Contains(src, "func "+m[1]+"(") {
			t.Errorf("%s %s: %s has no %s", section, cols[0], m[2], m[1])
		}
		if name := m[3]; !strings.Contains(src, strconv.Quote(name)) && !strings.Contains(src, "`"+name+"`") && !strings.Contains(src, `"`+name+`"`) {
			t.Errorf("%s %s: %s has no case %q", section, cols[0], m[2], name)
		}
	}
	total, totalPorted := 0, 0
	for _, s := range order {
		got := *rows[s]
		if summary[s] != got {
			t.Errorf("summary for %s says %+v, the rows count %+v", s, summary[s], got)
		}
		total += got.all
		totalPorted += got.ported
	}
	t.Logf("%d of %d cases ported or covered", totalPorted, total)
}
