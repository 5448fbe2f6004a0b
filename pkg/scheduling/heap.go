package scheduling

// heapOf is a binary heap of values that order themselves (before), kept
// without container/heap's interface boxing: the packer pushes and pops
// millions of small items on large inputs. The growth index and fillPaid's
// candidates both use it.
type heapOf[T interface{ before(T) bool }] []T

// init orders a filled slice into a heap.
func (h heapOf[T]) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *heapOf[T]) push(v T) {
	*h = append(*h, v)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].before(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *heapOf[T]) pop() T {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	*h = a[:n]
	h.down(0)
	return top
}

func (h heapOf[T]) down(i int) {
	for {
		j := 2*i + 1
		if j >= len(h) {
			return
		}
		if k := j + 1; k < len(h) && h[k].before(h[j]) {
			j = k
		}
		if !h[j].before(h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
