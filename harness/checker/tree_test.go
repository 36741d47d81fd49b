package checker

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxTree holds the segment tree to a plain slice under random prefix
// additions and prefix maxima, for sizes around powers of two.
func TestMaxTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 100, 1000} {
		init := make([]int64, n)
		for i := range init {
			init[i] = rng.Int64N(1e12) - 5e11
		}
		var tree maxTree
		for round := range 2 { // the second reuses the storage
			want := append([]int64(nil), init...)
			tree.reset(init)
			for op := range 4 * n {
				k := rng.IntN(n+1) - 1 // -1: the empty prefix
				if op%2 == 0 {
					v := rng.Int64N(1e9) - 1e8
					tree.addPrefix(k, v)
					for i := 0; i <= k; i++ {
						want[i] += v
					}
					continue
				}
				m := int64(math.MinInt64)
				for _, x := range want[:k+1] {
					m = max(m, x)
				}
				if got := tree.maxPrefix(k); got != m {
					t.Fatalf("n=%d round %d op %d: maxPrefix(%d) = %d, want %d", n, round, op, k, got, m)
				}
			}
		}
	}
}
