package iampolicy

import (
	"fmt"
	"sort"
	"strings"
)

// DocParams are placeholders that stand for a deployment's facts in
// documentation.
var DocParams = Params{
	Partition: "<partition>", Region: "<region>", Account: "<account>", Cluster: "<cluster>",
	NodeRoleARN: "<node-role-arn>", EventBusARN: "<bus-arn>",
}

// Markdown renders every principal's statements as a table per principal,
// for docs/deploy.md (a test keeps the file in step with For).
func Markdown() string {
	var b strings.Builder
	for _, principal := range Principals() {
		pol := MustFor(principal, DocParams)
		fmt.Fprintf(&b, "**%s**", principal)
		if len(pol.Statements) == 0 {
			b.WriteString(": no AWS permissions (besides its queue and its log group).\n\n")
			continue
		}
		b.WriteString("\n\n| Sid | Actions | Resources | Conditions |\n|---|---|---|---|\n")
		for _, s := range pol.Statements {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Sid, code(s.Actions), code(s.Resources), conditions(s.Condition))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func code(v []string) string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, "<br>")
}

func conditions(c Condition) string {
	var out []string
	ops := make([]string, 0, len(c))
	for op := range c {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		keys := make([]string, 0, len(c[op]))
		for k := range c[op] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%s `%s` = %s", op, k, code(c[op][k])))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "<br>")
}
