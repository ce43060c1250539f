//go:build integration

package slurm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/spec"
)

// On the one-node cluster of scripts/slurm-cluster with its node drained,
// sbatch --test-only refuses every job. A job the node could run goes on
// all the same, saying that it waits for the drained node; sbatch queues
// it (ReqNodeNotAvail), and it runs once the node is resumed. A job the
// node could never run (more GPUs or memory than it has) is still
// refused, saying what is missing. gpu_type names the node's GPUs in any
// case.
func TestDrainedNodeQueues(t *testing.T) {
	tmp := t.TempDir()
	startCluster(t, tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sh := LocalShell{}
	host, err := sh.Run(ctx, "hostname -s", nil)
	if err != nil {
		t.Fatal(err)
	}
	nodeName := strings.TrimSpace(string(host))
	scontrol := func(args string) {
		t.Helper()
		if out, err := sh.Run(ctx, "scontrol update nodename="+nodeName+" "+args, nil); err != nil {
			t.Fatalf("scontrol update %s: %v %s", args, err, out)
		}
	}
	scontrol(`state=drain reason="disk swap"`)

	// A runner that exits 0: the test is about getting a node.
	code, runner := stubExperiment(t, tmp, "#!/bin/sh\nexit 0\n")
	var log strings.Builder
	b := &Backend{Shell: sh, Settings: Settings{Dir: filepath.Join(tmp, "jobs")}, Log: &log, Poll: 200 * time.Millisecond}
	job := func(id string, gpus int, mem int64) (*store.Job, backend.Spec) {
		return &store.Job{ID: id, Timeout: "1m"},
			backend.Spec{Name: "xrun-drain-" + id, Code: code, Runner: runner, GPUs: &backend.GPUs{Count: gpus}, GPUType: "FAKE", MemoryBytes: mem, Timeout: time.Minute}
	}

	// What no node could run is refused, drained or not.
	var refused *backend.RefusedError
	j, s := job("000000000001", 5, 0)
	if err := b.Create(ctx, j, s); !errors.As(err, &refused) || !strings.Contains(refused.Reason, "the job asks for 5 fake GPUs and the most a node of it has is 2") {
		t.Errorf("5 GPUs on a node of 2: %v", err)
	}
	j, s = job("000000000002", 1, 1<<50)
	if err := b.Create(ctx, j, s); !errors.As(err, &refused) || !strings.Contains(refused.Reason, "MiB of memory and the most a node of it has is") {
		t.Errorf("1 PiB of memory: %v", err)
	}
	if log.Len() > 0 {
		t.Errorf("a refused job said %q", log.String())
	}

	j, s = job("000000000003", 1, 0)
	if err := b.Create(ctx, j, s); err != nil {
		t.Fatalf("a job for the drained node: %v", err)
	}
	if want := "Slurm partition debug: node " + nodeName + " is drained (disk swap); the job waits for it\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	if err := b.Start(ctx, j); err != nil {
		t.Fatalf("sbatch: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := b.State(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		if st.Phase != backend.Pending {
			t.Fatalf("the job of the drained node is %+v, want pending", st)
		}
		// Slurm's reason, in its short words or its long ones.
		if strings.Contains(st.Message, "ReqNodeNotAvail") || strings.Contains(st.Message, "DRAINED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job waits with %q, want Slurm's ReqNodeNotAvail", st.Message)
		}
		time.Sleep(b.poll())
	}

	scontrol("state=resume")
	st, err := b.Wait(ctx, j)
	if err != nil || st.Phase != backend.Exited || st.ExitCode != 0 {
		t.Errorf("the job once the node was resumed: %+v, %v", st, err)
	}
}

// stubExperiment makes in tmp an experiment of one empty file, collected
// as a submit collects it, and a stand-in for the runner whose text is
// runner.
func stubExperiment(t *testing.T, tmp, runner string) (*buildctx.Context, string) {
	t.Helper()
	exp := filepath.Join(tmp, "exp")
	os.MkdirAll(exp, 0o755)
	os.WriteFile(filepath.Join(exp, "experiment.py"), []byte("pass\n"), 0o644)
	code, err := buildctx.Collect(exp, &spec.Spec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmp, "xrun-runner")
	if err := os.WriteFile(path, []byte(runner), 0o755); err != nil {
		t.Fatal(err)
	}
	return code, path
}

// startCluster starts the one-node cluster of scripts/slurm-cluster with
// its state in tmp, stops it when t ends, and points SLURM_CONF at it.
func startCluster(t *testing.T, tmp string) {
	testenv.Root(t, "the test cluster's slurmd starts jobs as their users")
	for _, c := range []string{"munged", "slurmctld", "slurmd", "sbatch"} {
		if _, err := exec.LookPath(c); err != nil {
			testenv.Missing(t, "%s is not installed: run make setup (Debian's slurm-wlm and munge)", c)
		}
	}
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tmp, "cluster")
	script := func(name string) error {
		cmd := exec.Command(filepath.Join(repo, "scripts", "slurm-cluster", name), state)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("%s: %s", name, out)
		}
		return err
	}
	t.Cleanup(func() { script("down.sh") })
	if err := script("up.sh"); err != nil {
		t.Fatalf("start the test cluster: %v", err)
	}
	t.Setenv("SLURM_CONF", filepath.Join(state, "slurm.conf"))
}
