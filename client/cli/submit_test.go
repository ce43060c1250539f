package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/runner/result"
)

// submit --json prints the job's record however the job ended: failed,
// interrupted while it ran, or interrupted before it started. Without
// --json stdout stays as it was (nothing, for an interrupted job), and
// stderr says the same either way.
func TestSubmitJSONPrintsTheRecordOfAJobThatDidNotSucceed(t *testing.T) {
	whileRunning := func(ta *testApp) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for {
				if running, _ := ta.fake.List(context.Background(), nil, false); len(running) > 0 {
					cancel()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		return ctx
	}
	beforeStart := func(*testApp) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	tests := []struct {
		name   string
		run    enginetest.Run
		ctx    func(*testApp) context.Context
		code   int
		status string
		errHas string
	}{
		{"failed", enginetest.Run{Exit: 2}, func(*testApp) context.Context { return context.Background() }, ExitFailed, result.StatusFailed, "failed with exit code 2"},
		{"interrupted while running", enginetest.Run{Hang: true}, whileRunning, ExitInterrupted, result.StatusCancelled, "stopped and removed container xrun-my-kernel-"},
		{"interrupted before the start", enginetest.Run{Hang: true}, beforeStart, ExitInterrupted, result.StatusCancelled, "interrupted before it started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr [2]string
			for i, asJSON := range []bool{false, true} {
				ta := newTestApp(t)
				dir := experiment(t, ta)
				ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return tt.run }
				args := []string{"submit", "--cpu", dir}
				if asJSON {
					args = []string{"submit", "--json", "--cpu", dir}
				}
				code := ta.run(tt.ctx(ta), args...)
				if code != tt.code || !strings.Contains(ta.err.String(), tt.errHas) {
					t.Fatalf("%v: exit %d, want %d; stderr lacks %q:\n%s", args, code, tt.code, tt.errHas, ta.err)
				}
				st, _ := ta.Store()
				list, _ := st.List()
				if len(list) != 1 {
					t.Fatalf("%d records, want 1", len(list))
				}
				// The job id differs from run to run.
				stderr[i] = strings.ReplaceAll(ta.err.String(), list[0].ID, "ID")
				if !asJSON {
					if tt.status == result.StatusCancelled && ta.out.Len() != 0 {
						t.Errorf("stdout of an interrupted submit: %q, want nothing", ta.out)
					}
					continue
				}
				var j store.Job
				if err := json.Unmarshal(ta.out.Bytes(), &j); err != nil {
					t.Fatalf("stdout is not a job record: %v\n%s", err, ta.out)
				}
				if j.ID != list[0].ID || j.Status != tt.status || j.Status != list[0].Status {
					t.Errorf("--json printed job %s %s, the store has %s %s", j.ID, j.Status, list[0].ID, list[0].Status)
				}
			}
			if stderr[0] != stderr[1] {
				t.Errorf("--json changed stderr:\nwithout:\n%s\nwith:\n%s", stderr[0], stderr[1])
			}
		})
	}
}

// Ctrl-C on an attached submit whose runner left partial results: stdout
// gets their table, and stderr says where they stay.
func TestSubmitInterruptedShowsPartialResults(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		return enginetest.Run{Hang: true, Files: map[string]string{"results.json": resultsJSON(t, "my-kernel", result.StatusCancelled)}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if running, _ := ta.fake.List(context.Background(), nil, false); len(running) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	code := ta.run(ctx, "submit", "--cpu", dir)
	st, _ := ta.Store()
	list, _ := st.List()
	if code != ExitInterrupted || len(list) != 1 {
		t.Fatalf("exit %d, %d jobs:\n%s", code, len(list), ta.err)
	}
	if !strings.Contains(ta.out.String(), "my-kernel") || !strings.Contains(ta.out.String(), "cancelled") {
		t.Errorf("no table of the partial results on stdout:\n%s", ta.out)
	}
	if !strings.Contains(ta.err.String(), "partial results kept: xrun results "+list[0].ID) {
		t.Errorf("stderr does not say where the partial results are:\n%s", ta.err)
	}
}
