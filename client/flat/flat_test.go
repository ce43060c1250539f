package flat

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

// committed is the H100 run of 039 committed with the experiment.
func committed(t *testing.T) *result.Results {
	t.Helper()
	r, err := result.ReadFile(filepath.Join("..", "..", "experiments", "039-gla-pingpong", "results", "2026-11-22-h100", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRowsOfACommittedRun(t *testing.T) {
	r := committed(t)
	rows := Rows(r)
	// 7 cases x (baseline, pipelined, compiler_pipelined, reference); the
	// CPU-only recurrent check is skipped on a GPU and left out.
	if len(rows) != 28 {
		t.Fatalf("%d rows, want 28", len(rows))
	}
	// The table's order in each case: the reference, then the
	// implementations in spec order.
	want := append([]string{result.Reference}, r.Implementations...)
	for i, row := range rows {
		if row.Implementation != want[i%4] || row.Case != rows[i-i%4].Case {
			t.Errorf("row %d: %s at %s, want %s", i, row.Implementation, row.Case, want[i%4])
		}
	}
	first := rows[1]
	if first.Implementation != "baseline" || first.Case != "chunk=64 T=256" || first.GPU != "NVIDIA H100 80GB HBM3" ||
		first.MedianMS <= 0 || first.TFLOPS <= 0 || first.Driver != "580.159.04" || first.Speedup != 0 {
		t.Errorf("baseline's row %+v", first)
	}
	if rows[2].Implementation != "pipelined" || rows[2].Speedup <= 0 || rows[2].Verdict == "" {
		t.Errorf("pipelined's row %+v", rows[2])
	}
	if StackOf(r) == "" || !strings.Contains(StackOf(r), "torch ") || ClockPolicyOf(r) != "max 1980 MHz, 700 W" {
		t.Errorf("stack %q, clock policy %q", StackOf(r), ClockPolicyOf(r))
	}
}

func TestWriteCSV(t *testing.T) {
	rows := Rows(committed(t))
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	for _, col := range []string{"experiment", "param_T", "param_chunk", "param_dtype", "implementation", "median_ms", "q1_ms", "q3_ms",
		"tflops", "gbps", "pct_peak_flops", "bound", "gpu", "driver", "commit", "date"} {
		if !slices.Contains(head, col) {
			t.Errorf("header lacks %s: %v", col, head)
		}
	}
	if len(recs) != len(rows)+1 {
		t.Fatalf("%d records for %d rows", len(recs), len(rows))
	}
	for _, rec := range recs {
		if len(rec) != len(head) {
			t.Fatalf("a record of %d fields under %d columns", len(rec), len(head))
		}
	}
	at := func(rec []string, col string) string { return rec[slices.Index(head, col)] }
	if at(recs[1], "param_T") != "256" || at(recs[1], "param_dtype") != "float16" || at(recs[1], "date") != "2026-11-22T"+at(recs[1], "date")[11:] {
		t.Errorf("first record %v", recs[1])
	}
	if at(recs[1], "converged") != "true" || at(recs[1], "speedup") != "" {
		t.Errorf("first record's converged %q, speedup %q", at(recs[1], "converged"), at(recs[1], "speedup"))
	}
	// Each checked implementation has its errors, as the table's MAX ERR;
	// the reference, checked against nothing, has none.
	for i, rec := range recs[1:] {
		abs := at(rec, "max_abs_error")
		switch {
		case rows[i].Implementation == "reference" && abs != "":
			t.Errorf("the reference has a max error %q", abs)
		case rows[i].Implementation != "reference" && rows[i].ImplStatus == "ok" && abs == "":
			t.Errorf("%s at %s has no max error", rows[i].Implementation, rows[i].Case)
		}
	}
}

func TestParamColumnsAreIdentifiers(t *testing.T) {
	rows := []Row{{Experiment: "a", Params: map[string]any{"block size": 64, "T": 1}}, {Experiment: "b", Params: map[string]any{"M": 40}}}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String(), "\n")
	if !strings.Contains(head, ",param_M,param_T,param_block_size,") {
		t.Errorf("header %s", head)
	}
}

func TestMajorAndGPU(t *testing.T) {
	if Major("580.159.04") != "580" || Major("12.4") != "12" || Major("") != "" {
		t.Error("Major")
	}
	r := &result.Results{Env: result.Env{GPUs: []result.GPU{{Name: "H100", UUID: "GPU-a"}, {Name: "H100", UUID: "GPU-b"}}}}
	if m, u := GPUOf(r); m != "2x H100" || u != "GPU-a,GPU-b" {
		t.Errorf("GPUOf = %q, %q", m, u)
	}
	if m, _ := GPUOf(&result.Results{Env: result.Env{CPU: "Xeon"}}); m != "cpu: Xeon" {
		t.Errorf("GPUOf a CPU run = %q", m)
	}
}

// A host_busy warning marks its timing's row, and the CSV says so.
func TestHostBusyRow(t *testing.T) {
	r := committed(t)
	r.Warnings = append(r.Warnings, result.Warning{Kind: "host_busy", Implementation: "pipelined", Label: "chunk=64 T=256",
		Message: "pipelined at chunk=64 T=256 was timed on a busy host"})
	rows := Rows(r)
	busy := 0
	for _, row := range rows {
		if row.HostBusy {
			busy++
			if row.Implementation != "pipelined" || row.Case != "chunk=64 T=256" || row.Throttled {
				t.Errorf("busy row %+v", row)
			}
		}
	}
	if busy != 1 {
		t.Fatalf("%d busy rows, want 1", busy)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows[1:3]); err != nil { // baseline, pipelined
		t.Fatal(err)
	}
	recs, _ := csv.NewReader(&b).ReadAll()
	col := slices.Index(recs[0], "host_busy")
	if col < 0 || recs[1][col] != "false" || recs[2][col] != "true" {
		t.Errorf("host_busy column %d in %v", col, recs)
	}
}

// Read, case by case, gives the rows Rows gives of the decoded document,
// and the results less their cases; also with the cases written before
// the implementations.
func TestReadIsRows(t *testing.T) {
	path := filepath.Join("..", "..", "experiments", "039-gla-pingpong", "results", "2026-11-22-h100", "results.json")
	r := committed(t)
	want := Rows(r)
	check := func(what string, got *result.Results, rows []Row, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.Cases != nil || got.Experiment != r.Experiment || len(got.Comparisons) != len(r.Comparisons) || got.Env.Driver != r.Env.Driver {
			t.Errorf("%s: results %+v", what, got)
		}
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", what, len(rows), len(want))
		}
		for i := range rows {
			a, b := rows[i], want[i]
			if a.Implementation != b.Implementation || a.Case != b.Case || a.Speedup != b.Speedup || a.Verdict != b.Verdict ||
				a.Clock != b.Clock || a.Throttled != b.Throttled || a.MedianMS != b.MedianMS || a.Stack != b.Stack || a.Date != b.Date ||
				len(a.KeptSamples) != len(b.KeptSamples) || a.GPU != b.GPU {
				t.Errorf("%s: row %d\n%+v\nwant\n%+v", what, i, a, b)
			}
		}
	}
	got, rows, err := ReadFile(path)
	check("as written", got, rows, err)
	// The same document with its cases first.
	var doc map[string]json.RawMessage
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`{"cases":` + string(doc["cases"]))
	for k, v := range doc {
		if k != "cases" {
			b.WriteString(`,"` + k + `":` + string(v))
		}
	}
	b.WriteString("}")
	got, rows, err = Read(&b)
	check("cases first", got, rows, err)
	if _, _, err := Read(strings.NewReader(`{"schema_version": 1, "cases": [`)); err == nil {
		t.Error("a cut document reads")
	}
}

// Read finds a document's cases wherever they are in it, with strings
// that hold brackets, quotes and escapes, and refuses broken ones.
func TestReadCasesAnywhere(t *testing.T) {
	path := filepath.Join("..", "..", "experiments", "039-gla-pingpong", "results", "2026-11-22-h100", "results.json")
	want := committed(t)
	// The cases (skipped unread) first, in the middle and last, with
	// strings that hold brackets, quotes and escapes, white space around
	// the colon; and "cases": null.
	var doc map[string]json.RawMessage
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc {
		if k != "cases" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	hostile := `[{"label": "]}\\\"[{", "results": {"a": {"error": "\\"}}}, {"params": {"n": [1, [2, {"x": "}"}]]}}]`
	for _, cases := range []string{string(doc["cases"]), hostile, "null", "[]"} {
		for _, at := range []int{0, len(keys) / 2, len(keys)} {
			var b bytes.Buffer
			b.WriteString("{")
			for i, k := range keys {
				if i == at {
					b.WriteString(`"cases" :` + "\n " + cases + " ,")
				}
				b.WriteString(`"` + k + `":` + string(doc[k]))
				if i < len(keys)-1 {
					b.WriteString(",")
				}
			}
			if at == len(keys) {
				b.WriteString(`, "cases":` + cases + "\n")
			}
			b.WriteString("}")
			file := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			r, rows, err := ReadFile(file)
			if err != nil || r.Experiment != want.Experiment {
				t.Errorf("Read of cases %.20s at %d: %v", cases, at, err)
			}
			switch cases {
			case hostile:
				if len(rows) != 1 || rows[0].Case != "]}\\\"[{" || rows[0].Error != "\\" {
					t.Errorf("Read of hostile cases at %d: %+v", at, rows)
				}
			case string(doc["cases"]):
				if len(rows) != len(Rows(want)) {
					t.Errorf("Read at %d: %d rows, want %d", at, len(rows), len(Rows(want)))
				}
			}
		}
	}
	// Broken cases in an otherwise good document: every one is refused.
	var head bytes.Buffer
	for _, k := range keys {
		head.WriteString(`"` + k + `":` + string(doc[k]) + ",")
	}
	for _, cut := range []string{`"cases": [`, `"cases": ["]"`, `"cases": [{}] "x": 1}`, `"cases": [}`,
		`"cases": [{}, ]}`, `"cases": [{} {}]}`, `"cases": nul}`, `"cases": 7}`, `"cases": [{"label": "x"}`, `"cases": [{"label": "x}]}`} {
		file := filepath.Join(t.TempDir(), "results.json")
		if err := os.WriteFile(file, []byte("{"+head.String()+cut), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadFile(file); err == nil {
			t.Errorf("Read of %s: no error", cut)
		}
	}
	// The same with good cases reads.
	file := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(file, []byte("{"+head.String()+`"cases": [{"label": "x"}, {"label": "y"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(file); err != nil {
		t.Errorf("Read of two good cases: %v", err)
	}
}

// An H200 run of an fp16 GEMM at the power cap (2026-11-29, run2): its
// runner warned "throttled" for the run (sw_power_cap after it) and for
// N = 4096 and 8192 (the rule then called the power cap throttling). Rows
// judge each timing by its own readings: none is throttled, and the one
// timing given a thermal slowdown here is the only one that is.
func TestThrottledByItsOwnReadings(t *testing.T) {
	r, err := result.ReadFile(filepath.Join("..", "..", "experiments", "autotuned-matmul", "results", "2026-11-29-h200", "run2", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	runLevel := false
	for _, w := range r.Warnings {
		runLevel = runLevel || (w.Kind == "throttled" && w.Implementation == "")
	}
	if !runLevel {
		t.Fatal("the recorded run has lost its run-level throttled warning")
	}
	check := func(want map[string]bool) {
		t.Helper()
		n := 0
		for _, row := range Rows(r) {
			if row.MedianMS <= 0 {
				continue
			}
			n++
			key := row.Implementation + " " + row.Case
			if row.Throttled != want[key] || (row.Slowdown != "") != want[key] {
				t.Errorf("%s: throttled %v, slowdown %q; want throttled %v", key, row.Throttled, row.Slowdown, want[key])
			}
			if row.SMClockMHz == 0 || row.MaxSMClockMHz != 1980 {
				t.Errorf("%s: SM clock %d of %d MHz, want the readings' median of 1980", key, row.SMClockMHz, row.MaxSMClockMHz)
			}
		}
		if n != 10 {
			t.Fatalf("%d timed rows, want 10", n)
		}
	}
	check(map[string]bool{})
	c := r.Cases[1].Results["triton"].Timing.Clocks // N=1024
	c.ClockEventReasons, c.ThrottledReadings = []string{"hw_thermal_slowdown"}, 2
	c.ReasonReadings = map[string]int{"hw_thermal_slowdown": 2}
	check(map[string]bool{"triton N=1024": true})
	if row := Rows(r)[3]; row.Case != "N=1024" || row.ClockReasons != "hw_thermal_slowdown 2/3" {
		t.Errorf("row %s %s: clock reasons %q, want hw_thermal_slowdown 2/3", row.Implementation, row.Case, row.ClockReasons)
	}
}
