package checker

import (
	"errors"
	"math"
	"testing"
)

// TestPolicyRefusesBadTolerance: a rule's tolerance is a fraction from 0
// to 1; NaN, which compares false with both ends, is refused too.
func TestPolicyRefusesBadTolerance(t *testing.T) {
	l, err := ParseLimit("gcra:10/1s,burst=10")
	if err != nil {
		t.Fatal(err)
	}
	for _, tol := range []float64{0, 0.05, 1} {
		p := Policy{Rules: []Rule{{Limits: []Limit{l}, Tolerance: tol}}}
		if err := p.validate(); err != nil {
			t.Errorf("tolerance %v: %v", tol, err)
		}
	}
	for _, tol := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		p := Policy{Rules: []Rule{{Limits: []Limit{l}, Tolerance: tol}}}
		if err := p.validate(); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("tolerance %v: validate() = %v, want ErrInvalidPolicy", tol, err)
		}
	}
}
