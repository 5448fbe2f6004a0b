package scheduling

import "math"

// pendMin keeps the per-resource minimum of the requests of the classes
// with pods left to place, in a tree over the classes (in solve order):
// a class finishing updates one leaf and its ancestors, and the minimum
// is the root. setMinPending reads it at every placeAt; recomputing it
// from every class there made packing quadratic in classes (5,000
// classes at 50,000 pods: a fifth of the solve).
type pendMin struct {
	n    int     // leaves (a power of two)
	d    int     // dimensions
	t    []int64 // node i's vector at t[i*d : i*d+d]; root is node 1
	done []bool  // done[c.idx]: the class counts no longer
}

// pendingMin is the tree, built on first use from the classes.
func (s *solver) pendingMin() *pendMin {
	if s.pmin != nil {
		return s.pmin
	}
	d := s.dims.n()
	n := 1
	for n < len(s.classes) {
		n *= 2
	}
	p := &pendMin{n: n, d: d, t: make([]int64, 2*n*d), done: make([]bool, len(s.classes))}
	for i := range p.t {
		p.t[i] = math.MaxInt64
	}
	for i, c := range s.classes {
		if c.remaining > 0 && c.err == "" {
			copy(p.t[(n+i)*d:], c.req)
		} else {
			p.done[i] = true
		}
	}
	for i := n - 1; i >= 1; i-- {
		p.pull(i)
	}
	s.pmin = p
	return p
}

// pull sets node i to the minimum of its children.
func (p *pendMin) pull(i int) {
	a, b, o := p.t[2*i*p.d:], p.t[(2*i+1)*p.d:], p.t[i*p.d:]
	for k := 0; k < p.d; k++ {
		o[k] = min(a[k], b[k])
	}
}

// classDone drops a class that has no pods left to place (or can never
// place them).
func (s *solver) classDone(c *class) {
	p := s.pendingMin()
	if p.done[c.idx] {
		return
	}
	p.done[c.idx] = true
	i := p.n + c.idx
	for k := 0; k < p.d; k++ {
		p.t[i*p.d+k] = math.MaxInt64
	}
	for i /= 2; i >= 1; i /= 2 {
		p.pull(i)
	}
}

// root is the minimum over the classes still counted.
func (p *pendMin) root() []int64 { return p.t[p.d : 2*p.d] }
