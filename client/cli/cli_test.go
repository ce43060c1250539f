package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
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
	if code := ta.run(context.Background(), "init", dir); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "already has an xrun.yaml") {
		t.Errorf("second init: exit %d, %s", code, ta.err)
	}
}

func TestBadJobID(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	ta.run(context.Background(), "submit", "-d", "--cpu", dir)
	for _, cmd := range []string{"logs", "status", "wait", "cancel", "rm", "results"} {
		code := ta.run(context.Background(), cmd, "zzzz")
		if code != contract.ExitUsage || !strings.Contains(ta.err.String(), `no job "zzzz": known jobs are`) {
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
		{"unknown flag", []string{"ps", "--bogus"}, false, contract.ExitUsage, "xrun: unknown flag --bogus (see xrun ps --help)"},
		{"bad duration", []string{"submit", "--timeout", "ten", "x"}, false, contract.ExitUsage, `xrun: --timeout "ten": not a duration (30s, 10m, 1h30m) (see xrun submit --help)`},
		{"bad duration of another command", []string{"prune", "--older-than", "5x"}, false, contract.ExitUsage, `--older-than "5x": not a duration`},
		{"prune a cluster's caches", []string{"prune", "--k8s", "--caches"}, false, contract.ExitUsage, "--caches does not apply with --k8s: a cluster's compile caches are directories of its nodes (/var/lib/xrun/cache)"},
		{"unknown global flag", []string{"--bogus"}, false, contract.ExitUsage, "(see xrun --help)"},
		{"a cluster without a registry, before any build", []string{"submit", "--k8s", dir}, true, contract.ExitUsage, "no registry for the cluster to pull the job's image from: pass --registry"},
		{"slurm options without --slurm", []string{"submit", "--partition", "gpu", dir}, false, contract.ExitUsage, "go with --slurm"},
		{"slurm with --root", []string{"submit", "--slurm", "--root", dir}, false, contract.ExitUsage, "--root does not apply with --slurm"},
		{"missing argument", []string{"submit"}, false, contract.ExitUsage, "submit takes one experiment directory"},
		{"no such job", []string{"status", "0000deadbeef"}, false, contract.ExitUsage, `no job "0000deadbeef"`},
		{"two job ids", []string{"logs", "3fa1", "9c2e"}, false, contract.ExitUsage, "logs takes one job id (or the start of one), got 2 arguments"},
		{"cpu with gpus", []string{"submit", "--cpu", "--gpus", "1", dir}, false, contract.ExitUsage, "xrun: --cpu runs without GPUs: leave out --gpus 1 (or --cpu)"},
		{"network other than default or none", []string{"submit", "--network", "host", dir}, false, contract.ExitUsage, "--network \"host\": give default or none"},
		{"negative cpus", []string{"submit", "--cpus", "-1", dir}, false, contract.ExitUsage, "--cpus -1: give how many CPUs the job gets, at least 1"},
		{"two login nodes", []string{"submit", "--slurm", "--login", "a", "--login", "b", dir}, false, contract.ExitUsage, "--login is given 2 times (a, b): give the one login node of the cluster"},
		{"split of one", []string{"submit", "--split", "1", dir}, false, contract.ExitUsage, "--split 1: give 2 to 256 jobs to split the sweep over"},
		{"split over hosts", []string{"submit", "--split", "2", "--host", "a", "--host", "b", dir}, false, contract.ExitUsage, "--split runs its jobs on one place: give at most one --host"},
		{"split over more jobs than cases, before any build", []string{"submit", "--cpu", "--split", "200", dir}, true, contract.ExitUsage, "; split it over at most"},
		{"no daemon", []string{"submit", "--cpu", dir}, true, contract.ExitInfra, "cannot reach the Docker daemon"},
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

// xrun run --local of a GPU spec on a machine without a GPU is the user's
// choice to make: exit 3, naming xrun's own flag.
func TestRunLocalWithoutGPU(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi: the test needs a machine without a GPU (CI's has none)")
	}
	ta := newTestApp(t)
	dir := experiment(t, ta)
	code := ta.run(context.Background(), "run", "--local", "--out", t.TempDir(), dir)
	if code != contract.ExitUsage || !strings.Contains(ta.err.String(), "but this machine has none") ||
		!strings.Contains(ta.err.String(), "pass --cpu to run the CPU sweep instead") || strings.Contains(ta.err.String(), "XRUN_MODE") {
		t.Errorf("exit %d, stderr:\n%s", code, ta.err)
	}
}
