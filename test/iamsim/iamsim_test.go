package iamsim

import (
	"testing"

	"github.com/joist-dev/joist/pkg/iampolicy"
)

func pol(st ...iampolicy.Statement) iampolicy.Policy { return iampolicy.Policy{Statements: st} }

func allow(sid string, actions, resources []string, c iampolicy.Condition) iampolicy.Statement {
	return iampolicy.Statement{Sid: sid, Effect: iampolicy.Allow, Actions: actions, Resources: resources, Condition: c}
}

func TestEvaluate_AWSRules(t *testing.T) {
	inst := "arn:aws:ec2:us-east-1:000000000000:instance/i-1"
	tagged := iampolicy.Condition{"StringEquals": {"aws:ResourceTag/joist.sh/cluster": {"c1"}}}
	cases := []struct {
		name string
		p    iampolicy.Policy
		r    Request
		want bool
	}{
		{"no statement: implicit deny", pol(), Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"allow matches", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{inst}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, true},
		{"actions are case-insensitive", pol(allow("A", []string{"EC2:terminateinstances"}, []string{"*"}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, true},
		{"action wildcard", pol(allow("A", []string{"ec2:Describe*"}, []string{"*"}, nil)),
			Request{Action: "ec2:DescribeImages", Resource: "*"}, true},
		{"action wildcard does not reach other actions", pol(allow("A", []string{"ec2:Describe*"}, []string{"*"}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"other action: implicit deny", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"resource wildcard per segment", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"arn:aws:ec2:*:*:instance/*"}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, true},
		{"resource of another type", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"arn:aws:ec2:*:*:volume/*"}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"resource in another region", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"arn:aws:ec2:eu-west-1:*:instance/*"}, nil)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"empty account segment matches only empty", pol(allow("A", []string{"ec2:RunInstances"}, []string{"arn:aws:ec2:us-east-1::image/*"}, nil)),
			Request{Action: "ec2:RunInstances", Resource: "arn:aws:ec2:us-east-1:000000000000:image/ami-1"}, false},
		{"explicit deny wins over allow", pol(
			allow("A", []string{"ec2:*"}, []string{"*"}, nil),
			iampolicy.Statement{Sid: "D", Effect: iampolicy.Deny, Actions: []string{"ec2:TerminateInstances"}, Resources: []string{"*"}}),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"condition holds", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"*"}, tagged)),
			Request{Action: "ec2:TerminateInstances", Resource: inst, Keys: map[string][]string{"aws:ResourceTag/joist.sh/cluster": {"c1"}}}, true},
		{"condition key names are case-insensitive", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"*"}, tagged)),
			Request{Action: "ec2:TerminateInstances", Resource: inst, Keys: map[string][]string{"AWS:resourcetag/joist.sh/cluster": {"c1"}}}, true},
		{"condition values are case-sensitive", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"*"}, tagged)),
			Request{Action: "ec2:TerminateInstances", Resource: inst, Keys: map[string][]string{"aws:ResourceTag/joist.sh/cluster": {"C1"}}}, false},
		{"missing key: condition false", pol(allow("A", []string{"ec2:TerminateInstances"}, []string{"*"}, tagged)),
			Request{Action: "ec2:TerminateInstances", Resource: inst}, false},
		{"values are any-of", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"StringEquals": {"ec2:CreateAction": {"CreateFleet", "RunInstances"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst, Keys: map[string][]string{"ec2:CreateAction": {"RunInstances"}}}, true},
		{"keys are all-of", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"StringEquals": {
			"ec2:CreateAction": {"CreateFleet"}, "aws:RequestTag/joist.sh/cluster": {"c1"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst, Keys: map[string][]string{"ec2:CreateAction": {"CreateFleet"}}}, false},
		{"operators are all-of", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{
			"StringEquals": {"ec2:CreateAction": {"CreateFleet"}},
			"StringLike":   {"aws:RequestTag/joist.sh/cluster": {"c*"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst, Keys: map[string][]string{"ec2:CreateAction": {"CreateFleet"}, "aws:RequestTag/joist.sh/cluster": {"x1"}}}, false},
		{"StringLike wildcards", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"StringLike": {"aws:RequestTag/pool": {"gpu-?"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst, Keys: map[string][]string{"aws:RequestTag/pool": {"gpu-a"}}}, true},
		{"negated operator with missing key is true", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"StringNotEquals": {"aws:RequestTag/owner": {"mallory"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst}, true},
		{"negated operator with several values is none-of", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"StringNotEquals": {"aws:RequestedRegion": {"us-east-1", "eu-west-1"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst, Keys: map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}}, false},
		{"IfExists with missing key is true", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"StringEqualsIfExists": {"aws:RequestTag/x": {"y"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst}, true},
		{"IfExists with present key compares", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"StringEqualsIfExists": {"aws:RequestTag/x": {"y"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst, Keys: map[string][]string{"aws:RequestTag/x": {"z"}}}, false},
		{"Null true: key must be absent", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"Null": {"aws:RequestTag/x": {"true"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst, Keys: map[string][]string{"aws:RequestTag/x": {"z"}}}, false},
		{"Null false: key must be present", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"Null": {"aws:RequestTag/x": {"false"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst, Keys: map[string][]string{"aws:RequestTag/x": {"z"}}}, true},
		{"ForAllValues: every tag key allowed", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"ForAllValues:StringEquals": {"aws:TagKeys": {"a", "b"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst, Keys: map[string][]string{"aws:TagKeys": {"a", "c"}}}, false},
		{"ForAllValues with no keys is true", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"ForAllValues:StringEquals": {"aws:TagKeys": {"a"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst}, true},
		{"ForAnyValue: one tag key suffices", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"ForAnyValue:StringEquals": {"aws:TagKeys": {"a"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst, Keys: map[string][]string{"aws:TagKeys": {"c", "a"}}}, true},
		{"ForAnyValue with no keys is false", pol(allow("A", []string{"ec2:CreateTags"}, []string{"*"}, iampolicy.Condition{"ForAnyValue:StringEquals": {"aws:TagKeys": {"a"}}})),
			Request{Action: "ec2:CreateTags", Resource: inst}, false},
		{"ArnLike", pol(allow("A", []string{"iam:PassRole"}, []string{"*"}, iampolicy.Condition{"ArnLike": {"aws:SourceArn": {"arn:aws:eks:*:000000000000:cluster/c1"}}})),
			Request{Action: "iam:PassRole", Resource: "*", Keys: map[string][]string{"aws:SourceArn": {"arn:aws:eks:us-east-1:000000000000:cluster/c1"}}}, true},
		{"unknown operator fails closed", pol(allow("A", []string{"ec2:RunInstances"}, []string{"*"}, iampolicy.Condition{"NumericWeird": {"k": {"1"}}})),
			Request{Action: "ec2:RunInstances", Resource: inst, Keys: map[string][]string{"k": {"1"}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Evaluate(c.p, c.r).Allowed; got != c.want {
				t.Fatalf("Allowed = %v, want %v", got, c.want)
			}
		})
	}
}

func TestEvaluate_ReportsEveryAllowingStatement(t *testing.T) {
	p := pol(
		allow("B", []string{"ec2:RunInstances"}, []string{"*"}, nil),
		allow("A", []string{"ec2:*"}, []string{"*"}, nil),
		allow("C", []string{"ec2:CreateTags"}, []string{"*"}, nil),
	)
	d := Evaluate(p, Request{Action: "ec2:RunInstances", Resource: "*"})
	if !d.Allowed || len(d.AllowedBy) != 2 || d.AllowedBy[0] != "A" || d.AllowedBy[1] != "B" {
		t.Fatalf("decision = %+v, want allowed by A and B", d)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abbb", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"instance/*", "instance/i-1", true},
		{"*/*", "a/b/c", true}, {"ab", "abc", false}, {"", "", true},
	} {
		if got := Glob(c.p, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
