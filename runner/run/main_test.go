package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
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

// Every case logs progress lines the client can read back: the case of
// how many, checking first, then each implementation as it is timed.
func TestRunLogsProgressLines(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), "xrun-runner",
		[]string{"--experiment", "testdata/numpy-saxpy", "--out", out, "--python", py, "--mode", "cpu"}, &stdout, &stderr)
	if code != contract.ExitSucceeded {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var events []contract.Progress
	for _, line := range strings.Split(stderr.String(), "\n") {
		if e, ok := contract.ParseProgress(line); ok {
			events = append(events, e)
		}
	}
	if len(events) == 0 {
		t.Fatalf("no progress lines in the log:\n%s", stderr.String())
	}
	first, last := events[0], events[len(events)-1]
	if first.Case != 1 || first.Phase != contract.PhaseCheck {
		t.Errorf("first progress line %+v, want case 1 checking", first)
	}
	if last.Case != last.Cases || last.Phase != contract.PhaseTime || last.Impl == "" {
		t.Errorf("last progress line %+v, want the last case timing an implementation", last)
	}
	if last.Cases > 1 && last.Done <= 0 {
		t.Errorf("last progress line %+v: the finished cases took no time", last)
	}
}

// A run that stops on a bad spec logs its error once: the log's "error:"
// line, not again as the runner's last line.
func TestMainSaysTheErrorOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	py := python(t)
	exp := filepath.Join(t.TempDir(), "numpy-saxpy")
	if err := os.CopyFS(exp, os.DirFS("testdata/numpy-saxpy")); err != nil {
		t.Fatal(err)
	}
	yaml := filepath.Join(exp, "xrun.yaml")
	data, _ := os.ReadFile(yaml)
	if err := os.WriteFile(yaml, bytes.Replace(data, []byte("ops:saxpy_loop"), []byte("ops:saxpy_lop"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), "xrun-runner",
		[]string{"--experiment", exp, "--out", t.TempDir(), "--python", py, "--mode", "cpu"}, &stdout, &stderr)
	if code != contract.ExitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, contract.ExitUsage, stderr.String())
	}
	if n := strings.Count(stderr.String(), "has no function saxpy_lop; did you mean saxpy_loop?"); n != 1 {
		t.Errorf("the error is in the log %d times, want 1:\n%s", n, stderr.String())
	}
}
