package provider

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestExternalSecretRedacted: an external Redis URL that does not parse,
// or does not answer, is named in the error without its password.
func TestExternalSecretRedacted(t *testing.T) {
	const pw = "hunter2-ext-9a"
	for _, raw := range []string{
		"redis://:" + pw + "@127.0.0.1:bad/0",
		"redis://:" + pw + "@127.0.0.1:1/0?dial_timeout=200ms",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := StartExternal(ctx, raw)
		cancel()
		if err == nil {
			t.Fatalf("StartExternal(%s): no error", raw)
		}
		if msg := err.Error(); strings.Contains(msg, pw) || !strings.Contains(msg, "xxxxx") {
			t.Errorf("StartExternal error = %q, want the URL with its password redacted", msg)
		}
	}
}
