package redisstore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

type redisError string

func (e redisError) Error() string { return string(e) }

func TestParseReply(t *testing.T) {
	tb := limiter.PerSecond(10, 20)
	fw := limiter.Window(limiter.FixedWindow, 5, time.Minute)
	cases := []struct {
		name   string
		reply  []any
		limits []limiter.Limit
		want   limiter.Decision
		err    error
	}{
		{
			name: "admitted", reply: []any{int64(1), int64(19), int64(100_000), int64(0), int64(0)},
			limits: []limiter.Limit{tb}, want: limiter.NewDecision(tb, true, 19, 100_000, 0, 0),
		},
		{
			name: "rejected by the second limit", limits: []limiter.Limit{tb, fw},
			reply: []any{int64(1), int64(19), int64(100_000), int64(0), int64(0), int64(0), int64(0), int64(30e6), int64(30e6), int64(0)},
			want:  limiter.NewDecision(fw, false, 0, 30e6, 30e6, 0),
		},
		{name: "too short", reply: []any{int64(1), int64(2)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "one array for two limits", reply: []any{int64(1), int64(19), int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb, fw}, err: ErrUnexpectedReply},
		{name: "string field", reply: []any{int64(1), "19", int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "nil field", reply: []any{int64(1), nil, int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "allowed flag 2", reply: []any{int64(2), int64(19), int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseReply(tc.reply, tc.limits)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("decision = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReplies: the flat reply of an evaluation is split into its requests'
// parts, five integers per limit or one error, and a reply of any other
// shape is refused whole.
func TestReplies(t *testing.T) {
	one := []any{int64(1), int64(2), int64(3), int64(4), int64(5)}
	two := append(append([]any{}, one...), one...)
	wrongType := redisError("WRONGTYPE Operation against a key holding the wrong kind of value")
	cases := []struct {
		name   string
		reply  any
		widths []int // per request: the values its part holds
		want   []int // per request: values in its part, -1 for an error
		err    error
	}{
		{"one", one, []int{5}, []int{5}, nil},
		{"two limits", two, []int{10}, []int{10}, nil},
		{"three requests", append(append([]any{}, one...), append([]any{wrongType}, two...)...), []int{5, 5, 10}, []int{5, -1, 10}, nil},
		{"a lease between plain requests", append(append(append([]any{}, one...), append(append([]any{}, one...), int64(3), int64(0))...), one...), []int{5, 7, 5}, []int{5, 7, 5}, nil},
		{"only an error", []any{wrongType}, []int{5}, []int{-1}, nil},
		{"fewer than requests", one, []int{5, 5}, nil, ErrUnexpectedReply},
		{"more than requests", two, []int{5}, nil, ErrUnexpectedReply},
		{"nested, as an earlier script replied", []any{one}, []int{5}, nil, ErrUnexpectedReply},
		{"not an array", int64(1), []int{5}, nil, ErrUnexpectedReply},
		{"empty", []any{}, []int{5}, nil, ErrUnexpectedReply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			err := replies(tc.reply, len(tc.widths), func(i int) int { return tc.widths[i] }, func(i int, vals []any, err error) {
				if i != len(got) {
					t.Fatalf("part %d after %d parts", i, len(got))
				}
				if err != nil {
					if vals != nil || !errors.Is(err, wrongType) {
						t.Fatalf("part %d: %v and %d values, want %v alone", i, err, len(vals), wrongType)
					}
					got = append(got, -1)
					return
				}
				got = append(got, len(vals))
			})
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if err != nil && len(got) > 0 {
				t.Fatalf("%d parts delivered from a reply refused whole", len(got))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("parts = %v, want %v", got, tc.want)
			}
		})
	}
}
