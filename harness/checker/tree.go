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
	rank       []int32 // by request: its sent time's position in vals (sentRanks)
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

// sentRanks is distinctSent, and sets the rank of each request i of idx
// to the position of its sent time in vals (rank grows to reqs' length):
// what indexOf(vals, reqs[i].sent) returns, without a search.
func sentRanks(reqs []request, idx []int32, vals []int64, rank []int32) ([]int64, []int32) {
	vals = vals[:0]
	if len(rank) < len(reqs) {
		rank = make([]int32, len(reqs))
	}
	for _, i := range idx {
		if s := reqs[i].sent; len(vals) == 0 || vals[len(vals)-1] != s {
			vals = append(vals, s)
		}
		rank[i] = int32(len(vals) - 1)
	}
	return vals, rank
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
// i at size+i), each inner node p keeping the additions made to its whole
// subtree (lz[p]) and the maximum of its subtree with the additions at p
// and below (mx[p] = max(mx[2p], mx[2p+1]) + lz[p]). Both operations walk
// the path from the root to the prefix's last leaf, taking in (or adding
// to) the left sibling of every right turn.
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

// addPrefix adds v to leaves 0..r inclusive; nothing when r < 0.
func (t *maxTree) addPrefix(r int, v int64) {
	if r < 0 || t.n == 0 {
		return
	}
	mx, lz := t.mx, t.lz
	p := 1
	for s := t.h - 1; s >= 0; s-- {
		p *= 2
		if r>>s&1 == 1 { // the left sibling lies wholly within the prefix
			mx[p] += v
			if p < t.size {
				lz[p] += v
			}
			p++
		}
	}
	mx[p] += v
	for p > 1 {
		p >>= 1
		mx[p] = max(mx[2*p], mx[2*p+1]) + lz[p]
	}
}

// maxPrefix returns the maximum of leaves 0..r inclusive, math.MinInt64
// when r < 0.
func (t *maxTree) maxPrefix(r int) int64 {
	m := int64(math.MinInt64)
	if r < 0 || t.n == 0 {
		return m
	}
	mx, lz := t.mx, t.lz
	var above int64 // the additions at the ancestors of p
	p := 1
	for s := t.h - 1; s >= 0; s-- {
		above += lz[p]
		p *= 2
		if r>>s&1 == 1 {
			m = max(m, mx[p]+above)
			p++
		}
	}
	return max(m, mx[p]+above)
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
