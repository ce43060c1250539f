//go:build integration

package slurm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/result"
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
	wj, _ := xruntest.DecodeJob(t, whole)
	want := x.Results(t, wj.ID)

	split := x.Run(t, 4*time.Minute, "submit", "--slurm", "--cpu", "--split", "2", "--json", dir)
	xruntest.Expect(t, split, 0, "part 1/2: job", "part 2/2: job")
	gj, _ := xruntest.DecodeJob(t, split)
	got := x.Results(t, gj.ID)
	if got.Status != result.StatusSucceeded || got.Split == nil || got.Split.Parts != 2 || len(got.Split.Jobs) != 2 {
		t.Fatalf("gathered job %s: status %s, split %+v", gj.ID, got.Status, got.Split)
	}
	if a, b := xruntest.CaseStatuses(want), xruntest.CaseStatuses(got); a != b {
		t.Errorf("gathered cases differ from the whole sweep's:\n whole: %s\ngather: %s", a, b)
	}
	// Both parts ran at once, each on the node's CPUs.
	var parts []*result.Results
	for _, sj := range got.Split.Jobs {
		if !strings.HasPrefix(sj.Host, "slurm+local://") || sj.Status != result.StatusSucceeded {
			t.Errorf("part %+v", sj)
		}
		parts = append(parts, x.Results(t, sj.JobID))
	}
	if len(parts) == 2 && (parts[0].FinishedAt == nil || parts[1].FinishedAt == nil ||
		!parts[0].CreatedAt.Before(*parts[1].FinishedAt) || !parts[1].CreatedAt.Before(*parts[0].FinishedAt)) {
		t.Errorf("the parts did not run at once: part 1 %s-%v, part 2 %s-%v", parts[0].CreatedAt, parts[0].FinishedAt, parts[1].CreatedAt, parts[1].FinishedAt)
	}
	// The gathered job's log is its parts' logs, and status names them.
	logs := x.Run(t, time.Minute, "logs", gj.ID)
	xruntest.Expect(t, logs, 0)
	if strings.Count(logs.Stdout, "status: succeeded") != 2 || !strings.Contains(logs.Stdout, "==> part 2/2: job") {
		t.Errorf("the gathered log is not its two parts' logs:\n%s", logs.Stdout)
	}
}
