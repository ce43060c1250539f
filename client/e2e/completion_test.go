//go:build integration

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// The completion scripts work in the shells themselves: bash completes
// commands, flags and job ids by asking xrun.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "no bash on PATH")
	}
	script := x.Run(t, time.Minute, "completion", "bash")
	expect(t, script, 0)
	dir := t.TempDir()
	file := filepath.Join(dir, "xrun.bash")
	if err := os.WriteFile(file, []byte(script.Stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		var q []string
		for _, w := range words {
			q = append(q, "'"+w+"'")
		}
		prog := `source "$1"; COMP_WORDS=(` + strings.Join(q, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _xrun_complete; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "-c", prog, "bash", file)
		cmd.Env = append(env(), "PATH="+filepath.Dir(xrunBin)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return string(out)
	}
	if got := complete("xrun", "sub"); strings.TrimSpace(got) != "submit" {
		t.Errorf("xrun sub<TAB>: %q", got)
	}
	if got := complete("xrun", "submit", "--det"); strings.TrimSpace(got) != "--detach" {
		t.Errorf("xrun submit --det<TAB>: %q", got)
	}
	if got := complete("xrun", "completion", ""); got != "bash\nzsh\nfish\n" {
		t.Errorf("xrun completion <TAB>: %q", got)
	}
	r := submit(t, 5*time.Minute, "quick", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	defer x.Run(t, time.Minute, "rm", "-f", id)
	if got := complete("xrun", "logs", id[:10]); strings.TrimSpace(got) != id {
		t.Errorf("xrun logs %s<TAB>: %q", id[:10], got)
	}
	if got := complete("xrun", "rm", "--for"); strings.TrimSpace(got) != "--force" {
		t.Errorf("xrun rm --for<TAB>: %q", got)
	}
	for _, sh := range []string{"zsh", "fish"} {
		s := x.Run(t, time.Minute, "completion", sh)
		expect(t, s, 0)
		if !strings.Contains(s.Stdout, "xrun") {
			t.Errorf("%s script:\n%s", sh, s.Stdout)
		}
	}
	expect(t, x.Run(t, time.Minute, "completion", "tcsh"), 3, "unknown shell")
}
