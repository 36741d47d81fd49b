// Package doctor checks that a Redis is fit to hold a rate limiter's state,
// the job of `rlbench doctor`. It connects to one Redis server, reads its
// configuration and tries what a limiter does there, and reports each
// finding with its fix:
//
//   - an eviction policy that can drop limiter state (field case C16):
//     allkeys-*, or volatile-* since every key of the reference limiter
//     carries a TTL, while maxmemory is set;
//   - scripting disabled, or an ACL that forbids EVALSHA, EVAL, SCRIPT LOAD,
//     TIME or a command the limiter's scripts run on its keys (tried, not
//     inferred: a tiny script, TIME, and a probe script on two probe keys
//     that expire within a second); and whether FUNCTION LOAD and FCALL
//     are allowed, which the reference limiter uses on Redis 7 when they
//     are and does without when they are not (a tiny library, deleted at
//     once);
//   - a replica or a Sentinel instead of the master;
//   - in cluster mode, whether one identity's keys share one hash slot
//     (CLUSTER KEYSLOT on sample keys of the reference's layout);
//   - round-trip latency percentiles against the store timeout;
//   - the offset of Redis's clock to this host's, with its uncertainty;
//   - the server version.
//
// Passwords never appear in a report or an error: URLs are redacted.
package doctor

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/resilience"
)

const (
	// Schema names the JSON form of a Report.
	Schema = "rlbench-doctor/v1"
	// DefaultPings is how many PINGs measure the round trip.
	DefaultPings = 200
	// DefaultMaxClockOffset is the clock offset to this host beyond which
	// the clock check reports a finding.
	DefaultMaxClockOffset = time.Second
	// DefaultDialTimeout bounds connecting to Redis and each command.
	DefaultDialTimeout = 5 * time.Second
	// clockSamples is how many TIME round trips the clock check takes; it
	// keeps the one with the shortest round trip, the least uncertain.
	clockSamples = 7
	// probeTTL is the TTL of the probe keys, in milliseconds.
	probeTTL = 1000
)

// The server versions the reference limiter needs and the one the doctor
// recommends. Its scripts read TIME before they write, which needs script
// effects replication (redis.replicate_commands, Redis 3.2); 6.0 brings
// ACLs, and older lines no longer get security fixes.
var (
	MinVersion         = [3]int{3, 2, 0}
	RecommendedVersion = [3]int{6, 0, 0}
)

// ErrUnreachable is wrapped by the error Diagnose returns when it cannot
// talk to Redis at all: no connection, a refused login (the error then
// wraps redisstore.ErrAuth too and says so), a timeout.
var ErrUnreachable = errors.New("redis unreachable")

// loginRefused is Diagnose's error for a Redis that answered but refused
// the login: it reads as what happened, and is still ErrUnreachable (no
// check can run) and redisstore.ErrAuth.
type loginRefused struct{ url, reason string }

func (e loginRefused) Error() string {
	return "redis refused the login at " + e.url + ": " + e.reason
}

func (e loginRefused) Unwrap() []error { return []error{ErrUnreachable, redisstore.ErrAuth} }

// ErrInvalidURL is wrapped by the error Diagnose returns for a URL it
// cannot use.
var ErrInvalidURL = errors.New("invalid Redis URL")

// Options configures Diagnose. The zero value uses the defaults below.
type Options struct {
	// StoreTimeout is the limiter's timeout per store call; the latency
	// check reports a finding when the p99 round trip exceeds half of it.
	// Zero means resilience.DefaultTimeout.
	StoreTimeout time.Duration
	// Pings is the number of PINGs the latency check sends; zero means
	// DefaultPings.
	Pings int
	// MaxClockOffset is the clock offset to this host beyond which the
	// clock check reports a finding; zero means DefaultMaxClockOffset.
	MaxClockOffset time.Duration
	// Prefix is the limiter's key prefix; empty means redisstore.DefaultPrefix.
	// The probe keys and the cluster's sample keys use it.
	Prefix string
	// Now is this host's clock; nil means time.Now.
	Now func() time.Time
}

// Check is the outcome of one check. OK is false for a finding, and then
// Finding says what is wrong and Fix what to do.
type Check struct {
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Observed string `json:"observed"`
	Finding  string `json:"finding,omitempty"`
	Fix      string `json:"fix,omitempty"`
}

// Latency is the round trip of Samples PINGs, in microseconds.
type Latency struct {
	Samples     int   `json:"samples"`
	P50Micros   int64 `json:"p50_us"`
	P99Micros   int64 `json:"p99_us"`
	MaxMicros   int64 `json:"max_us"`
	LimitMicros int64 `json:"limit_us"` // half the store timeout
}

// ClockOffset is Redis's clock minus this host's, in microseconds, within
// ± UncertaintyMicros (half the round trip of the TIME that measured it).
type ClockOffset struct {
	OffsetMicros      int64 `json:"offset_us"`
	UncertaintyMicros int64 `json:"uncertainty_us"`
}

// Report is what Diagnose found. URL is redacted.
type Report struct {
	Schema   string       `json:"schema"`
	URL      string       `json:"url"`
	Version  string       `json:"version,omitempty"`
	Mode     string       `json:"mode,omitempty"` // standalone, cluster or sentinel
	Role     string       `json:"role,omitempty"` // master or slave (a replica)
	Checks   []Check      `json:"checks"`
	Findings int          `json:"findings"`
	Latency  *Latency     `json:"latency,omitempty"`
	Clock    *ClockOffset `json:"clock,omitempty"`
}

// Healthy reports whether no check found anything.
func (r *Report) Healthy() bool { return r.Findings == 0 }

func (r *Report) add(c Check) {
	r.Checks = append(r.Checks, c)
	if !c.OK {
		r.Findings++
	}
}

// Redact returns rawURL with its password, if any, replaced by "xxxxx". A
// URL that does not parse is replaced whole, since it may hold a password
// in a form url.Parse cannot find.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// redactor replaces the password of a URL wherever it appears in a message,
// since a driver's error may quote what it was given.
type redactor struct{ secret string }

func newRedactor(rawURL string) redactor {
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			return redactor{secret: p}
		}
	}
	if q, err := url.Parse(rawURL); err == nil {
		if p := q.Query().Get("password"); p != "" {
			return redactor{secret: p}
		}
	}
	return redactor{}
}

func (r redactor) string(s string) string {
	if r.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, r.secret, "xxxxx")
}

func (r redactor) error(err error) string { return r.string(err.Error()) }

// Diagnose connects to the Redis at rawURL (redis://, rediss:// or unix://,
// as go-redis's ParseURL reads them), runs every check and returns the
// report. It writes only the two probe keys, which expire within a second
// and are deleted at once, and the probe function library, deleted at once
// (where the user may not delete it, the scripting check says so). Errors:
// one wrapping ErrInvalidURL, one wrapping ErrUnreachable when Redis does
// not answer PING (and redisstore.ErrAuth too when it refuses the login),
// or ctx's error; every message is redacted.
func Diagnose(ctx context.Context, rawURL string, opts Options) (*Report, error) {
	red := newRedactor(rawURL)
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = resilience.DefaultTimeout
	}
	if opts.Pings <= 0 {
		opts.Pings = DefaultPings
	}
	if opts.MaxClockOffset <= 0 {
		opts.MaxClockOffset = DefaultMaxClockOffset
	}
	if opts.Prefix == "" {
		opts.Prefix = redisstore.DefaultPrefix
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("key prefix %q: braces would move the hash tag; choose a prefix without them", opts.Prefix)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "unix" && strings.HasSuffix(u.Host, ":") {
		// go-redis would quietly take 6379, which may be another Redis.
		return nil, fmt.Errorf("%w %s: the port after the colon is empty; give it, as in redis://127.0.0.1:6379", ErrInvalidURL, Redact(rawURL))
	}
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %s; want redis://[user:password@]host:port[/db], rediss://... or unix:///path", ErrInvalidURL, Redact(rawURL), red.error(err))
	}
	ro.DisableIdentity = true
	ro.MaxRetries = -1
	ro.PoolSize = 1
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = DefaultDialTimeout, DefaultDialTimeout, DefaultDialTimeout
	client := redis.NewClient(ro)
	defer client.Close()

	rep := &Report{Schema: Schema, URL: Redact(rawURL)}
	if err := client.Ping(ctx).Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := redisstore.CheckAuth(err); errors.Is(err, redisstore.ErrAuth) {
			return nil, loginRefused{url: rep.URL, reason: red.error(err)}
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrUnreachable, rep.URL, red.error(err))
	}
	d := &diagnosis{ctx: ctx, client: client, options: ro, opts: opts, red: red, rep: rep}
	d.readInfo()
	d.version()
	d.role()
	if rep.Mode == "sentinel" {
		return rep, nil // a Sentinel holds no data: the other checks do not apply
	}
	d.eviction()
	d.scripting()
	d.cluster()
	d.latency()
	d.clock()
	return rep, ctx.Err()
}

// diagnosis is one Diagnose call's state.
type diagnosis struct {
	ctx     context.Context
	client  *redis.Client
	options *redis.Options // client's, for a connection to another cluster node
	opts    Options
	red     redactor
	rep     *Report

	info    map[string]string // INFO fields; nil when INFO was refused
	infoErr error
}

// readInfo reads INFO server, memory, replication and cluster once.
func (d *diagnosis) readInfo() {
	text, err := d.client.Info(d.ctx, "server", "memory", "replication", "cluster").Result()
	if err != nil {
		d.infoErr = err
		return
	}
	d.info = parseInfo(text)
	d.rep.Version = d.info["redis_version"]
	d.rep.Mode = d.info["redis_mode"]
	if d.rep.Mode == "" { // before 3.0 there was no cluster mode
		d.rep.Mode = "standalone"
	}
	d.rep.Role = d.info["role"]
}

// parseInfo reads INFO's "field:value" lines.
func parseInfo(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

func (d *diagnosis) version() {
	c := Check{Name: "version"}
	if d.info == nil {
		c.Observed = "INFO refused: " + d.red.error(d.infoErr)
		c.Finding = "the server's version is unknown: this user may not run INFO"
		c.Fix = "check the version by hand (redis-server --version), or run the doctor as a user allowed INFO (+info)"
		d.rep.add(c)
		return
	}
	v, ok := parseVersion(d.rep.Version)
	c.Observed = "Redis " + d.rep.Version
	switch {
	case !ok:
		c.Finding = fmt.Sprintf("unrecognised version %q", d.rep.Version)
		c.Fix = "check that this is a Redis server; the reference limiter needs Redis " + versionString(MinVersion) + " or later"
	case compareVersions(v, MinVersion) < 0:
		c.Finding = fmt.Sprintf("Redis %s cannot run the limiter's scripts: they read TIME before they write, which needs script effects replication (Redis %s)", d.rep.Version, versionString(MinVersion))
		c.Fix = "upgrade to Redis 7.x (" + versionString(RecommendedVersion) + " at the least)"
	case compareVersions(v, RecommendedVersion) < 0:
		c.Finding = fmt.Sprintf("Redis %s runs the limiter but has no ACLs and no longer gets security fixes", d.rep.Version)
		c.Fix = "upgrade to Redis 7.x (" + versionString(RecommendedVersion) + " at the least)"
	default:
		c.OK = true
	}
	d.rep.add(c)
}

// parseVersion reads "major.minor.patch".
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func compareVersions(a, b [3]int) int { return slices.Compare(a[:], b[:]) }

func versionString(v [3]int) string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

func (d *diagnosis) role() {
	if d.info == nil {
		return // the write probe finds a replica by its READONLY
	}
	c := Check{Name: "role", Observed: d.rep.Mode + ", role " + d.rep.Role}
	switch {
	case d.rep.Mode == "sentinel":
		c.Finding = "this is a Redis Sentinel, which holds no data"
		c.Fix = "point the limiter at the master Sentinel names (go-redis NewFailoverClient), and the doctor at that master"
	case d.rep.Role == "slave":
		c.Finding = "this server is a replica: it refuses the limiter's writes (READONLY)"
		c.Fix = "point the limiter at the master (" + d.info["master_host"] + ":" + d.info["master_port"] + "), or through Sentinel at whichever is master"
	default:
		c.OK = true
	}
	d.rep.add(c)
}

// evictingPolicies maps each maxmemory-policy that can evict limiter state
// to why.
var evictingPolicies = map[string]string{
	"allkeys-lru":     "evicts any key",
	"allkeys-lfu":     "evicts any key",
	"allkeys-random":  "evicts any key",
	"volatile-lru":    "evicts keys with a TTL, and every limiter key has one",
	"volatile-lfu":    "evicts keys with a TTL, and every limiter key has one",
	"volatile-random": "evicts keys with a TTL, and every limiter key has one",
	"volatile-ttl":    "evicts keys with a TTL, and every limiter key has one",
}

func (d *diagnosis) eviction() {
	c := Check{Name: "eviction"}
	maxmemory, policy, err := d.memoryPolicy()
	if err != nil {
		c.Observed = "maxmemory unknown: " + d.red.error(err)
		c.Finding = "the eviction policy is unknown: this user may run neither INFO nor CONFIG GET"
		c.Fix = "check by hand that maxmemory is 0 or maxmemory-policy is noeviction"
		d.rep.add(c)
		return
	}
	c.Observed = fmt.Sprintf("maxmemory %s, maxmemory-policy %s", humanBytes(maxmemory), policy)
	why, evicts := evictingPolicies[policy]
	switch {
	case maxmemory == 0:
		c.OK = true
		c.Observed += " (no limit: nothing is evicted)"
	case evicts:
		c.Finding = fmt.Sprintf("when memory reaches maxmemory, %s %s, so limiter state can vanish: an exhausted client's budget starts full again and the limiter over-admits (field case C16)", policy, why)
		c.Fix = "CONFIG SET maxmemory-policy noeviction (and set it in redis.conf), or give the limiter a Redis of its own without maxmemory; under noeviction a full Redis refuses writes, and the limiter's failure mode decides"
	default:
		c.OK = true
	}
	d.rep.add(c)
}

// memoryPolicy reads maxmemory and maxmemory-policy from INFO memory, or
// from CONFIG GET where INFO was refused.
func (d *diagnosis) memoryPolicy() (int64, string, error) {
	if d.info != nil {
		if mm, ok := d.info["maxmemory"]; ok {
			n, err := strconv.ParseInt(mm, 10, 64)
			if err == nil {
				return n, d.info["maxmemory_policy"], nil
			}
		}
	}
	cfg, err := d.client.ConfigGet(d.ctx, "maxmemory*").Result()
	if err != nil {
		return 0, "", err
	}
	n, err := strconv.ParseInt(cfg["maxmemory"], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("CONFIG GET maxmemory = %q", cfg["maxmemory"])
	}
	return n, cfg["maxmemory-policy"], nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dgb", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dmb", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dkb", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// tinyScript is the script the scripting check loads and runs.
const tinyScript = "return 1"

// tinyLibrary is the function library the scripting check loads, calls
// and deletes: one function of the same name as the library.
const (
	tinyLibraryName = "rlbench_doctor"
	tinyLibrary     = "#!lua name=" + tinyLibraryName + "\nredis.register_function('" + tinyLibraryName + "', function() return 1 end)\n"
)

// probeScript runs, on two probe keys, every command the limiter's scripts
// run on their keys, then deletes them.
const probeScript = `if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
redis.call('SET', KEYS[1], t[1], 'PX', ARGV[1])
redis.call('GET', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], '0 0 0')
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('LSET', KEYS[2], -1, '0 0 0')
redis.call('LINDEX', KEYS[2], -1)
redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('LTRIM', KEYS[2], 0, -1)
redis.call('DEL', KEYS[1], KEYS[2])
return 1`

// functions tries FUNCTION LOAD and FCALL of tinyLibrary, deleting it at
// once, and says how the reference limiter will run its programs here: as
// functions where both are allowed, else as scripts, which cost Redis half
// as much again per one-decision call but decide alike. A library this user
// may not delete is named, with how to remove it.
func (d *diagnosis) functions() string {
	const scripts = ": the reference limiter runs its programs as scripts (EVALSHA), which cost Redis about half as much again per one-decision call as functions and decide alike"
	if d.rep.Mode == "cluster" {
		return "a cluster" + scripts // a library would have to be loaded on every master
	}
	if err := d.client.FunctionLoadReplace(d.ctx, tinyLibrary).Err(); err != nil {
		return "FUNCTION LOAD: " + d.describe(err) + scripts
	}
	callErr := d.client.FCall(d.ctx, tinyLibraryName, nil).Err()
	var left string
	if err := d.client.FunctionDelete(d.ctx, tinyLibraryName).Err(); err != nil {
		left = fmt.Sprintf("; the probe library %s stays loaded (FUNCTION DELETE: %s): a user who may, run FUNCTION DELETE %s",
			tinyLibraryName, d.describe(err), tinyLibraryName)
	}
	if callErr != nil {
		return "FCALL: " + d.describe(callErr) + scripts + left
	}
	return "FUNCTION LOAD and FCALL allowed: the reference limiter runs its programs as functions" + left
}

// scripting tries what the limiter sends: EVALSHA, with EVAL when the
// script is not cached, TIME, and the commands its scripts run on its keys;
// and SCRIPT LOAD, which limiters that load their scripts first send.
func (d *diagnosis) scripting() {
	var refused []string
	var notes []string
	try := func(name string, err error) bool {
		if err == nil {
			return true
		}
		refused = append(refused, name+": "+d.describe(err))
		return false
	}
	sha, err := d.client.ScriptLoad(d.ctx, tinyScript).Result()
	loadOK := try("SCRIPT LOAD", err)
	if err != nil {
		sum := sha1.Sum([]byte(tinyScript))
		sha = hex.EncodeToString(sum[:])
	}
	err = d.client.EvalSha(d.ctx, sha, nil).Err()
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		err = nil // EVALSHA ran; the script was not cached since SCRIPT LOAD failed
	}
	try("EVALSHA", err)
	evalOK := try("EVAL", d.client.Eval(d.ctx, tinyScript, nil).Err())
	try("TIME", d.client.Time(d.ctx).Err())
	notes = append(notes, d.functions())
	c := Check{Name: "scripting"}
	if evalOK {
		tag := "{rlbench-doctor}"
		keys := []string{d.opts.Prefix + tag + ":probe", d.opts.Prefix + tag + ":probe-log"}
		if err := d.probe(keys); err != nil {
			refused = append(refused, "a script's commands on "+keys[0]+": "+d.describe(err))
		} else {
			notes = append(notes, "TIME, GET, SET, PEXPIRE, RPUSH, LSET, LINDEX, LRANGE, LTRIM and DEL in a script on "+d.opts.Prefix+"* keys")
		}
	} else {
		notes = append(notes, "the key probe was skipped: EVAL is refused")
	}
	switch {
	case len(refused) == 0:
		c.OK = true
		c.Observed = "SCRIPT LOAD, EVALSHA, EVAL and TIME allowed; " + strings.Join(notes, "; ")
	case len(refused) == 1 && !loadOK:
		c.Observed = strings.Join(append(refused, notes...), "; ")
		c.Finding = "limiters that load their scripts first cannot run here as this user: " + refused[0] +
			" (the reference limiter can: it sends EVALSHA and falls back to EVAL)"
	default:
		c.Observed = strings.Join(append(refused, notes...), "; ")
		c.Finding = "the limiter cannot run here as this user: " + strings.Join(refused, "; ") +
			" (the reference limiter sends EVALSHA, EVAL when the script is not cached, and its scripts read TIME; limiters that load scripts first also send SCRIPT LOAD)"
	}
	if !c.OK {
		c.Fix = "allow them to the limiter's user, as in ACL SETUSER <user> +evalsha +eval +script|load +time ~" + d.opts.Prefix + "* " +
			"(or +@scripting), and do not rename or disable these commands (rename-command)"
	}
	d.rep.add(c)
}

// probe runs probeScript on keys; on a cluster node that does not serve
// their slot, on the node the MOVED redirection names.
func (d *diagnosis) probe(keys []string) error {
	err := d.client.Eval(d.ctx, probeScript, keys, probeTTL).Err()
	if err == nil || !redis.HasErrorPrefix(err, "MOVED") {
		return err
	}
	fields := strings.Fields(err.Error())
	if len(fields) != 3 {
		return err
	}
	o := *d.options
	o.Addr = fields[2]
	c := redis.NewClient(&o)
	defer c.Close()
	return c.Eval(d.ctx, probeScript, keys, probeTTL).Err()
}

// scriptLine finds the line of probeScript a script error names, as Redis
// reports it ("@user_script:N"), and returns the command called there.
var scriptLine = regexp.MustCompile(`@user_script:(\d+)`)

func probeCommand(msg string) string {
	m := scriptLine.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(probeScript, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	_, call, ok := strings.Cut(lines[n-1], "redis.call('")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(call, "'")
	return name
}

// describe says why a command failed, redacted.
func (d *diagnosis) describe(err error) string {
	msg := d.red.error(err)
	if cmd := probeCommand(msg); cmd != "" {
		msg = cmd + " in the script: " + msg
	}
	switch {
	case strings.Contains(msg, "NOPERM") || strings.Contains(msg, "no permissions") ||
		strings.Contains(msg, "can't run this command") || strings.Contains(msg, "can't access"):
		return "forbidden by this user's ACL (" + msg + ")"
	case strings.Contains(msg, "unknown command"):
		return "disabled, renamed or removed (" + msg + ")"
	case strings.Contains(msg, "READONLY"):
		return "refused by a read-only replica (" + msg + ")"
	}
	return msg
}

// cluster checks, in cluster mode, that the cluster is up and that sample
// keys of one identity in the reference limiter's layout share one slot.
func (d *diagnosis) cluster() {
	if d.rep.Mode != "cluster" {
		if d.info != nil {
			d.rep.add(Check{Name: "cluster", OK: true, Observed: "not a cluster: every key is on this server"})
		}
		return
	}
	c := Check{Name: "cluster"}
	state := d.info["cluster_state"]
	if state == "" {
		if s, err := d.client.ClusterInfo(d.ctx).Result(); err == nil {
			state = parseInfo(s)["cluster_state"]
		}
	}
	store := redisstore.New(d.client, redisstore.WithPrefix(d.opts.Prefix))
	samples := []string{
		store.StorageKey("rlbench-doctor-identity", limiter.PerSecond(10, 20)),
		store.StorageKey("rlbench-doctor-identity", limiter.Window(limiter.FixedWindow, 1000, time.Hour)),
	}
	var slots []int64
	for _, k := range samples {
		slot, err := d.client.ClusterKeySlot(d.ctx, k).Result()
		if err != nil {
			c.Observed = "CLUSTER KEYSLOT " + k + ": " + d.describe(err)
			c.Finding = "the key layout could not be checked"
			c.Fix = "allow CLUSTER KEYSLOT to this user, or check by hand that keys " + d.opts.Prefix + "{<id>}:* share one slot"
			d.rep.add(c)
			return
		}
		slots = append(slots, slot)
	}
	c.Observed = fmt.Sprintf("cluster_state %s; %s and %s in slots %d and %d", state, samples[0], samples[1], slots[0], slots[1])
	switch {
	case state != "ok":
		c.Finding = "the cluster is not serving every slot (cluster_state " + state + "): requests for some identities fail"
		c.Fix = "repair the cluster (redis-cli --cluster check/fix) before the limiter relies on it"
	case slots[0] != slots[1]:
		c.Finding = "one identity's keys land in different slots: a request under several limits fails with CROSSSLOT"
		c.Fix = "keep the hash tag in the keys (" + d.opts.Prefix + "{<hashed id>}:<policy>) and no braces in the prefix"
	default:
		c.OK = true
		c.Observed += ": one identity's keys share a slot; the limiter must use a cluster client (go-redis NewClusterClient)"
	}
	d.rep.add(c)
}

// latency measures Pings sequential PINGs against half the store timeout:
// a decision is one round trip plus the script, and must fit the timeout
// with room to spare.
func (d *diagnosis) latency() {
	c := Check{Name: "latency"}
	rtts := make([]time.Duration, 0, d.opts.Pings)
	for range d.opts.Pings {
		start := time.Now()
		if err := d.client.Ping(d.ctx).Err(); err != nil {
			c.Observed = fmt.Sprintf("PING failed after %d round trips: %s", len(rtts), d.describe(err))
			c.Finding = "Redis stopped answering while the doctor measured its latency"
			c.Fix = "check the server and the network, then run the doctor again"
			d.rep.add(c)
			return
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	lat := &Latency{
		Samples:     len(rtts),
		P50Micros:   percentile(rtts, 0.50).Microseconds(),
		P99Micros:   percentile(rtts, 0.99).Microseconds(),
		MaxMicros:   rtts[len(rtts)-1].Microseconds(),
		LimitMicros: (d.opts.StoreTimeout / 2).Microseconds(),
	}
	d.rep.Latency = lat
	p99 := percentile(rtts, 0.99)
	c.Observed = fmt.Sprintf("p50 %v, p99 %v, max %v over %d PINGs; store timeout %v",
		round(percentile(rtts, 0.50)), round(p99), round(rtts[len(rtts)-1]), len(rtts), d.opts.StoreTimeout)
	if p99 > d.opts.StoreTimeout/2 {
		c.Finding = fmt.Sprintf("the p99 round trip %v exceeds half the store timeout (%v): with the script's own time, decisions will time out and take the failure mode", round(p99), d.opts.StoreTimeout/2)
		c.Fix = "run Redis closer to the limiter's instances (same zone or host), or raise the store timeout above twice the p99 round trip"
	} else {
		c.OK = true
	}
	d.rep.add(c)
}

// percentile is the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// round keeps durations readable: microseconds below a millisecond, else
// tenths of milliseconds.
func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}

// clock measures Redis TIME against this host's clock: the offset is the
// server's time minus the midpoint of the round trip, uncertain by half the
// round trip. A finding needs the offset beyond MaxClockOffset even at the
// near end of its uncertainty.
func (d *diagnosis) clock() {
	c := Check{Name: "clock"}
	best := time.Duration(-1)
	var offset time.Duration
	for range clockSamples {
		t0 := d.opts.Now()
		server, err := d.client.Time(d.ctx).Result()
		t1 := d.opts.Now()
		if err != nil {
			c.Observed = "TIME: " + d.describe(err)
			c.Finding = "Redis's clock could not be read: the limiter's scripts read it on every decision"
			c.Fix = "allow TIME to the limiter's user (+time)"
			d.rep.add(c)
			return
		}
		rtt := t1.Sub(t0)
		if best < 0 || rtt < best {
			best = rtt
			offset = server.Sub(t0.Add(rtt / 2))
		}
	}
	unc := best/2 + time.Microsecond // TIME has microsecond resolution
	d.rep.Clock = &ClockOffset{OffsetMicros: offset.Microseconds(), UncertaintyMicros: unc.Microseconds()}
	dir := "ahead of"
	if offset < 0 {
		dir = "behind"
	}
	abs := offset
	if abs < 0 {
		abs = -abs
	}
	c.Observed = fmt.Sprintf("Redis's clock is %v %s this host's (± %v)", round(abs), dir, round(unc))
	if abs <= unc {
		c.Observed = fmt.Sprintf("Redis's clock agrees with this host's within the measurement's uncertainty (± %v)", round(unc))
	}
	if abs-unc > d.opts.MaxClockOffset {
		c.Finding = fmt.Sprintf("Redis's clock is more than %v off this host's: the limiter decides on Redis TIME, so its windows and resets are that far off the clients' clocks, and a failover to a server with another clock steps the limiter's time", d.opts.MaxClockOffset)
		c.Fix = "synchronise the Redis host's clock (chrony or systemd-timesyncd against the same NTP servers as this host)"
	} else {
		c.OK = true
	}
	d.rep.add(c)
}
