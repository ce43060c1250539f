package run

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/runner/sandbox"
)

// A compile cache (Triton's, TorchInductor's, torch's extension builds,
// the CUDA JIT cache) is kept across the jobs of one owner, trust level,
// experiment, base and GPU model, and nothing else bounds it: before the
// job starts, the runner removes its least recently used entries until
// what stays is within the limit (contract.EnvCacheLimit). An entry is
// the files of one directory (a Triton kernel's directory, an Inductor
// graph's, an extension's build): removed together, so that no compiler
// finds half an entry, and the compilers build again what is gone. Its
// last use is its files' latest access or change (the access times that
// the filesystem keeps: with relatime, a read within a day of the last
// one does not count, which orders entries unused for days well enough).

// cacheLimit is the limit on the compile caches in bytes (0: none): the
// job's XRUN_CACHE_LIMIT, else DefaultCacheLimit for a job with a cache
// volume, else none (a job's own caches start empty).
func cacheLimit(getenv func(string) string, volume string) (int64, error) {
	v := getenv(contract.EnvCacheLimit)
	if v == "" {
		if volume == "" {
			return 0, nil
		}
		return contract.DefaultCacheLimit, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New(contract.EnvCacheLimit + "=" + v + ": give a number of bytes >= 0")
	}
	return n, nil
}

// cacheEntry is the regular files of one directory of the cache.
type cacheEntry struct {
	dir   string   // relative to the cache's root
	files []string // their names
	bytes int64
	used  time.Time
}

// cacheTrim is what trimCache did.
type cacheTrim struct {
	Entries int   // removed
	Bytes   int64 // of the removed entries
	Kept    int64 // bytes that stay
	Failed  int   // files that could not be removed
}

// trimCache removes the least recently used entries of the cache at dir
// until it holds at most limit bytes (limit 0: none). It works through an
// os.Root of dir: the runner runs as root and the cache is the worker's,
// so a link the job made cannot point a removal out of the cache.
func trimCache(dir string, limit int64) (cacheTrim, error) {
	var t cacheTrim
	if limit <= 0 {
		return t, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return t, nil
		}
		return t, err
	}
	defer root.Close()
	entries := map[string]*cacheEntry{}
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: not the cache's to count
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		e := entries[path.Dir(p)]
		if e == nil {
			e = &cacheEntry{dir: path.Dir(p)}
			entries[e.dir] = e
		}
		e.files = append(e.files, path.Base(p))
		e.bytes += fi.Size()
		total += fi.Size()
		if u := lastUse(fi); u.After(e.used) {
			e.used = u
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	t.Kept = total
	if total <= limit {
		return t, nil
	}
	order := make([]*cacheEntry, 0, len(entries))
	for _, e := range entries {
		order = append(order, e)
	}
	sort.Slice(order, func(i, k int) bool {
		if !order[i].used.Equal(order[k].used) {
			return order[i].used.Before(order[k].used)
		}
		return order[i].dir < order[k].dir
	})
	for _, e := range order {
		if t.Kept <= limit {
			break
		}
		failed := 0
		for _, f := range e.files {
			if err := root.Remove(path.Join(e.dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				failed++
			}
		}
		if e.dir != "." {
			root.Remove(e.dir) // when empty: a subdirectory stays
		}
		t.Failed += failed
		if failed == 0 {
			t.Entries++
			t.Bytes += e.bytes
			t.Kept -= e.bytes
		}
	}
	return t, nil
}

// trimCacheAs is trimCache with the file permissions of user as (nil:
// the runner's own): the runner of a sandboxed job is root without
// CAP_DAC_OVERRIDE, and the cache's entries are the worker user's.
func trimCacheAs(dir string, limit int64, as *sandbox.User) (cacheTrim, error) {
	if as == nil || limit <= 0 {
		return trimCache(dir, limit)
	}
	type done struct {
		t   cacheTrim
		err error
	}
	ch := make(chan done, 1)
	go func() {
		// The thread takes the user's filesystem ids (setfsuid) and is
		// never unlocked: it ends with this goroutine.
		runtime.LockOSThread()
		if err := fsUser(as); err != nil {
			ch <- done{err: err}
			return
		}
		t, err := trimCache(dir, limit)
		ch <- done{t, err}
	}()
	d := <-ch
	return d.t, d.err
}

// trimCaches keeps the job's compile caches within their limit, and says
// so in the job's log when it removed anything.
func (rn *runner) trimCaches() cacheTrim {
	t, err := trimCacheAs(rn.o.CacheDir, rn.o.cacheLimit, rn.o.Worker)
	switch {
	case err != nil:
		rn.logf("cache: could not keep the compile caches in %s within %d bytes: %v", rn.o.CacheDir, rn.o.cacheLimit, err)
	case t.Entries > 0 || t.Failed > 0:
		rn.logf("cache: removed the %d least recently used entries (%d bytes) of the compile caches in %s to keep them within %d bytes (%s); %d bytes stay, %d files could not be removed",
			t.Entries, t.Bytes, rn.o.CacheDir, rn.o.cacheLimit, contract.EnvCacheLimit, t.Kept, t.Failed)
	}
	return t
}
