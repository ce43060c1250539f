package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/contract"
)

// xrun history rm on a real history file: --dry-run changes nothing; rm
// backs the history up first (and says where), removes the named job's
// run and every run before --before, and the backup still holds them all;
// a job the history lacks is a usage error that removes nothing.
func TestHistoryRm(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	dir := t.TempDir()
	hist := filepath.Join(dir, "h", "history.db")
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var files []string
	for i := range 4 {
		var r map[string]any
		if err := json.Unmarshal([]byte(timedResults(t, 1, start.Add(time.Duration(i)*24*time.Hour))), &r); err != nil {
			t.Fatal(err)
		}
		r["job_id"] = "job" + string(rune('a'+i))
		data, _ := json.Marshal(r)
		f := filepath.Join(dir, r["job_id"].(string), "results.json")
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if code := ta.run(ctx, append([]string{"history", "import", "--history", hist}, files...)...); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, ta.out, ta.err)
	}
	runs := func(path string) []string {
		t.Helper()
		s, err := history.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rs, err := s.Runs("")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.JobID)
		}
		return ids
	}

	if code := ta.run(ctx, "history", "rm", "--history", hist, "--dry-run", "--before", "2026-10-02T12:00:00Z", "jobd"); code != 0 ||
		ta.out.String() != "would remove job joba: my-kernel, 2026-10-01 00:00 UTC, 1 timings\n"+
			"would remove job jobb: my-kernel, 2026-10-02 00:00 UTC, 1 timings\n"+
			"would remove job jobd: my-kernel, 2026-10-04 00:00 UTC, 1 timings\n" {
		t.Errorf("rm --dry-run: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if got := runs(hist); len(got) != 4 {
		t.Fatalf("--dry-run removed runs: %v", got)
	}
	if code := ta.run(ctx, "history", "rm", "--history", hist, "jobc", "nosuch"); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "no run of job nosuch") {
		t.Errorf("rm of an unknown job: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "history", "rm", "--history", hist); code != contract.ExitUsage {
		t.Errorf("rm of nothing: exit %d", code)
	}
	if code := ta.run(ctx, "history", "rm", "--history", hist, "--json", "--before", "2026-10-02T12:00:00Z", "jobd"); code != 0 {
		t.Fatalf("rm: exit %d\n%s%s", code, ta.out, ta.err)
	}
	var rep struct {
		DryRun  bool   `json:"dry_run"`
		Backup  string `json:"backup"`
		Removed []struct {
			JobID  string `json:"job_id"`
			Points int    `json:"points"`
		} `json:"removed"`
	}
	if err := json.Unmarshal(ta.out.Bytes(), &rep); err != nil || rep.DryRun || len(rep.Removed) != 3 || rep.Removed[2].JobID != "jobd" ||
		rep.Removed[0].Points != 1 {
		t.Fatalf("rm --json: %v\n%s", err, ta.out)
	}
	if filepath.Dir(rep.Backup) != filepath.Dir(hist) || !strings.Contains(ta.err.String(), "backed up the results history to "+rep.Backup) {
		t.Errorf("backup %q, stderr %s", rep.Backup, ta.err)
	}
	ta.hist.Close()
	ta.hist = nil
	if got := runs(hist); strings.Join(got, " ") != "jobc" {
		t.Errorf("left after rm: %v, want jobc", got)
	}
	if got := runs(rep.Backup); len(got) != 4 {
		t.Errorf("the backup holds %v, want all 4 runs", got)
	}
}
