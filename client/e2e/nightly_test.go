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
// comparison is made of one job, and the exit says a host failed.
func TestNightlyScript(t *testing.T) {
	out := t.TempDir()
	e := append(env(), "XRUN="+xrunBin, "XRUN_HOSTS="+eng.Host()+" tcp://127.0.0.1:1")
	r := xruntest.Run(t, 3*time.Minute, "bash", e, filepath.Join(repo, "scripts", "nightly.sh"),
		"--cpu", "--base", Base, "--label", labelArg, fixturePath("quick"), out)
	if r.Code == 0 || !strings.Contains(r.Stderr, "1 of 2 hosts failed") || !strings.Contains(r.Stderr, "nightly: 1 job(s)") {
		t.Fatalf("exit %d, want non-zero with one job; stderr:\n%s", r.Code, r.Stderr)
	}
	var jobs []struct {
		ID string `json:"id"`
	}
	data, err := os.ReadFile(filepath.Join(out, "submit.json"))
	if err != nil || json.Unmarshal(data, &jobs) != nil || len(jobs) != 1 {
		t.Fatalf("submit.json (%v): %s", err, data)
	}
	id := jobs[0].ID
	defer xrun(t, time.Minute, "rm", "--force", id)
	md, err := os.ReadFile(filepath.Join(out, id+".md"))
	if err != nil || !strings.Contains(string(md), "e2e-quick") {
		t.Errorf("%s.md (%v):\n%s", id, err, md)
	}
	var res struct {
		Status string `json:"status"`
	}
	data, err = os.ReadFile(filepath.Join(out, id+".json"))
	if err != nil || json.Unmarshal(data, &res) != nil || res.Status != "succeeded" {
		t.Errorf("%s.json (%v): %.300s", id, err, data)
	}
	if _, err := os.Stat(filepath.Join(out, "compare.md")); err == nil {
		t.Error("compare.md made of a single job")
	}
}
