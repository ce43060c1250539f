//go:build integration

package e2e

import (
	"encoding/json"
	"os"
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
