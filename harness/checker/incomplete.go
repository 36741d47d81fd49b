package checker

import "fmt"

// idTally counts, while a history is read, the request ids it holds more
// than once. The generator numbers a run's requests 1, 2, 3, … (a sharded
// run's merged history interleaves its shards' numbers), so a history that
// holds one id twice holds one request twice: a changed file or two
// histories joined. Id 0 (a record that carries none) is not counted. Ids
// up to denseIDs sit in a bit set, any larger one in a map. The zero value
// is empty; an idTally is not safe for concurrent use.
type idTally struct {
	dense  []uint64 // bit id of word id/64
	sparse map[uint64]struct{}
	// dups is the number of records whose id an earlier record holds;
	// first is the first such id, and firstSeen how often it occurs.
	dups      int
	first     uint64
	firstSeen int
}

// denseIDs is the largest id idTally keeps in its bit set (8 MiB of bits).
const denseIDs = 1 << 26

func (t *idTally) add(id uint64) {
	if id == 0 {
		return
	}
	var seen bool
	if id <= denseIDs {
		w, b := id/64, uint64(1)<<(id%64)
		if int(w) >= len(t.dense) {
			n := max(int(w)+1, len(t.dense)+len(t.dense)/2)
			t.dense = append(t.dense, make([]uint64, n-len(t.dense))...)
		}
		seen, t.dense[w] = t.dense[w]&b != 0, t.dense[w]|b
	} else {
		if t.sparse == nil {
			t.sparse = map[uint64]struct{}{}
		}
		_, seen = t.sparse[id]
		t.sparse[id] = struct{}{}
	}
	if !seen {
		return
	}
	t.dups++
	switch {
	case t.dups == 1:
		t.first, t.firstSeen = id, 2
	case id == t.first:
		t.firstSeen++
	}
}

// why is the failure of history-complete for the duplicated ids, naming
// the first and how many, or "" when there is none.
func (t *idTally) why(file string) string {
	if t.dups == 0 {
		return ""
	}
	return fmt.Sprintf("%s holds request id %d %s, and %s whose id an earlier record holds: the same request recorded twice (a changed file, or histories joined); a duplicate counts its admission twice",
		file, t.first, times(t.firstSeen), Count(t.dups, "records"))
}

func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// seeEveryRequest are the limiter checks whose verdict stands only on a
// history that holds every request once: a missing admission makes a
// rejection look false, a Retry-After or a remaining look wrong, a queue's
// answer look late, and hides an excess; a duplicate adds an admission.
// upper marks those that bound admissions from above (budget,
// boundary-burst-ratio, a queue's early releases, counted in units): the
// admissions a history holds once each are real, so their failure stands
// unless an id is duplicated.
var seeEveryRequest = map[string]struct{ upper bool }{
	CheckBudget:          {upper: true},
	CheckBurstRatio:      {upper: true},
	CheckQueueDelay:      {upper: true},
	CheckFalseRejections: {},
	CheckRetryAfter:      {},
	CheckRateLimitFields: {},
}

// unproven makes the verdicts of the checks that must see every request
// Unknown, and the harness's, when the history is incomplete: gap says how
// (history-complete's short form), and dups whether an id is duplicated.
// A pass could hide a failure among the missing requests and a failure of
// a lower bound could come from them; a failure of an upper bound
// (seeEveryRequest) stands while no id is duplicated. An Unknown verdict
// is left as it is: the limiter's requests of unknown outcome already
// leave it open.
func unproven(results []Result, gap string, dups bool) {
	for i := range results {
		r := &results[i]
		c, ok := seeEveryRequest[r.Name]
		if !ok || r.Verdict == Unknown {
			continue
		}
		if r.Name == CheckQueueDelay && r.Unit != "units" {
			c.upper = false // a late answer: a missing admission moves slots earlier
		}
		if r.Verdict == Fail && c.upper && !dups {
			continue
		}
		why := "a missing admission can make a rejection look false"
		switch {
		case c.upper && dups:
			why = "a duplicated request counts its admission twice, and a missing admission can hide an excess"
		case c.upper:
			why = "a missing admission can hide an excess"
		case dups:
			why = "a duplicated request counts its admission twice, and a missing admission can make a rejection look false"
		}
		r.Verdict, r.Class = Unknown, ClassHarness
		r.Explanation = fmt.Sprintf("the history is incomplete (%s): %s; as read: %s", gap, why, r.Explanation)
	}
}
