package spec

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CompileStack are the modules of torch.compile's that a standby's zygote
// imports beside numpy, torch and triton for an experiment that uses
// torch.compile (UsesTorchCompile), so that the workers forked for the
// next job do not: torch._dynamo, 3.5 s of the 6 s torch.compile's
// imports take on an H100 host after torch itself (docs/performance.md,
// "torch.compile and the caches"). Not torch._inductor.compile_fx, whose
// import starts a thread: a zygote that holds two threads is not forked
// from.
var CompileStack = []string{"torch._dynamo"}

// compileMarkers are what Python code that uses torch.compile names.
var compileMarkers = [][]byte{[]byte("torch.compile"), []byte("torch._dynamo"), []byte("torch._inductor")}

// Bounds of UsesTorchCompile's reading: an experiment is a few modules,
// and a directory that is not one (a dataset beside the code) is walked
// and read no further than this.
const (
	scanMaxEntries = 20000
	scanMaxFiles   = 2000
	scanMaxBytes   = 4 << 20
)

// UsesTorchCompile says whether a Python file of the experiment in dir or
// of its includes (paths relative to dir, or copied into it by their base
// name, as the runner finds them) names torch.compile, torch._dynamo or
// torch._inductor. Hidden directories are skipped; it visits at most
// scanMaxEntries entries and reads at most scanMaxFiles files of at most
// scanMaxBytes each.
func UsesTorchCompile(dir string, includes []string) bool {
	roots := []string{dir}
	for _, inc := range includes {
		p := filepath.Join(dir, inc)
		if _, err := os.Stat(p); err != nil {
			p = filepath.Join(dir, filepath.Base(inc))
		}
		roots = append(roots, p)
	}
	entries, files, found := 0, 0, false
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			entries++
			switch {
			case err != nil || found || files >= scanMaxFiles || entries > scanMaxEntries:
				return filepath.SkipAll
			case d.IsDir() && path != root && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(d.Name(), ".py"):
				return nil
			}
			files++
			if fi, err := d.Info(); err != nil || fi.Size() > scanMaxBytes {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			for _, m := range compileMarkers {
				if bytes.Contains(b, m) {
					found = true
					return filepath.SkipAll
				}
			}
			return nil
		})
	}
	return found
}
