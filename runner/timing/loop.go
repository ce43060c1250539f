// Package timing is the runner's timing loop: interleaved rounds of batches
// of samples over the implementations of one case until each meets the
// stopping rule, and the summary of each one's samples on its clock (the
// kernel clock, the CUDA events or the host's), with how busy the host was
// while a CPU timing was taken (HostLoadReader).
//
// The loop talks to workers through Sampler and to the results through
// Recorder, so that it can be tested with canned samples.
package timing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

const (
	// ReasonMaxWallTime is the stop reason when an implementation used
	// wallCapFactor x max_time_s of wall time (flushes, syncs and warm-ups
	// included) without meeting the rule.
	ReasonMaxWallTime = "max_wall_time"
	wallCapFactor     = 3
	// minBatchS is the least wall time one batch of samples asks for.
	minBatchS = 0.1
	// LaterWarmupShare is the part of warmup_ms that every batch of a case
	// but its first warms up for: the GPU has just run the batch before it,
	// and the implementation has run on the case already (its correctness
	// check, on the inputs it is timed on, and the worker's untimed first
	// call, which compiles and autotunes). Only the case's first batch
	// follows the checks, in which the GPU may have idled while inputs were
	// made on the host.
	LaterWarmupShare = 0.2
)

// Sampler takes one batch of an implementation's samples (a
// *harness.Worker is one).
type Sampler interface {
	Time(ctx context.Context, cmd harness.Time) (*harness.Samples, error)
}

// Impl is one implementation to time on a case.
type Impl struct {
	Name string
	// Reference is timed first in every round.
	Reference bool
	// Open returns the sampler for the next batch (the worker, started
	// again if it died). The time it takes is not the batch's.
	Open func(ctx context.Context) (Sampler, error)
}

// Case is the case every batch asks for.
type Case struct {
	Params json.RawMessage
	Seed   int64
	// Baseline is timed right after the reference in every round.
	Baseline string
}

// Recorder keeps what the loop finds (in the runner: results.json).
type Recorder interface {
	// Timed records name's timing after a batch that ran from from to to;
	// its StopReason is result.StopInProgress until the last batch.
	Timed(name string, from, to time.Time, t *result.Timing)
	// Failed records that a batch of name failed (the run going on): it
	// is timed no more on this case.
	Failed(name string, err error)
	// Round ends every round.
	Round()
}

// Config is the method the loop follows.
type Config struct {
	Rule analyze.StoppingRule
	// Rounds is the least number of rounds each implementation gets before
	// the rule may stop it.
	Rounds   int
	WarmupMS float64
	// Timeout bounds one batch.
	Timeout time.Duration
	// CPU: the samples are the host's clock (no flush, no kernel clock).
	CPU bool
	// Flush, RestRatio and KernelClockMaxMS go into every batch (harness.Time).
	Flush                       bool
	RestRatio, KernelClockMaxMS float64
	// FirstLaunchMS is the launch cost the first worker measured
	// (Ready.LaunchMS): the kernel clock adds it until the batches have
	// measured minGaps gaps of their own.
	FirstLaunchMS func() float64
	Logf          func(format string, args ...any)
	// Batch, when set, is called as each batch of an implementation
	// starts (the runner's progress line).
	Batch func(name string)
	// Now is the clock of wall times (nil: time.Now).
	Now func() time.Time
	// HostLoad, when set, reads the host's load right before and right
	// after each batch (CPU runs): each timing's HostLoad sums its
	// batches. A batch with a failed reading is left out of it.
	HostLoad func() (HostSample, error)
}

// Loop times case after case. It keeps what spans the cases: whether a
// batch was asked for yet, and every launch gap measured.
type Loop struct {
	c       Config
	started bool
	gaps    []float64
}

// New returns a loop that follows c.
func New(c Config) *Loop {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FirstLaunchMS == nil {
		c.FirstLaunchMS = func() float64 { return 0 }
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return &Loop{c: c}
}

// Case runs interleaved rounds: each round asks every unfinished
// implementation (the reference, the baseline, then the others) for one
// batch, so that drifting clocks or a noisy neighbour affect all of them
// alike. An implementation leaves once the rule stops it or a batch
// fails. The error is ctx's, when it ended.
func (l *Loop) Case(ctx context.Context, c Case, impls []Impl, rec Recorder) error {
	order := order(impls, c.Baseline)
	if len(order) == 0 {
		return nil
	}
	accs := make([]*acc, len(order))
	for i := range accs {
		accs[i] = &acc{}
	}
	if !l.started {
		// The time from a submit to this line is what a job costs before it measures.
		l.started = true
		l.c.Logf("timing: first batch (%s)", order[0].Name)
	}
	warmup := l.c.WarmupMS
	for round := 1; ; round++ {
		active := 0
		for i, im := range order {
			a := accs[i]
			if a.done {
				continue
			}
			ran := a.rounds
			if err := l.batch(ctx, round, c, im, a, warmup, rec); err != nil {
				return err
			}
			if a.rounds > ran {
				// A batch ran: the GPU is warm for the next one.
				warmup = l.c.WarmupMS * LaterWarmupShare
			}
			if !a.done {
				active++
			}
		}
		rec.Round()
		if active == 0 {
			return nil
		}
	}
}

// order is impls with the reference first and the baseline second.
func order(impls []Impl, baseline string) []Impl {
	out := make([]Impl, 0, len(impls))
	taken := make([]bool, len(impls))
	for _, pred := range []func(Impl) bool{
		func(im Impl) bool { return im.Reference },
		func(im Impl) bool { return im.Name == baseline },
		func(Impl) bool { return true },
	} {
		for i, im := range impls {
			if !taken[i] && pred(im) {
				taken[i] = true
				out = append(out, im)
			}
		}
	}
	return out
}

// batch asks im for one batch in round, warmed up for warmup ms, and pools
// it into a.
func (l *Loop) batch(ctx context.Context, round int, c Case, im Impl, a *acc, warmup float64, rec Recorder) error {
	rule, rounds := l.c.Rule, l.c.Rounds
	// Split the sample cap over the minimum rounds, so that a fast kernel
	// cannot use it all up in the first one.
	maxN := rule.MaxSamples - len(a.samples)
	if round <= rounds {
		maxN = min(maxN, (rule.MaxSamples+rounds-1)/rounds)
	}
	maxN = max(maxN, 1)
	// A batch takes at least its share of the minimum sampling time, in
	// wall time, or the samples' own time for a long kernel.
	batchS := max(rule.MinTimeS/float64(rounds), minBatchS)
	perBatch := max(1, (rule.MinSamples+rounds-1)/rounds)
	if l.c.Batch != nil {
		l.c.Batch(im.Name)
	}
	s, err := im.Open(ctx)
	var before *HostSample
	if err == nil && l.c.HostLoad != nil {
		if b, err := l.c.HostLoad(); err == nil {
			before = &b
		}
	}
	start := l.c.Now()
	var sm *harness.Samples
	if err == nil {
		octx, cancel := context.WithTimeout(ctx, l.c.Timeout)
		sm, err = s.Time(octx, harness.Time{
			Params: c.Params, Seed: c.Seed, MinSamples: min(perBatch, maxN), MaxSamples: maxN,
			BudgetMS: batchS * 1e3, WallMS: batchS * 1e3, WarmupMS: warmup, Flush: l.c.Flush,
			RestRatio: l.c.RestRatio, KernelClockMaxMS: l.c.KernelClockMaxMS,
		})
		cancel()
		if err == nil {
			err = checkSamples(sm)
		}
	}
	if err != nil {
		a.done = true
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec.Failed(im.Name, err)
		return nil
	}
	end := l.c.Now()
	if before != nil {
		if after, err := l.c.HostLoad(); err == nil {
			a.load.Add(*before, after)
		}
	}
	took := end.Sub(start)
	a.wall += took
	a.rounds++
	a.add(sm, took)
	l.gaps = append(l.gaps, sm.LaunchGapsMS...)
	launch := l.launch()
	t := a.timing(l.c.CPU, launch)
	t.Rounds, t.TotalS, t.StopReason, t.Discarded, t.Cover = a.rounds, a.measured, result.StopInProgress, a.discarded, a.cover
	t.HostLoad = a.load.HostLoad()
	if round >= rounds {
		stop, conv, reason := rule.Check(a.headline(launch), a.measured, a.sampled)
		wallCap := time.Duration(wallCapFactor * rule.MaxTimeS * float64(time.Second))
		if !stop && a.wall >= wallCap {
			stop, reason = true, ReasonMaxWallTime
		}
		if stop {
			a.done = true
			t.Converged, t.StopReason = conv, reason
			msg := fmt.Sprintf("%s: median %.4g ms over %d samples in %d rounds (%s)", im.Name, t.MedianMS, t.Samples, t.Rounds, reason)
			l.c.Logf("%s", msg+a.clockSummary(t)+a.coverSummary()+a.wallSummary())
		}
	}
	rec.Timed(im.Name, start, end, &t)
	return nil
}
