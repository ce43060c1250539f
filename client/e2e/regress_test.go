//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// The nightly's regression rule on the real daemon: the drift fixture
// submitted 12 times at one speed is never an alert; 15 % slower it is a
// suspect, regress --confirm reruns it on the host with the job's own
// options, the rerun confirms it, regress exits 5 and writes the alert,
// and the steady implementation beside it stays stable. Then a writer of
// the history killed mid-write (kill -9) leaves it whole.
func TestNightlyRegression(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.db")
	run := func(limit time.Duration, slowdown string, args ...string) res {
		t.Helper()
		// The fixture's calls sleep: the host's load (other suites on
		// the test's machine) leaves them steady, and no timing is
		// taken for noisy on its account (XRUN_HOST_BUSY_SHARE=off).
		return x.RunEnv(t, limit, []string{"XRUN_HISTORY=" + hist, "DRIFT_SLOWDOWN=" + slowdown, "XRUN_HOST_BUSY_SHARE=off"}, args...)
	}
	submitDrift := func(slowdown string) string {
		t.Helper()
		start := time.Now()
		r := run(5*time.Minute, slowdown, "submit", "--cpu", "--base", Base, "--label", testLabel+"=e2e", "--env", "DRIFT_SLOWDOWN", "--env", "XRUN_HOST_BUSY_SHARE", "--json",
			fixturePath("drift"))
		// The criterion declared to fail fails: exit 1, and the outcome is the declared one.
		expect(t, r, ExitCriteriaFailedCode)
		id := xruntest.JobID(t, r)
		t.Logf("DRIFT_SLOWDOWN=%s: job %s in %.1f s", slowdown, id, time.Since(start).Seconds())
		return id
	}
	judge := func(id string, extra ...string) (nightly.Report, res) {
		t.Helper()
		r := run(5*time.Minute, "1.15", append(append([]string{"regress", "--json"}, extra...), id)...)
		var rep nightly.Report
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("regress --json (exit %d) printed %q: %v\n%s", r.Code, r.Stdout, err, r.Stderr)
		}
		return rep, r
	}
	verdict := func(rep nightly.Report, impl string) nightly.Point {
		for _, p := range rep.Runs[0].Points {
			if p.Implementation == impl {
				return p
			}
		}
		t.Fatalf("no %s in %+v", impl, rep)
		return nightly.Point{}
	}

	// Twelve stable nights (more while the rule has fewer than ten
	// accepted runs: a run that did not converge on a busy machine is
	// noisy and does not count).
	var stable []string
	alert := filepath.Join(dir, "alert.json")
	for len(stable) < 12 || len(stable) < 16 && verdict(mustJudge(t, judge, stable[len(stable)-1]), "drift").Verdict.Status != regress.Stable {
		stable = append(stable, submitDrift("1.00"))
	}
	for _, id := range stable {
		rep, r := judge(id, "--alert", alert)
		expect(t, r, 0)
		for _, p := range rep.Runs[0].Points {
			if s := p.Verdict.Status; s != regress.Stable && s != regress.Insufficient && s != regress.Noisy {
				t.Errorf("stable run %s: %s is %s (%+v)", id, p.Implementation, s, p.Verdict)
			}
		}
		if o := rep.Runs[0].Outcome; o == nil || !o.Expected {
			t.Errorf("stable run %s: outcome %+v, want the declared one", id, o)
		}
	}
	if _, err := os.Stat(alert); err == nil {
		t.Fatal("an alert was written for stable runs")
	}
	last := verdict(mustJudge(t, judge, stable[len(stable)-1]), "drift")
	t.Logf("after %d stable runs: drift %.4f ms, baseline median %.4f ms over %d runs, MAD %.4f ms", len(stable), last.MedianMS,
		last.Verdict.Median, last.Verdict.Baseline, last.Verdict.MAD)

	// 15 % slower: a suspect, no alert yet.
	slow := submitDrift("1.15")
	rep, r := judge(slow, "--alert", alert)
	expect(t, r, 0)
	d := verdict(rep, "drift")
	if d.Verdict.Status != regress.Suspect || d.Verdict.Direction != regress.Slower {
		t.Fatalf("the slower run: drift %+v, want a slower suspect\n%s", d.Verdict, r.Stderr)
	}
	if s := verdict(rep, "steady").Verdict.Status; s != regress.Stable {
		t.Errorf("the slower run: steady is %s", s)
	}
	if _, err := os.Stat(alert); err == nil {
		t.Fatal("an alert was written for a suspect")
	}
	t.Logf("slower run %s: drift %.4f ms against %.4f ms (%+.1f%%), score %.1f, p %v", slow, d.MedianMS, d.Verdict.Median,
		100*d.Verdict.Change, d.Verdict.Score, pval(d.Verdict.PValue))

	// Confirmed by a rerun at once: regressed, exit 5, the alert.
	rep, r = judge(slow, "--confirm", "--alert", alert)
	expect(t, r, ExitRegressedCode, "confirmed regression")
	d = verdict(rep, "drift")
	if d.Verdict.Status != regress.Regressed || d.Verdict.ConfirmedBy == "" || d.Verdict.ConfirmedBy != rep.Runs[0].Rerun {
		t.Fatalf("after --confirm: drift %+v (rerun %q)", d.Verdict, rep.Runs[0].Rerun)
	}
	if s := verdict(rep, "steady").Verdict.Status; s != regress.Stable {
		t.Errorf("after --confirm: steady is %s", s)
	}
	data, err := os.ReadFile(alert)
	if err != nil {
		t.Fatal(err)
	}
	var al nightly.Alert
	if err := json.Unmarshal(data, &al); err != nil || len(al.Regressions) != 1 || al.Regressions[0].Implementation != "drift" ||
		al.Regressions[0].ConfirmedBy != rep.Runs[0].Rerun {
		t.Fatalf("alert (%v): %s", err, data)
	}
	t.Logf("confirmed by rerun %s: %s", rep.Runs[0].Rerun, strings.TrimSpace(al.Text))

	// The drift series' trend, with the rule's band and the regression
	// marked (XRUN_E2E_FIGURES keeps it to look at).
	figs := os.Getenv("XRUN_E2E_FIGURES")
	if figs == "" {
		figs = t.TempDir()
	}
	r = run(time.Minute, "1.15", "history", "--plot", figs, "--impl", "drift", "e2e-drift")
	expect(t, r, 0, "wrote ")
	if m, _ := filepath.Glob(filepath.Join(figs, "trend-*-drift-N_256.png")); len(m) != 1 {
		t.Errorf("history --plot wrote %v", m)
	}

	// The history after it all: every run, whole.
	h, err := history.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := h.Runs("e2e-drift")
	h.Close()
	if err != nil || len(runs) != len(stable)+2 {
		t.Fatalf("%d runs of e2e-drift in the history (%v), want %d", len(runs), err, len(stable)+2)
	}

	// A writer killed mid-write: xrun history import of many results,
	// kill -9 while it works.
	killedWriter(t, hist)
	h, err = history.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if runs, err := h.Runs("e2e-drift"); err != nil || len(runs) != len(stable)+2 {
		t.Errorf("after the killed writer: %d runs of e2e-drift (%v)", len(runs), err)
	}
	for _, id := range append(stable, slow) {
		defer x.Run(t, time.Minute, "rm", "--force", id)
	}
	defer x.Run(t, time.Minute, "rm", "--force", rep.Runs[0].Rerun)
}

// Exit codes the test expects of xrun.
const (
	ExitCriteriaFailedCode = 1
	ExitRegressedCode      = 5
)

func mustJudge(t *testing.T, judge func(string, ...string) (nightly.Report, res), id string) nightly.Report {
	t.Helper()
	rep, _ := judge(id)
	return rep
}

func pval(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2g", *p)
}

// killedWriter starts xrun history import of 400 runs into hist and kills
// it (SIGKILL) while it imports; it checks that some but not all were
// committed, so the kill came mid-write.
func killedWriter(t *testing.T, hist string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "runs")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 400; i++ {
		r := &result.Results{SchemaVersion: 1, JobID: fmt.Sprintf("bulk%04d", i), Experiment: "bulk", Status: result.StatusSucceeded,
			Mode: "cpu", CreatedAt: base.Add(time.Duration(i) * time.Hour), Implementations: []string{"a"}}
		for c := 0; c < 20; c++ {
			r.Cases = append(r.Cases, result.Case{Params: map[string]any{"N": c}, Label: fmt.Sprintf("N=%d", c),
				Results: map[string]*result.ImplResult{"a": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 1, Q1MS: 1, Q3MS: 1, Converged: true}}}})
		}
		d := filepath.Join(src, fmt.Sprint(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := result.WriteFile(filepath.Join(d, result.FileName), r); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(xrunBin, "history", "import", src)
	cmd.Env = append(env(), "XRUN_HISTORY="+hist)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h, err := history.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Kill it once it has committed some runs.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if runs, _ := h.Runs("bulk"); len(runs) >= 20 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	runs, err := h.Runs("bulk")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 || len(runs) == 400 {
		t.Fatalf("%d of 400 runs committed: the writer was not killed mid-write", len(runs))
	}
	pts, err := h.Points(history.Filter{Experiment: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 20*len(runs) {
		t.Errorf("%d points for %d committed runs of 20: a run was torn", len(pts), len(runs))
	}
	t.Logf("kill -9 after %d of 400 runs: history whole, %d points", len(runs), len(pts))
}
