package lifecycle

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/result"
)

func TestExtractTarRefusesEscapes(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "out/../../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	dir := t.TempDir()
	if err := ExtractTar(&buf, filepath.Join(dir, "out"), MaxOutputBytes); err == nil {
		t.Error("an entry leaving the directory was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
		t.Error("evil file exists")
	}
}

func TestFailureSentence(t *testing.T) {
	r := &result.Results{Implementations: []string{"fast", "big"}, Cases: []result.Case{
		{Label: "n=1", Results: map[string]*result.ImplResult{"reference": {Status: "ok"}, "fast": {Status: "ok"}, "big": {Status: "skipped"}}},
		{Label: "n=2", Results: map[string]*result.ImplResult{"reference": {Status: "ok"}, "fast": {Status: "crashed", Error: "the worker died during check (signal 11, segmentation fault)"},
			"big": {Status: "oom", Error: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 TiB.\nTraceback..."}}},
	}}
	got := FailureSentence(r)
	want := "implementation fast crashed at n=2: the worker died during check (signal 11, segmentation fault); 1 more failed"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	r.Cases[1].Results["fast"].Status = "ok"
	got = FailureSentence(r)
	want = "implementation big ran out of GPU memory at n=2 (torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 TiB.): make the case smaller or run it on a GPU with more memory"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	r.Cases[1].Results["big"].Status = "ok"
	if got := FailureSentence(r); got != "" {
		t.Errorf("no failure: got %q", got)
	}
}

// collector is a backend that only collects: any call to Logs or CopyOut
// (the two reads Collect replaces) panics on the nil Backend it embeds.
type collector struct {
	backend.Backend
	logs []byte
	tar  []byte
	err  error
}

func (c collector) Collect(context.Context, *jobs.Job) ([]byte, io.ReadCloser, error) {
	if c.tar == nil {
		return c.logs, nil, c.err
	}
	return c.logs, io.NopCloser(bytes.NewReader(c.tar)), c.err
}

func TestFetchOutputsCollects(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte(`{"status":"succeeded"}`)
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "out/" + result.FileName, Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644})
	tw.Write(body)
	tw.Close()
	noOutput := fmt.Errorf("pod p: no output: %w", backend.ErrNotFound)
	for _, tc := range []struct {
		name     string
		c        collector
		wantErr  bool
		wantLogs string // logs.txt, where the collector returns a log
		wantOut  bool
	}{
		{"log and output", collector{logs: []byte("line\n"), tar: buf.Bytes()}, false, "line\n", true},
		{"log without output", collector{logs: []byte("died\n"), err: noOutput}, false, "died\n", false},
		{"empty log", collector{logs: []byte{}, err: noOutput}, false, "", false},
		{"no log", collector{err: fmt.Errorf("job x has no log yet: %w", backend.ErrNotFound)}, true, "", false},
		{"bad output", collector{logs: []byte("line\n"), err: errors.New("output frame: bad checksum")}, true, "line\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := jobs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			j := &jobs.Job{ID: "a1b2c3d4e5f6"}
			if err := st.Create(j); err != nil {
				t.Fatal(err)
			}
			err = FetchOutputs(context.Background(), tc.c, st, j)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			logs, lerr := os.ReadFile(filepath.Join(st.Dir(j.ID), jobs.LogsFile))
			if tc.c.logs != nil && (lerr != nil || string(logs) != tc.wantLogs) {
				t.Errorf("logs.txt = %q, %v; want %q", logs, lerr, tc.wantLogs)
			}
			if tc.c.logs == nil && lerr == nil {
				t.Errorf("logs.txt written for a job without a log: %q", logs)
			}
			got, rerr := os.ReadFile(filepath.Join(st.Dir(j.ID), jobs.ResultsFile))
			if tc.wantOut != (rerr == nil) || tc.wantOut && !bytes.Equal(got, body) {
				t.Errorf("results.json = %q, %v; want it: %v", got, rerr, tc.wantOut)
			}
		})
	}
}

// A job the client stopped for its timeout says so in the store's
// results.json, where the runner, which saw only SIGTERM, wrote cancelled.
func TestFinalizeTimeoutReason(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte(fmt.Sprintf(`{"schema_version":%d,"status":"cancelled","error":"cancelled","implementations":["slow"],`, result.SchemaVersion) +
		`"cases":[{"label":"n=1","results":{"slow":{"status":"not_run","error":"cancelled"}}}],` +
		`"criteria":[{"name":"every implementation correct","kind":"correct","value":0,"threshold":0,"passed":false,"detail":"slow did not run (not_run: cancelled) at n=1"}]}`)
	tw.WriteHeader(&tar.Header{Name: "out/" + result.FileName, Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644})
	tw.Write(body)
	tw.Close()
	st, err := jobs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &jobs.Job{ID: "a1b2c3d4e5f6", Timeout: "3s"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	j.Status, j.StoppedBy, j.Error = result.StatusTimeout, result.StatusTimeout, timeoutMessage(j)
	c := collector{logs: []byte("line\n"), tar: buf.Bytes()}
	if err := Finalize(context.Background(), c, st, j, backend.State{Phase: backend.Exited, ExitCode: 130}); err != nil {
		t.Fatal(err)
	}
	if j.Status != result.StatusTimeout || j.Error != "ran past its timeout of 3s" {
		t.Errorf("record: status %s error %q", j.Status, j.Error)
	}
	r, err := result.ReadFile(filepath.Join(st.Dir(j.ID), jobs.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != result.StatusTimeout || r.Error != j.Error {
		t.Errorf("results.json: status %s error %q, want %s %q", r.Status, r.Error, result.StatusTimeout, j.Error)
	}
	if ir := r.Cases[0].Results["slow"]; ir.Status != result.ImplNotRun || ir.Error != j.Error {
		t.Errorf("slow: %s %q", ir.Status, ir.Error)
	}
	if got, want := r.Criteria[0].Detail, "slow did not run (not_run: ran past its timeout of 3s) at n=1"; got != want {
		t.Errorf("criterion detail %q, want %q", got, want)
	}
}
