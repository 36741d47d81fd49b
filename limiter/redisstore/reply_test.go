package redisstore

import (
	"errors"
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
		reply  any
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
		{name: "not an array", reply: "OK", limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "too short", reply: []any{int64(1), int64(2)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "one array for two limits", reply: []any{int64(1), int64(19), int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb, fw}, err: ErrUnexpectedReply},
		{name: "string field", reply: []any{int64(1), "19", int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "nil field", reply: []any{int64(1), nil, int64(1), int64(0), int64(0)}, limits: []limiter.Limit{tb}, err: ErrUnexpectedReply},
		{name: "error element", reply: redisError("WRONGTYPE Operation against a key holding the wrong kind of value"), limits: []limiter.Limit{tb}, err: redisError("WRONGTYPE Operation against a key holding the wrong kind of value")},
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

func TestReplies(t *testing.T) {
	cases := []struct {
		name  string
		reply any
		want  int
		err   error
	}{
		{"one", []any{[]any{int64(1)}}, 1, nil},
		{"three", []any{nil, nil, nil}, 3, nil},
		{"fewer than requests", []any{nil}, 2, ErrUnexpectedReply},
		{"not an array", int64(1), 1, ErrUnexpectedReply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := replies(tc.reply, tc.want)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if err == nil && len(got) != tc.want {
				t.Fatalf("len = %d, want %d", len(got), tc.want)
			}
		})
	}
}
