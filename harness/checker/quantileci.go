package checker

import "math"

// overheadConfidence is the confidence of the interval the overhead checks
// put around each percentile: a difference of percentiles fails its bound
// only when sampling noise explains it with probability under 1 %.
const overheadConfidence = 0.99

// quantileRanks returns the 1-based ranks lo and hi of the order statistics
// of n samples that bound the q-quantile ξ of the distribution they were
// drawn from, each side with probability at least 1 − (1 − conf)/2:
// X(lo) ≤ ξ and ξ ≤ X(hi). It is distribution-free: the number of samples
// below ξ is Binomial(n, q) (H. A. David and H. N. Nagaraja, Order
// Statistics, 3rd ed., Wiley 2003, §7.1), so lo is the largest k with
// P(Bin(n, q) ≥ k) ≥ 1 − α/2 and hi the smallest k with P(Bin(n, q) < k) ≥
// 1 − α/2, α = 1 − conf. lo is 0 when no sample bounds ξ from below, and
// hi is n+1 when none bounds it from above (too few samples for the
// quantile: the p99.9 of 800 requests). n ≥ 1, 0 < q < 1, 0 < conf < 1.
func quantileRanks(n int, q, conf float64) (lo, hi int) {
	tail := (1 - conf) / 2
	// cdf accumulates P(Bin(n, q) ≤ k) from a k far enough below the mean
	// that the mass below it is negligible (ten standard deviations).
	sd := math.Sqrt(float64(n) * q * (1 - q))
	k0 := max(0, int(float64(n)*q-10*sd-1))
	lgn := lgamma(float64(n) + 1)
	lq, lp := math.Log(q), math.Log1p(-q)
	pmf := func(k int) float64 {
		return math.Exp(lgn - lgamma(float64(k)+1) - lgamma(float64(n-k)+1) + float64(k)*lq + float64(n-k)*lp)
	}
	lo, hi = 0, n+1
	cdf := 0.0 // P(Bin ≤ k-1) at the top of the loop
	for k := k0; k <= n; k++ {
		// X(k+1) ≤ ξ unless at most k samples lie below ξ: P = cdf(k).
		// X(lo) ≤ ξ with probability P(Bin ≥ lo) = 1 − cdf(lo−1).
		if 1-cdf >= 1-tail {
			lo = k
		}
		cdf += pmf(k)
		// ξ ≤ X(k+1) with probability P(Bin ≤ k) = cdf after adding pmf(k).
		if cdf >= 1-tail {
			hi = k + 1
			break
		}
	}
	return lo, hi
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// rankValue is the rank-th smallest of sorted (1-based), to the
// microsecond, and whether the rank lies within it.
func rankValue(sorted []int64, rank int) (int64, bool) {
	if rank < 1 || rank > len(sorted) {
		return 0, false
	}
	return sorted[rank-1], true
}
