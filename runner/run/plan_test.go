package run

import (
	"testing"

	"github.com/xrun-dev/xrun/runner/spec"
)

// A command benchmark's implementations are its arguments: none of them is
// a reference to check, while its models still are.
func TestSpecRefsOfACommandBenchmark(t *testing.T) {
	s := &spec.Spec{Benchmark: spec.Benchmark{Command: []string{"sh", "-c", "exit 1"}, Flops: "m:flops",
		Implementations: []spec.Implementation{{Name: "only", Fn: "only"}}}}
	refs := SpecRefs(s)
	if len(refs) != 1 || refs[0].Key != "benchmark.flops" {
		t.Errorf("refs of a command benchmark: %+v", refs)
	}
	s.Benchmark.Command = nil
	if refs := SpecRefs(s); len(refs) != 2 {
		t.Errorf("refs of a Python benchmark: %+v", refs)
	}
}
