// Package buildctx gathers an experiment's build context: the experiment
// directory and its includes, filtered by the ignore file, checked for
// symlinks that leave the context, hashed deterministically, and written as a
// deterministic tar for the Docker Engine; and the image's Dockerfile
// (Dockerfile).
package buildctx

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-units"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/xrun-dev/xrun/spec"
)

// Root is the directory inside the context (and the tar) that holds the
// experiment; includes are placed under it by basename.
const Root = "exp"

// IgnoreFiles are the ignore files read from the experiment directory, in
// order of preference: the first that exists is used.
var IgnoreFiles = []string{".xrunignore", ".dockerignore"}

// DefaultIgnore are patterns applied before the ignore file's own, so a
// "!pattern" line there can bring a path back. They keep xrun's own outputs
// (committed results, local state) and Python byte code out of the context,
// so running an experiment locally does not change its hash.
var DefaultIgnore = []string{
	".git",
	".xrun",
	"results",
	"**/__pycache__",
	"**/*.pyc",
}

// LargeFileBytes is the size from which Collect warns about a file: one this
// big is rarely meant to be in an image, and every build sends it to the
// daemon again and every host stores it once more.
const LargeFileBytes = 100 << 20

// Reporter hears from Collect while it works, on the calling goroutine. A
// nil field is not called.
type Reporter struct {
	// Progress is called at most ten times a second while files are
	// hashed, and once at the end, with the files and bytes hashed so far.
	Progress func(files int, bytes int64)
	// Warn is called, before hashing, with a one-line warning for each file
	// of LargeFileBytes or more that goes into the context (in Dst order),
	// saying how to leave it out.
	Warn func(msg string)
}

// File is one entry of the build context: a regular file, a directory or a
// symlink kept as a link.
type File struct {
	// Src is the path on disk.
	Src string
	// Dst is the slash-separated path inside the context ("exp/...").
	Dst string
	// Mode is the mode read from disk (type bits and permissions).
	Mode fs.FileMode
	// Size is the size of a regular file; 0 otherwise.
	Size int64
	// Link is the target of a symlink that stays inside its root, written
	// relative to the link's directory.
	Link string
	// Sum is the hex SHA-256 of a regular file's content.
	Sum string
}

// Context is a collected build context.
type Context struct {
	// Dir is the experiment directory (absolute, symlinks resolved).
	Dir string
	// Files are the entries, sorted by Dst.
	Files []File
	// Hash is the hex SHA-256 of the context's content (see Collect).
	Hash string
	// Bytes is the total size of the regular files.
	Bytes int64
}

// root is one tree copied into the context: the experiment directory or an include.
type root struct {
	src  string // absolute, symlinks resolved
	dst  string // "exp" or "exp/<basename>"
	rel  string // prefix for ignore matching: "" or "<basename>"
	what string // for messages
}

// Collect walks the experiment directory dir (placed at "exp/") and each of
// the spec's includes (placed at "exp/<basename>"), honouring .xrunignore,
// else .dockerignore, in dir. Ignore patterns are relative to the experiment
// directory as the container sees it, so "gla/tests" names a path in the
// include "../../kernels/gla". The ignore files themselves and DefaultIgnore
// are excluded. Symlinks are kept as links when their target stays inside the
// tree they were found in and refused otherwise. Include paths that do not
// exist, that resolve outside the experiment's git repository (outside the
// experiment directory's parent when it is in none), that contain the
// experiment directory, or that collide on basename are refused. An include already inside the experiment directory is not
// copied again.
//
// The hash is SHA-256 over each entry's Dst, kind (directory, symlink and
// its target, file with or without an executable bit), size and content
// hash, in Dst order: the same files give the same hash on any machine,
// whatever the mtimes, owners or walk order. File contents are streamed,
// never held in memory. r, when not nil, hears of progress and of files of
// LargeFileBytes or more.
func Collect(dir string, s *spec.Spec, r *Reporter) (*Context, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve experiment directory %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("open experiment directory %q: %w; check the path", dir, err)
	}
	if st, err := os.Stat(real); err != nil {
		return nil, fmt.Errorf("open experiment directory %q: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("experiment path %q is not a directory; pass the directory holding %s", dir, spec.FileName)
	}

	pm, ignoreFile, err := readIgnore(real)
	if err != nil {
		return nil, err
	}
	roots, err := includeRoots(real, s, pm)
	if err != nil {
		return nil, err
	}
	roots = append([]root{{src: real, dst: Root, what: "the experiment directory " + real}}, roots...)

	c := &Context{Dir: real}
	for _, r := range roots {
		if err := c.walk(r, pm); err != nil {
			return nil, err
		}
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Dst < c.Files[j].Dst })
	for i := 1; i < len(c.Files); i++ {
		if c.Files[i].Dst == c.Files[i-1].Dst {
			return nil, fmt.Errorf("two files map to %s (%s and %s); rename one of them", c.Files[i].Dst, c.Files[i-1].Src, c.Files[i].Src)
		}
	}
	if r == nil {
		r = &Reporter{}
	}
	c.warnLarge(r, ignoreFile)
	if err := c.hashFiles(r.Progress); err != nil {
		return nil, err
	}
	c.Hash = c.contentHash()
	return c, nil
}

// readIgnore reads the first ignore file that exists in dir and returns a
// matcher of DefaultIgnore followed by its patterns, and the file's path
// ("" when there is none).
func readIgnore(dir string) (*patternmatcher.PatternMatcher, string, error) {
	patterns := append([]string(nil), DefaultIgnore...)
	name, used := "defaults", ""
	for _, n := range IgnoreFiles {
		f, err := os.Open(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("open ignore file: %w", err)
		}
		ps, err := ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w; fix the file", filepath.Join(dir, n), err)
		}
		patterns = append(patterns, ps...)
		name = filepath.Join(dir, n)
		used = name
		break
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, "", fmt.Errorf("parse ignore patterns of %s: %w; fix the pattern", name, err)
	}
	return pm, used, nil
}

// includeRoots resolves and checks the spec's includes.
func includeRoots(dir string, s *spec.Spec, pm *patternmatcher.PatternMatcher) ([]root, error) {
	if s == nil {
		return nil, nil
	}
	var roots []root
	seen := map[string]string{}
	top, topWhat := includeBoundary(dir)
	for _, inc := range s.Include {
		if inc == "" {
			return nil, fmt.Errorf("include: an empty path is not allowed; remove it from %s", spec.FileName)
		}
		p := filepath.FromSlash(inc)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		real, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("include %q: %s does not exist; fix the path in %s (it is relative to the experiment directory)", inc, p, spec.FileName)
		}
		if err != nil {
			return nil, fmt.Errorf("include %q: %w", inc, err)
		}
		if !within(top, real) {
			return nil, fmt.Errorf("include %q resolves to %s, outside %s; an include must stay inside it, so copy what the experiment needs there", inc, real, topWhat)
		}
		if within(dir, real) {
			// Already in the context; the runner finds it at <exp>/<path>.
			continue
		}
		if within(real, dir) {
			return nil, fmt.Errorf("include %q contains the experiment directory; include a sibling directory instead", inc)
		}
		base := filepath.Base(real)
		if prev, ok := seen[base]; ok {
			return nil, fmt.Errorf("includes %q and %q both land at %s/%s; rename one of them", prev, inc, Root, base)
		}
		seen[base] = inc
		if _, err := os.Lstat(filepath.Join(dir, base)); err == nil {
			ignored, err := pm.MatchesOrParentMatches(base)
			if err != nil {
				return nil, fmt.Errorf("match ignore patterns against %q: %w", base, err)
			}
			if !ignored {
				return nil, fmt.Errorf("include %q lands at %s/%s, which the experiment directory already has; rename one of them", inc, Root, base)
			}
		}
		roots = append(roots, root{src: real, dst: Root + "/" + base, rel: base, what: fmt.Sprintf("the include %q (%s)", inc, real)})
	}
	return roots, nil
}

// includeBoundary returns the directory every include must resolve inside,
// and how to name it: the top of the git repository holding dir (the nearest
// ancestor with a .git entry, a directory or, in a worktree or submodule, a
// file), else dir's parent. Without it an experiment received from someone
// else could package any directory of the submitting host
// ("../../../../home/me/.ssh") into an image sent to a shared daemon.
func includeBoundary(dir string) (string, string) {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, "the experiment's git repository " + d
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	parent := filepath.Dir(dir)
	return parent, fmt.Sprintf("%s, the experiment directory's parent (the experiment is in no git repository, so only its siblings may be included)", parent)
}

// within reports whether path is dir or lies below it (both clean and absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (c *Context) walk(r root, pm *patternmatcher.PatternMatcher) error {
	return filepath.WalkDir(r.src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", r.what, err)
		}
		rel, err := filepath.Rel(r.src, p)
		if err != nil {
			return fmt.Errorf("walk %s: %w", r.what, err)
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			if r.dst == Root {
				return nil // the experiment root is written by WriteTar
			}
			rel = ""
		}
		match := path.Join(r.rel, rel)
		if r.dst == Root && slices.Contains(IgnoreFiles, match) {
			return nil
		}
		ignored, err := pm.MatchesOrParentMatches(match)
		if err != nil {
			return fmt.Errorf("match ignore patterns against %q: %w", match, err)
		}
		if ignored {
			if r.dst == Root && match == spec.FileName {
				return fmt.Errorf("%s is excluded by the ignore patterns of %s; the runner needs it, so remove the pattern that matches it", spec.FileName, r.what)
			}
			// Docker's rule: an excluded directory is skipped unless an
			// exclusion ("!") pattern may bring something inside it back.
			if d.IsDir() && !pm.Exclusions() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		f := File{Src: p, Dst: path.Join(r.dst, rel), Mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			f.Size = info.Size()
		case info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := checkLink(r, p)
			if err != nil {
				return err
			}
			f.Link = link
		default:
			return nil // sockets, devices and pipes have no place in an image
		}
		c.Files = append(c.Files, f)
		c.Bytes += f.Size
		return nil
	})
}

// checkLink returns the target of the symlink p, relative to its directory,
// or an error when the target leaves the root r.
func checkLink(r root, p string) (string, error) {
	target, err := os.Readlink(p)
	if err != nil {
		return "", fmt.Errorf("read symlink %s: %w", p, err)
	}
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(p), target)
	}
	abs = filepath.Clean(abs)
	leaves := !within(r.src, abs)
	if !leaves {
		// A chain of links may still end outside.
		if real, err := filepath.EvalSymlinks(abs); err == nil && !within(r.src, real) {
			leaves = true
		}
	}
	if leaves {
		return "", fmt.Errorf("symlink %s -> %s leaves %s; replace it with a copy, include its target, or add it to .xrunignore", p, target, r.what)
	}
	rel, err := filepath.Rel(filepath.Dir(p), abs)
	if err != nil {
		return "", fmt.Errorf("resolve symlink %s -> %s: %w", p, target, err)
	}
	return filepath.ToSlash(rel), nil
}

// warnLarge tells r of each file of LargeFileBytes or more, and of the
// ignore pattern that would leave it out.
func (c *Context) warnLarge(r *Reporter, ignoreFile string) {
	if r.Warn == nil {
		return
	}
	if ignoreFile == "" {
		ignoreFile = filepath.Join(c.Dir, IgnoreFiles[0])
	}
	for _, f := range c.Files {
		if f.Mode.IsRegular() && f.Size >= LargeFileBytes {
			pattern := strings.TrimPrefix(f.Dst, Root+"/")
			r.Warn(fmt.Sprintf("%s is %s and goes into the image; if the experiment does not need it, add the line %q to %s",
				f.Src, units.BytesSize(float64(f.Size)), pattern, ignoreFile))
		}
	}
}

// hashFiles fills in the content hash of every regular file, a few at a
// time, reporting progress from this goroutine.
func (c *Context) hashFiles(progress func(files int, bytes int64)) error {
	type done struct {
		i   int
		sum string
		err error
	}
	var idx []int
	for i, f := range c.Files {
		if f.Mode.IsRegular() {
			idx = append(idx, i)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4, max(len(idx), 1))
	jobs := make(chan int)
	results := make(chan done)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sum, err := hashFile(c.Files[i])
				results <- done{i, sum, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, i := range idx {
			jobs <- i
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var firstErr error
	files, bytes := 0, int64(0)
	last := time.Now()
	for r := range results {
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		c.Files[r.i].Sum = r.sum
		files++
		bytes += c.Files[r.i].Size
		if progress != nil && time.Since(last) >= 100*time.Millisecond {
			progress(files, bytes)
			last = time.Now()
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if progress != nil {
		progress(files, bytes)
	}
	return nil
}

func hashFile(f File) (string, error) {
	r, err := os.Open(f.Src)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Src, err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Src, err)
	}
	if n != f.Size {
		return "", fmt.Errorf("read %s: it changed size while being read; retry when it is no longer written to", f.Src)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// kind is the entry's kind as hashed and archived: 'd' directory, 'l'
// symlink, 'x' executable file, 'f' other file.
func (f File) kind() byte {
	switch {
	case f.Mode.IsDir():
		return 'd'
	case f.Mode&fs.ModeSymlink != 0:
		return 'l'
	case f.Mode&0o111 != 0:
		return 'x'
	}
	return 'f'
}

func (c *Context) contentHash() string {
	h := sha256.New()
	io.WriteString(h, "xrun-context-v1\n")
	for _, f := range c.Files {
		fmt.Fprintf(h, "%s\x00%c\x00%d\x00%s\x00%s\n", f.Dst, f.kind(), f.Size, f.Sum, f.Link)
	}
	return hex.EncodeToString(h.Sum(nil))
}
