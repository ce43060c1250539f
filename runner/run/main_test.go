package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"
)

// The final table is printed once: by Main on stderr when the runner is run
// by hand, and by nobody inside a job's container (XRUN_JOB_ID set), whose
// client prints it from results.json after streaming this log. runner.log
// keeps it either way.
func TestMainPrintsTheTableOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	for _, tc := range []struct {
		jobID string
		want  int
	}{{"", 1}, {"0123456789ab", 0}} {
		t.Run("job="+tc.jobID, func(t *testing.T) {
			t.Setenv(contract.EnvJobID, tc.jobID)
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), "xrun-runner",
				[]string{"--experiment", "testdata/numpy-saxpy", "--out", out, "--python", py, "--mode", "cpu"}, &stdout, &stderr)
			if code != contract.ExitSucceeded {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			head := regexp.MustCompile(`CASE +IMPL +STATUS`)
			if n := len(head.FindAllString(stderr.String(), -1)); n != tc.want {
				t.Errorf("the table is on stderr %d times, want %d:\n%s", n, tc.want, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
			log, err := os.ReadFile(filepath.Join(out, "runner.log"))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(head.FindAllString(string(log), -1)); n != 1 {
				t.Errorf("runner.log has the table %d times:\n%s", n, log)
			}
		})
	}
}

// A cancelled run's last line says so in words, with how long it ran:
// never Go's "context canceled".
func TestExitLineSaysCancelledInWords(t *testing.T) {
	got := exitLine(fmt.Errorf("case 2: %w", context.Canceled), 12340*time.Millisecond)
	if want := "cancelled after 12.3 s; partial results kept"; got != want {
		t.Errorf("exitLine = %q, want %q", got, want)
	}
	if got := exitLine(errors.New("no python3 with numpy"), time.Second); got != "no python3 with numpy" {
		t.Errorf("exitLine of another error = %q", got)
	}
}
