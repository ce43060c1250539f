package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

// xrun report --html: the site of the history, its pages listed by
// --json, progress on stderr, and one-sentence errors for what is the
// user's to fix.
func TestReportHTML(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	files := t.TempDir()
	start := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		p := filepath.Join(files, string(rune('a'+i)), "results.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(timedResults(t, 1.0+0.01*float64(i), start.Add(time.Duration(i)*24*time.Hour))), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := ta.run(ctx, "history", "import", p); code != 0 {
			t.Fatalf("import: exit %d: %s", code, ta.err)
		}
	}
	if code := ta.run(ctx, "report"); code != contract.ExitUsage || ta.err.String() != "xrun: report writes a web site: give --html DIR\n" {
		t.Errorf("report without --html: exit %d: %q", code, ta.err)
	}
	dir := filepath.Join(t.TempDir(), "site")
	for range 2 { // the second replaces the first
		if code := ta.run(ctx, "report", "--html", dir, "--json"); code != 0 {
			t.Fatalf("report: exit %d: %s", code, ta.err)
		}
	}
	var out struct {
		Dir   string `json:"dir"`
		Pages []struct{ Path, Kind, Title string }
	}
	if err := json.Unmarshal(ta.out.Bytes(), &out); err != nil {
		t.Fatalf("--json: %v\n%s", err, ta.out)
	}
	if out.Dir != dir || len(out.Pages) != 5 || out.Pages[0].Path != "index.html" {
		t.Fatalf("--json: %s", ta.out)
	}
	if !strings.Contains(ta.err.String(), "report: experiment 1/1 my-kernel: 3 run(s)") {
		t.Errorf("no progress on stderr: %q", ta.err)
	}
	job := ""
	for _, p := range out.Pages {
		if _, err := os.Stat(filepath.Join(dir, p.Path)); err != nil {
			t.Errorf("page %s: %v", p.Path, err)
		}
		if p.Kind == "job" {
			job = p.Path
		}
	}
	// A run imported from a file has its table from that file.
	if data, _ := os.ReadFile(filepath.Join(dir, job)); !strings.Contains(string(data), "blocked under 1 us") || !strings.Contains(string(data), `<pre class="table">`) {
		t.Errorf("%s lacks the run's criteria and table", job)
	}
	if code := ta.run(ctx, "report", "--html", dir); code != 0 || !strings.Contains(ta.out.String(), "wrote 5 pages to "+dir) {
		t.Errorf("report: exit %d: %s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "report", "--html", files); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "is not empty and holds no site of xrun report") {
		t.Errorf("report into a directory of other files: exit %d: %q", code, ta.err)
	}
	if code := ta.run(ctx, "report", "--html", dir, "nosuch"); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "no run of [nosuch]") {
		t.Errorf("report of an unknown experiment: exit %d: %q", code, ta.err)
	}
	if code := ta.run(ctx, "report", "--help"); code != 0 || !strings.Contains(ta.out.String(), "xrun report --html site/") {
		t.Errorf("help: exit %d: %s", code, ta.out)
	}
}
