package text

import (
	"regexp"
	"strings"
)

// ShellQuote quotes s for /bin/sh when it holds anything beyond plain
// characters: a path in a command a person pastes, an argument of a
// Dockerfile's RUN ("numpy>=2" would otherwise be a redirection).
func ShellQuote(s string) string {
	if shellPlain.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var shellPlain = regexp.MustCompile(`^[A-Za-z0-9._+=/:@,%^-]+$`)
