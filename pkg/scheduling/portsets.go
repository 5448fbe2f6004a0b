package scheduling

import "fmt"

// Port sets. A node whose host port a class binds is taken cannot take a
// pod of that class, whatever its room: hostports at 50,000 pods has
// thousands of nodes with room for small pods but every port of the
// workload taken, and the paid-room lists and the drains used to look at
// each of them for every class with a port. The indexes (paidroom.go,
// roomy.go) keep one list per set of host ports the classes bind (few:
// Deployments share ports), each without the nodes where one of the set's
// ports is taken; set 0 is the classes binding none.

// portSets numbers the classes' sets of host ports.
type portSets struct {
	of   []int        // by class idx: the class's set
	sets [][]hostPort // by set; sets[0] is nil
}

// newPortSets numbers the distinct sets of host ports of the classes.
func newPortSets(classes []*class) portSets {
	p := portSets{sets: [][]hostPort{nil}}
	n := 0
	for _, c := range classes {
		n = max(n, c.idx+1)
	}
	p.of = make([]int, n)
	var seen map[string]int
	for _, c := range classes {
		if len(c.ports) == 0 {
			continue
		}
		if seen == nil {
			seen = map[string]int{}
		}
		key := fmt.Sprint(c.ports)
		i, ok := seen[key]
		if !ok {
			i = len(p.sets)
			seen[key] = i
			p.sets = append(p.sets, c.ports)
		}
		p.of[c.idx] = i
	}
	return p
}

// blocked tells whether a port of set i is taken on b.
func (p portSets) blocked(i int, b *bin) bool {
	for _, q := range p.sets[i] {
		for _, h := range b.ports {
			if q.conflicts(h) {
				return true
			}
		}
	}
	return false
}

// portSets is newPortSets of the solve's classes, made once (the classes
// and their ports do not change after setup; every growth index and
// round of drains reads them).
func (s *solver) portSets() portSets {
	if s.portSetsMemo == nil {
		p := newPortSets(s.classes)
		s.portSetsMemo = &p
	}
	return *s.portSetsMemo
}
