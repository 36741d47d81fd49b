package checker

import (
	"strconv"
	"strings"
)

// singulars maps the plural nouns that units and counts start with to their
// singular: "units" → "unit".
var singulars = map[string]string{
	"units":      "unit",
	"rejections": "rejection",
	"responses":  "response",
	"requests":   "request",
	"records":    "record",
	"keys":       "key",
	"faults":     "fault",
	"results":    "result",
	"retries":    "retry",
	"scenarios":  "scenario",
	"errors":     "error",
	"instances":  "instance",
	"checks":     "check",
}

// UnitFor is unit as it reads after the number v: its first word in the
// singular when v is exactly 1 or -1 ("1 unit", "1 result dropped",
// "1 retry admitted"), unit unchanged otherwise and for units without a
// plural (ms, × limit).
func UnitFor(v float64, unit string) string {
	if v != 1 && v != -1 {
		return unit
	}
	first, rest, _ := strings.Cut(unit, " ")
	s, ok := singulars[first]
	if !ok {
		return unit
	}
	if rest != "" {
		return s + " " + rest
	}
	return s
}

// Count is n followed by noun, a plural noun (such as "keys" or "requests
// sent"), in the singular when n is 1: "1 key", "3 keys".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + UnitFor(float64(n), noun)
}
