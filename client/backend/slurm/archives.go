package slurm

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/internal/table"
)

// Archives lists the job images kept on the cluster (images.go), each
// with whether a job that has not ended (its script names the image, and
// it has no exit code yet) loads it. An image's size is its own files and
// the blobs no other image links to: what removing it frees. The copies a
// killed submit left half-written (NAME.PID, NAME.tar.PID), and the blobs
// no image links to, are listed too; no job loads them.
func (b *Backend) Archives(ctx context.Context) ([]backend.Archive, error) {
	out, err := b.Shell.Run(ctx, fmt.Sprintf(`r=%s
cd "$r/images" 2>/dev/null || exit 0
for f in *; do
	[ "$f" = %s ] && continue
	if [ -d "$f" ]; then
		size=$(du -sb "$f" | cut -f1)
		find "$f" -type l -printf "L\t%%l\n"
	elif [ -f "$f" ]; then
		size=$(stat -c %%s "$f")
	else
		continue
	fi
	used=0
	for d in "$r"/*/; do
		if [ -f "${d}%s" ] && [ ! -f "${d}%s" ] && grep -qF "images/$f'" "${d}%s"; then used=1; break; fi
	done
	printf 'I\t%%s\t%%s\t%%s\t%%s\n' "$size" "$(stat -c %%Y "$f")" "$used" "$f"
done
for f in %s/*; do
	[ -f "$f" ] && printf 'B\t%%s\t%%s\t0\t%%s\n' "$(stat -c %%s "$f")" "$(stat -c %%Y "$f")" "$f"
done
exit 0`, b.rootExpr(), blobsDir, scriptFile, exitFile, scriptFile, blobsDir), nil)
	if err != nil {
		return nil, fmt.Errorf("list the job images on %s: %w", b.Shell.Where(), err)
	}
	return parseArchives(string(out))
}

// parseArchives reads Archives' lines: an image or a blob (I or B), its
// size, modification time (Unix seconds), 1 for in use, and name; each
// image's links (L, the link's target) come before its line.
func parseArchives(out string) ([]backend.Archive, error) {
	var list []backend.Archive
	type blob struct {
		a     backend.Archive
		users []int // the images that link to it
	}
	blobs := map[string]*blob{}
	var links [][]string // per image, the blobs it links to
	var pending []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if f[0] == "L" && len(f) == 2 {
			pending = append(pending, path.Base(f[1]))
			continue
		}
		if len(f) != 5 || f[0] != "I" && f[0] != "B" {
			return nil, fmt.Errorf("list the job images: unexpected line %q", line)
		}
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		mod, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("list the job images: unexpected line %q", line)
		}
		a := backend.Archive{Name: f[4], Bytes: size, Modified: time.Unix(mod, 0), InUse: f[3] == "1"}
		if f[0] == "B" {
			blobs[path.Base(a.Name)] = &blob{a: a}
			continue
		}
		list = append(list, a)
		links = append(links, pending)
		pending = nil
	}
	for i, ls := range links {
		for _, name := range ls {
			if bl := blobs[name]; bl != nil && !slices.Contains(bl.users, i) {
				bl.users = append(bl.users, i)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(blobs)) {
		switch bl := blobs[name]; len(bl.users) {
		case 0:
			list = append(list, bl.a) // a killed submit's, or its images' pruned
		case 1:
			list[bl.users[0]].Bytes += bl.a.Bytes
		}
	}
	return list, nil
}

// archiveName is a name Archives lists: an image's directory or archive
// (imageFile's, perhaps half-written), or a blob (perhaps half-written).
var archiveName = regexp.MustCompile(`^(xrun_[A-Za-z0-9_.-]+|` + blobsDir + `/[0-9a-f]{64}(\.[0-9]+)?)$`)

// RemoveArchive removes the job image name (as Archives lists it): an
// image's directory, with the blobs that no other image links to, an
// archive of an earlier version, or a blob.
func (b *Backend) RemoveArchive(ctx context.Context, name string) error {
	if !archiveName.MatchString(name) {
		return fmt.Errorf("%q is not a job image", name)
	}
	script := fmt.Sprintf(`cd %s/images || exit 0
links=$(find %s -type l -printf '%%l\n' 2>/dev/null | sed 's|.*/||')
rm -rf %s
for s in $links; do
	find . -path ./%s -prune -o -type l -lname "*%s/$s" -print | grep -q . || rm -f "%s/$s"
done`, b.rootExpr(), quote(name), quote(name), blobsDir, blobsDir, blobsDir)
	if _, err := b.Shell.Run(ctx, script, nil); err != nil {
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

// done says how much went in how long, and how much of it the cluster
// held already (kept bytes), which was not sent.
func (p *copyProgress) done(kept int64) {
	if p.w == nil {
		return
	}
	there := ""
	if kept > 0 {
		there = fmt.Sprintf(" (%s of its layers were there already, shared with other images, and not sent)", table.Bytes(kept))
	}
	fmt.Fprintf(p.w, "%s: %s in %s%s\n", p.what, table.Bytes(p.n), time.Since(p.start).Round(time.Second), there)
}
