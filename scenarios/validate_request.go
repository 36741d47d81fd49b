package scenarios

import (
	"fmt"
	"io"
	"net/textproto"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Bounds on the files a scenario names.
const (
	// MaxBodyBytes is the largest request body a route may send.
	MaxBodyBytes = 1 << 20
	// MaxKeysFileBytes is the largest keys file a scenario may read.
	MaxKeysFileBytes = 64 << 20
)

// reservedHeaders are set by the transport or by rlbench itself; a route
// may not set them.
var reservedHeaders = []string{
	"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade",
	"X-Rlbench-Request", // traffic.RequestIDHeader: joins a request with its result
	"X-Vegeta-Seq",      // the load generator numbers its hits with it
}

// startedPath is a route path the targets rlbench starts serve: the sample
// API's extra routes (and the peers' locations) take letters, digits and
// . _ ~ - / only.
var startedPath = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)

// sampleAPIRoutes are the method and path pairs the sample API serves
// itself; a route of its instances cannot take one.
var sampleAPIRoutes = []string{
	"GET /v1/limits", "HEAD /v1/limits", "GET /healthz", "HEAD /healthz", "GET /metrics", "HEAD /metrics",
	"GET /v1/data", "GET /baseline/v1/data", "GET /v1/search", "GET /baseline/v1/search",
	"POST /v1/reports/export", "POST /baseline/v1/reports/export",
}

// routePath validates a route path that starts with / and holds no query
// string or fragment: at most MaxPathLength bytes, no space or control
// character, a URL path that reads back as written (so that the request
// goes to the path the scenario names). On a target rlbench starts
// (started), the path must also be one the server takes as written: the
// characters startedPath allows, in clean form (no //, /./ or /../, which
// Go's router answers with a redirect), and, on the sample API (sampleAPI),
// not one of its own routes.
func (v *validator) routePath(field, p, method string, started, sampleAPI bool) {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	u, err := url.Parse(p)
	switch {
	case len(p) > MaxPathLength:
		v.fail(field, "%d bytes long; a route path may have at most %d", len(p), MaxPathLength)
	case started && !startedPath.MatchString(p):
		v.fail(field, "%q: the targets rlbench starts take paths of letters, digits and . _ ~ - / only, as in /api/my-items", p)
	case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		v.fail(field, "%q holds a space or control character; percent-encode it, as in /search%%20results", p)
	case err != nil || u.Scheme != "" || u.Host != "" || u.EscapedPath() != p:
		v.fail(field, "%q is not a URL path as written; percent-encode characters outside letters, digits and -._~!$&'()*+,;=:@/, and start with a single /", p)
	case started && clean != p:
		v.fail(field, "%q is not in clean form; write %s (a server redirects //, /./ and /../ instead of answering)", p, clean)
	case sampleAPI && started && slices.Contains(sampleAPIRoutes, method+" "+p):
		v.fail(field, "%s %s is a route of the sample API itself; choose another path, such as /api%s", method, p, p)
	}
}

// runsSampleAPI reports whether the instances of r, if any, are the sample
// API: without a peer, or with redis_rate, which runs in the sample API.
func runsSampleAPI(r *rawTarget) bool {
	return r.Peer == "" || Peer(r.Peer) == PeerRedisRate
}

// routerConflicts reports a pair of routes the sample API's router (Go's
// http.ServeMux) refuses to hold together: a HEAD route on a path ending in
// / (which takes every path below it) and a GET route, the scenario's or
// the sample API's own, on a path below it. HEAD matches fewer methods and
// GET a narrower path, so neither pattern is more specific than the other.
func (v *validator) routerConflicts(routes []Route) {
	var gets []string
	for _, own := range sampleAPIRoutes {
		if p, ok := strings.CutPrefix(own, "GET "); ok {
			gets = append(gets, p)
		}
	}
	for _, rt := range routes {
		if rt.Method == "GET" {
			gets = append(gets, rt.Path)
		}
	}
	for i, rt := range routes {
		if rt.Method != "HEAD" || !strings.HasSuffix(rt.Path, "/") {
			continue
		}
		for _, g := range gets {
			if g != rt.Path && strings.HasPrefix(g, rt.Path) {
				v.fail(fmt.Sprintf("target.routes[%d].path", i), "HEAD %s takes every path below it, GET %s among them, and the sample API's router cannot tell which of the two a HEAD request for %s is for; give the HEAD route a path without the trailing /", rt.Path, g, g)
				return
			}
		}
	}
}

// request validates a route's request fields: query string, headers and
// body.
func (v *validator) request(field string, rr *rawRoute, rt *Route) {
	if strings.ContainsAny(rr.Path, "?#") {
		v.fail(field+".path", "%q holds a query string or fragment; give the path alone and the query string as query", rr.Path)
	}
	if rr.Query != "" {
		q := strings.TrimPrefix(rr.Query, "?")
		if _, err := url.ParseQuery(q); err != nil {
			v.fail(field+".query", "%q is not a query string (%v); write it encoded, such as page=2&sort=id", rr.Query, err)
		}
		rt.Query = q
	}
	names := make([]string, 0, len(rr.Headers))
	for name := range rr.Headers {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return textproto.CanonicalMIMEHeaderKey(names[i]) < textproto.CanonicalMIMEHeaderKey(names[j])
	})
	seen := map[string]string{}
	for _, name := range names {
		f := field + ".headers." + name
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch {
		case !headerPattern.MatchString(name):
			v.fail(f, "%q is not a header name (letters, digits and -)", name)
		case slices.Contains(reservedHeaders, canon):
			v.fail(f, "%s is set by rlbench or the transport; a route may not set it", canon)
		case seen[canon] != "":
			v.fail(f, "is %s again (given as %s); header names ignore case", canon, seen[canon])
		}
		seen[canon] = name
		raw := rr.Headers[name]
		val, env, err := expandEnv(raw, v.lookupEnv)
		if err != nil {
			v.fail(f, "%w", err)
			continue
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			v.fail(f, "the value holds a line break or NUL, which no header may carry")
		}
		rt.Headers = append(rt.Headers, Header{Name: canon, Template: raw, Value: NewSecret(val), Env: env})
	}
	switch {
	case rr.Body != nil && rr.BodyFile != "":
		v.fail(field+".body_file", "give either body or body_file, not both")
	case rr.Body != nil:
		rt.Body = []byte(*rr.Body)
		if len(rt.Body) > MaxBodyBytes {
			v.fail(field+".body", "%d bytes, above the %d a request body may have", len(rt.Body), MaxBodyBytes)
		}
	case rr.BodyFile != "":
		rt.BodyFile = rr.BodyFile
		data, err := v.readFile(field+".body_file", rr.BodyFile, MaxBodyBytes)
		if err == nil {
			rt.Body = data
		}
	}
}

// readFile reads the file a scenario names, relative to the scenario's
// directory, refusing one larger than limit bytes or not a regular file.
// Faults are recorded at field and returned.
func (v *validator) readFile(field, name string, limit int64) ([]byte, error) {
	fail := func(format string, args ...any) ([]byte, error) {
		v.fail(field, format, args...)
		return nil, v.err
	}
	if v.dir == "" {
		return fail("a shipped scenario cannot read files; write the content into the scenario")
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(v.dir, name)
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%v; the path is relative to the scenario file's directory", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fail("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return fail("read %s: %v", path, err)
	case int64(len(data)) > limit:
		return fail("%s is larger than the %d bytes rlbench reads", path, limit)
	}
	return data, nil
}

// routeConflicts reports a route header or query parameter that the
// identities' carry sets too, once both are validated.
func (v *validator) routeConflicts(t Target, id Identities) {
	for i, rt := range t.Routes {
		field := fmt.Sprintf("target.routes[%d]", i)
		for _, h := range rt.Headers {
			if id.Header != "" && strings.EqualFold(h.Name, id.Header) {
				v.fail(field+".headers", "%s is the header the identities are carried in (identities.carry: %s); remove it from the route", h.Name, id.Carry)
			}
		}
		if id.Carry == Query && rt.Query != "" {
			if q, err := url.ParseQuery(rt.Query); err == nil && q.Has(id.Name) {
				v.fail(field+".query", "sets %s, the parameter the identities are carried in; remove it from the route", id.Name)
			}
		}
	}
}

// keysFile reads a file of API keys or tokens: one a line, blank lines and
// lines starting with # skipped, each a run of printable ASCII without
// spaces (and, for a cookie, without the characters a cookie value cannot
// hold), none twice.
func (v *validator) keysFile(field, name string, carry Carry) []Secret {
	data, err := v.readFile(field, name, MaxKeysFileBytes)
	if err != nil {
		return nil
	}
	var keys []Secret
	first := map[string]int{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := fmt.Sprintf("%s line %d", name, n+1)
		bad := strings.IndexFunc(line, func(r rune) bool { return r <= ' ' || r > '~' })
		if bad < 0 && carry == Cookie {
			bad = strings.IndexAny(line, `;,"\`)
		}
		if bad >= 0 {
			// The key itself is never shown: only where the fault is.
			v.fail(field, "%s: the key holds a character a %s cannot carry at column %d", at, carry, bad+1)
			return nil
		}
		if prev, ok := first[line]; ok {
			v.fail(field, "%s: the same key as line %d; each identity needs its own key", at, prev)
			return nil
		}
		first[line] = n + 1
		keys = append(keys, NewSecret(line))
	}
	if len(keys) == 0 {
		v.fail(field, "%s holds no key; write one key a line", name)
	}
	return keys
}
