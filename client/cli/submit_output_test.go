package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/result"
)

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
	ta.fake.Behave = enginetest.Succeed("my-kernel")
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

// The runner's progress lines reach a stderr that is no terminal as plain
// lines, one per case and phase, with no control sequences. (The stored
// log keeps them as the runner wrote them: client/job.)
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
			"results.json": enginetest.ResultsJSON("my-kernel", result.StatusSucceeded), "runner.log": log}}
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

// A build is a line per step on stderr, and --verbose prints its output
// as it comes. (Its full output is the job's build.log: client/job.)
func TestSubmitBuildIsALinePerStep(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		t.Run(fmt.Sprintf("verbose=%v", verbose), func(t *testing.T) {
			ta := newTestApp(t)
			dir := experiment(t, ta)
			ta.fake.Behave = enginetest.Succeed("my-kernel")
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
			json.Unmarshal([]byte(enginetest.ResultsJSON("my-kernel", result.StatusFailed)), &r)
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
