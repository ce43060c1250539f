//go:build integration

package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRefs(t *testing.T) {
	py := testPython(t)
	dir := t.TempDir()
	files := map[string]string{
		"ok.py":              "import numpy as np\n\ndef make(params, seed):\n    return ()\n\nif True:\n    try:\n        from math import sqrt as root\n    except ImportError:\n        pass\nadd = np.add\n",
		"broken.py":          "def f(x):\n    return x +\n",
		"pkg/__init__.py":    "",
		"pkg/fast.py":        "import triton  # not installed here: never imported by the check\n\ndef kernel(x):\n    return x\n",
		"bad/__init__.py":    "x = (\n",
		"bad/mod.py":         "def f(): pass\n",
		"star.py":            "from ok import *\n",
		"lazy.py":            "def __getattr__(name):\n    return len\n",
		"kernels/inc.py":     "def g(x):\n    return x\n",
		"nested/deep.py":     "class Op:\n    def run(self):\n        pass\n",
		"nested/__init__.py": "",
	}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PYTHONPATH="+dir+string(os.PathListSeparator)+filepath.Join(dir, "kernels"), "PYTHONDONTWRITEBYTECODE=1")
	refs := []Ref{
		{"ok1", "ok:make"}, {"ok2", "ok:root"}, {"ok3", "ok:add"}, {"ok4", "pkg.fast:kernel"}, {"ok5", "star:anything"},
		{"ok6", "lazy:whatever"}, {"ok7", "inc:g"}, {"ok8", "nested.deep:Op.run"}, {"ok9", "math:sqrt"}, {"ok10", "numpy:add"},
		{"typo", "ok:mkae"},
		{"syntax", "broken:f"},
		{"missing", "nosuch.mod:f"},
		{"pkginit", "bad.mod:f"},
		{"notpkg", "ok.sub:f"},
		{"form", "ok.make"},
	}
	ps, err := CheckRefs(context.Background(), py, dir, env, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Problem{}
	for _, p := range ps {
		got[p.Key] = p
	}
	for _, want := range []struct{ key, where, msg string }{
		{"typo", "ok.py: ", "module ok has no function mkae; did you mean make? (its functions: make)"},
		{"syntax", "broken.py:2: ", "SyntaxError: invalid syntax"},
		{"missing", "", "module nosuch not found"},
		{"pkginit", "bad/__init__.py:1: ", "SyntaxError"},
		{"notpkg", "ok.py: ", "ok is a module, not a package"},
		{"form", "", "'ok.make' is not module:function"},
	} {
		p, ok := got[want.key]
		if !ok {
			t.Errorf("%s: no problem found", want.key)
			continue
		}
		delete(got, want.key)
		if p.Where() != want.where || !strings.Contains(p.Message, want.msg) {
			t.Errorf("%s: %q %q, want %q %q", want.key, p.Where(), p.Message, want.where, want.msg)
		}
	}
	for k, p := range got {
		t.Errorf("%s: unexpected problem %+v", k, p)
	}
}
