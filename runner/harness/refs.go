// The spec's module:function references: which keys name one (RefsOf),
// the message of the problems the harness's check found (RefsError),
// the check on this machine before a build (CheckOnHost), and the
// PYTHONPATH the workers import them from (PythonPath). The runner checks
// them in the container with the same words.

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/spec"
)

// RefsOf are the module:function references of s, each with the spec key
// that names it.
func RefsOf(s *spec.Spec) []Ref {
	b := &s.Benchmark
	var refs []Ref
	add := func(key, ref string) {
		if ref != "" {
			refs = append(refs, Ref{Key: key, Ref: ref})
		}
	}
	add("benchmark.inputs", b.Inputs)
	add("benchmark.reference", b.Reference)
	// A command benchmark's implementations are its arguments, not
	// module:function references.
	if len(b.Command) == 0 {
		for _, im := range b.Implementations {
			key := "benchmark.implementations." + im.Name
			if _, ok := s.Lines[key+".fn"]; ok {
				key += ".fn"
			}
			add(key, im.Fn)
		}
	}
	add("benchmark.flops", b.Flops)
	add("benchmark.bytes", b.Bytes)
	add("benchmark.tokens", b.Tokens)
	add("benchmark.metrics", b.Metrics)
	return refs
}

// RefsError is the problems the reference check found, a line each
// ("xrun.yaml:9: benchmark.inputs: ops:mk: ops.py: module ops has no
// function mk; ..."), or nil for none: one message, whether xrun finds them
// before the build or the runner in the container.
func RefsError(s *spec.Spec, problems []Problem) error {
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = fmt.Sprintf("%s: %s: %s%s", s.At(p.Key), p.Ref, p.Where(), p.Message)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// CheckOnHost checks s's references with python on this machine, as
// xrun submit does before it builds the image: the experiment's modules
// are parsed (nothing of them is imported or run), with expDir and its
// includes on PYTHONPATH as the workers have them. The error is the bad
// spec; a check that could not run is no error (the container checks).
func CheckOnHost(ctx context.Context, s *spec.Spec, expDir, python string, timeout time.Duration) (ran bool, err error) {
	expDir, err = filepath.Abs(expDir)
	if err != nil {
		return false, nil
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PYTHONPATH" && k != "PYTHONSTARTUP" && k != "PYTHONHOME" {
			env = append(env, kv)
		}
	}
	env = append(env, "PYTHONPATH="+PythonPath(expDir, s.Include, ""), "PYTHONDONTWRITEBYTECODE=1")
	problems, cerr := CheckRefsOnHost(ctx, python, expDir, env, RefsOf(s), timeout)
	if cerr != nil {
		return false, nil
	}
	return true, RefsError(s, problems)
}

// PythonPath is the PYTHONPATH of the workers: the experiment directory and
// the parent of each include, where an include p is <exp>/p when that
// exists and <exp>/<basename p> otherwise (its place in the container).
func PythonPath(expDir string, includes []string, existing string) string {
	var parts []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	add(expDir)
	for _, inc := range includes {
		p := filepath.Join(expDir, inc)
		if _, err := os.Stat(p); err != nil {
			p = filepath.Join(expDir, filepath.Base(inc))
		}
		add(filepath.Dir(p))
	}
	for _, p := range filepath.SplitList(existing) {
		add(p)
	}
	return strings.Join(parts, string(os.PathListSeparator))
}
