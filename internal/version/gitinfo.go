// GitHead says which commit an experiment's files are, for
// results.json's provenance: the runner reads it where it runs, and a
// submit where the files come from.

package version

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"time"
)

// GitHead returns HEAD of the repository dir is in ("" when it is in none or
// git is missing) and whether the experiment's files differ from it: dir
// and the includes (relative to dir) have uncommitted changes or untracked
// files. A copy of a checkout whose .git is older than its files (a tree
// sent to another machine) reads dirty, as it should.
func GitHead(ctx context.Context, dir string, includes ...string) (commit string, dirty bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	args := append([]string{"-C", dir, "status", "--porcelain", "--", "."}, includes...)
	status, err := exec.CommandContext(ctx, "git", args...).Output()
	return strings.TrimSpace(string(out)), err != nil || len(bytes.TrimSpace(status)) > 0
}
