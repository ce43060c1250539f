package cli

import "strings"

// InterruptedTwice is what xrun says on stderr when a second Ctrl-C (or
// SIGTERM) aborts the command args (os.Args) run, and whether it then
// waits for the command's fast cleanup before exiting: the commands that
// follow a job remove its container; the history's commands and report
// have no job (SQLite rolls back a write cut short, and a report's site
// replaces the old one in one rename), so they exit at once.
func InterruptedTwice(args []string) (note string, cleanup bool) {
	switch commandOf(args) {
	case "history":
		return "xrun: interrupted twice: exiting now; the results history keeps the runs already written (one cut short is rolled back)", false
	case "report":
		// The site is written beside its directory and takes its place
		// in one rename: what a kill leaves, the next report removes.
		return "xrun: interrupted twice: exiting now; the site's directory is as it was", false
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
