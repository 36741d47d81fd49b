package checker

import (
	"cmp"
	"slices"
)

// The sweeps' storage and sorted-slice helpers, shared by every model.

// scratch is storage reused across key groups.
type scratch struct {
	a, b, c, d []int32
	vals       []int64
	cnt, str   []int64
	tree       maxTree
	fw         fenwick
}

// costOf is the total cost of the requests idx, saturating at
// math.MaxInt64 (2^23 requests of history.MaxCost reach it).
func costOf(reqs []request, idx []int32) int64 {
	var s int64
	for _, i := range idx {
		s = satAdd(s, reqs[i].cost)
	}
	return s
}

// indexOf returns the position of the last value <= x in sorted vals, or -1.
func indexOf(vals []int64, x int64) int {
	pos, found := slices.BinarySearch(vals, x)
	if found {
		return pos
	}
	return pos - 1
}

// distinctSent fills vals with the distinct sent times of idx (sorted by sent).
func distinctSent(reqs []request, idx []int32, vals []int64) []int64 {
	vals = vals[:0]
	for _, i := range idx {
		if s := reqs[i].sent; len(vals) == 0 || vals[len(vals)-1] != s {
			vals = append(vals, s)
		}
	}
	return vals
}

// sortByRecv orders idx by received time.
func sortByRecv(reqs []request, idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(reqs[a].recv, reqs[b].recv) })
}

// lowerIndex returns the position of the first value >= x in sorted vals.
func lowerIndex(vals []int64, x int64) int {
	pos, _ := slices.BinarySearch(vals, x)
	return pos
}

// maxTree is a segment tree over int64 leaves supporting adding a value to a
// range of leaves and querying the maximum of a range, both in O(log n).
type maxTree struct {
	n      int
	mx, lz []int64
}

// reset prepares t for the leaves init, reusing its storage.
func (t *maxTree) reset(init []int64) {
	t.n = len(init)
	size := 1
	for size < t.n {
		size <<= 1
	}
	if cap(t.mx) < 2*size {
		t.mx, t.lz = make([]int64, 2*size), make([]int64, 2*size)
	}
	t.mx, t.lz = t.mx[:2*size], t.lz[:2*size]
	clear(t.lz)
	if t.n > 0 {
		t.build(1, 0, t.n-1, init)
	}
}

func (t *maxTree) build(node, lo, hi int, init []int64) {
	if lo == hi {
		t.mx[node] = init[lo]
		return
	}
	mid := (lo + hi) / 2
	t.build(2*node, lo, mid, init)
	t.build(2*node+1, mid+1, hi, init)
	t.mx[node] = max(t.mx[2*node], t.mx[2*node+1])
}

// add adds v to leaves l..r inclusive.
func (t *maxTree) add(l, r int, v int64) {
	if l > r || t.n == 0 {
		return
	}
	t.addRec(1, 0, t.n-1, l, r, v)
}

func (t *maxTree) addRec(node, lo, hi, l, r int, v int64) {
	if l <= lo && hi <= r {
		t.mx[node] += v
		t.lz[node] += v
		return
	}
	mid := (lo + hi) / 2
	if l <= mid {
		t.addRec(2*node, lo, mid, l, r, v)
	}
	if r > mid {
		t.addRec(2*node+1, mid+1, hi, l, r, v)
	}
	t.mx[node] = max(t.mx[2*node], t.mx[2*node+1]) + t.lz[node]
}

// max returns the maximum of leaves l..r inclusive; l <= r.
func (t *maxTree) max(l, r int) int64 {
	return t.maxRec(1, 0, t.n-1, l, r)
}

func (t *maxTree) maxRec(node, lo, hi, l, r int) int64 {
	if l <= lo && hi <= r {
		return t.mx[node]
	}
	mid := (lo + hi) / 2
	var m int64
	switch {
	case r <= mid:
		m = t.maxRec(2*node, lo, mid, l, r)
	case l > mid:
		m = t.maxRec(2*node+1, mid+1, hi, l, r)
	default:
		m = max(t.maxRec(2*node, lo, mid, l, r), t.maxRec(2*node+1, mid+1, hi, l, r))
	}
	return m + t.lz[node]
}

// fenwick is a binary indexed tree of int64 sums over positions 0..n-1.
type fenwick struct{ t []int64 }

func (f *fenwick) reset(n int) {
	if cap(f.t) < n+1 {
		f.t = make([]int64, n+1)
	}
	f.t = f.t[:n+1]
	clear(f.t)
}

// add adds v at position i.
func (f *fenwick) add(i int, v int64) {
	for i++; i < len(f.t); i += i & -i {
		f.t[i] += v
	}
}

// prefix returns the sum of positions 0..i inclusive (0 for i < 0).
func (f *fenwick) prefix(i int) int64 {
	var s int64
	for i++; i > 0; i -= i & -i {
		s += f.t[i]
	}
	return s
}

// lowerBound returns the smallest position whose prefix sum is at least
// target, or n when there is none. Every stored value must be non-negative.
func (f *fenwick) lowerBound(target int64) int {
	n := len(f.t) - 1
	if target <= 0 {
		return 0
	}
	pos, step := 0, 1
	for step*2 <= n {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if next := pos + step; next <= n && f.t[next] < target {
			pos = next
			target -= f.t[next]
		}
	}
	return pos // 0-based index of the position reaching target
}
