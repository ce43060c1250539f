package job

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// A split sweep's id names no record until its parts are gathered:
// Resolve says what it is and how to gather it, and Gather refuses a
// sweep one of whose parts is gone.
func TestPartsOfASplitSweep(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{Store: st, Err: io.Discard}
	for _, k := range []string{"3/3", "1/3"} {
		if err := st.Create(&store.Job{Experiment: "e", Status: result.StatusSucceeded, Split: k, SplitOf: "a1b2c3d4e5f6"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = m.Resolve("a1b2")
	var pe *PartsError
	if !errors.As(err, &pe) || pe.ID != "a1b2c3d4e5f6" || len(pe.Parts) != 2 || pe.Parts[0].Split != "1/3" ||
		!strings.Contains(err.Error(), "`xrun wait a1b2c3d4e5f6` waits for them and gathers their results") {
		t.Fatalf("Resolve of a split sweep: %v", err)
	}
	if _, err := m.Gather(context.Background(), "a1b2c3d4e5f6"); err == nil || !strings.Contains(err.Error(), "part 2/3 of job a1b2c3d4e5f6 is not in this job store") {
		t.Errorf("Gather without part 2: %v", err)
	}
	if _, err := m.Resolve("ffff"); errors.As(err, &pe) {
		t.Errorf("Resolve of an unknown id: %v", err)
	}
}
