package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hangingPython is a fake interpreter whose probe never answers; cancel is
// called once its probe has started.
func hangingPython(t *testing.T, cancel context.CancelFunc) string {
	t.Helper()
	py, err := filepath.Abs("testdata/hangpython/python3")
	if err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	t.Setenv("XRUN_TEST_PROBE_STARTED", started)
	go func() {
		for i := 0; i < 400; i++ {
			if _, err := os.Stat(started); err == nil {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		cancel()
	}()
	return py
}

// A stop while an interpreter is probed is the stop, not a machine without
// Python: the killed probe must not read as "no Python found".
func TestFindPythonCancelledWhileProbing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefer bool
	}{{"candidates", false}, {"--python", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			py := hangingPython(t, cancel)
			prefer := ""
			if tc.prefer {
				prefer = py
			} else {
				old := Candidates
				Candidates = []string{py, "python3"}
				t.Cleanup(func() { Candidates = old })
			}
			start := time.Now()
			_, err := FindPython(ctx, prefer, nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want one that wraps context.Canceled", err)
			}
			if msg := err.Error(); strings.Contains(msg, "no Python") || strings.Contains(msg, "cannot run the harness") || !strings.Contains(msg, "looking for Python") {
				t.Errorf("err %q blames the interpreter", msg)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the stop took %s", d)
			}
		})
	}
}

func TestFindPythonAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FindPython(ctx, "", nil); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "no Python") {
		t.Errorf("err %v", err)
	}
}
