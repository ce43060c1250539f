package nightly

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// report is a run on a host 9 % slower with one regressed timing (on its
// ratio to the baseline) confirmed by a rerun, a spike, a noisy one that
// never converged, one that moved with the host and a stable one.
func report() *Report {
	p := 1e-9
	at := time.Date(2026, 11, 25, 2, 17, 0, 0, time.UTC)
	run := history.Run{JobID: "3fa1c2e0a1b2", Experiment: "gla-pingpong", At: at, Status: "criteria_failed", Host: "gpu1", GPU: "NVIDIA H100 80GB HBM3"}
	ratio := func(of string, change, score float64) *regress.Reading {
		return &regress.Reading{Of: of, Value: 1 + change, Median: 1, MAD: 0.005, Score: score, Change: change}
	}
	judged := []history.Judged{
		{Verdict: regress.Verdict{Status: regress.Suspect, Direction: regress.Slower, Baseline: 20, Median: 0.0341, MAD: 0.0002, Score: 7.3, Change: 0.229, PValue: &p,
			Basis: regress.BasisRatio, Relative: ratio("ratio to baseline", 0.127, 17.1), HostFactor: 1.09}},
		{Verdict: regress.Verdict{Status: regress.Suspect, Direction: regress.Slower, Baseline: 20, Median: 0.0581, MAD: 0.0003, Score: 5.1, Change: 0.061, PValue: &p,
			Basis: regress.BasisRatio, Relative: ratio("ratio to baseline", 0.061, 8.2), HostFactor: 1.0}},
		{Verdict: regress.Verdict{Status: regress.Noisy, Reason: "did not converge", NeverConverged: true}},
		{Verdict: regress.Verdict{Status: regress.Stable, Baseline: 20, Median: 0.0150, MAD: 0.0001, Score: 12.4, Change: 0.093,
			Basis: regress.BasisHost, Relative: ratio("time / host factor", 0.003, 0.4), HostFactor: 1.09,
			Host: "the host was slower (all implementations +9 %)"}},
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
		t.Fatalf("read golden file (go test ./client/nightly -update makes it): %v", err)
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
	if r.HostFactor != 1.09 || !strings.Contains(r.HostNote, "1 of 4 timings moved with it") || len(r.NeverConverged) != 1 ||
		!strings.Contains(r.Advice, "benchmark.method.max_time_s") {
		t.Errorf("host %v %q, never converged %v %q", r.HostFactor, r.HostNote, r.NeverConverged, r.Advice)
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
	if al == nil || len(al.Regressions) != 1 || al.Regressions[0].ConfirmedBy != "9b2e11d40c77" || !strings.Contains(al.Text, "+22.9%; ratio to baseline +12.7%") ||
		al.Regressions[0].Basis != regress.BasisRatio {
		t.Errorf("alert %+v", al)
	}
	if (&Report{Runs: []Run{{}}}).Alert() != nil {
		t.Error("an alert without a regression")
	}
}

// The advice names what the run used and reached, and what to set.
func TestConvergenceAdvice(t *testing.T) {
	res := &result.Results{Methodology: result.Methodology{MaxTimeS: 2, TargetRSE: 0.005}, Cases: []result.Case{{Results: map[string]*result.ImplResult{
		"blocked":   {Timing: &result.Timing{StderrRel: 0.084, Converged: false}},
		"reference": {Timing: &result.Timing{StderrRel: 0.2054, Converged: false}},
	}}}}
	got := ConvergenceAdvice(res, 2)
	for _, want := range []string{"2 timings have never converged", "max_time_s 2 s", "8.4-20.5 % against target_rse 0.005",
		"raise target_rse to what it reaches (about 0.21)"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice lacks %q:\n%s", want, got)
		}
	}
	res.Cases[0].Results["reference"].Timing.StderrRel = 0.012
	res.Cases[0].Results["blocked"].Timing.StderrRel = 0.008
	if got := ConvergenceAdvice(res, 2); !strings.Contains(got, "the target takes about 12s per timing: raise max_time_s to about 14") {
		t.Errorf("advice for a spread more time settles:\n%s", got)
	}
}

// An experiment's own names are text in the markdown a pull request's
// comment and the nightly's summary show: not a link, an image, HTML or
// the end of a table cell.
func TestMarkdownShowsNamesAsText(t *testing.T) {
	rep := report()
	rep.Runs[0].Experiment = "gla <img src=x onerror=alert(1)>"
	rep.Runs[0].Points[0].Implementation = "[approve](https://evil.example)|x"
	rep.Runs[0].Points[0].Case = "![t](https://evil.example/t.png)"
	var b strings.Builder
	if err := rep.Markdown(&b, true); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	// What is left once every backslashed sign is taken out is what a
	// markdown reader reads as markdown.
	bare := regexp.MustCompile(`\\.`).ReplaceAllString(md, "")
	for _, bad := range []string{"<img", "[approve](", "![t](", "|x |"} {
		if strings.Contains(bare, bad) {
			t.Errorf("the markdown holds %q as markdown:\n%s", bad, md)
		}
	}
	for _, good := range []string{`\<img src=x onerror=alert(1)\>`, `\[approve\](https://evil.example)\|x`, `\!\[t\](https://evil.example/t.png)`} {
		if !strings.Contains(md, good) {
			t.Errorf("the markdown lacks %q:\n%s", good, md)
		}
	}
}

// NewRun makes a run's report from its judged points.
func NewRun(run history.Run, judged []history.Judged) Run {
	r := StartRun(run)
	for _, j := range judged {
		r.Add(j)
	}
	return r.Done()
}
