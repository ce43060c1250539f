//go:build unix

package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// WriteScript writes the launcher and the whole package, readable by a
// worker running as another user whatever the umask, and nothing else (no
// tests, no bytecode).
func TestWriteScript(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, ScriptName) {
		t.Errorf("path %q", path)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want := fs.FileMode(0o644)
		if d.IsDir() {
			want = fs.ModeDir | 0o755
		} else {
			files = append(files, rel)
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", rel, info.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"harness.py", "xrun_harness/__init__.py", "xrun_harness/__main__.py", "xrun_harness/worker.py",
		"xrun_harness/protocol.py", "xrun_harness/gpu/__init__.py", "xrun_harness/gpu/sampler.py"} {
		if !slices.Contains(files, filepath.FromSlash(want)) {
			t.Errorf("%s was not written (wrote %v)", want, files)
		}
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".py") || strings.Contains(f, "pytests") || strings.Contains(f, "__pycache__") || strings.Contains(f, "test_") {
			t.Errorf("%s should not be shipped", f)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != string(Script()) {
		t.Error("Script() is not the launcher")
	}
	// Written again into the same directory (a second run): no error.
	if _, err := WriteScript(dir); err != nil {
		t.Fatal(err)
	}
}
