package nearest

import "testing"

func TestWord(t *testing.T) {
	valid := []string{"name", "description", "traffic", "target", "identities", "rate_limit_burst"}
	tests := []struct{ in, want string }{
		{"trafic", "traffic"},
		{"Traffic", "traffic"},
		{"descripton", "description"},
		{"rate_limit_brust", "rate_limit_burst"},
		{"colour", ""}, // nothing resembles it
		{"nme", "name"},
		{"identity", "identities"},
		{"Description", "description"},
		{"zzzzzzzz", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Word(tt.in, valid); got != tt.want {
			t.Errorf("Word(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"kitten", "sitting", 3}, {"abc", "", 3}, {"flaw", "lawn", 2}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
