package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios"
)

// initCommand writes a commented scenario for an external API.
type initCommand struct{ stdout io.Writer }

// initFlags are init's flags.
type initFlags struct {
	urls, policies                          listFlag
	route, method, header, carry, name, out string
	redisURL, proxy, failureMode            string
	duration, storeTimeout                  time.Duration
	identities                              int
}

// defaultProxy is where the drill's proxy listens unless --proxy says.
const defaultProxy = "127.0.0.1:16379"

func (f *initFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.Var(&f.urls, "url", "the base `URL` of your API, as in http://127.0.0.1:8080; repeat for several instances sharing one budget")
	fs.StringVar(&f.route, "route", "", "the `PATH` of the limited route, as in /v1/orders")
	fs.StringVar(&f.method, "method", "GET", "the route's HTTP `METHOD`")
	fs.Var(&f.policies, "policy", "the limit your API claims per identity, as `SPEC` (gcra:10/1s,burst=10, fixed_window:100/1m); repeat for limits applied together")
	fs.StringVar(&f.header, "header", "", "the request header `NAME` that carries the identity (an API key, or the client address with --carry client_ip)")
	fs.StringVar(&f.carry, "carry", "", "carry each request's identity as `CARRY`: api_key (a header), bearer (Authorization: Bearer), "+
		"query, cookie or client_ip (default api_key, in X-API-Key)")
	fs.IntVar(&f.identities, "identities", 4, "the number of distinct identities (clients) that send")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "the length of the steady load, twice what the policy lets the identities through")
	fs.StringVar(&f.name, "name", "my-api", "the scenario's `NAME`: lowercase letters, digits, - and _")
	fs.StringVar(&f.out, "out", "", "write the scenario to `FILE`, which must not exist (default stdout)")
	fs.StringVar(&f.redisURL, "redis", "", "the Redis `URL` your limiter keeps its state in: writes the Redis drill (faults on the link "+
		"through rlbench's proxy) instead of leaving it commented out; needs --failure-mode and --store-timeout")
	fs.StringVar(&f.proxy, "proxy", defaultProxy, "the `HOST:PORT` the drill's proxy listens on, which your limiter must use as its Redis")
	fs.StringVar(&f.failureMode, "failure-mode", "", "declare, for the drill, the `MODE` your limiter fails in when Redis does: open, closed or fallback")
	fs.DurationVar(&f.storeTimeout, "store-timeout", 0, "your limiter's timeout on one Redis call, for the drill")
	return fs
}

var initHelp = help{
	synopsis: "rlbench init --url URL --route PATH --policy SPEC [flags] [> FILE]",
	about: `Writes a scenario for an API rlbench does not start, every field explained
in a comment: the route, the policy your API claims, how a request names its
client, a steady load twice what the policy lets through, a burst, a
Retry-After probe and the checks. 'rlbench validate FILE' accepts it and
'rlbench run FILE' runs it as written. The Redis drill (faults on your
limiter's link to Redis through rlbench's proxy, or your own inject and heal
commands) is written commented out, or in force with --redis.

  rlbench init --url http://127.0.0.1:8080 --route /v1/orders \
    --policy gcra:10/1s,burst=10 --header X-API-Key > my-api.yaml`,
	footer: `Exit codes: 0 written, 2 invalid flags or an --out that exists.`,
}

func (c *initCommand) Usage() string { return initHelp.text(new(initFlags).flagSet()) }

var scenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func (c *initCommand) Run(_ context.Context, args []string) error {
	f := &initFlags{}
	set := f.flagSet()
	if err := parseArgs(set, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	if set.NArg() > 0 {
		return usagef("unexpected argument %q; init takes flags only (--out FILE for a file)", set.Arg(0))
	}
	g, err := f.generator()
	if err != nil {
		return err
	}
	data := []byte(g.scenario())
	// What init writes, validate accepts: a flag combination the scenario
	// format rejects is refused here, with the format's reason.
	if _, err := scenarios.Parse("embedded:init.yaml", data); err != nil {
		return usagef("these flags make an invalid scenario: %v", err)
	}
	if f.out == "" || f.out == "-" {
		_, err := c.stdout.Write(data)
		return err
	}
	file, err := os.OpenFile(f.out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return usagef("--out %s: the file exists; init does not overwrite it (remove it or choose another name)", f.out)
	}
	if err != nil {
		return fmt.Errorf("write scenario: %w", err)
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return fmt.Errorf("write scenario: %w", err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write scenario: %w", err)
	}
	fmt.Fprintf(c.stdout, "wrote %s; check it with 'rlbench validate %s', run it with 'rlbench run %s'\n", f.out, f.out, f.out)
	return nil
}

// initScenario is what init writes, decided from the flags.
type initScenario struct {
	f        *initFlags
	carry    scenarios.Carry
	header   string
	policies []limiter.Limit
	// the traffic, sized from the tightest policy
	rate, burst, probe int
	probeWhyNot        string
}

// generator checks the flags and sizes the traffic from the policies.
func (f *initFlags) generator() (*initScenario, error) {
	g := &initScenario{f: f, carry: scenarios.APIKey}
	if len(f.urls) == 0 {
		return nil, usagef("--url is required: the base URL of your API, as in http://127.0.0.1:8080")
	}
	for _, u := range f.urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil || p.RawQuery != "" {
			return nil, usagef("--url %q: want an http(s) base URL without credentials or query, as in http://127.0.0.1:8080", u)
		}
	}
	switch {
	case f.route == "":
		return nil, usagef("--route is required: the path of the limited route, as in /v1/orders")
	case !strings.HasPrefix(f.route, "/") || strings.ContainsAny(f.route, "?# \"'"):
		return nil, usagef("--route %q: want a path starting with /, without query, as in /v1/orders", f.route)
	}
	f.method = strings.ToUpper(f.method)
	if len(f.policies) == 0 {
		return nil, usagef("--policy is required: the limit your API claims per identity, as in gcra:10/1s,burst=10")
	}
	for _, spec := range f.policies {
		l, err := limiter.ParseLimit(spec)
		if err != nil {
			return nil, usagef("--policy %q: %v", spec, err)
		}
		g.policies = append(g.policies, l)
	}
	if !scenarioName.MatchString(f.name) {
		return nil, usagef("--name %q: use lowercase letters, digits, - and _", f.name)
	}
	if f.carry != "" {
		g.carry = scenarios.Carry(f.carry)
	}
	switch g.carry {
	case scenarios.APIKey:
		g.header = scenarios.DefaultAPIKeyHeader
	case scenarios.ClientIP:
		g.header = scenarios.DefaultClientIPHeader
	case scenarios.Bearer, scenarios.Query, scenarios.Cookie:
		if f.header != "" {
			return nil, usagef("--header: carry %s has its own place; --header names the header of api_key or client_ip", g.carry)
		}
	default:
		return nil, usagef("--carry %q: use api_key, bearer, query, cookie or client_ip", f.carry)
	}
	if f.header != "" {
		g.header = f.header
	}
	if f.identities < 1 || f.identities > 10000 {
		return nil, usagef("--identities %d: want 1 to 10000", f.identities)
	}
	if f.duration < time.Second || f.duration > time.Hour {
		return nil, usagef("--duration %v: want 1s to 1h", f.duration)
	}
	if f.redisURL != "" {
		if f.failureMode == "" || f.storeTimeout <= 0 {
			return nil, usagef("--redis needs --failure-mode (what your limiter does when Redis fails: open, closed or fallback) and --store-timeout (its timeout on one Redis call)")
		}
	} else if f.failureMode != "" || f.storeTimeout != 0 {
		return nil, usagef("--failure-mode and --store-timeout declare your limiter for the Redis drill; give --redis too")
	}
	g.size()
	return g, nil
}

// size sizes the traffic from the tightest policy: a steady rate twice
// what it lets the identities through, a burst of one and a half times
// its capacity per identity, and a probe that outlasts the capacity,
// unless the policy's wait outlasts what a probe waits.
func (g *initScenario) size() {
	n := float64(g.f.identities)
	rate, capacity, wait := math.Inf(1), int64(math.MaxInt64), time.Duration(0)
	for _, l := range g.policies {
		rate = min(rate, l.Rate/l.Period.Seconds())
		capacity = min(capacity, l.Capacity())
		w := time.Duration(float64(l.Period) / l.Rate) // a bucket refills one unit
		if l.Algorithm.IsWindow() {
			w = l.Period // a window may turn a client away for all of itself
		}
		wait = max(wait, w)
	}
	g.rate = int(min(max(math.Round(2*rate*n), 1), 500))
	g.burst = int(min(float64(capacity)*1.5*n+n, 2000))
	switch {
	case wait > 2*time.Minute:
		g.probeWhyNot = fmt.Sprintf("a rejected client may have to wait %v, longer than a probe waits (2m)", wait.Round(time.Second))
	case capacity > 1000:
		g.probeWhyNot = fmt.Sprintf("the probe would send over %d requests before the first rejection", capacity)
	default:
		g.probe = int(2*capacity + 10)
	}
}

// quote writes s as a YAML double-quoted scalar.
func quote(s string) string { return strconv.Quote(s) }

// commentColumn is where the generated file's comments start.
const commentColumn = 34

// writer writes the generated scenario line by line.
type writer struct{ b strings.Builder }

// line writes text, and comment (when set) from commentColumn on.
func (w *writer) line(text, comment string) {
	w.b.WriteString(text)
	if comment != "" {
		w.b.WriteString(strings.Repeat(" ", max(commentColumn-len(text), 1)) + "# " + comment)
	}
	w.b.WriteString("\n")
}

// more continues the comment of the line before, or writes a comment line
// of its own after prefix.
func (w *writer) more(prefix, comment string) { w.line(prefix, comment) }

func (g *initScenario) scenario() string {
	f := g.f
	w := &writer{}
	specs := make([]string, len(g.policies))
	for i, l := range g.policies {
		specs[i] = quote(l.Spec())
	}
	urls := make([]string, len(f.urls))
	for i, u := range f.urls {
		urls[i] = quote(strings.TrimSuffix(u, "/"))
	}
	who := map[scenarios.Carry]string{
		scenarios.APIKey: "API key (" + g.header + ")", scenarios.Bearer: "bearer token", scenarios.Query: "API key (query parameter)",
		scenarios.Cookie: "API key (cookie)", scenarios.ClientIP: "client address (" + g.header + ")",
	}[g.carry]

	w.line("# A scenario for your API, written by `rlbench init`. Check it with", "")
	w.line("# `rlbench validate FILE` and run it with `rlbench run FILE`: exit 0 when every", "")
	w.line("# check passes, 1 when a check of the limiter fails, 2 on invalid input, 3 when", "")
	w.line("# rlbench could not make a valid test (a generator that fell behind: rerun).", "")
	w.line("# Every field is explained beside it; the whole format is in scenarios/doc.go.", "")
	w.line("", "")
	w.line("name: "+f.name, "names the scenario in reports and on the command line")
	w.line("description: >-", "what the scenario proves, shown in the report")
	w.line(fmt.Sprintf("  %s %s on %s holds each %s to %s", f.method, f.route, strings.Join(f.urls, ", "), who, strings.Join(f.policies, " and ")), "")
	w.line("  under twice the load it allows: never more admitted than the policy allows, no", "")
	w.line("  request within it turned away, and a Retry-After that tells the truth.", "")
	w.line("seed: 1", "seeds which identity and instance each request takes")
	if f.redisURL != "" {
		g.redis(w, "")
	}
	w.line("target:", "")
	w.line("  external: ["+strings.Join(urls, ", ")+"]", "base URLs of your API; requests are spread over them")
	w.line("  spread: round_robin", "round_robin | random: how requests pick an instance")
	drill := "  # "
	if f.redisURL != "" {
		drill = "  "
	}
	w.line(drill+"failure_mode: "+cmp.Or(f.failureMode, "closed"), "the drill: what your limiter does when Redis fails:")
	w.more("", "open (admit), closed (503 with Retry-After) or")
	w.more("", "fallback (each instance its share; with instances: N)")
	w.line(drill+"store_timeout: "+cmp.Or(f.storeTimeout, 50*time.Millisecond).String(), "the drill: your limiter's timeout on one Redis call")
	w.line("  routes:", "")
	w.line("    - path: "+quote(f.route), "")
	w.line("      method: "+f.method, "GET | HEAD | POST | PUT | PATCH | DELETE")
	w.line("      # query: tenant=acme", "a query string every request carries, as sent")
	w.line("      # headers:", "static headers; ${NAME} is read from the")
	w.line(`      #   Authorization: "Bearer ${API_TOKEN}"`, "environment and never recorded")
	w.line(`      # body: '{"sku": "A-1"}'`, "or body_file: order.json, relative to this file")
	w.line("      # cost: 1", "units one request charges (default 1)")
	w.line("      policies: ["+strings.Join(specs, ", ")+"]", "")
	w.more("", "the limits your API claims per identity, applied")
	w.more("", "together: gcra, token_bucket, leaky_bucket,")
	w.more("", "fixed_window, sliding_window_log, sliding_window_counter")
	w.line("identities:", "")
	w.line(fmt.Sprintf("  count: %d", f.identities), "distinct clients, each with a budget of its own")
	w.line("  carry: "+string(g.carry), "how a request names its client: api_key (a header)")
	w.more("", "| bearer (Authorization: Bearer) | query | cookie |")
	w.more("", "client_ip (X-Forwarded-For)")
	switch g.carry {
	case scenarios.APIKey, scenarios.ClientIP:
		w.line("  header: "+g.header, "the header that carries it")
	case scenarios.Query, scenarios.Cookie:
		w.line("  name: "+scenarios.DefaultIdentityName, "the query parameter or cookie that carries it")
	}
	if g.carry != scenarios.ClientIP {
		w.line("  # keys_file: keys.txt", "real keys, one a line, if your API takes only those;")
		w.more("", "never recorded (histories name them key#1, key#2, ...)")
		w.line("  # groups:", "plans: each group's keys held to its own policies")
		w.line(`  #   - {name: free, count: 3, policies: ["gcra:60/1m,burst=10"]}`, "")
		w.line(`  #   - {name: pro, count: 2, policies: ["gcra:600/1m,burst=100"], keys_file: pro.txt}`, "")
		w.line("  # Generated keys carry the run's id (key-3f9a1c07-0000), so that every run starts", "")
		w.line("  # them with a full budget: your API must accept any key (or use keys_file).", "")
	}
	w.line("traffic:", "phases, run in order")
	w.line("  - kind: constant", "an open-model load: sends keep to the schedule")
	w.line("    name: steady", "whatever the answers")
	w.line(fmt.Sprintf("    rate: %d/1s", g.rate), fmt.Sprintf("twice what the policy lets %d identities through", f.identities))
	w.line("    duration: "+f.duration.String(), "")
	w.line("  - kind: burst", "requests released together, each on its own connection")
	w.line("    name: burst", "")
	w.line(fmt.Sprintf("    requests: %d", g.burst), "one and a half times the capacity, per identity")
	w.line("    spread: 50ms", "")
	if g.probeWhyNot == "" {
		w.line("  - kind: retry_after_probe", "a fresh client sends until rejected, waits exactly")
		w.line("    name: probe", "Retry-After and retries: it must be admitted")
		w.line(fmt.Sprintf("    requests: %d", g.probe), "")
	} else {
		w.line("  # - {kind: retry_after_probe, requests: 100}", "left out: "+g.probeWhyNot)
	}
	w.line("checks:", "")
	w.line("  budget: {max_excess: 0}", "never more admitted than the policy allows, per")
	w.more("", "identity, whatever the timing")
	w.line("  false_rejections: {max_rate: 0.01}", "no 429 where the policy had room")
	w.line("  headers: true", "every 429 has an honest Retry-After, and RateLimit")
	w.more("", "fields (if sent) agree; remove if your API sends none")
	w.line("  # max_latency: 1s", "every request answered within this")
	if f.redisURL == "" {
		w.line("", "")
		w.line("# The Redis drill: faults on your limiter's link to Redis. rlbench listens at", "")
		w.line("# redis.proxy and forwards to redis.url; point your limiter at the proxy's address", "")
		w.line("# (password, database and TLS pass through), declare failure_mode and store_timeout", "")
		w.line("# under target (above), and uncomment these. `rlbench init --redis URL", "")
		w.line("# --failure-mode MODE --store-timeout D` writes them in force.", "")
		g.redis(w, "# ")
	} else {
		g.faults(w, "")
	}
	return w.b.String()
}

// redis writes the drill's redis section, and with prefix ("# ", to
// comment them out) its faults too.
func (g *initScenario) redis(w *writer, prefix string) {
	w.line(prefix+"redis:", "")
	w.line(prefix+"  provider: external", "a Redis rlbench does not run; never flushed")
	w.line(prefix+"  url: "+quote(cmp.Or(g.f.redisURL, "redis://127.0.0.1:6379/0")), "the Redis your limiter keeps its state in")
	w.line(prefix+"  proxy: "+g.f.proxy, "rlbench's fault proxy: your limiter's Redis address")
	if prefix != "" {
		g.faults(w, prefix)
	}
}

// faults writes the drill's faults, placed within the steady phase.
func (g *initScenario) faults(w *writer, prefix string) {
	d := g.f.duration
	at := func(frac float64) time.Duration {
		return time.Duration(float64(d) * frac).Round(100 * time.Millisecond)
	}
	latency := max(200*time.Millisecond, 4*cmp.Or(g.f.storeTimeout, 50*time.Millisecond))
	w.line(prefix+"faults:", "injected while the traffic runs")
	w.line(fmt.Sprintf("%s  - {kind: redis_latency, latency: %v, at: %v, duration: %v}", prefix, latency, at(0.3), at(0.2)), "")
	w.more(prefix, "every reply later than store_timeout: failure_mode decides")
	w.line(fmt.Sprintf("%s  # - {kind: redis_blackhole, at: %v, duration: %v}", prefix, at(0.6), at(0.1)), "also redis_reset, redis_disconnect")
	w.line(prefix+"  # - kind: command", "what the proxy cannot do: your own commands,")
	w.line(prefix+"  #   inject: docker pause redis", "with sh -c in this file's directory")
	w.line(prefix+"  #   heal: docker unpause redis", "")
	w.line(prefix+"  #   effect: unavailable", "unavailable | loses_state | none")
	w.line(fmt.Sprintf("%s  #   at: %v", prefix, at(0.8)), "")
	w.line(fmt.Sprintf("%s  #   duration: %v", prefix, at(0.1)), "")
}
