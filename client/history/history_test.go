package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// openAt, when set, names the database open gives a test.
var openAt func(t *testing.T) string

// writerEnv makes the test binary a writer process (TestMain): it imports
// runs into a history until it has written the asked number, or is killed.
const writerEnv = "XRUN_HISTORY_TEST_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		os.Exit(writer(spec))
	}
	os.Exit(m.Run())
}

// writer imports n runs named prefix-i into the history at path
// ("path,n,prefix"), each of cases x impls points, and prints each run's
// id once it is committed.
func writer(spec string) int {
	parts := strings.SplitN(spec, ",", 3)
	n, _ := strconv.Atoi(parts[1])
	s, err := Open(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		r := run(fmt.Sprintf("%s-%04d", parts[2], i), start.Add(time.Duration(i)*time.Minute), 20, 5, 1.0)
		if _, err := s.Import(r, Source{Origin: "test"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(r.JobID)
	}
	return 0
}

// run makes results of one job: cases x impls, every median at median ms.
func run(id string, at time.Time, cases, impls int, median float64) *result.Results {
	r := &result.Results{SchemaVersion: 1, JobID: id, Experiment: "synthetic", CreatedAt: at, Status: result.StatusSucceeded,
		Mode: "gpu", Baseline: "i0",
		Env: result.Env{Host: "gpu-box", Driver: "580.159.04", CUDARuntime: "13.0", Torch: "2.11.0", Python: "3.12.3",
			GPUs: []result.GPU{{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-52449011",
				Before: &result.GPUState{MaxSMClockMHz: 1980, PowerLimitW: 700}}}}}
	for i := 0; i < impls; i++ {
		r.Implementations = append(r.Implementations, fmt.Sprintf("i%d", i))
	}
	for c := 0; c < cases; c++ {
		cs := result.Case{Params: map[string]any{"T": 256 << c, "dtype": "bfloat16"}, Label: fmt.Sprintf("T=%d", 256<<c),
			Results: map[string]*result.ImplResult{}}
		for _, name := range r.Implementations {
			cs.Results[name] = &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{
				MedianMS: median, Q1MS: median * 0.99, Q3MS: median * 1.01, Samples: 100, Converged: true, Clock: result.ClockKernel,
				KeptSamplesMS: []float64{median * 0.99, median, median * 1.01}}}
		}
		r.Cases = append(r.Cases, cs)
	}
	return r
}

// open makes an empty history for a test: SQLite, or PostgreSQL where
// TestPostgres runs the tests again (openAt).
func open(t *testing.T) *Store {
	t.Helper()
	where := filepath.Join(t.TempDir(), "h", FileName)
	if openAt != nil {
		where = openAt(t)
	}
	s, err := Open(where)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestImportCommittedResults(t *testing.T) {
	s := open(t)
	ims, err := s.ImportFile(context.Background(), filepath.Join("..", "..", "experiments", "039-gla-pingpong", "results"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ims) != 3 {
		t.Fatalf("imported %+v, want the three committed runs", ims)
	}
	points, err := s.Points(Filter{Experiment: "gla-pingpong", Implementation: "pipelined", Case: map[string]string{"T": "1024", "chunk": "256"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 3 {
		t.Fatalf("%d points of pipelined at chunk=256 T=1024, want one per run", len(points))
	}
	// The bare runner and xrun submit on one H100 with one stack: one series.
	if points[0].SeriesID != points[2].SeriesID || !points[0].Date.Before(points[2].Date) {
		t.Errorf("points %+v", points)
	}
	// A second import replaces the run.
	again, err := s.ImportFile(context.Background(), filepath.Join("..", "..", "experiments", "039-gla-pingpong", "results", "2026-11-22-h100", "results.json"), nil, nil)
	if err != nil || len(again) != 1 || !again[0].Replaced {
		t.Fatalf("re-import: %+v, %v", again, err)
	}
	after, _ := s.Points(Filter{Experiment: "gla-pingpong"})
	if len(after) != 3*28 {
		t.Errorf("%d points after a re-import, want %d", len(after), 3*28)
	}
	if pts, _ := s.Points(Filter{Host: "no-such-host"}); len(pts) != 0 {
		t.Errorf("host filter kept %d points", len(pts))
	}
	if pts, _ := s.Points(Filter{GPU: "GPU-52449011"}); len(pts) == 0 {
		t.Error("GPU UUID filter kept nothing")
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestImportRefusesPartialResults(t *testing.T) {
	s := open(t)
	r := run("j1", time.Now(), 1, 1, 1)
	r.Status = result.StatusRunning
	if _, err := s.Import(r, Source{}); err != ErrRunning {
		t.Errorf("import of a running job: %v", err)
	}
}

// Twelve stable nights, then a slower one: suspect; the next confirms it.
// A change point at the slower night starts a new baseline.
// slowed is run (two cases, three implementations) with i1 alone at
// median ms.
func slowed(id string, at time.Time, median float64) *result.Results {
	r := run(id, at, 2, 3, 1.0)
	for _, c := range r.Cases {
		t := c.Results["i1"].Timing
		t.MedianMS, t.Q1MS, t.Q3MS = median, median*0.99, median*1.01
		t.KeptSamplesMS = []float64{median * 0.99, median, median * 1.01}
	}
	return r
}

func TestJudgeAndChangePoint(t *testing.T) {
	s := open(t)
	start := time.Date(2026, 1, 1, 2, 17, 0, 0, time.UTC)
	for i := 0; i < 12; i++ {
		if _, err := s.Import(run(fmt.Sprintf("n%02d", i), start.Add(time.Duration(i)*24*time.Hour), 2, 3, 1.0+0.001*float64(i%3)), Source{}); err != nil {
			t.Fatal(err)
		}
	}
	js, err := s.Judge("n11", regress.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 6 || js[0].Verdict.Status != regress.Stable || js[0].Verdict.Baseline != 11 {
		t.Fatalf("night 12: %+v", js)
	}
	if js[0].Baseline != "i0" || js[0].Verdict.Basis != regress.BasisHost || js[1].Verdict.Basis != regress.BasisRatio {
		t.Errorf("bases %q %q of a run whose baseline is %q", js[0].Verdict.Basis, js[1].Verdict.Basis, js[0].Baseline)
	}
	// i1 alone 15 % slower: its ratio to i0 moved.
	s.Import(slowed("slow1", start.Add(12*24*time.Hour), 1.15), Source{})
	js, _ = s.Judge("slow1", regress.Default())
	if v := js[1].Verdict; v.Status != regress.Suspect || v.Direction != regress.Slower || v.PValue == nil || v.Relative == nil ||
		v.Relative.Of != "ratio to i0" {
		t.Fatalf("the first slow night: %+v", v)
	}
	if v := js[0].Verdict; v.Status != regress.Stable {
		t.Errorf("the baseline on i1's slow night: %+v", v)
	}
	s.Import(slowed("slow2", start.Add(12*24*time.Hour+time.Minute), 1.15), Source{})
	js, _ = s.Judge("slow2", regress.Default())
	if js[1].Verdict.Status != regress.Regressed || js[1].Verdict.Confirms != "slow1" {
		t.Fatalf("the rerun: %+v", js[1].Verdict)
	}
	// Judged as it was that night, slow1 stays a suspect.
	if js, _ := s.Judge("slow1", regress.Default()); js[1].Verdict.Status != regress.Suspect {
		t.Errorf("slow1 re-judged: %+v", js[1].Verdict)
	}
	// Walked alone (history --impl i1), the series still reads its ratio.
	pts, _ := s.Points(Filter{Implementation: "i1"})
	all, err := s.Walk(pts, regress.Default())
	if err != nil || len(all) != len(pts) || all[13].Verdict.Status != regress.Regressed || all[13].Implementation != "i1" {
		t.Fatalf("i1 walked alone (%v): %d of %d points, %+v", err, len(all), len(pts), all[13].Verdict)
	}
	var ids []int64
	for _, j := range js {
		ids = append(ids, j.SeriesID)
	}
	if n, err := s.MarkChange(ids, start.Add(12*24*time.Hour), "slow1", "accepted: new tiling"); err != nil || n != 6 {
		t.Fatal(n, err)
	}
	js, _ = s.Judge("slow2", regress.Default())
	if js[1].Verdict.Status != regress.Insufficient || js[1].Verdict.Baseline != 1 {
		t.Errorf("after the change point: %+v", js[1].Verdict)
	}
	cps, _ := s.ChangePoints()
	if len(cps) != 6 || cps[ids[0]][0].Note != "accepted: new tiling" {
		t.Errorf("change points %+v", cps)
	}
}

// Every implementation 15 % slower is the host: stable, and said so.
func TestJudgeHostSlower(t *testing.T) {
	s := open(t)
	start := time.Date(2026, 1, 1, 2, 17, 0, 0, time.UTC)
	for i := 0; i < 12; i++ {
		s.Import(run(fmt.Sprintf("n%02d", i), start.Add(time.Duration(i)*24*time.Hour), 2, 3, 1.0+0.001*float64(i%3)), Source{})
	}
	s.Import(run("busy", start.Add(12*24*time.Hour), 2, 3, 1.15), Source{})
	js, err := s.Judge("busy", regress.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if v := j.Verdict; v.Status != regress.Stable || v.Host != "the host was slower (all implementations +15 %)" || v.Change < 0.14 {
			t.Errorf("%s %s: %+v", j.Implementation, j.Case, v)
		}
	}
}

// A layout-1 history gains runs.baseline, filled from the points'
// speedups, and points.autotune, empty.
func TestMigrateBaseline(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := run("old", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 1, 3, 1.0)
	r.Comparisons = []result.Comparison{{A: "i1", B: "i0", Label: "T=256", Speedup: 1.0}, {A: "i2", B: "i0", Label: "T=256", Speedup: 1.0}}
	r2 := run("none", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), 1, 3, 1.0)
	for _, x := range []*result.Results{r, r2} {
		if _, err := s.Import(x, Source{}); err != nil {
			t.Fatal(err)
		}
	}
	// Back to layout 1, as an older xrun wrote it.
	back := []string{"ALTER TABLE runs DROP COLUMN baseline", "ALTER TABLE points DROP COLUMN autotune", "ALTER TABLE points DROP COLUMN host_busy"}
	for _, c := range clockColumns {
		back = append(back, "ALTER TABLE points DROP COLUMN "+strings.Fields(c)[0])
	}
	for _, q := range append(back, "PRAGMA user_version = 1") {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pts, err := s.Points(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		want := map[string]string{"old": "i0", "none": ""}[p.JobID]
		if p.Baseline != want {
			t.Errorf("%s %s: baseline %q, want %q", p.JobID, p.Implementation, p.Baseline, want)
		}
	}
}

func TestImportStore(t *testing.T) {
	s := open(t)
	js, err := store.Open(filepath.Join(t.TempDir(), "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	// The last is one part of a split sweep: the history takes the job
	// it is gathered into, never the part too.
	for i, status := range []string{result.StatusSucceeded, result.StatusRunning, result.StatusCriteriaFailed, result.StatusSucceeded} {
		j := &store.Job{ID: fmt.Sprintf("job%d", i), Host: "ssh://lab@gpu1", Status: status}
		if i == 3 {
			j.Split, j.SplitOf = "1/2", "job0"
		}
		if err := js.Create(j); err != nil {
			t.Fatal(err)
		}
		r := run(j.ID, time.Now().Add(time.Duration(i)*time.Hour), 1, 1, 1)
		r.Status = status
		if err := result.WriteFile(js.Results(j.ID), r); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.ImportStore(js)
	if err != nil || n != 2 {
		t.Fatalf("ImportStore = %d, %v; want the 2 finished jobs", n, err)
	}
	if n, _ := s.ImportStore(js); n != 0 {
		t.Errorf("a second ImportStore imported %d", n)
	}
	if part, _ := js.Load("job3"); part != nil {
		if _, err := s.ImportJob(js, part); !errors.Is(err, ErrPart) {
			t.Errorf("ImportJob of a part: %v, want ErrPart", err)
		}
	}
	pts, _ := s.Points(Filter{Host: "lab@gpu1"})
	if len(pts) != 2 || pts[0].Source != SourceStore {
		t.Errorf("points by address: %+v", pts)
	}
}

func TestBackup(t *testing.T) {
	s := open(t)
	s.Import(run("j1", time.Now(), 3, 2, 1), Source{})
	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := s.Backup(dst); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if pts, _ := c.Points(Filter{}); len(pts) != 6 {
		t.Errorf("backup holds %d points", len(pts))
	}
	if err := s.Backup(dst); err == nil {
		t.Error("backup over an existing file")
	}
}

func startWriter(t *testing.T, path string, n int, prefix string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%s", writerEnv, path, n, prefix))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// Two processes importing at once (two nightly jobs) both finish, and
// every run of both is whole.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a := startWriter(t, path, 40, "a")
	b := startWriter(t, path, 40, "b")
	if err := a.Wait(); err != nil {
		t.Errorf("writer a: %v", err)
	}
	if err := b.Wait(); err != nil {
		t.Errorf("writer b: %v", err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkWhole(t, s, 80)
}

// A writer killed (SIGKILL) in the middle of its imports leaves the history
// whole: it opens, passes the integrity check, and every run in it has all
// of its points.
func TestKilledWriterLeavesHistoryWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	for round := 0; round < 3; round++ {
		w := startWriter(t, path, 100000, fmt.Sprintf("k%d", round))
		time.Sleep(time.Duration(400+300*round) * time.Millisecond)
		if err := w.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		w.Wait()
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs := checkWhole(t, s, -1)
	if runs == 0 {
		t.Fatal("the writers committed nothing before they were killed")
	}
	t.Logf("%d runs committed across three killed writers", runs)
	// It still takes writes.
	if _, err := s.Import(run("after", time.Now(), 2, 2, 1), Source{}); err != nil {
		t.Fatal(err)
	}
}

// checkWhole checks the history's integrity and that each run has all of
// its 20 x 5 points; want < 0 accepts any number of runs.
func checkWhole(t *testing.T, s *Store, want int) int {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.Query("SELECT r.job_id, count(p.series_id) FROM runs r LEFT JOIN points p ON p.run_id = r.id GROUP BY r.id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var points int
		if err := rows.Scan(&id, &points); err != nil {
			t.Fatal(err)
		}
		if points != 100 {
			t.Errorf("run %s has %d of its 100 points", id, points)
		}
		n++
	}
	if want >= 0 && n != want {
		t.Errorf("%d runs, want %d", n, want)
	}
	return n
}

// The config each autotuned kernel ran with is kept with the point, and
// the regression rule reads it as the value's config.
func TestAutotuneKept(t *testing.T) {
	s := open(t)
	r := run("tuned", time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), 1, 2, 1.46)
	r.Cases[0].Results["i1"].Autotune = []result.Autotune{{Kernel: "matmul_kernel", Kind: "triton", Config: "128x256x64/w8/s3", Source: result.AutotuneTuned}}
	if _, err := s.Import(r, Source{}); err != nil {
		t.Fatal(err)
	}
	pts, err := s.Points(Filter{Implementation: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		if p.Implementation == "i1" {
			got = append(got, p.Autotune)
			if vs := Values([]Point{p}, nil); vs[0].Config != "matmul_kernel 128x256x64/w8/s3" {
				t.Errorf("value config %q", vs[0].Config)
			}
		}
	}
	if len(got) != 1 || got[0] != "matmul_kernel 128x256x64/w8/s3" {
		t.Errorf("autotune %q", got)
	}
}
