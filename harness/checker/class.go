package checker

// Class says whose conclusion a result is: the limiter's, or the harness's.
// A check the harness could not set up (a generator that fell behind its
// schedule, results lost before the history, a fault never injected, a
// scenario that could not run) says nothing of the limiter, so its failure
// is reported apart from the limiter's: ERROR in the verdict table, a JUnit
// <error> rather than a <failure>, status "error" in summary.json, and exit
// code 3 rather than 1 when no limiter check failed. The zero value means
// "not set"; Result.Whose then derives the class from the check's name.
type Class string

const (
	// ClassLimiter: the result judges the target's limiter (its budget,
	// rejections, headers, latency and behaviour under faults).
	ClassLimiter Class = "limiter"
	// ClassHarness: the result judges whether the harness made a valid
	// test. A latency check that the generator's lag made invalid is the
	// harness's too: its verdict is unknown for the harness's sake, not
	// the limiter's.
	ClassHarness Class = "harness"
)

// CheckCouldRun is the name of the result that stands for a scenario that
// could not run (Redis would not start, an instance would not come up):
// CouldNotRun builds it.
const CheckCouldRun = "run"

// harnessChecks are the checks that judge the harness whatever their
// verdict. The burst-spread results share the load-delivered name.
var harnessChecks = map[string]bool{
	CheckLoadDelivered:   true,
	CheckHistoryComplete: true,
	CheckFaultInjected:   true,
	CheckCouldRun:        true,
}

// ClassOf is the class a check of this name has when its result does not
// say: ClassHarness for load-delivered, history-complete, fault-injected and
// run, ClassLimiter for every other check.
func ClassOf(name string) Class {
	if harnessChecks[name] {
		return ClassHarness
	}
	return ClassLimiter
}

// Whose is r's class: r.Class, or ClassOf(r.Name) when it is unset (a
// summary.json written before the class was recorded).
func (r Result) Whose() Class {
	if r.Class != "" {
		return r.Class
	}
	return ClassOf(r.Name)
}

// classify sets the class of every result that has none.
func classify(results []Result) {
	for i := range results {
		results[i].Class = results[i].Whose()
	}
}

// CouldNotRun is the result of a scenario that could not run because of
// err: a failure of the harness, whose explanation is err's text.
func CouldNotRun(err error) Result {
	return Result{Name: CheckCouldRun, Class: ClassHarness, Verdict: Fail, Unit: "scenario", Explanation: err.Error()}
}

// Status is what a result, a scenario or a run comes to for a gate: its
// verdict together with whose it is.
type Status string

const (
	// StatusPass: every check passed.
	StatusPass Status = "pass"
	// StatusFail: a limiter check failed.
	StatusFail Status = "fail"
	// StatusUnknown: no limiter check failed, and one is unknown (requests
	// of unknown outcome alone decide it).
	StatusUnknown Status = "unknown"
	// StatusError: every limiter check passed, and a harness check did
	// not: the harness could not make a valid test.
	StatusError Status = "error"
	// StatusSkipped: the scenario did not run, for a reason that is no
	// one's failure (a peer limiter this machine lacks).
	StatusSkipped Status = "skipped"
)

// Status is r's verdict with its class: pass; fail or unknown for the
// limiter's; error for a harness result that did not pass.
func (r Result) Status() Status {
	switch {
	case r.Verdict == Pass:
		return StatusPass
	case r.Whose() == ClassHarness:
		return StatusError
	case r.Verdict == Fail:
		return StatusFail
	}
	return StatusUnknown
}

// statusRank orders statuses by precedence: a limiter's failure over its
// unknown verdict, either over the harness's error, any over a pass.
func statusRank(s Status) int {
	switch s {
	case StatusFail:
		return 4
	case StatusUnknown:
		return 3
	case StatusError:
		return 2
	case StatusSkipped:
		return 1
	}
	return 0
}

// StatusOf is the status of a set of results: fail when a limiter check
// failed, else unknown when one is unknown, else error when a harness check
// did not pass, else pass (also for no results).
func StatusOf(results []Result) Status {
	s := StatusPass
	for _, r := range results {
		if rs := r.Status(); statusRank(rs) > statusRank(s) {
			s = rs
		}
	}
	return s
}
