package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/runner/contract"

	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/runner/report"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/spec"
)

// experiment scaffolds an experiment with xrun init on the fake's base.
func experiment(t *testing.T, ta *testApp) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "My Kernel")
	if code := ta.run(context.Background(), "init", "--base", "test/base:1", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, ta.err)
	}
	return dir
}

// editSpec replaces the first old in dir's xrun.yaml with new.
func editSpec(t *testing.T, dir, old, new string) {
	t.Helper()
	path := filepath.Join(dir, "xrun.yaml")
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(y), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func succeed(t *testing.T) func(engine.ContainerSpec) enginetest.Run {
	return func(engine.ContainerSpec) enginetest.Run {
		return enginetest.Run{Logs: "runner says hi\n" +
			"10:00:01 progress case=1/2 phase=check elapsed=1.0 case_start=1.0 done=0.0\n" +
			"10:00:02 progress case=1/2 phase=check elapsed=2.0 case_start=1.0 done=0.0\n" +
			"10:00:03 progress case=1/2 phase=time impl=a elapsed=3.0 case_start=1.0 done=0.0\n", Files: map[string]string{
			"results.json": resultsJSON(t, "my-kernel", result.StatusSucceeded), "runner.log": "log\n"}}
	}
}

func TestInitScaffoldIsAValidSpec(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	s, err := spec.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The candidate's speedup is over the reference: the first table says
	// whether it beats it.
	if s.Benchmark.BaselineName() != "reference" {
		t.Errorf("the scaffold's baseline is %q, want reference", s.Benchmark.BaselineName())
	}
	if s.Name != "my-kernel" || len(s.Benchmark.Implementations) != 1 || len(s.Benchmark.CPUSweep) == 0 {
		t.Errorf("spec = %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "matmul.py")); err != nil {
		t.Error(err)
	}
	// The command it suggests can be pasted: the directory has a space.
	if want := "`xrun submit --cpu '" + dir + "'`"; !strings.Contains(ta.err.String(), want) {
		t.Errorf("init says %q, want %s", ta.err, want)
	}
	if code := ta.run(context.Background(), "init", dir); code != ExitUsage || !strings.Contains(ta.err.String(), "already has an xrun.yaml") {
		t.Errorf("second init: exit %d, %s", code, ta.err)
	}
}

// Where the default CPU base is missing and another CPU base of the table
// is on the host, the submit that builds says which it used; one that
// builds nothing says nothing of it.
func TestCPUBaseFallbackSaidOnce(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	editSpec(t, dir, "  base: test/base:1\n", "")
	ta.fake.ImageIDs["xrun/cpu-torch:bookworm"] = "sha256:cafe"
	ta.fake.Behave = succeed(t)
	const said = "is not on unix:///fake.sock: using xrun/cpu-torch:bookworm"
	if code := ta.run(context.Background(), "submit", "--cpu", "--no-standby", dir); code != 0 || !strings.Contains(ta.err.String(), said) {
		t.Fatalf("exit %d, stderr:\n%s\nwant %q", code, ta.err, said)
	}
	if b := ta.fake.BuildFiles[0]["Dockerfile"]; !strings.Contains(string(b), "FROM xrun/cpu-torch:bookworm") {
		t.Errorf("Dockerfile:\n%s", b)
	}
	ta.err.Reset()
	if code := ta.run(context.Background(), "submit", "--cpu", "--no-standby", dir); code != 0 || strings.Contains(ta.err.String(), said) || !strings.Contains(ta.err.String(), "build skipped") {
		t.Errorf("resubmit: exit %d, stderr:\n%s\nwant the build skipped and no word of the base", code, ta.err)
	}
}

// A spec that asks for no GPU (resources.gpus: 0) runs as --cpu does, with
// no GPU runtime asked of the host; --gpus still asks for one.
func TestSpecWithoutGPUsIsACPUJob(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	editSpec(t, dir, "gpus: 1 ", "gpus: 0 ")
	ta.fake.Behave = succeed(t)
	if code := ta.run(context.Background(), "submit", "--json", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	var j store.Job
	if err := json.Unmarshal(ta.out.Bytes(), &j); err != nil || j.Mode != "cpu" || j.GPUs != "0" {
		t.Errorf("job %+v (%v): want a CPU job", j, err)
	}
	cpu := false
	for _, c := range ta.fake.Made() {
		cpu = cpu || slices.Contains(c.Spec.Env, contract.EnvMode+"=cpu") && c.Spec.GPUs == nil
	}
	if !cpu {
		t.Error("no container of the job ran in CPU mode without GPUs")
	}
}

func TestSubmitAttachedCPU(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "--cpu", "--keep", "--env", "SECRET_TOKEN", "--label", "team=kernels", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	if len(ta.fake.BuildFiles) != 1 {
		t.Fatalf("%d builds, want 1", len(ta.fake.BuildFiles))
	}
	b := ta.fake.BuildFiles[0]
	for _, name := range []string{"Dockerfile", "xrun-runner"} {
		if _, ok := b[name]; !ok {
			t.Errorf("build context lacks %s", name)
		}
	}
	if _, ok := b["exp/matmul.py"]; ok {
		t.Error("the code went into the image; it is copied into the container")
	}
	if bytes.Contains(b["Dockerfile"], []byte("s3cr3t")) {
		t.Error("an env value was baked into the image")
	}
	if !strings.Contains(string(b["Dockerfile"]), "FROM test/base:1") {
		t.Errorf("Dockerfile:\n%s", b["Dockerfile"])
	}
	st, _ := ta.Store()
	list, _ := st.List()
	if len(list) != 1 {
		t.Fatalf("%d jobs in the store", len(list))
	}
	j := list[0]
	if j.Status != result.StatusSucceeded || j.Mode != "cpu" || j.ExitCode == nil || *j.ExitCode != 0 || j.Finished == nil {
		t.Errorf("job = %+v", j)
	}
	if !strings.HasPrefix(j.ImageRef, "xrun/my-kernel:") || len(j.ImageRef) != len("xrun/my-kernel:")+12 {
		t.Errorf("image ref %q", j.ImageRef)
	}
	for _, f := range []string{store.ResultsFile, store.LogsFile, "out/runner.log"} {
		if !st.Has(j.ID, f) {
			t.Errorf("store lacks %s", f)
		}
	}
	// The container (kept by --keep): labels, env at run time, no GPUs.
	c, err := ta.fake.Inspect(ctx, j.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	spec := ta.fake.Containers[j.ContainerID].Spec
	if spec.GPUs != nil {
		t.Error("a --cpu job asked for GPUs")
	}
	copied := strings.Join(ta.fake.Containers[j.ContainerID].Copied, " ")
	if !strings.Contains(copied, "/xrun/exp/matmul.py") || !strings.Contains(copied, "/xrun/exp/xrun.yaml") {
		t.Errorf("code copied into the container: %s", copied)
	}
	for k, v := range map[string]string{contract.LabelJob: j.ID, contract.LabelExperiment: "my-kernel", contract.LabelMode: "cpu", contract.LabelGPUs: "0", contract.LabelImage: j.ImageRef, contract.LabelTimeout: "15m0s", "team": "kernels"} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	env := strings.Join(spec.Env, "\n")
	for _, want := range []string{"SECRET_TOKEN=s3cr3t", "XRUN_MODE=cpu", "XRUN_JOB_ID=" + j.ID, "XRUN_IMAGE_REF=" + j.ImageRef} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s: %s", want, env)
		}
	}
	// stdout is the results table and nothing else; logs went to stderr.
	r, _ := result.ReadFile(st.Results(j.ID))
	var want bytes.Buffer
	report.Text(&want, r)
	if ta.out.String() != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", ta.out, want.String())
	}
	if !strings.Contains(ta.err.String(), "runner says hi") {
		t.Errorf("stderr lacks the job's logs: %s", ta.err)
	}

	if !strings.Contains(string(b["Dockerfile"]), `team="kernels"`) {
		t.Errorf("the image lacks the --label:\n%s", b["Dockerfile"])
	}
	// Unchanged: the build is skipped.
	if code := ta.run(ctx, "submit", "--cpu", "--label", "team=kernels", dir); code != 0 {
		t.Fatalf("resubmit: exit %d: %s", code, ta.err)
	}
	if len(ta.fake.BuildFiles) != 1 || !strings.Contains(ta.err.String(), "build skipped") {
		t.Errorf("resubmit built again (%d builds): %s", len(ta.fake.BuildFiles), ta.err)
	}
	// A code edit: no build, the new code in the new container.
	code, err := os.ReadFile(filepath.Join(dir, "matmul.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "matmul.py"), append(code, "\n# edit\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ta.run(ctx, "submit", "--cpu", "--label", "team=kernels", dir); code != 0 {
		t.Fatalf("edited resubmit: exit %d: %s", code, ta.err)
	}
	if len(ta.fake.BuildFiles) != 1 {
		t.Errorf("a code edit built an image (%d builds)", len(ta.fake.BuildFiles))
	}
	list, _ = st.List()
	hashes := map[string]bool{}
	for _, c := range ta.fake.Made() {
		hashes[c.C.Labels[contract.LabelCodeHash]] = true
	}
	if len(list) != 3 || len(hashes) != 2 {
		t.Errorf("%d jobs with %d code hashes; want 3 jobs, 2 hashes", len(list), len(hashes))
	}
	// --no-cache rebuilds the image that is already there.
	if code := ta.run(ctx, "submit", "--cpu", "--no-cache", "--label", "team=kernels", dir); code != 0 {
		t.Fatalf("--no-cache resubmit: exit %d: %s", code, ta.err)
	}
	if len(ta.fake.BuildFiles) != 2 || !strings.Contains(ta.err.String(), "rebuilding every layer (--no-cache)") {
		t.Errorf("--no-cache: %d builds: %s", len(ta.fake.BuildFiles), ta.err)
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
				run.Files = map[string]string{"results.json": resultsJSON(t, "my-kernel", tt.status)}
			}
			ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return run }
			code := ta.run(context.Background(), "submit", "--cpu", dir)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, ta.err)
			}
			if !strings.Contains(ta.err.String(), tt.errHas) {
				t.Errorf("stderr %q lacks %q", ta.err, tt.errHas)
			}
			if tt.errLacks != "" && strings.Contains(ta.err.String(), tt.errLacks) {
				t.Errorf("stderr %q says %q", ta.err, tt.errLacks)
			}
			st, _ := ta.Store()
			list, _ := st.List()
			if list[0].Status != tt.status {
				t.Errorf("status %q, want %q", list[0].Status, tt.status)
			}
			if list[0].OOMKilled != tt.run.OOM {
				t.Errorf("oom_killed %v, want %v", list[0].OOMKilled, tt.run.OOM)
			}
		})
	}
}

// The record, the store's results.json, wait and results agree on how a
// job ended, whoever stopped it.
func TestStatusAgreesWithResults(t *testing.T) {
	partial := func(t *testing.T, status string) string {
		r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: "my-kernel", Status: status,
			CreatedAt: time.Unix(0, 0).UTC(), Criteria: []result.Criterion{{Name: "correct", Passed: true}}}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	tests := []struct {
		name string
		// results is what the runner wrote when it was stopped: cancelled
		// on SIGTERM, running when it was killed first.
		results string
		stop    func(ta *testApp, id string) int
		status  string
		code    int
		errHas  string
	}{
		{"timeout", result.StatusCancelled, func(ta *testApp, id string) int { return ta.run(context.Background(), "wait", id) },
			result.StatusTimeout, ExitTimeout, "timed out after 200ms"},
		{"cancel", result.StatusRunning, func(ta *testApp, id string) int { return ta.run(context.Background(), "cancel", id) },
			result.StatusCancelled, ExitInterrupted, "was cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestApp(t)
			dir := experiment(t, ta)
			res := partial(t, tt.results)
			ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
				return enginetest.Run{Hang: true, Files: map[string]string{"results.json": res}}
			}
			ctx := context.Background()
			if code := ta.run(ctx, "submit", "-d", "--cpu", "--timeout", "200ms", dir); code != 0 {
				t.Fatal(ta.err)
			}
			id := strings.TrimSpace(ta.out.String())
			if tt.name == "timeout" {
				time.Sleep(300 * time.Millisecond)
			}
			tt.stop(ta, id)
			if code := ta.run(ctx, "status", "--json", id); code != 0 {
				t.Fatal(ta.err)
			}
			var rec store.Job
			json.Unmarshal(ta.out.Bytes(), &rec)
			if rec.Status != tt.status {
				t.Errorf("record says %s, want %s", rec.Status, tt.status)
			}
			code := ta.run(ctx, "results", "--json", id)
			if code != tt.code || !strings.Contains(ta.err.String(), tt.errHas) {
				t.Errorf("results --json: exit %d, want %d; stderr %q lacks %q", code, tt.code, ta.err, tt.errHas)
			}
			r, err := result.Decode(ta.out.Bytes())
			if err != nil || r.Status != tt.status || r.Success {
				t.Errorf("results.json says %s (success %v), want %s: %v", r.Status, r.Success, tt.status, err)
			}
			code = ta.run(ctx, "results", id)
			if head, _, _ := strings.Cut(ta.out.String(), "\n"); code != tt.code || !strings.Contains(head, tt.status) {
				t.Errorf("results: exit %d, want %d:\n%s", code, tt.code, ta.out)
			}
			if code := ta.run(ctx, "wait", id); code != tt.code || strings.TrimSpace(ta.out.String()) != tt.status {
				t.Errorf("wait: exit %d, %q", code, ta.out)
			}
		})
	}
}

func TestSubmitGPURequests(t *testing.T) {
	tests := []struct {
		args  []string
		want  engine.GPURequest
		label string
	}{
		{args: nil, want: engine.GPURequest{IDs: []string{"0"}}, label: "1"},
		{args: []string{"--gpus", "2"}, want: engine.GPURequest{IDs: []string{"0", "1"}}, label: "2"},
		{args: []string{"--gpus", "0,2"}, want: engine.GPURequest{IDs: []string{"0", "2"}}, label: "0,2"},
		{args: []string{"--gpus", "all"}, want: engine.GPURequest{IDs: []string{"0", "1", "2", "3"}}, label: "all"},
		{args: []string{"--gpus", "device=3"}, want: engine.GPURequest{IDs: []string{"3"}}, label: "3"},
	}
	for _, tt := range tests {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		ta.fake.Behave = succeed(t)
		// Requests are assigned GPUs of the host's inventory: here the
		// test inventory of 4 (docs/hosts.md).
		ta.setenv(map[string]string{gpus.FakeEnv: "4"})
		if code := ta.run(context.Background(), append(append([]string{"submit", "-d"}, tt.args...), dir)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, ta.err)
		}
		var c *enginetest.Container
		for _, fc := range ta.fake.Containers {
			if fc.C.Labels[gpus.LabelReservation] == "" {
				c = fc
			}
		}
		if c.Spec.GPUs == nil || c.Spec.GPUs.Count != tt.want.Count || strings.Join(c.Spec.GPUs.IDs, ",") != strings.Join(tt.want.IDs, ",") {
			t.Errorf("%v: GPUs = %+v, want %+v", tt.args, c.Spec.GPUs, tt.want)
		}
		if c.C.Labels[contract.LabelGPUs] != tt.label || c.C.Labels[gpus.LabelGPUIDs] != strings.Join(tt.want.IDs, ",") || c.C.Labels[contract.LabelMode] != "gpu" {
			t.Errorf("%v: labels %v", tt.args, c.C.Labels)
		}
	}
}

// An attached job's container goes once its results and logs are in the
// store, as with docker run --rm; --keep keeps it, and a detached job's
// stays for xrun wait to fetch from.
func TestAttachedRemovesContainer(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	left, standbys := jobContainers(ta.fake)
	if len(list) != 1 || left != 0 || len(ta.fake.Removed) != 1 || standbys != 1 {
		t.Fatalf("%d jobs, containers left %d, removed %d, standbys %d: want the job's container removed and a standby for the next", len(list), left, len(ta.fake.Removed), standbys)
	}
	for _, f := range []string{store.ResultsFile, store.LogsFile} {
		if !st.Has(list[0].ID, f) {
			t.Errorf("store lacks %s", f)
		}
	}
	if code := ta.run(ctx, "logs", list[0].ID); code != 0 || !strings.Contains(ta.out.String(), "runner says hi") {
		t.Errorf("logs after the container went: exit %d, %q %s", code, ta.out, ta.err)
	}
	// The runner's progress records read as progress, not as records.
	if code := ta.run(ctx, "logs", list[0].ID); code != 0 || strings.Contains(ta.out.String(), "case=1/2") ||
		!strings.Contains(ta.out.String(), "10:00:01 progress: case 1/2") || strings.Count(ta.out.String(), "progress:") != 2 {
		t.Errorf("logs of progress records: exit %d\n%s", code, ta.out)
	}
	// The saved log has the runner's times alone: --timestamps says so.
	if code := ta.run(ctx, "logs", "-t", list[0].ID); code != 0 || !strings.Contains(ta.out.String(), "runner says hi") ||
		!strings.Contains(ta.err.String(), "is gone from its host") || !strings.Contains(ta.err.String(), "--timestamps adds none") {
		t.Errorf("logs -t after the container went: exit %d, %q %s", code, ta.out, ta.err)
	}
	code := ta.run(ctx, "submit", "--cpu", "--keep", dir)
	if left, standbys := jobContainers(ta.fake); code != 0 || left != 1 || standbys != 1 {
		t.Errorf("--keep: exit %d, %d job containers and %d standbys, want 1 and 1", code, left, standbys)
	}
}

// The standby of an experiment whose code uses torch.compile has its
// zygote import torch._dynamo too; another's imports numpy, torch and
// triton alone.
func TestStandbyPreloadsTheCompileStack(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
	preload := func() []string {
		var vals []string
		for _, fc := range ta.fake.Containers {
			if contract.WaitingStandby(fc.C.Name, fc.C.Labels) {
				for _, kv := range fc.Spec.Env {
					if v, ok := strings.CutPrefix(kv, contract.EnvZygotePreload+"="); ok {
						vals = append(vals, v)
					}
				}
			}
		}
		return vals
	}
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	if got := preload(); len(got) != 0 {
		t.Errorf("standby of an experiment without torch.compile preloads %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "compiled.py"), []byte("import torch\nf = torch.compile(lambda x: x)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	if got := preload(); len(got) != 1 || got[0] != strings.Join(spec.CompileStack, ",") {
		t.Errorf("standby of a torch.compile experiment preloads %v, want %v", got, spec.CompileStack)
	}
}

// jobContainers counts f's job containers and its waiting standbys.
func jobContainers(f *enginetest.Engine) (running, standbys int) {
	for _, c := range f.Containers {
		if contract.WaitingStandby(c.C.Name, c.C.Labels) {
			standbys++
		} else {
			running++
		}
	}
	return running, standbys
}

// --quiet: stdout is the job id (-d) or "ID STATUS", stderr empty.
func TestSubmitQuiet(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
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
	if code := ta.run(ctx, "submit", "-q", "--json", "--cpu", dir); code != ExitUsage {
		t.Errorf("-q --json: exit %d", code)
	}
}

// A base pulled for the build is a line saying so, where the pull stands
// every few seconds (not a line per message of the daemon's), and how
// long it took.
func TestBasePullProgress(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	delete(ta.fake.ImageIDs, "test/base:1")
	ta.fake.PullSteps = []engine.PullProgress{
		{Layers: 3, Got: 1 << 20, Size: 300 << 20},
		{Layers: 3, Done: 1, Got: 100 << 20, Size: 300 << 20},
		{Layers: 3, Done: 3, Got: 300 << 20, Size: 300 << 20},
	}
	ta.fake.Behave = succeed(t)
	if code := ta.run(context.Background(), "submit", "--cpu", "--no-standby", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	got := ta.err.String()
	for _, want := range []string{
		"base image test/base:1 is not on unix:///fake.sock: pulling it\n",
		"pulling test/base:1: 0 of 3 layers, 1.049MB of 314.6MB\n",
		"pulled test/base:1 in 0s (3 of 3 layers, 314.6MB of 314.6MB)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "pulling test/base:1:"); n != 1 {
		t.Errorf("%d progress lines in well under 10 s, want 1:\n%s", n, got)
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
		if code != ExitInfra || ta.err.String() != want {
			t.Errorf("exit %d: got\n%s\nwant\n%s", code, ta.err, want)
		}
		// Only the empty probe image is built, and the base not looked at.
		if len(ta.fake.BuildFiles) != 1 || !strings.HasPrefix(string(ta.fake.BuildFiles[0]["Dockerfile"]), "FROM scratch\n") || len(ta.fake.Containers) != 0 {
			t.Error("built or left a container before failing")
		}

	})
	t.Run("--gpus 0", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		code := ta.run(context.Background(), "submit", "--gpus", "0", dir)
		if code != ExitUsage || !strings.Contains(ta.err.String(), "--gpus 0 asks for no GPU: pass --cpu to run without one, or --gpus device=0 for GPU 0") {
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
		if code != ExitInfra || !strings.Contains(msg, "base image xrun/cpu-base:bookworm is not on host unix:///fake.sock and could not be pulled") || !strings.Contains(msg, "make-cpu-base.sh") {
			t.Errorf("exit %d: %s", code, msg)
		}
	})
	t.Run("misspelt base", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		ta.fake.PullErr = errors.New("pull access denied for no-such-base, repository does not exist")
		code := ta.run(context.Background(), "submit", "--cpu", "--base", "no-such-base", dir)
		msg := ta.err.String()
		if code != ExitInfra || !strings.Contains(msg, "no-such-base is not one of xrun's bases (cpu, ") || strings.Contains(msg, "submit with --cpu") {
			t.Errorf("exit %d: %s", code, msg)
		}
	})
	t.Run("bad spec", func(t *testing.T) {
		ta := newTestApp(t)
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte("name: x\nbogus: 1\n"), 0o644)
		code := ta.run(context.Background(), "submit", "--cpu", dir)
		if code != ExitUsage || !strings.Contains(ta.err.String(), "xrun.yaml:2: bogus: unknown key") {
			t.Errorf("exit %d: %s", code, ta.err)
		}
	})
	t.Run("missing --env", func(t *testing.T) {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		code := ta.run(context.Background(), "submit", "--cpu", "--env", "NOT_SET_ANYWHERE", dir)
		if code != ExitUsage || !strings.Contains(ta.err.String(), "NOT_SET_ANYWHERE") {
			t.Errorf("exit %d: %s", code, ta.err)
		}
	})
}

func TestSubmitTimeoutAttached(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	start := time.Now()
	code := ta.run(context.Background(), "submit", "--cpu", "--timeout", "300ms", dir)
	if code != ExitTimeout || !strings.Contains(ta.err.String(), "timed out after 300ms") {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	if time.Since(start) > 5*time.Second || ta.fake.Stops == 0 {
		t.Errorf("took %v, %d stops", time.Since(start), ta.fake.Stops)
	}
}

func TestSubmitInterruptRemovesContainer(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			running, _ := ta.fake.List(context.Background(), nil, false)
			if len(running) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	code := ta.run(ctx, "submit", "--cpu", dir)
	if code != ExitInterrupted {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	if len(ta.fake.Containers) != 0 {
		t.Errorf("%d containers left", len(ta.fake.Containers))
	}
	if !strings.Contains(ta.err.String(), "stopped and removed container xrun-my-kernel-") {
		t.Errorf("stderr: %s", ta.err)
	}
}

// submitRunning submits a detached CPU job that runs until it is stopped,
// logging three lines, and returns what submit printed: the job id.
func submitRunning(t *testing.T, ta *testApp) string {
	t.Helper()
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		// A running runner's results.json says running until it ends.
		return enginetest.Run{Hang: true, Logs: "line1\nline2\nline3\n", Files: map[string]string{
			"results.json": resultsJSON(t, "my-kernel", result.StatusRunning)}}
	}
	if code := ta.run(context.Background(), "submit", "-d", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	return strings.TrimSpace(ta.out.String())
}

func TestDetachedJobLifecycle(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	id := submitRunning(t, ta)
	if len(id) != 12 || strings.Contains(id, "\n") {
		t.Fatalf("detached stdout %q, want the job id alone", ta.out)
	}
	if code := ta.run(ctx, "ps", "--json"); code != 0 {
		t.Fatal(ta.err)
	}
	var ps []store.Job
	if err := json.Unmarshal(ta.out.Bytes(), &ps); err != nil || len(ps) != 1 || ps[0].ID != id || ps[0].Status != "running" {
		t.Errorf("ps = %s (%v)", ta.out, err)
	}
	if code := ta.run(ctx, "logs", "--tail", "2", id[:4]); code != 0 {
		t.Fatal(ta.err)
	}
	if !strings.Contains(ta.out.String(), "line1") { // the fake ignores --tail on a live container
		t.Errorf("logs: %q", ta.out)
	}
	if code := ta.run(ctx, "rm", id); code != ExitUsage || !strings.Contains(ta.err.String(), "cancel it first (xrun cancel "+id+") or use --force") {
		t.Errorf("rm of a running job: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "cancel", id); code != 0 {
		t.Fatalf("cancel: %s", ta.err)
	}
	if code := ta.run(ctx, "status", "--json", id); code != 0 {
		t.Fatal(ta.err)
	}
	var s struct {
		Status    string `json:"status"`
		Container *struct {
			State string `json:"state"`
		} `json:"container"`
	}
	json.Unmarshal(ta.out.Bytes(), &s)
	if s.Status != result.StatusCancelled {
		t.Errorf("status after cancel: %s", ta.out)
	}
	if code := ta.run(ctx, "wait", id); code != ExitInterrupted || strings.TrimSpace(ta.out.String()) != "cancelled" {
		t.Errorf("wait: exit %d, %q", code, ta.out)
	}
	if code := ta.run(ctx, "results", "--json", id); code != ExitInterrupted {
		t.Fatalf("results of a cancelled job: exit %d: %s", code, ta.err)
	}
	if _, err := result.Decode(ta.out.Bytes()); err != nil {
		t.Errorf("results --json: %v: %s", err, ta.out)
	}
	if code := ta.run(ctx, "rm", "--keep-record", id); code != 0 {
		t.Fatal(ta.err)
	}
	// The container is gone; the store still answers.
	if code := ta.run(ctx, "logs", "--tail", "1", id); code != 0 || ta.out.String() != "line3\n" {
		t.Errorf("logs from the store: exit %d, %q, %s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "results", "--markdown", id); code != ExitInterrupted || ta.out.Len() == 0 {
		t.Errorf("results from the store: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "rm", id); code != 0 {
		t.Fatal(ta.err)
	}
	if code := ta.run(ctx, "status", id); code != ExitUsage || !strings.Contains(ta.err.String(), "the store holds no jobs") {
		t.Errorf("status after rm: exit %d, %s", code, ta.err)
	}
}

func TestDetachedTimeoutEnforcedByWait(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-d", "--cpu", "--timeout", "200ms", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	if code := ta.run(ctx, "wait", id); code != ExitTimeout || strings.TrimSpace(ta.out.String()) != "timeout" {
		t.Errorf("wait: exit %d, %q, %s", code, ta.out, ta.err)
	}
}

func TestBadJobID(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
	ta.run(context.Background(), "submit", "-d", "--cpu", dir)
	for _, cmd := range []string{"logs", "status", "wait", "cancel", "rm", "results"} {
		code := ta.run(context.Background(), cmd, "zzzz")
		if code != ExitUsage || !strings.Contains(ta.err.String(), `no job "zzzz": known jobs are`) {
			t.Errorf("%s zzzz: exit %d, %s", cmd, code, ta.err)
		}
	}
}

// Exit code 1 is the criteria's alone: xrun's own failures take the
// runner's codes for bad usage (3) and infrastructure (4).
func TestExitCodesOfXrunItself(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	down := func(context.Context, connect.Selection) (engine.Engine, error) {
		return nil, errors.New("cannot reach the Docker daemon at unix:///nowhere.sock: connection refused")
	}
	tests := []struct {
		name   string
		args   []string
		down   bool
		code   int
		errHas string
	}{
		{"unknown flag", []string{"ps", "--bogus"}, false, ExitUsage, "xrun: unknown flag --bogus (see xrun ps --help)"},
		{"bad duration", []string{"submit", "--timeout", "ten", "x"}, false, ExitUsage, `xrun: --timeout "ten": not a duration (30s, 10m, 1h30m) (see xrun submit --help)`},
		{"bad duration of another command", []string{"prune", "--older-than", "5x"}, false, ExitUsage, `--older-than "5x": not a duration`},
		{"prune a cluster's caches", []string{"prune", "--k8s", "--caches"}, false, ExitUsage, "--caches does not apply with --k8s: a cluster's compile caches are directories of its nodes (/var/lib/xrun/cache)"},
		{"unknown global flag", []string{"--bogus"}, false, ExitUsage, "(see xrun --help)"},
		{"a cluster without a registry, before any build", []string{"submit", "--k8s", dir}, true, ExitUsage, "no registry for the cluster to pull the job's image from: pass --registry"},
		{"slurm options without --slurm", []string{"submit", "--partition", "gpu", dir}, false, ExitUsage, "go with --slurm"},
		{"slurm with --root", []string{"submit", "--slurm", "--root", dir}, false, ExitUsage, "--root does not apply with --slurm"},
		{"missing argument", []string{"submit"}, false, ExitUsage, "submit takes one experiment directory"},
		{"no such job", []string{"status", "0000deadbeef"}, false, ExitUsage, `no job "0000deadbeef"`},
		{"two job ids", []string{"logs", "3fa1", "9c2e"}, false, ExitUsage, "logs takes one job id (or the start of one), got 2 arguments"},
		{"cpu with gpus", []string{"submit", "--cpu", "--gpus", "1", dir}, false, ExitUsage, "xrun: --cpu runs without GPUs: leave out --gpus 1 (or --cpu)"},
		{"no daemon", []string{"submit", "--cpu", dir}, true, ExitInfra, "cannot reach the Docker daemon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestApp(t) // an App keeps its connections
			if tt.down {
				ta.Connect = down
			}
			code := ta.run(context.Background(), tt.args...)
			if code != tt.code || !strings.Contains(ta.err.String(), tt.errHas) {
				t.Errorf("xrun %v: exit %d, want %d; stderr %q lacks %q", tt.args, code, tt.code, ta.err, tt.errHas)
			}
		})
	}
}

// A truncated record is listed by ps as unreadable, naming the file;
// other commands say so, and rm -f removes it and the job's container.
func TestTruncatedRecord(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-d", "--cpu", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	st, _ := ta.Store()
	path := filepath.Join(st.Dir(id), store.RecordFile)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)/2], 0o644)

	if code := ta.run(ctx, "ps"); code != 0 || !strings.Contains(ta.out.String(), id) || !strings.Contains(ta.out.String(), store.StatusUnreadable) || !strings.Contains(ta.err.String(), path) {
		t.Errorf("ps: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "status", id); code != ExitInfra || !strings.Contains(ta.err.String(), path) {
		t.Errorf("status: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "rm", id); code == 0 || !strings.Contains(ta.err.String(), "xrun rm -f "+id) {
		t.Errorf("rm without -f: exit %d, %s", code, ta.err)
	}
	if cs, _ := ta.fake.List(ctx, map[string]string{contract.LabelJob: id}, true); len(cs) != 1 {
		t.Fatalf("the job has %d containers before rm -f", len(cs))
	}
	if code := ta.run(ctx, "rm", "-f", id); code != 0 || strings.TrimSpace(ta.out.String()) != id {
		t.Fatalf("rm -f: exit %d, %s", code, ta.err)
	}
	if _, err := os.Stat(st.Dir(id)); !os.IsNotExist(err) {
		t.Errorf("the job's directory is still there: %v", err)
	}
	if cs, _ := ta.fake.List(ctx, map[string]string{contract.LabelJob: id}, true); len(cs) != 0 {
		t.Errorf("rm -f left the job's container: %+v", cs)
	}
}

// ps with a host that cannot be reached fails with that sentence rather
// than listing nothing.
func TestPsUnreachableDaemon(t *testing.T) {
	for _, args := range [][]string{{"ps"}, {"ps", "--all", "--json"}, {"ps", "--host", "lab", "--host", "down"}} {
		ta := newTestApp(t)
		ta.Connect = func(_ context.Context, sel connect.Selection) (engine.Engine, error) {
			if sel.Host == "lab" {
				return ta.fake, nil
			}
			return nil, errors.New("cannot reach the Docker daemon at unix:///nowhere.sock: connection refused")
		}
		code := ta.run(context.Background(), args...)
		if code != ExitInfra || ta.out.Len() != 0 || ta.err.String() != "xrun: cannot reach the Docker daemon at unix:///nowhere.sock: connection refused\n" {
			t.Errorf("xrun %v: exit %d, stdout %q, stderr %q", args, code, ta.out, ta.err)
		}
	}
}

// Ctrl-C between the container's creation and its start cancels the job;
// it did not fail.
func TestAttachedInterruptedBeforeStart(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := ta.run(ctx, "submit", "--cpu", dir); code != ExitInterrupted || !strings.Contains(ta.err.String(), "interrupted before it started") {
		t.Errorf("exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	if len(list) != 1 || list[0].Status != result.StatusCancelled {
		t.Errorf("record: %+v", list)
	}
	if cs, _ := ta.fake.List(context.Background(), nil, true); len(cs) != 0 {
		t.Errorf("containers left: %+v", cs)
	}
}

func TestSubmitRunsUnprivileged(t *testing.T) {
	for _, root := range []bool{false, true} {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		ta.fake.DaemonInfo.MemoryBytes = 64 << 30
		ta.fake.Behave = succeed(t)
		args := []string{"submit", "--cpu", "--network", "none"}
		if root {
			args = append(args, "--root")
		}
		if code := ta.run(context.Background(), append(args, dir)...); code != 0 {
			t.Fatalf("root %v: exit %d: %s", root, code, ta.err)
		}
		var s engine.ContainerSpec
		for _, c := range ta.fake.Made() {
			s = c.Spec
		}
		if s.PidsLimit != build.DefaultPidsLimit || s.MemoryBytes != 48<<30 || !s.NetworkDisabled {
			t.Errorf("root %v: pids %d, memory %d, network disabled %v", root, s.PidsLimit, s.MemoryBytes, s.NetworkDisabled)
		}
		// Unprivileged: the runner starts as root with the capabilities to
		// run the experiment as the job user, and no others.
		if unpriv := s.User == "0:0" && s.Unprivileged && slices.Contains(s.Env, "USER=xrun") &&
			slices.Contains(s.Env, contract.EnvWorkerUser+"="+contract.JobUser) && slices.Equal(s.CapAdd, contract.RunnerCaps); unpriv == root {
			t.Errorf("root %v: user %q, unprivileged %v, env %v, CapAdd %v", root, s.User, s.Unprivileged, s.Env, s.CapAdd)
		}
		if root && len(s.CapAdd) != 0 {
			t.Errorf("root %v without --profile: CapAdd %v", root, s.CapAdd)
		}
	}
	ta := newTestApp(t)
	if code := ta.run(context.Background(), "submit", "--network", "host", experiment(t, ta)); code != ExitUsage || !strings.Contains(ta.err.String(), "give default or none") {
		t.Errorf("--network host: exit %d: %s", code, ta.err)
	}
}

// --profile reaches the runner as XRUN_PROFILE; a request the runner would
// refuse is refused before anything is built.
func TestSubmitProfile(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
	ta.setenv(map[string]string{gpus.FakeEnv: "1"})
	if code := ta.run(context.Background(), "submit", "-d", "--profile", "ncu:impl=fast;case=0", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	found := false
	for _, fc := range ta.fake.Containers {
		for _, kv := range fc.Spec.Env {
			found = found || kv == contract.EnvProfile+"=ncu:impl=fast;case=0"
		}
	}
	if !found {
		t.Error("the job's environment lacks XRUN_PROFILE")
	}
	// Root gets the capability Nsight Compute needs on hosts that let only
	// administrators read the counters; the unprivileged job user gets none.
	for _, root := range []bool{false, true} {
		ta := newTestApp(t)
		ta.fake.Behave = succeed(t)
		ta.setenv(map[string]string{gpus.FakeEnv: "1"})
		args := []string{"submit", "-d", "--profile", "ncu"}
		if root {
			args = append(args, "--root")
		}
		if code := ta.run(context.Background(), append(args, experiment(t, ta))...); code != 0 {
			t.Fatalf("root %v: exit %d: %s", root, code, ta.err)
		}
		for _, fc := range ta.fake.Containers {
			if fc.Spec.Labels[contract.LabelExperiment] == "" {
				continue // a GPU reservation's container
			}
			if want := map[bool][]string{true: {"SYS_ADMIN"}, false: contract.RunnerCaps}[root]; !slices.Equal(fc.Spec.CapAdd, want) {
				t.Errorf("root %v: CapAdd %v, want %v", root, fc.Spec.CapAdd, want)
			}
		}
	}
	builds := len(ta.fake.BuildFiles)
	for _, args := range [][]string{{"--profile", "nsys"}, {"--profile", "ncu", "--cpu"}} {
		if code := ta.run(context.Background(), append(append([]string{"submit", "-d"}, args...), dir)...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
	if len(ta.fake.BuildFiles) != builds {
		t.Error("a refused --profile still built an image")
	}
}

// A job that ps lists from the host but another store submitted can be
// followed by id from this store: status, logs, cancel, wait and results
// find it on the host and record it here.
func TestJobOfAnotherStore(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	id := submitRunning(t, ta)

	other := newTestApp(t)
	other.Connect = ta.Connect // the same host, another store
	if code := other.run(ctx, "status", "--json", id[:6]); code != 0 {
		t.Fatalf("status from another store: exit %d, %s", code, other.err)
	}
	var s job.Status
	if err := json.Unmarshal(other.out.Bytes(), &s); err != nil || s.ID != id || s.Status != store.StatusRunning || s.Container == nil {
		t.Errorf("status = %s (%v)", other.out, err)
	}
	if st, _ := other.Store(); !st.Has(id, store.RecordFile) {
		t.Errorf("the job found on the host has no record in this store")
	}
	if !strings.Contains(other.err.String(), "is not in this job store: found on unix:///fake.sock, recorded here") {
		t.Errorf("adopting a job says nothing: %s", other.err)
	}
	if code := other.run(ctx, "logs", id); code != 0 || !strings.Contains(other.out.String(), "line2") {
		t.Errorf("logs: exit %d, %q, %s", code, other.out, other.err)
	}
	if code := other.run(ctx, "cancel", id); code != 0 {
		t.Fatalf("cancel: exit %d, %s", code, other.err)
	}
	if code := other.run(ctx, "wait", id); code != ExitInterrupted || strings.TrimSpace(other.out.String()) != "cancelled" {
		t.Errorf("wait: exit %d, %q, %s", code, other.out, other.err)
	}
	if code := other.run(ctx, "results", "--json", id); code != ExitInterrupted {
		t.Errorf("results: exit %d, %s", code, other.err)
	}
	if _, err := result.Decode(other.out.Bytes()); err != nil {
		t.Errorf("results --json: %v: %s", err, other.out)
	}
	// Neither here nor on the host: the store's sentence, and where else it looked.
	if code := other.run(ctx, "status", "0000deadbeef"); code != ExitUsage || !strings.Contains(other.err.String(), `no job "0000deadbeef"`) ||
		!strings.Contains(other.err.String(), "; not on ") || !strings.Contains(other.err.String(), " either") ||
		!strings.Contains(other.err.String(), "a job on a Kubernetes cluster: add --k8s") {
		t.Errorf("status of an unknown job: exit %d, %s", code, other.err)
	}
	// A host that cannot be asked: the named one is an error of its own,
	// the default one leaves the store's answer.
	down := newTestApp(t)
	down.Connect = func(context.Context, connect.Selection) (engine.Engine, error) {
		return nil, errors.New("cannot reach the Docker daemon at ssh://lab: connection refused")
	}
	if code := down.run(ctx, "logs", "--host", "ssh://lab", "0000deadbeef"); code != ExitInfra || !strings.Contains(down.err.String(), "cannot reach") {
		t.Errorf("logs --host down: exit %d, %s", code, down.err)
	}
	if code := down.run(ctx, "logs", "0000deadbeef"); code != ExitUsage || !strings.Contains(down.err.String(), "the default host could not be asked") {
		t.Errorf("logs, default host down: exit %d, %s", code, down.err)
	}
}

// The runner's progress lines reach a stderr that is no terminal as plain
// lines, one per case and phase, with no control sequences; the log in
// the store keeps them as the runner wrote them.
func TestSubmitShowsProgressAsPlainLines(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	log := "22:00:00 case n=1\n" +
		"22:00:00 progress case=1/2 phase=check elapsed=1.0 case_start=1.0 done=0.0\n" +
		"22:00:01 progress case=1/2 phase=time impl=ref elapsed=2.0 case_start=1.0 done=0.0\n" +
		"22:00:01 progress case=1/2 phase=time impl=fast elapsed=2.5 case_start=1.0 done=0.0\n" +
		"22:00:02 case n=2\n" +
		"22:00:02 progress case=2/2 phase=check elapsed=5.0 case_start=5.0 done=4.0\n"
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		return enginetest.Run{Logs: log, Files: map[string]string{
			"results.json": resultsJSON(t, "my-kernel", result.StatusSucceeded), "runner.log": log}}
	}
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	stderr := ta.err.String()
	for _, want := range []string{
		"22:00:00 progress: case 1/2, checking, 0:01 elapsed\n",
		"22:00:01 progress: case 1/2, timing ref, 0:02 elapsed\n",
		"22:00:02 progress: case 2/2, checking, 0:05 elapsed, about 0:04 left\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "progress case=") || strings.Contains(stderr, "timing fast") || strings.ContainsAny(stderr, "\r\x1b") {
		t.Errorf("stderr has raw, repeated or drawn progress:\n%q", stderr)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	data, err := os.ReadFile(st.Log(list[0].ID))
	if err != nil || !strings.Contains(string(data), "progress case=1/2 phase=time impl=fast") {
		t.Errorf("the stored log lost the progress lines (%v):\n%s", err, data)
	}
}

// classicBuild is what the daemon's classic builder prints for a small
// image: most of it says nothing to the person waiting.
var classicBuild = []string{
	"Step 1/3 : FROM test/base:1",
	" ---> 60e853390cda",
	"Step 2/3 : COPY xrun-runner /usr/local/bin/xrun-runner",
	" ---> Running in 6e5caf279e97",
	"Removing intermediate container 6e5caf279e97",
	" ---> c3d128fec0b3",
	"Step 3/3 : WORKDIR /xrun/exp",
	" ---> cb7f4c759989",
	"Successfully built cb7f4c759989",
}

// A build is a line per step on stderr; its full output is the job's
// build.log, and --verbose prints it as it comes.
func TestSubmitBuildIsALinePerStep(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		t.Run(fmt.Sprintf("verbose=%v", verbose), func(t *testing.T) {
			ta := newTestApp(t)
			dir := experiment(t, ta)
			ta.fake.Behave = succeed(t)
			ta.fake.BuildOutput = classicBuild
			args := []string{"submit", "--cpu", dir}
			if verbose {
				args = []string{"submit", "--cpu", "--verbose", dir}
			}
			if code := ta.run(context.Background(), args...); code != 0 {
				t.Fatalf("exit %d: %s", code, ta.err)
			}
			stderr := ta.err.String()
			if verbose {
				if !strings.Contains(stderr, strings.Join(classicBuild, "\n")) {
					t.Errorf("--verbose: the build's output is not on stderr:\n%s", stderr)
				}
			} else {
				for _, want := range []string{"build: step 1/3 FROM test/base:1\n", "build: step 2/3 COPY xrun-runner /usr/local/bin/xrun-runner\n", "build: step 3/3 WORKDIR /xrun/exp\n", "(3 steps; the full build log is the job's build.log"} {
					if !strings.Contains(stderr, want) {
						t.Errorf("stderr lacks %q:\n%s", want, stderr)
					}
				}
				for _, noise := range []string{"--->", "Removing intermediate", "Successfully built"} {
					if strings.Contains(stderr, noise) {
						t.Errorf("stderr has %q:\n%s", noise, stderr)
					}
				}
			}
			st, _ := ta.Store()
			list, _ := st.List()
			data, err := os.ReadFile(filepath.Join(st.Dir(list[0].ID), build.BuildLogFile))
			if err != nil || string(data) != strings.Join(classicBuild, "\n")+"\n" {
				t.Errorf("build.log (%v):\n%s", err, data)
			}
		})
	}
}

// A failed build prints its output in full, once, and names the step.
func TestSubmitFailedBuildPrintsItsOutput(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.BuildOutput = []string{"Step 1/2 : FROM test/base:1", " ---> 60e853390cda", "Step 2/2 : RUN pip install nothing-here", "ERROR: No matching distribution found for nothing-here"}
	ta.fake.BuildErr = &engine.BuildError{Step: "Step 2/2 : RUN pip install nothing-here", Message: "exit 1",
		Last: []string{"Step 2/2 : RUN pip install nothing-here", "ERROR: No matching distribution found for nothing-here"}}
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code == 0 {
		t.Fatal("a failed build exited 0")
	}
	stderr := ta.err.String()
	if n := strings.Count(stderr, "ERROR: No matching distribution"); n != 1 {
		t.Errorf("the build's failing line is on stderr %d times, want 1:\n%s", n, stderr)
	}
	for _, want := range []string{" ---> 60e853390cda", `image build failed at "Step 2/2 : RUN pip install nothing-here": exit 1`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
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
	ta.fake.Behave = succeed(t)
	if code := ta.run(context.Background(), "submit", "--cpu", dir); code != ExitUsage {
		t.Fatalf("exit %d, want %d: %s", code, ExitUsage, ta.err)
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

// A job's error is said once on the terminal: in the streamed log, where
// the runner said it. The table and xrun's last line point to it; a
// table that goes to a file (stdout no terminal) keeps it.
func TestSubmitSaysAFailureOnce(t *testing.T) {
	const msg = "xrun.yaml:7: benchmark.implementations.loop: ops:saxpy_lop: module ops has no function saxpy_lop"
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			ta := newTestApp(t)
			var screen bytes.Buffer
			if terminal {
				// One screen: the status line and the streams land together.
				ta.Out, ta.Err, ta.OutTTY, ta.ErrTTY = &screen, &screen, &screen, &screen
			}
			dir := experiment(t, ta)
			var r result.Results
			json.Unmarshal([]byte(resultsJSON(t, "my-kernel", result.StatusFailed)), &r)
			r.Error = msg
			data, _ := json.Marshal(r)
			ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
				return enginetest.Run{Exit: 3, Logs: "22:39:20 error: " + msg + "\n", Files: map[string]string{"results.json": string(data)}}
			}
			if code := ta.run(context.Background(), "submit", "--cpu", dir); code != 3 {
				t.Fatalf("exit %d, want 3: %s%s", code, ta.err, screen.String())
			}
			if terminal {
				if n := strings.Count(screen.String(), "has no function saxpy_lop"); n != 1 {
					t.Errorf("the error is on the screen %d times, want 1:\n%s", n, screen.String())
				}
				if !strings.Contains(screen.String(), "error: in the log above") {
					t.Errorf("the table does not point to the log:\n%s", screen.String())
				}
				return
			}
			if n := strings.Count(ta.err.String(), "has no function saxpy_lop"); n != 1 {
				t.Errorf("the error is on stderr %d times, want 1:\n%s", n, ta.err)
			}
			if !strings.Contains(ta.err.String(), "what failed is above") {
				t.Errorf("xrun's line does not point to the log:\n%s", ta.err)
			}
			if !strings.Contains(ta.out.String(), "error: "+msg) {
				t.Errorf("the table on stdout (a file) lost the error:\n%s", ta.out)
			}
		})
	}
}

// Ctrl-C stops following a job's log, not the job: xrun says so and exits
// as an interrupted xrun does.
func TestLogsFollowInterrupted(t *testing.T) {
	ta := newTestApp(t)
	id := submitRunning(t, ta)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	code := ta.run(ctx, "logs", "-f", id)
	if code != ExitInterrupted || !strings.Contains(ta.err.String(), "stopped following; job "+id+" goes on") {
		t.Errorf("interrupted logs -f: exit %d, %s", code, ta.err)
	}
}

// xrun run --local of a GPU spec on a machine without a GPU is the user's
// choice to make: exit 3, naming xrun's own flag.
func TestRunLocalWithoutGPU(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi: the test needs a machine without a GPU (CI's has none)")
	}
	ta := newTestApp(t)
	dir := experiment(t, ta)
	code := ta.run(context.Background(), "run", "--local", "--out", t.TempDir(), dir)
	if code != ExitUsage || !strings.Contains(ta.err.String(), "but this machine has none") ||
		!strings.Contains(ta.err.String(), "pass --cpu to run the CPU sweep instead") || strings.Contains(ta.err.String(), "XRUN_MODE") {
		t.Errorf("exit %d, stderr:\n%s", code, ta.err)
	}
}

// wait says what it waits for and shows the job's progress on stderr, not
// its log; stdout keeps the job's status alone.
func TestWaitShowsProgress(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = succeed(t)
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "--cpu", "-d", dir); code != 0 {
		t.Fatalf("submit -d: exit %d: %s", code, ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	if code := ta.run(ctx, "wait", id); code != 0 || strings.TrimSpace(ta.out.String()) != "succeeded" {
		t.Fatalf("wait: exit %d, %q %s", code, ta.out, ta.err)
	}
	e := ta.err.String()
	if !strings.Contains(e, "waiting for job "+id) || !strings.Contains(e, "progress: case 1/2") || strings.Contains(e, "runner says hi") {
		t.Errorf("wait's stderr:\n%s", e)
	}
}

// ps --filter keeps the jobs every KEY=VALUE holds for, --format prints
// each through a template, and the table has each job's DURATION.
func TestPsFilterFormatDuration(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ctx := context.Background()
	ta.fake.Behave = succeed(t)
	if code := ta.run(ctx, "submit", "--cpu", "--no-standby", dir); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, ta.err)
	}
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Exit: 2} }
	if code := ta.run(ctx, "submit", "--cpu", "--no-standby", dir); code != ExitFailed {
		t.Fatalf("failing submit: exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	var failed string
	for _, j := range list {
		if j.Status == result.StatusFailed {
			failed = j.ID
		}
	}
	if code := ta.run(ctx, "ps", "-a", "-q", "--filter", "status=failed", "--filter", "experiment=my-kernel"); code != 0 || strings.TrimSpace(ta.out.String()) != failed {
		t.Errorf("--filter status=failed: exit %d, %q (want %s)", code, ta.out, failed)
	}
	if code := ta.run(ctx, "ps", "-a", "--format", "{{.ID}}:{{.Status}}", "--filter", "status=failed"); code != 0 || strings.TrimSpace(ta.out.String()) != failed+":failed" {
		t.Errorf("--format: exit %d, %q", code, ta.out)
	}
	if code := ta.run(ctx, "ps", "-a"); code != 0 || !strings.Contains(ta.out.String(), "DURATION") || strings.Count(ta.out.String(), "\n") != 3 {
		t.Errorf("ps -a: exit %d\n%s", code, ta.out)
	}
	for _, bad := range [][]string{{"--filter", "colour=red"}, {"--format", "{{.Nope"}} {
		if code := ta.run(ctx, append([]string{"ps", "-a"}, bad...)...); code != ExitUsage {
			t.Errorf("ps %v: exit %d, want %d: %s", bad, code, ExitUsage, ta.err)
		}
	}
}
