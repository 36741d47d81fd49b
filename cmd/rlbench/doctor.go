package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rlbench/rlbench/harness/doctor"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// doctorCommand checks a Redis that a limiter will keep its state in.
type doctorCommand struct{ stdout io.Writer }

// doctorFlags are the doctor's flags, bound to a flag set.
type doctorFlags struct {
	json           bool
	storeTimeout   time.Duration
	maxClockOffset time.Duration
	pings          int
	prefix         string
}

func (f *doctorFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.BoolVar(&f.json, "json", false, "print the report as JSON (schema "+doctor.Schema+")")
	fs.DurationVar(&f.storeTimeout, "store-timeout", resilience.DefaultTimeout, "the limiter's timeout per store call; a p99 round trip above half of it is a finding")
	fs.DurationVar(&f.maxClockOffset, "max-clock-offset", doctor.DefaultMaxClockOffset, "a clock offset to this host beyond this is a finding")
	fs.IntVar(&f.pings, "pings", doctor.DefaultPings, "PINGs that measure the round trip")
	fs.StringVar(&f.prefix, "prefix", redisstore.DefaultPrefix, "the limiter's key prefix (probe and sample keys use it)")
	return fs
}

var doctorHelp = help{
	synopsis: "rlbench doctor [flags] REDIS_URL",
	about: `Checks a Redis that a rate limiter will keep its state in, and prints each
finding with its fix: an eviction policy that can drop limiter state while
maxmemory is set; scripting, EVALSHA, EVAL, SCRIPT LOAD, TIME or the
scripts' commands refused (by trying them; the probe keys expire within a
second); FUNCTION LOAD and FCALL, which the reference limiter uses on Redis 7
where they are allowed (a one-line library, rlbench_doctor, deleted at once);
a replica or a Sentinel; in cluster mode, one identity's keys in
one slot; round-trip latency against the store timeout; the clock offset
to this host; the server version. Passwords in the URL are never printed.
REDIS_URL is redis://[user:password@]host:port[/db], rediss://... or
unix:///path.`,
	footer: `Exit codes: 0 healthy, 1 one or more findings, 2 unreachable, a refused login or usage.`,
}

func (c *doctorCommand) Usage() string { return doctorHelp.text((&doctorFlags{}).flagSet()) }

func (c *doctorCommand) Run(ctx context.Context, args []string) error {
	var f doctorFlags
	fs := f.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	positional := fs.Args()
	if len(positional) != 1 {
		return usagef("name one Redis URL, as in redis://127.0.0.1:6379 (got %d arguments)", len(positional))
	}
	if f.storeTimeout <= 0 || f.maxClockOffset <= 0 || f.pings < 1 {
		return usagef("--store-timeout and --max-clock-offset must be positive and --pings at least 1")
	}
	rep, err := doctor.Diagnose(ctx, positional[0], doctor.Options{
		StoreTimeout:   f.storeTimeout,
		Pings:          f.pings,
		MaxClockOffset: f.maxClockOffset,
		Prefix:         f.prefix,
	})
	if errors.Is(err, doctor.ErrInvalidURL) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if f.json {
		err = rep.WriteJSON(c.stdout)
	} else {
		err = rep.WriteText(c.stdout)
	}
	if err != nil {
		return err
	}
	if !rep.Healthy() {
		noun := "findings"
		if rep.Findings == 1 {
			noun = "finding"
		}
		return fmt.Errorf("%d %s: %w", rep.Findings, noun, errChecksFailed)
	}
	return nil
}
