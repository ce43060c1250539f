package slurm

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Collect reads an ended job's log and its runner's output directory in
// one session (backend.Collector): one tar of both, which Collect splits.
// Over a slow ssh every session costs a second or more, and Logs then
// CopyOut would take five (two looks at the job, the log, a test for the
// output, its copy). The log comes back bounded as the store keeps it.
func (b *Backend) Collect(ctx context.Context, j *store.Job) ([]byte, io.ReadCloser, error) {
	d, err := dir(j)
	if err != nil {
		return nil, nil, err
	}
	// Nothing before the batch script started; the log alone when the
	// runner wrote no output.
	script := fmt.Sprintf(`cd %s 2>/dev/null && [ -f started ] && [ -f %s ] || exit 0
if [ -d %s ]; then exec tar -cf - %s %s; fi
exec tar -cf - %s
`, quote(d), logFile, outDir, logFile, outDir, logFile)
	src, err := b.Shell.Stream(ctx, script)
	if err != nil {
		return nil, nil, fmt.Errorf("read job %s's log: %w", j.ID, err)
	}
	tr := tar.NewReader(src)
	h, err := tr.Next()
	if errors.Is(err, io.EOF) {
		if err := src.Close(); err != nil {
			return nil, nil, fmt.Errorf("read job %s's log: %w", j.ID, err)
		}
		return nil, nil, fmt.Errorf("job %s has no log yet: %w", j.ID, backend.ErrNotStarted)
	}
	if err == nil && h.Name != logFile {
		err = fmt.Errorf("the copy starts with %q, not the log", h.Name)
	}
	var logs bytes.Buffer
	if err == nil {
		lw := store.LogWriter(&logs)
		_, err = io.Copy(lw, tr)
		lw.Close()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read job %s's log: %w", j.ID, errors.Join(err, src.Close()))
	}
	h, err = tr.Next()
	switch {
	case errors.Is(err, io.EOF):
		if err := src.Close(); err != nil {
			return nil, nil, fmt.Errorf("read job %s's log: %w", j.ID, err)
		}
		return logs.Bytes(), nil, fmt.Errorf("job %s wrote no output: %w", j.ID, backend.ErrNotFound)
	case err != nil:
		return logs.Bytes(), nil, fmt.Errorf("copy job %s's output: %w", j.ID, errors.Join(err, src.Close()))
	}
	return logs.Bytes(), rest(tr, h, src), nil
}

// rest is the rest of the tar that tr reads from src, from its header h
// on, as a tar of its own (out/...), as CopyOut returns it. Its Close
// ends the session and returns how it ended: a copy whose session failed
// after a whole entry reads as a complete, shorter archive, and only the
// session's end tells the two apart.
func rest(tr *tar.Reader, h *tar.Header, src io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	r := &restReader{PipeReader: pr, done: make(chan error, 1)}
	go func() {
		err := retar(tr, h, pw)
		if err == nil {
			// What follows the archive's end is padding: read it, so
			// that the far side ends as it would.
			io.CopyN(io.Discard, src, 1<<20)
		}
		err = errors.Join(err, src.Close())
		pw.CloseWithError(err)
		r.done <- err
	}()
	return r
}

// retar writes h and every entry after it from tr to w as a tar.
func retar(tr *tar.Reader, h *tar.Header, w io.Writer) error {
	tw := tar.NewWriter(w)
	for {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
		var err error
		if h, err = tr.Next(); errors.Is(err, io.EOF) {
			return tw.Close()
		} else if err != nil {
			return err
		}
	}
}

type restReader struct {
	*io.PipeReader
	done chan error
	once sync.Once
	err  error
}

// Close stops the copy where it is and waits for the session to end.
func (r *restReader) Close() error {
	r.once.Do(func() {
		r.PipeReader.Close()
		r.err = <-r.done
	})
	return r.err
}
