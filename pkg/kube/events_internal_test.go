package kube

import (
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEventName(t *testing.T) {
	pod := EventTarget{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u1"}
	base := eventName(pod, "Normal", "Nominated", "m")
	for _, tc := range []struct {
		name     string
		obj      EventTarget
		typ      string
		reason   string
		message  string
		wantSame bool
	}{
		{"the same event has the same name", pod, "Normal", "Nominated", "m", true},
		{"another message is another event", pod, "Normal", "Nominated", "m2", false},
		{"another reason is another event", pod, "Normal", "Bound", "m", false},
		{"another type is another event", pod, "Warning", "Nominated", "m", false},
		{"a new pod of the same name is another event", EventTarget{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u2"}, "Normal", "Nominated", "m", false},
		{"a pod of the same name elsewhere is another event", EventTarget{Kind: "Pod", Namespace: "prod", Name: "web-0", UID: "u1"}, "Normal", "Nominated", "m", false},
	} {
		got := eventName(tc.obj, tc.typ, tc.reason, tc.message)
		if (got == base) != tc.wantSame {
			t.Errorf("%s: %q vs %q", tc.name, got, base)
		}
		if !strings.HasPrefix(got, tc.obj.Name+".") {
			t.Errorf("%s: %q does not start with the object's name", tc.name, got)
		}
	}
}

func TestEventName_IsAValidNameForAnyObjectName(t *testing.T) {
	for _, name := range []string{
		"a",
		"ip-10-0-1-7.ap-northeast-2.compute.internal",
		strings.Repeat("a", 253),
		strings.Repeat("a", 235) + "-." + strings.Repeat("b", 16), // the cut falls after "-."
	} {
		got := eventName(EventTarget{Kind: "Node", Name: name, UID: "x"}, "Normal", "Launched", "m")
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("object name of %d characters gives %q: %v", len(name), got, errs)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"a short message is kept", "hello", 10, "hello"},
		{"a message of exactly n bytes is kept", "hello", 5, "hello"},
		{"a long message is cut and marked", "hello world", 8, "hello..."},
		{"the cut does not split a rune", "ééééé", 8, "éé..."},
	} {
		got := truncate(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("%s: truncate(%q, %d) = %q, want %q", tc.name, tc.in, tc.n, got, tc.want)
		}
	}
}
