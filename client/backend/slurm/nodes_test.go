package slurm

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
)

// sinfo's answer (sinfoNodes) on a cluster of two partitions: gpu (the
// default) with a drained node, a node that is down and not responding,
// and a busy one; big with one node that is not responding.
const testSinfo = `g1|gpu*|drained|257000|gpu:a100:4(S:0-1)|ib,a100|disk swap
g2|gpu*|down*|257000|gpu:a100:4(S:0-1)|ib,a100|Not responding
g3|gpu*|mixed|128000|gpu:V100:2,gpu:a100:1|ib|none
b1|big|idle*|1000000|(null)|(null)|none
`

func TestParseNodes(t *testing.T) {
	part, nodes := parseNodes(testSinfo, "")
	if part != "gpu" || len(nodes) != 3 {
		t.Fatalf("default partition: %q, %+v", part, nodes)
	}
	g1, g3 := nodes[0], nodes[2]
	if g1.name != "g1" || g1.memMiB != 257000 || g1.gpus["a100"] != 4 || g1.reason != "disk swap" || g1.usable() || len(g1.features) != 2 {
		t.Errorf("g1: %+v", g1)
	}
	if nodes[1].usable() || !g3.usable() || g3.reason != "" || g3.gpuCount("") != 3 || g3.gpuCount("V100") != 2 {
		t.Errorf("g2, g3: %+v %+v", nodes[1], g3)
	}
	if part, nodes := parseNodes(testSinfo, "big"); part != "big" || len(nodes) != 1 || nodes[0].usable() || len(nodes[0].gpus) != 0 {
		t.Errorf("partition big: %q %+v", part, nodes)
	}
	if _, nodes := parseNodes(testSinfo, "nope"); len(nodes) != 0 {
		t.Errorf("a partition sinfo does not list: %+v", nodes)
	}
	for state, usable := range map[string]bool{"idle": true, "idle~": true, "mixed-": true, "allocated": true, "completing": true,
		"drained": false, "draining": false, "down": false, "down*": false, "idle*": false, "fail": false, "maint": false, "drained*": false} {
		if got := (node{state: state}).usable(); got != usable {
			t.Errorf("state %s: usable %v, want %v", state, got, usable)
		}
	}
}

func TestWaitLineAndMissing(t *testing.T) {
	_, gpu := parseNodes(testSinfo, "gpu")
	_, big := parseNodes(testSinfo, "big")
	for _, c := range []struct {
		name       string
		nodes      []node
		r          request
		wait, lack string
	}{
		{"4 a100: the nodes that have them are drained and down", gpu, request{gpus: 4, gpuType: "a100"},
			"Slurm partition gpu: node g1 is drained (disk swap), node g2 is down and not responding (Not responding); the job waits for one of them", ""},
		{"one node could, and takes jobs: not a matter of node states", gpu, request{gpus: 1, gpuType: "a100"}, "", ""},
		{"the memory only the drained nodes have", gpu, request{memMiB: 200000}, "Slurm partition gpu: node g1 is drained (disk swap), node g2 is down and not responding (Not responding); the job waits for one of them", ""},
		{"a feature only the drained nodes have", gpu, request{constraint: "a100"}, "Slurm partition gpu: node g1 is drained (disk swap), node g2 is down and not responding (Not responding); the job waits for one of them", ""},
		{"more GPUs than any node has", gpu, request{gpus: 8}, "", "the job asks for 8 GPUs and the most a node of it has is 4"},
		{"8 typed GPUs", gpu, request{gpus: 8, gpuType: "a100"}, "", "the job asks for 8 a100 GPUs and the most a node of it has is 4"},
		{"a GPU type no node has", gpu, request{gpus: 1, gpuType: "h100"}, "", "the job asks for GPUs of type h100 and its nodes have GPUs of type V100, a100"},
		{"too much memory", gpu, request{memMiB: 300000}, "", "the job asks for 300000 MiB of memory and the most a node of it has is 257000 MiB"},
		{"GPUs and memory", gpu, request{gpus: 8, memMiB: 300000}, "", "the job asks for 8 GPUs and the most a node of it has is 4; the job asks for 300000 MiB of memory and the most a node of it has is 257000 MiB"},
		{"no node has both", gpu, request{gpus: 2, gpuType: "V100", memMiB: 200000}, "", "no node of it has all the job asks for together"},
		{"an unknown feature", gpu, request{constraint: "h100"}, "", "no node of it has the feature h100 (--constraint)"},
		{"GPUs in a partition without", big, request{gpus: 1}, "", "the job asks for 1 GPU and none of its nodes has any (gres gpu)"},
		{"the not-responding node", big, request{memMiB: 1000}, "Slurm partition big: node b1 is not responding; the job waits for it", ""},
		{"a partition sinfo did not list", nil, request{gpus: 1}, "", ""},
	} {
		part := "gpu"
		if len(c.nodes) == 1 {
			part = "big"
		}
		if got := waitLine(part, c.nodes, c.r); got != c.wait {
			t.Errorf("%s: waitLine = %q, want %q", c.name, got, c.wait)
		}
		if got := missing(c.nodes, c.r); c.wait == "" && got != c.lack {
			t.Errorf("%s: missing = %q, want %q", c.name, got, c.lack)
		}
	}
}

func TestGresType(t *testing.T) {
	_, nodes := parseNodes(testSinfo, "gpu")
	for in, want := range map[string]string{"A100": "a100", "v100": "V100", "a100": "a100", "h100": "h100"} {
		if got := gresType(nodes, in); got != want {
			t.Errorf("gresType(%q) = %q, want %q", in, got, want)
		}
	}
}

// testShell answers sbatch --test-only with a refusal, and sinfo with
// testSinfo.
type testShell struct {
	refusal string
	ran     []string
}

func (s *testShell) Run(_ context.Context, script string, _ io.Reader) ([]byte, error) {
	s.ran = append(s.ran, script)
	switch {
	case strings.HasPrefix(script, "sbatch --test-only"):
		if s.refusal == "" {
			return nil, nil
		}
		return nil, &ExitError{Code: 1, Stderr: "sbatch: error: Batch job submission failed: " + s.refusal + "\n"}
	case script == sinfoNodes:
		return []byte(testSinfo), nil
	}
	return nil, errors.New("unexpected script " + script)
}

func (s *testShell) Stream(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("no stream")
}

func (s *testShell) Where() string { return "the test" }

// sbatch --test-only refuses a job whose nodes are drained, which sbatch
// queues: the job goes on with a line on what it waits for. A job no node
// could run is refused, saying what is missing; other refusals are
// Slurm's alone.
func TestTestOnly(t *testing.T) {
	ctx := context.Background()
	noConfig := "Requested node configuration is not available"
	sh := &testShell{refusal: noConfig}
	var log strings.Builder
	b := &Backend{Shell: sh, Log: &log}
	spec := backend.Spec{GPUs: &backend.GPUs{Count: 4}, GPUType: "a100"}
	if err := b.testOnly(ctx, "", spec, nil); err != nil {
		t.Fatalf("a job for drained nodes: %v", err)
	}
	if want := "Slurm partition gpu: node g1 is drained (disk swap), node g2 is down and not responding (Not responding); the job waits for one of them\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}

	spec.GPUs.Count = 8
	err := b.testOnly(ctx, "", spec, nil)
	var refused *backend.RefusedError
	if !errors.As(err, &refused) || refused.Where != "Slurm partition gpu" ||
		refused.Reason != noConfig+": the job asks for 8 a100 GPUs and the most a node of it has is 4 (ask for less, or pick another --partition)" {
		t.Errorf("8 GPUs: %v", err)
	}

	// Some versions of Slurm say this of a GPU type no node has.
	sh.refusal = "Invalid generic resource (gres) specification"
	spec.GPUs.Count, spec.GPUType = 1, "h100"
	if err := b.testOnly(ctx, "", spec, nil); !errors.As(err, &refused) ||
		refused.Reason != sh.refusal+": the job asks for GPUs of type h100 and its nodes have GPUs of type V100, a100 (ask for less, or pick another --partition)" {
		t.Errorf("a GPU type no node has: %v", err)
	}

	// A refusal that is not about the nodes is Slurm's alone.
	sh.refusal, spec.GPUType = "Invalid account or account/partition combination specified", "a100"
	if err := b.testOnly(ctx, "", spec, nil); !errors.As(err, &refused) || refused.Reason != sh.refusal {
		t.Errorf("an unknown account: %v", err)
	}
	sh.refusal, sh.ran = "", nil
	if err := b.testOnly(ctx, "", spec, nil); err != nil || len(sh.ran) != 1 {
		t.Errorf("a job sbatch takes: %v after %q", err, sh.ran)
	}
}
