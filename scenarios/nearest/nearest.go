// Package nearest suggests the valid word a misspelled one most likely
// meant, for the "did you mean" of strict configuration parsers.
package nearest

import "strings"

// Word returns the word of valid closest to s by Levenshtein distance,
// ignoring case, or "" when none is close enough to be a likely
// misspelling: at most max(2, len(s)/2) edits away.
func Word(s string, valid []string) string {
	best, bestDist := "", -1
	lower := strings.ToLower(s)
	for _, v := range valid {
		if d := Distance(lower, strings.ToLower(v)); bestDist < 0 || d < bestDist {
			best, bestDist = v, d
		}
	}
	if bestDist < 0 || bestDist > max(2, len(s)/2) {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
