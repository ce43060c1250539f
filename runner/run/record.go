package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/internal/post"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/internal/version"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/gpuinfo"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/sandbox"
)

// recorder holds the run's results and writes them to results.json after
// every step, so that a crash leaves what was found so far.
type recorder struct {
	r          *result.Results
	path       string
	writeErred bool
	logf       func(format string, args ...any)
}

// start makes the results of a run that has just begun.
func (rec *recorder) start(o Options) *result.Results {
	rec.r = &result.Results{
		SchemaVersion: result.SchemaVersion, JobID: o.JobID, CreatedAt: time.Now().UTC(), Status: result.StatusRunning,
		ClientVersion: o.ClientVersion, RunnerVersion: version.Get(), Image: result.Image{Ref: o.ImageRef, Digest: o.ImageDigest, CodeHash: o.CodeHash},
		Cases: []result.Case{}, Comparisons: []result.Comparison{}, Criteria: []result.Criterion{}, Warnings: []result.Warning{},
		SweepKeys: []string{}, Implementations: []string{}, Mode: "cpu",
	}
	if sp := o.split; sp != nil {
		rec.r.Split = &result.Split{Part: sp.Part, Parts: sp.Parts}
	}
	if o.Mode == "gpu" {
		rec.r.Mode = "gpu" // until pickMode knows
	}
	return rec.r
}

// write saves results.json; a failure is logged once and the run goes on
// (the final write reports it again).
func (rec *recorder) write() {
	if err := result.WriteFile(rec.path, rec.r); err != nil && !rec.writeErred {
		rec.writeErred = true
		rec.logf("error: %v", err)
	}
}

// res returns the result of implementation name on case idx.
func (rec *recorder) res(idx int, name string) *result.ImplResult {
	c := &rec.r.Cases[idx]
	ir := c.Results[name]
	if ir == nil {
		// not_run until a step says otherwise, so that a results.json read
		// mid-run (or left by a crash) is valid.
		ir = &result.ImplResult{Status: result.ImplNotRun}
		c.Results[name] = ir
	}
	return ir
}

// abort records an error that stopped the run before any case and returns
// it with the results, which are written when the output is writable.
func (rec *recorder) abort(err error) (*result.Results, error) {
	rec.logf("error: %v", err)
	now := time.Now().UTC()
	rec.r.Status, rec.r.Error, rec.r.FinishedAt = result.StatusFailed, err.Error(), &now
	if werr := result.WriteFile(rec.path, rec.r); werr != nil {
		rec.logf("error: %v", werr)
	}
	return rec.r, err
}

// abortStopped is abort for the steps that run under the job's clock: when
// ctx ended (SIGTERM, resources.timeout) err is most likely what the stop
// did to the step (a killed interpreter probe, a killed nvidia-smi), not a
// fault of the machine, and the run is recorded as cancelled or timed out
// like one stopped between cases.
func (rn *runner) abortStopped(parent, ctx context.Context, err error) (*result.Results, error) {
	if ctx.Err() == nil {
		return rn.rec.abort(err)
	}
	switch {
	case errors.Is(err, context.Canceled):
		rn.logf("cancelled before the first case%s", during(err, context.Canceled))
	case errors.Is(err, context.DeadlineExceeded):
		rn.logf("timed out before the first case%s", during(err, context.DeadlineExceeded))
	default:
		rn.logf("stopped before the first case, in a step that then failed: %v", err)
	}
	return rn.finish(parent, ctx, nil)
}

// during is what the step stopped by cause was doing (" (stopped while
// looking for Python)"), without Go's words for the cause.
func during(err, cause error) string {
	what := strings.TrimSuffix(strings.TrimSuffix(err.Error(), cause.Error()), ": ")
	if what == "" {
		return ""
	}
	return " (" + what + ")"
}

// fail records err as im's outcome on the case. It returns a non-nil error
// when the whole run must stop (cancellation or the job's timeout).
func (rn *runner) fail(ctx context.Context, kc *kcase, im *impl, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rn.failed(kc, im, op, err)
	return nil
}

// failed records err, which op met while the run goes on, as im's outcome
// on the case.
func (rn *runner) failed(kc *kcase, im *impl, op string, err error) {
	ir := rn.rec.res(kc.idx, im.name)
	var he *harness.Error
	if !errors.As(err, &he) {
		ir.Status, ir.Error = result.ImplError, errorText(fmt.Sprintf("%s: %v", op, err))
		rn.logf("%s: %s", im.name, ir.Error)
		return
	}
	switch he.Kind {
	case harness.KindOOM:
		ir.Status = result.ImplOOM
	case harness.KindTimeout:
		ir.Status = result.ImplTimeout
	case harness.KindCrash, harness.KindCUDA:
		ir.Status = result.ImplCrashed
	default:
		ir.Status = result.ImplError
	}
	msg := he.Error()
	if he.Exit != "" && !strings.Contains(msg, he.Exit) {
		msg += " (" + he.Exit + ")"
	}
	if he.Traceback != "" {
		msg += "\n" + lastBytes(he.Traceback, harness.TailBytes)
	}
	ir.Error = errorText(msg)
	ir.StderrTail = text.Safe(he.Tail)
	ir.Timing = nil
	rn.logf("%s: %s during %s: %s", im.name, ir.Status, op, errorText(he.Error()))
	// A CUDA error leaves the context unusable, and a timeout or crash
	// leaves no process: the next case gets a fresh worker.
	if he.Kind == harness.KindCUDA || he.Kind == harness.KindProtocol {
		if im.w != nil {
			im.w.Kill()
		}
	}
	rn.rec.write()
}

// maxErrorBytes bounds an implementation's error in results.json and the
// runner's log: its message and the end of its traceback, which the
// protocol bounds already (harness.MaxMessageBytes), with room to spare.
const maxErrorBytes = harness.MaxMessageBytes + harness.TailBytes + 1024

// errorText is an implementation's error as the runner keeps it: the
// experiment's own text, so bounded (its first and last bytes) and
// without control sequences, which would reach terminals, CSV files and a
// CI job's Markdown summary through every reader of the results.
func errorText(s string) string {
	return text.Safe(text.HeadTailString(s, maxErrorBytes/2, maxErrorBytes/2))
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

var errSetup = errors.New("setup failed")

// finish evaluates the run, writes the files and posts them.
func (rn *runner) finish(parent, ctx context.Context, runErr error) (*result.Results, error) {
	after := rn.readAfter(parent)
	closeWorkers(rn.impls)
	rn.pool.closeZygote()
	rn.killStrays()
	r := rn.rec.r
	var retErr error
	switch {
	case parent.Err() != nil:
		r.Status = result.StatusCancelled
		r.Error = "cancelled"
		retErr = parent.Err()
	case ctx.Err() != nil:
		r.Status = result.StatusTimeout
		r.Error = fmt.Sprintf("the job ran past resources.timeout (%s)", rn.s.Resources.Timeout.Duration)
	case errors.Is(runErr, errSetup):
		r.Status = result.StatusFailed
	}
	if r.Status != result.StatusRunning {
		// What the stop interrupted is not_run; checks already made stay.
		names := make([]string, len(rn.impls))
		for i, im := range rn.impls {
			names[i] = im.name
		}
		r.Interrupt(names, r.Error)
	}
	if a := <-after; a.err != nil {
		rn.logf("read GPU state after the run: %v", a.err)
	} else {
		for i := range r.Env.GPUs {
			r.Env.GPUs[i].After = a.state[r.Env.GPUs[i].Index]
		}
	}
	rn.clocks.stop(r, rn.gpu, rn.logf)
	rn.killDescendants()
	if rn.loop != nil {
		rn.settleLaunch(rn.loop.Launch())
	}
	share, _ := rn.o.busyShare() // checked by withDefaults
	r.Env.HostLoad = analyze.HostLoad(r, share)
	r.Comparisons = analyze.Comparisons(r, r.Methodology.FastThreshold)
	crit, critOK := analyze.Criteria(rn.s, r)
	r.Criteria = crit
	var nonFinite []result.Warning // figures an earlier write made finite (result.WriteFile)
	for _, w := range r.Warnings {
		if w.Kind == result.WarnNonFinite {
			nonFinite = append(nonFinite, w)
		}
	}
	r.Warnings = append(analyze.Warnings(r), profileWarnings(r.Profiles)...)
	r.Warnings = append(r.Warnings, nonFinite...)
	if bad := r.Finite(); len(bad) > 0 {
		rn.logf("warning: %d figures were not finite numbers within ±%g and are written as 0 (%s)", len(bad), result.MaxFigure, strings.Join(bad[:min(len(bad), 5)], ", "))
		r.Warnings = append(r.Warnings, result.Warning{Kind: result.WarnNonFinite,
			Message: fmt.Sprintf("%d figures were not finite numbers within ±%g and are written as 0: %s", len(bad), result.MaxFigure, strings.Join(bad[:min(len(bad), 5)], ", "))})
	}
	if rn.strays != "" {
		r.Warnings = append(r.Warnings, result.Warning{Kind: analyze.WarnStrayProcesses, Message: rn.strays})
	}
	analyze.Settle(r, critOK)
	now := time.Now().UTC()
	r.FinishedAt = &now
	if err := result.WriteFile(rn.rec.path, r); err != nil {
		// Without its results the run cannot be called anything but
		// failed, whatever it found: the client reads them from here.
		rn.logf("error: %v", err)
		return r, &InfraError{fmt.Errorf("write the final results: %w", err)}
	}
	if err := report.Text(rn.logFile, r); err != nil {
		rn.logf("render the results table: %v", err)
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, r); err != nil {
		rn.logf("render results.md: %v", err)
	} else if err := writeOwn(filepath.Join(rn.o.OutDir, "results.md"), md.Bytes()); err != nil {
		rn.logf("write results.md: %v", err)
	}
	rn.post(parent)
	rn.logf("status: %s", r.Status)
	return r, retErr
}

// post sends results.json to Options.PostURL, when set.
func (rn *runner) post(parent context.Context) {
	if rn.o.PostURL == "" {
		return
	}
	body, err := os.ReadFile(rn.rec.path)
	if err != nil {
		rn.logf("post results: read %s: %v", rn.rec.path, err)
		return
	}
	// Cancelled runs still report; the post gets its own bounded time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 2*time.Minute)
	defer cancel()
	if err := post.Post(ctx, rn.o.PostURL, rn.o.PostToken, body, post.Options{Logf: rn.logf}); err != nil {
		rn.logf("post results: %v (results.json is kept in %s)", err, rn.o.OutDir)
		return
	}
	rn.logf("posted results")
}

// strayKillLimit bounds how long killStrays keeps killing.
const strayKillLimit = 10 * time.Second

// killStrays ends every process of the experiment that outlived its
// worker (a setsid child, a daemon) before the results are final: none
// may act after them, and none may stay on the GPU.
func (rn *runner) killStrays() {
	if rn.o.Worker == nil {
		return
	}
	killed, err := rn.o.Worker.KillAll("/proc", strayKillLimit)
	if err != nil {
		rn.logf("error: %v", err)
	}
	if len(killed) > 0 {
		msg := fmt.Sprintf("%d processes of the experiment's code outlived their workers and were killed (%s)", len(killed), countNames(killed))
		rn.logf("%s", msg)
		rn.strays = msg
	}
}

// killDescendants ends, where the experiment's code runs as the runner's
// own user and the process is the job's alone (OwnTree: xrun run --local),
// every process left of the
// runner's tree, the orphans it adopted included, before the results are
// final: none may rewrite them after the runner wrote them. It runs once
// the workers are closed and the GPU's state read after the run.
func (rn *runner) killDescendants() {
	if !rn.o.OwnTree || rn.o.Worker != nil {
		return // killStrays did, by the worker's uid, or not this process's to do
	}
	if killed := sandbox.KillDescendants(strayKillLimit); len(killed) > 0 {
		msg := fmt.Sprintf("%d processes of the experiment's code outlived their workers and were killed (%s)", len(killed), countNames(killed))
		rn.logf("%s", msg)
		rn.strays = msg
	}
}

// countNames summarises names as "3 sleep, 1 python3", most frequent first.
func countNames(names []string) string {
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	return strings.Join(parts, ", ")
}

// gpuAfter is the reading of every GPU's state after the run (the After of
// result.GPU), by index.
type gpuAfter struct {
	state map[int]*result.GPUState
	err   error
}

// readAfter starts reading the GPUs' state as the run's work ends and
// returns where the reading comes: nvidia-smi then runs while the workers
// and the zygote close, which the GPU's clocks and power do not wait for.
// A run without a GPU reads nothing.
func (rn *runner) readAfter(parent context.Context) <-chan gpuAfter {
	ch := make(chan gpuAfter, 1)
	if rn.gpu == nil {
		ch <- gpuAfter{}
		return ch
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 30*time.Second)
		defer cancel()
		state, err := gpuinfo.State(ctx)
		ch <- gpuAfter{state, err}
	}()
	return ch
}

// writeOwn writes data to path, a file of the runner's own in the output
// directory, and never through a link that stands there.
func writeOwn(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
