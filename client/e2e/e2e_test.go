//go:build integration

// Package e2e drives the real xrun binary against the real Docker daemon
// of this machine: build, attached and detached submits, logs, wait,
// results, cancel, rm, Ctrl-C, and the failure paths. Every container and
// image the suite makes carries the label dev.xrun.test=e2e and is removed
// at the end. Without a daemon the suite is skipped, except under CI=true
// where that is a failure.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// Base is the CPU base the suite builds on (images/make-cpu-base.sh).
const Base = "xrun/cpu-base:bookworm"

const testLabel = "dev.xrun.test"

// runLabel is this run's value of testLabel (XRUN_E2E_LABEL, default e2e):
// suites that share a daemon each clean up their own containers and images
// alone. labelArg is submit's --label for it.
var (
	runLabel = orDefault(os.Getenv("XRUN_E2E_LABEL"), "e2e")
	labelArg = testLabel + "=" + runLabel
)

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

var (
	xrunBin string // the binary under test
	dataDir string // its XDG_DATA_HOME
	repo    string // the repository root
	eng     engine.Engine
)

func TestMain(m *testing.M) {
	os.Exit(mainE2E(m))
}

func mainE2E(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "e2e: -short: skipping the end-to-end suite")
		return 0
	}
	fail := func(format string, args ...any) int { return testenv.Unavailable("e2e", format, args...) }
	d, err := xruntest.Connect()
	if err != nil {
		return fail("%v", err)
	}
	eng = d
	defer d.Close()
	repo = xruntest.Repo()
	if code := xruntest.EnsureBase(eng, repo, Base, "e2e"); code >= 0 {
		return code
	}
	tmp, err := os.MkdirTemp("", "xrun-e2e-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	xrunBin = filepath.Join(tmp, "xrun")
	x.Bin = xrunBin
	dataDir = filepath.Join(tmp, "data")
	if err := xruntest.Build(repo, xrunBin); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v", err)
		return 1
	}
	for _, id := range dangling() {
		danglingAtStart[id] = true
	}
	defer cleanup()
	return m.Run()
}

// cleanup removes every container and image labelled by the suite.
func cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, _ := eng.List(ctx, map[string]string{testLabel: runLabel}, true)
	for _, c := range cs {
		eng.Remove(ctx, c.ID, true)
	}
	ims, _ := eng.Images(ctx, map[string]string{testLabel: runLabel})
	for _, im := range ims {
		eng.RemoveImage(ctx, im.ID)
	}
	// The fixtures' compile-cache volumes (their experiments are e2e-*);
	// one a container still uses stays.
	vols, _ := eng.Volumes(ctx, map[string]string{contract.LabelCache: ""})
	for _, v := range vols {
		if strings.HasPrefix(v.Labels[contract.LabelExperiment], "e2e-") {
			eng.RemoveVolume(ctx, v.Name)
		}
	}
	// The layers the fixtures share below their labels (ENV, runner,
	// WORKDIR) are left untagged once their last child is gone.
	// Not forced: an image another user's container still uses stays.
	for _, id := range newDangling() {
		exec.CommandContext(ctx, "docker", "rmi", id).Run()
	}
}

// danglingAtStart are the untagged leaf images present before the suite.
var danglingAtStart = map[string]bool{}

func dangling() []string {
	out, err := exec.Command("docker", "images", "-q", "--no-trunc", "--filter", "dangling=true").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

func newDangling() []string {
	var ids []string
	for _, id := range dangling() {
		if !danglingAtStart[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

type res = xruntest.Result

var expect = xruntest.Expect

// x is the binary under test, with the store dataDir.
var x = &xruntest.Xrun{Env: env}

func env() []string {
	// Standbys are off but in TestStandby: they would be containers the
	// other tests do not expect on the host.
	return append(os.Environ(), "XDG_DATA_HOME="+dataDir, "XRUN_HOST=", "XRUN_CONTEXT=", "XRUN_NO_STANDBY=1")
}

// submit runs xrun submit on a fixture on the CPU base, labelled for cleanup.
func submit(t *testing.T, limit time.Duration, fixture string, flags ...string) res {
	t.Helper()
	args := append([]string{"submit", "--cpu", "--base", Base, "--label", labelArg}, flags...)
	return x.Run(t, limit, append(args, fixturePath(fixture))...)
}

// submitted is submit for a test of what a person sees of an attached
// submit (no --json): it returns the id of the job too, from
// `xrun ps --all --json` (xruntest.Xrun.Submitted).
func submitted(t *testing.T, limit time.Duration, fixture string, flags ...string) (res, string) {
	t.Helper()
	return x.Submitted(t, fixturePath(fixture), func() res { return submit(t, limit, fixture, flags...) })
}

func fixturePath(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(repo, "client", "e2e", "testdata", name)
}

// jobContainers returns the containers of job id on the daemon.
func jobContainers(t *testing.T, id string) []engine.Container {
	t.Helper()
	cs, err := eng.List(context.Background(), map[string]string{"dev.xrun.job": id}, true)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitRunning polls until the job's container runs.
func waitRunning(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if s := x.Status(t, id); s.Container != nil && s.Container.State == "running" {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("job %s did not start running", id)
}

func TestInitThenSubmitAttached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e2e-first-kernel")
	expect(t, x.Run(t, time.Minute, "init", dir), 0)
	// The scaffold as it is, on whatever CPU base the host has.
	r, id := x.Submitted(t, dir, func() res {
		return x.Run(t, 5*time.Minute, "submit", "--cpu", "--keep", "--label", labelArg, dir)
	})
	expect(t, r, 0, "build: step 1/", "job "+id+" running in container", "status: succeeded")
	for _, want := range []string{"e2e-first-kernel", "succeeded", "reference", "blocked", "PASS"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("results table lacks %q:\n%s", want, r.Stdout)
		}
	}
	s := x.Status(t, id)
	if s.Status != result.StatusSucceeded {
		t.Errorf("status %+v", s)
	}
	for _, f := range []string{"job.json", "results.json", "logs.txt", "out/results.json"} {
		if _, err := os.Stat(filepath.Join(s.StoreDir, f)); err != nil {
			t.Errorf("store: %v", err)
		}
	}
	// --keep keeps an attached job's container until xrun rm.
	if cs := jobContainers(t, id); len(cs) != 1 || cs[0].State != "exited" {
		t.Errorf("containers of the job: %+v", cs)
	}
	// The job ran unprivileged, with limits, and recorded them.
	rs, err := result.ReadFile(filepath.Join(s.StoreDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c := rs.Env.Container; c == nil || c.PidsLimit != 8192 || c.MemoryLimitBytes <= 0 || c.ShmBytes != 1<<30 {
		t.Errorf("env.container %+v: want pids 8192, a memory limit and 1 GiB of shm", c)
	}
	// env.host names the machine, not the container.
	if name := strings.TrimSpace(dockerCLI(t, "info", "--format", "{{.Name}}")); rs.Env.Host != name {
		t.Errorf("env.host %q, want the daemon's host name %q", rs.Env.Host, name)
	}
	status := dockerCLI(t, "inspect", "--format", "{{.Config.User}} {{.HostConfig.CapDrop}} {{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}}", "xrun-e2e-first-kernel-"+id)
	// The runner starts as root with the capabilities to run the
	// experiment as the job user and kill its processes (Docker may write
	// them with or without CAP_).
	if norm := strings.ReplaceAll(strings.TrimSpace(status), "CAP_", ""); norm != "0:0 [ALL] [KILL SETGID SETUID] [no-new-privileges]" {
		t.Errorf("container user, capabilities, security options: %q", status)
	}
}

// dockerCLI runs the docker CLI against the local daemon.
func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestDetachedLifecycleAndSkippedRebuild(t *testing.T) {
	r := submit(t, 5*time.Minute, "quick", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("detached stdout %q, want the job id alone", r.Stdout)
	}
	logs := x.Run(t, 3*time.Minute, "logs", "-f", id[:6])
	expect(t, logs, 0)
	if !strings.Contains(logs.Stdout, "status: succeeded") {
		t.Errorf("logs -f did not follow to the end on stdout:\nstdout:\n%s\nstderr:\n%s", logs.Stdout, logs.Stderr)
	}
	w := x.Run(t, time.Minute, "wait", id)
	expect(t, w, 0)
	if strings.TrimSpace(w.Stdout) != "succeeded" {
		t.Errorf("wait printed %q", w.Stdout)
	}
	// The container is still there: its log, both streams, on stdout.
	if l := x.Run(t, time.Minute, "logs", id); !strings.Contains(l.Stdout, "status: succeeded") || l.Stderr != "" {
		t.Errorf("logs of a finished job: stdout:\n%s\nstderr:\n%s", l.Stdout, l.Stderr)
	}
	js := x.Run(t, time.Minute, "results", "--json", id)
	expect(t, js, 0)
	rs, err := result.Decode([]byte(js.Stdout))
	if err != nil || rs.JobID != id || rs.Experiment != "e2e-quick" || !rs.Success {
		t.Errorf("results --json: %v %+v", err, rs)
	}
	md := x.Run(t, time.Minute, "results", "--markdown", id)
	expect(t, md, 0)
	if !strings.Contains(md.Stdout, "| N=1024 | N=4096 |") || !strings.Contains(md.Stdout, "✅") {
		t.Errorf("markdown:\n%s", md.Stdout)
	}
	ps := x.Run(t, time.Minute, "ps", "--all", "--json")
	expect(t, ps, 0)
	if !strings.Contains(ps.Stdout, id) {
		t.Errorf("ps --all lacks %s", id)
	}

	// Unchanged: the build is skipped.
	again := submit(t, 2*time.Minute, "quick", "-d")
	expect(t, again, 0, "build skipped")
	id2 := strings.TrimSpace(again.Stdout)
	expect(t, x.Run(t, 2*time.Minute, "wait", id2), 0)

	expect(t, x.Run(t, time.Minute, "rm", id, id2), 0)
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("rm left %d containers", len(cs))
	}
	bad := x.Run(t, time.Minute, "status", id)
	expect(t, bad, 3, "no job \""+id+"\"")
}

func TestCancelRunningJob(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	waitRunning(t, id)
	c := x.Run(t, time.Minute, "cancel", id)
	expect(t, c, 0, "cancelled job "+id)
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled || s.Container == nil || s.Container.State != "exited" {
		t.Errorf("after cancel: %+v", s)
	}
	w := x.Run(t, time.Minute, "wait", id)
	expect(t, w, 130, "was cancelled")
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

func TestInterruptedAttachedSubmitLeavesNoContainer(t *testing.T) {
	interruptAttached(t, 0)
}

// A second Ctrl-C right after the first skips the graceful stop, but the
// container still goes and the record still says cancelled.
func TestTwiceInterruptedAttachedSubmitLeavesNoContainer(t *testing.T) {
	interruptAttached(t, 20*time.Millisecond)
}

// startSlowSubmit starts an attached submit --json of the slow fixture,
// its stderr kept for the test to read while it runs; stdout gets the
// job's record once it ends.
func startSlowSubmit(t *testing.T) (*exec.Cmd, *xruntest.LockedBuffer, *xruntest.LockedBuffer) {
	t.Helper()
	cmd := exec.Command(xrunBin, "submit", "--json", "--cpu", "--base", Base, "--label", labelArg, fixturePath("slow"))
	cmd.Env = env()
	outb, errb := &xruntest.LockedBuffer{}, &xruntest.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = outb, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, outb, errb
}

// ended is how cmd, a submit started by startSlowSubmit, ended.
func ended(cmd *exec.Cmd, outb, errb *xruntest.LockedBuffer) res {
	return res{Code: cmd.ProcessState.ExitCode(), Stdout: outb.String(), Stderr: errb.String()}
}

// interruptAttached runs the slow fixture attached and sends it SIGINT once
// it runs, and again after second when that is not zero; xrun must exit
// 130 having removed the container and recorded the job cancelled, and
// print that record.
func interruptAttached(t *testing.T, second time.Duration) {
	before := map[string]bool{}
	for _, c := range slowContainers(t) {
		before[c.ID] = true
	}
	cmd, outb, errb := startSlowSubmit(t)
	defer cmd.Process.Kill()
	// The job: the one new container of the fixture, once it runs.
	var id string
	deadline := time.Now().Add(3 * time.Minute)
	for id == "" && time.Now().Before(deadline) {
		for _, c := range slowContainers(t) {
			if !before[c.ID] && c.State == "running" {
				id = c.Labels["dev.xrun.job"]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if id == "" {
		t.Fatalf("the job did not start running:\n%s", errb.String())
	}
	time.Sleep(time.Second) // let the runner start its workers
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if second > 0 {
		time.Sleep(second)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("xrun did not exit within a minute of SIGINT:\n%s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	if !strings.Contains(errb.String(), "stopped and removed container") {
		t.Errorf("stderr does not say the container was removed:\n%s", errb.String())
	}
	if j, _ := xruntest.DecodeJob(t, ended(cmd, outb, errb)); j.ID != id || j.Status != result.StatusCancelled {
		t.Errorf("submit --json printed job %q %s, want %s cancelled", j.ID, j.Status, id)
	}
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("%d containers left behind: %+v", len(cs), cs)
	}
	if s := x.Status(t, id); s.Status != result.StatusCancelled {
		t.Errorf("record after Ctrl-C: %+v", s)
	}
}

// Ctrl-C while the job's container is being made ends like one of a
// running job: exit 130, the record cancelled, no container left. The
// create request can reach the daemon after xrun stopped waiting for it,
// so the container can exist though xrun never learnt its id. SIGINT goes
// first as soon as the container shows up on the daemon (created, the
// code being copied in; this run also builds the image when it is
// missing), then at several moments after the build was skipped, from
// before the record is made to the create and the start.
func TestInterruptedAtCreateLeavesNoContainer(t *testing.T) {
	t.Run("container-appears", func(t *testing.T) {
		interruptEarly(t, func(errb *xruntest.LockedBuffer, before map[string]bool) bool {
			for _, c := range slowContainers(t) {
				if !before[c.ID] {
					return true
				}
			}
			return false
		}, 0)
	})
	skipped := func(errb *xruntest.LockedBuffer, _ map[string]bool) bool {
		return strings.Contains(errb.String(), "build skipped")
	}
	for _, d := range []time.Duration{0, 10, 30, 60, 100, 150, 250} {
		d := d * time.Millisecond
		t.Run(fmt.Sprintf("after-%v", d), func(t *testing.T) { interruptEarly(t, skipped, d) })
	}
}

// slowContainers are the job containers of the slow fixture on the
// daemon (a build's containers carry the experiment label too).
func slowContainers(t *testing.T) []engine.Container {
	t.Helper()
	cs, err := eng.List(context.Background(), map[string]string{testLabel: runLabel, "dev.xrun.experiment": "e2e-slow", "dev.xrun.job": ""}, true)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// interruptEarly submits the slow fixture attached and sends it SIGINT
// delay after ready (polled) first holds; xrun must exit 130 and leave no
// container of the fixture that was not there before, and a job it
// recorded must be cancelled, and its record printed.
func interruptEarly(t *testing.T, ready func(errb *xruntest.LockedBuffer, before map[string]bool) bool, delay time.Duration) {
	before := map[string]bool{}
	for _, c := range slowContainers(t) {
		before[c.ID] = true
	}
	cmd, outb, errb := startSlowSubmit(t)
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(5 * time.Minute)
	for !ready(errb, before) {
		select {
		case <-done:
			t.Fatalf("xrun exited before the interrupt (exit %d):\n%s", cmd.ProcessState.ExitCode(), errb.String())
		case <-deadline:
			t.Fatalf("not ready to interrupt within 5 minutes:\n%s", errb.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("xrun did not exit within a minute of SIGINT:\n%s", errb.String())
	}
	out := errb.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	t.Logf("after SIGINT: %s", lines[len(lines)-1])
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, out)
	}
	if strings.Contains(out, "context canceled") {
		t.Errorf("stderr shows the cancelled request's error:\n%s", out)
	}
	// A container made by a request the daemon was still serving would
	// show up late.
	time.Sleep(time.Second)
	for _, c := range slowContainers(t) {
		if !before[c.ID] {
			t.Errorf("container %s (%s) left behind:\n%s", c.Name, c.State, out)
		}
	}
	j, ok := xruntest.DecodeJob(t, ended(cmd, outb, errb))
	if !ok {
		if !strings.Contains(out, "interrupted before the job was created") {
			t.Errorf("submit --json printed no job and stderr does not say none was made:\n%s", out)
		}
		return
	}
	if j.Status != result.StatusCancelled {
		t.Errorf("submit --json printed job %s %s, want cancelled\n%s", j.ID, j.Status, out)
	}
	if s := x.Status(t, j.ID); s.Status != result.StatusCancelled {
		t.Errorf("record after Ctrl-C: %+v\n%s", s, out)
	}
	expect(t, x.Run(t, time.Minute, "rm", j.ID), 0)
}

func TestAttachedTimeout(t *testing.T) {
	r, id := submitted(t, 5*time.Minute, "slow", "--timeout", "4s")
	expect(t, r, 124, "timed out after 4s", "raise resources.timeout")
	agree(t, id, result.StatusTimeout, 124)
}

// agree checks that the record and the store's results.json of job id
// say status, and that xrun results exits with code.
func agree(t *testing.T, id string, want string, code int) {
	t.Helper()
	if s := x.Status(t, id); s.Status != want {
		t.Errorf("record says %s, want %s", s.Status, want)
	}
	js := x.Run(t, time.Minute, "results", "--json", id)
	expect(t, js, code)
	if rs, err := result.Decode([]byte(js.Stdout)); err != nil || rs.Status != want {
		t.Errorf("results.json says %v, want %s (%v)", rs, want, err)
	}
}

func TestFailingImplementationExitsNonZero(t *testing.T) {
	r, id := submitted(t, 5*time.Minute, "fail")
	expect(t, r, 2, "this kernel is broken on purpose")
	if s := x.Status(t, id); s.Status != result.StatusFailed || s.ExitCode == nil || *s.ExitCode != 2 {
		t.Errorf("status %+v", s)
	}
	if !strings.Contains(r.Stdout, "broken") {
		t.Errorf("the results table is not on stdout:\n%s", r.Stdout)
	}
	// The table once (the runner's copy stays in runner.log), with the
	// traceback's tail under it, here and from xrun results.
	head := regexp.MustCompile(`CASE +IMPL +STATUS`)
	if n := len(head.FindAllString(r.Stdout+r.Stderr, -1)); n != 1 {
		t.Errorf("the table is printed %d times:\nstdout:\n%s\nstderr:\n%s", n, r.Stdout, r.Stderr)
	}
	const frame = `raise RuntimeError("this kernel is broken on purpose")`
	if !strings.Contains(r.Stdout, frame) {
		t.Errorf("no traceback under the table:\n%s", r.Stdout)
	}
	// xrun results of a failed job shows it and exits with the job's code.
	res := x.Run(t, time.Minute, "results", id)
	expect(t, res, 2)
	if !strings.Contains(res.Stdout, frame) || !strings.Contains(res.Stdout, "broken.py\", line") {
		t.Errorf("xrun results shows no traceback:\n%s", res.Stdout)
	}
}

func TestOOMKilledJob(t *testing.T) {
	r, id := submitted(t, 5*time.Minute, "oom")
	if r.Code == 0 {
		t.Fatalf("an OOM job succeeded:\n%s", r.Stderr)
	}
	// One worker was killed: the runner recorded it and went on, and says
	// that it was the container's limit that ran out.
	expect(t, r, 2, "implementation hog ran out of memory", "the container's limit of 96 MiB", "raise resources.memory")
	if strings.Contains(r.Stderr, "host memory") || strings.Contains(r.Stderr, "before its verdict") {
		t.Errorf("one worker's OOM is worded as the host's or the runner's:\n%s", r.Stderr)
	}
	agree(t, id, result.StatusFailed, 2)
}

func TestFailingBuildShowsTheStep(t *testing.T) {
	r := submit(t, 5*time.Minute, "badbuild")
	expect(t, r, 4, "image build failed at \"Step 2/", "RUN python3 -m pip --version", "the base image has no pip")
}

func TestNoGPURuntime(t *testing.T) {
	info, err := eng.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testenv.NoNVIDIARuntime(t, info.NvidiaRuntime)
	r := x.Run(t, 2*time.Minute, "submit", "--base", Base, "--label", labelArg, fixturePath("quick"))
	expect(t, r, 4, "has no NVIDIA GPU runtime for this GPU job: submit with --cpu to run without GPUs, or install the NVIDIA Container Toolkit")
}

func TestUnreachableDaemon(t *testing.T) {
	r := x.Run(t, time.Minute, "submit", "--cpu", "--host", "unix:///nonexistent/docker.sock", fixturePath("quick"))
	expect(t, r, 4, "cannot reach the Docker daemon at unix:///nonexistent/docker.sock")
	if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n != 0 {
		t.Errorf("the error is %d lines:\n%s", n+1, r.Stderr)
	}
}

// ps fails when the daemon, chosen by --host or by DOCKER_HOST, cannot
// be reached, instead of listing nothing.
func TestPsUnreachableDaemon(t *testing.T) {
	for _, args := range [][]string{{"ps"}, {"ps", "--all", "--json"}, {"ps", "--host", "unix:///nonexistent/docker.sock"}} {
		cmd := exec.Command(xrunBin, args...)
		cmd.Env = append(env(), "DOCKER_HOST=unix:///nonexistent/docker.sock")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		r := res{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errb.String()}
		expect(t, r, 4, "cannot reach the Docker daemon at unix:///nonexistent/docker.sock")
		if r.Stdout != "" || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("xrun %v: stdout %q, stderr:\n%s", args, r.Stdout, r.Stderr)
		}
	}
}

// A record cut short is listed by ps, naming the file, and rm -f removes
// it and the job's container.
func TestTruncatedRecordRemovedByRmForce(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	waitRunning(t, id)
	path := filepath.Join(dataDir, "xrun", "jobs", id, "job.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	ps := x.Run(t, time.Minute, "ps")
	expect(t, ps, 0, path)
	if !regexp.MustCompile(id + `\s.*unreadable`).MatchString(ps.Stdout) {
		t.Errorf("ps does not list %s as unreadable:\n%s", id, ps.Stdout)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 4, "xrun rm -f "+id)
	expect(t, x.Run(t, time.Minute, "rm", "-f", id), 0)
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("rm -f left the job's directory: %v", err)
	}
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("rm -f left %d containers", len(cs))
	}
}

func TestBadJobID(t *testing.T) {
	for _, cmd := range []string{"logs", "status", "wait", "results", "cancel"} {
		r := x.Run(t, time.Minute, cmd, "0000deadbeef")
		expect(t, r, 3, `no job "0000deadbeef"`)
	}
}

func TestRunLocalWithoutDocker(t *testing.T) {
	out := t.TempDir()
	r := x.Run(t, 3*time.Minute, "run", "--local", "--cpu", "--out", out, fixturePath("quick"))
	if r.Code == 4 && strings.Contains(r.Stderr, "numpy") {
		testenv.Missing(t, "no python3 with numpy on this machine (apt-get install python3-numpy): %s", r.Stderr)
	}
	expect(t, r, 0, "status: succeeded")
	rs, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil || rs.Experiment != "e2e-quick" || rs.Mode != "cpu" || !rs.Success {
		t.Errorf("results: %v %+v", err, rs)
	}
	if !strings.Contains(r.Stdout, "loop") {
		t.Errorf("no table on stdout:\n%s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(fixturePath("quick"), ".xrun")); err == nil {
		t.Error("--out was ignored: the experiment directory got a .xrun/")
	}
}
