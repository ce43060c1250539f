package slurm

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/internal/table"
)

// The docker runtime keeps each job image as a docker save archive in the
// job directories' images/, shared by the jobs of that image: a submit
// copies it once, and touches it when it finds it there, so that its
// time says when a submit last needed it.

// Archives lists the image archives, each with whether a job that has not
// ended (its script names the archive, and it has no exit code yet)
// loads it, and the copies a killed submit left half-written (NAME.tar.PID,
// which no job loads; one being written is young).
func (b *Backend) Archives(ctx context.Context) ([]backend.Archive, error) {
	out, err := b.Shell.Run(ctx, fmt.Sprintf(`r=%s
cd "$r/images" 2>/dev/null || exit 0
for f in *.tar *.tar.[0-9]*; do
	[ -f "$f" ] || continue
	used=0
	for d in "$r"/*/; do
		if [ -f "${d}%s" ] && [ ! -f "${d}%s" ] && grep -qF "images/$f" "${d}%s"; then used=1; break; fi
	done
	printf '%%s\t%%s\t%%s\t%%s\n' "$(stat -c %%s "$f")" "$(stat -c %%Y "$f")" "$used" "$f"
done`, b.rootExpr(), scriptFile, exitFile, scriptFile), nil)
	if err != nil {
		return nil, fmt.Errorf("list the job images on %s: %w", b.Shell.Where(), err)
	}
	return parseArchives(string(out))
}

// parseArchives reads Archives' lines: size, modification time (Unix
// seconds), 1 for in use, name.
func parseArchives(out string) ([]backend.Archive, error) {
	var list []backend.Archive
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("list the job images: unexpected line %q", line)
		}
		size, err1 := strconv.ParseInt(f[0], 10, 64)
		mod, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("list the job images: unexpected line %q", line)
		}
		list = append(list, backend.Archive{Name: f[3], Bytes: size, Modified: time.Unix(mod, 0), InUse: f[2] == "1"})
	}
	return list, nil
}

// RemoveArchive removes the image archive name (as Archives lists it).
func (b *Backend) RemoveArchive(ctx context.Context, name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || !strings.HasSuffix(name, ".tar") && !strings.Contains(name, ".tar.") {
		return fmt.Errorf("%q is not a job image archive", name)
	}
	if _, err := b.Shell.Run(ctx, fmt.Sprintf(`rm -f %s/images/%s`, b.rootExpr(), quote(name)), nil); err != nil {
		return fmt.Errorf("remove the job image %s on %s: %w", name, b.Shell.Where(), err)
	}
	return nil
}

// copyProgress passes an image archive through while it is written to the
// cluster, saying on w every interval how much has gone, and at the end
// how much in how long: docker save and the copy of a CUDA image take
// minutes.
type copyProgress struct {
	r        io.Reader
	w        io.Writer
	what     string
	n        int64
	start    time.Time
	last     time.Time
	interval time.Duration
}

func newCopyProgress(r io.Reader, w io.Writer, what string) *copyProgress {
	now := time.Now()
	if w != nil {
		fmt.Fprintf(w, "%s (docker save, once per image)\n", what)
	}
	return &copyProgress{r: r, w: w, what: what, start: now, last: now, interval: 10 * time.Second}
}

func (p *copyProgress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.w != nil && time.Since(p.last) >= p.interval {
		p.last = time.Now()
		fmt.Fprintf(p.w, "%s: %s so far, %s\n", p.what, table.Bytes(p.n), time.Since(p.start).Round(time.Second))
	}
	return n, err
}

// done says how much went in how long.
func (p *copyProgress) done() {
	if p.w != nil {
		fmt.Fprintf(p.w, "%s: %s in %s\n", p.what, table.Bytes(p.n), time.Since(p.start).Round(time.Second))
	}
}
