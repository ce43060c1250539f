//go:build integration

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

// scripts/nightly.sh, the nightly workflow's step, over this daemon and a
// host that cannot be reached: the reachable host's results are kept, no
// comparison is made of one job, and the exit says the infrastructure
// failed (4).
func TestNightlyScript(t *testing.T) {
	out := t.TempDir()
	e := append(env(), "XRUN="+xrunBin, "XRUN_HOSTS="+eng.Host()+" tcp://127.0.0.1:1", "XRUN_HISTORY="+filepath.Join(out, "history.db"))
	r := xruntest.Run(t, 3*time.Minute, "bash", e, filepath.Join(repo, "scripts", "nightly.sh"),
		"--cpu", "--base", Base, "--label", labelArg, fixturePath("quick"), out)
	if r.Code != 4 || !strings.Contains(r.Stderr, "1 of 2 hosts failed") || !strings.Contains(r.Stderr, "1 of 2 host(s) ran a job") {
		t.Fatalf("exit %d, want 4 with one job; stderr:\n%s", r.Code, r.Stderr)
	}
	d := filepath.Join(out, "quick")
	var jobs []struct {
		ID string `json:"id"`
	}
	data, err := os.ReadFile(filepath.Join(d, "submit.json"))
	if err != nil || json.Unmarshal(data, &jobs) != nil || len(jobs) != 1 {
		t.Fatalf("submit.json (%v): %s", err, data)
	}
	id := jobs[0].ID
	defer x.Run(t, time.Minute, "rm", "--force", id)
	md, err := os.ReadFile(filepath.Join(d, id+".md"))
	if err != nil || !strings.Contains(string(md), "e2e-quick") || !strings.Contains(string(md), "## Figures") {
		t.Errorf("%s.md (%v):\n%s", id, err, md)
	}
	if _, err := os.Stat(filepath.Join(d, id, "time.png")); err != nil {
		t.Errorf("the report's figure: %v", err)
	}
	var res struct {
		Status string `json:"status"`
	}
	data, err = os.ReadFile(filepath.Join(d, id+".json"))
	if err != nil || json.Unmarshal(data, &res) != nil || res.Status != "succeeded" {
		t.Errorf("%s.json (%v): %.300s", id, err, data)
	}
	if _, err := os.Stat(filepath.Join(d, "compare.md")); err == nil {
		t.Error("compare.md made of a single job")
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil || !strings.Contains(string(summary), "## Regressions: e2e-quick") || !strings.Contains(string(summary), "1 of 2 host(s)") {
		t.Errorf("summary.md (%v):\n%s", err, summary)
	}
}

// An experiment whose criterion is declared to fail, failing it, makes a
// green nightly: the outcome is the declared one and nothing regressed.
func TestNightlyScriptExpectedFailureIsGreen(t *testing.T) {
	out := t.TempDir()
	e := append(env(), "XRUN="+xrunBin, "XRUN_HOSTS=", "XRUN_HISTORY="+filepath.Join(out, "history.db"), "DRIFT_SLOWDOWN=1")
	r := xruntest.Run(t, 5*time.Minute, "bash", e, filepath.Join(repo, "scripts", "nightly.sh"),
		"--cpu", "--base", Base, "--label", testLabel+"=e2e", "--env", "DRIFT_SLOWDOWN", fixturePath("drift"), out)
	if r.Code != 0 || !strings.Contains(r.Stderr, "as the experiment declares") {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.Code, r.Stderr)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil || !strings.Contains(string(summary), "criteria_failed ✅ as declared") {
		t.Errorf("summary.md (%v):\n%s", err, summary)
	}
	var jobs struct {
		ID string `json:"id"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "drift", "submit.json"))
	if json.Unmarshal(data, &jobs) == nil && jobs.ID != "" {
		x.Run(t, time.Minute, "rm", "--force", jobs.ID)
	}
}

// scripts/pr.sh, the pull-request workflow's step, in a repository where a
// pull request changed one of two experiments: it runs that one alone,
// judges it against a copy of main's results history (main's is not
// changed) and writes the comment's table. The experiment's directory and
// the output's have spaces in their names (issue 47: pr.sh split them). The experiment's directory and
// the output's have spaces in their names (issue 47: pr.sh split them).
func TestPRScript(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, name := range []string{"quick one", "other"} {
		d := filepath.Join(dir, "experiments", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"xrun.yaml", "vecadd.py"} {
			data, err := os.ReadFile(filepath.Join(fixturePath("quick"), f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "xrun.yaml" {
				data = []byte(strings.Replace(string(data), "name: e2e-quick", "name: e2e-pr-"+strings.Fields(name)[0], 1))
			}
			if err := os.WriteFile(filepath.Join(d, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "main")
	// Main's history has a run of the experiment.
	mainHist := filepath.Join(t.TempDir(), "history.db")
	e := append(env(), "XRUN_HISTORY="+mainHist)
	first := xruntest.Run(t, 3*time.Minute, xrunBin, e, "submit", "--cpu", "--base", Base, "--label", labelArg, "--json",
		filepath.Join(dir, "experiments", "quick one"))
	var j struct {
		ID string `json:"id"`
	}
	if first.Code != 0 || json.Unmarshal([]byte(first.Stdout), &j) != nil {
		t.Fatalf("main's run: exit %d\n%s%s", first.Code, first.Stdout, first.Stderr)
	}
	defer x.Run(t, time.Minute, "rm", "--force", j.ID)
	if _, err := os.Stat(mainHist); err != nil {
		t.Fatalf("main's history: %v", err)
	}
	git("checkout", "-qb", "pr")
	f, err := os.OpenFile(filepath.Join(dir, "experiments", "quick one", "vecadd.py"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# a change in the pull request\n")
	f.Close()
	git("commit", "-qam", "pr")
	out := filepath.Join(t.TempDir(), "out dir")
	cmd := exec.Command("bash", filepath.Join(repo, "scripts", "pr.sh"), "--cpu", "--base", Base, "--label", labelArg, "main", out)
	cmd.Dir = dir
	cmd.Env = append(e, "XRUN="+xrunBin)
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pr.sh: %v\n%s", err, log)
	}
	var sub struct {
		ID string `json:"id"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "quick one", "submit.json"))
	if json.Unmarshal(data, &sub) != nil || sub.ID == "" {
		t.Fatalf("submit.json: %s\n%s", data, log)
	}
	prEnv := append(env(), "XDG_DATA_HOME="+filepath.Join(out, "data"), "XRUN_HISTORY="+filepath.Join(out, "history.db"))
	defer xruntest.Run(t, time.Minute, xrunBin, prEnv, "rm", "--force", sub.ID)
	if _, err := os.Stat(filepath.Join(out, "other")); err == nil {
		t.Error("it ran an experiment the pull request did not touch")
	}
	comment, err := os.ReadFile(filepath.Join(out, "comment.md"))
	if err != nil || !strings.Contains(string(comment), "### quick one (job "+sub.ID+")") || !strings.Contains(string(comment), "e2e-pr-quick") {
		t.Errorf("comment.md (%v):\n%s\nlog:\n%s", err, comment, log)
	}
	t.Logf("comment.md:\n%s", comment)
	// Main's history holds its run alone, also after its catch-up with
	// main's job store (its file may be rewritten by SQLite's
	// checkpoint, not its content).
	mh := xruntest.Run(t, time.Minute, xrunBin, e, "history", "--json", "e2e-pr-quick")
	if mh.Code != 0 || !strings.Contains(mh.Stdout, j.ID) || strings.Contains(mh.Stdout, sub.ID) {
		t.Errorf("main's history: exit %d\n%.600s", mh.Code, mh.Stdout)
	}
	// The copy has both runs.
	h := xruntest.Run(t, time.Minute, xrunBin, prEnv, "history", "--json", "e2e-pr-quick")
	if h.Code != 0 || !strings.Contains(h.Stdout, j.ID) || !strings.Contains(h.Stdout, sub.ID) {
		t.Errorf("the copy of the history: exit %d\n%.600s", h.Code, h.Stdout)
	}
}
