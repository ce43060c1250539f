package local

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Logs copies the runner's log of job j to stdout, following it while
// the runner runs when asked. Its lines carry the runner's own times and
// no time of their own per line: Timestamps is not kept (job.Manager.Logs
// says so).
func (b *Backend) Logs(ctx context.Context, j *store.Job, o backend.LogOptions, stdout, _ io.Writer) error {
	dir, err := b.jobDir(j)
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, LogFile))
	if err != nil {
		return fmt.Errorf("open the log of job %s: %w", j.ID, err)
	}
	defer f.Close()
	if o.Tail != "" && o.Tail != "all" {
		var n int
		if _, err := fmt.Sscan(o.Tail, &n); err != nil || n < 0 {
			return fmt.Errorf("tail %q: not a number of lines", o.Tail)
		}
		if err := seekTail(f, n); err != nil {
			return err
		}
	}
	buf := make([]byte, 64<<10)
	for {
		// Whether the runner had exited before this read: then the read
		// gets all it wrote.
		ended := !o.Follow || stateOf(dir).Finished()
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := stdout.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if errors.Is(err, io.EOF) || n == 0 && err == nil {
				break
			}
			if err != nil {
				return err
			}
		}
		if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.poll()):
		}
		if _, err := os.Stat(dir); err != nil {
			return nil // removed: the log is all there was
		}
	}
}

// seekTail moves f to the start of its last n lines.
func seekTail(f *os.File, n int) error {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	pos, lines := end, 0
	buf := make([]byte, 32<<10)
	for pos > 0 {
		size := int64(len(buf))
		if pos < size {
			size = pos
		}
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		for i := size - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == end-1 {
				continue // the last line's own newline does not start a line
			}
			if lines++; lines == n {
				_, err := f.Seek(pos+i+1, io.SeekStart)
				return err
			}
		}
	}
	if n == 0 {
		_, err := f.Seek(end, io.SeekStart)
		return err
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// CopyOut tars the runner's output directory as out/...: its regular

// files and directories.
func (b *Backend) CopyOut(ctx context.Context, j *store.Job) (io.ReadCloser, error) {
	dir, err := b.jobDir(j)
	if err != nil {
		return nil, err
	}
	sp, err := readSpec(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(sp.OutDir)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("job %s wrote no output directory at %s (%w)", j.ID, sp.OutDir, backend.ErrNotFound)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(ctx, pw, sp.OutDir)) }()
	return pr, nil
}

func writeTar(ctx context.Context, w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		name := "out"
		if rel != "." {
			name += "/" + filepath.ToSlash(rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: info.ModTime(), Format: tar.FormatPAX})
		case !d.Type().IsRegular():
			return nil // links and the like are not the runner's output
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		// The size as of the header: a file still being written (a
		// running job's) is cut there.
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: info.Size(), ModTime: info.ModTime(), Format: tar.FormatPAX}); err != nil {
			return err
		}
		n, err := io.Copy(tw, io.LimitReader(f, info.Size()))
		if err == nil && n < info.Size() {
			// Truncated meanwhile: pad to the size the header promised.
			_, err = io.CopyN(tw, zeros{}, info.Size()-n)
		}
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Stop sends SIGTERM to the runner's process group, and SIGKILL after
// grace (at once when ctx ends first), and returns once the supervisor
