// Package peers holds the scenarios that run peer limiters (package
// harness/peers) instead of the sample API, one file each, embedded so that
// `rlbench mutate --repeat-reference` runs them from any directory. They are
// kept apart from the shipped scenarios, which `rlbench list` and `rlbench
// run NAME` serve; `rlbench run scenarios/peers/` runs them from a checkout.
package peers

import (
	"embed"
	"fmt"
	"io/fs"

	"github.com/rlbench/rlbench/scenarios"
)

//go:embed *.yaml
var files embed.FS

// Findings names, per peer scenario whose peer does not keep the policy
// claimed for it, the checks that may fail because it does not: the
// findings README's table reports. A run that fails only these checks shows
// the finding again; a failure of any other check is a false alarm.
//
// peer-express: express-rate-limit documents a fixed window, but its Redis
// store opens each key's window at the key's first hit, so an aligned
// window holds more than the limit (budget), and the rejections,
// Retry-After values and RateLimit fields describe its own window, not
// the claimed one. (Claimed as fixed_window:10/5s,start=first it passes.)
//
// peer-flask-limiter-fixed, peer-flask-limiter-redis-kill: Flask-Limiter
// sends Retry-After int(reset − now), rounded down: 0 in a window's last
// second; and it reads the headers' counts after its decision, so a
// rejection as the window expires may say the whole limit remains.
//
// peer-fastify-redis-kill: a request decided within a millisecond of its
// window's end gets Retry-After Math.ceil(PTTL/1000) = 0; a Redis command
// slower than the 50 ms command timeout on a busy machine skips the
// limiter (skipOnError) and reports the whole limit remaining.
//
// peer-flask-limiter-moving: Retry-After is the whole window, and
// X-RateLimit-Remaining says 0 with room left.
//
// peer-haproxy, peer-haproxy-two: denied requests count in the rate, so a
// key over it is denied while it keeps sending; no Retry-After; two
// processes keep two tables, a budget each.
//
// peer-httprate: it rounds the weighted count to the nearest whole, one
// request over or a rejection with room; Retry-After is the whole window.
//
// peer-go-limiter: Retry-After and X-RateLimit-Reset are RFC 1123 dates
// in UTC, not HTTP-dates, so neither the retry-after check nor the
// header-style check can read them, and the RateLimit fields check judges
// no response in full (unknown: its limit and remaining are as the model
// allows, its reset unread). (Its windows, on the grid of each key's first
// request, are claimed as such, start=first-grid: the budget passes.)
//
// peer-rate-limiter-flexible-redis-kill: a Redis command slower than the
// 50 ms command timeout on a busy machine is answered by the insurance
// limiter, whose remaining count is its own process's, not Redis's.
//
// peer-ulule-limiter-redis-kill: its default ErrorHandler panics on a
// store error and net/http drops the connection, so no request during the
// outage gets the 503 the declared fail-closed mode promises, nor any
// answer (fault-latency), and some right after the heal get none either
// (status).
var Findings = map[string][]string{
	"peer-express":                          {"budget", "boundary-burst-ratio", "false-rejections", "retry-after", "ratelimit-fields"},
	"peer-flask-limiter-fixed":              {"retry-after", "ratelimit-fields"},
	"peer-flask-limiter-redis-kill":         {"retry-after", "ratelimit-fields"},
	"peer-fastify":                          {"retry-after"},
	"peer-fastify-redis-kill":               {"retry-after", "ratelimit-fields"},
	"peer-go-limiter":                       {"retry-after", "ratelimit-fields", "header-style"},
	"peer-flask-limiter-moving":             {"retry-after", "ratelimit-fields"},
	"peer-haproxy":                          {"false-rejections", "retry-after"},
	"peer-haproxy-two":                      {"budget", "boundary-burst-ratio", "false-rejections", "retry-after"},
	"peer-httprate":                         {"budget", "false-rejections", "retry-after", "ratelimit-fields"},
	"peer-rate-limiter-flexible-redis-kill": {"ratelimit-fields"},
	"peer-ulule-limiter-redis-kill":         {"status", "fault-latency", "failure-mode"},
}

// All returns the peer scenarios in file name order, each parsed from its
// embedded file. A file that fails to parse is an error; the tests make
// sure none does.
func All() ([]*scenarios.Scenario, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("list peer scenarios: %w", err)
	}
	var out []*scenarios.Scenario
	for _, e := range entries {
		data, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("read peer scenario: %w", err)
		}
		sc, err := scenarios.Parse("embedded:peers/"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}
