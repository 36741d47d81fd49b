package checker

import (
	"regexp"
	"testing"
)

// Explanations count in the singular where the count is one.
func TestExplanationsSingular(t *testing.T) {
	var h hist
	h.add("k", 0, ms(1), adm, header("ratelimit-limit", "5"), header("ratelimit-remaining", "4"))
	h.add("k", ms(2000), ms(2001), rej, retryAfter(1)) // a false rejection
	h.add("k", ms(3000), ms(3001), unk)
	rep := h.check(t, "gcra:1/1s,burst=5")
	plural := regexp.MustCompile(`\b1 (units|requests|rejections|responses|admissions|transport errors)\b`)
	want := map[string]string{
		CheckBudget:          "1 unit ",
		CheckFalseRejections: "1 of 1 rejection ",
		CheckRetryAfter:      "1 rejection, each with an honest Retry-After",
		CheckRateLimitFields: "1 response with RateLimit fields",
		CheckStatus:          "1 transport error, 1 request of unknown outcome",
	}
	for _, r := range rep.Results {
		if plural.MatchString(r.Explanation) {
			t.Errorf("%s: %q counts one in the plural", r.Name, r.Explanation)
		}
		if w, ok := want[r.Name]; ok && !regexp.MustCompile(regexp.QuoteMeta(w)).MatchString(r.Explanation) {
			t.Errorf("%s: %q lacks %q", r.Name, r.Explanation, w)
		}
	}
}
