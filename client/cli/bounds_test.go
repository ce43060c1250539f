package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// escapes is an implementation's error text with a colour, a window title
// (OSC ended by BEL) and a BEL.
const escapes = "RuntimeError: \x1b[31mred\x1b[0m \x07bell \x1b]0;pwned\x07end"

// The experiment's text loses its control sequences wherever xrun writes
// it, to a terminal or not: the log, the CSVs, regress's text and
// markdown (a nightly's job summary).
func TestNoControlSequencesInOutputs(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		return enginetest.Run{Logs: "runner: " + escapes + "\n", Files: map[string]string{
			"results.json": enginetest.ResultsJSON("my-kernel", result.StatusSucceeded), "runner.log": "log\n"}}
	}
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "--cpu", dir); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	clean := func(what string, want string) {
		t.Helper()
		out := ta.out.String()
		if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, want) {
			t.Errorf("%s: %q", what, out)
		}
	}
	if code := ta.run(ctx, "logs", list[0].ID); code != 0 {
		t.Fatalf("logs: exit %d: %s", code, ta.err)
	}
	clean("logs", "RuntimeError: red bell end")

	files := t.TempDir()
	var last string
	for i := 0; i < 3; i++ {
		last = filepath.Join(files, "night-"+string(rune('a'+i))+".json")
		at := time.Date(2026, 1, 1+i, 2, 0, 0, 0, time.UTC)
		var r result.Results
		if err := json.Unmarshal([]byte(threeResults(t, [3]float64{2, 1.5, 0.4}, at, true)), &r); err != nil {
			t.Fatal(err)
		}
		r.Status, r.Success = result.StatusFailed, false
		r.Cases[0].Results["candidate"] = &result.ImplResult{Status: result.ImplError, Error: escapes}
		data, _ := json.Marshal(r)
		if err := os.WriteFile(last, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := ta.run(ctx, "history", "import", last); code != 0 {
			t.Fatalf("import: exit %d: %s", code, ta.err)
		}
	}
	ta.run(ctx, "results", "--csv", last)
	clean("results --csv", "red bell end")
	if code := ta.run(ctx, "history", "--csv", "my-kernel"); code != 0 {
		t.Fatalf("history --csv: exit %d: %s", code, ta.err)
	}
	clean("history --csv", "red bell end")
	for _, args := range [][]string{{"regress", last}, {"regress", "--markdown", last}} {
		ta.run(ctx, args...)
		clean(strings.Join(args[:len(args)-1], " "), "red bell end")
	}
}

// A results.json with a median of 1.7e308 ms is refused, in a sentence,
// by every reader: results and its figures, the history's import; the
// history and regress read on.
func TestHugeFiguresRefused(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	good := filepath.Join(t.TempDir(), "good.json")
	if err := os.WriteFile(good, []byte(threeResults(t, [3]float64{2, 1.5, 0.4}, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), true)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ta.run(ctx, "history", "import", good); code != 0 {
		t.Fatalf("import: exit %d: %s", code, ta.err)
	}
	path := filepath.Join(t.TempDir(), "huge.json")
	var r result.Results
	if err := json.Unmarshal([]byte(threeResults(t, [3]float64{2, 1.5, 0.4}, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), true)), &r); err != nil {
		t.Fatal(err)
	}
	r.Cases[0].Results["candidate"].Timing.MedianMS = 1.7e308
	data, _ := json.Marshal(r)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "cases[0].results.candidate.timing.median_ms is 1.7e+308 ms"
	if code := ta.run(ctx, "results", "--plot", t.TempDir(), path); code == 0 || !strings.Contains(ta.err.String(), want) {
		t.Errorf("results --plot: exit %d: %s", code, ta.err)
	}
	if code := ta.run(ctx, "history", "import", path); code == 0 || !strings.Contains(ta.err.String(), want) {
		t.Errorf("history import: exit %d: %s", code, ta.err)
	}
	for _, args := range [][]string{{"history", "--json"}, {"regress", "--json"}} {
		if code := ta.run(ctx, args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, ta.err)
		}
	}
}

// history import refuses a file with a 10 MiB implementation name (issue
// 47: it was imported, and every table, the history and the dashboard
// carried it), exit 3 in one sentence, and the history reads on without it.
func TestHugeNameRefused(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	good := filepath.Join(t.TempDir(), "good.json")
	if err := os.WriteFile(good, []byte(threeResults(t, [3]float64{2, 1.5, 0.4}, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), true)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ta.run(ctx, "history", "import", good); code != 0 {
		t.Fatalf("import: exit %d: %s", code, ta.err)
	}
	var r result.Results
	if err := json.Unmarshal([]byte(threeResults(t, [3]float64{2, 1.5, 0.4}, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), true)), &r); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("n", 10<<20)
	for i, n := range r.Implementations {
		if n == "candidate" {
			r.Implementations[i] = huge
		}
	}
	for _, c := range r.Cases {
		c.Results[huge] = c.Results["candidate"]
		delete(c.Results, "candidate")
	}
	data, _ := json.Marshal(r)
	path := filepath.Join(t.TempDir(), "huge-name.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "implementation name is 10485760 bytes long, more than the 1024 a name in a results file may be"
	if code := ta.run(ctx, "history", "import", path); code != contract.ExitUsage || !strings.Contains(ta.err.String(), want) {
		t.Errorf("history import: exit %d: %.300s", code, ta.err)
	}
	if code := ta.run(ctx, "history", "--csv"); code != 0 || strings.Contains(ta.out.String(), "nnnnnnnn") {
		t.Errorf("history --csv: exit %d: %.300s", code, ta.out)
	}
}
