package harness

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The Python harness: a launcher script and the package it runs. Named by
// glob so that __init__.py and __main__.py are in (a directory pattern
// leaves out names starting with _ or .) and __pycache__, the pytest suite
// (pytests/) and anything else beside them are not.
//
//go:embed harness.py xrun_harness/*.py xrun_harness/gpu/*.py
var harnessFiles embed.FS

// ScriptName is the file name the harness's launcher is written under.
const ScriptName = "harness.py"

// PackageName is the Python package the launcher runs, written beside it.
const PackageName = "xrun_harness"

// WriteScript writes the embedded harness into dir, the launcher and its
// package beside it, and returns the launcher's path: a worker runs
// python3 -u path. Directories are 0755 and files 0644 whatever the umask:
// the runner may write them as root for a worker running as another user.
func WriteScript(dir string) (string, error) {
	err := fs.WalkDir(harnessFiles, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			if name == "." {
				return nil
			}
			if err := os.Mkdir(path, 0o755); err != nil && !os.IsExist(err) {
				return err
			}
			return os.Chmod(path, 0o755)
		}
		b, err := harnessFiles.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		return os.Chmod(path, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("write harness: %w", err)
	}
	return filepath.Join(dir, ScriptName), nil
}
