// Package backendtest is the conformance suite every backend passes: the
// lifecycle client/job relies on (create, start, state, wait, logs, the
// output directory, stop with partial results, remove, list) and the
// refusals its Capabilities declare, each written once and run against
// each backend by that backend's tests.
package backendtest

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Place is a backend under test and how to make a job on it.
type Place struct {
	Backend      backend.Backend
	Capabilities backend.Capabilities
	// Spec is the spec of a job that runs script with sh, its output
	// directory in $OUT (what CopyOut returns as out/...).
	Spec func(t *testing.T, j *store.Job, script string) backend.Spec
	// Timeout bounds each case's wait for its job (0: a minute).
	Timeout time.Duration
}

// Run runs the suite against p.
func Run(t *testing.T, p Place) {
	if p.Timeout == 0 {
		p.Timeout = time.Minute
	}
	t.Run("RunsToItsEnd", func(t *testing.T) { runsToItsEnd(t, p) })
	t.Run("ExitCode", func(t *testing.T) { exitCode(t, p) })
	t.Run("StopKeepsPartialOutput", func(t *testing.T) { stopKeepsPartialOutput(t, p) })
	t.Run("RemoveRunning", func(t *testing.T) { removeRunning(t, p) })
	t.Run("Refusals", func(t *testing.T) { refusals(t, p) })
}

func (p Place) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// start creates and starts a job running script; the test removes it at
// its end whatever happened.
func (p Place) start(t *testing.T, script string) *store.Job {
	t.Helper()
	ctx := p.ctx(t)
	j := &store.Job{ID: store.NewID(), Experiment: "conformance", Owner: store.CurrentUser()}
	s := p.Spec(t, j, script)
	if err := p.Backend.Create(ctx, j, s); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), backend.CleanupTimeout)
		defer cancel()
		p.Backend.Remove(ctx, j, true)
	})
	if err := p.Backend.Start(ctx, j); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return j
}

func (p Place) wait(t *testing.T, j *store.Job) backend.State {
	t.Helper()
	s, err := p.Backend.Wait(p.ctx(t), j)
	if err != nil || !s.Finished() {
		t.Fatalf("Wait: %+v, %v; want the runner exited", s, err)
	}
	return s
}

func (p Place) logs(t *testing.T, j *store.Job) string {
	t.Helper()
	var buf strings.Builder
	if err := p.Backend.Logs(p.ctx(t), j, backend.LogOptions{}, &buf, &buf); err != nil {
		t.Fatalf("Logs: %v", err)
	}
	return buf.String()
}

// output reads CopyOut's tar into name -> content.
func (p Place) output(t *testing.T, j *store.Job) map[string]string {
	t.Helper()
	rc, err := p.Backend.CopyOut(p.ctx(t), j)
	if err != nil {
		t.Fatalf("CopyOut: %v", err)
	}
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("CopyOut's tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, "./")] = string(b)
		}
	}
}

// waitRunning waits until the job's log shows line: its script runs (and
// has set its traps) from then on.
func (p Place) waitRunning(t *testing.T, j *store.Job, line string) {
	t.Helper()
	deadline := time.Now().Add(p.Timeout)
	for time.Now().Before(deadline) {
		var buf strings.Builder
		p.Backend.Logs(p.ctx(t), j, backend.LogOptions{}, &buf, &buf)
		if strings.Contains(buf.String(), line) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the job never logged %q", line)
}

func runsToItsEnd(t *testing.T, p Place) {
	j := p.start(t, `echo to-stdout; echo to-stderr >&2; mkdir -p "$OUT/logs"; echo '{"status":"succeeded"}' > "$OUT/results.json"; echo x > "$OUT/logs/w.log"`)
	s := p.wait(t, j)
	if s.ExitCode != 0 {
		t.Errorf("exit code %d, want 0", s.ExitCode)
	}
	if l := p.logs(t, j); !strings.Contains(l, "to-stdout") || !strings.Contains(l, "to-stderr") {
		t.Errorf("logs %q: want both streams", l)
	}
	out := p.output(t, j)
	if out["out/results.json"] != "{\"status\":\"succeeded\"}\n" || out["out/logs/w.log"] != "x\n" {
		t.Errorf("output %q: want out/results.json and out/logs/w.log", out)
	}
	listed, err := p.Backend.List(p.ctx(t), true)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	found := false
	for _, l := range listed {
		found = found || l.Job.ID == j.ID
	}
	if !found {
		t.Errorf("List(all) has no job %s", j.ID)
	}
	if err := p.Backend.Remove(p.ctx(t), j, false); err != nil {
		t.Fatalf("Remove of an exited job: %v", err)
	}
	if _, err := p.Backend.State(p.ctx(t), j); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("State after Remove: %v, want not found", err)
	}
}

func exitCode(t *testing.T, p Place) {
	j := p.start(t, `exit 3`)
	if s := p.wait(t, j); s.ExitCode != 3 {
		t.Errorf("exit code %d, want 3", s.ExitCode)
	}
	if _, err := p.Backend.CopyOut(p.ctx(t), j); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("CopyOut of a runner that wrote nothing: %v, want not found", err)
	}
}

// A stopped runner writes what it has (as xrun-runner writes cancelled
// results on SIGTERM), and that output is kept.
func stopKeepsPartialOutput(t *testing.T, p Place) {
	j := p.start(t, `mkdir -p "$OUT"; trap 'echo "{\"status\":\"cancelled\"}" > "$OUT/results.json"; exit 130' TERM; echo up; while :; do sleep 0.1; done`)
	p.waitRunning(t, j, "up")
	if err := p.Backend.Stop(p.ctx(t), j, 20*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s := p.wait(t, j); s.ExitCode != 130 {
		t.Errorf("exit code %d after Stop, want the runner's 130", s.ExitCode)
	}
	if out := p.output(t, j); !strings.Contains(out["out/results.json"], "cancelled") {
		t.Errorf("output after Stop %q: want the partial results", out)
	}
}

func removeRunning(t *testing.T, p Place) {
	j := p.start(t, `echo up; while :; do sleep 0.1; done`)
	p.waitRunning(t, j, "up")
	var running *backend.RunningError
	if err := p.Backend.Remove(p.ctx(t), j, false); !errors.As(err, &running) || running.JobID != j.ID {
		t.Fatalf("Remove of a running job without force: %v, want a RunningError", err)
	}
	if err := p.Backend.Remove(p.ctx(t), j, true); err != nil {
		t.Fatalf("Remove with force: %v", err)
	}
	if _, err := p.Backend.State(p.ctx(t), j); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("State after a forced Remove: %v, want not found", err)
	}
}

// Create refuses, from the place's Capabilities, what it lacks, and makes
// nothing; what it has, it does not refuse.
func refusals(t *testing.T, p Place) {
	for _, c := range []struct {
		f   backend.Feature
		ask func(*backend.Spec)
	}{
		{backend.GPUsByID, func(s *backend.Spec) { s.GPUs = &backend.GPUs{IDs: []string{"0"}} }},
		{backend.NoNetwork, func(s *backend.Spec) { s.NoNetwork = true }},
	} {
		if p.Capabilities.Has(c.f) {
			continue
		}
		j := &store.Job{ID: store.NewID(), Experiment: "conformance", Owner: store.CurrentUser()}
		s := p.Spec(t, j, "true")
		c.ask(&s)
		err := p.Backend.Create(p.ctx(t), j, s)
		var un *backend.UnsupportedError
		if !errors.As(err, &un) || un.Asked != c.f || un.Instead != p.Capabilities.Lacks[c.f] {
			p.Backend.Remove(p.ctx(t), j, true)
			t.Errorf("Create asking %v: %v, want the refusal its Capabilities declare", c.f, err)
			continue
		}
		if _, err := p.Backend.State(p.ctx(t), j); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("a refused Create of %v left the job: %v", c.f, err)
		}
	}
}
