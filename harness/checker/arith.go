package checker

import (
	"math"
	"math/bits"
)

// Integer arithmetic that cannot overflow, for the models' sums of costs
// (up to history.MaxCost each, any number of them) and the sliding window
// counter's products of a count and a window in nanoseconds.

// satAdd is a + b for a, b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// satMul is a·b for a, b >= 0, saturating at math.MaxInt64.
func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// mulDiv returns floor(p·x/w) and whether the division was exact, for
// p, x >= 0 and w > 0 whose quotient fits an int64 (x <= w, or p < w and
// x < 2^63): the product is kept in 128 bits.
func mulDiv(p, x, w int64) (q int64, exact bool) {
	hi, lo := bits.Mul64(uint64(p), uint64(x))
	quo, rem := bits.Div64(hi, lo, uint64(w)) // hi < w when the quotient fits
	return int64(quo), rem == 0
}

// ceilMulDiv is ceil(p·x/w) under mulDiv's conditions.
func ceilMulDiv(p, x, w int64) int64 {
	q, exact := mulDiv(p, x, w)
	if !exact {
		q++
	}
	return q
}
