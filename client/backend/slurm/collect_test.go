package slurm

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// countingShell is this machine's shell, counting the sessions a step
// opens (each an ssh session on a real cluster) and, when cut is set,
// cutting each stream after that many bytes as a dropped connection
// would.
type countingShell struct {
	LocalShell
	sessions int
	cut      int64
}

func (s *countingShell) Run(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	s.sessions++
	return s.LocalShell.Run(ctx, script, stdin)
}

func (s *countingShell) Stream(ctx context.Context, script string) (io.ReadCloser, error) {
	s.sessions++
	rc, err := s.LocalShell.Stream(ctx, script)
	if err != nil || s.cut == 0 {
		return rc, err
	}
	return &cutStream{r: io.LimitReader(rc, s.cut), rc: rc}, nil
}

type cutStream struct {
	r  io.Reader
	rc io.ReadCloser
}

func (c *cutStream) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *cutStream) Close() error {
	c.rc.Close()
	return errors.New("connection to login.lab closed by remote host")
}

// jobDir makes an ended job's directory as a batch script leaves it and
// returns the job's record.
func jobDir(t *testing.T, started bool, log string, out map[string]string) *store.Job {
	t.Helper()
	j := &store.Job{ID: "job-1"}
	j.ContainerName = filepath.Join(t.TempDir(), j.ID)
	files := map[string]string{logFile: log, "exit": "0\n"}
	if started {
		files["started"] = "1700000000\n"
	}
	for name, data := range out {
		files[outDir+"/"+name] = data
	}
	for name, data := range files {
		p := filepath.Join(j.ContainerName, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// untar reads a tar of the output directory as CopyOut returns it.
func untar(t *testing.T, rc io.ReadCloser) map[string]string {
	t.Helper()
	got := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the output's tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			got[h.Name] = string(b)
		}
	}
	io.Copy(io.Discard, rc)
	if err := rc.Close(); err != nil {
		t.Fatalf("the copy ended with %v", err)
	}
	return got
}

func TestCollectIsOneSession(t *testing.T) {
	ctx := context.Background()
	sh := &countingShell{}
	b := &Backend{Shell: sh}
	results := strings.Repeat(`{"cases": []}`, 1000)
	j := jobDir(t, true, "runner: started\nstatus: succeeded\n", map[string]string{"results.json": results, "workers/w0.log": "worker\n"})
	logs, rc, err := b.Collect(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if string(logs) != "runner: started\nstatus: succeeded\n" {
		t.Errorf("log %q", logs)
	}
	got := untar(t, rc)
	if got["out/results.json"] != results || got["out/workers/w0.log"] != "worker\n" || len(got) != 2 {
		t.Errorf("output %v", got)
	}
	if sh.sessions != 1 {
		t.Errorf("Collect opened %d sessions, want 1", sh.sessions)
	}

	// Logs then CopyOut, which Collect replaces, read the same.
	sh.sessions = 0
	var viaLogs bytes.Buffer
	if err := b.Logs(ctx, j, backend.LogOptions{}, &viaLogs, &viaLogs); err != nil || !bytes.Equal(viaLogs.Bytes(), logs) {
		t.Errorf("Logs: %q, %v; Collect's log %q", viaLogs.Bytes(), err, logs)
	}
	rc, err = b.CopyOut(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if viaCopy := untar(t, rc); len(viaCopy) != len(got) || viaCopy["out/results.json"] != results {
		t.Errorf("CopyOut: %v", viaCopy)
	}
	t.Logf("Logs then CopyOut: %d sessions", sh.sessions)
}

func TestCollectWithoutOutputOrLog(t *testing.T) {
	ctx := context.Background()
	b := &Backend{Shell: &countingShell{}}
	j := jobDir(t, true, "died\n", nil)
	logs, rc, err := b.Collect(ctx, j)
	if string(logs) != "died\n" || rc != nil || !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("no output: %q, %v, %v; want the log and ErrNotFound", logs, rc, err)
	}
	j = jobDir(t, false, "", nil)
	if logs, rc, err := b.Collect(ctx, j); logs != nil || rc != nil || !errors.Is(err, backend.ErrNotStarted) {
		t.Errorf("not started: %q, %v, %v; want ErrNotStarted", logs, rc, err)
	}
	os.RemoveAll(j.ContainerName)
	if logs, rc, err := b.Collect(ctx, j); logs != nil || rc != nil || !errors.Is(err, backend.ErrNotStarted) {
		t.Errorf("directory gone: %q, %v, %v; want ErrNotStarted as Logs says", logs, rc, err)
	}
}

func TestCollectBoundsTheLog(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	huge := strings.Repeat(line, int(store.LogHeadBytes+store.LogTailBytes)/len(line)+50000)
	j := jobDir(t, true, huge, map[string]string{"results.json": "{}"})
	logs, rc, err := (&Backend{Shell: &countingShell{}}).Collect(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	untar(t, rc)
	if int64(len(logs)) > store.LogHeadBytes+store.LogTailBytes+4096 || !bytes.Contains(logs, []byte("bytes of output dropped here")) {
		t.Errorf("a %d-byte log came back as %d bytes", len(huge), len(logs))
	}
}

// A session cut during the copy is an error of the copy, never a shorter
// log or output that reads as complete: cut inside the log, after it,
// after a whole entry of the output, and inside one.
func TestCollectCut(t *testing.T) {
	j := jobDir(t, true, "log\n", map[string]string{"a.json": strings.Repeat("a", 4096), "b.json": strings.Repeat("b", 4096)})
	head := int64(len("xrun-collect 4\n"))
	for _, cut := range []int64{head + 2, head + 4, head + 4 + 512 + 512 + 4096, head + 4 + 512 + 512 + 4096 + 512 + 1000} {
		sh := &countingShell{cut: cut}
		logs, rc, err := (&Backend{Shell: sh}).Collect(context.Background(), j)
		if err != nil {
			if logs != nil || !strings.Contains(err.Error(), "closed by remote host") {
				t.Errorf("cut at %d: %q, %v; want no log and the session's end", cut, logs, err)
			}
			continue
		}
		if string(logs) != "log\n" {
			t.Errorf("cut at %d: log %q", cut, logs)
		}
		rerr := readTar(rc)
		if cerr := rc.Close(); rerr == nil && cerr == nil {
			t.Errorf("cut at %d: the copy read as complete", cut)
		}
	}
}

// readTar reads every entry of the tar r.
func readTar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		if _, err := tr.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return err
		}
	}
}
