package cli

import "strings"

// InterruptedTwice is what xrun says on stderr when a second Ctrl-C (or
// SIGTERM) aborts the command args (os.Args) run, and whether it then
// waits for the command's fast cleanup before exiting: the commands that
// follow a job remove its container; the history's commands have no job,
// and SQLite rolls back a write cut short, so they exit at once.
func InterruptedTwice(args []string) (note string, cleanup bool) {
	if commandOf(args) == "history" {
		return "xrun: interrupted twice: exiting now; the results history keeps the runs already written (one cut short is rolled back)", false
	}
	return "xrun: interrupted twice: removing the job's container and exiting (Ctrl-C again to exit at once)", true
}

// commandOf is the command args run: the first that is not a flag.
func commandOf(args []string) string {
	for _, a := range args[min(1, len(args)):] {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}
