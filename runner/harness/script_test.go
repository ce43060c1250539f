//go:build unix

package harness

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/result"
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

// The rule of PROTOCOL.md, "Defaults": a field the runner always sends
// (no omitempty) is required by the harness, and every other field has its
// default there; both sides know the same fields.
func TestCommandDefaultsAreDefinedOnce(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "no python3: %v", err)
	}
	dir := t.TempDir()
	if _, err := WriteScript(dir); err != nil {
		t.Fatal(err)
	}
	prog := `
import dataclasses, json, sys
sys.path.insert(0, sys.argv[1])
from xrun_harness import protocol as p
def required(cls):
    return {f.name: f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            for f in dataclasses.fields(cls)}
out = {op: required(cls) for op, cls in p.COMMANDS.items()}
out["tolerance"] = required(p.Tolerance)
print(json.dumps(out))
`
	b, err := exec.Command(py, "-c", prog, dir).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got map[string]map[string]bool
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	cmds := map[string]any{OpInit: Init{}, OpModels: ModelsCmd{}, OpFirst: First{}, OpCheck: Check{}, OpTime: Time{}, OpProfile: ProfileCmd{},
		OpExit: struct{}{}, "tolerance": result.Tolerance{}}
	for op, v := range cmds {
		want := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			want[name] = !strings.Contains(opts, "omitempty")
		}
		if !reflect.DeepEqual(got[op], want) {
			t.Errorf("%s: the harness's fields (true: required) %v, the runner's (true: always sent) %v", op, got[op], want)
		}
	}
	if len(got) != len(cmds) {
		t.Errorf("the harness reads %d commands, the runner sends %d", len(got), len(cmds))
	}
}

// Script returns the embedded launcher, the script a worker runs.
func Script() []byte {
	b, _ := harnessFiles.ReadFile(ScriptName)
	return b
}
