package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios/nearest"
)

// usageWidth is the column the usage texts wrap at.
const usageWidth = 80

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// floatFlag is a float64 flag that takes only finite numbers within
// [min, max]: NaN and the infinities, which strconv.ParseFloat (and so
// flag.Float64Var) accepts, would turn every comparison against them false
// and every bound they set into no bound at all. Every float flag of every
// subcommand is one (floatVar).
type floatFlag struct {
	p        *float64
	min, max float64
	// want says what the flag takes, as in "a fraction from 0 to 1".
	want string
}

// floatVar defines a float64 flag on fs, as fs.Float64Var does, that
// refuses NaN, the infinities and values outside [min, max] with an error
// saying want.
func floatVar(fs *flag.FlagSet, p *float64, name string, value, min, max float64, want, usage string) {
	*p = value
	fs.Var(&floatFlag{p: p, min: min, max: max, want: want}, name, usage)
}

func (f *floatFlag) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

// Set parses s. Errors say why and what the flag takes.
func (f *floatFlag) Set(s string) error {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return fmt.Errorf("not a number; want %s", f.want)
	case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Errorf("not a finite number; want %s", f.want)
	case x < f.min || x > f.max:
		return fmt.Errorf("out of range; want %s", f.want)
	}
	*f.p = x
	return nil
}

// Get returns the flag's value, a float64 (flag.Getter).
func (f *floatFlag) Get() any { return *f.p }

// parseArgs parses args with fs, flags accepted before and after the
// positional arguments (see flagsFirst). It returns flag.ErrHelp for -h or
// --help and a usage error for anything else fs rejects, which names the
// flag and what it takes (flagError).
func parseArgs(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	args, err := flagsFirst(fs, args)
	if err != nil {
		return usagef("%v", err)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s", flagError(fs, err))
	}
	return nil
}

// flagError restates an error of fs.Parse in the words of rlbench's other
// usage errors: the flag as --NAME and its value first, then what it takes
// ("--nope: no such flag; did you mean --note?", "--shards x: not a whole
// number"). The flag package's own words stay for what it does not say in
// one of its known forms.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if w := nearest.Word(name, names); w != "" {
			return fmt.Sprintf("--%s: no such flag; did you mean --%s?", name, w)
		}
		return fmt.Sprintf("--%s: no such flag", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s: needs a value, as --%s VALUE", name, name)
	}
	// flag.FlagSet.Parse: `invalid value "V" for flag -NAME: REASON` and
	// `invalid boolean value "V" for -NAME: REASON`.
	for _, prefix := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		value, err := strconv.QuotedPrefix(rest)
		if err != nil {
			break
		}
		rest = strings.TrimPrefix(strings.TrimPrefix(rest[len(value):], " for flag -"), " for -")
		name, reason, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if f := fs.Lookup(name); f != nil && (reason == "parse error" || reason == "value out of range") {
			reason = flagWants(f, reason)
		}
		if v, err := strconv.Unquote(value); err == nil && v != "" && !strings.ContainsAny(v, " \t\"") {
			value = v
		}
		return fmt.Sprintf("--%s %s: %s", name, value, reason)
	}
	return msg
}

// flagWants says what a flag of the standard types takes, for the flag
// package's bare "parse error" or "value out of range" (reason).
func flagWants(f *flag.Flag, reason string) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return reason
	}
	switch g.Get().(type) {
	case bool:
		return "want true or false"
	case int, int64, uint, uint64:
		if reason == "value out of range" {
			return "out of range; want a whole number"
		}
		return "not a whole number"
	case time.Duration:
		return "not a duration; want a number with a unit, as 500ms, 30s or 2m"
	}
	return reason
}

// flagsFirst returns args reordered for fs.Parse, which stops at the first
// positional argument: every flag, with its value, ahead of the positional
// arguments, each group in its order. A flag is an argument that starts with
// "-" and is more than "-"; it takes the next argument as its value unless
// it carries one ("--out=DIR"), is a boolean flag of fs (IsBoolFlag) or is
// unknown to fs (fs.Parse then reports it). "--" ends the flags: what
// follows is positional, however it looks. The positional arguments follow a
// "--" in the result, so that fs.Parse takes none of them for a flag. A flag
// of fs that needs a value and has none is an error, which fs.Parse would
// otherwise not see once a positional argument follows.
func flagsFirst(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case len(a) < 2 || a[0] != '-':
			positional = append(positional, a)
		default:
			flags = append(flags, a)
			name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
			if strings.Contains(name, "=") {
				continue
			}
			f := fs.Lookup(name)
			if f == nil || isBoolFlag(f) {
				continue
			}
			if i+1 == len(args) {
				return nil, fmt.Errorf("--%s: needs a value, as --%s VALUE", name, name)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	if len(positional) == 0 {
		return flags, nil
	}
	return append(append(flags, "--"), positional...), nil
}

// isBoolFlag reports whether f takes no value, as flag.FlagSet decides it.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// help is a subcommand's usage text, built around its flag set so that the
// list of flags cannot drift from the flags themselves.
type help struct {
	// synopsis is the command line, as in "rlbench run [flags] SCENARIO...".
	synopsis string
	// about describes the command. Paragraphs are separated by a blank
	// line and wrapped at usageWidth; a line that starts with a space is
	// kept as written (examples, lists).
	about string
	// footer follows the flags, wrapped as about is: the exit codes.
	footer string
	// drills names flags for drills and tests, listed apart from the
	// others under drillsHeading.
	drills []string
}

// drillsHeading heads the flags of a usage that are for drills and tests.
const drillsHeading = "For drills and tests only (a run given them records them in run.json):"

// text returns the usage: the synopsis, the description, every flag of fs
// with its argument name, usage and default (those for drills apart, after
// the others), and the footer.
func (h help) text(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", h.synopsis)
	if h.about != "" {
		b.WriteString("\n" + wrap(h.about, usageWidth))
	}
	drill := func(f *flag.Flag) bool { return slices.Contains(h.drills, f.Name) }
	if flags := flagList(fs, func(f *flag.Flag) bool { return !drill(f) }); flags != "" {
		b.WriteString("\nFlags:\n" + flags)
	}
	if flags := flagList(fs, drill); flags != "" {
		b.WriteString("\n" + wrap(drillsHeading, usageWidth) + flags)
	}
	if h.footer != "" {
		b.WriteString("\n" + wrap(h.footer, usageWidth))
	}
	return b.String()
}

// flagList formats the flags of fs that keep reports as flag.PrintDefaults
// does (in name order, the argument name from the usage's back-quoted word
// or the flag's type, the default when it is not the zero value) but in two
// columns, with a double dash and the argument name in capitals, each usage
// wrapped at usageWidth.
func flagList(fs *flag.FlagSet, keep func(*flag.Flag) bool) string {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f) {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		left := "  --" + f.Name
		if arg != "" {
			left += " " + strings.ToUpper(arg) // "duration" as DURATION, like the named ones
		}
		if !isZeroDefault(f) {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	})
	// Usages start in one column, unless a flag is so long that its usage
	// would be squeezed: that one goes on the next line.
	const maxLeft = 28
	col := min(width, maxLeft) + 2
	var b strings.Builder
	for _, r := range rows {
		lines := strings.Split(strings.TrimSuffix(wrapParagraph(r.usage, usageWidth-col), "\n"), "\n")
		if len(r.left) > maxLeft {
			b.WriteString(r.left + "\n")
			b.WriteString(strings.Repeat(" ", col) + lines[0] + "\n")
		} else {
			b.WriteString(r.left + strings.Repeat(" ", col-len(r.left)) + lines[0] + "\n")
		}
		for _, l := range lines[1:] {
			b.WriteString(strings.Repeat(" ", col) + l + "\n")
		}
	}
	return b.String()
}

// isZeroDefault reports whether f's default is its type's zero value, which
// the usage does not mention.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false", "[]":
		return true
	}
	return false
}

// wrap wraps each paragraph of text (paragraphs are separated by blank
// lines) at width columns; lines that start with a space are kept as they
// are.
func wrap(text string, width int) string {
	var b strings.Builder
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.WriteString(wrapParagraph(strings.Join(para, " "), width))
			para = nil
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			b.WriteString("\n")
		case line[0] == ' ':
			flush()
			b.WriteString(line + "\n")
		default:
			para = append(para, strings.TrimSpace(line))
		}
	}
	flush()
	return b.String()
}

// wrapParagraph fills words into lines of at most width columns (a longer
// word has a line of its own), each ending in a newline.
func wrapParagraph(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		switch {
		case n == 0:
		case n+1+len([]rune(w)) > width:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len([]rune(w))
	}
	b.WriteString("\n")
	return b.String()
}

// shardFlag is --shard: "I/N", shard I (from 0) of N of a sharded run, or
// "I", shard I of each scenario's shards.count (a Shard with Count 0).
// Nil until it is set.
type shardFlag struct{ s *history.Shard }

func (f *shardFlag) String() string {
	switch {
	case f == nil || f.s == nil:
		return ""
	case f.s.Count == 0:
		return strconv.Itoa(f.s.Index)
	}
	return f.s.String()
}

// Set parses v. Errors name the forms the flag takes.
func (f *shardFlag) Set(v string) error {
	if strings.Contains(v, "/") {
		s, err := history.ParseShard(v)
		if err != nil {
			return err
		}
		f.s = &s
		return nil
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || i < 0 || i >= history.MaxShards {
		return fmt.Errorf("want I/N, as 0/3 (shard 0 of 3), or I (from 0) for shard I of the scenario's shards.count")
	}
	f.s = &history.Shard{Index: i}
	return nil
}

// durationsFlag is a comma-separated list of durations, one per shard, as
// "0,300ms,-2s"; an empty item is 0.
type durationsFlag []time.Duration

func (d *durationsFlag) String() string {
	if d == nil {
		return ""
	}
	s := make([]string, len(*d))
	for i, v := range *d {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

// Set parses v. Errors name the item and the form the flag takes.
func (d *durationsFlag) Set(v string) error {
	var out durationsFlag
	for i, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			out = append(out, 0)
			continue
		}
		x, err := time.ParseDuration(item)
		if err != nil {
			return fmt.Errorf("item %d %q is not a duration: want one per shard, comma-separated, as 0,300ms,-2s", i+1, item)
		}
		out = append(out, x)
	}
	*d = out
	return nil
}
