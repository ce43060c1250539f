//go:build integration

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/result"
)

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

// testPython finds an interpreter with numpy (XRUN_TEST_PYTHON overrides).
// Without one the test is skipped, or fails under CI.
func testPython(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		pythonPath, pythonErr = FindPython(context.Background(), os.Getenv("XRUN_TEST_PYTHON"), nil)
	})
	if pythonErr != nil {
		testenv.Missing(t, "find python: %v (apt-get install python3-numpy)", pythonErr)
	}
	return pythonPath
}

func startHarness(t *testing.T) *Worker {
	t.Helper()
	py := testPython(t)
	dir := t.TempDir()
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	td, _ := filepath.Abs("testdata")
	env := append(os.Environ(), "PYTHONPATH="+td, "PYTHONDONTWRITEBYTECODE=1")
	w, err := Start(Config{Name: "t", Argv: []string{py, "-u", path}, Dir: td, Env: env, LogPath: filepath.Join(dir, "worker.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(2 * time.Second) })
	return w
}

func initHarness(t *testing.T, w *Worker, fn string, implParams string) *Ready {
	t.Helper()
	c := Init{Impl: "impl", Fn: fn, Reference: "pkg.kernels:add", Inputs: "pkg.kernels:make_inputs", Device: "cpu",
		Models:  map[string]string{"flops": "pkg.kernels:flops", "bytes": "pkg.kernels:bytes_moved"},
		Metrics: "pkg.kernels:metrics"}
	if implParams != "" {
		c.ImplParams = json.RawMessage(implParams)
	}
	ready, err := w.Init(ctxT(t, 60*time.Second), c)
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	return ready
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var params = json.RawMessage(`{"n": 1000}`)

func TestHarnessReadyModelsTime(t *testing.T) {
	w := startHarness(t)
	ready := initHarness(t, w, "pkg.kernels:add_scaled", `{"scale": 1.0, "block": 10}`)
	if ready.Timer != "perf_counter" || ready.Device.Kind != "cpu" || ready.Python == "" || ready.Numpy == "" {
		t.Errorf("ready = %+v", ready)
	}
	m, err := w.Models(ctxT(t, 30*time.Second), params)
	if err != nil {
		t.Fatal(err)
	}
	if m.Flops != 1000 || m.Bytes != 12000 || m.Metrics["blocks"] != 100 {
		t.Errorf("models = %+v", m)
	}
	s, err := w.Time(ctxT(t, 30*time.Second), Time{Params: params, Seed: 1, MinSamples: 20, BudgetMS: 5, WarmupMS: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.SamplesMS) < 20 || s.WarmupCalls < 3 || s.Timer != "perf_counter" {
		t.Errorf("samples: %d, warm-up calls %d, timer %q", len(s.SamplesMS), s.WarmupCalls, s.Timer)
	}
	s, err = w.Time(ctxT(t, 30*time.Second), Time{Params: params, Seed: 1, MinSamples: 5, MaxSamples: 7, BudgetMS: 1e6, WarmupMS: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.SamplesMS) != 7 {
		t.Errorf("max_samples 7 gave %d samples", len(s.SamplesMS))
	}
}

func TestHarnessCheck(t *testing.T) {
	seeds := []int64{1, 2, 987654321}
	tests := []struct {
		fn       string
		tol      *result.Tolerance
		passed   bool
		modified bool
		replayed bool
		reason   string
	}{
		{fn: "pkg.kernels:add", passed: true},
		{fn: "pkg.kernels:noisy_add", passed: true},
		{fn: "pkg.kernels:wrong", reason: "elements outside atol=0.0001 rtol=0.0001"},
		{fn: "pkg.kernels:wrong", tol: &result.Tolerance{Atol: 100, Rtol: 0}, passed: true},
		{fn: "pkg.kernels:zero_inputs", modified: true, reason: "modified its inputs"},
		{fn: "pkg.kernels:replay", replayed: true, reason: "bitwise identical"},
		{fn: "pkg.kernels:wrong_shape", reason: "has shape [999]"},
		{fn: "pkg.kernels:wrong_dtype", reason: "has dtype int64"},
		{fn: "pkg.kernels:half_precision", passed: true},
		{fn: "pkg.kernels:nan_out", reason: "NaN positions differ"},
		{fn: "pkg.kernels:pair", reason: "returned 2 outputs, the reference 1"},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			w := startHarness(t)
			initHarness(t, w, tt.fn, "")
			c, err := w.Check(ctxT(t, 60*time.Second), Check{Params: params, Seeds: seeds, Tolerance: tt.tol})
			if err != nil {
				t.Fatal(err)
			}
			if c.Passed != tt.passed || c.InputsModified != tt.modified || c.Replayed != tt.replayed {
				t.Errorf("passed=%v modified=%v replayed=%v, want %v %v %v (reason %q)", c.Passed, c.InputsModified, c.Replayed, tt.passed, tt.modified, tt.replayed, c.Reason)
			}
			if !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", c.Reason, tt.reason)
			}
			if c.Trials != 3 || len(c.Seeds) != 3 || c.Dtype != "float32" {
				t.Errorf("trials %d seeds %v dtype %q", c.Trials, c.Seeds, c.Dtype)
			}
			if tt.passed && c.MismatchFraction != 0 || !tt.passed && tt.reason == "elements outside atol=0.0001 rtol=0.0001" && c.MismatchFraction < 0.9 {
				t.Errorf("mismatch fraction %g", c.MismatchFraction)
			}
		})
	}
}

func TestHarnessErrors(t *testing.T) {
	tests := []struct {
		fn    string
		op    string
		kind  string
		where string
		msg   string
		tail  string
	}{
		{fn: "pkg.kernels:raises", op: OpCheck, kind: KindException, where: "fn", msg: "ValueError: this kernel is broken"},
		{fn: "pkg.kernels:segfault", op: OpCheck, kind: KindCrash, msg: "died during check", tail: "Fatal Python error: Segmentation fault"},
		{fn: "pkg.kernels:hang", op: OpTime, kind: KindTimeout, msg: "no answer to time"},
		{fn: "pkg.missing:fn", op: OpInit, kind: KindImport, where: "fn", msg: "No module named 'pkg.missing'"},
		{fn: "pkg.kernels:nope", op: OpInit, kind: KindImport, where: "fn", msg: "has no attribute 'nope'"},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			w := startHarness(t)
			var err error
			if tt.op == OpInit {
				_, err = w.Init(ctxT(t, 60*time.Second), Init{Impl: "x", Fn: tt.fn, Device: "cpu"})
			} else {
				initHarness(t, w, tt.fn, "")
				if tt.op == OpCheck {
					_, err = w.Check(ctxT(t, 60*time.Second), Check{Params: params, Seeds: []int64{1}})
				} else {
					_, err = w.Time(ctxT(t, 2*time.Second), Time{Params: params, Seed: 1, MinSamples: 1, BudgetMS: 1})
				}
			}
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if he.Kind != tt.kind || (tt.where != "" && he.Where != tt.where) || !strings.Contains(he.Message, tt.msg) || !strings.Contains(he.Tail, tt.tail) {
				t.Errorf("got kind=%q where=%q msg=%q tail=%q; want %q %q %q %q", he.Kind, he.Where, he.Message, he.Tail, tt.kind, tt.where, tt.msg, tt.tail)
			}
			if tt.kind == KindException && !strings.Contains(he.Traceback, "raise ValueError") {
				t.Errorf("traceback %q", he.Traceback)
			}
		})
	}
}

func TestHarnessSurvivesException(t *testing.T) {
	w := startHarness(t)
	initHarness(t, w, "pkg.kernels:raises", "")
	if _, err := w.Check(ctxT(t, 30*time.Second), Check{Params: params, Seeds: []int64{1}}); err == nil {
		t.Fatal("check of a raising kernel succeeded")
	}
	if _, err := w.Models(ctxT(t, 30*time.Second), params); err != nil {
		t.Fatalf("the worker did not survive an exception: %v", err)
	}
}

func TestHarnessStdoutIsLogged(t *testing.T) {
	w := startHarness(t)
	initHarness(t, w, "pkg.kernels:noisy_add", "")
	if _, err := w.Time(ctxT(t, 30*time.Second), Time{Params: params, Seed: 1, MinSamples: 3, BudgetMS: 1, WarmupMS: 1}); err != nil {
		t.Fatal(err)
	}
	if tail, ok := waitTail(w, "progress: adding", "to stderr"); !ok {
		t.Errorf("tail %q lacks the kernel's output", tail)
	}
}

// A command benchmark speaks the protocol without Python: this one is sh.
func TestCommandBenchmark(t *testing.T) {
	dir := t.TempDir()
	w, err := Start(Config{Name: "cmd", Argv: []string{"sh", filepath.Join(mustAbs(t, "testdata"), "bench.sh")}, Dir: dir, LogPath: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(2 * time.Second)
	ctx := ctxT(t, 10*time.Second)
	ready, err := w.Init(ctx, Init{Impl: "cmd", Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if ready.Timer != "perf_counter" || ready.Device.Name != "sh" {
		t.Errorf("ready %+v", ready)
	}
	m, err := w.Models(ctx, params)
	if err != nil || m.Flops != 2e9 {
		t.Fatalf("models %+v, %v", m, err)
	}
	c, err := w.Check(ctx, Check{Params: params, Seeds: []int64{1, 2, 3}})
	if err != nil || !c.Passed || c.Trials != 3 {
		t.Fatalf("check %+v, %v", c, err)
	}
	s, err := w.Time(ctx, Time{Params: params, MinSamples: 3, BudgetMS: 1})
	if err != nil || len(s.SamplesMS) != 3 || s.SamplesMS[1] != 1.25 {
		t.Fatalf("time %+v, %v", s, err)
	}
	if tail, ok := waitTail(w, "bench: got init"); !ok {
		t.Errorf("the command's stderr is not in the tail: %q", tail)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestHarnessDefaultTolerance(t *testing.T) {
	tests := []struct {
		dtype  string
		tol    float64
		passed bool
	}{
		{"float16", 1e-2, true},
		{"float32", 1e-4, false},
		{"float64", 1e-7, false},
		{"int32", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.dtype, func(t *testing.T) {
			w := startHarness(t)
			if _, err := w.Init(ctxT(t, 60*time.Second), Init{Impl: "x", Fn: "pkg.kernels:add_nudged", Reference: "pkg.kernels:add",
				Inputs: "pkg.kernels:make_typed", Device: "cpu"}); err != nil {
				t.Fatal(err)
			}
			p := json.RawMessage(`{"dtype":"` + tt.dtype + `"}`)
			c, err := w.Check(ctxT(t, 60*time.Second), Check{Params: p, Seeds: []int64{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			if c.Dtype != tt.dtype || c.Tolerance.Atol != tt.tol || c.Tolerance.Rtol != tt.tol || c.Passed != tt.passed {
				t.Errorf("dtype %q tolerance %+v passed %v (%s); want %s %g %v", c.Dtype, c.Tolerance, c.Passed, c.Reason, tt.dtype, tt.tol, tt.passed)
			}
		})
	}
}

func TestTailWriter(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	tw := newTailWriter(f)
	var all strings.Builder
	for i := 0; i < 500; i++ {
		line := strings.Repeat("x", i%50) + " line " + string(rune('a'+i%26)) + "\n"
		all.WriteString(line)
		if _, err := tw.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	tail := tw.Tail()
	if len(tail) > TailBytes || len(tail) < TailBytes-200 {
		t.Errorf("tail is %d bytes, want just under %d", len(tail), TailBytes)
	}
	if !strings.HasSuffix(all.String(), tail) || !strings.HasSuffix(tail, "\n") {
		t.Error("the tail is not the end of the output")
	}
	if i := strings.Index(all.String(), tail); i > 0 && all.String()[i-1] != '\n' {
		t.Error("the tail does not start at a line")
	}
	tw.Close()
	if _, err := tw.Write([]byte("after close\n")); err != nil {
		t.Error(err)
	}
	if b, _ := os.ReadFile(f.Name()); int64(len(b)) != int64(all.Len()) {
		t.Errorf("the log has %d bytes, want %d", len(b), all.Len())
	}
}

func TestWorkerLogIsCapped(t *testing.T) {
	line := func(i int) string { return fmt.Sprintf("line %08d\n", i) } // 14 bytes
	tests := []struct {
		name    string
		lines   int
		chunk   int // lines per write
		dropped bool
	}{
		{"under the head", 1000, 7, false},
		{"head and part of the tail", (LogHeadBytes + LogTailBytes/2) / 14, 100, false},
		{"over head and tail, small writes", 3 * (LogHeadBytes + LogTailBytes) / 14, 3, true},
		{"over head and tail, writes larger than the tail", 3 * (LogHeadBytes + LogTailBytes) / 14, LogTailBytes/14 + 5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			tw := newTailWriter(f)
			var all, chunk strings.Builder
			for i := 0; i < tc.lines; i++ {
				chunk.WriteString(line(i))
				if (i+1)%tc.chunk == 0 || i == tc.lines-1 {
					all.WriteString(chunk.String())
					tw.Write([]byte(chunk.String()))
					chunk.Reset()
				}
			}
			tw.Close()
			b, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			got, want := string(b), all.String()
			if !tc.dropped {
				if got != want {
					t.Errorf("log of %d bytes is %d bytes, want all of it", len(want), len(got))
				}
				return
			}
			head, rest, ok := strings.Cut(got, "\n[xrun: ")
			marker, kept, ok2 := strings.Cut(rest, "]\n")
			if !ok || !ok2 {
				t.Fatalf("no drop marker in a log of %d bytes", len(got))
			}
			if head != want[:LogHeadBytes] {
				t.Errorf("the log does not start with the first %d bytes of the output", LogHeadBytes)
			}
			if !strings.HasSuffix(want, kept) || len(kept) > LogTailBytes || len(kept) < LogTailBytes-14 || !strings.HasPrefix(kept, "line ") {
				t.Errorf("the log does not end with the output's last lines (%d bytes kept)", len(kept))
			}
			dropped := len(want) - len(head) - len(kept)
			if wantMarker := fmt.Sprintf("%d bytes of output dropped here; a worker's log keeps its first %d and last %d bytes", dropped, LogHeadBytes, LogTailBytes); marker != wantMarker {
				t.Errorf("marker %q, want %q", marker, wantMarker)
			}
			if tail := tw.Tail(); !strings.HasSuffix(want, tail) || len(tail) < TailBytes-200 {
				t.Errorf("the error tail is not the end of the output")
			}
		})
	}
}

// A worker printing in a loop leaves a bounded log, its last line in it.
func TestWorkerLogCapOfAProcess(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	w, err := Start(Config{Name: "loud", Argv: []string{"sh", "-c", "yes 'kernel output' | head -n 4000000; echo last line >&2"}, Dir: dir, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	w.Close(30 * time.Second)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > LogHeadBytes+LogTailBytes+200 {
		t.Errorf("log is %d bytes, want at most %d", len(b), LogHeadBytes+LogTailBytes+200)
	}
	if !strings.HasSuffix(string(b), "kernel output\nlast line\n") || !strings.Contains(string(b), " bytes of output dropped here") {
		t.Errorf("log does not say what was dropped, or lacks its end: ...%q", b[max(len(b)-100, 0):])
	}
}

// startFakeCUDA starts a harness on CPU torch dressed up as CUDA torch
// (testdata/fakecuda) with env added, and initialises it for a matmul.
func startFakeCUDA(t *testing.T, env ...string) *Worker {
	t.Helper()
	py := testPython(t)
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		testenv.Missing(t, "%s cannot import torch: %v (apt-get install python3-torch)", py, err)
	}
	dir := t.TempDir()
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	td := mustAbs(t, "testdata")
	env = append(append(os.Environ(), "PYTHONPATH="+filepath.Join(td, "fakecuda")+":"+td, "PYTHONDONTWRITEBYTECODE=1"), env...)
	w, err := Start(Config{Name: "fake", Argv: []string{py, "-u", path}, Dir: td, Env: env, LogPath: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(2 * time.Second) })
	ready, err := w.Init(ctxT(t, 60*time.Second), Init{Impl: "mm", Fn: "pkg.tkernels:matmul", Reference: "pkg.tkernels:matmul",
		Inputs: "pkg.tkernels:make_inputs", Models: map[string]string{"flops": "pkg.tkernels:flops"}, Device: "cuda", Flush: true, FlushBytes: 1 << 20})
	if err != nil {
		t.Fatalf("init: %v\n%s", err, w.Tail())
	}
	want := Device{Kind: "cuda", Name: "Fake GPU", ComputeCapability: "9.0", SMCount: 132, L2Bytes: 50 << 20, MemoryBytes: 80 << 30, UUID: "GPU-00000000-fake"}
	if ready.Device != want || ready.Timer != "cuda_events" || ready.FlushBytes != 1<<20 || ready.CUDA != "12.4" || ready.TimerFloorMS <= 0 {
		t.Errorf("ready %+v", ready)
	}
	return w
}

var fakeParams = json.RawMessage(`{"n": 32}`)

// The GPU code path (CUDA events, L2 flush, hold kernel through the
// driver, poisoning) runs here on CPU torch dressed up as CUDA torch,
// which catches errors in it; what it measures is the host.
func TestHarnessGPUPathOnFakeCUDA(t *testing.T) {
	w := startFakeCUDA(t, "FAKE_CUDA_DRIVER=1")
	c, err := w.Check(ctxT(t, 60*time.Second), Check{Params: fakeParams, Seeds: []int64{1, 2, 3}})
	if err != nil || !c.Passed {
		t.Fatalf("check %+v, %v", c, err)
	}
	s, err := w.Time(ctxT(t, 60*time.Second), Time{Params: fakeParams, Seed: 1, MinSamples: 10, BudgetMS: 5, WarmupMS: 5, Flush: true, RestRatio: 0.5})
	if err != nil {
		t.Fatalf("time: %v", err)
	}
	if s.Timer != "cuda_events" || len(s.SamplesMS) < 10 || s.WarmupCalls < 3 || s.Cover != "hold" || s.CoverNote != "" || s.Discarded != 0 || s.SpinMS != 0 {
		t.Errorf("samples %+v", s)
	}
	for _, v := range s.SamplesMS {
		if v <= 0 {
			t.Fatalf("sample %g ms", v)
		}
	}
}

// A call that waits for the GPU makes the hold time out (the start event
// has passed before the release): such samples are discarded, and after
// three the worker stops holding the GPU back and says why; nothing is
// discarded after that (an early start is then the call's own doing).
func TestHoldTimeoutsUncover(t *testing.T) {
	w := startFakeCUDA(t, "FAKE_CUDA_DRIVER=1", "FAKE_CUDA_EARLY_STARTS=3", "FAKE_CUDA_EARLY_EVERY=2")
	s, err := w.Time(ctxT(t, 60*time.Second), Time{Params: fakeParams, Seed: 1, MinSamples: 20, MaxSamples: 20, BudgetMS: 5, WarmupMS: 5, Flush: true})
	if err != nil {
		t.Fatalf("time: %v", err)
	}
	if len(s.SamplesMS) != 20 || s.Discarded != 3 || s.Cover != "none" || !strings.Contains(s.CoverNote, "timed out") || s.SpinMS != 0 {
		t.Errorf("samples %+v", s)
	}
	s, err = w.Time(ctxT(t, 60*time.Second), Time{Params: fakeParams, Seed: 1, MinSamples: 5, MaxSamples: 5, BudgetMS: 5, WarmupMS: 5, Flush: true, RestRatio: 0.5})
	if err != nil || s.Cover != "none" || s.Discarded != 0 || len(s.SamplesMS) != 5 {
		t.Errorf("second batch %+v, %v", s, err)
	}
}

// Without a CUDA driver to load the hold kernel, the spin kernel holds the
// GPU back. Early starts that are systematic (5% or more of 100 samples)
// double it, and the batch's samples so far are discarded with them; a
// host that stalls now and then only costs the samples it spoiled.
func TestSpinGrowsOnlyOnSystematicEarlyStarts(t *testing.T) {
	w := startFakeCUDA(t, "FAKE_CUDA_EARLY_STARTS=10", "FAKE_CUDA_EARLY_EVERY=150")
	s, err := w.Time(ctxT(t, 60*time.Second), Time{Params: fakeParams, Seed: 1, MinSamples: 150, MaxSamples: 150, BudgetMS: 1e6, WarmupMS: 5, Flush: true})
	if err != nil {
		t.Fatalf("time: %v", err)
	}
	// The first 10 samples start early, then one in 150: at that one, 11 of
	// 161 samples (6.8%) started early, so the spin doubles from at least
	// its 50 us floor and the 150 good samples taken behind the short spin
	// go too; 150 more are taken behind the longer one.
	if s.Cover != "spin" || !strings.Contains(s.CoverNote, "hold kernel unavailable") || len(s.SamplesMS) != 150 || s.Discarded != 161 || s.SpinMS < 0.099 {
		t.Errorf("cover %q (%s), %d samples, %d discarded, spin %g ms; want spin, 150, 161, >= 0.1 ms", s.Cover, s.CoverNote, len(s.SamplesMS), s.Discarded, s.SpinMS)
	}
	spin := s.SpinMS
	s, err = w.Time(ctxT(t, 60*time.Second), Time{Params: fakeParams, Seed: 1, MinSamples: 600, MaxSamples: 600, BudgetMS: 1, WallMS: 1, WarmupMS: 5, Flush: true, RestRatio: 0.5})
	if err != nil || len(s.SamplesMS) != 600 || s.Discarded < 3 || s.Discarded > 5 || s.SpinMS != spin {
		t.Errorf("second batch: %d samples, %d discarded, spin %g ms (was %g): %v", len(s.SamplesMS), s.Discarded, s.SpinMS, spin, err)
	}
}

// waitTail waits up to 5 s for the worker's tail to hold every one of subs:
// stdout and stderr travel on their own pipes, so a worker's output may
// reach the tail a moment after its answer.
func waitTail(w *Worker, subs ...string) (string, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		tail := w.Tail()
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(tail, s)
		}
		if ok || time.Now().After(deadline) {
			return tail, ok
		}
		time.Sleep(10 * time.Millisecond)
	}
}
