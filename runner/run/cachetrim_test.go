package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/runner/sandbox"
)

// The caches over their limit lose their least recently used entries,
// each a directory's files at once, until they are within it; a link
// out of the cache leads no removal out of it.
func TestTrimCacheLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	write := func(rel string, size int, age time.Duration) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	write("triton/old/k.so", 400, 72*time.Hour)
	write("triton/old/k.json", 100, 72*time.Hour)
	write("inductor/fxgraph/ab/mid/g", 300, 48*time.Hour)
	write("triton/new/k.so", 200, time.Hour)
	write("triton/new/k.json", 100, 0) // used just now: the entry's last use
	write("filler/f", 256, 24*time.Hour)
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "triton", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "triton", "new", "victim")); err != nil {
		t.Fatal(err)
	}

	tr, err := trimCache(dir, 400)
	if err != nil {
		t.Fatal(err)
	}
	// 1356 bytes: old (500), mid (300) and filler (256) go, new (300) stays.
	if tr.Entries != 3 || tr.Bytes != 1056 || tr.Kept != 300 || tr.Failed != 0 {
		t.Errorf("trim %+v, want 3 entries, 1056 bytes removed, 300 kept", tr)
	}
	for rel, want := range map[string]bool{"triton/old/k.so": false, "triton/old": false, "inductor/fxgraph/ab/mid/g": false, "filler/f": false,
		"triton/new/k.so": true, "triton/new/k.json": true} {
		if _, err := os.Lstat(filepath.Join(dir, rel)); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", rel, err == nil, want)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the trim reached out of the cache: %v", err)
	}

	// Within the limit, or without one, nothing goes.
	for _, limit := range []int64{300, 0} {
		if tr, err := trimCache(dir, limit); err != nil || tr.Entries != 0 {
			t.Errorf("limit %d: %+v, %v; want nothing removed", limit, tr, err)
		}
	}
	if tr, err := trimCache(filepath.Join(dir, "none"), 1); err != nil || tr.Entries != 0 {
		t.Errorf("no cache: %+v, %v", tr, err)
	}
}

// The limit: the job's, else the default with a cache volume, else none.
func TestCacheLimit(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		env, volume string
		want        int64
		bad         bool
	}{
		{"", "xrun-cache-k-1", contract.DefaultCacheLimit, false},
		{"", "", 0, false},
		{"1048576", "", 1 << 20, false},
		{"0", "xrun-cache-k-1", 0, false},
		{"-1", "v", 0, true},
		{"10G", "v", 0, true},
	} {
		got, err := cacheLimit(env(tc.env), tc.volume)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("cacheLimit(%q, %q) = %d, %v; want %d (error %v)", tc.env, tc.volume, got, err, tc.want, tc.bad)
		}
	}
}

// The runner of a sandboxed job is root without CAP_DAC_OVERRIDE: it
// trims the worker user's caches with that user's file permissions.
func TestTrimCacheAsTheWorker(t *testing.T) {
	testenv.Root(t, "it owns files as another user")
	// Not t.TempDir: its parent is root's alone.
	dir, err := os.MkdirTemp("", "xrun-trim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	entry := filepath.Join(dir, "triton", "k")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "k.so"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "triton"), entry, filepath.Join(entry, "k.so")} {
		if err := os.Chown(p, 65532, 65532); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another user may not remove the worker's files.
	if tr, err := trimCacheAs(dir, 1, &sandbox.User{UID: 65533, GID: 65533}); err != nil || tr.Failed != 1 || tr.Entries != 0 {
		t.Errorf("as another user: %+v, %v; want the file left", tr, err)
	}
	if tr, err := trimCacheAs(dir, 1, &sandbox.User{UID: 65532, GID: 65532}); err != nil || tr.Entries != 1 || tr.Failed != 0 {
		t.Errorf("as the worker: %+v, %v; want its entry removed", tr, err)
	}
	if _, err := os.Stat(entry); err == nil {
		t.Error("the entry's directory stayed")
	}
}
