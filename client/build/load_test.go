package build

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

// specDir writes an experiment whose resources are res and returns its dir.
func specDir(t *testing.T, res string) string {
	t.Helper()
	dir := t.TempDir()
	y := "name: k\nimage: {base: test/base:1}\n" + res + "benchmark:\n  inputs: m:inputs\n  reference: m:ref\n  implementations:\n    a: {fn: m:a}\n"
	if err := os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The GPU request: the spec's (one GPU when it says none), --gpus over
// it, --cpu or resources.gpus: 0 for a CPU job, and --gpus 0 refused.
func TestLoadGPURequest(t *testing.T) {
	for _, c := range []struct {
		name, res, gpus string
		cpu             bool
		mode, label     string
		count           int
		ids             []string
	}{
		{name: "spec unset", mode: "gpu", label: "1", count: 1},
		{name: "spec count", res: "resources: {gpus: 2}\n", mode: "gpu", label: "2", count: 2},
		{name: "spec ids", res: "resources: {gpus: [0, 2]}\n", mode: "gpu", label: "0,2", ids: []string{"0", "2"}},
		{name: "spec all", res: "resources: {gpus: all}\n", mode: "gpu", label: "all", count: -1},
		{name: "spec zero", res: "resources: {gpus: 0}\n", mode: "cpu", label: "0"},
		{name: "spec none", res: "resources: {gpus: none}\n", mode: "cpu", label: "0"},
		{name: "flag over spec zero", res: "resources: {gpus: 0}\n", gpus: "device=1", mode: "gpu", label: "1", ids: []string{"1"}},
		{name: "flag over spec", res: "resources: {gpus: 2}\n", gpus: "1", mode: "gpu", label: "1", count: 1},
		{name: "cpu over spec", res: "resources: {gpus: 2}\n", cpu: true, mode: "cpu", label: "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Load(Options{Dir: specDir(t, c.res), GPUs: c.gpus, CPU: c.cpu})
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode != c.mode || p.GPULabel != c.label {
				t.Errorf("mode %s, label %s; want %s, %s", p.Mode, p.GPULabel, c.mode, c.label)
			}
			switch {
			case c.mode == "cpu" && p.GPUs != nil:
				t.Errorf("a CPU job asks for GPUs %+v", p.GPUs)
			case c.mode == "gpu" && (p.GPUs == nil || p.GPUs.Count != c.count || !slices.Equal(p.GPUs.IDs, c.ids)):
				t.Errorf("GPUs %+v, want count %d ids %v", p.GPUs, c.count, c.ids)
			}
		})
	}
	_, err := Load(Options{Dir: specDir(t, ""), GPUs: "0"})
	var ee *contract.ExitError
	if !errors.As(err, &ee) || ee.Code != contract.ExitUsage || !strings.Contains(err.Error(), "pass --cpu") {
		t.Errorf("--gpus 0: %v, want a usage error that names --cpu", err)
	}
}

// --timeout overrides resources.timeout; a spec that cannot be read is the
// user's to fix (exit 3).
func TestLoadTimeoutAndBadSpec(t *testing.T) {
	p, err := Load(Options{Dir: specDir(t, "resources: {timeout: 10m}\n")})
	if err != nil || p.Timeout != 10*time.Minute {
		t.Fatalf("timeout %v, %v", p.Timeout, err)
	}
	if p, err = Load(Options{Dir: specDir(t, "resources: {timeout: 10m}\n"), Timeout: time.Minute}); err != nil || p.Timeout != time.Minute {
		t.Errorf("--timeout 1m: %v, %v", p.Timeout, err)
	}
	_, err = Load(Options{Dir: t.TempDir()})
	var ee *contract.ExitError
	if !errors.As(err, &ee) || ee.Code != contract.ExitUsage {
		t.Errorf("no xrun.yaml: %v, want exit 3", err)
	}
}
