//go:build integration

// Package slurm_test runs xrun submit --slurm as a user does, against a
// real one-node Slurm cluster (munged, slurmctld, slurmd) that
// scripts/slurm-cluster/up.sh starts, with two fake GPUs: the jobs run
// the runner on the node without a container, and ps, status, logs -f,
// wait, cancel, results, history and rm take their ids.
package slurm_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/internal/testenv"
)

var (
	repo      string
	dataDir   string
	jobsDir   string // the cluster's job directories (--slurm-dir)
	slurmConf string
)

func TestMain(m *testing.M) { os.Exit(mainSlurm(m)) }

// Base is the CPU base the docker runtime's jobs build on
// (images/make-cpu-base.sh), and testLabel the label of their images,
// which the suite removes when it ends.
const (
	Base      = "xrun/cpu-base:bookworm"
	testLabel = "dev.xrun.test=slurm"
)

func mainSlurm(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "slurm: -short: skipping the Slurm suite")
		return 0
	}
	fail := func(format string, args ...any) int { return testenv.Unavailable("slurm", format, args...) }
	if os.Geteuid() != 0 {
		return fail("the test cluster's slurmd starts jobs as their users: it needs root")
	}
	repo = xruntest.Repo()
	// The docker runtime's jobs build on the CPU base on this machine's
	// daemon, which is also the test cluster's node's.
	eng, err := xruntest.Connect()
	if err != nil {
		return fail("%v", err)
	}
	defer eng.Close()
	if code := xruntest.EnsureBase(eng, repo, Base, "slurm"); code >= 0 {
		return code
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k, v, _ := strings.Cut(testLabel, "=")
		ims, _ := eng.Images(ctx, map[string]string{k: v})
		for _, im := range ims {
			eng.RemoveImage(ctx, im.ID)
		}
	}()
	tmp, err := os.MkdirTemp("", "xrun-slurm-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	state := filepath.Join(tmp, "cluster")
	script := func(name string) error {
		cmd := exec.Command(filepath.Join(repo, "scripts", "slurm-cluster", name), state)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}
	if err := script("up.sh"); err != nil {
		script("down.sh")
		return fail("start the cluster (make setup installs slurm-wlm and munge): %v", err)
	}
	defer script("down.sh")
	slurmConf = filepath.Join(state, "slurm.conf")
	dataDir, jobsDir = filepath.Join(tmp, "data"), filepath.Join(tmp, "jobs")
	x.Bin = filepath.Join(tmp, "xrun")
	if err := xruntest.Build(repo, x.Bin); err != nil {
		fmt.Fprintf(os.Stderr, "slurm: %v\n", err)
		return 1
	}
	return m.Run()
}

func env() []string {
	return append(os.Environ(), "XDG_DATA_HOME="+dataDir, "SLURM_CONF="+slurmConf, "XRUN_SLURM_DIR="+jobsDir,
		"XRUN_HOST=", "XRUN_CONTEXT=", "XRUN_NO_PREFLIGHT=1")
}

var x = &xruntest.Xrun{Env: env}

func xrun(t *testing.T, limit time.Duration, args ...string) xruntest.Result {
	t.Helper()
	return x.Run(t, limit, args...)
}

// fakeGPU is the environment of a job in GPU mode on the fake GPUs: a
// stand-in nvidia-smi and torch dressed up as CUDA torch, which sbatch
// passes on to the job as it passes the submitter's environment.
func fakeGPU() []string {
	return []string{
		"PATH=" + filepath.Join(repo, "runner", "run", "testdata", "fakegpu", "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PYTHONPATH=" + filepath.Join(repo, "runner", "harness", "testdata", "fakecuda"),
	}
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(name))
	if out, err := exec.Command("cp", "-r", filepath.Join(repo, "client", "e2e", "testdata", name), dst).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v\n%s", err, out)
	}
	return dst
}

func status(t *testing.T, id string) xruntest.Status {
	t.Helper()
	return xruntest.DecodeStatus(t, xrun(t, time.Minute, "status", "--json", id))
}

// waitStatus polls the job until its status is want (or fails t).
func waitStatus(t *testing.T, id, want string, limit time.Duration) xruntest.Status {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := status(t, id)
		if s.Status == want {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after %s, want %s (%+v)", id, s.Status, limit, want, s.Container)
		}
		time.Sleep(time.Second)
	}
}

// jobDirs are the job directories left on the cluster.
func jobDirs(t *testing.T) []string {
	t.Helper()
	entries, _ := os.ReadDir(jobsDir)
	var dirs []string
	for _, e := range entries {
		if e.Name() != "bin" && e.Name() != "images" {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

func has(dirs []string, id string) bool {
	for _, d := range dirs {
		if d == id {
			return true
		}
	}
	return false
}

func TestAttachedSubmit(t *testing.T) {
	dir := fixture(t, "quick")
	start := time.Now()
	r := xrun(t, 3*time.Minute, "submit", "--slurm", "--cpu", "--json", dir)
	xruntest.Expect(t, r, 0)
	j, _ := xruntest.DecodeJob(t, r)
	if !strings.HasPrefix(j.Host, "slurm+local://") || j.Status != "succeeded" {
		t.Errorf("job %+v", j)
	}
	t.Logf("attached submit to the cluster: %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"in Slurm job", "xrun: Slurm job", "GPUs none", "status: succeeded"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the attached submit's log lacks %q:\n%s", want, r.Stderr)
		}
	}
	// Its results and log are in the store, and its directory on the
	// cluster is gone, as an attached job's container is.
	res := xrun(t, time.Minute, "results", j.ID)
	xruntest.Expect(t, res, 0)
	if !strings.Contains(res.Stdout, "loop") {
		t.Errorf("results:\n%s", res.Stdout)
	}
	if has(jobDirs(t), j.ID) {
		t.Errorf("job %s's directory is left on the cluster", j.ID)
	}
	// The history took the run, as it takes a Docker host's.
	h := xrun(t, time.Minute, "history", "--json")
	xruntest.Expect(t, h, 0)
	if !strings.Contains(h.Stdout, "e2e-quick") || !strings.Contains(h.Stdout, j.ID) {
		t.Errorf("history lacks the run:\n%s", h.Stdout)
	}
}

// TestOverSSH submits through a login node reached with ssh (sshd on
// loopback, a key of the test's own), named in xrun's config with its
// ssh options as a lab's login node would be: the job, its logs and its
// results come back through ssh alone.
func TestOverSSH(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	cfg := t.TempDir()
	opts := append(append([]string(nil), sshd.Options...), "-o", "SetEnv=SLURM_CONF="+slurmConf)
	quoted := make([]string, len(opts))
	for i, o := range opts {
		quoted[i] = strconv.Quote(o)
	}
	os.MkdirAll(filepath.Join(cfg, "xrun"), 0o755)
	if err := os.WriteFile(filepath.Join(cfg, "xrun", "config.yaml"), []byte(fmt.Sprintf("hosts:\n  login:\n    host: %s\n    ssh_options: [%s]\n    slurm: {partition: short}\n", sshd.Host, strings.Join(quoted, ", "))), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := []string{"XDG_CONFIG_HOME=" + cfg, "SLURM_CONF=/nonexistent"}
	dir := fixture(t, "quick")
	r := x.RunEnv(t, 3*time.Minute, extra, "submit", "-d", "--slurm", "--login", "login", "--cpu", dir)
	xruntest.Expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	xruntest.Expect(t, x.RunEnv(t, 3*time.Minute, extra, "wait", id), 0)
	s := xruntest.DecodeStatus(t, x.RunEnv(t, time.Minute, extra, "status", "--json", id))
	if s.Host != "slurm://login" || s.Status != "succeeded" {
		t.Errorf("status %+v", s)
	}
	logs := x.RunEnv(t, time.Minute, extra, "logs", id)
	if !strings.Contains(logs.Stdout, "xrun: Slurm job") {
		t.Errorf("logs:\n%s", logs.Stdout)
	}
	// The login node's slurm: options of the config went to sbatch.
	if script, err := os.ReadFile(filepath.Join(jobsDir, id, "job.sh")); err != nil || !strings.Contains(string(script), "#SBATCH --partition=short") {
		t.Errorf("job.sh (%v):\n%s", err, script)
	}
	xruntest.Expect(t, x.RunEnv(t, time.Minute, extra, "rm", id), 0)
	if has(jobDirs(t), id) {
		t.Errorf("rm over ssh left the job's directory")
	}
	// A login node that does not answer is one sentence, exit 4.
	r = x.RunEnv(t, time.Minute, extra, "submit", "--slurm", "--login", "nobody@127.0.0.1:1", "--cpu", dir)
	xruntest.Expect(t, r, 4, "reach the Slurm cluster on nobody@127.0.0.1:1")
}

// TestSlowLogin: a login node whose every new ssh session takes 3 s to
// open (a jump host, a slow .bashrc's worth) runs 10 detached jobs that
// ps lists and wait follows to their end, every one succeeded with its
// results: a slow copy is never read as a job without results.
func TestSlowLogin(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	_, port, _ := strings.Cut(strings.TrimPrefix(sshd.Host, "ssh://"), ":")
	opts := append(append([]string(nil), sshd.Options...), "-o", "SetEnv=SLURM_CONF="+slurmConf,
		"-o", "ProxyCommand=sh -c 'sleep 3; exec socat - TCP:127.0.0.1:"+port+"'")
	quoted := make([]string, len(opts))
	for i, o := range opts {
		quoted[i] = strconv.Quote(o)
	}
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "xrun"), 0o755)
	if err := os.WriteFile(filepath.Join(cfg, "xrun", "config.yaml"), []byte(fmt.Sprintf("hosts:\n  slow:\n    host: %s\n    ssh_options: [%s]\n", sshd.Host, strings.Join(quoted, ", "))), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := []string{"XDG_CONFIG_HOME=" + cfg, "SLURM_CONF=/nonexistent"}
	dir := fixture(t, "quick")
	var ids []string
	start := time.Now()
	for i := 0; i < 10; i++ {
		r := x.RunEnv(t, 3*time.Minute, extra, "submit", "-d", "--slurm", "--login", "slow", "--cpu", dir)
		xruntest.Expect(t, r, 0)
		id := strings.TrimSpace(r.Stdout)
		ids = append(ids, id)
		cancelAtEnd(t, id)
	}
	t.Logf("10 detached submits over the slow login: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	ps := x.RunEnv(t, 3*time.Minute, extra, "ps", "-a", "--json")
	xruntest.Expect(t, ps, 0)
	t.Logf("ps of 10 jobs over the slow login: %s", time.Since(start).Round(time.Second))
	listed := map[string]bool{}
	for _, j := range xruntest.DecodeJobs(t, ps) {
		listed[j.ID] = true
		if j.Status == "unknown" {
			t.Errorf("ps could not look at job %s: %+v", j.ID, j)
		}
	}
	for _, id := range ids {
		if !listed[id] {
			t.Errorf("ps lacks job %s:\n%s", id, ps.Stdout)
		}
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("ps of 10 jobs took %s over a login of 3 s a session", d)
	}
	for _, id := range ids {
		xruntest.Expect(t, x.RunEnv(t, 5*time.Minute, extra, "wait", id), 0)
		s := xruntest.DecodeStatus(t, x.RunEnv(t, time.Minute, extra, "status", "--json", id))
		if s.Status != "succeeded" {
			t.Errorf("job %s: %+v", id, s)
		}
		xruntest.Expect(t, x.RunEnv(t, time.Minute, extra, "results", id), 0)
	}
}

// TestRerun: xrun rerun (as regress --confirm does) submits the job again
// to the same cluster with the same partition.
func TestRerun(t *testing.T) {
	dir := fixture(t, "quick")
	r := xrun(t, 3*time.Minute, "submit", "--slurm", "--cpu", "--partition", "debug", "--json", dir)
	xruntest.Expect(t, r, 0)
	first, _ := xruntest.DecodeJob(t, r)
	r = xrun(t, 3*time.Minute, "rerun", "--json", first.ID)
	xruntest.Expect(t, r, 0)
	again, _ := xruntest.DecodeJob(t, r)
	if again.ID == first.ID || again.Host != first.Host || again.Status != "succeeded" {
		t.Errorf("rerun of %+v: %+v", first, again)
	}
	if !strings.Contains(r.Stdout, `"partition": "debug"`) {
		t.Errorf("the rerun's record lacks the partition:\n%s", r.Stdout)
	}
}

func TestDetachedFollowWaitResultsRemove(t *testing.T) {
	dir := fixture(t, "quick")
	r := xrun(t, time.Minute, "submit", "-d", "--slurm", "--cpu", dir)
	xruntest.Expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	ps := xrun(t, time.Minute, "ps", "--json")
	if js := xruntest.DecodeJobs(t, ps); len(js) == 0 || !strings.Contains(ps.Stdout, id) {
		t.Errorf("ps lacks %s:\n%s", id, ps.Stdout)
	}
	logs := xrun(t, 3*time.Minute, "logs", "-f", id)
	xruntest.Expect(t, logs, 0)
	if !strings.Contains(logs.Stdout, "status: succeeded") {
		t.Errorf("logs -f ended before the job did:\n%s", logs.Stdout)
	}
	xruntest.Expect(t, xrun(t, 2*time.Minute, "wait", id), 0)
	s := status(t, id)
	if s.Status != "succeeded" || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Errorf("status %+v", s)
	}
	res := xrun(t, time.Minute, "results", "--json", id)
	xruntest.Expect(t, res, 0)
	if !strings.Contains(res.Stdout, `"success": true`) {
		t.Errorf("results --json:\n%s", res.Stdout)
	}
	tail := xrun(t, time.Minute, "logs", "--tail", "1", id)
	if tail.Code != 0 || strings.Count(strings.TrimSpace(tail.Stdout), "\n") != 0 || tail.Stdout == "" {
		t.Errorf("logs --tail 1 (exit %d):\n%s", tail.Code, tail.Stdout)
	}
	if !has(jobDirs(t), id) {
		t.Fatalf("a detached job's directory stays until xrun rm: %v", jobDirs(t))
	}
	xruntest.Expect(t, xrun(t, time.Minute, "rm", id), 0)
	if has(jobDirs(t), id) {
		t.Errorf("xrun rm left job %s's directory on the cluster", id)
	}
}

func TestCancelKeepsPartialResults(t *testing.T) {
	dir := fixture(t, "slow")
	r := xrun(t, time.Minute, "submit", "-d", "--slurm", "--cpu", dir)
	xruntest.Expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	cancelAtEnd(t, id)
	waitStatus(t, id, "running", time.Minute)
	// Once the runner is at the slow inputs, it has something to keep.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(xrun(t, time.Minute, "logs", id).Stdout, "progress: case 1/1, checking") {
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not reach the inputs:\n%s", xrun(t, time.Minute, "logs", id).Stdout)
		}
		time.Sleep(time.Second)
	}
	// status says where the run is, as logs -f and wait do.
	if st := xrun(t, time.Minute, "status", id); !strings.Contains(st.Stdout, "progress:") || !strings.Contains(st.Stdout, "case 1/1, checking") {
		t.Errorf("status of a running job:\n%s", st.Stdout)
	}
	start := time.Now()
	xruntest.Expect(t, xrun(t, time.Minute, "cancel", id), 0)
	t.Logf("cancel took %s", time.Since(start).Round(time.Millisecond))
	s := status(t, id)
	if s.Status != "cancelled" {
		t.Errorf("after cancel: %+v", s)
	}
	res := xrun(t, time.Minute, "results", "--json", id)
	if !strings.Contains(res.Stdout, `"not_run"`) || !strings.Contains(res.Stdout, `"cancelled"`) {
		t.Errorf("the partial results (exit %d):\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
}

// TestNodeDownRequeues takes the node down under a running job: Slurm
// requeues it, and xrun says so rather than "waiting" alone.
func TestNodeDownRequeues(t *testing.T) {
	dir := fixture(t, "slow")
	r := xrun(t, time.Minute, "submit", "-d", "--slurm", "--cpu", dir)
	xruntest.Expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	cancelAtEnd(t, id)
	waitStatus(t, id, "running", time.Minute)
	node, _ := os.Hostname()
	node, _, _ = strings.Cut(node, ".")
	slurmCmd := func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = env()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := slurmCmd("scontrol", "update", "nodename="+node, "state=down", "reason=xrun-test"); err != nil {
		t.Fatalf("scontrol: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		// The node returns by itself (ReturnToService=2) or on resume;
		// the next test needs it up.
		slurmCmd("scontrol", "update", "nodename="+node, "state=resume")
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			if out, _ := slurmCmd("sinfo", "-h", "-n", node, "-o", "%T"); strings.HasPrefix(out, "idle") || strings.HasPrefix(out, "mixed") || strings.HasPrefix(out, "allocated") {
				return
			}
		}
		t.Errorf("the node did not come back")
	})
	s := waitStatus(t, id, "pending", time.Minute)
	if s.Container == nil || s.Container.State != "requeued" || !strings.Contains(s.Container.Message, "Slurm requeued it") {
		t.Errorf("after its node went down: %+v", s.Container)
	}
	// Cancelled while it waits to run again, it ends as a job that ran:
	// its log is kept, and nothing says it never started.
	xruntest.Expect(t, xrun(t, time.Minute, "cancel", id), 0)
	s = status(t, id)
	if s.Status != "cancelled" || strings.Contains(s.Error, "before its runner started") {
		t.Errorf("cancelled after a requeue: %+v", s)
	}
	if logs := xrun(t, time.Minute, "logs", id); !strings.Contains(logs.Stdout, "xrun: Slurm job") {
		t.Errorf("the first run's log is gone (exit %d):\n%s%s", logs.Code, logs.Stdout, logs.Stderr)
	}
}

// TestAttachedThroughARequeue: an attached submit whose node goes down
// says that the job is back in the queue, and how to give up, and then
// follows it when it runs again, to its results and exit 0.
func TestAttachedThroughARequeue(t *testing.T) {
	dir := fixture(t, "pause")
	node, _ := os.Hostname()
	node, _, _ = strings.Cut(node, ".")
	scontrol := func(args ...string) {
		cmd := exec.Command("scontrol", append([]string{"update", "nodename=" + node}, args...)...)
		cmd.Env = env()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("scontrol %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		// Resumed already, unless the test stopped before: the next test
		// needs the node.
		cmd := exec.Command("scontrol", "update", "nodename="+node, "state=resume")
		cmd.Env = env()
		cmd.Run()
	})
	cmd := exec.Command(x.Bin, "submit", "--slurm", "--cpu", dir)
	cmd.Env = env()
	var stdout, stderr xruntest.LockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	until := func(what, text string, limit time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(limit); !strings.Contains(stderr.String(), text); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %s:\n%s", what, limit, stderr.String())
			}
		}
	}
	// The pause fixture's first inputs take ten seconds: the node goes
	// down while the job runs.
	until("start", " running in ", time.Minute)
	scontrol("state=down", "reason=xrun-test")
	until("requeue", "is back in the queue (requeued): Slurm requeued it", time.Minute)
	if !strings.Contains(stderr.String(), "gives up)") {
		t.Errorf("the requeue line does not say how to give up:\n%s", stderr.String())
	}
	// Back by itself already (ReturnToService=2, once slurmd answers
	// again), or resumed here.
	resume := exec.Command("scontrol", "update", "nodename="+node, "state=resume")
	resume.Env = env()
	resume.Run()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("submit: %v\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Minute):
		// Slurm starts a requeued job no sooner than two minutes on.
		t.Fatalf("the attached submit did not end after the node came back:\n%s", stderr.String())
	}
	out := stderr.String()
	back := strings.Index(out, "back in the queue")
	if again := strings.LastIndex(out, " running in "); again < back {
		t.Errorf("the job is not said to run again after its requeue:\n%s", out)
	}
	if !strings.Contains(stdout.String(), "succeeded") || !strings.Contains(stdout.String(), "N=1024") {
		t.Errorf("no results after the rerun:\n%s%s", stdout.String(), out)
	}
}

func TestTimeout(t *testing.T) {
	dir := fixture(t, "slow")
	start := time.Now()
	r := xrun(t, 2*time.Minute, "submit", "--slurm", "--cpu", "--timeout", "15s", dir)
	took := time.Since(start)
	xruntest.Expect(t, r, 124, "timed out after 15s")
	if took > time.Minute {
		t.Errorf("a 15 s timeout took %s", took)
	}
}

// TestGPUsAndPending fills the node's two fake GPUs with two jobs, which
// get different devices; a third waits for them (pending: Resources), is
// cancelled while it waits, and a fourth whose pending limit cannot be
// met ends with a sentence that says so.
func TestGPUsAndPending(t *testing.T) {
	dir := fixture(t, "slow")
	var ids []string
	for i := 0; i < 2; i++ {
		r := x.RunEnv(t, time.Minute, fakeGPU(), "submit", "-d", "--slurm", "--gpus", "1", dir)
		xruntest.Expect(t, r, 0)
		ids = append(ids, strings.TrimSpace(r.Stdout))
		cancelAtEnd(t, ids[i])
	}
	var devices []string
	for _, id := range ids {
		waitStatus(t, id, "running", time.Minute)
		deadline := time.Now().Add(30 * time.Second)
		for {
			line := firstLine(xrun(t, time.Minute, "logs", id).Stdout)
			if _, gpus, ok := strings.Cut(line, "GPUs "); ok {
				devices = append(devices, gpus)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s's log has no GPU line: %q", id, line)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	sort.Strings(devices)
	if strings.Join(devices, " ") != "0 1" {
		t.Errorf("the two jobs got GPUs %v, want 0 and 1", devices)
	}

	r := x.RunEnv(t, time.Minute, fakeGPU(), "submit", "-d", "--slurm", "--gpus", "1", dir)
	xruntest.Expect(t, r, 0)
	waiting := strings.TrimSpace(r.Stdout)
	cancelAtEnd(t, waiting)
	s := waitStatus(t, waiting, "pending", 30*time.Second)
	// The scheduler gives its reason once it has looked at the job.
	for deadline := time.Now().Add(30 * time.Second); s.Container == nil || s.Container.Message != "Resources"; s = status(t, waiting) {
		if time.Now().After(deadline) {
			t.Fatalf("a pending job's state: %+v", s.Container)
		}
		time.Sleep(time.Second)
	}
	// wait says why the job waits, and how to give up, at once.
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	cmd := exec.CommandContext(ctx, x.Bin, "wait", waiting)
	cmd.Env = env()
	out, _ := cmd.CombinedOutput()
	stop()
	if want := fmt.Sprintf("job %s is waiting (pending): Resources (xrun cancel %s gives up)", waiting, waiting); !strings.Contains(string(out), want) {
		t.Errorf("xrun wait of a pending job lacks %q:\n%s", want, out)
	}
	ps := xrun(t, time.Minute, "ps")
	if !strings.Contains(ps.Stdout, waiting) || !strings.Contains(ps.Stdout, "pending") {
		t.Errorf("ps:\n%s", ps.Stdout)
	}
	xruntest.Expect(t, xrun(t, time.Minute, "cancel", waiting), 0)
	if s := status(t, waiting); s.Status != "cancelled" {
		t.Errorf("cancelled while pending: %+v", s)
	}
	if has(jobDirs(t), waiting) {
		t.Errorf("a job cancelled while it waited left its directory")
	}

	r = x.RunEnv(t, time.Minute, fakeGPU(), "submit", "-d", "--slurm", "--gpus", "1", "--timeout", "20s", "--pending-limit", "20s", dir)
	xruntest.Expect(t, r, 0)
	late := strings.TrimSpace(r.Stdout)
	cancelAtEnd(t, late)
	w := xrun(t, 3*time.Minute, "wait", late)
	// The story every place tells of a job that never got a node: a
	// timeout, what it waited for, and no pointer to a log it never had.
	xruntest.Expect(t, w, 124, "never ran: no node took it within its pending limit", "it has no log")
	if s := status(t, late); s.Status != "timeout" || !strings.HasPrefix(s.Error, "no node took it") {
		t.Errorf("past its pending limit: %+v", s)
	}
}

// TestRefusedBeforeSubmit: what the partition can never give is refused
// in a sentence, and nothing is submitted or left on the cluster.
func TestRefusedBeforeSubmit(t *testing.T) {
	dir := fixture(t, "quick")
	before := jobDirs(t)
	r := xrun(t, time.Minute, "submit", "--slurm", "--gpus", "3", dir)
	xruntest.Expect(t, r, 3, "cannot run this job", "nothing was submitted")
	// The test cluster takes a job past a partition's time limit (as
	// Slurm does unless EnforcePartLimits), which would wait for good.
	r = xrun(t, time.Minute, "submit", "--slurm", "--cpu", "--partition", "short", "--timeout", "10m", dir)
	xruntest.Expect(t, r, 3, "Slurm partition short cannot run this job: its time limit is 5m0s")
	r = xrun(t, time.Minute, "submit", "--slurm", "--cpu", "--root", dir)
	xruntest.Expect(t, r, 3, "--root does not apply with --slurm")
	if after := jobDirs(t); len(after) != len(before) {
		t.Errorf("refused submits left directories: %v", after)
	}
}

// TestSbatchOptions: --sbatch options reach Slurm, after xrun's own and
// a login node's config's, a rerun keeps them, and an option that would
// change one of xrun's own is refused before anything is submitted.
func TestSbatchOptions(t *testing.T) {
	dir := fixture(t, "quick")
	node, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	node, _, _ = strings.Cut(node, ".")
	r := xrun(t, 3*time.Minute, "submit", "--slurm", "--cpu", "--json", "--sbatch", "--comment=nightly,h200",
		"--sbatch", "--exclusive", "--sbatch=--nodelist="+node, dir)
	xruntest.Expect(t, r, 0)
	j, _ := xruntest.DecodeJob(t, r)
	if !strings.Contains(r.Stdout, `"--comment=nightly,h200"`) || !strings.Contains(r.Stdout, `"--exclusive"`) {
		t.Errorf("the record lacks the sbatch options:\n%s", r.Stdout)
	}
	line := firstLine(xrun(t, time.Minute, "logs", j.ID).Stdout)
	_, after, ok := strings.Cut(line, "Slurm job ")
	slurmID, _, _ := strings.Cut(after, " ")
	if !ok || slurmID == "" {
		t.Fatalf("job %s's log names no Slurm job: %q", j.ID, line)
	}
	cmd := exec.Command("scontrol", "show", "job", slurmID)
	cmd.Env = env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scontrol show job %s: %v\n%s", slurmID, err, out)
	}
	for _, want := range []string{"Comment=nightly,h200", "OverSubscribe=NO", "ReqNodeList=" + node} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Slurm's job %s lacks %s:\n%s", slurmID, want, out)
		}
	}
	r = xrun(t, 3*time.Minute, "rerun", "--json", j.ID)
	xruntest.Expect(t, r, 0)
	if strings.Count(r.Stdout, `"--exclusive"`) != 1 {
		t.Errorf("the rerun's record does not keep the options once:\n%s", r.Stdout)
	}

	before := jobDirs(t)
	ps := xrun(t, time.Minute, "ps", "-a", "--json")
	r = xrun(t, time.Minute, "submit", "--slurm", "--cpu", "--sbatch", "--time=5", dir)
	xruntest.Expect(t, r, 3, "--sbatch --time=5: xrun sets --time itself (give --timeout or resources.timeout)")
	r = xrun(t, time.Minute, "submit", "--slurm", "--cpu", "--sbatch", "-c4", dir)
	xruntest.Expect(t, r, 3, "xrun sets --cpus-per-task itself (give --cpus or resources.cpus)")
	r = xrun(t, time.Minute, "submit", "--slurm", "--cpu", "--sbatch", "--exclusive --uid=0", dir)
	xruntest.Expect(t, r, 3, "give one option")
	r = xrun(t, time.Minute, "submit", "--slurm", "--cpu", "--sbatch", "--no-such-option", dir)
	xruntest.Expect(t, r, 3, "does not take the job's options: sbatch: unrecognized option '--no-such-option'")
	if after := jobDirs(t); len(after) != len(before) {
		t.Errorf("refused submits left directories: %v", after)
	}
	if again := xrun(t, time.Minute, "ps", "-a", "--json"); len(xruntest.DecodeJobs(t, again)) != len(xruntest.DecodeJobs(t, ps)) {
		t.Errorf("refused submits left records:\n%s", again.Stdout)
	}
}

// cancelAtEnd cancels job id when the test ends, however it ends: a job
// left running holds the node's CPUs and GPUs from the next test.
func cancelAtEnd(t *testing.T, id string) {
	t.Cleanup(func() { xrun(t, time.Minute, "cancel", id) })
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return sc.Text()
	}
	return ""
}

// The docker runtime: the job's image is built here, copied to the cluster
// once, and the batch job runs it in the node's Docker as a Docker host
// runs a job: the experiment's code as the job user, the results back in
// the store. Cancelled, its container is stopped gracefully (partial
// results kept) and gone.
func TestDockerRuntime(t *testing.T) {
	dir := fixture(t, "quick")
	r := xrun(t, 5*time.Minute, "submit", "--slurm", "--slurm-runtime", "docker", "--cpu", "--base", Base, "--label", testLabel, "--json", dir)
	xruntest.Expect(t, r, 0)
	j, _ := xruntest.DecodeJob(t, r)
	if j.Status != "succeeded" || !strings.Contains(r.Stderr, "in Docker") {
		t.Fatalf("job %+v\n%s", j, r.Stderr)
	}
	// The copy of the image says what it does, and how much went.
	if !strings.Contains(r.Stderr, "copying the job's image") || !regexp.MustCompile(`copying the job's image \S+ to .+: [0-9.]+ ?[kKMGT]i?B in \d+s`).MatchString(r.Stderr) {
		t.Errorf("no progress of the image's copy:\n%s", r.Stderr)
	}
	res := xrun(t, time.Minute, "results", "--json", j.ID)
	xruntest.Expect(t, res, 0)
	if !strings.Contains(res.Stdout, `"worker_user"`) || !strings.Contains(res.Stdout, `"loop"`) {
		t.Errorf("results (the code should run as the job user, apart from the runner):\n%.1500s", res.Stdout)
	}
	archives, _ := filepath.Glob(filepath.Join(jobsDir, "images", "xrun_*"))
	if len(archives) != 1 {
		t.Fatalf("images on the cluster: %v", archives)
	}
	before, _ := os.Stat(archives[0])
	// The archive is what a node without the image loads: removed from
	// the daemon, the image comes back from it under its reference.
	ref := status(t, j.ID).ImageRef
	if ref == "" {
		t.Fatal("the job's record names no image")
	}
	if out, err := exec.Command("docker", "rmi", ref).CombinedOutput(); err != nil {
		t.Fatalf("docker rmi %s: %v\n%s", ref, err, out)
	}
	if out, err := exec.Command("sh", "-c", `tar -chf - -C "$0" . | docker load -q`, archives[0]).CombinedOutput(); err != nil || !strings.Contains(string(out), ref) {
		t.Errorf("docker load of the cluster's copy: %v\n%s", err, out)
	}
	// A second experiment's image, on the same base: only what the
	// first lacks is sent; cancelled while it runs, it keeps its partial
	// results.
	slow := fixture(t, "slow")
	d := xrun(t, 5*time.Minute, "submit", "--slurm", "--slurm-runtime", "docker", "--cpu", "--base", Base, "--label", testLabel, "-d", slow)
	xruntest.Expect(t, d, 0)
	id := strings.TrimSpace(d.Stdout)
	defer xrun(t, time.Minute, "rm", "--force", id)
	for _, line := range strings.Split(r.Stderr+d.Stderr, "\n") {
		if strings.Contains(line, "copying the job's image") {
			t.Log(line)
		}
	}
	if !regexp.MustCompile(`: [0-9.]+ ?[kKMGT]i?B in \d+s \([0-9.]+ ?[kKMGT]i?B of its layers were there already`).MatchString(d.Stderr) {
		t.Errorf("the second image's copy does not say that it shared the first's layers:\n%s", d.Stderr)
	}
	if blobs, _ := filepath.Glob(filepath.Join(jobsDir, "images", "blobs", "*")); len(blobs) < 2 {
		t.Errorf("the images' layers on the cluster: %v", blobs)
	}
	waitStatus(t, id, "running", 3*time.Minute)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if l := xrun(t, time.Minute, "logs", id); strings.Contains(l.Stdout+l.Stderr, "case ") {
			break
		}
		time.Sleep(time.Second)
	}
	// While a job that loads it runs, prune keeps the archive, whatever
	// its age.
	p := xrun(t, time.Minute, "prune", "--slurm", "--older-than", "0", "--dry-run", "--json")
	xruntest.Expect(t, p, 0)
	if !strings.Contains(p.Stdout, `"kept_in_use": 1`) || strings.Count(p.Stdout, `"ref":`) != 1 || !strings.Contains(p.Stdout, filepath.Base(archives[0])) {
		t.Errorf("prune --slurm while a job loads the archive:\n%s", p.Stdout)
	}
	xruntest.Expect(t, xrun(t, time.Minute, "cancel", id), 0)
	if s := waitStatus(t, id, "cancelled", 2*time.Minute); s.Status != "cancelled" {
		t.Errorf("after cancel: %+v", s)
	}
	if res := xrun(t, time.Minute, "results", id); !strings.Contains(res.Stdout+res.Stderr, "cancelled") {
		t.Errorf("partial results:\n%s%s", res.Stdout, res.Stderr)
	}
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "name=xrun-slurm-"+id).Output()
	if strings.TrimSpace(string(out)) != "" {
		t.Errorf("the job's container is left: %s", out)
	}
	if after, err := os.Stat(archives[0]); err != nil || !os.SameFile(before, after) {
		t.Errorf("the image archive was copied again (%v)", err)
	}
	// Once no job loads it, prune removes it (--dry-run first names it).
	p = xrun(t, time.Minute, "prune", "--slurm", "--older-than", "0", "--dry-run")
	xruntest.Expect(t, p, 0)
	if !strings.Contains(p.Stdout, "would remove "+filepath.Base(archives[0])) {
		t.Errorf("prune --slurm --dry-run:\n%s%s", p.Stdout, p.Stderr)
	}
	xruntest.Expect(t, xrun(t, time.Minute, "prune", "--slurm", "--older-than", "0"), 0)
	left, _ := filepath.Glob(filepath.Join(jobsDir, "images", "xrun_*"))
	blobs, _ := filepath.Glob(filepath.Join(jobsDir, "images", "blobs", "*"))
	if len(left)+len(blobs) != 0 {
		t.Errorf("prune --slurm left %v %v", left, blobs)
	}
	// --python is the bare runtime's.
	xruntest.Expect(t, xrun(t, time.Minute, "submit", "--slurm", "--slurm-runtime", "docker", "--python", "/usr/bin/python3", "--cpu", dir), 3, "--python does not apply")
	xruntest.Expect(t, xrun(t, time.Minute, "submit", "--slurm", "--slurm-runtime", "podman", "--cpu", dir), 3, "give bare or docker")
}

// A job of the docker runtime submitted with the config's server: its
// runner posts its results there, read back from the server's API. The
// POST token is a file of the container's that root alone reads
// (contract.PostTokenFile), never in its configuration, which docker
// inspect shows every user of the node's Docker.
func TestDockerRuntimePostsWithoutTokenInEnv(t *testing.T) {
	s := x.Serve(t, xruntest.BridgeAddress(t)+":0")
	d := x.RunEnv(t, 5*time.Minute, s.Env(), "submit", "--slurm", "--slurm-runtime", "docker", "--cpu", "--base", Base, "--label", testLabel, "-d", fixture(t, "pause"))
	xruntest.Expect(t, d, 0)
	id := strings.TrimSpace(d.Stdout)
	defer xrun(t, time.Minute, "rm", "--force", id)
	name := "xrun-slurm-" + id
	// Running: the script creates the container, copies the token in,
	// then starts it (the fixture's first case then sleeps 10 s).
	var cfg string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := exec.Command("docker", "inspect", "--format", "{{.State.Running}} {{json .Config}}", name).Output()
		if running, config, _ := strings.Cut(string(out), " "); err == nil && running == "true" {
			cfg = config
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running container %s within 3 minutes: %v (job %+v)", name, err, status(t, id))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Contains(cfg, s.Post) || strings.Contains(cfg, "XRUN_POST_TOKEN") {
		t.Errorf("the post token is in the container's configuration: %s", cfg)
	}
	if want := "XRUN_POST_URL=" + s.Base + "/api/v1/results"; !strings.Contains(cfg, want) {
		t.Errorf("the container's configuration lacks %s: %s", want, cfg)
	}
	// The runner reads the token from its file, root's alone; the
	// experiment's code (uid 65532) cannot.
	if out, err := exec.Command("docker", "exec", "--user", "0:0", name, "stat", "-c", "%a %u:%g", "/xrun/runner/post-token").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "400 0:0" {
		t.Errorf("the token file in the container: %v %s, want mode 400 owned by 0:0", err, out)
	}
	xruntest.Expect(t, xrun(t, 3*time.Minute, "wait", id), 0)

	runs := s.RunsOf(t, id)
	if len(runs) != 1 || runs[0].Experiment != "e2e-pause" || runs[0].Source != "post:runners" {
		t.Fatalf("the server's runs of job %s: %+v, want one of e2e-pause posted by token runners", id, runs)
	}
	h := x.RunEnv(t, time.Minute, append(s.Env(), "XRUN_SERVER_TOKEN="+s.Read), "history", "--server", s.Base, "--csv", "e2e-pause")
	xruntest.Expect(t, h, 0)
	if !strings.Contains(h.Stdout, id) {
		t.Errorf("history --server does not show job %s:\n%s", id, h.Stdout)
	}
	if strings.Contains(s.Log(), s.Post) {
		t.Error("the post token is in the server's log")
	}
}
