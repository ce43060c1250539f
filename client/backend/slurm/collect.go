package slurm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Collect reads an ended job's log and its runner's output directory in
// one session (backend.Collector): the log's size, the log, then a tar of
// the output. Over a slow ssh every session costs a second or more, and
// Logs then CopyOut would take five (two looks at the job, the log, a test
// for the output, its copy). The log comes back bounded as the store keeps
// it, and as long as it was when the session began: what Slurm adds to it
// at the job's end (an OOM line) may grow it as it is read.
func (b *Backend) Collect(ctx context.Context, j *store.Job) ([]byte, io.ReadCloser, error) {
	d, err := dir(j)
	if err != nil {
		return nil, nil, err
	}
	// Nothing before the batch script started.
	script := fmt.Sprintf(`cd %s 2>/dev/null && [ -f started ] && [ -f %s ] || exit 0
n=$(stat -c %%s %s) || exit 1
echo "%s $n"
head -c "$n" %s
[ -d %s ] || exit 0
exec tar -cf - %s
`, quote(d), logFile, logFile, collectHead, logFile, outDir, outDir)
	src, err := b.Shell.Stream(ctx, script)
	if err != nil {
		return nil, nil, fmt.Errorf("read job %s's log: %w", j.ID, err)
	}
	// cut ends the session of a copy that failed, and says why.
	cut := func(what string, err error) error {
		return fmt.Errorf("%s of job %s: %w", what, j.ID, errors.Join(err, src.Close()))
	}
	r := bufio.NewReader(src)
	head, err := r.ReadString('\n')
	if err == io.EOF && head == "" {
		if err := src.Close(); err != nil {
			return nil, nil, fmt.Errorf("read job %s's log: %w", j.ID, err)
		}
		return nil, nil, fmt.Errorf("job %s has no log yet: %w", j.ID, backend.ErrNotStarted)
	}
	var size int64
	if err == nil {
		if _, serr := fmt.Sscanf(head, collectHead+" %d\n", &size); serr != nil || size < 0 {
			err = fmt.Errorf("the copy starts with %q, not the log's size", strings.TrimSpace(head))
		}
	}
	if err != nil {
		return nil, nil, cut("read the log", err)
	}
	var logs bytes.Buffer
	lw := store.LogWriter(&logs)
	if _, err := io.CopyN(lw, r, size); err != nil {
		return nil, nil, cut("read the log", err)
	}
	lw.Close()
	if _, err := r.Peek(1); err == io.EOF {
		if err := src.Close(); err != nil {
			return nil, nil, fmt.Errorf("read the log of job %s: %w", j.ID, err)
		}
		return logs.Bytes(), nil, fmt.Errorf("job %s wrote no output: %w", j.ID, backend.ErrNotFound)
	}
	return logs.Bytes(), &session{Reader: r, src: src}, nil
}

// collectHead starts Collect's copy, before the log's size.
const collectHead = "xrun-collect"

// session is the rest of Collect's copy: the output's tar. Its Close ends
// the session and returns how it ended: a copy whose session failed after
// a whole entry reads as a complete, shorter archive, and only the
// session's end tells the two apart.
type session struct {
	io.Reader
	src io.ReadCloser
}

func (s *session) Close() error { return s.src.Close() }
