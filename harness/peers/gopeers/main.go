// Command rlbench-gopeers serves the Go peers of rlbench (harness/peers):
// go-chi/httprate (sliding window counter, in memory), ulule/limiter v3 on
// its Redis store, and sethvargo/go-limiter's memorystore, each limiting the
// routes of the JSON configuration in RLBENCH_PEER_CONFIG (the
// peers.ProcConfig of rlbench) with its own HTTP middleware, keyed by the
// identity header. It is a module of its own, so that the rlbench binary
// does not link the libraries it holds to their claims; `make peers` builds
// it into bin/rlbench-gopeers. It prints "listening on HOST:PORT" once it
// serves, and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// config mirrors peers.ProcConfig.
type config struct {
	Peer           string  `json:"peer"`
	Port           int     `json:"port"`
	RedisURL       string  `json:"redisURL"`
	Header         string  `json:"header"`
	FailureMode    string  `json:"failureMode"`
	StoreTimeoutMs int64   `json:"storeTimeoutMs"`
	Routes         []route `json:"routes"`
}

type route struct {
	Method   string `json:"method"`
	Path     string `json:"path"`
	Limit    int64  `json:"limit"`
	WindowMs int64  `json:"windowMs"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("rlbench-gopeers: ")
	if len(os.Args) > 1 {
		log.Fatalf("takes no arguments; its configuration is the JSON in RLBENCH_PEER_CONFIG")
	}
	var cfg config
	if err := json.Unmarshal([]byte(os.Getenv("RLBENCH_PEER_CONFIG")), &cfg); err != nil {
		log.Fatalf("RLBENCH_PEER_CONFIG: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cfg config) error {
	var rdb *redis.Client
	if cfg.Peer == "ulule_limiter" {
		opts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return fmt.Errorf("redisURL %q: %w", cfg.RedisURL, err)
		}
		opts.DisableIndentity = true
		if cfg.StoreTimeoutMs > 0 {
			d := time.Duration(cfg.StoreTimeoutMs) * time.Millisecond
			opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = d, d, d
		}
		opts.MaxRetries = -1 // one attempt: the store timeout bounds the decision
		rdb = redis.NewClient(opts)
		defer rdb.Close()
	}
	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	key := func(r *http.Request) string { return r.Header.Get(cfg.Header) }
	for i, rt := range cfg.Routes {
		var h http.Handler = ok
		if rt.Limit > 0 {
			window := time.Duration(rt.WindowMs) * time.Millisecond
			var err error
			if h, err = limited(cfg.Peer, rdb, i, rt.Limit, window, key, ok); err != nil {
				return fmt.Errorf("route %s: %w", rt.Path, err)
			}
		}
		mux.Handle(rt.Method+" "+rt.Path, h)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// limited wraps next in peer's middleware: limit requests per window per
// key, route index i keeping its own counters.
func limited(peer string, rdb *redis.Client, i int, limit int64, window time.Duration, key func(*http.Request) string, next http.Handler) (http.Handler, error) {
	switch peer {
	case "httprate":
		// httprate.LimitBy: its documented sliding window counter, in memory.
		return httprate.LimitBy(int(limit), window, func(r *http.Request) (string, error) { return key(r), nil })(next), nil
	case "ulule_limiter":
		store, err := ulredis.NewStoreWithOptions(rdb, ulule.StoreOptions{Prefix: "rl-ulule-" + strconv.Itoa(i), MaxRetry: 1})
		if err != nil {
			return nil, err
		}
		lim := ulule.New(store, ulule.Rate{Period: window, Limit: limit})
		mw := stdlib.NewMiddleware(lim,
			stdlib.WithKeyGetter(key),
			stdlib.WithLimitReachedHandler(func(w http.ResponseWriter, r *http.Request) {
				// X-RateLimit-Reset (Unix seconds) is set; Retry-After is the
				// wait until it, as ulule's README leaves to the application.
				if reset, err := strconv.ParseInt(w.Header().Get("X-RateLimit-Reset"), 10, 64); err == nil {
					wait := int64(math.Ceil(time.Until(time.Unix(reset, 0)).Seconds()))
					w.Header().Set("Retry-After", strconv.FormatInt(max(wait, 1), 10))
				}
				http.Error(w, "Limit exceeded", http.StatusTooManyRequests)
			}))
		return mw.Handler(next), nil
	case "go_limiter":
		store, err := memorystore.New(&memorystore.Config{Tokens: uint64(limit), Interval: window})
		if err != nil {
			return nil, err
		}
		// httplimit's own middleware, keyed by the identity header.
		mw, err := httplimit.NewMiddleware(store, func(r *http.Request) (string, error) { return key(r), nil })
		if err != nil {
			return nil, err
		}
		return mw.Handle(next), nil
	}
	return nil, fmt.Errorf("unknown peer %q; rlbench-gopeers serves httprate, ulule_limiter and go_limiter", peer)
}
