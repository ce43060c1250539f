//go:build integration

package slurm_test

import (
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

// TestSplitSweep splits a CPU sweep of four cases over two Slurm jobs,
// which the cluster's node runs at once (it has two CPUs; each job asks
// for one), and gathers them into one job whose cases are those of the
// sweep run whole in one job: the same cases in the same order, each run
// by the same implementations to the same status.
func TestSplitSweep(t *testing.T) {
	dir := fixture(t, "quick")
	xruntest.SweepOfFour(t, dir)

	whole := x.Run(t, 4*time.Minute, "submit", "--slurm", "--cpu", "--json", dir)
	xruntest.Expect(t, whole, 0)
	split := x.Run(t, 4*time.Minute, "submit", "--slurm", "--cpu", "--split", "2", "--json", dir)
	xruntest.Expect(t, split, 0, "part 1/2: job", "part 2/2: job")
	x.CheckSplitSweep(t, whole, split, "slurm+local://")
}
