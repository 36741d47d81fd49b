package checker

import (
	"strconv"
	"strings"
)

// singulars maps the plural nouns that units and counts start with to their
// singular: "units" → "unit".
var singulars = map[string]string{
	"units":       "unit",
	"rejections":  "rejection",
	"admissions":  "admission",
	"responses":   "response",
	"requests":    "request",
	"records":     "record",
	"keys":        "key",
	"faults":      "fault",
	"results":     "result",
	"retries":     "retry",
	"scenarios":   "scenario",
	"errors":      "error",
	"instances":   "instance",
	"checks":      "check",
	"shards":      "shard",
	"directories": "directory",
	"times":       "time",
	"stalls":      "stall",
	"phases":      "phase",
}

// UnitFor is unit as it reads after the number v: when v is exactly 1 or
// -1, its first word in the singular ("1 unit", "1 result dropped",
// "1 retry admitted") or, when the first is no plural noun, its last
// ("1 transport error"); unit unchanged otherwise and for units without a
// plural (ms, × limit).
func UnitFor(v float64, unit string) string {
	if v != 1 && v != -1 {
		return unit
	}
	first, rest, _ := strings.Cut(unit, " ")
	if s, ok := singulars[first]; ok {
		if rest != "" {
			return s + " " + rest
		}
		return s
	}
	if i := strings.LastIndexByte(unit, ' '); i >= 0 {
		if s, ok := singulars[unit[i+1:]]; ok {
			return unit[:i+1] + s
		}
	}
	return unit
}

// Count is n followed by noun, a plural noun (such as "keys" or "requests
// sent"), in the singular when n is 1: "1 key", "3 keys".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + UnitFor(float64(n), noun)
}
