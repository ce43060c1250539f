package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// asXrun makes the test binary xrun itself (main), for the tests that
// run it as a process and signal it.
const asXrun = "XRUN_MAIN_TEST_AS_XRUN"

func TestMain(m *testing.M) {
	if os.Getenv(asXrun) == "1" {
		os.Args = append([]string{"xrun"}, os.Args[1:]...)
		main()
		return
	}
	os.Exit(m.Run())
}

// One Ctrl-C (SIGINT) stops xrun history import: it exits 130 at once,
// saying that the runs imported before it stay and the one in progress
// was rolled back; the history is consistent, and holds whole runs only
// (every one with all its points), as many as it said it imported.
func TestHistoryImportStopsAtFirstInterrupt(t *testing.T) {
	dir := t.TempDir()
	const runs, cases, impls = 40, 300, 10
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range runs {
		r := flat.Synthetic(cases, impls, fmt.Sprintf("int%03d", i), start.Add(time.Duration(i)*time.Hour), uint64(i))
		f := filepath.Join(dir, "runs", fmt.Sprintf("%03d", i), result.FileName)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := result.WriteFile(f, r); err != nil {
			t.Fatal(err)
		}
	}
	hist := filepath.Join(dir, "history.db")
	cmd := exec.Command(os.Args[0], "history", "import", "--history", hist, filepath.Join(dir, "runs"))
	cmd.Env = append(os.Environ(), asXrun+"=1", "XDG_DATA_HOME="+filepath.Join(dir, "data"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		cmd.Wait()
		t.Fatalf("no run imported: %s", stderr.String())
	}
	said := []string{lines.Text()}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("xrun history import went on 30 s after Ctrl-C; it said:\n%s\n%s", strings.Join(said, "\n"), stderr.String())
	}
	t.Logf("stopped %v after SIGINT, having imported %d of %d runs", time.Since(sent).Round(time.Millisecond), len(said), runs)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != contract.ExitCancelled {
		t.Fatalf("exit %v, want %d; it said:\n%s\n%s", err, contract.ExitCancelled, strings.Join(said, "\n"), stderr.String())
	}
	for _, want := range []string{"interrupted", "rolled back"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "container") {
		t.Errorf("an import has no container:\n%s", stderr.String())
	}
	if len(said) >= runs {
		t.Fatalf("all %d runs were imported: the interrupt was ignored", len(said))
	}
	s, err := history.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Runs("")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(said) {
		t.Errorf("the history holds %d runs, xrun said it imported %d", len(got), len(said))
	}
	counts, err := s.CountPoints(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if counts[r.ID] != cases*(impls+1) {
			t.Errorf("run %s has %d points, want %d: a run was half-written", r.JobID, counts[r.ID], cases*(impls+1))
		}
	}
}
