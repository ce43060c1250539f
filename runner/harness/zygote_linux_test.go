//go:build integration

package harness

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startZygote starts the harness's zygote over testdata, as the runner
// does, and a function that forks a worker from it.
func startZygote(t *testing.T) (*Zygote, func(name string) *Worker) {
	t.Helper()
	py := testPython(t)
	dir := t.TempDir()
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	td, _ := filepath.Abs("testdata")
	env := append(os.Environ(), "PYTHONPATH="+td, "PYTHONDONTWRITEBYTECODE=1")
	argv := []string{py, "-u", path}
	var log bytes.Buffer
	z, err := StartZygote(argv, td, env, nil, &log)
	if err != nil {
		t.Fatalf("%v\nzygote log:\n%s", err, log.String())
	}
	t.Cleanup(z.Close)
	if len(z.Loaded) == 0 || z.Loaded[0] != "numpy" {
		t.Errorf("the zygote loaded %v, want numpy first", z.Loaded)
	}
	fork := func(name string) *Worker {
		t.Helper()
		w, err := z.Start(Config{Name: name, Argv: argv, Dir: td, Env: env, LogPath: filepath.Join(dir, name+".log")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close(2 * time.Second) })
		return w
	}
	return z, fork
}

func TestZygoteForksWorkersThatTime(t *testing.T) {
	_, fork := startZygote(t)
	ws := make([]*Worker, 3)
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i := range ws {
		ws[i] = fork("w" + string(rune('a'+i)))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = ws[i].Init(ctxT(t, 60*time.Second), Init{Impl: "impl", Fn: "pkg.kernels:add", Reference: "pkg.kernels:add", Inputs: "pkg.kernels:make_inputs", Device: "cpu"})
		}(i)
	}
	wg.Wait()
	for i, w := range ws {
		if errs[i] != nil {
			t.Fatalf("init of worker %d: %v", i, errs[i])
		}
		pgid, err := syscall.Getpgid(w.pid)
		if err != nil || pgid != w.pid {
			t.Errorf("worker %d (pid %d) is in process group %d (%v), want its own", i, w.pid, pgid, err)
		}
		s, err := w.Time(ctxT(t, 30*time.Second), Time{Params: params, Seed: 1, MinSamples: 10, BudgetMS: 5, WarmupMS: 1})
		if err != nil || len(s.SamplesMS) < 10 {
			t.Fatalf("time in worker %d: %v (%+v)", i, err, s)
		}
	}
}

// A worker that crashes is reported as one started on its own is, with
// its output; the zygote and the other workers go on.
func TestZygoteWorkerCrashLeavesTheOthers(t *testing.T) {
	_, fork := startZygote(t)
	bad, good := fork("bad"), fork("good")
	initHarness(t, bad, "pkg.kernels:segfault", "")
	initHarness(t, good, "pkg.kernels:noisy_add", "")
	_, err := bad.Check(ctxT(t, 60*time.Second), Check{Params: params, Seeds: []int64{1}})
	var he *Error
	if !errors.As(err, &he) || he.Kind != KindCrash || !strings.Contains(he.Tail, "Segmentation fault") || !strings.Contains(he.Exit, "signal") {
		t.Fatalf("crash: %v (%+v)", err, he)
	}
	if _, err := good.Time(ctxT(t, 30*time.Second), Time{Params: params, Seed: 1, MinSamples: 3, BudgetMS: 1, WarmupMS: 1}); err != nil {
		t.Fatalf("the other worker: %v", err)
	}
	if tail, ok := waitTail(good, "progress: adding"); !ok {
		t.Errorf("the forked worker's output was not kept: %q", tail)
	}
	again := fork("again")
	initHarness(t, again, "pkg.kernels:add", "")
}

// A hung worker is killed with its process group by Close.
func TestZygoteWorkerHangIsKilled(t *testing.T) {
	_, fork := startZygote(t)
	w := fork("hang")
	initHarness(t, w, "pkg.kernels:hang", "")
	_, err := w.Time(ctxT(t, 2*time.Second), Time{Params: params, Seed: 1, MinSamples: 1, BudgetMS: 1})
	var he *Error
	if !errors.As(err, &he) || he.Kind != KindTimeout {
		t.Fatalf("hang: %v", err)
	}
	done := make(chan struct{})
	go func() { w.Close(time.Second); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a hung forked worker")
	}
	if err := syscall.Kill(w.pid, 0); err == nil {
		t.Errorf("worker %d still runs after Close", w.pid)
	}
}

// When the zygote dies its workers die with it, say so, and it forks no
// more: the runner then starts workers on its own.
func TestZygoteDeathEndsItsWorkers(t *testing.T) {
	z, fork := startZygote(t)
	w := fork("orphan")
	initHarness(t, w, "pkg.kernels:add", "")
	if err := z.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !w.Exited() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !w.Exited() {
		t.Fatal("a worker outlived its zygote")
	}
	_, err := z.Start(Config{Name: "late", LogPath: filepath.Join(t.TempDir(), "late.log")})
	if err == nil {
		t.Fatal("a dead zygote forked a worker")
	}
}

// A standby's zygote starts before the job: in /, without the
// experiment's PYTHONPATH. Its worker gets the job's directory and
// environment at the fork, and imports the experiment's code from them.
func TestZygoteStartedBeforeTheJob(t *testing.T) {
	py := testPython(t)
	dir := t.TempDir()
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{py, "-u", path}
	var log bytes.Buffer
	z, err := StartZygote(argv, "/", append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), nil, &log)
	if err != nil {
		t.Fatalf("%v\nzygote log:\n%s", err, log.String())
	}
	t.Cleanup(z.Close)
	td, _ := filepath.Abs("testdata")
	env := append(os.Environ(), "PYTHONPATH="+td, "PYTHONDONTWRITEBYTECODE=1")
	w, err := z.Start(Config{Name: "late", Argv: argv, Dir: td, Env: env, LogPath: filepath.Join(dir, "late.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(2 * time.Second) })
	if _, err := w.Init(ctxT(t, 60*time.Second), Init{Impl: "impl", Fn: "pkg.kernels:add", Reference: "pkg.kernels:add", Inputs: "pkg.kernels:make_inputs", Device: "cpu"}); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "late.log"))
		t.Fatalf("init of a worker forked with the job's PYTHONPATH: %v\nworker log:\n%s", err, b)
	}
}
