package job

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// An attached CPU submit builds an image of the base and the runner alone
// (the code and the --env values stay out of it), records the job and its
// results, and runs a container with the labels, the environment and the
// code; a resubmit skips the build, a code edit too, and --no-cache
// rebuilds.
func TestSubmitAttachedCPU(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	if _, err := e.submit(ctx, t, dir, Args{CPU: true, Keep: true, Env: []string{"SECRET_TOKEN"}, Labels: []string{"team=kernels"}}); err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	if len(e.fake.BuildFiles) != 1 {
		t.Fatalf("%d builds, want 1", len(e.fake.BuildFiles))
	}
	b := e.fake.BuildFiles[0]
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
	if !strings.Contains(string(b["Dockerfile"]), `team="kernels"`) {
		t.Errorf("the image lacks the --label:\n%s", b["Dockerfile"])
	}
	list := e.jobs(t)
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
		if !e.m.Store.Has(j.ID, f) {
			t.Errorf("store lacks %s", f)
		}
	}
	// The attached job's log streams to Err.
	if !strings.Contains(e.err.String(), "runner says hi") {
		t.Errorf("Err lacks the job's logs: %s", e.err)
	}
	// The container (kept by Keep): labels, env at run time, no GPUs.
	c, err := e.fake.Inspect(ctx, j.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	spec := e.fake.Containers[j.ContainerID].Spec
	if spec.GPUs != nil {
		t.Error("a --cpu job asked for GPUs")
	}
	copied := strings.Join(e.fake.Containers[j.ContainerID].Copied, " ")
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

	// Unchanged: the build is skipped.
	again := Args{CPU: true, Labels: []string{"team=kernels"}}
	e.err.Reset()
	if _, err := e.submit(ctx, t, dir, again); err != nil {
		t.Fatalf("resubmit: %v: %s", err, e.err)
	}
	if len(e.fake.BuildFiles) != 1 || !strings.Contains(e.err.String(), "build skipped") {
		t.Errorf("resubmit built again (%d builds): %s", len(e.fake.BuildFiles), e.err)
	}
	// A code edit: no build, the new code in the new container.
	code, err := os.ReadFile(filepath.Join(dir, "matmul.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "matmul.py"), append(code, "\n# edit\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.submit(ctx, t, dir, again); err != nil {
		t.Fatalf("edited resubmit: %v: %s", err, e.err)
	}
	if len(e.fake.BuildFiles) != 1 {
		t.Errorf("a code edit built an image (%d builds)", len(e.fake.BuildFiles))
	}
	hashes := map[string]bool{}
	for _, c := range e.fake.Made() {
		hashes[c.C.Labels[contract.LabelCodeHash]] = true
	}
	if list := e.jobs(t); len(list) != 3 || len(hashes) != 2 {
		t.Errorf("%d jobs with %d code hashes; want 3 jobs, 2 hashes", len(list), len(hashes))
	}
	// NoCache rebuilds the image that is already there.
	e.err.Reset()
	if _, err := e.submit(ctx, t, dir, Args{CPU: true, NoCache: true, Labels: []string{"team=kernels"}}); err != nil {
		t.Fatalf("--no-cache resubmit: %v: %s", err, e.err)
	}
	if len(e.fake.BuildFiles) != 2 || !strings.Contains(e.err.String(), "rebuilding every layer (--no-cache)") {
		t.Errorf("--no-cache: %d builds: %s", len(e.fake.BuildFiles), e.err)
	}
}

// Where the default CPU base is missing and another CPU base of the table
// is on the host, the submit that builds says which it used; one that
// builds nothing says nothing of it.
func TestCPUBaseFallbackSaidOnce(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	editSpec(t, dir, "  base: test/base:1\n", "")
	e.fake.ImageIDs["xrun/cpu-torch:bookworm"] = "sha256:cafe"
	e.fake.Behave = enginetest.Succeed("my-kernel")
	const said = "is not on unix:///fake.sock: using xrun/cpu-torch:bookworm"
	a := Args{CPU: true, NoStandby: true}
	if _, err := e.submit(context.Background(), t, dir, a); err != nil || !strings.Contains(e.err.String(), said) {
		t.Fatalf("submit: %v, Err:\n%s\nwant %q", err, e.err, said)
	}
	if b := e.fake.BuildFiles[0]["Dockerfile"]; !strings.Contains(string(b), "FROM xrun/cpu-torch:bookworm") {
		t.Errorf("Dockerfile:\n%s", b)
	}
	e.err.Reset()
	if _, err := e.submit(context.Background(), t, dir, a); err != nil || strings.Contains(e.err.String(), said) || !strings.Contains(e.err.String(), "build skipped") {
		t.Errorf("resubmit: %v, Err:\n%s\nwant the build skipped and no word of the base", err, e.err)
	}
}

// A spec that asks for no GPU (resources.gpus: 0) runs as --cpu does, with
// no GPU runtime asked of the host.
func TestSpecWithoutGPUsIsACPUJob(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	editSpec(t, dir, "gpus: 1 ", "gpus: 0 ")
	e.fake.Behave = enginetest.Succeed("my-kernel")
	j, err := e.submit(context.Background(), t, dir, Args{})
	if err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	if j.Mode != "cpu" || j.GPUs != "0" {
		t.Errorf("job %+v: want a CPU job", j)
	}
	cpu := false
	for _, c := range e.fake.Made() {
		cpu = cpu || slices.Contains(c.Spec.Env, contract.EnvMode+"=cpu") && c.Spec.GPUs == nil
	}
	if !cpu {
		t.Error("no container of the job ran in CPU mode without GPUs")
	}
}

// The build's full output is the job's build.log, whether or not it was
// printed as it came (Verbose).
func TestSubmitKeepsTheBuildLog(t *testing.T) {
	output := []string{
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
	for _, verbose := range []bool{false, true} {
		t.Run(fmt.Sprintf("verbose=%v", verbose), func(t *testing.T) {
			e := newSubmitEnv(t)
			dir := experiment(t)
			e.fake.Behave = enginetest.Succeed("my-kernel")
			e.fake.BuildOutput = output
			j, err := e.submit(context.Background(), t, dir, Args{CPU: true, Verbose: verbose})
			if err != nil {
				t.Fatalf("submit: %v: %s", err, e.err)
			}
			data, err := os.ReadFile(filepath.Join(e.m.Store.Dir(j.ID), build.BuildLogFile))
			if err != nil || string(data) != strings.Join(output, "\n")+"\n" {
				t.Errorf("build.log (%v):\n%s", err, data)
			}
		})
	}
}

// The stored log keeps the runner's progress records as it wrote them,
// whatever the screen made of them.
func TestSubmitStoresTheLogAsWritten(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	log := "22:00:00 case n=1\n" +
		"22:00:00 progress case=1/2 phase=check elapsed=1.0 case_start=1.0 done=0.0\n" +
		"22:00:01 progress case=1/2 phase=time impl=ref elapsed=2.0 case_start=1.0 done=0.0\n" +
		"22:00:01 progress case=1/2 phase=time impl=fast elapsed=2.5 case_start=1.0 done=0.0\n"
	e.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		return enginetest.Run{Logs: log, Files: map[string]string{
			"results.json": enginetest.ResultsJSON("my-kernel", result.StatusSucceeded), "runner.log": log}}
	}
	j, err := e.submit(context.Background(), t, dir, Args{CPU: true})
	if err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	data, err := os.ReadFile(e.m.Store.Log(j.ID))
	if err != nil || !strings.Contains(string(data), "progress case=1/2 phase=time impl=fast") {
		t.Errorf("the stored log lost the progress lines (%v):\n%s", err, data)
	}
}

// A GPU job on a host without the NVIDIA runtime is refused once the
// empty probe image is built: the base is not looked at (nor pulled, when
// it is missing) and no container is made.
func TestSubmitWithoutNvidiaRuntime(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.DaemonInfo.NvidiaRuntime = false
	delete(e.fake.ImageIDs, "test/base:1")
	e.fake.PullErr = fmt.Errorf("pull access denied for test/base")
	j, err := e.submit(context.Background(), t, dir, Args{})
	if err == nil || j != nil || !strings.Contains(err.Error(), "has no NVIDIA GPU runtime for this GPU job") {
		t.Fatalf("submit: job %v, error %v", j, err)
	}
	if len(e.fake.BuildFiles) != 1 || !strings.HasPrefix(string(e.fake.BuildFiles[0]["Dockerfile"]), "FROM scratch\n") || len(e.fake.Containers) != 0 {
		t.Error("built or left a container before failing")
	}
	if len(e.jobs(t)) != 0 {
		t.Error("recorded a job that was refused before it was made")
	}
}
