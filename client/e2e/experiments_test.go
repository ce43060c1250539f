//go:build integration

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// TorchBase is the CPU base with Debian's PyTorch that the experiments'
// CPU sweeps run on (`make cpu-base`, or images/make-cpu-base.sh --torch).
const TorchBase = "xrun/cpu-torch:bookworm"

// TestExperimentsOnCPU submits every experiment under experiments/ with
// --cpu, as a user on a host without a GPU would: each must build, run its
// CPU sweep, check what runs on a CPU against its reference, skip the
// GPU-only implementations with a reason, and succeed.
func TestExperimentsOnCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image per experiment; skipped with -short")
	}
	if ok, err := eng.ImageExists(context.Background(), TorchBase); err != nil || !ok {
		msg := "the CPU base " + TorchBase + " is missing: run `make cpu-base`"
		testenv.Missing(t, "%s", msg)
	}
	dirs, err := filepath.Glob(filepath.Join(repo, "experiments", "*", spec.FileName))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no experiments found: %v", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, err := spec.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := x.Run(t, 10*time.Minute, "submit", "--json", "--cpu", "--base", TorchBase, "--label", labelArg, dir)
			expect(t, r, 0)
			id := xruntest.JobID(t, r)
			out := x.Run(t, time.Minute, "results", "--json", id)
			expect(t, out, 0)
			res, err := result.Decode([]byte(out.Stdout))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != result.StatusSucceeded || res.Mode != "cpu" || !res.Success {
				t.Fatalf("status %s, mode %s, success %v", res.Status, res.Mode, res.Success)
			}
			if len(res.Cases) != len(s.Benchmark.Cases(true)) {
				t.Errorf("%d cases, the CPU sweep has %d", len(res.Cases), len(s.Benchmark.Cases(true)))
			}
			checked := 0
			for _, c := range res.Cases {
				for name, ir := range c.Results {
					switch ir.Status {
					case result.ImplOK:
						if name != "reference" {
							checked++
						}
					case result.ImplSkipped:
						if ir.Error == "" {
							t.Errorf("%s at %s skipped without a reason", name, c.Label)
						}
					default:
						t.Errorf("%s at %s: %s: %s", name, c.Label, ir.Status, ir.Error)
					}
				}
			}
			t.Logf("%s: %d implementation checks passed on the CPU", s.Name, checked)
			expect(t, x.Run(t, time.Minute, "rm", id), 0)
		})
	}
}
