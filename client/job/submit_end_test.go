package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// How the runner ended (its exit code, the OOM killer, its results) is
// the job's recorded status, and its outcome says why.
func TestSubmitRecordsHowTheRunnerEnded(t *testing.T) {
	tests := []struct {
		name     string
		run      enginetest.Run
		status   string
		errHas   string
		memLimit bool
	}{
		{name: "criteria failed", run: enginetest.Run{Exit: 1, Files: map[string]string{"results.json": ""}}, status: result.StatusCriteriaFailed, errHas: "criteria failed"},
		{name: "implementation failed", run: enginetest.Run{Exit: 2}, status: result.StatusFailed, errHas: "failed with exit code 2"},
		{name: "bad spec in container", run: enginetest.Run{Exit: 3}, status: result.StatusFailed},
		{name: "runner OOM-killed", run: enginetest.Run{Exit: 137, OOM: true}, status: result.StatusFailed, errHas: "the runner was killed for memory before its verdict (the job's limit is 64MiB); raise resources.memory", memLimit: true},
		{name: "one worker OOM-killed", run: enginetest.Run{Exit: 2, OOM: true, Files: map[string]string{"results.json": ""}}, status: result.StatusFailed, errHas: "failed with exit code 2; raise resources.memory", memLimit: true},
		{name: "succeeded without results", run: enginetest.Run{Exit: 0}, status: result.StatusFailed, errHas: "the runner exited with code 0 but left no results.json"},
		{name: "killed", run: enginetest.Run{Exit: 137}, status: result.StatusFailed, errHas: "failed with exit code 137"},
		{name: "infrastructure in container", run: enginetest.Run{Exit: 4}, status: result.StatusFailed},
		{name: "cancelled inside", run: enginetest.Run{Exit: 130}, status: result.StatusCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSubmitEnv(t)
			dir := experiment(t)
			if tt.memLimit {
				editSpec(t, dir, "  # memory: 16g", "  memory: 64m")
			}
			run := tt.run
			if _, ok := run.Files["results.json"]; ok {
				run.Files = map[string]string{"results.json": enginetest.ResultsJSON("my-kernel", tt.status)}
			}
			e.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return run }
			j, err := e.submit(context.Background(), t, dir, Args{CPU: true})
			if err != nil {
				t.Fatalf("submit: %v: %s", err, e.err)
			}
			list := e.jobs(t)
			if len(list) != 1 || list[0].Status != tt.status || j.Status != tt.status {
				t.Fatalf("status %q (returned %q), want %q", list[0].Status, j.Status, tt.status)
			}
			if list[0].OOMKilled != tt.run.OOM {
				t.Errorf("oom_killed %v, want %v", list[0].OOMKilled, tt.run.OOM)
			}
			if err := Outcome(j); err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("outcome %v lacks %q", err, tt.errHas)
			}
		})
	}
}

// An attached job past its timeout is stopped, promptly, and recorded as
// timed out.
func TestSubmitTimeoutAttached(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	start := time.Now()
	j, err := e.submit(context.Background(), t, dir, Args{CPU: true, Timeout: 300 * time.Millisecond})
	if err != nil || j.Status != result.StatusTimeout {
		t.Fatalf("submit: %v, job %+v: %s", err, j, e.err)
	}
	if err := Outcome(j); err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("outcome: %v", err)
	}
	if time.Since(start) > 5*time.Second || e.fake.Stops == 0 {
		t.Errorf("took %v, %d stops", time.Since(start), e.fake.Stops)
	}
}

// A detached job's timeout is enforced by whoever waits for it.
func TestDetachedTimeoutEnforcedByWait(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ctx := context.Background()
	j, err := e.submit(ctx, t, dir, Args{Detach: true, CPU: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	// xrun wait is another process: its own Manager, the record from the store.
	m := e.manager(t)
	rec, err := m.Store.Load(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(ctx, rec); err != nil || rec.Status != result.StatusTimeout {
		t.Errorf("wait: %v, status %s", err, rec.Status)
	}
	if saved, err := m.Store.Load(j.ID); err != nil || saved.Status != result.StatusTimeout {
		t.Errorf("the store has %+v (%v), want it timed out", saved, err)
	}
}

// Ctrl-C during an attached job stops it, removes its container and
// records it cancelled.
func TestSubmitInterruptRemovesContainer(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	j, err := e.submit(e.cancelWhenRunning(), t, dir, Args{CPU: true})
	var ee *contract.ExitError
	if !errors.As(err, &ee) || ee.Code != contract.ExitCancelled {
		t.Fatalf("submit: %v, want an interruption: %s", err, e.err)
	}
	if j == nil || j.Status != result.StatusCancelled {
		t.Errorf("job %+v, want it cancelled", j)
	}
	if len(e.fake.Containers) != 0 {
		t.Errorf("%d containers left", len(e.fake.Containers))
	}
	if !strings.Contains(e.err.String(), "stopped and removed container xrun-my-kernel-") {
		t.Errorf("Err: %s", e.err)
	}
}

// Ctrl-C between the container's creation and its start cancels the job;
// it did not fail.
func TestAttachedInterruptedBeforeStart(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.submit(ctx, t, dir, Args{CPU: true})
	var ee *contract.ExitError
	if !errors.As(err, &ee) || ee.Code != contract.ExitCancelled || !strings.Contains(err.Error(), "interrupted before it started") {
		t.Errorf("submit: %v", err)
	}
	if list := e.jobs(t); len(list) != 1 || list[0].Status != result.StatusCancelled {
		t.Errorf("record: %+v", list)
	}
	if cs, _ := e.fake.List(context.Background(), nil, true); len(cs) != 0 {
		t.Errorf("containers left: %+v", cs)
	}
}
