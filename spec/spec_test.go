package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

const glaSpec = `name: gla-pingpong
image: {base: cuda-torch, python: [triton]}
resources: {gpus: 1, timeout: 30m, shm: 8g}
include: [../../kernels/gla]
env: [WANDB_API_KEY]
benchmark:
  inputs: gla.inputs:make_inputs
  reference: gla.reference:chunk_gla
  implementations:
    baseline: gla.triton_baseline:chunk_gla
    pipelined: {fn: gla.triton_pipelined:chunk_gla, requires: [triton]}
  params: {B: 4, H: 32, d: 64, dv: 64, dtype: bfloat16}
  sweep:
    - {chunk: [64], T: [256, 512]}
    - {chunk: [256], T: [1024]}
  flops: gla.inputs:flops
  tolerance: {atol: 1e-2, rtol: 1e-2}
  cpu_sweep: {T: [64]}
  cpu_params: {B: 1, H: 2}
criteria:
  - {speedup: pipelined, over: baseline, at_least: 1.2, for: all, expect: fail}
  - {max_error: all, below: 1e-2, expect: pass}
`

func TestParseFull(t *testing.T) {
	s, err := Parse("xrun.yaml", []byte(glaSpec))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "gla-pingpong" || s.Image.Base != "cuda-torch" || s.Image.Python[0] != "triton" {
		t.Errorf("header: %+v", s)
	}
	if s.Resources.GPUs.Count != 1 || s.Resources.Timeout.Duration != 30*time.Minute || s.Resources.Shm != 8<<30 {
		t.Errorf("resources: %+v", s.Resources)
	}
	if got := s.Benchmark.Implementations.Names(); strings.Join(got, ",") != "baseline,pipelined" {
		t.Errorf("implementation order: %v", got)
	}
	if im, _ := s.Benchmark.Implementations.Get("pipelined"); !im.NeedsGPU() {
		t.Errorf("pipelined requires triton, so it needs a GPU")
	}
	if s.Benchmark.BaselineName() != "baseline" {
		t.Errorf("baseline defaults to the first implementation, got %q", s.Benchmark.BaselineName())
	}
	cases := s.Benchmark.Cases(false)
	var labels []string
	for _, c := range cases {
		labels = append(labels, c.Label())
	}
	want := []string{
		"B=4 H=32 d=64 dv=64 dtype=bfloat16 chunk=64 T=256",
		"B=4 H=32 d=64 dv=64 dtype=bfloat16 chunk=64 T=512",
		"B=4 H=32 d=64 dv=64 dtype=bfloat16 chunk=256 T=1024",
	}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Errorf("cases:\n got %q\nwant %q", labels, want)
	}
	cpu := s.Benchmark.Cases(true)
	if len(cpu) != 1 || cpu[0].Label() != "B=1 H=2 d=64 dv=64 dtype=bfloat16 T=64" {
		t.Errorf("cpu cases: %v", cpu)
	}
	if k := s.Benchmark.SweepKeys(false); strings.Join(k, ",") != "chunk,T" {
		t.Errorf("sweep keys: %v", k)
	}
	if s.Benchmark.Tolerance.Atol != 1e-2 {
		t.Errorf("tolerance 1e-2 (no dot) must read as a number: %+v", s.Benchmark.Tolerance)
	}
	if !s.Criteria[0].ExpectFail() || s.Criteria[1].ExpectFail() {
		t.Errorf("expect: %+v", s.Criteria)
	}
	if s.Criteria[1].Line != 22 || s.Criteria[0].Kind() != "speedup" {
		t.Errorf("criteria: %+v", s.Criteria)
	}
	if len(s.Hash) != 64 {
		t.Errorf("hash %q", s.Hash)
	}
}

func TestParseErrors(t *testing.T) {
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"unknown top key", base + "criterai: []\n", []string{"xrun.yaml:6: criterai: unknown key at the top level (did you mean criteria?); allowed: name,"}},
		{"unknown nested key", "name: x\nbenchmark:\n  inputs: m:i\n  referense: m:r\n", []string{"xrun.yaml:4: benchmark.referense: unknown key in benchmark (did you mean reference?); allowed: inputs, reference"}},
		{"unknown impl key", "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations:\n    a: {fn: m:a, require: [gpu]}\n", []string{"xrun.yaml:6: benchmark.implementations.a.require: unknown key"}},
		{"missing name", "benchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n", []string{"name: missing"}},
		{"bad name", strings.Replace(base, "name: x", "name: Bad Name", 1), []string{"xrun.yaml:1: name: \"Bad Name\" is not allowed"}},
		{"bad callable", strings.Replace(base, "inputs: m:i", "inputs: m.i", 1), []string{"xrun.yaml:3: benchmark.inputs: \"m.i\" is not module:callable"}},
		{"no implementations", "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n", []string{"benchmark.implementations: missing"}},
		{"reserved impl name", strings.Replace(base, "{a: m:a}", "{reference: m:a}", 1), []string{"\"reference\" is reserved"}},
		{"bad requires", strings.Replace(base, "{a: m:a}", "{a: {fn: m:a, requires: [tpu]}}", 1), []string{"\"tpu\" is not known"}},
		{"bad duration", base + "resources: {timeout: 30 minutes}\n", []string{"xrun.yaml:6: resources.timeout: found \"30 minutes\"; write a duration like 90s"}},
		{"bad size", base + "resources: {shm: lots}\n", []string{"xrun.yaml:6: resources.shm: size \"lots\""}},
		{"negative cpus", base + "resources: {cpus: -2}\n", []string{"resources.cpus: found -2; write how many of the host's CPUs the job reserves, at least 1, or leave it out"}},
		{"bad gpus", base + "resources: {gpus: -1}\n", []string{"xrun.yaml:6: resources.gpus: gpus \"-1\": a count must be >= 0"}},
		{"criterion unknown impl", base + "criteria:\n  - {speedup: b, over: a, at_least: 1.2}\n", []string{"xrun.yaml:7: criteria[0].speedup: \"b\" is not an implementation; known: a"}},
		{"criterion two kinds", base + "criteria:\n  - {speedup: a, max_error: a, over: a, at_least: 1}\n", []string{"give exactly one of"}},
		{"criterion bad for", base + "criteria:\n  - {correct: all, for: most}\n", []string{"criteria[0].for: \"most\" is not allowed; use one of all, any, median"}},
		{"criterion bad expect", base + "criteria:\n  - {correct: all,\n     expect: failed}\n", []string{"xrun.yaml:8: criteria[0].expect: \"failed\" is not allowed; use pass (the default) or fail"}},
		{"criterion expect not a string", base + "criteria:\n  - {correct: all, expect: [fail]}\n", []string{"xrun.yaml:7: criteria[0].expect: found a list; write pass or fail"}},
		{"criterion bad by", base + "criteria:\n  - {speedup: a, over: a, at_least: 1, by: mean}\n", []string{"xrun.yaml:7: criteria[0].by: \"mean\" is not allowed; use median (the default: the ratio of the medians) or conservative"}},
		{"by on another kind", base + "criteria:\n  - {correct: all, by: conservative}\n", []string{"criteria[0].by: not a key of a correct criterion (by belongs to speedup)"}},
		{"criterion no threshold", base + "criteria:\n  - {max_error: all}\n", []string{"criteria[0].below: must be > 0"}},
		{"bad baseline", base + "  baseline: z\n", []string{"benchmark.baseline: \"z\" is not an implementation"}},
		{"bad env", base + "env: [\"A-B\"]\n", []string{"env[0]: \"A-B\" is not a variable name"}},
		{"absolute include", base + "include: [/etc]\n", []string{"include[0]: \"/etc\" is absolute"}},
		{"duplicate key", base + "name: y\n", []string{"xrun.yaml:6"}},
		{"not a mapping", "- a\n- b\n", []string{"top level must be a mapping"}},
		{"empty", "", []string{"the file is empty"}},
		{"syntax", "name: [x\n", []string{"xrun.yaml:"}},
		{"tab indent", "name: x\nbenchmark:\n  inputs: m:i\n\treference: m:r\n", []string{"xrun.yaml:4: a tab indents this line; YAML indents with spaces only"}},
		{"sweep without values", base + "  sweep: {T: []}\n", []string{"xrun.yaml:6: benchmark.sweep.T: sweep axis \"T\" has no values; list at least one"}},
		{"min over max", base + "  method: {min_time_s: 5, max_time_s: 1}\n", []string{"min_time_s: is larger than max_time_s"}},
		{"sweep over the case cap", base + "  sweep: " + bigSweep(7, 30) + "\n",
			[]string{"xrun.yaml:6: benchmark.sweep: expands to 21870000000 cases (a(30) x b(30) x c(30) x d(30) x e(30) x f(30) x g(30)); a run may have at most 10000"}},
		{"cpu sweep over the case cap", base + "  cpu_sweep: " + bigSweep(3, 30) + "\n",
			[]string{"xrun.yaml:6: benchmark.cpu_sweep: expands to 27000 cases"}},
		{"sweep groups add up past the cap", base + "  sweep:\n    - " + bigSweep(2, 80) + "\n    - " + bigSweep(2, 80) + "\n",
			[]string{"benchmark.sweep: expands to 12800 cases (a(80) x b(80) + a(80) x b(80))"}},
		{"sweep count past MaxInt", base + "  sweep: " + bigSweep(20, 10) + "\n",
			[]string{"benchmark.sweep: expands to more than 9223372036854775807 cases"}},
		{"rest ratio", base + "  method: {rest_ratio: -1}\n", []string{"method.rest_ratio: must be between 0 and 10"}},
		// A user meaning 5 %: refused, not silently the 2 % default.
		{"fast_threshold as a fraction", base + "  method: {fast_threshold: 0.05}\n",
			[]string{"xrun.yaml:6: benchmark.method.fast_threshold: found 0.05; the margin is a ratio above 1: write 1.05 for 5 %"}},
		{"fast_threshold of 1", base + "  method: {fast_threshold: 1}\n", []string{"benchmark.method.fast_threshold: found 1; the margin is a ratio above 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("xrun.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.yaml)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want spec.Errors", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// bigSweep writes a sweep of keys axes a, b, c... of values values each.
func bigSweep(keys, values int) string {
	vals := make([]string, values)
	for i := range vals {
		vals[i] = strconv.Itoa(i + 1)
	}
	axes := make([]string, keys)
	for i := range axes {
		axes[i] = fmt.Sprintf("%c: [%s]", 'a'+i, strings.Join(vals, ", "))
	}
	return "{" + strings.Join(axes, ", ") + "}"
}

func TestSweepCount(t *testing.T) {
	tests := []struct {
		name  string
		sweep string
		want  int
	}{
		{"none", "", 1},
		{"one axis", "  sweep: {T: [1, 2, 3]}\n", 3},
		{"product", "  sweep: {T: [1, 2, 3], B: [1, 2]}\n", 6},
		{"groups add", "  sweep:\n    - {T: [1, 2], B: [1, 2]}\n    - {T: [4]}\n", 5},
		{"at the cap", "  sweep: " + bigSweep(2, 100) + "\n", MaxCases},
	}
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("xrun.yaml", []byte(base+tc.sweep))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Benchmark.Sweep.Count(); got != tc.want {
				t.Errorf("Count() = %d, want %d", got, tc.want)
			}
			if got := len(s.Benchmark.Cases(false)); got != tc.want {
				t.Errorf("len(Cases) = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseGPUs(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"", "0", false}, {"none", "0", false}, {"2", "2", false}, {"all", "all", false},
		{"0,2", "0,2", false}, {"GPU-abc", "GPU-abc", false}, {"-1", "", true}, {"0,,1", "", true}, {"x", "", true},
		{"device=0", "0", false}, {"device=1,3", "1,3", false}, {`device="0,1"`, "0,1", false},
		{"device=GPU-abc", "GPU-abc", false}, {"device=", "", true}, {"device=0,", "", true},
	}
	for _, tc := range tests {
		g, err := ParseGPUs(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseGPUs(%q) error = %v", tc.in, err)
			continue
		}
		if err == nil && g.String() != tc.want {
			t.Errorf("ParseGPUs(%q) = %s, want %s", tc.in, g, tc.want)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	tests := map[string]ByteSize{"8g": 8 << 30, "512MiB": 512 << 20, "1.5g": 3 << 29, "1024": 1024, "64k": 64 << 10}
	for in, want := range tests {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "g", "8x", "-1g"} {
		if _, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", bad)
		}
	}
}

func TestImageShorthandAndGPUList(t *testing.T) {
	y := "name: x\nimage: nvcr.io/nvidia/pytorch:25.01-py3\nresources: {gpus: [0, 2]}\nbenchmark:\n  command: [./bench]\n  implementations: {a: m:a}\n"
	s, err := Parse("xrun.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if s.Image.Base != "nvcr.io/nvidia/pytorch:25.01-py3" || s.Resources.GPUs.String() != "0,2" || s.Benchmark.Command[0] != "./bench" {
		t.Errorf("got %+v", s)
	}
}

func TestHashFollowsBytes(t *testing.T) {
	a, _ := Parse("a", []byte(glaSpec))
	b, _ := Parse("b", []byte(glaSpec))
	c, _ := Parse("c", []byte(glaSpec+"\n"))
	if a.Hash != b.Hash || a.Hash == c.Hash {
		t.Errorf("hash must depend on the bytes alone")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(glaSpec))
	f.Add([]byte("name: x\nbenchmark: {inputs: m:i, reference: m:r, implementations: {a: m:a}}\n"))
	f.Add([]byte("name: [\n"))
	f.Add([]byte("sweep: [{T: [1]}, 3]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("xrun.yaml", data)
		if err == nil {
			if s.Name == "" || len(s.Benchmark.Implementations) == 0 {
				t.Fatalf("accepted a spec without name or implementations: %q", data)
			}
			_ = s.Benchmark.Cases(false)
			_ = s.Benchmark.Cases(true)
		} else if err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}

func TestVaryingKeys(t *testing.T) {
	s, err := Parse("xrun.yaml", []byte(glaSpec))
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Benchmark.Cases(false)
	keys := VaryingKeys(cases)
	if strings.Join(keys, ",") != "chunk,T" {
		t.Fatalf("varying keys %v", keys)
	}
	if got := cases[2].Only(keys).Label(); got != "chunk=256 T=1024" {
		t.Errorf("label %q", got)
	}
	one := s.Benchmark.Cases(true)
	if VaryingKeys(one) != nil || one[0].Only(nil).Label() != one[0].Label() {
		t.Errorf("a single case has no varying keys and keeps its full label")
	}
}

func TestRestRatio(t *testing.T) {
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	for _, tc := range []struct {
		method string
		want   float64
	}{{"", DefaultRestRatio}, {"  method: {rest_ratio: 0}\n", 0}, {"  method: {rest_ratio: 2}\n", 2}} {
		s, err := Parse("xrun.yaml", []byte(base+tc.method))
		if err != nil {
			t.Fatalf("%q: %v", tc.method, err)
		}
		if got := s.Benchmark.Method.Rest(); got != tc.want {
			t.Errorf("%q: Rest() = %g, want %g", tc.method, got, tc.want)
		}
	}
}

func TestKernelClockOn(t *testing.T) {
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	for _, tc := range []struct {
		method string
		want   bool
	}{{"", true}, {"  method: {kernel_clock: true}\n", true}, {"  method: {kernel_clock: false}\n", false}} {
		s, err := Parse("xrun.yaml", []byte(base+tc.method))
		if err != nil {
			t.Fatalf("%q: %v", tc.method, err)
		}
		if got := s.Benchmark.Method.KernelClockOn(); got != tc.want {
			t.Errorf("%q: KernelClockOn() = %v, want %v", tc.method, got, tc.want)
		}
	}
}

func TestKernelClockMax(t *testing.T) {
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	for _, tc := range []struct {
		method string
		want   float64
	}{{"", DefaultKernelClockMaxMS}, {"  method: {kernel_clock_max_ms: 0.5}\n", 0.5}, {"  method: {kernel_clock_max_ms: 0}\n", 0}} {
		s, err := Parse("xrun.yaml", []byte(base+tc.method))
		if err != nil {
			t.Fatalf("%q: %v", tc.method, err)
		}
		if got := s.Benchmark.Method.KernelClockMax(); got != tc.want {
			t.Errorf("%q: KernelClockMax() = %g, want %g", tc.method, got, tc.want)
		}
	}
	_, err := Parse("xrun.yaml", []byte(base+"  method: {kernel_clock_max_ms: -1}\n"))
	if err == nil || !strings.Contains(err.Error(), "kernel_clock_max_ms") {
		t.Errorf("a negative kernel_clock_max_ms: %v", err)
	}
}

// Specs a careless or hostile experiment may hold: each is refused with the
// file, the line where one can be told, and a message of bounded length.
func TestHostileSpecs(t *testing.T) {
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	huge := strings.Repeat("n", 500<<10)
	tests := []struct {
		name, spec, want string
	}{
		{"NaN tolerance", base + "  tolerance: {atol: .nan, rtol: 1e-3}\n", "xrun.yaml:6: benchmark.tolerance.atol: found NaN; write a finite number >= 0"},
		{"infinite rtol", base + "  tolerance: {atol: 0, rtol: .inf}\n", "benchmark.tolerance.rtol: found +Inf"},
		{"NaN method value", base + "  method: {max_time_s: .nan}\n", "benchmark.method.max_time_s: found NaN"},
		{"a timeout of 1ns", base + "resources: {timeout: 1ns}\n", "xrun.yaml:6: resources.timeout: 1ns is too short: give at least 1s"},
		{"an implementation timeout of 1ms", base + "  method: {impl_timeout: 1ms}\n", "benchmark.method.impl_timeout: 1ms is too short"},
		{"a second document", base + "---\nname: y\n", "xrun.yaml:6: a second YAML document starts here"},
		{"a control character", "name: x\nbenchmark:\n  inputs: m:\x01i\n", "xrun.yaml:3: control character U+0001 is not allowed"},
		{"bytes that are not UTF-8", "name: x\n\xff\n", "xrun.yaml:2: byte 0xff is not UTF-8"},
		{"a 500 KB name", strings.Replace(base, "name: x", "name: "+huge, 1), "bytes in all)"},
		{"a 500 KB value of the wrong type", base + "  method: {warmup_ms: " + huge + "}\n", "bytes in all); write a number"},
		{"a 2 MB spec", base + "# " + strings.Repeat("x", 2<<20) + "\n", "the spec is larger than 1024 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("xrun.yaml", []byte(tt.spec))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", Clip(err.Error(), 400), tt.want)
			}
			if len(err.Error()) > 4000 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
		})
	}
}
