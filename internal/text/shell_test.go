package text

import "testing"

// A requirement or a path reaches /bin/sh as one word, as written.
func TestShellQuote(t *testing.T) {
	tests := map[string]string{
		"numpy":             "numpy",
		"triton==3.6.0":     "triton==3.6.0",
		"numpy>=2":          "'numpy>=2'",
		"a b":               "'a b'",
		"it's":              `'it'\''s'`,
		"torch[cuda]":       "'torch[cuda]'",
		"$(reboot)":         "'$(reboot)'",
		"git+https://x/y@v": "git+https://x/y@v",
	}
	for in, want := range tests {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
