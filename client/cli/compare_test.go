package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// Two experiments are not compared unless asked: one sentence, exit 3.
func TestCompareDifferentExperiments(t *testing.T) {
	write := func(exp string) string {
		dir := t.TempDir()
		r := &result.Results{SchemaVersion: result.SchemaVersion, Experiment: exp, Status: "succeeded",
			Implementations: []string{"a"},
			Cases: []result.Case{{Label: "n=1", Params: map[string]any{"n": 1}, Results: map[string]*result.ImplResult{
				"reference": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 1, Q1MS: 0.9, Q3MS: 1.1, Samples: 10}},
				"a":         {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 0.5, Q1MS: 0.4, Q3MS: 0.6, Samples: 10}},
			}}}}
		if err := result.WriteFile(filepath.Join(dir, result.FileName), r); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b := write("softmax"), write("gla-pingpong")
	ta := newTestApp(t)
	if code := ta.run(context.Background(), "compare", a, b); code != contract.ExitUsage {
		t.Fatalf("compare of two experiments: exit %d, want %d; stdout %q", code, contract.ExitUsage, ta.out)
	}
	if msg := strings.TrimSpace(ta.err.String()); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "ran softmax and") || ta.out.Len() != 0 {
		t.Errorf("stderr %q, stdout %q: want one sentence and no table", msg, ta.out)
	}
	if code := ta.run(context.Background(), "compare", "--force", a, b); code != 0 || !strings.Contains(ta.out.String(), "different experiments") {
		t.Errorf("compare --force: exit %d, stdout %q, stderr %q", code, ta.out, ta.err)
	}
	// One run twice, by its directory and by its file, is nothing to
	// compare.
	if code := ta.run(context.Background(), "compare", a, filepath.Join(a, result.FileName)); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "are the same run") {
		t.Errorf("compare of a run with itself: exit %d, stderr %q", code, ta.err)
	}
}
