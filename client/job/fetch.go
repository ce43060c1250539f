package job

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/docker/go-units"
	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// FetchOutputs copies the job's logs and the runner's output directory
// (results.json among it) into its store directory.
func FetchOutputs(ctx context.Context, b backend.Backend, st *store.Store, j *store.Job) error {
	if c, ok := b.(backend.Collector); ok {
		logs, rc, err := c.Collect(ctx, j)
		if logs == nil {
			return err // no log at all, as Logs would have said
		}
		if werr := st.WriteFile(j.ID, store.LogsFile, logs); werr != nil {
			if rc != nil {
				rc.Close()
			}
			return storeError(st, j, werr)
		}
		return saveOutput(ctx, st, j, rc, err)
	}
	// The log goes to the store as it comes, bounded: a job can print
	// without end, and the client's memory must not follow.
	var logErr error
	err := st.WriteFrom(j.ID, store.LogsFile, func(w io.Writer) error {
		ht := store.LogWriter(w)
		logErr = b.Logs(ctx, j, backend.LogOptions{}, ht, ht)
		if logErr != nil {
			return logErr
		}
		return ht.Close()
	})
	if logErr != nil {
		return logErr
	}
	if err != nil {
		return storeError(st, j, err)
	}
	return FetchResults(ctx, b, st, j)
}

// FetchResults copies the runner's output directory (of a running or an
// exited job) into the job's store directory, and results.json beside the
// record. A job with no output directory is backend.ErrNotFound, with the
// backend's reason.
func FetchResults(ctx context.Context, b backend.Backend, st *store.Store, j *store.Job) error {
	rc, err := b.CopyOut(ctx, j)
	return saveOutput(ctx, st, j, rc, err)
}

// saveOutput unpacks the output tar rc, which CopyOut or Collect returned
// with err, into the job's store directory: into a new directory that
// replaces the old copy once complete, so that a copy cut short (a full
// disk) leaves the last good one and nothing half-written. A copy whose
// stream was cut (ctx ended, the ssh session or the tar on the far side
// failed) is an error, never an output without results.json: a stream
// cut between two entries reads as a complete, shorter archive.
func saveOutput(ctx context.Context, st *store.Store, j *store.Job, rc io.ReadCloser, err error) error {
	if err != nil {
		return err // backend.ErrNotFound: the runner wrote no output, and err says why
	}
	defer rc.Close()
	dir := filepath.Join(st.Dir(j.ID), store.OutDir)
	tmp, err := os.MkdirTemp(st.Dir(j.ID), "."+store.OutDir+"-*")
	if err != nil {
		return storeError(st, j, err)
	}
	defer os.RemoveAll(tmp)
	if err := ExtractTar(rc, tmp, MaxOutputBytes); err != nil {
		if errors.Is(err, ErrOutputTooLarge) {
			return fmt.Errorf("copy %s of job %s: %w", contract.OutDir, j.ID, err)
		}
		return storeError(st, j, fmt.Errorf("copy %s of job %s: %w", contract.OutDir, j.ID, err))
	}
	// What follows the archive's end is padding: read it, so that the far
	// side ends as it would, then ask the stream how it ended.
	io.CopyN(io.Discard, rc, 1<<20)
	if cerr := rc.Close(); cerr != nil {
		return fmt.Errorf("copy %s of job %s: the copy did not finish: %w", contract.OutDir, j.ID, cerr)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("copy %s of job %s: the copy did not finish: %w", contract.OutDir, j.ID, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return storeError(st, j, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return storeError(st, j, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return storeError(st, j, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, result.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	if err := st.WriteFile(j.ID, store.ResultsFile, data); err != nil {
		return storeError(st, j, err)
	}
	return nil
}

// MaxOutputBytes bounds the runner's output directory as the store copies
// it: results, logs (each worker's bounded by the runner) and Nsight
// Compute reports fit many times over.
const MaxOutputBytes = 4 << 30

// ErrOutputTooLarge is an output directory over MaxOutputBytes.
var ErrOutputTooLarge = errors.New("the output directory is larger than the store keeps")

// storeError says what a failed write into the job store means, and what
// to do: a full disk is named as such.
func storeError(st *store.Store, j *store.Job, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("the job store's disk is full (%s): free space there, then run `xrun status %s` to copy the job's results again: %w", st.Root, j.ID, err)
	}
	return fmt.Errorf("copy the results of job %s into the store: %w", j.ID, err)
}

// ExtractTar writes the regular files and directories of a tar of the
// output directory ("out/...") under dir, dropping the first path element.
// Entries that would land outside dir are refused, and so is more than
// limit bytes in all (ErrOutputTooLarge).
func ExtractTar(r io.Reader, dir string, limit int64) error {
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("refusing tar entry %q outside the output directory", h.Name)
		}
		_, rest, _ := strings.Cut(name, "/")
		if rest == "" {
			if h.Typeflag == tar.TypeDir {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			continue
		}
		if rest == ".." || strings.HasPrefix(rest, "../") {
			return fmt.Errorf("refusing tar entry %q outside the output directory", h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rest))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += h.Size; total > limit {
				return fmt.Errorf("%w (more than %s)", ErrOutputTooLarge, units.BytesSize(float64(limit)))
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
