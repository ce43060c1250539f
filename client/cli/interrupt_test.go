package cli

import (
	"strings"
	"testing"
)

// A second Ctrl-C says what it does: a history command has no container
// to remove and exits at once; a job's command removes its container.
func TestInterruptedTwice(t *testing.T) {
	for _, args := range [][]string{{"xrun", "history", "import", "x"}, {"xrun", "-v", "history", "rm", "a"}} {
		if note, cleanup := InterruptedTwice(args); cleanup || strings.Contains(note, "container") || !strings.Contains(note, "history") {
			t.Errorf("%v: %q, cleanup %v", args, note, cleanup)
		}
	}
	if note, cleanup := InterruptedTwice([]string{"xrun", "report", "--html", "site"}); cleanup || strings.Contains(note, "container") || !strings.Contains(note, "site") {
		t.Errorf("report: %q, cleanup %v", note, cleanup)
	}
	if note, cleanup := InterruptedTwice([]string{"xrun", "submit", "exp"}); !cleanup || !strings.Contains(note, "container") {
		t.Errorf("submit: %q, cleanup %v", note, cleanup)
	}
}
