//go:build integration

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

// standbyOn is the environment that lets a submit claim and leave
// standbys (the suite turns them off for every other test).
var standbyOn = []string{"XRUN_NO_STANDBY=false"}

// waitingStandbys are the names of the waiting standbys of experiment.
func waitingStandbys(t *testing.T, experiment string) []string {
	t.Helper()
	var out []string
	for _, n := range dockerCLIList(t, "ps", "-a", "--format", "{{.Names}}", "--filter", "label=dev.xrun.standby", "--filter", "label=dev.xrun.experiment="+experiment) {
		if strings.HasSuffix(n, "-standby") {
			out = append(out, n)
		}
	}
	return out
}

// standbyFixture copies the quick fixture under a name of its own.
func standbyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"vecadd.py", "xrun.yaml"} {
		b, err := os.ReadFile(filepath.Join(fixturePath("quick"), f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "xrun.yaml" {
			b = []byte(strings.Replace(string(b), "name: e2e-quick", "name: e2e-standby", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// An attached submit leaves a standby for the experiment's next submit,
// which runs its job in it with the code it was submitted with; ps does
// not list a waiting standby; two submits at once get one standby
// between them; other settings do not take one; --no-standby neither
// takes nor leaves one; prune removes it.
func TestStandby(t *testing.T) {
	dir := standbyFixture(t)
	sub := func(extra ...string) res {
		t.Helper()
		args := append([]string{"submit", "--json", "--cpu", "--base", Base, "--label", labelArg}, extra...)
		return x.RunEnv(t, 5*time.Minute, standbyOn, append(args, dir)...)
	}
	first := sub()
	expect(t, first, 0)
	if strings.Contains(first.Stderr, "standby: waited") {
		t.Errorf("the first submit ran in a standby:\n%s", first.Stderr)
	}
	if got := waitingStandbys(t, "e2e-standby"); len(got) != 1 {
		t.Fatalf("after the first submit: waiting standbys %v, want one", got)
	}
	standbyID := strings.TrimSuffix(strings.TrimPrefix(waitingStandbys(t, "e2e-standby")[0], "xrun-e2e-standby-"), "-standby")
	for _, j := range x.Jobs(t) {
		if j.ID == standbyID {
			t.Errorf("ps lists the waiting standby %s as a job: %+v", standbyID, j)
		}
	}

	// The next submit, with other code and an edited xrun.yaml, runs in it.
	for _, f := range []string{"vecadd.py", "xrun.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), append(mustRead(t, filepath.Join(dir, f)), "\n# edited\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	second := sub()
	expect(t, second, 0)
	if !strings.Contains(second.Stderr, "standby: waited") {
		t.Errorf("the second submit did not run in the standby:\n%s", second.Stderr)
	}
	id1, id2 := xruntest.JobID(t, first), xruntest.JobID(t, second)
	if id2 != standbyID {
		t.Errorf("the second job is %s, want the standby's id %s", id2, standbyID)
	}
	r1, r2 := x.Results(t, id1), x.Results(t, id2)
	if r2.Image.CodeHash == "" || r2.Image.CodeHash == r1.Image.CodeHash {
		t.Errorf("code hash of the job run in the standby %q, first job's %q: want the edited code's", r2.Image.CodeHash, r1.Image.CodeHash)
	}
	if r2.SpecHash == "" || r2.SpecHash == r1.SpecHash {
		t.Errorf("spec hash of the job run in the standby %q, first job's %q: want the edited xrun.yaml's", r2.SpecHash, r1.SpecHash)
	}
	if st := x.Status(t, id2); st.Status != "succeeded" {
		t.Errorf("the job run in the standby: status %+v", st)
	}

	// Two at once: one takes the standby, both succeed.
	var wg sync.WaitGroup
	both := make([]res, 2)
	for i := range both {
		wg.Add(1)
		go func() { defer wg.Done(); both[i] = sub() }()
	}
	wg.Wait()
	warm := 0
	for _, r := range both {
		expect(t, r, 0)
		if strings.Contains(r.Stderr, "standby: waited") {
			warm++
		}
	}
	if warm != 1 {
		t.Errorf("%d of two submits at once ran in the one standby, want 1", warm)
	}
	if got := waitingStandbys(t, "e2e-standby"); len(got) != 1 {
		t.Errorf("after two submits at once: waiting standbys %v, want one", got)
	}

	// Other settings (an environment variable) cannot use it: it is
	// replaced, and the job runs in a container of its own.
	other := sub("--env", "E2E_STANDBY=1")
	expect(t, other, 0)
	if strings.Contains(other.Stderr, "standby: waited") {
		t.Errorf("a submit with other settings ran in the standby:\n%s", other.Stderr)
	}
	before := waitingStandbys(t, "e2e-standby")
	none := sub("--no-standby")
	expect(t, none, 0)
	if strings.Contains(none.Stderr, "standby: waited") {
		t.Errorf("--no-standby ran in the standby:\n%s", none.Stderr)
	}
	if after := waitingStandbys(t, "e2e-standby"); len(after) != 1 || after[0] != before[0] {
		t.Errorf("--no-standby changed the waiting standbys from %v to %v", before, after)
	}

	// The host may have other experiments' standbys: prune takes all of
	// this user's.
	p := x.Run(t, time.Minute, "prune")
	expect(t, p, 0)
	if !regexp.MustCompile(`removed [1-9][0-9]* standby containers?`).MatchString(p.Stderr) {
		t.Errorf("prune does not say it removed the standby:\n%s", p.Stderr)
	}
	if got := waitingStandbys(t, "e2e-standby"); len(got) != 0 {
		t.Errorf("prune left the standbys %v", got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
