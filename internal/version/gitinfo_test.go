package version

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: it is how a run records its commit")
	}
	repo := t.TempDir()
	sh := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh("init", "-q")
	write("experiments/e/xrun.yaml", "name: e\n")
	write("kernels/k/k.py", "x = 1\n")
	write("other/notes.txt", "a\n")
	sh("add", ".")
	sh("commit", "-qm", "one")
	exp := filepath.Join(repo, "experiments", "e")
	inc := []string{"../../kernels/k"}
	check := func(what string, wantDirty bool) {
		t.Helper()
		commit, dirty := GitHead(context.Background(), exp, inc...)
		if len(commit) != 40 || dirty != wantDirty {
			t.Errorf("%s: commit %q, dirty %v; want a commit, dirty %v", what, commit, dirty, wantDirty)
		}
	}
	check("clean", false)
	write("other/notes.txt", "b\n")
	check("an edit outside the experiment", false)
	write("kernels/k/k.py", "x = 2\n")
	check("an edited include", true)
	sh("checkout", "-q", "--", "kernels")
	write("experiments/e/new.py", "")
	check("an untracked file in the experiment", true)
	// A tree copied with an older .git: the files are the next commit's.
	os.Remove(filepath.Join(exp, "new.py"))
	write("experiments/e/xrun.yaml", "name: e2\n")
	sh("commit", "-qam", "two")
	sh("reset", "-q", "--soft", "HEAD~1")
	sh("reset", "-q")
	check("a copy whose .git is a commit behind", true)
	if commit, dirty := GitHead(context.Background(), t.TempDir()); commit != "" || dirty {
		t.Errorf("outside a repository: %q, %v", commit, dirty)
	}
}
