package text

import (
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"":                               "",
		"one":                            "one",
		"  one\ntwo\n":                   "one",
		"\n\nTraceback (most recent)\nx": "Traceback (most recent)",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("Of(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShort(t *testing.T) {
	if got := Short("abc\ndef", 10); got != "abc" {
		t.Errorf("Short = %q", got)
	}
	long := strings.Repeat("x", 200)
	if got := Short(long, 120); len(got) != 120 || !strings.HasSuffix(got, "...") {
		t.Errorf("Short of 200 bytes to 120: %d bytes, %q", len(got), got[len(got)-5:])
	}
}
