package checker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// DefaultResolution is Policy.Resolution's default: the reference limiter
// reads its clock in whole microseconds.
const DefaultResolution = time.Microsecond

// ErrInvalidPolicy is wrapped by every error about a policy description.
var ErrInvalidPolicy = errors.New("invalid policy")

// Policy describes what the checked limiter promised: which limits apply to
// which routes, and what the checker may assume about clocks. The zero value
// has no rules; Check then uses the policies of the history's header.
type Policy struct {
	// Rules maps routes and keys to limits. A record takes the first rule
	// whose Route and Key match its own; a record no rule matches is counted as unmatched and
	// checked only for status hygiene.
	Rules []Rule
	// Resolution is the limiter clock's step: the limiter may see two
	// decision times up to Resolution further apart than they were, and the
	// checker widens every interval by it (NGINX reads its clock in whole
	// milliseconds, Redis TIME in microseconds). 0 means the history
	// header's clock_resolution_ns, else DefaultResolution.
	Resolution time.Duration
	// ClockOffset, when set, is the limiter's clock minus the harness's
	// (header start plus record time), overriding the header's
	// clock_offset_ns; fixed and sliding window counter alignment needs one.
	ClockOffset *time.Duration
	// ClockUncertainty is the half-width of the interval around ClockOffset
	// that holds the true offset; used only with ClockOffset.
	ClockUncertainty time.Duration
	// TrustDecisionTime narrows each request's [sent, received] to the
	// decision time the target reported (the record's decision_us), mapped
	// to the harness clock through the clock offset and widened by its
	// uncertainty and Resolution; a report outside [sent, received] is
	// ignored. Proofs then rest on the target's word. Needs a known clock
	// offset; off by default.
	TrustDecisionTime bool
	// QueueSlack is the longest a leaky bucket as a queue may take from an
	// admitted request's slot to its answer (the handler's and the
	// network's time), judged only where a decision time is reported. 0
	// means DefaultQueueSlack.
	QueueSlack time.Duration
	// FreshKeys says whether every key began the history with a full
	// budget, unknown to the limiter. When false (fixed keys or keys from a
	// file against a limiter that outlives runs), a key's state is taken as
	// unknown until an idle gap of a full refill, or for aligned windows
	// the first window after its first request: the false-rejection check,
	// the Retry-After upper bound and the RateLimit remaining lower bound
	// judge only the requests after it. nil means the header's
	// identities_fresh, and true when the header does not say.
	FreshKeys *bool
	// ExpectedStatuses lists 5xx statuses that are part of the declared
	// behaviour (a fail-closed 503); any other 5xx fails the status check.
	ExpectedStatuses []int
	// Faults, when set, describes the faults of a drill: requests during a
	// fault and its recovery are judged by the fault checks, not the budget.
	Faults *runrecord.Drill
	// MaxExcess is the most units per key the budget check tolerates above
	// a limit's bound before it fails (a scenario's
	// checks.budget.max_excess): the budget fails when some key's requests
	// admitted in one interval exceed the interval's allowance by more than
	// MaxExcess units. 0 tolerates no excess.
	MaxExcess int64
	// MaxFalseRejectionRate is the fraction of a rule's requests that may
	// be false rejections (rejections the ideal limiter would have
	// admitted under every timing) before the false-rejection check fails
	// (a scenario's checks.false_rejections.max_rate), in [0, 1]: with N
	// requests under the rule, up to ⌊MaxFalseRejectionRate·N⌋ pass. 0
	// tolerates none.
	MaxFalseRejectionRate float64
	// SkipHeaderChecks leaves out the checks of the rate-limit headers
	// (retry-after, ratelimit-fields and header-style), as a scenario's
	// checks.headers: false asks; the report says so in a note.
	SkipHeaderChecks bool

	// MemoryBudget bounds, in bytes, what Check holds of a history: half
	// for the records read, in a compact form (about 40 bytes each), beyond
	// which they go to a temporary file; half for the partitions under
	// check, one per core, at about 320 bytes a record. A key's records
	// are checked together, so a key holding more than a core's share
	// takes what it needs. 0 means DefaultMemoryBudget.
	MemoryBudget int64
	// TempDir is the directory of that temporary file, which Check removes
	// before it returns (on Unix at once, so that a killed process leaves
	// none behind); "" means the system's (os.TempDir, $TMPDIR).
	TempDir string
}

// Rule applies Limits to the requests of matching routes and keys. A
// request must pass every limit (multi-limit policies are checked limit by
// limit).
type Rule struct {
	// Route is matched against a record's route: "" matches every route, a
	// trailing "*" matches by prefix, anything else must be equal.
	Route string
	// Key is matched against a record's key the same way (a plan's keys
	// sharing a prefix, say); "" matches every key.
	Key string
	// Cost, when above 0, is the cost of every matching request, replacing
	// the recorded one (for histories that lack costs, such as vegeta's).
	Cost int64
	// Limits are the limits in force (ParseLimit reads them from the policy
	// syntax). A limit declaring a lease must be the rule's only one
	// (LeaseAlone).
	Limits []Limit
	// Tolerance, in units as a fraction of each limit's capacity, loosens the
	// budget bound and the false-rejection test for approximate algorithms:
	// 0.1 on a burst of 100 allows 10 units more than the model and calls a
	// rejection false only when 10 units more would still have fit. Zero for
	// exact algorithms.
	Tolerance float64
}

// match reports whether s matches pattern: "" matches everything, a
// trailing "*" matches by prefix, anything else must be equal.
func match(pattern, s string) bool {
	switch {
	case pattern == "":
		return true
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(s, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == s
}

// PolicyFromHeader builds the rules a history's header declares, parsing
// each limit with ParseLimit. Errors wrap ErrInvalidPolicy and name the
// header's policies[i] at fault.
func PolicyFromHeader(h history.Header) (Policy, error) {
	var p Policy
	for i, rp := range h.Policies {
		rule := Rule{Route: rp.Route, Key: rp.Key}
		for _, spec := range rp.Limits {
			l, err := ParseLimit(spec)
			if err != nil {
				return Policy{}, fmt.Errorf("header policies[%d]: %w", i, err)
			}
			rule.Limits = append(rule.Limits, l)
		}
		p.Rules = append(p.Rules, rule)
	}
	return p, nil
}

// maxResolution bounds Policy.Resolution: a limiter's clock steps at most
// a second.
const maxResolution = time.Second

// validate reports the first field of p outside the ranges the checks'
// arithmetic holds for: a resolution in [0, 1s], a clock offset and
// uncertainty within history.MaxTimeNs (as a history's header holds them),
// each limit valid with a period of at most history.MaxTimeNs, a lease only
// in a rule of one limit (LeaseAlone), costs and tolerances in range.
func (p *Policy) validate() error {
	const maxTime = time.Duration(history.MaxTimeNs)
	switch {
	case p.Resolution < 0 || p.Resolution > maxResolution:
		return fmt.Errorf("%w: resolution %v is outside [0, %v]", ErrInvalidPolicy, p.Resolution, maxResolution)
	case p.ClockUncertainty < 0 || p.ClockUncertainty > maxTime:
		return fmt.Errorf("%w: clock uncertainty %v is outside [0, %v]", ErrInvalidPolicy, p.ClockUncertainty, maxTime)
	case p.ClockOffset != nil && (*p.ClockOffset < -maxTime || *p.ClockOffset > maxTime):
		return fmt.Errorf("%w: clock offset %v is outside [-%v, %v]", ErrInvalidPolicy, *p.ClockOffset, maxTime, maxTime)
	case p.QueueSlack < 0 || p.QueueSlack > maxTime:
		return fmt.Errorf("%w: queue slack %v is outside [0, %v]", ErrInvalidPolicy, p.QueueSlack, maxTime)
	}
	if p.MaxExcess < 0 {
		return fmt.Errorf("%w: max excess %d is negative", ErrInvalidPolicy, p.MaxExcess)
	}
	if !(p.MaxFalseRejectionRate >= 0 && p.MaxFalseRejectionRate <= 1) {
		return fmt.Errorf("%w: max false-rejection rate %v is outside [0, 1]", ErrInvalidPolicy, p.MaxFalseRejectionRate)
	}
	for i, r := range p.Rules {
		if len(r.Limits) == 0 {
			return fmt.Errorf("%w: rule %d (route %q) has no limits", ErrInvalidPolicy, i, r.Route)
		}
		if r.Cost < 0 {
			return fmt.Errorf("%w: rule %d cost %d is negative", ErrInvalidPolicy, i, r.Cost)
		}
		if !(r.Tolerance >= 0 && r.Tolerance <= 1) { // NaN too
			return fmt.Errorf("%w: rule %d tolerance %v is outside [0, 1]", ErrInvalidPolicy, i, r.Tolerance)
		}
		if j, err := LeaseAlone(r.Limits); err != nil {
			return fmt.Errorf("rule %d (route %q) limit %d: %w", i, r.Route, j, err)
		}
		for _, l := range r.Limits {
			if err := l.Validate(); err != nil {
				return fmt.Errorf("rule %d: %w", i, err)
			}
			if l.Period > maxTime {
				return fmt.Errorf("%w: rule %d: period %v of %s is longer than a history can span (%v)", ErrInvalidPolicy, i, l.Period, l, maxTime)
			}
		}
	}
	return nil
}
