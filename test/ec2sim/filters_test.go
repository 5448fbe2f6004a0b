package ec2sim

import "testing"

// The rules are EC2's: * is zero or more characters, ? is zero or one
// (so not path.Match), backslash escapes, and matching is case-sensitive.
func TestPatternMatch(t *testing.T) {
	cases := []struct {
		pattern, value string
		want           bool
	}{
		{"prod", "prod", true},
		{"prod", "production", false},
		{"prod?", "prod", true},
		{"prod?", "prods", true},
		{"prod?", "production", false},
		{"prod*", "production", true},
		{"*", "", true},
		{"*", "anything", true},
		{"", "", true},
		{"", "x", false},
		{"t3.*", "t3.large", true},
		{"t3.*", "t3a.large", false},
		{"*large", "t3.xlarge", true},
		{"ap-northeast-2?", "ap-northeast-2a", true},
		{"a?c", "ac", true},
		{"a?c", "abc", true},
		{"a?c", "abbc", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{`\*amazon\?\\`, `*amazon?\`, true},
		{`\*amazon\?\\`, `xamazon?\`, false},
		{"Hoon", "hoon", false},
		{"日本?", "日本語", true},
	}
	for _, tc := range cases {
		if got := compilePattern(tc.pattern).match(tc.value); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.value, got, tc.want)
		}
	}
}

func TestPaginationTokens(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7}
	page, next := paginate(items, pageRequest{action: "DescribeX", size: 5})
	if len(page) != 5 || next == "" {
		t.Fatalf("first page %v next %q", page, next)
	}
	off, err := decodeToken("DescribeX", next)
	if err != nil || off != 5 {
		t.Fatalf("token decodes to %d, %v", off, err)
	}
	if _, err := decodeToken("DescribeY", next); err == nil {
		t.Error("a token from another action was accepted")
	}
	page, next = paginate(items, pageRequest{action: "DescribeX", size: 5, offset: off})
	if len(page) != 2 || next != "" {
		t.Errorf("last page %v next %q", page, next)
	}
}
