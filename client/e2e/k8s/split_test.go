//go:build integration

package k8s

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/result"
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
	wj, _ := xruntest.DecodeJob(t, whole)
	want := x.Results(t, wj.ID)

	split := submit(t, 10*time.Minute, dir, "--cpu", "--split", "2", "--json")
	expect(t, split, 0, "part 1/2: job", "part 2/2: job")
	gj, _ := xruntest.DecodeJob(t, split)
	got := x.Results(t, gj.ID)
	if got.Status != result.StatusSucceeded || got.Split == nil || got.Split.Parts != 2 || len(got.Split.Jobs) != 2 {
		t.Fatalf("gathered job %s: status %s, split %+v", gj.ID, got.Status, got.Split)
	}
	if a, b := xruntest.CaseStatuses(want), xruntest.CaseStatuses(got); a != b {
		t.Errorf("gathered cases differ from the whole sweep's:\n whole: %s\ngather: %s", a, b)
	}
	var parts []*result.Results
	for _, sj := range got.Split.Jobs {
		if !strings.HasPrefix(sj.Host, "k8s://") || sj.Status != result.StatusSucceeded {
			t.Errorf("part %+v", sj)
		}
		parts = append(parts, x.Results(t, sj.JobID))
	}
	// Both parts' pods ran at once on the node.
	if len(parts) == 2 && (parts[0].FinishedAt == nil || parts[1].FinishedAt == nil ||
		!parts[0].CreatedAt.Before(*parts[1].FinishedAt) || !parts[1].CreatedAt.Before(*parts[0].FinishedAt)) {
		t.Errorf("the parts did not run at once: part 1 %s-%v, part 2 %s-%v", parts[0].CreatedAt, parts[0].FinishedAt, parts[1].CreatedAt, parts[1].FinishedAt)
	}
	logs := x.Run(t, time.Minute, "logs", gj.ID)
	expect(t, logs, 0)
	if strings.Count(logs.Stdout, "status: succeeded") != 2 || !strings.Contains(logs.Stdout, "==> part 2/2: job") {
		t.Errorf("the gathered log is not its two parts' logs:\n%s", logs.Stdout)
	}
}
