package summary

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/runner/analyze"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// report is a run with one regressed timing confirmed by a rerun, a
// spike, a noisy one and a stable one.
func report() *Report {
	p := 1e-9
	at := time.Date(2026, 11, 25, 2, 17, 0, 0, time.UTC)
	run := history.Run{JobID: "3fa1c2e0a1b2", Experiment: "gla-pingpong", At: at, Status: "criteria_failed", Host: "gpu1", GPU: "NVIDIA H100 80GB HBM3"}
	judged := []history.Judged{
		{Verdict: regress.Verdict{Status: regress.Suspect, Direction: regress.Slower, Baseline: 20, Median: 0.0341, MAD: 0.0002, Score: 7.3, Change: 0.129, PValue: &p}},
		{Verdict: regress.Verdict{Status: regress.Suspect, Direction: regress.Slower, Baseline: 20, Median: 0.0581, MAD: 0.0003, Score: 5.1, Change: 0.061, PValue: &p}},
		{Verdict: regress.Verdict{Status: regress.Noisy, Reason: "did not converge"}},
		{Verdict: regress.Verdict{Status: regress.Stable, Baseline: 20, Median: 0.0150, MAD: 0.0001, Score: 0.4, Change: 0.003}},
	}
	for i, c := range []struct{ impl, label string }{{"pipelined", "chunk=64 T=1024"}, {"pipelined", "chunk=256 T=1024"},
		{"baseline", "chunk=64 T=256"}, {"baseline", "chunk=64 T=512"}} {
		judged[i].SeriesID = int64(i + 1)
		judged[i].Implementation, judged[i].Case = c.impl, c.label
		judged[i].MedianMS = judged[i].Verdict.Median * (1 + judged[i].Verdict.Change)
	}
	r := NewRun(run, judged)
	r.Outcome = &analyze.Outcome{Expected: true, Declared: true}
	rerun := []history.Judged{
		{Point: history.Point{SeriesID: 1}, Verdict: regress.Verdict{Status: regress.Regressed, Direction: regress.Slower, Confirms: "3fa1c2e0a1b2"}},
		{Point: history.Point{SeriesID: 2}, Verdict: regress.Verdict{Status: regress.Stable}},
	}
	r.Confirm("9b2e11d40c77", rerun)
	rep := &Report{Rule: regress.Default(), Runs: []Run{r}}
	rep.Finish()
	return rep
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (go test ./client/regress/summary -update makes it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestReport(t *testing.T) {
	rep := report()
	r := rep.Runs[0]
	if rep.Regressed != 1 || r.Counts["regressed"] != 1 || r.Counts["suspect"] != 0 || r.Counts["stable"] != 2 || r.Counts["noisy"] != 1 || r.Total != 4 {
		t.Fatalf("counts %+v", r.Counts)
	}
	if !r.Points[1].Verdict.Spike || r.Points[0].Verdict.ConfirmedBy != "9b2e11d40c77" {
		t.Errorf("confirmation %+v", r.Points)
	}
	var txt, md bytes.Buffer
	if err := rep.Text(&txt, false); err != nil {
		t.Fatal(err)
	}
	if err := rep.Markdown(&md, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", txt.Bytes())
	golden(t, "report.md", md.Bytes())
	al := rep.Alert()
	if al == nil || len(al.Regressions) != 1 || al.Regressions[0].ConfirmedBy != "9b2e11d40c77" || !strings.Contains(al.Text, "+12.9%") {
		t.Errorf("alert %+v", al)
	}
	if (&Report{Runs: []Run{{}}}).Alert() != nil {
		t.Error("an alert without a regression")
	}
}
