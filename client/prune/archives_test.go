package prune

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
)

type fakeArchives struct {
	list    []backend.Archive
	removed []string
	fail    string
}

func (f *fakeArchives) Where() string { return "slurm://hpc" }
func (f *fakeArchives) Archives(context.Context) ([]backend.Archive, error) {
	return f.list, nil
}
func (f *fakeArchives) RemoveArchive(_ context.Context, name string) error {
	if name == f.fail {
		return errors.New("permission denied")
	}
	f.removed = append(f.removed, name)
	return nil
}

// An archive that a job that has not ended loads stays whatever its age;
// one copied or used within --older-than stays; the rest go, and a
// removal that fails is reported, not hidden.
func TestClusterArchives(t *testing.T) {
	old := time.Now().Add(-2 * time.Hour)
	f := &fakeArchives{list: []backend.Archive{
		{Name: "xrun_a_1.tar", Bytes: 100, Modified: old, InUse: true},
		{Name: "xrun_b_2.tar", Bytes: 200, Modified: time.Now()},
		{Name: "xrun_c_3.tar", Bytes: 300, Modified: old},
		{Name: "xrun_d_4.tar.77", Bytes: 50, Modified: old},
		{Name: "xrun_e_5.tar", Bytes: 10, Modified: old},
	}, fail: "xrun_e_5.tar"}
	var out bytes.Buffer
	dry, err := ClusterArchives(context.Background(), f, Options{DryRun: true, OlderThan: time.Hour, Out: &out})
	if err != nil || len(f.removed) != 0 || len(dry.Removed) != 3 {
		t.Fatalf("dry run removed %v, reported %+v, %v", f.removed, dry.Removed, err)
	}
	if !strings.Contains(out.String(), "would remove xrun_c_3.tar (300B, copied or used ") {
		t.Errorf("dry run said:\n%s", out.String())
	}
	rep, err := ClusterArchives(context.Background(), f, Options{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.removed, " ") != "xrun_c_3.tar xrun_d_4.tar.77" || rep.Bytes != 350 || rep.InUse != 1 || rep.Young != 1 {
		t.Errorf("removed %v, report %+v", f.removed, rep)
	}
	if rep.Err() == nil || !strings.Contains(rep.Err().Error(), "permission denied") {
		t.Errorf("the failed removal: %v", rep.Err())
	}
	var sum bytes.Buffer
	rep.Summary(&sum, Options{OlderThan: time.Hour})
	if !strings.Contains(sum.String(), "removed 2 images from slurm://hpc") || !strings.Contains(sum.String(), "kept 1 loaded by jobs that have not ended and 1 copied or used in the last 1h0m0s") {
		t.Errorf("summary: %s", sum.String())
	}
}
