package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/result"
)

// An implementation named like a formula and sweep values that begin with
// =, + or @ come out of results --csv and history --csv as text a
// spreadsheet does not evaluate (a single quote in front); a negative
// number stays a number.
func TestCSVQuotesFormulas(t *testing.T) {
	evil := `=HYPERLINK("http://evil.example/","open")`
	ms := 0.5
	r := result.Results{SchemaVersion: result.SchemaVersion, JobID: "csvjob", Experiment: "csv-kernel", Status: result.StatusSucceeded,
		Success: true, CreatedAt: time.Now().Add(-time.Hour), Mode: "cpu", Implementations: []string{evil}, Baseline: evil,
		Env: result.Env{Host: "box", CPU: "vm"},
		Cases: []result.Case{{Params: map[string]any{"op": "@SUM(A1)", "shift": -1.5, "expr": "+1+2"}, Label: "case",
			Results: map[string]*result.ImplResult{evil: {Status: result.ImplOK, Timing: &result.Timing{MedianMS: ms, Q1MS: ms,
				Q3MS: ms, Samples: 10, Converged: true, Clock: result.ClockPerfCounter}}}}}}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ta := newTestApp(t)
	ctx := context.Background()
	check := func(what string) {
		t.Helper()
		recs, err := csv.NewReader(strings.NewReader(ta.out.String())).ReadAll()
		if err != nil || len(recs) != 2 {
			t.Fatalf("%s: %d records, %v\n%s", what, len(recs), err, ta.out)
		}
		cell := func(col string) string {
			i := slices.Index(recs[0], col)
			if i < 0 {
				t.Fatalf("%s: no column %s in %v", what, col, recs[0])
			}
			return recs[1][i]
		}
		for col, want := range map[string]string{"implementation": "'" + evil, "param_op": "'@SUM(A1)", "param_expr": "'+1+2",
			"param_shift": "-1.5", "median_ms": "0.5"} {
			if got := cell(col); got != want {
				t.Errorf("%s: %s = %q, want %q", what, col, got, want)
			}
		}
	}
	if code := ta.run(ctx, "results", "--csv", path); code != 0 {
		t.Fatalf("results --csv: exit %d\n%s%s", code, ta.out, ta.err)
	}
	check("results --csv")
	if code := ta.run(ctx, "history", "import", path); code != 0 {
		t.Fatalf("history import: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "history", "--csv", "csv-kernel"); code != 0 {
		t.Fatalf("history --csv: exit %d\n%s%s", code, ta.out, ta.err)
	}
	check("history --csv")
}
