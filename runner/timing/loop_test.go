package timing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

// fakeClock is the loop's wall clock; samplers move it.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// fakeSampler answers every batch with next(cmd), after moving the clock
// by took. Its calls go to a log shared by the implementations of a test.
type fakeSampler struct {
	name  string
	next  func(n int, cmd harness.Time) (*harness.Samples, error)
	took  time.Duration
	clock *fakeClock
	calls *[]string
	cmds  []harness.Time
}

func (s *fakeSampler) Time(ctx context.Context, cmd harness.Time) (*harness.Samples, error) {
	s.cmds = append(s.cmds, cmd)
	*s.calls = append(*s.calls, s.name)
	if s.clock != nil {
		s.clock.t = s.clock.t.Add(s.took)
	}
	return s.next(len(s.cmds), cmd)
}

// fakeRecorder keeps what the loop records.
type fakeRecorder struct {
	timed  map[string][]result.Timing
	failed map[string]error
	rounds int
}

func newRecorder() *fakeRecorder {
	return &fakeRecorder{timed: map[string][]result.Timing{}, failed: map[string]error{}}
}

func (r *fakeRecorder) Timed(name string, from, to time.Time, t *result.Timing) {
	if to.Before(from) {
		panic("a window that ends before it starts")
	}
	r.timed[name] = append(r.timed[name], *t)
}
func (r *fakeRecorder) Failed(name string, err error) { r.failed[name] = err }
func (r *fakeRecorder) Round()                        { r.rounds++ }

// last is name's latest timing.
func (r *fakeRecorder) last(t *testing.T, name string) result.Timing {
	t.Helper()
	ts := r.timed[name]
	if len(ts) == 0 {
		t.Fatalf("%s was never timed", name)
	}
	return ts[len(ts)-1]
}

// cpuBatch is a CPU worker's answer: the samples, as many as asked for
// at most, repeated from vals.
func cpuBatch(vals ...float64) func(int, harness.Time) (*harness.Samples, error) {
	return func(_ int, cmd harness.Time) (*harness.Samples, error) {
		n := len(vals)
		if cmd.MaxSamples > 0 {
			n = min(n, cmd.MaxSamples)
		}
		return &harness.Samples{SamplesMS: append([]float64(nil), vals[:n]...), Timer: "perf_counter", SamplingMS: 100}, nil
	}
}

// gpuBatch is a GPU worker's answer behind the hold kernel, with CUPTI's
// spans beside the events.
func gpuBatch(events, kernel []float64, gaps ...float64) func(int, harness.Time) (*harness.Samples, error) {
	return func(int, harness.Time) (*harness.Samples, error) {
		return &harness.Samples{SamplesMS: events, KernelMS: kernel, BusyMS: kernel, Kernels: 2, Cover: "hold",
			Timer: "cuda_events", SamplingMS: 100, LaunchGapsMS: gaps}, nil
	}
}

// noisy alternates between two far-apart values: it never converges.
var noisy = []float64{1, 50, 1, 50}

// rule converges on the third round of steady samples.
var rule = analyze.StoppingRule{MinSamples: 2, MinTimeS: 0.1, TargetRSE: 0.01, MaxTimeS: 10, MaxSamples: 100000}

type harnessT struct {
	clock *fakeClock
	calls []string
	fakes map[string]*fakeSampler
	logs  []string
}

// setup returns a loop with c's settings (rule and 3 rounds unless set)
// and the implementations of fakes, in that order.
func setup(c Config, fakes ...*fakeSampler) (*harnessT, *Loop, []Impl) {
	h := &harnessT{clock: &fakeClock{t: time.Unix(1e9, 0)}, fakes: map[string]*fakeSampler{}}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.Rule == (analyze.StoppingRule{}) {
		c.Rule = rule
	}
	c.Now = h.clock.now
	c.Logf = func(f string, args ...any) { h.logs = append(h.logs, fmt.Sprintf(f, args...)) }
	var impls []Impl
	for _, f := range fakes {
		f.calls, f.clock = &h.calls, h.clock
		if f.took == 0 {
			f.took = 200 * time.Millisecond
		}
		h.fakes[f.name] = f
		f := f
		impls = append(impls, Impl{Name: f.name, Reference: f.name == "reference",
			Open: func(context.Context) (Sampler, error) { return f, nil }})
	}
	return h, New(c), impls
}

// The reference goes first in every round, the baseline second, the
// others in their order; an implementation that met the rule drops out
// of the later rounds.
func TestRoundOrder(t *testing.T) {
	h, l, impls := setup(Config{},
		&fakeSampler{name: "slow", next: cpuBatch(noisy...)},
		&fakeSampler{name: "base", next: cpuBatch(2, 2, 2)},
		&fakeSampler{name: "reference", next: cpuBatch(3, 3, 3)},
		&fakeSampler{name: "fast", next: cpuBatch(1, 1, 1)},
	)
	rec := newRecorder()
	l.c.Rule.MaxTimeS = 0.5 // the noisy one gives up at 0.5 s of samples
	if err := l.Case(context.Background(), Case{Baseline: "base"}, impls, rec); err != nil {
		t.Fatal(err)
	}
	round := []string{"reference", "base", "slow", "fast"}
	want := append(append(append([]string{}, round...), round...), round...)
	for len(want) < len(h.calls) {
		want = append(want, "slow")
	}
	if strings.Join(h.calls, " ") != strings.Join(want, " ") {
		t.Errorf("calls\n%v\nwant\n%v", h.calls, want)
	}
	if got := rec.last(t, "slow"); got.StopReason != analyze.ReasonMaxTime || got.Rounds != len(h.fakes["slow"].cmds) || got.Rounds < 5 {
		t.Errorf("slow: %+v", got)
	}
	for _, name := range []string{"reference", "base", "fast"} {
		if got := rec.last(t, name); got.StopReason != analyze.ReasonConverged || !got.Converged || got.Rounds != 3 {
			t.Errorf("%s: %+v", name, got)
		}
	}
	if rec.rounds != len(h.fakes["slow"].cmds) {
		t.Errorf("%d rounds recorded, want one a round (%d)", rec.rounds, len(h.fakes["slow"].cmds))
	}
	if len(h.logs) == 0 || h.logs[0] != "timing: first batch (reference)" {
		t.Errorf("logs %q", h.logs)
	}
	// The first batch line is the run's, not the case's.
	if err := l.Case(context.Background(), Case{Baseline: "base"}, impls[3:], newRecorder()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(h.logs, "\n"), "first batch"); n != 1 {
		t.Errorf("%d first-batch lines", n)
	}
}

// The stopping rule: converged, a cap on samples, on measured time, and
// on wall time (flushes, syncs and warm-ups too), none before the
// minimum rounds.
func TestStoppingRule(t *testing.T) {
	tests := []struct {
		name    string
		rule    analyze.StoppingRule
		samples []float64
		took    time.Duration
		reason  string
		conv    bool
		rounds  int
		n       int
	}{
		{name: "converged", samples: []float64{1, 1, 1}, reason: analyze.ReasonConverged, conv: true, rounds: 3, n: 9},
		{name: "converged after the minimum time", rule: analyze.StoppingRule{MinSamples: 2, MinTimeS: 0.5, TargetRSE: 0.01, MaxTimeS: 10, MaxSamples: 1000},
			samples: []float64{1, 1, 1}, reason: analyze.ReasonConverged, conv: true, rounds: 5, n: 15},
		{name: "max samples split over the rounds", rule: analyze.StoppingRule{MinSamples: 2, TargetRSE: 0.01, MaxTimeS: 10, MaxSamples: 12},
			samples: noisy, reason: analyze.ReasonMaxSamples, rounds: 3, n: 12},
		{name: "max samples after the rounds", rule: analyze.StoppingRule{MinSamples: 2, TargetRSE: 0.01, MaxTimeS: 10, MaxSamples: 14},
			samples: noisy, reason: analyze.ReasonMaxSamples, rounds: 4, n: 14},
		{name: "max time", rule: analyze.StoppingRule{MinSamples: 2, TargetRSE: 0.01, MaxTimeS: 0.3, MaxSamples: 1000},
			samples: noisy, reason: analyze.ReasonMaxTime, rounds: 3, n: 12},
		{name: "max wall time", rule: analyze.StoppingRule{MinSamples: 2, TargetRSE: 0.01, MaxTimeS: 10, MaxSamples: 100000},
			samples: noisy, took: 7 * time.Second, reason: ReasonMaxWallTime, rounds: 5, n: 20},
		{name: "the wall cap waits for the minimum rounds", rule: analyze.StoppingRule{MinSamples: 2, TargetRSE: 0.01, MaxTimeS: 1, MaxSamples: 100000},
			samples: noisy, took: time.Minute, reason: ReasonMaxWallTime, rounds: 3, n: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSampler{name: "a", next: cpuBatch(tt.samples...), took: tt.took}
			_, l, impls := setup(Config{Rule: tt.rule, CPU: true}, f)
			rec := newRecorder()
			if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
				t.Fatal(err)
			}
			ts := rec.timed["a"]
			got := ts[len(ts)-1]
			if got.StopReason != tt.reason || got.Converged != tt.conv || got.Rounds != tt.rounds || got.Samples != tt.n {
				t.Errorf("stopped %s (converged %v) after %d rounds and %d samples; want %s (%v), %d, %d",
					got.StopReason, got.Converged, got.Rounds, got.Samples, tt.reason, tt.conv, tt.rounds, tt.n)
			}
			for _, early := range ts[:len(ts)-1] {
				if early.StopReason != result.StopInProgress {
					t.Errorf("an earlier batch's timing says %s", early.StopReason)
				}
			}
			if got.Clock != result.ClockPerfCounter {
				t.Errorf("clock %s", got.Clock)
			}
		})
	}
}

// What each batch asks for: the case, a share of the sample cap and of
// the minimum time, a full warm-up first and a short one after, and the
// method's flush, rest and kernel-clock limit.
func TestBatchCommands(t *testing.T) {
	f := &fakeSampler{name: "a", next: cpuBatch(1, 1, 1)}
	r := analyze.StoppingRule{MinSamples: 10, MinTimeS: 0.6, TargetRSE: 0.01, MaxTimeS: 10, MaxSamples: 100}
	_, l, impls := setup(Config{Rule: r, WarmupMS: 100, Flush: true, RestRatio: 0.5, KernelClockMaxMS: 50}, f)
	c := Case{Params: []byte(`{"n":8}`), Seed: 7}
	if err := l.Case(context.Background(), c, impls, newRecorder()); err != nil {
		t.Fatal(err)
	}
	budget := r.MinTimeS / 3 * 1e3 // a third of the minimum time (0.2 s) a batch
	// 0.6 s of sampling at 0.1 s a batch: six batches.
	if len(f.cmds) != 6 {
		t.Fatalf("%d batches", len(f.cmds))
	}
	for i, cmd := range f.cmds {
		warmup, maxN := 100.0, 34 // a third of the cap in each of the 3 rounds
		if i > 0 {
			warmup = 20
		}
		if i >= 3 {
			maxN = 100 - 3*i // then what is left
		}
		want := harness.Time{Params: c.Params, Seed: 7, MinSamples: 4, MaxSamples: maxN, BudgetMS: budget, WallMS: budget,
			WarmupMS: warmup, Flush: true, RestRatio: 0.5, KernelClockMaxMS: 50}
		if fmt.Sprint(cmd) != fmt.Sprint(want) {
			t.Errorf("batch %d: %+v\nwant %+v", i, cmd, want)
		}
	}
}

// Only the first batch of a case warms up in full, whichever
// implementation it is: the next implementation's first batch follows the
// GPU's work on the one before, as later rounds do. A new case starts with
// a full warm-up again.
func TestWarmupFirstBatchOfCase(t *testing.T) {
	a := &fakeSampler{name: "a", next: cpuBatch(1, 1, 1)}
	b := &fakeSampler{name: "b", next: cpuBatch(1, 1, 1)}
	_, l, impls := setup(Config{WarmupMS: 100}, a, b)
	for range 2 {
		if err := l.Case(context.Background(), Case{}, impls, newRecorder()); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]float64{"a": {100, 20, 20, 100, 20, 20}, "b": {20, 20, 20, 20, 20, 20}}
	for _, f := range []*fakeSampler{a, b} {
		var got []float64
		for _, cmd := range f.cmds {
			got = append(got, cmd.WarmupMS)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[f.name]) {
			t.Errorf("%s warmed up for %v ms, want %v", f.name, got, want[f.name])
		}
	}
}

// A case's first batch that fails leaves the GPU as the checks did: the
// next batch warms up in full.
func TestWarmupAfterFailedFirstBatch(t *testing.T) {
	a := &fakeSampler{name: "a", next: func(int, harness.Time) (*harness.Samples, error) { return nil, errors.New("crashed") }}
	b := &fakeSampler{name: "b", next: cpuBatch(1, 1, 1)}
	_, l, impls := setup(Config{WarmupMS: 100}, a, b)
	if err := l.Case(context.Background(), Case{}, impls, newRecorder()); err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, cmd := range b.cmds {
		got = append(got, cmd.WarmupMS)
	}
	if fmt.Sprint(got) != fmt.Sprint([]float64{100, 20, 20}) {
		t.Errorf("b warmed up for %v ms after a's failed batch, want [100 20 20]", got)
	}
}

// Samples the worker discarded are counted over the batches, and said,
// with where the wall time went.
func TestDiscardedSamples(t *testing.T) {
	f := &fakeSampler{name: "a", next: func(int, harness.Time) (*harness.Samples, error) {
		return &harness.Samples{SamplesMS: []float64{1, 1}, KernelMS: []float64{0.5, 0.5}, BusyMS: []float64{0.5, 0.5},
			Cover: "spin", SpinMS: 0.05, Discarded: 2, SamplingMS: 100, WarmupMS: 20}, nil
	}}
	h, l, impls := setup(Config{}, f)
	rec := newRecorder()
	if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
		t.Fatal(err)
	}
	got := rec.last(t, "a")
	if got.Discarded != 6 || got.Cover != "spin" || got.Clock != result.ClockEvents {
		t.Errorf("timing %+v", got)
	}
	log := strings.Join(h.logs, "\n")
	for _, want := range []string{"a: median 1 ms over 6 samples in 3 rounds (converged)", "timed behind a 0.05 ms spin kernel",
		"6 samples discarded", "0.60 s of wall time: 0.30 s sampling, 0.06 s warm-up, 0.24 s the rest"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// The headline is the kernel clock (CUPTI's span plus the launch cost)
// where every batch has it behind the hold kernel; the stopping rule
// reads the headline. The launch cost is the first worker's until the
// batches measured enough gaps of their own.
func TestKernelClockHeadline(t *testing.T) {
	gaps := make([]float64, 8)
	for i := range gaps {
		gaps[i] = 0.002
	}
	tests := []struct {
		name     string
		next     func(int, harness.Time) (*harness.Samples, error)
		clock    string
		median   float64
		reason   string
		note     string
		kernelOK bool
	}{
		{name: "kernel clock, first worker's launch", next: gpuBatch([]float64{0.01, 0.02, 0.01, 0.02}, []float64{0.005, 0.005, 0.005, 0.005}),
			clock: result.ClockKernel, median: 0.005 + 0.001, reason: analyze.ReasonConverged, kernelOK: true},
		{name: "kernel clock, measured launch", next: gpuBatch([]float64{0.01, 0.01}, []float64{0.005, 0.005}, gaps...),
			clock: result.ClockKernel, median: 0.005 + 0.002, reason: analyze.ReasonConverged, kernelOK: true},
		{name: "one batch without CUPTI", next: func(n int, cmd harness.Time) (*harness.Samples, error) {
			sm, _ := gpuBatch([]float64{0.01, 0.02, 0.01, 0.02}, []float64{0.005, 0.005, 0.005, 0.005})(n, cmd)
			if n == 2 {
				sm.KernelMS, sm.BusyMS, sm.KernelNote = nil, nil, "the call kept the GPU 50 ms or more"
			}
			return sm, nil
		}, clock: result.ClockEvents, median: 0.015, reason: analyze.ReasonMaxTime, note: "50 ms or more"},
		{name: "not held back", next: func(n int, cmd harness.Time) (*harness.Samples, error) {
			sm, _ := gpuBatch([]float64{0.01, 0.01}, []float64{0.005, 0.005})(n, cmd)
			sm.Cover, sm.CoverNote = "none", "the call waits for the GPU"
			return sm, nil
		}, clock: result.ClockEvents, median: 0.01, reason: analyze.ReasonConverged, note: "cover none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSampler{name: "a", next: tt.next}
			r := rule
			r.MaxTimeS = 1e-7 // the events alone never converge: they give up at once
			_, l, impls := setup(Config{Rule: r, FirstLaunchMS: func() float64 { return 0.001 }}, f)
			rec := newRecorder()
			if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
				t.Fatal(err)
			}
			got := rec.last(t, "a")
			if got.Clock != tt.clock || !near(got.MedianMS, tt.median) || got.StopReason != tt.reason || !strings.Contains(got.ClockNote, tt.note) {
				t.Errorf("clock %s median %v stop %s note %q; want %s %v %s %q", got.Clock, got.MedianMS, got.StopReason, got.ClockNote,
					tt.clock, tt.median, tt.reason, tt.note)
			}
			if (got.Kernel != nil) != tt.kernelOK || (got.Events != nil) != tt.kernelOK {
				t.Fatalf("kernel %+v events %+v", got.Kernel, got.Events)
			}
			if tt.kernelOK && (!near(got.Kernel.MedianMS, 0.005) || !near(got.Kernel.LaunchMS, got.MedianMS-0.005) || got.Kernel.Kernels != 2) {
				t.Errorf("kernel summary %+v", got.Kernel)
			}
		})
	}
}

// A failed batch (or a worker that would not start) ends that
// implementation on the case; the others go on to the end.
func TestFailureIsolated(t *testing.T) {
	boom := errors.New("crashed")
	broken := &fakeSampler{name: "broken", next: func(n int, cmd harness.Time) (*harness.Samples, error) {
		if n == 2 {
			return nil, boom
		}
		return cpuBatch(1, 1)(n, cmd)
	}}
	h, l, impls := setup(Config{}, broken, &fakeSampler{name: "ok", next: cpuBatch(1, 1)})
	noStart := errors.New("import failed")
	impls = append(impls, Impl{Name: "unstarted", Open: func(context.Context) (Sampler, error) { return nil, noStart }})
	rec := newRecorder()
	if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
		t.Fatal(err)
	}
	if rec.failed["broken"] != boom || rec.failed["unstarted"] != noStart || len(rec.failed) != 2 {
		t.Errorf("failed %v", rec.failed)
	}
	if len(broken.cmds) != 2 || len(rec.timed["broken"]) != 1 || len(rec.timed["unstarted"]) != 0 {
		t.Errorf("broken asked %d times, timed %d", len(broken.cmds), len(rec.timed["broken"]))
	}
	if got := rec.last(t, "ok"); got.StopReason != analyze.ReasonConverged || got.Rounds != 3 {
		t.Errorf("ok: %+v", got)
	}
	if want := "broken ok broken ok ok"; strings.Join(h.calls, " ") != want {
		t.Errorf("calls %v, want %s", h.calls, want)
	}
}

// Cancellation stops the loop at once with ctx's error: what failed
// because of it is not recorded as the implementation's failure, and
// the round is not finished.
func TestCancelStopsTheLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopper := &fakeSampler{name: "a", next: func(n int, cmd harness.Time) (*harness.Samples, error) {
		if n == 2 {
			cancel()
			return nil, fmt.Errorf("a: time: %w", context.Canceled)
		}
		return cpuBatch(noisy...)(n, cmd)
	}}
	other := &fakeSampler{name: "b", next: cpuBatch(noisy...)}
	h, l, impls := setup(Config{}, stopper, other)
	rec := newRecorder()
	if err := l.Case(ctx, Case{}, impls, rec); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if len(rec.failed) != 0 || rec.rounds != 1 || strings.Join(h.calls, " ") != "a b a" {
		t.Errorf("failed %v, %d rounds, calls %v", rec.failed, rec.rounds, h.calls)
	}
}
