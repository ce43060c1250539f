package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestContainerFacts(t *testing.T) {
	root := t.TempDir()
	if c := containerFacts(root); c != nil {
		t.Fatalf("no container marker, got %+v", c)
	}
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A Kubernetes pod: no marker file, a cgroup path that names the pod.
	write("proc/self/cgroup", "4:memory:/kubepods/burstable/pod1234/abcd\n")
	if c := containerFacts(root); c == nil {
		t.Error("a pod's cgroup path is not taken for a container")
	}
	os.Remove(filepath.Join(root, "proc/self/cgroup"))
	write(".dockerenv", "")
	write("sys/fs/cgroup/memory.max", "17179869184\n")
	write("sys/fs/cgroup/pids.max", "4096\n")
	write("sys/fs/cgroup/cpu.max", "200000 100000\n")
	t.Setenv("NVIDIA_VISIBLE_DEVICES", "0")
	c := containerFacts(root)
	if c == nil || c.MemoryLimitBytes != 16<<30 || c.PidsLimit != 4096 || c.CPULimit != 2 || c.VisibleDevices != "0" || c.CPUs < 1 || c.ID == "" {
		t.Errorf("got %+v", c)
	}
	write("sys/fs/cgroup/memory.max", "max\n")
	write("sys/fs/cgroup/pids.max", "max\n")
	write("sys/fs/cgroup/cpu.max", "max 100000\n")
	c = containerFacts(root)
	if c.MemoryLimitBytes != 0 || c.PidsLimit != 0 || c.CPULimit != 0 {
		t.Errorf("no limits: got %+v", c)
	}
	// cgroup v1 spells them in controller folders.
	write("sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n")
	write("sys/fs/cgroup/pids/pids.max", "8192\n")
	if c = containerFacts(root); c.MemoryLimitBytes != 1<<30 || c.PidsLimit != 8192 {
		t.Errorf("cgroup v1: got %+v", c)
	}
}

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
		commit, dirty := Git(context.Background(), exp, inc...)
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
	if commit, dirty := Git(context.Background(), t.TempDir()); commit != "" || dirty {
		t.Errorf("outside a repository: %q, %v", commit, dirty)
	}
}
