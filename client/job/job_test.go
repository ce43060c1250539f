package job

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
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
	want := "implementation fast crashed at n=2: the worker died during check (signal 11, segmentation fault); 1 other implementation failed"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// More cases of the same implementation are said as cases.
	r.Cases = append(r.Cases, result.Case{Label: "n=3", Results: map[string]*result.ImplResult{"fast": {Status: "crashed", Error: "x"}}})
	if got, want := FailureSentence(r), "; fast failed at 1 more case; 1 other implementation failed"; !strings.HasSuffix(got, want) {
		t.Errorf("got %q, want it to end %q", got, want)
	}
	r.Cases = r.Cases[:2]
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
		logs     []byte // what Collect returns
		tar      []byte
		err      error
		wantErr  bool
		wantLogs string // logs.txt, where the collector returns a log
		wantOut  bool
	}{
		{"log and output", []byte("line\n"), buf.Bytes(), nil, false, "line\n", true},
		{"log without output", []byte("died\n"), nil, noOutput, true, "died\n", false},
		{"empty log", []byte{}, nil, noOutput, true, "", false},
		{"no log", nil, nil, fmt.Errorf("job x has no log yet: %w", backend.ErrNotFound), true, "", false},
		{"bad output", []byte("line\n"), nil, errors.New("output frame: bad checksum"), true, "line\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			j := &store.Job{ID: "a1b2c3d4e5f6"}
			if err := st.Create(j); err != nil {
				t.Fatal(err)
			}
			err = FetchOutputs(context.Background(), collector(tc.logs, tc.tar, tc.err), st, j)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			logs, lerr := os.ReadFile(st.Log(j.ID))
			if tc.logs != nil && (lerr != nil || string(logs) != tc.wantLogs) {
				t.Errorf("logs.txt = %q, %v; want %q", logs, lerr, tc.wantLogs)
			}
			if tc.logs == nil && lerr == nil {
				t.Errorf("logs.txt written for a job without a log: %q", logs)
			}
			got, rerr := os.ReadFile(st.Results(j.ID))
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
		`"criteria":[{"name":"every implementation correct","kind":"correct","value":0,"threshold":0,"passed":false,"detail":"slow did not run (not_run: cancelled) at n=1"},` +
		`{"name":"slow >= 2x over fast","kind":"speedup","value":0,"threshold":2,"passed":false,"not_evaluated":true,"detail":"job cancelled"}]}`)
	tw.WriteHeader(&tar.Header{Name: "out/" + result.FileName, Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644})
	tw.Write(body)
	tw.Close()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: "a1b2c3d4e5f6", Timeout: "3s"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	j.Status, j.StoppedBy, j.Error = result.StatusTimeout, result.StatusTimeout, timeoutMessage(j)
	c := collector([]byte("line\n"), buf.Bytes(), nil)
	if err := (&Manager{Store: st}).finalize(context.Background(), c, j, backend.State{Phase: backend.Exited, ExitCode: 130}); err != nil {
		t.Fatal(err)
	}
	if j.Status != result.StatusTimeout || j.Error != "ran past its timeout of 3s" {
		t.Errorf("record: status %s error %q", j.Status, j.Error)
	}
	r, err := result.ReadFile(st.Results(j.ID))
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
	if c := r.Criteria[1]; !c.NotEvaluated || c.Detail != "job timeout" {
		t.Errorf("a criterion the stop left not evaluated: %+v, want its detail to name the timeout", c)
	}
}

// A job no node took is told as such on every place: a timeout (124) that
// more time to run would not have cured, with the place's reason, and no
// log to point at.
func TestOutcomeOfAJobNoNodeTook(t *testing.T) {
	j := &store.Job{ID: "a1b2c3d4e5f6", Status: result.StatusTimeout, Timeout: "30s",
		Error: "no node took it within its pending limit (--pending-limit): Slurm dropped it while it waited for a node (ReqNodeNotAvail)"}
	err := Outcome(j)
	var ee *contract.ExitError
	if !errors.As(err, &ee) || ee.Code != 124 {
		t.Fatalf("Outcome = %v, want exit 124", err)
	}
	want := "job a1b2c3d4e5f6 never ran: " + j.Error + " (it has no log; ask for what the nodes have, or let it wait longer)"
	if err.Error() != want {
		t.Errorf("Outcome:\n  %s\nwant\n  %s", err, want)
	}
}

// A job that ended before its runner started (its pod stopped during the
// image's pull) has no log and no output: it is finalized all the same,
// with what the backend said, and a cancelled one stays cancelled.
func TestFinalizeRunnerNeverStarted(t *testing.T) {
	notStarted := collector(nil, nil, fmt.Errorf("job a1b2c3d4e5f6 has no log yet: %w", backend.ErrNotStarted))
	for _, tc := range []struct {
		name       string
		stoppedBy  string
		state      backend.State
		wantStatus string
		wantError  string
	}{
		{"deadline", "", backend.State{Phase: backend.Exited, ExitCode: 4, Message: "Pod was active on the node longer than the specified deadline"},
			result.StatusFailed, "Pod was active on the node longer than the specified deadline"},
		{"no message", "", backend.State{Phase: backend.Exited, ExitCode: 4}, result.StatusFailed, "the job ended before its runner started"},
		{"cancelled", result.StatusCancelled, backend.State{Phase: backend.Exited, ExitCode: 4}, result.StatusCancelled, "cancelled before its runner started"},
		{"no node took it", "", backend.State{Phase: backend.Exited, ExitCode: 4, TimedOut: true, NoNode: true,
			Message: "no node took it before its deadline, 5m30s after the submit (its timeout plus 5m0s): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."},
			result.StatusTimeout, "no node took it before its deadline, 5m30s after the submit (its timeout plus 5m0s): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			j := &store.Job{ID: "a1b2c3d4e5f6", Status: store.StatusRunning}
			if tc.stoppedBy != "" {
				j.Status, j.StoppedBy = tc.stoppedBy, tc.stoppedBy // as Cancel records it
			}
			if err := st.Create(j); err != nil {
				t.Fatal(err)
			}
			if err := (&Manager{Store: st}).finalize(context.Background(), notStarted, j, tc.state); err != nil {
				t.Fatalf("Finalize: %v", err)
			}
			if j.Status != tc.wantStatus || j.Error != tc.wantError || j.Finished == nil {
				t.Errorf("record: status %s error %q finished %v; want %s %q", j.Status, j.Error, j.Finished, tc.wantStatus, tc.wantError)
			}
			for _, f := range []string{store.LogsFile, store.ResultsFile} {
				if _, err := os.Stat(filepath.Join(st.Dir(j.ID), f)); err == nil {
					t.Errorf("%s written for a job whose runner never started", f)
				}
			}
			// Its outcome points at no log it does not have.
			if err := Outcome(j); tc.name == "no message" && (err == nil || strings.Contains(err.Error(), "xrun logs") || !strings.Contains(err.Error(), "it has no log")) {
				t.Errorf("outcome: %v", err)
			}
		})
	}
}

// A gigabyte of log reaches the store as its bounded head and tail, and
// the client's memory does not follow it.
func TestFetchOutputsBoundsAFlood(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: "a1b2c3d4e5f6"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// The streamer has a log and no output directory.
	if err := FetchOutputs(context.Background(), streamer(1<<30, nil), st, j); !errors.Is(err, backend.ErrNotFound) {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	logs, err := os.ReadFile(st.Log(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(logs)) > store.LogHeadBytes+store.LogTailBytes+4096 || !strings.HasSuffix(string(logs), "status: succeeded\n") ||
		!strings.Contains(string(logs), "bytes of output dropped here") {
		t.Errorf("logs.txt is %d bytes, or lost its end or the dropped line", len(logs))
	}
	// TotalAlloc counts every allocation: a buffered log would be > 1 GiB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Errorf("fetching the flood allocated %d MiB", grew>>20)
	}
}

// An output directory over MaxOutputBytes fails the job rather than fill
// the store; a tar that ends early (a full disk on the way, a cut
// connection) leaves the last good copy and no partial one.
func TestSaveOutputBounds(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: "a1b2c3d4e5f6"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	var big bytes.Buffer
	tw := tar.NewWriter(&big)
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "out/huge.bin", Typeflag: tar.TypeReg, Size: MaxOutputBytes + 1, Mode: 0o644})
	err = saveOutput(context.Background(), st, j, io.NopCloser(&big), nil)
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("an output over the limit: %v, want ErrOutputTooLarge", err)
	}
	entries, _ := os.ReadDir(st.Dir(j.ID))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".out-") || e.Name() == store.OutDir {
			t.Errorf("the store kept %s of an output it refused", e.Name())
		}
	}
	var cut bytes.Buffer
	tw = tar.NewWriter(&cut)
	tw.WriteHeader(&tar.Header{Name: "out/results.json", Typeflag: tar.TypeReg, Size: 100, Mode: 0o644})
	tw.Write([]byte("{"))
	if err := saveOutput(context.Background(), st, j, io.NopCloser(&cut), nil); err == nil {
		t.Error("a tar cut short was taken as the output")
	}
	if st.Has(j.ID, store.ResultsFile) || st.Has(j.ID, store.OutDir) {
		t.Error("a tar cut short left files in the store")
	}

	// A stream cut between two entries reads as a shorter archive: the
	// stream's own end (ssh killed at a deadline, tar failing on the far
	// side) or the deadline says it was cut, and nothing is taken.
	var first bytes.Buffer
	tw = tar.NewWriter(&first)
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.Close()
	killed := closeErr{bytes.NewReader(first.Bytes()), errors.New("signal: killed")}
	if err := saveOutput(context.Background(), st, j, killed, nil); err == nil || !strings.Contains(err.Error(), "the copy did not finish") {
		t.Errorf("a stream that ended killed: %v, want the copy said unfinished", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := saveOutput(ctx, st, j, io.NopCloser(bytes.NewReader(first.Bytes())), nil); err == nil {
		t.Error("a copy whose deadline passed was taken as the output")
	}
	if st.Has(j.ID, store.ResultsFile) || st.Has(j.ID, store.OutDir) {
		t.Error("a cut stream left files in the store")
	}
	if err := saveOutput(context.Background(), st, j, io.NopCloser(bytes.NewReader(first.Bytes())), nil); err != nil || !st.Has(j.ID, store.OutDir) {
		t.Errorf("a whole empty output: %v", err)
	}
}

// closeErr is a stream whose Close says how the far side ended.
type closeErr struct {
	io.Reader
	err error
}

func (c closeErr) Close() error { return c.err }

// A job whose runner finished without results (its output directory lost
// or unwritable) failed, whatever its exit code says.
func TestFinalizeWithoutResults(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{0, 1} {
		j := &store.Job{ID: fmt.Sprintf("a1b2c3d4e5f%d", code), ContainerID: "c"}
		if err := st.Create(j); err != nil {
			t.Fatal(err)
		}
		if err := (&Manager{Store: st}).finalize(context.Background(), streamer(0, nil), j, backend.State{Phase: backend.Exited, ExitCode: code}); err != nil {
			t.Fatal(err)
		}
		if j.Status != result.StatusFailed || !strings.Contains(j.Error, "left no results.json") {
			t.Errorf("exit %d without results: %s (%s)", code, j.Status, j.Error)
		}
	}
}

// A cancel whose stop did not happen says so (the job may still run); one
// that deleted a job whose runner had not started records it cancelled,
// ended, with why it has no log.
func TestCancelStopOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stopErr     error
		wantStopped bool
		wantError   string
	}{
		{"not stopped", errors.New("pod p did not stop within 40s of its deadline"), false, ""},
		{"deleted before its runner started", fmt.Errorf("deleted Job x: %w", backend.ErrNotStarted), true, "cancelled before its runner started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			j := &store.Job{ID: "a1b2c3d4e5f6", ContainerID: "uid-1", Status: store.StatusRunning}
			if err := st.Create(j); err != nil {
				t.Fatal(err)
			}
			ended, err := (&Manager{Store: st}).cancelOn(context.Background(), stopper(tc.stopErr), j)
			var ns *NotStoppedError
			if ended || errors.As(err, &ns) == tc.wantStopped || tc.wantStopped && err != nil {
				t.Fatalf("Cancel: ended %v, err %v; want stopped %v", ended, err, tc.wantStopped)
			}
			if tc.wantStopped && (j.Status != result.StatusCancelled || j.Finished == nil || j.Error != tc.wantError) {
				t.Errorf("record: status %s finished %v error %q; want cancelled, ended, %q", j.Status, j.Finished, j.Error, tc.wantError)
			}
			if !tc.wantStopped && j.Finished != nil {
				t.Errorf("a job whose stop failed is recorded as ended at %v", j.Finished)
			}
		})
	}
}

// A job past its timeout whose runner never started (its pod still waits
// for its image or volumes), and which the backend deleted rather than
// stopped, is recorded as timed out and ended, with why it has no log.
func TestExpireBeforeTheRunnerStarted(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: "a1b2c3d4e5f6", ContainerID: "uid-1", Status: store.StatusCreated, Timeout: "1m"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	b := stopper(fmt.Errorf("deleted Job x: %w", backend.ErrNotStarted))
	if err := (&Manager{Store: st}).expire(context.Background(), b, j); err != nil {
		t.Fatalf("Expire: %v", err)
	}
	saved, err := st.Load(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Status != result.StatusTimeout || saved.Finished == nil || saved.Error != "ran past its timeout of 1m before its runner started" {
		t.Errorf("record: status %s finished %v error %q", saved.Status, saved.Finished, saved.Error)
	}
	if _, ok, err := (&Manager{Store: st}).refreshOn(context.Background(), b, saved); ok || err != nil {
		t.Errorf("a look after: ok %v, err %v; want nothing more to do", ok, err)
	}
}

// A timeout says what would help: more time for a job that ran, what its
// pod waited for when the runner never started.
func TestOutcomeTimeout(t *testing.T) {
	j := &store.Job{ID: "a1b2c3d4e5f6", Status: result.StatusTimeout, Timeout: "15s", Error: "ran past its timeout of 15s"}
	if got, want := Outcome(j).Error(), "job a1b2c3d4e5f6 timed out after 15s: raise resources.timeout in xrun.yaml or pass --timeout"; got != want {
		t.Errorf("timeout:\n got %q\nwant %q", got, want)
	}
	j.Error += notStartedSuffix
	if got, want := Outcome(j).Error(), "job a1b2c3d4e5f6 ran past its timeout of 15s before its runner started: its pod was still waiting for a node, its image or its volumes"; got != want {
		t.Errorf("timeout before the runner started:\n got %q\nwant %q", got, want)
	}
}

// A job whose submitting xrun started it and ended between a look's two
// reads (the record's, then the state's) is not taken for abandoned: the
// look reads both again once it knows that xrun has ended.
func TestRefreshJobStartedAsItsCreatorEnds(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gone := "another-boot:1:1" // an xrun of another boot: ended
	j := &store.Job{ID: "a1b2c3d4e5f6", ContainerID: "c1", Status: store.StatusCreated, Creator: gone}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	removed := false
	b := starter(st, 0, &removed)
	s, ok, err := (&Manager{Store: st}).refreshOn(context.Background(), b, j)
	if err != nil || !ok || removed || s.Phase != backend.Running || j.Status != store.StatusRunning {
		t.Errorf("Refresh: state %+v ok %v err %v, removed %v, record %s; want the running job kept", s, ok, err, removed, j.Status)
	}
}

// Likewise before the record named a container: the xrun that made it
// recorded its container, started it and ended after this record was read.
func TestRefreshStaleRecordOfAStartedJob(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gone := "another-boot:1:1"
	stale := &store.Job{ID: "a1b2c3d4e5f6", Status: store.StatusCreated, Creator: gone}
	if err := st.Create(stale); err != nil {
		t.Fatal(err)
	}
	fresh := *stale
	fresh.ContainerID, fresh.Status = "c1", store.StatusRunning
	if err := st.Save(&fresh); err != nil {
		t.Fatal(err)
	}
	removed := false
	b := starter(st, 1, &removed) // the backend's job already runs
	s, ok, err := (&Manager{Store: st}).refreshOn(context.Background(), b, stale)
	if err != nil || !ok || removed || s.Phase != backend.Running || stale.Status != store.StatusRunning {
		t.Errorf("Refresh: state %+v ok %v err %v, removed %v, record %s; want the running job kept", s, ok, err, removed, stale.Status)
	}
}

// A stopped job whose runner left no output says why it kept no partial
// results (a Kubernetes pod deleted by hand with its log); one that failed
// keeps the sentence of a runner that left no results.json.
func TestFinalizeSaysWhyNoPartialResults(t *testing.T) {
	why := fmt.Errorf("pod xrun-a1b2c3d4e5f6-x was deleted before its runner wrote its output into its log: %w", backend.ErrNotFound)
	for _, tc := range []struct {
		name      string
		stoppedBy string
		state     backend.State
		want      string
	}{
		{"deleted outside", "", backend.State{Phase: backend.Exited, ExitCode: 143},
			"; no partial results were kept: pod xrun-a1b2c3d4e5f6-x was deleted before its runner wrote its output into its log"},
		{"cancelled", result.StatusCancelled, backend.State{Phase: backend.Exited, ExitCode: 143},
			"; no partial results were kept: pod xrun-a1b2c3d4e5f6-x was deleted"},
		{"failed", "", backend.State{Phase: backend.Exited, ExitCode: 1}, "left no results.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			j := &store.Job{ID: "a1b2c3d4e5f6", Status: store.StatusRunning, ContainerID: "c"}
			if tc.stoppedBy != "" {
				j.Status, j.StoppedBy, j.Error = tc.stoppedBy, tc.stoppedBy, "cancelled by xrun cancel"
			}
			if err := st.Create(j); err != nil {
				t.Fatal(err)
			}
			if err := (&Manager{Store: st}).finalize(context.Background(), collector([]byte("line\n"), nil, why), j, tc.state); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(j.Error, tc.want) || strings.Contains(j.Error, "not found") {
				t.Errorf("%s: %q, want it to say %q", j.Status, j.Error, tc.want)
			}
			if tc.name == "failed" && strings.Contains(j.Error, "partial") {
				t.Errorf("a failed job speaks of partial results: %q", j.Error)
			}
		})
	}
}

// An error that already points at the job's log is not given the pointer
// twice.
func TestOutcomePointsAtTheLogOnce(t *testing.T) {
	code := 0
	j := &store.Job{ID: "a1b2c3d4e5f6", Status: result.StatusFailed, ExitCode: &code,
		Error: "the runner exited with code 0 but left no results.json: its output directory was lost or could not be written (see `xrun logs a1b2c3d4e5f6`)"}
	err := Outcome(j)
	if err == nil || strings.Count(err.Error(), "xrun logs a1b2c3d4e5f6") != 1 {
		t.Errorf("outcome: %v", err)
	}
	j.Error = "the runner exited with code 3"
	if err := Outcome(j); err == nil || strings.Count(err.Error(), "xrun logs a1b2c3d4e5f6") != 1 {
		t.Errorf("outcome without a pointer: %v", err)
	}
}
