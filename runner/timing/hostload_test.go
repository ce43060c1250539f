package timing

import (
	"context"
	"errors"
	"testing"

	"github.com/xrun-dev/xrun/runner/harness"
)

// fakeHost is a 2-CPU machine whose counters the batches move: each batch
// of an implementation takes 40 ticks of the CPUs' time (0.2 s), of which
// the job uses job and other processes others.
type fakeHost struct {
	h     *harnessT
	cpu   CPUTimes
	job   uint64
	reads int
	fail  map[int]bool // reads (from 1) that fail
}

func (f *fakeHost) read() (HostSample, error) {
	f.reads++
	if f.fail[f.reads] {
		return HostSample{}, errors.New("proc went away")
	}
	return HostSample{At: f.h.clock.t, Load1: float64(f.reads), CPU: f.cpu, CPUs: 2,
		Job: map[int]uint64{1: f.job}}, nil
}

// busy is a CPU batch that moves the host's counters.
func (f *fakeHost) busy(job, others uint64, vals ...float64) func(int, harness.Time) (*harness.Samples, error) {
	next := cpuBatch(vals...)
	return func(n int, cmd harness.Time) (*harness.Samples, error) {
		f.cpu.Total += 40
		f.cpu.Busy += job + others
		f.job += job
		return next(n, cmd)
	}
}

// Each implementation's timing gets the host's load of its own batches
// alone: the loop reads the host right before and right after each, and
// a batch with a failed reading is left out.
func TestHostLoadPerImplementation(t *testing.T) {
	host := &fakeHost{fail: map[int]bool{}}
	quiet := &fakeSampler{name: "quiet"}
	loud := &fakeSampler{name: "loud"}
	h, l, impls := setup(Config{CPU: true, HostLoad: host.read}, quiet, loud)
	host.h = h
	quiet.next = host.busy(20, 2, 1, 1, 1)
	loud.next = host.busy(20, 20, 2, 2, 2)
	// The second reading of loud's first batch fails.
	host.fail[4] = true
	rec := newRecorder()
	if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
		t.Fatal(err)
	}
	q, ld := rec.last(t, "quiet").HostLoad, rec.last(t, "loud").HostLoad
	if q == nil || ld == nil {
		t.Fatalf("host load quiet %+v, loud %+v", q, ld)
	}
	if q.Windows != 3 || q.OthersShare != 0.05 || q.JobShare != 0.5 || q.CPUs != 2 || q.WallS != 0.6 {
		t.Errorf("quiet: %+v", q)
	}
	if ld.Windows != 2 || ld.OthersShare != 0.5 || ld.JobShare != 0.5 {
		t.Errorf("loud: %+v", ld)
	}
	if host.reads != 12 {
		t.Errorf("%d readings for 6 batches", host.reads)
	}
	// Without a reader there is none.
	_, l, impls = setup(Config{CPU: true}, &fakeSampler{name: "a", next: cpuBatch(1, 1, 1)})
	rec = newRecorder()
	if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
		t.Fatal(err)
	}
	if hl := rec.last(t, "a").HostLoad; hl != nil {
		t.Errorf("host load without a reader: %+v", hl)
	}
}
