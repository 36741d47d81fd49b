package httplimit

import (
	"encoding/json"
	"net/http"
)

// Problem is an RFC 9457 problem details object, the body of every response
// the middleware writes itself (media type application/problem+json). Type
// is "about:blank" and Title the status phrase, as RFC 9457 §4.2.1 allows.
// Policy and RetryAfter are extension members set on 429 responses.
type Problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail,omitempty"`
	Instance   string `json:"instance,omitempty"`
	Policy     string `json:"policy,omitempty"`
	RetryAfter int64  `json:"retryAfter,omitempty"`
}

// WriteProblem writes p with its status code as application/problem+json.
// It fills Type and Title when empty.
func WriteProblem(w http.ResponseWriter, p Problem) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	body, err := json.Marshal(p)
	if err != nil { // a Problem always marshals; keep the status regardless
		body = []byte(`{"type":"about:blank"}`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}
