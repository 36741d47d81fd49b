package checker

import (
	"cmp"
	"math"
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
// prefix of the leaves and querying the maximum of a prefix, both in
// O(log n) without recursion: a perfect binary tree stored bottom-up (leaf
// i at size+i), each node holding the maximum of its subtree plus the
// additions pending at it (lz, for inner nodes), pushed down the two
// boundary paths before a query (the "efficient segment tree" layout).
type maxTree struct {
	n, size, h int
	mx, lz     []int64
}

// padLeaf fills the leaves past n, which no prefix reaches.
const padLeaf = math.MinInt64 / 4

// reset prepares t for the leaves init, reusing its storage.
func (t *maxTree) reset(init []int64) {
	t.n = len(init)
	size, h := 1, 0
	for size < t.n {
		size <<= 1
		h++
	}
	t.size, t.h = size, h
	if cap(t.mx) < 2*size {
		t.mx, t.lz = make([]int64, 2*size), make([]int64, size)
	}
	t.mx, t.lz = t.mx[:2*size], t.lz[:size]
	clear(t.lz)
	copy(t.mx[size:], init)
	for i := size + t.n; i < 2*size; i++ {
		t.mx[i] = padLeaf
	}
	for p := size - 1; p >= 1; p-- {
		t.mx[p] = max(t.mx[2*p], t.mx[2*p+1])
	}
}

// apply adds v to the subtree of node p.
func (t *maxTree) apply(p int, v int64) {
	t.mx[p] += v
	if p < t.size {
		t.lz[p] += v
	}
}

// rebuild recomputes the ancestors of node p from their children.
func (t *maxTree) rebuild(p int) {
	for p > 1 {
		p >>= 1
		t.mx[p] = max(t.mx[2*p], t.mx[2*p+1]) + t.lz[p]
	}
}

// push moves the additions pending at the ancestors of node p to their
// children, from the root down.
func (t *maxTree) push(p int) {
	for s := t.h; s > 0; s-- {
		i := p >> s
		if v := t.lz[i]; v != 0 {
			t.apply(2*i, v)
			t.apply(2*i+1, v)
			t.lz[i] = 0
		}
	}
}

// add adds v to leaves l..r inclusive (l must be 0: every sweep adds to a
// prefix); nothing when r < l.
func (t *maxTree) add(l, r int, v int64) {
	if l > r || t.n == 0 {
		return
	}
	lo, hi := l+t.size, r+1+t.size
	l0, r0 := lo, hi-1
	for ; lo < hi; lo, hi = lo>>1, hi>>1 {
		if lo&1 == 1 {
			t.apply(lo, v)
			lo++
		}
		if hi&1 == 1 {
			hi--
			t.apply(hi, v)
		}
	}
	t.rebuild(l0)
	t.rebuild(r0)
}

// max returns the maximum of leaves l..r inclusive; l <= r.
func (t *maxTree) max(l, r int) int64 {
	lo, hi := l+t.size, r+1+t.size
	t.push(lo)
	t.push(hi - 1)
	m := int64(math.MinInt64)
	for ; lo < hi; lo, hi = lo>>1, hi>>1 {
		if lo&1 == 1 {
			m = max(m, t.mx[lo])
			lo++
		}
		if hi&1 == 1 {
			hi--
			m = max(m, t.mx[hi])
		}
	}
	return m
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
