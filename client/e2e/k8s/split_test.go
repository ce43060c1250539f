//go:build integration

package k8s

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

// TestSplitSweep splits a CPU sweep of four cases over two Kubernetes
// Jobs, which the cluster runs side by side, and gathers them into one
// job whose cases are those of the sweep run whole in one Job: the same
// cases in the same order, each run by the same implementations to the
// same status.
func TestSplitSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quick")
	if out, err := exec.Command("cp", "-r", fixtureDir("quick"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v\n%s", err, out)
	}
	xruntest.SweepOfFour(t, dir)

	whole := submit(t, 10*time.Minute, dir, "--cpu", "--json")
	expect(t, whole, 0)
	split := submit(t, 10*time.Minute, dir, "--cpu", "--split", "2", "--json")
	expect(t, split, 0, "part 1/2: job", "part 2/2: job")
	x.CheckSplitSweep(t, whole, split, "k8s://")
}
