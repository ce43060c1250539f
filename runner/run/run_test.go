package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/gpuinfo"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/spec"
)

var (
	pyOnce sync.Once
	pyPath string
	pyErr  error
)

// python returns an interpreter with numpy (XRUN_TEST_PYTHON overrides). CI
// installs one (scripts/setup.sh), so there a missing one fails the test.
func python(t *testing.T) string {
	t.Helper()
	pyOnce.Do(func() { pyPath, pyErr = harness.FindPython(context.Background(), os.Getenv("XRUN_TEST_PYTHON"), nil) })
	if pyErr != nil {
		testenv.Missing(t, "find python: %v (apt-get install python3-numpy)", pyErr)
	}
	return pyPath
}

func needTorch(t *testing.T, py string) {
	t.Helper()
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		testenv.Missing(t, "%s cannot import torch (apt-get install python3-torch)", py)
	}
}

// noGPU skips GPU-dependent expectations on a machine that has one.
func noGPU(t *testing.T) {
	t.Helper()
	if _, _, err := gpuinfo.Query(context.Background()); err == nil {
		t.Skip("this machine has a GPU; the test is about CPU-only hosts")
	}
}

var schemaOnce = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(result.Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("schema.json")
})

// readResults decodes out/results.json and validates it against schema.json.
func readResults(t *testing.T, out string) *result.Results {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	r, err := result.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schemaOnce()
	if err != nil {
		t.Fatalf("compile schema.json: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("results.json does not match schema.json: %v", err)
	}
	return r
}

type runOut struct {
	r    *result.Results
	err  error
	code int
	out  string
	log  string
}

func runFixture(t *testing.T, ctx context.Context, o Options) runOut {
	t.Helper()
	if o.OutDir == "" {
		o.OutDir = t.TempDir()
	}
	var log bytes.Buffer
	o.Log = &log
	r, err := Run(ctx, o)
	t.Logf("runner log:\n%s", log.String())
	return runOut{r: r, err: err, code: ExitCode(r, err), out: o.OutDir, log: log.String()}
}

func implOf(t *testing.T, r *result.Results, caseIdx int, name string) *result.ImplResult {
	t.Helper()
	if caseIdx >= len(r.Cases) {
		t.Fatalf("no case %d (have %d)", caseIdx, len(r.Cases))
	}
	ir := r.Cases[caseIdx].Results[name]
	if ir == nil {
		t.Fatalf("case %d has no result for %s", caseIdx, name)
	}
	return ir
}

// Every way an implementation can fail is caught, reported with its
// status, and the others are still measured.
func TestFailuresAreIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/failures", Python: py, JobID: "j-1"})
	if ro.err != nil {
		t.Fatal(ro.err)
	}
	if ro.code != contract.ExitFailed {
		t.Errorf("exit code %d, want %d", ro.code, contract.ExitFailed)
	}
	r := readResults(t, ro.out)
	if r.Status != result.StatusFailed || r.Success || r.Mode != "cpu" || r.JobID != "j-1" || r.FinishedAt == nil {
		t.Errorf("status %q success %v mode %q job %q finished %v", r.Status, r.Success, r.Mode, r.JobID, r.FinishedAt)
	}
	tests := []struct {
		name     string
		status   string
		timed    bool
		errSub   string
		tailSub  string
		modified bool
		replayed bool
	}{
		{name: "reference", status: result.ImplOK, timed: true},
		{name: "good", status: result.ImplOK, timed: true},
		{name: "noisy", status: result.ImplOK, timed: true},
		// An incorrect implementation is not timed: it gets no speed verdict.
		{name: "wrong", status: result.ImplWrong, errSub: "elements outside atol=0.0001"},
		{name: "zeroes", status: result.ImplWrong, errSub: "modified its inputs", modified: true},
		{name: "replay", status: result.ImplWrong, errSub: "replayed or cached", replayed: true},
		{name: "raises", status: result.ImplError, errSub: "RuntimeError: kernel launch failed: bad block size"},
		{name: "segfault", status: result.ImplCrashed, errSub: "segmentation fault", tailSub: "Fatal Python error: Segmentation fault"},
		{name: "hangs", status: result.ImplTimeout, errSub: "no answer to check"},
		{name: "gpu_only", status: result.ImplSkipped, errSub: "needs a GPU (requires: triton); this run has none"},
	}
	for _, tt := range tests {
		ir := implOf(t, r, 0, tt.name)
		if ir.Status != tt.status {
			t.Errorf("%s: status %q, want %q (error %q)", tt.name, ir.Status, tt.status, ir.Error)
		}
		if (ir.Timing != nil) != tt.timed {
			t.Errorf("%s: timing %+v, want timed=%v", tt.name, ir.Timing, tt.timed)
		}
		if ir.Timing != nil && (ir.Timing.Samples < 10 || ir.Timing.Rounds < 3 || ir.Timing.MedianMS <= 0 || ir.Timing.StopReason == "") {
			t.Errorf("%s: timing %+v", tt.name, ir.Timing)
		}
		if !strings.Contains(ir.Error, tt.errSub) {
			t.Errorf("%s: error %q lacks %q", tt.name, ir.Error, tt.errSub)
		}
		if tt.status == result.ImplWrong && !strings.HasSuffix(ir.Error, notTimedWrong) {
			t.Errorf("%s: error %q does not say why it was not timed", tt.name, ir.Error)
		}
		if !strings.Contains(ir.StderrTail, tt.tailSub) {
			t.Errorf("%s: stderr tail %q lacks %q", tt.name, ir.StderrTail, tt.tailSub)
		}
		if c := ir.Correctness; c != nil && (c.InputsModified != tt.modified || c.Replayed != tt.replayed || c.Trials != 3) {
			t.Errorf("%s: correctness %+v", tt.name, c)
		}
		if tt.name != "reference" && (tt.status == result.ImplOK || tt.status == result.ImplWrong) && ir.Correctness == nil {
			t.Errorf("%s: no correctness", tt.name)
		}
	}
	good := implOf(t, r, 0, "good")
	if good.Correctness == nil {
		t.Fatal("good: no correctness")
	}
	if s := good.Correctness.Seeds; len(s) != 3 || s[0] != 1 || s[1] != 2 {
		t.Errorf("seeds %v, want 1, 2 and a random one", s)
	}
	if r.Cases[0].Flops != 512 || good.Throughput == nil || good.Throughput.TFLOPS <= 0 {
		t.Errorf("flops %g, throughput %+v", r.Cases[0].Flops, good.Throughput)
	}
	if len(r.Criteria) != 1 || !r.Criteria[0].Passed {
		t.Errorf("criteria %+v", r.Criteria)
	}
	if len(r.Comparisons) == 0 {
		t.Error("no comparisons")
	}
	for _, name := range []string{"noisy", "segfault"} {
		b, err := os.ReadFile(filepath.Join(ro.out, "logs", name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if name == "noisy" && !strings.Contains(string(b), "noisy_add on stderr") {
			t.Errorf("logs/noisy.log lacks the kernel's output: %q", b)
		}
	}
	if md, err := os.ReadFile(filepath.Join(ro.out, "results.md")); err != nil || !bytes.Contains(md, []byte("good")) {
		t.Errorf("results.md: %v %q", err, md)
	}
	if rl, err := os.ReadFile(filepath.Join(ro.out, "runner.log")); err != nil || !bytes.Contains(rl, []byte("status: failed")) {
		t.Errorf("runner.log: %v", err)
	}
}

// A numpy-only experiment (no torch imported) with dict inputs, impl
// params, per-implementation models and metrics; its criteria pass.
func TestNumpyExperimentSucceeds(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/numpy-saxpy", Python: py, GitCommit: "abc123"})
	if ro.err != nil || ro.code != contract.ExitSucceeded {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	if !r.Success || r.Status != result.StatusSucceeded || len(r.Cases) != 2 || r.Env.GitCommit != "abc123" || r.Env.Python == "" || r.Env.Numpy == "" {
		t.Fatalf("success %v status %s cases %d env %+v", r.Success, r.Status, len(r.Cases), r.Env)
	}
	if r.Methodology.Timer != "perf_counter" || r.Methodology.Trials != 3 || r.Methodology.Rounds != 3 || r.Methodology.StoppingRule == "" {
		t.Errorf("methodology %+v", r.Methodology)
	}
	for ci := range r.Cases {
		for _, name := range []string{"reference", "loop", "vectorized"} {
			ir := implOf(t, r, ci, name)
			if ir.Status != result.ImplOK || ir.Timing == nil || !ir.Timing.Converged {
				t.Errorf("case %d %s: %+v %+v", ci, name, ir, ir.Timing)
			}
		}
		if m := implOf(t, r, ci, "vectorized").Metrics; m["chunks"] != r.Cases[ci].Params["n"].(float64)/64 {
			t.Errorf("metrics %v (impl params not passed?)", m)
		}
	}
	if len(r.Comparisons) != 2 || r.Comparisons[0].Verdict != result.VerdictFast {
		t.Errorf("comparisons %+v", r.Comparisons)
	}
	// A CPU run on Linux records the host's load beside every timing.
	if runtime.GOOS == "linux" {
		for ci := range r.Cases {
			if h := implOf(t, r, ci, "loop").Timing.HostLoad; h == nil || h.Windows < 3 || h.CPUs < 1 || h.JobShare <= 0 {
				t.Errorf("case %d loop: host load %+v", ci, h)
			}
		}
		if h := r.Env.HostLoad; h == nil || h.Timings != 6 || h.BusyShare != analyze.HostBusyShare {
			t.Errorf("env.host_load %+v", h)
		}
	}
}

func TestTorchCPUExperiment(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	needTorch(t, py)
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/torch-mm", Python: py})
	if ro.err != nil || ro.code != contract.ExitFailed {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	if r.Env.Torch == "" {
		t.Error("torch version not recorded")
	}
	if _, ok := r.Cases[0].Results["reference"]; ok {
		t.Error("time_reference: false, yet the reference has a result")
	}
	want := map[string]string{"matmul": result.ImplOK, "transposed": result.ImplWrong,
		"in_place": result.ImplWrong, "needs_hopper": result.ImplSkipped}
	for name, status := range want {
		ir := implOf(t, r, 0, name)
		if ir.Status != status {
			t.Errorf("%s: %s (%s), want %s", name, ir.Status, ir.Error, status)
		}
	}
	mm := implOf(t, r, 0, "matmul")
	if c := mm.Correctness; c.Dtype != "float32" || c.Tolerance.Atol != 1e-4 || c.MaxAbsError == 0 || mm.Timing == nil {
		t.Errorf("matmul: %+v %+v", c, mm.Timing)
	}
	if !implOf(t, r, 0, "in_place").Correctness.InputsModified {
		t.Error("in_place: inputs_modified not set")
	}
	if !strings.Contains(implOf(t, r, 0, "transposed").Error, "output[0]") {
		t.Errorf("transposed: %s", implOf(t, r, 0, "transposed").Error)
	}
}

// A command benchmark speaks the protocol without the Python harness.
func TestCommandBenchmark(t *testing.T) {
	noGPU(t)
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/command"})
	if ro.err != nil || ro.code != contract.ExitSucceeded {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	slow, fast := implOf(t, r, 0, "slow"), implOf(t, r, 0, "fast")
	if slow.Timing.MedianMS != 2 || fast.Timing.MedianMS != 1 || !fast.Timing.Converged || fast.Throughput.TFLOPS != 2 {
		t.Errorf("slow %+v fast %+v %+v", slow.Timing, fast.Timing, fast.Throughput)
	}
	if len(r.Comparisons) != 1 || r.Comparisons[0].Speedup != 2 || r.Comparisons[0].Verdict != result.VerdictFast {
		t.Errorf("comparisons %+v", r.Comparisons)
	}
	b, _ := os.ReadFile(filepath.Join(ro.out, "logs", "fast.log"))
	if !strings.Contains(string(b), "timing fast") {
		t.Errorf("logs/fast.log: %q", b)
	}
}

// copyFixture copies a fixture to a temporary directory and applies edits
// to its xrun.yaml.
func copyFixture(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", name, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "xrun.yaml" {
			b = []byte(edit(string(b)))
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestCriteriaFailed(t *testing.T) {
	noGPU(t)
	dir := copyFixture(t, "command", func(s string) string { return strings.Replace(s, "at_least: 1.5", "at_least: 3", 1) })
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir})
	if ro.err != nil || ro.code != contract.ExitCriteriaFailed {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	if r.Status != result.StatusCriteriaFailed || r.Success || len(r.Criteria) != 1 || r.Criteria[0].Passed {
		t.Errorf("status %s success %v criteria %+v", r.Status, r.Success, r.Criteria)
	}
}

func TestPostsResults(t *testing.T) {
	noGPU(t)
	var mu sync.Mutex
	var got []byte
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got, _ = io.ReadAll(req.Body)
		auth = req.Header.Get("Authorization")
	}))
	defer srv.Close()
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/command", PostURL: srv.URL, PostToken: "s3cret", JobID: "j-post"})
	if ro.code != contract.ExitSucceeded {
		t.Fatalf("exit %d: %v", ro.code, ro.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if auth != "Bearer s3cret" {
		t.Errorf("Authorization %q", auth)
	}
	r, err := result.Decode(got)
	if err != nil || r.JobID != "j-post" || r.Status != result.StatusSucceeded {
		t.Errorf("posted %v %+v", err, r)
	}
	if strings.Contains(ro.log, "s3cret") {
		t.Error("the token is in the log")
	}
}

// A failed post is logged and loses nothing.
func TestPostFailureKeepsResults(t *testing.T) {
	noGPU(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/command", PostURL: srv.URL})
	if ro.code != contract.ExitSucceeded || !strings.Contains(ro.log, "post results:") {
		t.Fatalf("exit %d, log lacks the post failure", ro.code)
	}
	readResults(t, ro.out)
}

func TestBadSpec(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte("name: x\nbenchmark:\n  bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir})
	var se *SpecError
	if !errors.As(ro.err, &se) || ro.code != contract.ExitUsage || !strings.Contains(ro.err.Error(), "bogus") {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	if r.Status != result.StatusFailed || !strings.Contains(r.Error, "bogus") {
		t.Errorf("status %s error %q", r.Status, r.Error)
	}
	if _, err := Run(context.Background(), Options{ExperimentDir: dir, OutDir: t.TempDir(), Mode: "tpu"}); !errors.As(err, &se) {
		t.Errorf("mode tpu: %v", err)
	}
	for _, bad := range []string{"0", "1.5", "ten", "-0.1"} {
		if _, err := Run(context.Background(), Options{ExperimentDir: dir, OutDir: t.TempDir(), HostBusyShare: bad}); !errors.As(err, &se) ||
			!strings.Contains(err.Error(), contract.EnvHostBusyShare) {
			t.Errorf("XRUN_HOST_BUSY_SHARE=%s: %v", bad, err)
		}
	}
}

func TestHostBusyShareOption(t *testing.T) {
	for in, want := range map[string]float64{"": analyze.HostBusyShare, "off": 0, "0.3": 0.3, "1": 1} {
		if got, err := (Options{HostBusyShare: in}).busyShare(); err != nil || got != want {
			t.Errorf("busyShare(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestSpecWantsGPUButNoneFound(t *testing.T) {
	noGPU(t)
	dir := copyFixture(t, "command", func(s string) string { return s + "resources: {gpus: 1}\n" })
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir})
	var ng *NoGPUError
	if !errors.As(ro.err, &ng) || ro.code != contract.ExitInfra || !strings.Contains(ro.err.Error(), "XRUN_MODE=cpu") {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	readResults(t, ro.out)
	// The caller's own way to ask for the CPU sweep replaces XRUN_MODE.
	ro = runFixture(t, context.Background(), Options{ExperimentDir: dir, CPUHint: "pass --cpu"})
	if !errors.As(ro.err, &ng) || !strings.HasSuffix(ro.err.Error(), ": pass --cpu to run the CPU sweep instead") {
		t.Fatalf("with CPUHint: %v", ro.err)
	}
	var ie *InfraError
	// Asking for the CPU on purpose runs it.
	ro = runFixture(t, context.Background(), Options{ExperimentDir: dir, Mode: "cpu"})
	if ro.code != contract.ExitSucceeded {
		t.Fatalf("mode cpu: exit %d, %v", ro.code, ro.err)
	}
	ro = runFixture(t, context.Background(), Options{ExperimentDir: "testdata/command", Mode: "gpu"})
	if !errors.As(ro.err, &ie) {
		t.Fatalf("mode gpu without a GPU: %v", ro.err)
	}
}

func TestOutputNotWritable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{ExperimentDir: "testdata/command", OutDir: filepath.Join(f, "out")})
	var ie *InfraError
	if !errors.As(err, &ie) || ExitCode(nil, err) != contract.ExitInfra {
		t.Fatalf("err %v", err)
	}
}

// Cancelling (SIGINT/SIGTERM in the binary) kills the workers and leaves a
// valid results.json that says cancelled.
func TestCancel(t *testing.T) {
	noGPU(t)
	py := python(t)
	dir := copyFixture(t, "failures", func(s string) string {
		s = strings.Replace(s, "impl_timeout: 2s", "impl_timeout: 5m", 1)
		return strings.Replace(s, "    good: kernels:add\n", "    good: kernels:add\n    hangs_first: kernels:hang\n", 1)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := t.TempDir()
	go func() {
		// Cancel once the hanging implementation is being checked.
		for ctx.Err() == nil {
			if b, err := os.ReadFile(filepath.Join(out, "runner.log")); err == nil && bytes.Contains(b, []byte("good: correct")) {
				time.Sleep(300 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	start := time.Now()
	ro := runFixture(t, ctx, Options{ExperimentDir: dir, OutDir: out, Python: py})
	if !errors.Is(ro.err, context.Canceled) || ro.code != contract.ExitCancelled {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("cancelling took %s", d)
	}
	r := readResults(t, out)
	if r.Status != result.StatusCancelled || r.FinishedAt == nil {
		t.Errorf("status %s", r.Status)
	}
	if ir := implOf(t, r, 0, "hangs_first"); ir.Status != result.ImplNotRun {
		t.Errorf("hangs_first: %s", ir.Status)
	}
	if ir := implOf(t, r, 0, "good"); ir.Status != result.ImplNotRun || ir.Correctness == nil || !ir.Correctness.Passed {
		t.Errorf("good: %+v (its check should stay)", ir)
	}
}

// Setup runs once, in the experiment directory, before any worker; a
// failing setup fails the run.
func TestSetup(t *testing.T) {
	noGPU(t)
	dir := copyFixture(t, "command", func(s string) string {
		return strings.Replace(s, "benchmark:\n", "benchmark:\n  setup: echo built > built.txt && echo setup-output\n", 1)
	})
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir})
	if ro.code != contract.ExitSucceeded || !strings.Contains(ro.log, "setup-output") {
		t.Fatalf("exit %d, log lacks the setup output", ro.code)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "built.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("built.txt: %q %v", b, err)
	}
	dir = copyFixture(t, "command", func(s string) string {
		return strings.Replace(s, "benchmark:\n", "benchmark:\n  setup: exit 3\n", 1)
	})
	ro = runFixture(t, context.Background(), Options{ExperimentDir: dir})
	r := readResults(t, ro.out)
	if ro.code != contract.ExitFailed || r.Status != result.StatusFailed || !strings.Contains(r.Error, "setup") {
		t.Errorf("exit %d status %s error %q", ro.code, r.Status, r.Error)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		r    *result.Results
		err  error
		want int
	}{
		{&result.Results{Status: result.StatusSucceeded}, nil, 0},
		{&result.Results{Status: result.StatusCriteriaFailed}, nil, 1},
		{&result.Results{Status: result.StatusFailed}, nil, 2},
		{&result.Results{Status: result.StatusTimeout}, nil, 2},
		{&result.Results{Status: result.StatusCancelled}, context.Canceled, 130},
		{&result.Results{Status: result.StatusFailed}, &SpecError{errors.New("x")}, 3},
		{nil, &InfraError{errors.New("x")}, 4},
		{&result.Results{Status: result.StatusRunning}, nil, 4},
		{nil, errors.New("x"), 4},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.r, tt.err); got != tt.want {
			t.Errorf("ExitCode(%v, %v) = %d, want %d", tt.r, tt.err, got, tt.want)
		}
	}
}

func TestSeeds(t *testing.T) {
	p := &plan{trials: 3}
	a, b := p.seeds(), p.seeds()
	if len(a) != 3 || a[0] != 1 || a[1] != 2 || a[2] < 0 {
		t.Fatalf("seeds %v", a)
	}
	if a[2] == b[2] {
		// 1 in 2^31 by chance: draw once more before calling it broken.
		if c := p.seeds(); c[2] == a[2] {
			t.Errorf("the last seed is not random: %d, %d, %d", a[2], b[2], c[2])
		}
	}
	if s := (&plan{trials: 1}).seeds(); len(s) != 1 {
		t.Errorf("one trial: %v", s)
	}
}

func TestSkipReason(t *testing.T) {
	h100 := &result.GPU{Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0"}
	a100 := &result.GPU{Name: "NVIDIA A100-SXM4-80GB", ComputeCapability: "8.0"}
	b200 := &result.GPU{Name: "NVIDIA B200", ComputeCapability: "10.0"}
	tests := []struct {
		cpu  bool
		gpu  *result.GPU
		req  []string
		want string
	}{
		{cpu: true, req: []string{"triton"}, want: "needs a GPU (requires: triton); this run has none"},
		{cpu: true, req: []string{"torch"}},
		{cpu: true},
		{gpu: h100, req: []string{"sm_90"}},
		{gpu: h100, req: []string{"sm_90a"}},
		{gpu: a100, req: []string{"triton", "sm_90"}, want: "needs sm_90 (compute capability 9.0 or later); NVIDIA A100-SXM4-80GB has 8.0"},
		{gpu: b200, req: []string{"sm_90a"}, want: "needs sm_90a (architecture-specific features of compute capability 9.0 only); NVIDIA B200 has 10.0"},
		{gpu: b200, req: []string{"sm_100"}},
		{gpu: h100, req: []string{"sm_100"}, want: "needs sm_100 (compute capability 10.0 or later); NVIDIA H100 80GB HBM3 has 9.0"},
		{cpu: true, req: []string{"cpu"}},
		{gpu: h100, req: []string{"cpu"}, want: "a CPU-only check (requires: cpu); this run is on a GPU"},
	}
	for _, tt := range tests {
		p := &plan{cpu: tt.cpu, gpu: tt.gpu}
		im := implSpec(tt.req)
		if got := p.skipReason(im); got != tt.want {
			t.Errorf("cpu=%v gpu=%v requires %v: %q, want %q", tt.cpu, tt.gpu, tt.req, got, tt.want)
		}
	}
}

func TestOptionsFromEnv(t *testing.T) {
	t.Setenv(contract.EnvJobID, "j-9")
	t.Setenv(contract.EnvMode, "cpu")
	t.Setenv(contract.EnvPostURL, "http://x")
	t.Setenv(contract.EnvPostToken, "tok")
	t.Setenv(contract.EnvGitCommit, "c0ffee")
	t.Setenv(contract.EnvHostName, "gpu-box-7")
	o := OptionsFromEnv()
	if o.JobID != "j-9" || o.Mode != "cpu" || o.PostURL != "http://x" || o.PostToken != "tok" || o.GitCommit != "c0ffee" || o.HostName != "gpu-box-7" {
		t.Errorf("%+v", o)
	}
}

// env.host is the machine the client named, else the runner's host name.
func TestHostEnvHost(t *testing.T) {
	if got := hostEnv(context.Background(), Options{HostName: "gpu-box-7", GitCommit: "c0ffee"}, nil).Host; got != "gpu-box-7" {
		t.Errorf("host %q, want the client's name", got)
	}
	own, _ := os.Hostname()
	if got := hostEnv(context.Background(), Options{GitCommit: "c0ffee"}, nil).Host; got != own {
		t.Errorf("host %q, want %q", got, own)
	}
}

func TestWorkerEnvHidesToken(t *testing.T) {
	t.Setenv(contract.EnvPostToken, "secret")
	t.Setenv("PYTHONPATH", "/old")
	env := workerEnv("/exp", nil, "cpu", contract.CacheDir)
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "secret") || !strings.Contains(joined, "PYTHONPATH=/exp:/old") || !strings.Contains(joined, "XRUN_DEVICE=cpu") {
		t.Errorf("env:\n%s", joined)
	}
}

// AOTAutograd's cache is off in the workers unless the job's environment
// turns it on.
func TestWorkerEnvAutogradCache(t *testing.T) {
	env := strings.Join(workerEnv("/exp", nil, "cuda", contract.CacheDir), "\n")
	if !strings.Contains(env, "TORCHINDUCTOR_AUTOGRAD_CACHE=0") {
		t.Errorf("no TORCHINDUCTOR_AUTOGRAD_CACHE=0 in\n%s", env)
	}
	t.Setenv("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
	env = strings.Join(workerEnv("/exp", nil, "cuda", contract.CacheDir), "\n")
	if !strings.Contains(env, "TORCHINDUCTOR_AUTOGRAD_CACHE=1") || strings.Contains(env, "TORCHINDUCTOR_AUTOGRAD_CACHE=0") {
		t.Errorf("the job's own setting is not kept:\n%s", env)
	}
}

// The zygote alone gets the modules to preload: a standby's variable is
// not passed on to the workers.
func TestZygotePreloadEnv(t *testing.T) {
	t.Setenv(contract.EnvZygotePreload, "torch._dynamo")
	env := workerEnv("/exp", nil, "cuda", contract.CacheDir)
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, contract.EnvZygotePreload+"=") }) {
		t.Errorf("the workers' env has %s", contract.EnvZygotePreload)
	}
	if got := zygoteEnv(env, ""); len(got) != len(env) {
		t.Errorf("zygoteEnv without modules added %v", got[len(env):])
	}
	want := contract.EnvZygotePreload + "=" + strings.Join(spec.CompileStack, ",")
	if got := zygoteEnv(env, strings.Join(spec.CompileStack, ",")); got[len(got)-1] != want || len(got) != len(env)+1 {
		t.Errorf("zygoteEnv = ...%v, want %s added", got[len(env):], want)
	}
}

func implSpec(req []string) spec.Implementation {
	return spec.Implementation{Name: "x", Fn: "m:f", Requires: req}
}

// A crashed worker is replaced for the next case; deaths by SIGKILL and
// MemoryError are out-of-memory.
func TestRestartAfterCrashAndOOM(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	dir := copyFixture(t, "failures", func(string) string {
		return `name: restart
benchmark:
  inputs: kernels:make_inputs
  reference: kernels:add
  time_reference: false
  implementations:
    flaky: kernels:segfault_if_small
    killed: kernels:sigkill
    memory: kernels:memory_error
  sweep: {n: [64, 256]}
  method: {min_time_s: 0.01, max_time_s: 0.05, warmup_ms: 1}
`
	})
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py})
	if ro.code != contract.ExitFailed {
		t.Fatalf("exit %d: %v", ro.code, ro.err)
	}
	r := readResults(t, ro.out)
	want := [][]string{
		{"flaky", result.ImplCrashed, result.ImplOK},
		{"killed", result.ImplOOM, result.ImplOOM},
		{"memory", result.ImplOOM, result.ImplOOM},
	}
	for _, w := range want {
		for ci, status := range w[1:] {
			if ir := implOf(t, r, ci, w[0]); ir.Status != status {
				t.Errorf("case %d %s: %s (%s), want %s", ci, w[0], ir.Status, ir.Error, status)
			}
		}
	}
	if ir := implOf(t, r, 1, "flaky"); ir.Timing == nil || ir.Correctness == nil || !ir.Correctness.Passed {
		t.Errorf("flaky on the second case: %+v", ir)
	}
	if e := implOf(t, r, 0, "killed").Error; !strings.Contains(e, "most likely out of memory (the host's; the container has no memory limit)") {
		t.Errorf("killed: %q", e)
	}
}

// resources.timeout bounds the whole job: what was running is not_run and
// the job's status is timeout.
func TestJobTimeout(t *testing.T) {
	noGPU(t)
	dir := t.TempDir()
	script := `while IFS= read -r line <&3; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	case "$line" in
	*'"op":"init"'*) printf '{"event":"ready","id":%s,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"sh"}}\n' "$id" >&4 ;;
	*'"op":"models"'*) printf '{"event":"models","id":%s}\n' "$id" >&4 ;;
	*'"op":"time"'*) sleep 600 ;;
	*) exit 0 ;;
	esac
done
`
	spec := "name: slow\nresources: {timeout: 1s}\nbenchmark:\n  command: [sh, bench.sh]\n  implementations: {stuck: stuck}\n  sweep: {n: [1, 2, 3]}\n"
	for name, body := range map[string]string{"bench.sh": script, "xrun.yaml": spec} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, r := runPastTimeout(t, Options{ExperimentDir: dir})
	if ir := implOf(t, r, 0, "stuck"); ir.Status != result.ImplNotRun {
		t.Errorf("stuck: %+v", ir)
	}
	// The cases it never started are in the results, not run, with the
	// reason: the table shows the whole sweep.
	if len(r.Cases) != 3 {
		t.Fatalf("%d cases, want the sweep's 3", len(r.Cases))
	}
	for ci, label := range []string{"n=1", "n=2", "n=3"} {
		if ir := implOf(t, r, ci, "stuck"); r.Cases[ci].Label != label || ir.Status != result.ImplNotRun || !strings.Contains(ir.Error, "timeout") {
			t.Errorf("case %d (%s): %+v", ci, r.Cases[ci].Label, ir)
		}
	}
}

// hangingPython is a fake interpreter whose probe never answers, and a
// channel closed once the probe has started.
func hangingPython(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	started := filepath.Join(t.TempDir(), "started")
	t.Setenv("XRUN_TEST_PROBE_STARTED", started)
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for i := 0; i < 400; i++ {
			if _, err := os.Stat(started); err == nil {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()
	return mustAbs(t, "../harness/testdata/hangpython/python3"), ch
}

// A runner stopped (SIGTERM) while it probes the interpreter reports the
// cancellation, not a machine without a usable Python.
func TestCancelWhileFindingPython(t *testing.T) {
	py, started := hangingPython(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	ro := runFixture(t, ctx, Options{ExperimentDir: "testdata/numpy-saxpy", Mode: "cpu", Python: py})
	if !errors.Is(ro.err, context.Canceled) || ro.code != contract.ExitCancelled {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	if r.Status != result.StatusCancelled || r.Error != "cancelled" || r.FinishedAt == nil {
		t.Errorf("status %s error %q", r.Status, r.Error)
	}
	if strings.Contains(ro.log, "cannot run the harness") || strings.Contains(ro.log, "no Python") || !strings.Contains(ro.log, "stopped while looking for Python") {
		t.Errorf("the log blames the interpreter or leaves the stop out")
	}
}

// resources.timeout expiring while the interpreter is probed is the job's
// timeout.
func TestJobTimeoutWhileFindingPython(t *testing.T) {
	py, _ := hangingPython(t)
	dir := copyFixture(t, "numpy-saxpy", func(s string) string {
		return strings.Replace(s, "benchmark:\n", "resources: {timeout: 1s}\nbenchmark:\n", 1)
	})
	ro, _ := runPastTimeout(t, Options{ExperimentDir: dir, Mode: "cpu", Python: py})
	if strings.Contains(ro.log, "cannot run the harness") || strings.Contains(ro.log, "no Python") {
		t.Errorf("the log blames the interpreter")
	}
}

// runPastTimeout runs o's experiment, whose resources.timeout is 1s, and
// checks that it ended as a timeout, in time (exit code failed).
func runPastTimeout(t *testing.T, o Options) (runOut, *result.Results) {
	t.Helper()
	start := time.Now()
	ro := runFixture(t, context.Background(), o)
	if ro.err != nil || ro.code != contract.ExitFailed {
		t.Fatalf("err %v, exit %d", ro.err, ro.code)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s with a 1s timeout", d)
	}
	r := readResults(t, ro.out)
	if r.Status != result.StatusTimeout || !strings.Contains(r.Error, "resources.timeout") {
		t.Errorf("status %s error %q", r.Status, r.Error)
	}
	return ro, r
}

func TestTolerance(t *testing.T) {
	impl := &spec.Tolerance{Atol: 1, Rtol: 2}
	bench := &spec.Tolerance{Atol: 3, Rtol: 4}
	tests := []struct {
		im, b *spec.Tolerance
		want  *result.Tolerance
	}{
		{nil, nil, nil},
		{nil, bench, &result.Tolerance{Atol: 3, Rtol: 4}},
		{impl, bench, &result.Tolerance{Atol: 1, Rtol: 2}},
		{impl, nil, &result.Tolerance{Atol: 1, Rtol: 2}},
	}
	for _, tt := range tests {
		got := tolerance(spec.Implementation{Tolerance: tt.im}, &spec.Benchmark{Tolerance: tt.b})
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("tolerance(%v, %v) = %v, want %v", tt.im, tt.b, got, tt.want)
		}
	}
}

// GPU mode end to end without a GPU: a stand-in nvidia-smi reports an H100
// and CPU torch poses as CUDA torch. This drives the GPU-only logic (mode,
// compute capability skips, device identity, flush, GPU state, peaks); the
// timings are the host's.
func TestGPUModeOnFakeGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	needTorch(t, py)
	t.Setenv("PATH", mustAbs(t, "testdata/fakegpu/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PYTHONPATH", mustAbs(t, "../harness/testdata/fakecuda"))
	dir := copyFixture(t, "torch-mm", func(s string) string {
		s = strings.Replace(s, "sweep: {n: [4096]}", "sweep: {n: [32]}", 1)
		s = strings.Replace(s, "    needs_hopper: {fn: mm:matmul, requires: [sm_90]}\n",
			"    needs_hopper: {fn: mm:matmul, requires: [sm_90a]}\n    needs_blackwell: {fn: mm:matmul, requires: [triton, sm_100]}\n", 1)
		s = strings.Replace(s, "time_reference: false", "time_reference: true", 1)
		return strings.Replace(s, "method: {", "method: {flush_bytes: 1m, ", 1)
	})
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py})
	if ro.err != nil || ro.code != contract.ExitFailed {
		t.Fatalf("err %v exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	if r.Mode != "gpu" || r.Methodology.Timer != "cuda_events" || r.Methodology.FlushBytes != 1<<20 || r.Methodology.TimerFloorMS <= 0 || r.Env.Driver != "550.54.15" || r.Env.CUDARuntime != "12.4" {
		t.Errorf("mode %s methodology %+v driver %q cuda %q", r.Mode, r.Methodology, r.Env.Driver, r.Env.CUDARuntime)
	}
	if len(r.Env.GPUs) != 1 {
		t.Fatalf("gpus %+v", r.Env.GPUs)
	}
	g := r.Env.GPUs[0]
	if g.Name != "NVIDIA H100 80GB HBM3" || g.SMCount != 132 || g.L2Bytes != 50<<20 || g.Before == nil || g.After == nil || g.PeakTFLOPS == 0 {
		t.Errorf("gpu %+v", g)
	}
	want := map[string]string{"reference": result.ImplOK, "matmul": result.ImplOK, "needs_hopper": result.ImplOK,
		"transposed": result.ImplWrong, "in_place": result.ImplWrong, "needs_blackwell": result.ImplSkipped}
	for name, status := range want {
		if ir := implOf(t, r, 0, name); ir.Status != status {
			t.Errorf("%s: %s (%s), want %s", name, ir.Status, ir.Error, status)
		}
	}
	if e := implOf(t, r, 0, "needs_blackwell").Error; e != "needs sm_100 (compute capability 10.0 or later); NVIDIA H100 80GB HBM3 has 9.0" {
		t.Errorf("needs_blackwell: %q", e)
	}
	if tp := implOf(t, r, 0, "matmul").Throughput; tp == nil || tp.TFLOPS <= 0 || tp.PctPeakFlops <= 0 {
		t.Errorf("matmul throughput %+v", tp)
	}
	// The clocks were read while each implementation was timed.
	if tm := implOf(t, r, 0, "matmul").Timing; tm == nil || tm.Clocks == nil || tm.Clocks.Readings == 0 || tm.Clocks.SMClockMHz != 1980 {
		t.Errorf("matmul timing clocks %+v", tm)
	}
	// No CUDA driver to load the hold kernel: the spin kernel held the GPU
	// back, and the log says so and why.
	if tm := implOf(t, r, 0, "matmul").Timing; tm == nil || tm.Cover != "spin" {
		t.Errorf("matmul timing cover %+v", tm)
	}
	if !strings.Contains(ro.log, "spin kernel: hold kernel unavailable (libcuda.so.1") {
		t.Errorf("the log does not say why the spin kernel was used:\n%s", ro.log)
	}
	if g.During == nil || g.During.Readings == 0 || g.During.ThrottledReadings != 0 {
		t.Errorf("gpu during %+v", g.During)
	}
	for _, w := range r.Warnings {
		if w.Kind == analyze.WarnThrottled {
			t.Errorf("warning on a GPU at full clock: %+v", w)
		}
	}
}

// A GPU held back by its power limit while an implementation is timed (the
// stand-in nvidia-smi reports sw_power_cap at 1410 MHz) gets a throttled
// warning naming the implementation and case, though the readings before
// and after alone would not show it.
func TestThrottledOnFakeGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	needTorch(t, py)
	t.Setenv("PATH", mustAbs(t, "testdata/fakegpu/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PYTHONPATH", mustAbs(t, "../harness/testdata/fakecuda"))
	t.Setenv("FAKE_SMI_SM_CLOCK", "1410")
	t.Setenv("FAKE_SMI_REASONS", "0x0000000000000004")
	dir := copyFixture(t, "torch-mm", func(string) string {
		return `name: throttled
resources: {gpus: 1}
benchmark:
  inputs: mm:make_inputs
  reference: mm:reference
  time_reference: false
  implementations:
    matmul: mm:matmul
  params: {dtype: float32}
  sweep: {n: [16]}
  method: {flush_bytes: 1m, min_time_s: 0.3, max_time_s: 1, warmup_ms: 1}
`
	})
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py})
	if ro.err != nil || ro.code != contract.ExitSucceeded {
		t.Fatalf("err %v exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	tm := implOf(t, r, 0, "matmul").Timing
	if tm == nil || tm.Clocks == nil || tm.Clocks.SMClockMHz != 1410 || tm.Clocks.ThrottledReadings == 0 {
		t.Fatalf("timing %+v", tm)
	}
	// The power cap alone is a heavy kernel's steady state: told, not throttled.
	warned := func(r *result.Results, kind, reason string) bool {
		for _, w := range r.Warnings {
			if w.Kind == kind && w.Implementation == "matmul" && strings.Contains(w.Label, "n=16") &&
				strings.Contains(w.Message, reason) && strings.Contains(w.Message, "1410 MHz") {
				return true
			}
		}
		return false
	}
	if !warned(r, analyze.WarnPowerCapped, "sw_power_cap") || warned(r, analyze.WarnThrottled, "") {
		t.Errorf("want a power_capped warning for matmul at n=16 and no throttled one: %+v", r.Warnings)
	}
	if rc := tm.Clocks.ReasonReadings["sw_power_cap"]; rc != tm.Clocks.Readings || tm.Clocks.PowerW <= 0 {
		t.Errorf("clocks %+v: want sw_power_cap in every reading and the power", tm.Clocks)
	}
	// A thermal slowdown beside it is throttling.
	t.Setenv("FAKE_SMI_REASONS", "0x0000000000000044")
	ro = runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py})
	if r = readResults(t, ro.out); !warned(r, analyze.WarnThrottled, "hw_thermal_slowdown") {
		t.Errorf("no throttled warning naming hw_thermal_slowdown for matmul at n=16: %+v", r.Warnings)
	}

	// With the monitor off, only the readings before and after remain.
	ro = runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py, NoClockMonitor: true})
	r = readResults(t, ro.out)
	if tm := implOf(t, r, 0, "matmul").Timing; tm == nil || tm.Clocks != nil || r.Env.GPUs[0].During != nil {
		t.Errorf("monitor off: timing %+v, during %+v", tm, r.Env.GPUs[0].During)
	}
	for _, w := range r.Warnings {
		if w.Kind == analyze.WarnThrottled && w.Implementation != "" {
			t.Errorf("monitor off: %+v", w)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// On a GPU a CUDA error (the context is unusable afterwards) crashes the
// implementation and its worker is replaced for the next case; torch's
// out-of-memory error is oom.
func TestGPUErrorsOnFakeGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	needTorch(t, py)
	t.Setenv("PATH", mustAbs(t, "testdata/fakegpu/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PYTHONPATH", mustAbs(t, "../harness/testdata/fakecuda"))
	dir := copyFixture(t, "torch-mm", func(string) string {
		return `name: gpu-errors
resources: {gpus: 1}
benchmark:
  inputs: mm:make_inputs
  reference: mm:reference
  time_reference: false
  implementations:
    illegal: mm:illegal_address
    oom: mm:cuda_oom
  params: {dtype: float32}
  sweep: {n: [8, 16]}
  method: {flush_bytes: 1m, min_time_s: 0.01, max_time_s: 0.05, warmup_ms: 1}
`
	})
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py})
	if ro.code != contract.ExitFailed {
		t.Fatalf("err %v exit %d", ro.err, ro.code)
	}
	r := readResults(t, ro.out)
	for ci := range r.Cases {
		if ir := implOf(t, r, ci, "illegal"); ir.Status != result.ImplCrashed || !strings.Contains(ir.Error, "illegal memory access") {
			t.Errorf("case %d illegal: %s %q", ci, ir.Status, ir.Error)
		}
		if ir := implOf(t, r, ci, "oom"); ir.Status != result.ImplOOM {
			t.Errorf("case %d oom: %s %q", ci, ir.Status, ir.Error)
		}
	}
	if n := strings.Count(ro.log, "illegal: starting worker"); n != 2 {
		t.Errorf("the illegal worker started %d times, want 2 (once per case)", n)
	}
	if n := strings.Count(ro.log, "oom: starting worker"); n != 1 {
		t.Errorf("the oom worker started %d times, want 1 (it survives)", n)
	}
}

// Each implementation's first call at a case, where an autotuner times its
// configs, runs while no other worker uses the GPU, and results.json
// records the config each autotuned kernel chose there. The fixture's
// stand-in autotuner sleeps while it "tunes" and logs when: no two
// tunings may overlap, as they did when the checks made the first calls
// side by side.
func TestFirstCallsTuneAloneOnFakeGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	needTorch(t, py)
	t.Setenv("PATH", mustAbs(t, "testdata/fakegpu/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PYTHONPATH", mustAbs(t, "../harness/testdata/fakecuda"))
	dir := copyFixture(t, "autotune-first", func(s string) string { return s })
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py})
	if ro.err != nil || ro.code != contract.ExitSucceeded {
		t.Fatalf("err %v exit %d\n%s", ro.err, ro.code, ro.log)
	}
	log, err := os.ReadFile(filepath.Join(dir, "tuning.log"))
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		what       string
		start, end float64
	}
	var spans []span
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var sp span
		var n int
		var kernel string
		if _, err := fmt.Sscanf(line, "%s %d %f %f", &kernel, &n, &sp.start, &sp.end); err != nil {
			t.Fatalf("tuning.log line %q: %v", line, err)
		}
		sp.what = fmt.Sprintf("%s at n=%d", kernel, n)
		spans = append(spans, sp)
	}
	// Each kernel tunes once per case (the check's calls and the timing's
	// reuse its choice).
	if len(spans) != 4 {
		t.Fatalf("%d tunings, want 4 (two kernels at two cases):\n%s", len(spans), log)
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.start < b.end && b.start < a.end {
				t.Errorf("%s and %s tuned at the same time", a.what, b.what)
			}
		}
	}
	r := readResults(t, ro.out)
	if r.Methodology.AutotuneCache != result.AutotuneReuse {
		t.Errorf("autotune_cache %q, want %q", r.Methodology.AutotuneCache, result.AutotuneReuse)
	}
	for ci, n := range []int{8, 16} {
		for _, name := range []string{"a", "b"} {
			ir := implOf(t, r, ci, name)
			// The autotuner chose 64/w4/s2; the check, timing both again on
			// the fake GPU's events (the stand-in's configs run alike),
			// kept it or replaced it, and says which.
			if len(ir.Autotune) != 1 || ir.Autotune[0].Check == nil {
				t.Errorf("%s at n=%d: autotune %+v, want one checked record", name, n, ir.Autotune)
				continue
			}
			a, c := ir.Autotune[0], ir.Autotune[0].Check
			want := result.Autotune{Kernel: "kernel_" + name, Kind: "triton", Key: fmt.Sprintf("%d, torch.float32", n), Config: a.Config,
				Source: result.AutotuneTuned, TuningMS: 400, TimingsMS: map[string]float64{"64/w4/s2": 1, "32/w2/s3": 2}}
			kept := a.Config == "64/w4/s2" && c.Replaced == "" && a.Params["SPLIT_K"] == float64(2)
			replaced := a.Config == "32/w2/s3" && c.Replaced == "64/w4/s2" && a.Params["BLOCK"] == float64(32)
			if !reflect.DeepEqual(withoutParams(a), want) || !(kept || replaced) {
				t.Errorf("%s at n=%d: autotune %+v (check %+v)", name, n, a, c)
			}
			if len(c.TimingsMS) != 2 || c.Rounds < 1 || c.Clock != result.ClockEvents || c.Note == "" {
				t.Errorf("%s at n=%d: check %+v", name, n, c)
			}
		}
	}
	if !strings.Contains(ro.log, "a: autotuned kernel_a: 64/w4/s2 of 2 configs in 0.4 s") {
		t.Errorf("runner.log does not say what was tuned:\n%s", ro.log)
	}
}

// withoutParams is a without its parameters and its check, which the
// tests look at apart.
func withoutParams(a result.Autotune) result.Autotune {
	a.Params, a.Check = nil, nil
	return a
}

// resources.gpu_type is checked against the GPU the runner finds: a job on
// the wrong machine stops before any work, as an infrastructure failure.
func TestGPUTypeOnFakeGPU(t *testing.T) {
	noGPU(t)
	t.Setenv("PATH", mustAbs(t, "testdata/fakegpu/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, tc := range []struct {
		typ  string
		want int
	}{{"a100", contract.ExitInfra}, {"h100", contract.ExitSucceeded}} {
		dir := copyFixture(t, "numpy-saxpy", func(s string) string {
			return strings.Replace(s, "benchmark:", "resources: {gpus: 1, gpu_type: "+tc.typ+"}\nbenchmark:", 1)
		})
		ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Mode: "gpu", Python: "/nonexistent/python3"})
		r := readResults(t, ro.out)
		if tc.want == contract.ExitInfra {
			if ro.code != contract.ExitInfra || !strings.Contains(r.Error, "asks for GPU type \"a100\" (resources.gpu_type) but GPU 0 here is NVIDIA H100 80GB HBM3") {
				t.Errorf("gpu_type %s: exit %d, error %q", tc.typ, ro.code, r.Error)
			}
			continue
		}
		// The right type gets past the check (and then fails on the missing Python).
		if strings.Contains(r.Error, "gpu_type") {
			t.Errorf("gpu_type %s: %q", tc.typ, r.Error)
		}
	}
}

// XRUN_PROFILE end to end on the fake GPU with a stand-in ncu: after the
// timed cases the chosen implementation runs once per chosen case under
// ncu, inside cudaProfilerStart/Stop and an NVTX range named after the
// case; the report and its details page land in OUT/profile and in
// results.json. Where ncu may not read the counters (ERR_NVGPUCTRPERM) the
// run says what to do about it, and still succeeds or fails on its own.
func TestProfileOnFakeGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	needTorch(t, py)
	t.Setenv("PATH", mustAbs(t, "testdata/fakegpu/bin")+string(os.PathListSeparator)+mustAbs(t, "testdata/fakencu")+
		string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PYTHONPATH", mustAbs(t, "../harness/testdata/fakecuda"))
	markers := filepath.Join(t.TempDir(), "markers")
	t.Setenv("FAKE_CUDA_PROFILER_LOG", markers)
	dir := copyFixture(t, "torch-mm", func(s string) string {
		return strings.Replace(s, "sweep: {n: [4096]}", "sweep: {n: [16, 32]}", 1)
	})

	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py, Profile: "ncu:impl=matmul,transposed;case=1"})
	if ro.err != nil {
		t.Fatal(ro.err)
	}
	r := readResults(t, ro.out)
	if len(r.Profiles) != 2 {
		t.Fatalf("profiles %+v", r.Profiles)
	}
	for i, name := range []string{"matmul", "transposed"} {
		p := r.Profiles[i]
		if p.Implementation != name || p.Status != result.ProfileOK || p.Error != "" || p.Kernels != 2 ||
			p.Report != "profile/"+name+".ncu-rep" || p.Summary != "profile/"+name+".txt" || !reflect.DeepEqual(p.Cases, []string{"n=32"}) {
			t.Errorf("profile %d: %+v", i, p)
		}
		for _, f := range []string{p.Report, p.Summary} {
			if _, err := os.Stat(filepath.Join(ro.out, f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	argv, _ := os.ReadFile(filepath.Join(ro.out, "profile", "matmul.ncu.log.argv"))
	if !strings.Contains(string(argv), "harness.py") {
		t.Errorf("ncu ran %q, not the harness", argv)
	}
	b, _ := os.ReadFile(markers)
	if got := strings.Count(string(b), "push xrun n=32\nstart\nstop\npop\n"); got != 2 || strings.Contains(string(b), "n=16") {
		t.Errorf("profiler markers (one profiled call per implementation, case n=32 only):\n%s", b)
	}

	// Not permitted: a failed profile with the fix, a warning, the same outcome.
	t.Setenv("FAKE_NCU_PERM", "1")
	ro2 := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py, Profile: "ncu:impl=matmul;case=0"})
	r2 := readResults(t, ro2.out)
	if len(r2.Profiles) != 1 || r2.Profiles[0].Status != result.ProfileFailed ||
		!strings.Contains(r2.Profiles[0].Error, "ERR_NVGPUCTRPERM") || !strings.Contains(r2.Profiles[0].Error, "NVreg_RestrictProfilingToAdminUsers=0") {
		t.Errorf("profiles %+v", r2.Profiles)
	}
	warned := false
	for _, w := range r2.Warnings {
		warned = warned || (w.Kind == "profile_failed" && w.Implementation == "matmul")
	}
	if !warned || ro2.code != ro.code || r2.Status != r.Status {
		t.Errorf("warnings %+v; exit %d and status %s, want %d and %s as without profiling", r2.Warnings, ro2.code, r2.Status, ro.code, r.Status)
	}

	// No ncu in the image: said before the first case, the run goes on.
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d != mustAbs(t, "testdata/fakencu") {
			path = append(path, d)
		}
	}
	t.Setenv("PATH", strings.Join(path, string(os.PathListSeparator)))
	ro4 := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py, Profile: "ncu:impl=matmul;case=0"})
	r4 := readResults(t, ro4.out)
	log, _ := os.ReadFile(filepath.Join(ro4.out, "runner.log"))
	early, firstCase := strings.Index(string(log), "Nsight Compute (ncu) is not on PATH"), strings.Index(string(log), " case ")
	if early < 0 || firstCase < 0 || early > firstCase || len(r4.Profiles) != 1 || r4.Profiles[0].Status != result.ProfileFailed || ro4.code != ro.code {
		t.Errorf("without ncu: exit %d, profiles %+v, log:\n%s", ro4.code, r4.Profiles, log)
	}

	// A request the run cannot honour stops it before anything is timed.
	ro3 := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py, Profile: "ncu:impl=matmull"})
	var se *SpecError
	if !errors.As(ro3.err, &se) || ro3.code != contract.ExitUsage || !strings.Contains(ro3.err.Error(), `no implementation "matmull"`) {
		t.Errorf("bad request: err %v exit %d", ro3.err, ro3.code)
	}
}

// A run whose final results.json cannot be written is not a success,
// whatever it measured: the exit code says infrastructure (4). Here the
// benchmark, trusted as it is outside a container, puts a directory where
// results.json goes once it is told to exit.
func TestFinalWriteFailureExitsInfra(t *testing.T) {
	noGPU(t)
	dir := copyFixture(t, "command", func(s string) string { return s })
	script, err := os.ReadFile(filepath.Join(dir, "bench.sh"))
	if err != nil {
		t.Fatal(err)
	}
	sabotage := strings.Replace(string(script), "*'\"op\":\"exit\"'*)\n\t\texit 0 ;;",
		"*'\"op\":\"exit\"'*)\n\t\trm -f \"$SABOTAGE_OUT/results.json\"; mkdir -p \"$SABOTAGE_OUT/results.json/x\"; exit 0 ;;", 1)
	if sabotage == string(script) {
		t.Fatal("the fixture's exit branch changed: update this test")
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.sh"), []byte(sabotage), 0o755); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	t.Setenv("SABOTAGE_OUT", out)
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, OutDir: out})
	if ro.code != contract.ExitInfra || !strings.Contains(fmt.Sprint(ro.err), "write the final results") {
		t.Errorf("exit %d, err %v; want %d and the failed write", ro.code, ro.err, contract.ExitInfra)
	}
}

func TestOwnCasesOfAPart(t *testing.T) {
	all := []spec.Params{{{Key: "T", Value: 1}}, {{Key: "T", Value: 2}}, {{Key: "T", Value: 3}}, {{Key: "T", Value: 4}}, {{Key: "T", Value: 5}}}
	for split, want := range map[string]string{"": "T=1 T=2 T=3 T=4 T=5", "1/2": "T=1 T=3 T=5", "2/2": "T=2 T=4", "3/3": "T=3", "1/1": "T=1 T=2 T=3 T=4 T=5"} {
		o, err := Options{Split: split}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		rn := &runner{o: o, log: io.Discard}
		var got []string
		for _, p := range rn.ownCases(all) {
			got = append(got, p.Label())
		}
		if strings.Join(got, " ") != want {
			t.Errorf("split %q runs %v, want %s", split, got, want)
		}
	}
	for _, bad := range []string{"0/2", "3/2", "2", "a/b", "1/0", "1/257"} {
		if _, err := (Options{Split: bad}).withDefaults(); err == nil || !strings.Contains(err.Error(), "XRUN_SPLIT") {
			t.Errorf("split %q: err = %v, want a refusal naming XRUN_SPLIT", bad, err)
		}
	}
}
