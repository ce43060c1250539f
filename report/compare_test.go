package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

// results makes a job's results: baseline and pipelined at T=256 and
// T=512, with medians scaled by slow (a slower GPU) and TFLOPS to match.
func results(id, gpu string, slow float64, withT512 bool, pipelinedFails bool) *result.Results {
	r := &result.Results{
		SchemaVersion:   1,
		JobID:           id,
		Experiment:      "gla-pingpong",
		Status:          result.StatusSucceeded,
		Mode:            "gpu",
		Baseline:        "baseline",
		Implementations: []string{"baseline", "pipelined"},
		Env:             result.Env{GPUs: []result.GPU{{Index: 0, Name: gpu}}},
	}
	add := func(label string, t float64, base, fast float64) {
		c := result.Case{Label: label, Params: map[string]any{"T": t}, Results: map[string]*result.ImplResult{
			"reference": {Status: result.ImplOK},
			"baseline":  {Status: result.ImplOK, Timing: cmpTiming(base * slow), Throughput: &result.Throughput{TFLOPS: 100 / (base * slow)}},
		}}
		if pipelinedFails {
			c.Results["pipelined"] = &result.ImplResult{Status: result.ImplError, Error: "compile error"}
		} else {
			c.Results["pipelined"] = &result.ImplResult{Status: result.ImplOK, Timing: cmpTiming(fast * slow), Throughput: &result.Throughput{TFLOPS: 100 / (fast * slow)}}
			r.Comparisons = append(r.Comparisons, result.Comparison{A: "pipelined", B: "baseline", Label: label, Params: c.Params, Speedup: base / fast, Verdict: result.VerdictFast})
		}
		r.Cases = append(r.Cases, c)
	}
	add("T=256", 256, 0.5, 0.4)
	if withT512 {
		add("T=512", 512, 1.0, 0.7)
	}
	return r
}

// timing is a median with a ±1 % interquartile range.
func cmpTiming(ms float64) *result.Timing {
	return &result.Timing{MedianMS: ms, Q1MS: ms * 0.99, Q3MS: ms * 1.01}
}

// Two nights of one host within each other's spread are SAME; apart by
// more than the margin beyond their spreads, FAST or SLOW; a timing
// without quartiles gets no verdict.
func TestVsFirstVerdict(t *testing.T) {
	night := func(id string, ms float64) CompareInput {
		r := results(id, "NVIDIA H100 80GB HBM3", 1, false, false)
		r.Cases[0].Results["baseline"].Timing = &result.Timing{MedianMS: ms, Q1MS: ms * 0.995, Q3MS: ms * 1.005}
		return CompareInput{JobID: id, Results: r}
	}
	plain := night("c", 0.5)
	plain.Results.Cases[0].Results["baseline"].Timing = &result.Timing{MedianMS: 0.5}
	rep, err := Compare([]CompareInput{night("a", 0.5), night("b", 0.501), night("d", 0.55), night("e", 0.45), plain})
	if err != nil {
		t.Fatal(err)
	}
	cells := rep.Cases[0].Rows[0].Cells
	for i, want := range []string{"", result.VerdictSame, result.VerdictSlow, result.VerdictFast, ""} {
		if cells[i].VsFirstVerdict != want {
			t.Errorf("job %d: verdict %q, want %q (%+v)", i+1, cells[i].VsFirstVerdict, want, cells[i])
		}
	}
}

func TestBuildAndRender(t *testing.T) {
	in := []CompareInput{
		{JobID: "3fa1c2e0a1b2", Host: "lab", Results: results("3fa1c2e0a1b2", "NVIDIA H100 80GB HBM3", 1, true, false)},
		{JobID: "9b2e11d40c77", Host: "cloud", Results: results("9b2e11d40c77", "NVIDIA A100-SXM4-80GB", 2, true, false)},
		{JobID: "c0ffee000001", Host: "unix:///var/run/docker.sock", Results: results("c0ffee000001", "NVIDIA L4", 4, false, true)},
	}
	rep, err := Compare(in)
	if err != nil {
		t.Fatal(err)
	}
	// The figures a reader relies on.
	row := rep.Cases[0].Rows[1]
	if row.Implementation != "pipelined" || row.Cells[0].Speedup != 1.25 || row.Cells[1].VsFirst != 0.5 || row.Cells[2].Status != result.ImplError {
		t.Fatalf("T=256 pipelined row: %+v", row)
	}
	if got := rep.Cases[1].Rows[0].Cells[2].Status; got != "missing" {
		t.Fatalf("a job without T=512 shows %q", got)
	}
	for _, f := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"three_jobs.txt", func(b *bytes.Buffer) error { return rep.Text(b) }},
		{"three_jobs.md", func(b *bytes.Buffer) error { return rep.Markdown(b) }},
		{"three_jobs.json", func(b *bytes.Buffer) error { return rep.JSON(b) }},
	} {
		var b bytes.Buffer
		if err := f.render(&b); err != nil {
			t.Fatal(err)
		}
		golden(t, f.name, b.Bytes())
	}
	var back Comparison
	var b bytes.Buffer
	rep.JSON(&b)
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Jobs) != 3 {
		t.Fatalf("JSON does not round-trip: %v", err)
	}
}

func TestBuildWithoutComparisons(t *testing.T) {
	a := results("a", "GPU A", 1, false, false)
	b := results("b", "GPU B", 1, false, false)
	a.Comparisons, b.Comparisons = nil, nil
	rep, err := Compare([]CompareInput{{Results: a}, {Results: b}})
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Cases[0].Rows
	if rows[0].Cells[0].Speedup != 1 || rows[1].Cells[1].Speedup != 1.25 || rep.Jobs[0].ID != "a" {
		t.Fatalf("speedups from medians: %+v", rows)
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Compare([]CompareInput{{Results: results("a", "x", 1, false, false)}}); err == nil || !strings.Contains(err.Error(), "at least two") {
		t.Fatalf("got %v", err)
	}
	if _, err := Compare([]CompareInput{{JobID: "a"}, {JobID: "b"}}); err == nil || !strings.Contains(err.Error(), "job a has no results") {
		t.Fatalf("got %v", err)
	}
}

func TestGPUName(t *testing.T) {
	tests := []struct {
		env  result.Env
		want string
	}{
		{result.Env{}, "cpu"},
		{result.Env{CPU: "AMD EPYC"}, "cpu: AMD EPYC"},
		{result.Env{GPUs: []result.GPU{{Name: "H100"}, {Name: "H100"}}}, "2x H100"},
		{result.Env{GPUs: []result.GPU{{Name: "H100"}, {Name: "A100"}}}, "H100 + A100"},
	}
	for _, tc := range tests {
		if got := gpuName(&result.Results{Env: tc.env}); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// Jobs on different clocks are compared on the events; jobs on the kernel
// clock stay on it, with a note when their launch costs differ.
func TestOneClockPerRow(t *testing.T) {
	onKernel := func(r *result.Results, launchMS float64) *result.Results {
		r.Methodology.LaunchMS = launchMS
		for _, c := range r.Cases {
			for _, ir := range c.Results {
				if ir.Timing != nil {
					ir.Timing.Events = &result.ClockSummary{MedianMS: ir.Timing.MedianMS + 0.0013}
					ir.Timing.Clock = result.ClockKernel
				}
			}
		}
		return r
	}
	// A new runner's job beside an old one's: the row reads the events.
	rep, err := Compare([]CompareInput{
		{JobID: "new", Results: onKernel(results("new", "NVIDIA H100 80GB HBM3", 1, false, false), 0.0012)},
		{JobID: "old", Results: results("old", "NVIDIA H100 80GB HBM3", 1, false, false)},
	})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Cases[0].Rows[0]
	if c := row.Cells[0]; c.Clock != result.ClockEvents || c.MedianMS != 0.5+0.0013 {
		t.Errorf("new job's cell %+v: want its events' median", c)
	}
	if c := row.Cells[1]; c.Clock != result.ClockEvents || c.VsFirst != (0.5+0.0013)/0.5 {
		t.Errorf("old job's cell %+v", c)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "2 row(s) compared on the CUDA events") {
		t.Errorf("notes %q", rep.Notes)
	}
	// Two kernel-clock jobs stay on it; different launch costs get a note.
	for _, tc := range []struct {
		launch2 float64
		notes   int
	}{{0.0012, 0}, {0.00095, 1}} {
		rep, err = Compare([]CompareInput{
			{JobID: "a", Results: onKernel(results("a", "NVIDIA H100 80GB HBM3", 1, false, false), 0.0012)},
			{JobID: "b", Results: onKernel(results("b", "NVIDIA H100 80GB HBM3", 1, false, false), tc.launch2)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Cases[0].Rows[0].Cells[1]; c.Clock != result.ClockKernel || c.MedianMS != 0.5 {
			t.Errorf("launch %v: cell %+v: want the kernel clock", tc.launch2, c)
		}
		if len(rep.Notes) != tc.notes || tc.notes == 1 && !strings.Contains(rep.Notes[0], "job 1: 1.20 µs, job 2: 0.95 µs") {
			t.Errorf("launch %v: notes %q", tc.launch2, rep.Notes)
		}
	}
	var b bytes.Buffer
	if err := rep.Text(&b); err != nil || !strings.Contains(b.String(), "note: the kernel clock adds each job's own launch cost") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
}

// Jobs of two experiments, or with no sweep point in common, line up with
// a note that says so; jobs of one experiment that share rows get none.
func TestNotesOnJobsThatDoNotLineUp(t *testing.T) {
	a := results("a", "GPU A", 1, false, false)
	b := results("b", "GPU B", 1, false, false)
	rep, err := Compare([]CompareInput{{Results: a}, {Results: b}})
	if err != nil || len(rep.Notes) != 0 {
		t.Fatalf("one experiment, shared rows: %v, notes %q", err, rep.Notes)
	}
	other := results("c", "GPU C", 1, false, false)
	other.Experiment = "softmax"
	other.Cases[0].Label, other.Cases[0].Params = "shape=64x256", map[string]any{"shape": "64x256"}
	rep, err = Compare([]CompareInput{{Results: a}, {Results: other}})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "different experiments (gla-pingpong, softmax)") || !strings.Contains(notes, "nothing lines up") {
		t.Errorf("notes: %q", rep.Notes)
	}
}

// Sub-µs times stay apart (a better unit, significant digits), a CPU's FLOP
// rate reads in GFLOPS rather than 0.00 TFLOPS, the reference gets no
// speedup (as in xrun results) and an incorrect implementation none either.
func TestCellsReadLikeResults(t *testing.T) {
	mk := func(id string, ms float64) *result.Results {
		return &result.Results{JobID: id, Experiment: "e", Status: result.StatusSucceeded, Mode: "cpu", Baseline: "base",
			Implementations: []string{"base", "bad"},
			Cases: []result.Case{{Label: "n=1", Results: map[string]*result.ImplResult{
				"reference": {Status: result.ImplOK, Timing: cmpTiming(ms * 3), Throughput: &result.Throughput{TFLOPS: 0.0004}},
				"base":      {Status: result.ImplOK, Timing: cmpTiming(ms), Throughput: &result.Throughput{TFLOPS: 0.00123}},
				"bad":       {Status: result.ImplWrong, Timing: cmpTiming(ms / 20)},
			}}}}
	}
	rep, err := Compare([]CompareInput{{Results: mk("a", 0.000811)}, {Results: mk("b", 0.000802)}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.Text(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1: µs", "1: GFLOPS", "0.811", "0.802", "1.23", "baseline"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	for _, row := range rep.Cases[0].Rows {
		if (row.Implementation == "reference" || row.Implementation == "bad") && row.Cells[0].Speedup != 0 {
			t.Errorf("%s has a speedup: %+v", row.Implementation, row.Cells[0])
		}
	}
	if strings.Contains(out, "0.0008") || strings.Contains(out, "TFLOPS") {
		t.Errorf("lossy or mixed units:\n%s", out)
	}
}

// A job and a results file name their host alike: the machine's name, with
// the alias a job was submitted to; never a daemon's address.
func TestHostName(t *testing.T) {
	named := &result.Results{Env: result.Env{Host: "gpu01"}}
	unnamed := &result.Results{}
	for _, c := range []struct {
		conn string
		r    *result.Results
		want string
	}{
		{"gpu01", named, "gpu01"}, // a results file: its own env.host
		{"unix:///var/run/docker.sock", named, "gpu01"},
		{"lab", named, "gpu01 (lab)"},
		{"ssh://me@lab:2222", named, "gpu01"},
		{"k8s://ctx/ns", named, "gpu01"},
		{"unix:///var/run/docker.sock", unnamed, "local"},
		{"ssh://me@lab:2222", unnamed, "lab"},
		{"tcp://10.0.0.5:2376", unnamed, "10.0.0.5"},
		{"lab", unnamed, "lab"},
	} {
		if got := hostName(c.conn, c.r); got != c.want {
			t.Errorf("hostName(%q, env.host %q) = %q, want %q", c.conn, c.r.Env.Host, got, c.want)
		}
	}
}

// A timing whose autotuned kernel ran another config than in the first job
// says so in its cell and in a note: the moved time comes with its reason.
func TestConfigChanged(t *testing.T) {
	night := func(id, config string, ms float64) CompareInput {
		r := results(id, "NVIDIA H200", 1, false, false)
		ir := r.Cases[0].Results["pipelined"]
		ir.Timing = cmpTiming(ms)
		ir.Autotune = []result.Autotune{{Kernel: "matmul_kernel", Kind: "triton", Key: "8192", Config: config, Source: result.AutotuneTuned}}
		return CompareInput{JobID: id, Results: r}
	}
	rep, err := Compare([]CompareInput{night("a", "128x256x64/w8/s3", 1.46), night("b", "128x256x64/w8/s3", 1.47), night("c", "128x64x32/w4/s4", 2.67)})
	if err != nil {
		t.Fatal(err)
	}
	cells := rep.Cases[0].Rows[1].Cells
	if cells[1].ConfigChange != "" || cells[2].ConfigChange != "config changed: matmul_kernel 128x256x64/w8/s3 → 128x64x32/w4/s4" {
		t.Errorf("cells %+v", cells)
	}
	var b bytes.Buffer
	if err := rep.Text(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SLOW (config changed)", "note: pipelined at T=256, job 3 against job 1: config changed: matmul_kernel 128x256x64/w8/s3 → 128x64x32/w4/s4"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// Two runs that asked for a 1 % margin are compared at 1 %, not at the
// 2 % default; a run that says nothing gets the default.
func TestMarginIsTheRunsOwn(t *testing.T) {
	night := func(id string, ms, margin float64) CompareInput {
		r := results(id, "NVIDIA H100 80GB HBM3", 1, false, false)
		r.Methodology.FastThreshold = margin
		r.Cases[0].Results["baseline"].Timing = &result.Timing{MedianMS: ms, Q1MS: ms * 0.999, Q3MS: ms * 1.001, StderrRel: 0.0005}
		return CompareInput{JobID: id, Results: r}
	}
	for _, c := range []struct {
		name         string
		first, other float64
		want         string
	}{
		{"both 1 %", 1.01, 1.01, result.VerdictSlow},
		{"one 1 %, one default", 1.01, 0, result.VerdictSame},
		{"one 1 %, one 2 %", 1.01, 1.02, result.VerdictSame},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Compare([]CompareInput{night("a", 0.5, c.first), night("b", 0.5075, c.other)})
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Cases[0].Rows[0].Cells[1].VsFirstVerdict; got != c.want {
				t.Errorf("1.5 %% slower: %s, want %s", got, c.want)
			}
		})
	}
}

// Names a run chose are text in the markdown comparison (issue 47): an
// implementation named like a link, a case label with a | or HTML, a GPU
// named like an image, read as written.
func TestComparisonMarkdownNamesAreText(t *testing.T) {
	a := results("a", "![gpu](https://evil.example/g.png)", 1, false, false)
	b := results("b", "GPU B", 1, false, false)
	for _, r := range []*result.Results{a, b} {
		r.Experiment = "<script>x</script>"
		r.Cases[0].Label = "T=1|<b>"
		ir := r.Cases[0].Results["pipelined"]
		delete(r.Cases[0].Results, "pipelined")
		r.Cases[0].Results["[x](https://evil.example)"] = ir
		for i, n := range r.Implementations {
			if n == "pipelined" {
				r.Implementations[i] = "[x](https://evil.example)"
			}
		}
		r.Comparisons = nil
	}
	rep, err := Compare([]CompareInput{{JobID: "a", Host: "lab", Results: a}, {JobID: "b|`x`", Host: "<i>h</i>", Results: b}})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, bad := range []string{"<script>", "[x](", "![gpu](", "T=1|", "<b>", "<i>", "b|`x`"} {
		if i := strings.Index(out, bad); i >= 0 && (i == 0 || out[i-1] != '\\') {
			t.Errorf("the markdown holds %q unescaped:\n%s", bad, out)
		}
	}
	for _, want := range []string{`\[x\]`, `T=1\|\<b\>`, `\<script\>`} {
		if !strings.Contains(out, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, out)
		}
	}
}
