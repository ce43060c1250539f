// OneLine and Short make one line of a text for a table cell, a log line or
// an error: its first non-blank line, and at most so many bytes of it.

package text

import "strings"

// OneLine is the first line of s, with the space around s trimmed first.
func OneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Short is Of(s) cut to at most n bytes, "..." in place of the rest: a
// line that fits a table cell (n > 3).
func Short(s string, n int) string {
	s = OneLine(s)
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}
