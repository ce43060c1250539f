package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/result"
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
		{"failed", enginetest.Run{Exit: 2}, func(*testApp) context.Context { return context.Background() }, contract.ExitFailed, result.StatusFailed, "failed with exit code 2"},
		{"interrupted while running", enginetest.Run{Hang: true}, whileRunning, contract.ExitCancelled, result.StatusCancelled, "stopped and removed container xrun-my-kernel-"},
		{"interrupted before the start", enginetest.Run{Hang: true}, beforeStart, contract.ExitCancelled, result.StatusCancelled, "interrupted before it started"},
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
		return enginetest.Run{Hang: true, Files: map[string]string{"results.json": enginetest.ResultsJSON("my-kernel", result.StatusCancelled)}}
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
	if code != contract.ExitCancelled || len(list) != 1 {
		t.Fatalf("exit %d, %d jobs:\n%s", code, len(list), ta.err)
	}
	if !strings.Contains(ta.out.String(), "my-kernel") || !strings.Contains(ta.out.String(), "cancelled") {
		t.Errorf("no table of the partial results on stdout:\n%s", ta.out)
	}
	if !strings.Contains(ta.err.String(), "partial results kept: xrun results "+list[0].ID) {
		t.Errorf("stderr does not say where the partial results are:\n%s", ta.err)
	}
}

// An attached submit's stdout is the results table and nothing else; the
// job's log goes to stderr. (What it builds and runs: client/job.)
func TestSubmitAttachedPrintsTheTable(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	if len(list) != 1 {
		t.Fatalf("%d jobs in the store", len(list))
	}
	r, _ := result.ReadFile(st.Results(list[0].ID))
	var want bytes.Buffer
	report.Text(&want, r)
	if ta.out.String() != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", ta.out, want.String())
	}
	if !strings.Contains(ta.err.String(), "runner says hi") {
		t.Errorf("stderr lacks the job's logs: %s", ta.err)
	}
}

func TestSubmitExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		run      enginetest.Run
		args     []string
		code     int
		status   string
		errHas   string
		errLacks string
		memLimit bool
	}{
		{name: "criteria failed", run: enginetest.Run{Exit: 1, Files: map[string]string{"results.json": ""}}, code: 1, status: result.StatusCriteriaFailed, errHas: "criteria failed"},
		{name: "implementation failed", run: enginetest.Run{Exit: 2}, code: 2, status: result.StatusFailed, errHas: "failed with exit code 2"},
		{name: "bad spec in container", run: enginetest.Run{Exit: 3}, code: 3, status: result.StatusFailed},
		{name: "runner OOM-killed", run: enginetest.Run{Exit: 137, OOM: true}, code: 2, status: result.StatusFailed, errHas: "the runner was killed for memory before its verdict (the job's limit is 64MiB); raise resources.memory", memLimit: true},
		// The runner reached its verdict: the results, not the container's
		// OOM flag, say what ran out of memory.
		{name: "one worker OOM-killed", run: enginetest.Run{Exit: 2, OOM: true, Files: map[string]string{"results.json": ""}}, code: 2, status: result.StatusFailed, errHas: "failed with exit code 2; raise resources.memory", errLacks: "killed for memory before its verdict", memLimit: true},
		{name: "succeeded without results", run: enginetest.Run{Exit: 0}, code: 2, status: result.StatusFailed, errHas: "the runner exited with code 0 but left no results.json"},
		{name: "killed", run: enginetest.Run{Exit: 137}, code: 2, status: result.StatusFailed, errHas: "failed with exit code 137"},
		{name: "infrastructure in container", run: enginetest.Run{Exit: 4}, code: 4, status: result.StatusFailed},
		{name: "cancelled inside", run: enginetest.Run{Exit: 130}, code: 130, status: result.StatusCancelled},
		{name: "timeout", run: enginetest.Run{Hang: true}, args: []string{"--timeout", "300ms"}, code: contract.ExitTimeout, status: result.StatusTimeout, errHas: "timed out after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestApp(t)
			dir := experiment(t, ta)
			if tt.memLimit {
				y, _ := os.ReadFile(filepath.Join(dir, "xrun.yaml"))
				y = bytes.Replace(y, []byte("  # memory: 16g"), []byte("  memory: 64m"), 1)
				os.WriteFile(filepath.Join(dir, "xrun.yaml"), y, 0o644)
			}
			run := tt.run
			if _, ok := run.Files["results.json"]; ok {
				run.Files = map[string]string{"results.json": enginetest.ResultsJSON("my-kernel", tt.status)}
			}
			ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return run }
			code := ta.run(context.Background(), append(append([]string{"submit", "--cpu"}, tt.args...), dir)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, ta.err)
			}
			if !strings.Contains(ta.err.String(), tt.errHas) {
				t.Errorf("stderr %q lacks %q", ta.err, tt.errHas)
			}
			if tt.errLacks != "" && strings.Contains(ta.err.String(), tt.errLacks) {
				t.Errorf("stderr %q says %q", ta.err, tt.errLacks)
			}
		})
	}
}

// --quiet: stdout is the job id (-d) or "ID STATUS", stderr empty.
func TestSubmitQuiet(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-q", "--cpu", dir); code != 0 || ta.err.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	if len(list) != 1 || ta.out.String() != list[0].ID+" succeeded\n" {
		t.Errorf("stdout %q", ta.out)
	}
	if code := ta.run(ctx, "submit", "--quiet", "-d", "--cpu", dir); code != 0 || ta.err.Len() != 0 || len(strings.TrimSpace(ta.out.String())) != 12 {
		t.Errorf("-q -d: exit %d, stdout %q, stderr %q", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "submit", "-q", "--json", "--cpu", dir); code != contract.ExitUsage {
		t.Errorf("-q --json: exit %d", code)
	}
}

func TestSubmitErrors(t *testing.T) {
	t.Run("no NVIDIA runtime", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		ta.fake.DaemonInfo.NvidiaRuntime = false
		// The base is not on the host and cannot be pulled: the missing
		// runtime is still what is named.
		delete(ta.fake.ImageIDs, "test/base:1")
		ta.fake.PullErr = errors.New("pull access denied for test/base")
		code := ta.run(context.Background(), "submit", dir)
		want := "xrun: Docker host unix:///fake.sock has no NVIDIA GPU runtime for this GPU job: submit with --cpu to run without GPUs, or install the NVIDIA Container Toolkit on the host (docs/gpu-host.md)\n"
		if code != contract.ExitInfra || ta.err.String() != want {
			t.Errorf("exit %d: got\n%s\nwant\n%s", code, ta.err, want)
		}
	})
	t.Run("--gpus 0", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		code := ta.run(context.Background(), "submit", "--gpus", "0", dir)
		if code != contract.ExitUsage || !strings.Contains(ta.err.String(), "--gpus 0 asks for no GPU: pass --cpu to run without one, or --gpus device=0 for GPU 0") {
			t.Errorf("exit %d: %s", code, ta.err)
		}
		if len(ta.fake.Containers) != 0 {
			t.Error("made a container for a refused request")
		}
	})
	t.Run("base missing offline", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		ta.fake.PullErr = errors.New("dial tcp: lookup registry-1.docker.io: no such host")
		code := ta.run(context.Background(), "submit", "--cpu", "--base", "xrun/cpu-base:bookworm", dir)
		msg := ta.err.String()
		if code != contract.ExitInfra || !strings.Contains(msg, "base image xrun/cpu-base:bookworm is not on host unix:///fake.sock and could not be pulled") || !strings.Contains(msg, "make-cpu-base.sh") {
			t.Errorf("exit %d: %s", code, msg)
		}
	})
	t.Run("misspelt base", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		ta.fake.PullErr = errors.New("pull access denied for no-such-base, repository does not exist")
		code := ta.run(context.Background(), "submit", "--cpu", "--base", "no-such-base", dir)
		msg := ta.err.String()
		if code != contract.ExitInfra || !strings.Contains(msg, "no-such-base is not one of xrun's bases (cpu, ") || strings.Contains(msg, "submit with --cpu") {
			t.Errorf("exit %d: %s", code, msg)
		}
	})
	t.Run("bad spec", func(t *testing.T) {
		ta := newTestApp(t)
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte("name: x\nbogus: 1\n"), 0o644)
		code := ta.run(context.Background(), "submit", "--cpu", dir)
		if code != contract.ExitUsage || !strings.Contains(ta.err.String(), "xrun.yaml:2: bogus: unknown key") {
			t.Errorf("exit %d: %s", code, ta.err)
		}
	})
	t.Run("missing --env", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		code := ta.run(context.Background(), "submit", "--cpu", "--env", "NOT_SET_ANYWHERE", dir)
		if code != contract.ExitUsage || !strings.Contains(ta.err.String(), "NOT_SET_ANYWHERE") {
			t.Errorf("exit %d: %s", code, ta.err)
		}
	})
}

// A --profile the runner would refuse is refused before anything is
// built. (What a --profile job runs with: client/job.)
func TestSubmitRefusesABadProfile(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	for _, args := range [][]string{{"--profile", "nsys"}, {"--profile", "ncu", "--cpu"}} {
		if code := ta.run(context.Background(), append(append([]string{"submit", "-d"}, args...), dir)...); code != contract.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, contract.ExitUsage)
		}
	}
	if len(ta.fake.BuildFiles) != 0 {
		t.Error("a refused --profile still built an image")
	}
}

// A misspelt function is found before the build, with this machine's
// python3, and the message lists the module's own functions (not numpy's
// np) and the closest; --no-preflight leaves it to the container.
func TestSubmitChecksReferencesBeforeTheBuild(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "no python3 here: the check before the build runs it (scripts/setup.sh installs it)")
	}
	ta := newTestApp(t)
	dir := experiment(t, ta)
	yaml := filepath.Join(dir, "xrun.yaml")
	data, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yaml, bytes.Replace(data, []byte("matmul:blocked"), []byte("matmul:blockd"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code != contract.ExitUsage {
		t.Fatalf("exit %d, want %d: %s", code, contract.ExitUsage, ta.err)
	}
	msg := ta.err.String()
	for _, want := range []string{yaml + ":", "benchmark.implementations.blocked", "matmul:blockd", "module matmul has no function blockd; did you mean blocked?", "its functions: blocked, flops, make_inputs, reference", "--no-preflight"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "np") && regexp.MustCompile(`\bnp\b`).MatchString(msg) {
		t.Errorf("message lists an imported name:\n%s", msg)
	}
	if len(ta.fake.BuildFiles) != 0 {
		t.Errorf("%d builds before a spec that cannot work", len(ta.fake.BuildFiles))
	}
	if code := ta.run(context.Background(), "submit", "--cpu", "--no-preflight", dir); code != 0 {
		t.Fatalf("--no-preflight: exit %d: %s", code, ta.err)
	}
	if len(ta.fake.BuildFiles) != 1 {
		t.Errorf("--no-preflight: %d builds, want 1", len(ta.fake.BuildFiles))
	}
}
