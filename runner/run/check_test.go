package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/contract"
)

// A misspelt function or a syntax error is a bad spec found before any
// worker starts, naming the spec's line and the Python file's.
func TestBadRefsAreABadSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	py := python(t)
	dir := t.TempDir()
	files := map[string]string{
		"xrun.yaml": `name: bad-refs
resources: {gpus: 0}
benchmark:
  inputs: k:make_inputs
  reference: k:ref
  implementations:
    typo: k:fsat
    broken: {fn: broken:f}
  cpu_sweep: {n: [8]}
`,
		"k.py":      "def make_inputs(params, seed):\n    return (1,)\n\ndef ref(x):\n    return x\n\ndef fast(x):\n    return x\n",
		"broken.py": "def f(x):\n    return x +\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ro := runFixture(t, context.Background(), Options{ExperimentDir: dir, Python: py, Mode: "cpu"})
	var se *SpecError
	if !errors.As(ro.err, &se) || ro.code != contract.ExitUsage {
		t.Fatalf("err %v, exit %d; want a bad spec", ro.err, ro.code)
	}
	for _, want := range []string{
		"xrun.yaml:7: benchmark.implementations.typo: k:fsat: k.py: module k has no function fsat; did you mean fast? (its functions: fast, make_inputs, ref)",
		"xrun.yaml:8: benchmark.implementations.broken.fn: broken:f: broken.py:2: SyntaxError: invalid syntax",
	} {
		if !strings.Contains(ro.err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, ro.err)
		}
	}
	if strings.Contains(ro.log, "starting worker") {
		t.Errorf("workers started before the check:\n%s", ro.log)
	}
	if r := readResults(t, ro.out); !strings.Contains(r.Error, "has no function fsat") {
		t.Errorf("results.json error %q", r.Error)
	}
}
