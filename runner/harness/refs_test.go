package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/spec"
)

// A command benchmark's implementations are its arguments: none of them is
// a reference to check, while its models still are.
func TestOfACommandBenchmark(t *testing.T) {
	s := &spec.Spec{Benchmark: spec.Benchmark{Command: []string{"sh", "-c", "exit 1"}, Flops: "m:flops",
		Implementations: []spec.Implementation{{Name: "only", Fn: "only"}}}}
	refs := RefsOf(s)
	if len(refs) != 1 || refs[0].Key != "benchmark.flops" {
		t.Errorf("refs of a command benchmark: %+v", refs)
	}
	s.Benchmark.Command = nil
	if refs := RefsOf(s); len(refs) != 2 {
		t.Errorf("refs of a Python benchmark: %+v", refs)
	}
}

func TestPythonPath(t *testing.T) {
	exp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(exp, "kernels", "gla"), 0o755); err != nil {
		t.Fatal(err)
	}
	// ../../kernels/gla is not there: it is <exp>/gla in the container, so
	// its parent is <exp>; kernels/gla is there, so its parent is
	// <exp>/kernels.
	got := PythonPath(exp, []string{"../../kernels/gla", "kernels/gla", "shared/util"}, "/opt/x:/opt/y:"+exp)
	want := strings.Join([]string{exp, filepath.Join(exp, "kernels"), "/opt/x", "/opt/y"}, ":")
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
