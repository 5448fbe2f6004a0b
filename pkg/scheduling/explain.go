package scheduling

import (
	"fmt"
	"sort"
	"strings"
)

// explain turns why a class could not be placed at its last relaxation
// level into one sentence a user can act on. When every pool fails for the
// same reason the sentence says so once ("no pool tolerates taint
// x=y:NoSchedule", "no instance type has 9 nvidia.com/gpu"); otherwise it
// lists each pool's reason.
func (s *solver) explain(l *level, why string) string {
	if len(s.pools) == 0 {
		return "no node pools"
	}
	type pr struct {
		pool   string
		kind   failKind
		reason string
	}
	var per []pr
	for i, ps := range s.pools {
		cp := l.pools[i]
		if cp.ok {
			r := why
			if r == "" {
				r = s.topologyReason(l)
			}
			per = append(per, pr{ps.pool.Name, failNone, r})
			continue
		}
		per = append(per, pr{ps.pool.Name, cp.kind, s.reasonOf(l, ps, cp)})
	}
	same := func(k failKind) bool {
		for _, p := range per {
			if p.kind != k {
				return false
			}
		}
		return true
	}
	switch {
	case same(failTaint):
		taints := map[string]bool{}
		for _, p := range per {
			taints[strings.TrimSuffix(strings.TrimPrefix(p.reason, "taint "), " not tolerated")] = true
		}
		if len(taints) == 1 {
			for t := range taints {
				return "no pool tolerates taint " + t
			}
		}
		return "no pool tolerates the pod: " + joinPools(per, func(i int) (string, string) { return per[i].pool, per[i].reason })
	case same(failResources):
		amounts := map[string]bool{}
		for _, p := range per {
			amounts[resourcePart(p.reason)] = true
		}
		if len(amounts) == 1 {
			for a := range amounts {
				return "no instance type has " + a
			}
		}
	}
	if len(per) == 1 {
		return per[0].reason
	}
	return joinPools(per, func(i int) (string, string) { return per[i].pool, per[i].reason })
}

func joinPools[T any](per []T, get func(int) (string, string)) string {
	parts := make([]string, len(per))
	for i := range per {
		p, r := get(i)
		parts[i] = fmt.Sprintf("pool %q: %s", p, r)
	}
	return strings.Join(parts, "; ")
}

// resourcePart extracts "9 nvidia.com/gpu" from a tooBig message.
func resourcePart(msg string) string {
	const mark = " has "
	i := strings.Index(msg, mark)
	if i < 0 {
		return msg
	}
	rest := msg[i+len(mark):]
	return strings.TrimSuffix(rest, " free after DaemonSets")
}

// topologyReason names the topology constraints that leave no room.
func (s *solver) topologyReason(l *level) string {
	var parts []string
	for i, g := range l.anti {
		what := "pod anti-affinity"
		if l.antiSelf[i] {
			what = "pod anti-affinity (with its own pods)"
		}
		parts = append(parts, fmt.Sprintf("%s on %s", what, s.keys[g.key].name))
	}
	for _, g := range l.aff {
		if g.total == 0 {
			parts = append(parts, fmt.Sprintf("pod affinity on %s: no pod matches %s", s.keys[g.key].name, g.selector.String()))
		} else {
			parts = append(parts, fmt.Sprintf("pod affinity on %s", s.keys[g.key].name))
		}
	}
	for _, sp := range l.spreads {
		parts = append(parts, fmt.Sprintf("topology spread on %s (maxSkew %d)", s.keys[sp.g.key].name, sp.maxSkew))
	}
	if len(l.cls.invAnti) > 0 {
		parts = append(parts, "anti-affinity of other pods")
	}
	if len(parts) == 0 {
		return "no node can take the pod"
	}
	sort.Strings(parts)
	return "cannot satisfy " + strings.Join(parts, ", ")
}
