package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// timedResults is a run of one case and one implementation whose median
// is ms, with a declared-to-fail criterion that fails.
func timedResults(t *testing.T, ms float64, at time.Time) string {
	t.Helper()
	r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: "my-kernel", Status: result.StatusCriteriaFailed,
		CreatedAt: at, Mode: "gpu", Implementations: []string{"blocked"}, Baseline: "blocked",
		Env: result.Env{Host: "fakehost", Driver: "580.1", CUDARuntime: "13.0", Torch: "2.11.0",
			GPUs: []result.GPU{{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1"}}},
		Cases: []result.Case{{Params: map[string]any{"N": 64}, Label: "N=64", Results: map[string]*result.ImplResult{
			"blocked": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: ms, Q1MS: ms * 0.99, Q3MS: ms * 1.01,
				Samples: 50, Converged: true, Clock: result.ClockEvents, KeptSamplesMS: []float64{ms * 0.99, ms, ms * 1.01, ms}}}}}},
		Criteria: []result.Criterion{{Name: "blocked under 1 us", Kind: "time", Value: ms, Threshold: 0.001, Expect: result.ExpectFail}}}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Twelve runs of one speed, then a slower one: regress says suspect and
// exits 0; --confirm reruns it on the same GPU with the job's own options,
// the rerun confirms it, regress exits 5 and writes the alert. Every
// finished job joined the history on its own.
func TestRegressConfirmsByRerun(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.setenv(map[string]string{gpus.FakeEnv: "4", "SLOWDOWN": "1"})
	var ms atomic.Value
	ms.Store(1.0)
	var runs atomic.Int64
	start := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	ta.fake.Behave = func(s engine.ContainerSpec) enginetest.Run {
		n := runs.Add(1)
		return enginetest.Run{Files: map[string]string{"results.json": timedResults(t, ms.Load().(float64), start.Add(time.Duration(n)*time.Hour))}}
	}
	ctx := context.Background()
	submit := func() {
		t.Helper()
		if code := ta.run(ctx, "submit", "--gpus", "device=2", "--env", "SLOWDOWN", "--label", "team=kernels", "--no-standby", dir); code != contract.ExitCriteriaFailed {
			t.Fatalf("submit: exit %d: %s", code, ta.err)
		}
	}
	for i := 0; i < 12; i++ {
		ms.Store(1.0 + 0.002*float64(i%3))
		submit()
	}
	n, err := ta.history()
	if err != nil {
		t.Fatal(err)
	}
	h := n.Store()
	runsIn, _ := h.Runs("my-kernel")
	if len(runsIn) != 12 {
		t.Fatalf("%d runs in the history after 12 jobs", len(runsIn))
	}
	if code := ta.run(ctx, "regress"); code != 0 || !strings.Contains(ta.out.String(), "0 regressed, 0 improved, 0 suspect, 1 stable") {
		t.Fatalf("regress of the 12th run: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if !strings.Contains(ta.out.String(), "as the experiment declares") {
		t.Errorf("the declared failure is not the expected outcome:\n%s", ta.out)
	}
	ms.Store(1.15)
	submit()
	st, _ := ta.Store()
	list, _ := st.List()
	slow := list[0] // newest first
	if slow.Submit == nil || strings.Join(slow.Submit.Env, ",") != "SLOWDOWN" || slow.GPUs != "2" {
		t.Fatalf("the job record lacks what a rerun repeats: %+v %+v", slow, slow.Submit)
	}
	if code := ta.run(ctx, "regress", slow.ID); code != 0 || !strings.Contains(ta.out.String(), "suspect (slower)") ||
		!strings.Contains(ta.out.String(), "xrun regress --confirm "+slow.ID) {
		t.Fatalf("regress of the slow run: exit %d\n%s%s", code, ta.out, ta.err)
	}
	// A job of a place that picks the GPU itself cannot be confirmed by a
	// rerun: regress says so and exits 4, and reruns nothing.
	host := slow.Host
	slow.Host = "k8s://test-cluster"
	if err := st.Save(slow); err != nil {
		t.Fatal(err)
	}
	made := len(ta.fake.Made())
	if code := ta.run(ctx, "regress", "--confirm", slow.ID); code != contract.ExitInfra ||
		!strings.Contains(ta.out.String()+ta.err.String(), "it ran on a Kubernetes cluster, which picks the GPU: the next run confirms or clears them") {
		t.Fatalf("regress --confirm of a Kubernetes job: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if n := len(ta.fake.Made()); n != made {
		t.Fatalf("regress --confirm of a Kubernetes job made %d containers", n-made)
	}
	slow.Host = host
	if err := st.Save(slow); err != nil {
		t.Fatal(err)
	}
	alert := filepath.Join(t.TempDir(), "alert.json")
	code := ta.run(ctx, "regress", "--confirm", "--json", "--alert", alert, slow.ID)
	if code != contract.ExitRegressed {
		t.Fatalf("regress --confirm: exit %d, want %d\n%s%s", code, contract.ExitRegressed, ta.out, ta.err)
	}
	var rep nightly.Report
	if err := json.Unmarshal(ta.out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	if rep.Regressed != 1 || run.Rerun == "" || run.Points[0].Verdict.ConfirmedBy != run.Rerun || run.Counts["regressed"] != 1 || run.Total != 1 {
		t.Errorf("report %+v", rep)
	}
	// The rerun ran on the same GPU, with the same options.
	var rerun *enginetest.Container
	for _, c := range ta.fake.Made() {
		if c.C.Labels["dev.xrun.job"] == run.Rerun {
			rerun = c
		}
	}
	if rerun == nil || strings.Join(rerun.Spec.GPUs.IDs, ",") != "2" || rerun.C.Labels["team"] != "kernels" ||
		!strings.Contains(strings.Join(rerun.Spec.Env, " "), "SLOWDOWN=1") {
		t.Errorf("rerun container: %+v", rerun)
	}
	// Nor did it leave a standby, as no job here asked for one.
	for _, c := range ta.fake.Made() {
		if strings.Contains(c.C.Name, "standby") {
			t.Errorf("a standby was made: %s", c.C.Name)
		}
	}
	data, err := os.ReadFile(alert)
	if err != nil || !strings.Contains(string(data), `"confirmed_by": "`+run.Rerun+`"`) {
		t.Errorf("alert (%v): %s", err, data)
	}

	// Accepted, the change starts a new baseline; the history keeps what
	// the night of the accepted run reported.
	if code := ta.run(ctx, "history", "accept", "--note", "meant", slow.ID); code != 0 {
		t.Fatalf("accept: exit %d: %s", code, ta.err)
	}
	hist, err := ta.history()
	if err != nil {
		t.Fatal(err)
	}
	night, err := hist.Store().RunsOfJob(slow.ID)
	if err != nil || len(night) != 1 {
		t.Fatalf("runs of %s: %v, %v", slow.ID, night, err)
	}
	kept, err := hist.Store().ReportedForRun(night[0].ID)
	if v := kept[run.Points[0].Series]; err != nil || v.Status != "suspect" {
		t.Errorf("the night kept: %+v, %v", kept, err)
	}
	if code := ta.run(ctx, "regress", run.Rerun); code != 0 || !strings.Contains(ta.out.String(), "1 insufficient") {
		t.Errorf("after the change point: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "history", "--csv", "my-kernel"); code != 0 || strings.Count(ta.out.String(), "\n") != 15 {
		t.Errorf("history --csv: exit %d\n%s%s", code, ta.out, ta.err)
	}
}

// A results.json path works where a job does: results --csv, --plot and
// --expected, and the history imports it for regress.
func TestResultsOfAFile(t *testing.T) {
	ta := newTestApp(t)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, []byte(timedResults(t, 1, time.Now())), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if code := ta.run(ctx, "results", "--csv", path); code != contract.ExitCriteriaFailed || !strings.HasPrefix(ta.out.String(), "experiment,job_id,date,") {
		t.Errorf("results --csv: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "results", "--expected", path); code != 0 || !strings.Contains(ta.err.String(), "as the experiment declares") {
		t.Errorf("results --expected: exit %d\n%s", code, ta.err)
	}
	figs := filepath.Join(t.TempDir(), "figs")
	if code := ta.run(ctx, "results", "--markdown", "--plot", figs, path); code != contract.ExitCriteriaFailed || !strings.Contains(ta.out.String(), "## Figures") {
		t.Errorf("results --plot: exit %d\n%s%s", code, ta.out, ta.err)
	}
	for _, f := range []string{"time.png", "time.svg", "roofline.png"} {
		if _, err := os.Stat(filepath.Join(figs, f)); err != nil && f != "roofline.png" {
			t.Error(err)
		}
	}
	if code := ta.run(ctx, "regress", path); code != 0 || !strings.Contains(ta.out.String(), "1 insufficient") {
		t.Errorf("regress of a file: exit %d\n%s%s", code, ta.out, ta.err)
	}
	n, _ := ta.history()
	if pts, _ := n.Store().Points(history.Filter{Experiment: "my-kernel"}); len(pts) != 1 {
		t.Errorf("the file's run is not in the history: %+v", pts)
	}
	if code := ta.run(ctx, "history", "nosuch"); code != contract.ExitUsage {
		t.Errorf("history of an unknown experiment: exit %d", code)
	}
	if code := ta.run(ctx, "regress", "--env", "X", path); code != contract.ExitUsage {
		t.Errorf("--env without --confirm: exit %d", code)
	}
}

// threeResults is a run of one case timed for control (the baseline),
// candidate and the reference at ms[0], ms[1], ms[2].
func threeResults(t *testing.T, ms [3]float64, at time.Time, converged bool) string {
	t.Helper()
	r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: "my-kernel", Status: result.StatusSucceeded, Success: true,
		CreatedAt: at, Mode: "cpu", Implementations: []string{"control", "candidate"}, Baseline: "control",
		Env:         result.Env{Host: "ci-box", CPU: "2-core VM", Python: "3.11.2", Numpy: "1.24.2"},
		Methodology: result.Methodology{MaxTimeS: 2, TargetRSE: 0.005},
		Cases:       []result.Case{{Params: map[string]any{"M": 64}, Label: "M=64", Results: map[string]*result.ImplResult{}}}}
	for i, name := range []string{"control", "candidate", "reference"} {
		m := ms[i]
		r.Cases[0].Results[name] = &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{MedianMS: m, Q1MS: m * 0.98,
			Q3MS: m * 1.02, Samples: 300, Converged: converged, StderrRel: map[bool]float64{true: 0.004, false: 0.09}[converged],
			Clock: result.ClockPerfCounter, KeptSamplesMS: []float64{m * 0.98, m, m * 1.02, m}}}
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// On a host that slows every implementation alike, regress judges the
// candidate on its ratio to the control and the control on its time over
// the host factor: nothing regressed, and it says the host was slower. A
// 20 % slowdown of the candidate alone on that busy host is a suspect, and
// its rerun confirms it (exit 5); the control stays stable.
func TestRegressRelativeToTheBaseline(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	var ms atomic.Value
	ms.Store([3]float64{2, 1.5, 0.4})
	var runs atomic.Int64
	start := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	ta.fake.Behave = func(s engine.ContainerSpec) enginetest.Run {
		n := runs.Add(1)
		return enginetest.Run{Files: map[string]string{"results.json": threeResults(t, ms.Load().([3]float64), start.Add(time.Duration(n)*time.Hour), true)}}
	}
	ctx := context.Background()
	submit := func(host, slow float64) string {
		t.Helper()
		ms.Store([3]float64{2 * host, 1.5 * host * slow, 0.4 * host})
		if code := ta.run(ctx, "submit", "--cpu", "-q", dir); code != 0 {
			t.Fatalf("submit: exit %d: %s", code, ta.err)
		}
		st, _ := ta.Store()
		list, _ := st.List()
		return list[0].ID // newest first
	}
	for i := 0; i < 12; i++ {
		submit(1+0.002*float64(i%3), 1)
	}
	busy := submit(1.09, 1)
	code := ta.run(ctx, "regress", busy)
	out := ta.out.String()
	if code != 0 || !strings.Contains(out, "0 regressed, 0 improved, 0 suspect, 3 stable") ||
		!strings.Contains(out, "the host was slower (all implementations +9 %, host factor 1.09): 3 of 3 timings moved with it") {
		t.Fatalf("regress of the busy night: exit %d\n%s%s", code, out, ta.err)
	}
	if code := ta.run(ctx, "regress", "--json", busy); code != 0 {
		t.Fatalf("regress --json: exit %d", code)
	}
	var rep nightly.Report
	if err := json.Unmarshal(ta.out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Runs[0].Points {
		v := p.Verdict
		want := map[string]string{"control": "host", "candidate": "ratio", "reference": "ratio"}[p.Implementation]
		if v.Basis != want || v.Relative == nil || v.HostFactor < 1.08 || v.HostFactor > 1.1 || v.Change < 0.08 ||
			!strings.HasPrefix(v.Host, "the host was slower") {
			t.Errorf("%s: basis %q, %+v %+v", p.Implementation, v.Basis, v, v.Relative)
		}
	}
	if code := ta.run(ctx, "history", "--impl", "control", "my-kernel"); code != 0 ||
		!strings.Contains(ta.out.String(), "JUDGED ON") || !strings.Contains(ta.out.String(), "time / host factor +0.0% (score") ||
		!strings.Contains(ta.out.String(), "stable: the host was slower (all implementations +9 %)") {
		t.Errorf("history --impl control: exit %d\n%s%s", code, ta.out, ta.err)
	}

	slow := submit(1.09, 1.2)
	if code := ta.run(ctx, "regress", slow); code != 0 || !strings.Contains(ta.out.String(), "suspect (slower)") ||
		!strings.Contains(ta.out.String(), "ratio to control +20.0%") {
		t.Fatalf("regress of the slow night: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "regress", "--confirm", "--json", slow); code != contract.ExitRegressed {
		t.Fatalf("regress --confirm: exit %d, want %d\n%s%s", code, contract.ExitRegressed, ta.out, ta.err)
	}
	rep = nightly.Report{}
	if err := json.Unmarshal(ta.out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Runs[0].Points {
		want := map[string]regress.Status{"control": regress.Stable, "candidate": regress.Regressed, "reference": regress.Stable}[p.Implementation]
		if p.Verdict.Status != want {
			t.Errorf("%s after the rerun: %s, want %s (%+v)", p.Implementation, p.Verdict.Status, want, p.Verdict)
		}
	}
}

// A series none of whose runs converged has no baseline: regress and
// history say so, and which settings of the spec to change.
func TestRegressSaysNeverConverged(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	dir := t.TempDir()
	var last string
	for i := 0; i < 3; i++ {
		last = filepath.Join(dir, fmt.Sprintf("night-%d.json", i))
		at := time.Date(2026, 1, 1+i, 2, 0, 0, 0, time.UTC)
		if err := os.WriteFile(last, []byte(threeResults(t, [3]float64{2, 1.5, 0.4}, at, false)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := ta.run(ctx, "history", "import", last); code != 0 {
			t.Fatalf("import: exit %d: %s", code, ta.err)
		}
	}
	if code := ta.run(ctx, "regress", last); code != 0 || !strings.Contains(ta.out.String(), "3 timings have never converged") ||
		!strings.Contains(ta.out.String(), "raise benchmark.method.max_time_s or benchmark.method.target_rse") ||
		!strings.Contains(ta.out.String(), "this run gave up at max_time_s 2 s with relative standard errors of 9.0-9.0 %") ||
		!strings.Contains(ta.out.String(), "noisy: did not converge (never converged: no baseline)") {
		t.Errorf("regress: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "history", "--impl", "candidate", "my-kernel"); code != 0 ||
		!strings.Contains(ta.out.String(), "this timing has never converged (every run noisy: did not converge)") {
		t.Errorf("history: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "history", "--json", "my-kernel"); code != 0 || strings.Count(ta.out.String(), `"never_converged": true`) != 3+9 {
		t.Errorf("history --json: exit %d\n%s%s", code, ta.out, ta.err)
	}
}

// history --plot draws each series' trend while it walks the history (a
// read of the change points inside the walk waited for the walk's one
// connection forever).
func TestHistoryPlot(t *testing.T) {
	ta := newTestApp(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	var paths []string
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		if err := os.WriteFile(p, []byte(timedResults(t, 1+0.01*float64(i), start.Add(time.Duration(i)*24*time.Hour))), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	ctx := context.Background()
	if code := ta.run(ctx, append([]string{"history", "import"}, paths...)...); code != 0 {
		t.Fatalf("import: exit %d: %s", code, ta.err)
	}
	figs := filepath.Join(dir, "figs")
	done := make(chan int, 1)
	go func() { done <- ta.run(ctx, "history", "--plot", figs, "--impl", "blocked", "my-kernel") }()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("history --plot: exit %d: %s", code, ta.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("history --plot did not end within a minute")
	}
	if pngs, _ := filepath.Glob(filepath.Join(figs, "*.png")); len(pngs) != 1 {
		t.Errorf("figures: %v", pngs)
	}
}

// xrun rerun JOB submits the job again as it was submitted: its host,
// GPUs, labels, --env names (read again) and --no-standby.
func TestRerunCommand(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.setenv(map[string]string{gpus.FakeEnv: "4", "SLOWDOWN": "1"})
	ta.fake.Behave = func(s engine.ContainerSpec) enginetest.Run {
		return enginetest.Run{Files: map[string]string{"results.json": enginetest.ResultsJSON("my-kernel", result.StatusSucceeded)}}
	}
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-q", "--gpus", "device=2", "--env", "SLOWDOWN", "--label", "team=kernels", "--no-standby", dir); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, ta.err)
	}
	first := strings.Fields(ta.out.String())[0]
	if code := ta.run(ctx, "rerun", "-q", first); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, ta.err)
	}
	f := strings.Fields(ta.out.String())
	if len(f) != 2 || f[0] == first || f[1] != "succeeded" {
		t.Fatalf("rerun -q printed %q", ta.out)
	}
	var rerun *enginetest.Container
	for _, c := range ta.fake.Made() {
		if c.C.Labels["dev.xrun.job"] == f[0] {
			rerun = c
		}
		if strings.Contains(c.C.Name, "standby") {
			t.Errorf("a standby was made: %s", c.C.Name)
		}
	}
	if rerun == nil || strings.Join(rerun.Spec.GPUs.IDs, ",") != "2" || rerun.C.Labels["team"] != "kernels" ||
		!strings.Contains(strings.Join(rerun.Spec.Env, " "), "SLOWDOWN=1") {
		t.Errorf("rerun container: %+v", rerun)
	}
	if code := ta.run(ctx, "rerun", "0000deadbeef"); code != contract.ExitUsage {
		t.Errorf("rerun of an unknown job: exit %d", code)
	}
}

// A committed run that predates declared outcomes takes them from its
// experiment's spec, which it lies under (039's H100 results, whose
// speedup criteria the spec declares to fail); the same file elsewhere
// has none, and its failed criteria are worse than declared.
func TestExpectedOfACommittedRunPredatingDeclarations(t *testing.T) {
	ta := newTestApp(t)
	src := filepath.Join("..", "..", "experiments", "039-gla-pingpong")
	data, err := os.ReadFile(filepath.Join(src, "results", "2026-11-22-h100", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile(filepath.Join(src, "xrun.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(t.TempDir(), "039")
	inside := filepath.Join(exp, "results", "h100", "results.json")
	os.MkdirAll(filepath.Dir(inside), 0o755)
	os.WriteFile(filepath.Join(exp, "xrun.yaml"), spec, 0o644)
	os.WriteFile(inside, data, 0o644)
	ctx := context.Background()
	if code := ta.run(ctx, "results", "--expected", inside); code != 0 || !strings.Contains(ta.err.String(), "take theirs from") || !strings.Contains(ta.err.String(), "as the experiment declares") {
		t.Errorf("inside its experiment: exit %d\n%s", code, ta.err)
	}
	outside := filepath.Join(t.TempDir(), "results.json")
	os.WriteFile(outside, data, 0o644)
	if code := ta.run(ctx, "results", "--expected", outside); code != contract.ExitCriteriaFailed || !strings.Contains(ta.err.String(), "worse than declared") {
		t.Errorf("elsewhere: exit %d\n%s", code, ta.err)
	}
}

// history's table shows each series' latest runs (--last, 10 by
// default) and says how many it left out; --csv has them all, with the
// series id and the software stack of each.
func TestHistoryShowsTheLatestRuns(t *testing.T) {
	ta := newTestApp(t)
	dir := t.TempDir()
	start := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	var paths []string
	for i := 0; i < 13; i++ {
		p := filepath.Join(dir, fmt.Sprintf("r%02d.json", i))
		if err := os.WriteFile(p, []byte(timedResults(t, 1, start.Add(time.Duration(i)*24*time.Hour))), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	ctx := context.Background()
	if code := ta.run(ctx, append([]string{"history", "import"}, paths...)...); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, ta.err)
	}
	if code := ta.run(ctx, "history", "my-kernel"); code != 0 || !strings.Contains(ta.out.String(), "(3 earlier runs left out") || strings.Count(ta.out.String(), "2026-11-") != 10 {
		t.Errorf("history: exit %d\n%s", code, ta.out)
	}
	if code := ta.run(ctx, "history", "--last", "0", "my-kernel"); code != 0 || strings.Contains(ta.out.String(), "left out") || strings.Count(ta.out.String(), "2026-11-") != 13 {
		t.Errorf("history --last 0: exit %d\n%s", code, ta.out)
	}
	if code := ta.run(ctx, "history", "--csv", "my-kernel"); code != 0 {
		t.Fatalf("history --csv: exit %d", code)
	}
	recs, err := csv.NewReader(strings.NewReader(ta.out.String())).ReadAll()
	if err != nil || len(recs) != 14 {
		t.Fatalf("history --csv: %d records, %v", len(recs), err)
	}
	col := func(name string) int { return slices.Index(recs[0], name) }
	if col("series_id") < 0 || recs[1][col("series_id")] == "" || recs[1][col("series_id")] != recs[13][col("series_id")] || !strings.Contains(recs[1][col("stack")], "torch 2.11.0") {
		t.Errorf("series_id and stack: %v\n%v", recs[0], recs[1])
	}
}
