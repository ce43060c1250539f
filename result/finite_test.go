package result

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// A figure that is not a finite number (a throughput over a median of
// 1e-300 ms, say) is written as 0 with a warning: the file is written,
// every other figure as it was.
func TestWriteFileNonFinite(t *testing.T) {
	r := full()
	var ir *ImplResult
	for _, c := range r.Cases {
		for _, x := range c.Results {
			ir = x
			break
		}
		break
	}
	if ir == nil || ir.Throughput == nil || ir.Timing == nil {
		t.Fatal("full() has no implementation with a timing and a throughput")
	}
	median := ir.Timing.MedianMS
	ir.Throughput.TFLOPS = math.Inf(1)
	ir.Metrics = map[string]float64{"ctas": math.NaN(), "sms": 132}
	r.Comparisons[0].Speedup = math.Inf(-1)
	r.Cases[0].Params["x"] = math.Inf(1)
	r.Cases[0].Flops = 1e300
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteFile(path, r); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatalf("decode what was written: %v", err)
	}
	var w *Warning
	for i := range back.Warnings {
		if back.Warnings[i].Kind == WarnNonFinite {
			w = &back.Warnings[i]
		}
	}
	if w == nil || !strings.Contains(w.Message, "5 figures") || !strings.Contains(w.Message, "throughput.tflops") ||
		!strings.Contains(w.Message, "comparisons[0].speedup") {
		t.Fatalf("warning %+v", w)
	}
	var got *ImplResult
	for _, x := range back.Cases[0].Results {
		if x.Throughput != nil && x.Timing != nil && x.Timing.MedianMS == median {
			got = x
		}
	}
	if got == nil || got.Throughput.TFLOPS != 0 || got.Metrics["ctas"] != 0 || got.Metrics["sms"] != 132 {
		t.Errorf("written back: %+v", got)
	}
	if back.Comparisons[0].Speedup != 0 || back.Cases[0].Params["x"] != 0.0 || back.Cases[0].Flops != 0 {
		t.Errorf("speedup %v, param %v", back.Comparisons[0].Speedup, back.Cases[0].Params["x"])
	}
	// What was made finite stays so: a second write adds no warning.
	n := len(r.Warnings)
	if err := WriteFile(path, r); err != nil || len(r.Warnings) != n {
		t.Errorf("second write: %v, %d warnings, want %d", err, len(r.Warnings), n)
	}
}

// Decode refuses a file whose figures are out of bounds (a median of
// 1.7e308 ms made every reader's arithmetic infinite), in one sentence
// naming the figure; an honest file passes.
func TestDecodeBounds(t *testing.T) {
	good, err := json.Marshal(full())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(good); err != nil {
		t.Fatalf("an honest file: %v", err)
	}
	// A wrong result's errors may be as large as float64 goes (the
	// harness clamps an infinite one), and so may the experiment's
	// metrics: they are written and read as they are.
	r := full()
	for _, ir := range r.Cases[0].Results {
		if ir.Correctness != nil {
			ir.Correctness.MaxAbsError, ir.Correctness.MaxRelError = math.MaxFloat64, 1e300
		}
		ir.Metrics = map[string]float64{"huge": 1e300}
		r.Criteria[0].Value = math.MaxFloat64
		for i := range ir.Autotune {
			ir.Autotune[i].TimingsMS = map[string]float64{"failed": math.MaxFloat64}
		}
	}
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadFile(path); err != nil || len(back.Warnings) != len(full().Warnings) {
		t.Fatalf("correctness figures and metrics of 1e300: %v", err)
	}
	for _, tc := range []struct {
		edit func(*Results)
		want string
	}{
		{func(r *Results) { anyTiming(r).MedianMS = 1.7e308 }, "timing.median_ms is 1.7e+308 ms, outside the 1e-06 to 1e+09 ms a call can take"},
		{func(r *Results) { anyTiming(r).MedianMS = 1e-300 }, "timing.median_ms is 1e-300 ms"},
		{func(r *Results) { anyTiming(r).KeptSamplesMS[1] = 1e300 }, "timing.kept_samples_ms[1] is 1e+300 ms"},
		{func(r *Results) { anyTiming(r).StdevMS = -1 }, "timing.stdev_ms is -1 ms"},
		{func(r *Results) { r.Comparisons[0].Speedup = 1e300 }, "comparisons[0].speedup is 1e+300, beyond the ±1e+30"},
		{func(r *Results) { r.Cases[0].Flops = 1.7e308 }, "cases[0].flops is 1.7e+308"},
		// A file from elsewhere (history import) with a name of 10 MiB, or
		// one that would play escape sequences in every table.
		{func(r *Results) { r.Implementations[0] = strings.Repeat("x", 10<<20) }, "implementation name is 10485760 bytes long, more than the 1024"},
		{func(r *Results) { r.Experiment = "gla\x1b]0;owned\x07" }, "experiment \"gla\\x1b]0;owned\\a\" holds a control character"},
		{func(r *Results) { r.Cases[0].Label = strings.Repeat("T", 2000) }, "cases[0].label is 2000 bytes long"},
		{func(r *Results) { r.Cases[0].Params["T"] = strings.Repeat("9", 5000) }, "cases[0].params.T is 5000 bytes long"},
	} {
		r := full()
		tc.edit(r)
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decode(data)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want an error with %q", err, tc.want)
		}
	}
}

func anyTiming(r *Results) *Timing {
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			if ir.Timing != nil {
				return ir.Timing
			}
		}
	}
	panic("no timing")
}

// An implementation's error of 1 MiB with escape sequences, from a file
// the runner did not write, comes out of Decode bounded and clean, and
// decoding it again changes nothing.
func TestDecodeBoundsTexts(t *testing.T) {
	r := full()
	var name string
	for n := range r.Cases[0].Results {
		name = n
		break
	}
	ir := r.Cases[0].Results[name]
	ir.Error = "RuntimeError: \x1b]0;pwned\x07" + strings.Repeat("A", 1<<20) + "\x1b[31mEND"
	ir.StderrTail = strings.Repeat("\x07tail", 1<<18)
	data, _ := json.Marshal(r)
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	got := back.Cases[0].Results[name]
	if len(got.Error) > MaxErrorText || !strings.HasPrefix(got.Error, "RuntimeError: AAA") || !strings.HasSuffix(got.Error, "AEND") ||
		strings.ContainsAny(got.Error+got.StderrTail, "\x1b\x07") || len(got.StderrTail) > MaxTailText {
		t.Errorf("error of %d bytes, tail of %d: %.80q", len(got.Error), len(got.StderrTail), got.Error)
	}
	again, _ := json.Marshal(back)
	twice, err := Decode(again)
	if err != nil || twice.Cases[0].Results[name].Error != got.Error || twice.Cases[0].Results[name].StderrTail != got.StderrTail {
		t.Errorf("a second decode changed the texts: %v", err)
	}
}

// The quick looks (the unnamed figure walk, Timing.plausible) find every figure that
// the naming walks refuse: each float of a full document set beyond its
// bounds, one at a time, is refused and named.
func TestQuickChecksAgree(t *testing.T) {
	// Every bounded figure's place: a walk that finds each out of ±-1.
	all := figureWalk{fix: true, named: true}
	all.walk(reflect.ValueOf(full()), -1)
	paths := all.found
	set := 0
	for k, want := range paths {
		r := full()
		n := 0
		var setK func(v reflect.Value)
		setK = func(v reflect.Value) {
			switch v.Kind() {
			case reflect.Pointer, reflect.Interface:
				if !v.IsNil() {
					setK(v.Elem())
				}
			case reflect.Struct:
				for _, f := range fieldsOf(v.Type()) {
					if !f.unbounded {
						setK(v.Field(f.index))
					}
				}
			case reflect.Slice, reflect.Array:
				for i := 0; i < v.Len(); i++ {
					setK(v.Index(i))
				}
			case reflect.Map:
				keys := v.MapKeys()
				sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
				for _, key := range keys {
					setK(v.MapIndex(key))
				}
			case reflect.Float32, reflect.Float64:
				if n == k && v.CanSet() {
					v.SetFloat(1e31)
					set++
				}
				n++
			}
		}
		setK(reflect.ValueOf(r))
		if n != len(paths) {
			t.Fatalf("walked %d floats, the figure walk %d", n, len(paths))
		}
		err := figures(reflect.ValueOf(r), "")
		quick := figureWalk{}
		quick.walk(reflect.ValueOf(r), MaxFigure)
		if got := len(quick.found) == 0; got != (err == nil) {
			t.Errorf("%s: the quick walk %v, figures %v", want, got, err)
		}
		// (full() shares some records between two places: the first is named.)
		if err == nil || !strings.Contains(err.Error(), " is 1e+31") {
			t.Errorf("%s: figures said %v", want, err)
		}
	}
	if set < 20 {
		t.Fatalf("set only %d of %d figures", set, len(paths))
	}
	tm := anyTiming(full())
	tv := reflect.ValueOf(tm)
	var timingFloats func(v reflect.Value, f func(reflect.Value))
	timingFloats = func(v reflect.Value, f func(reflect.Value)) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				timingFloats(v.Elem(), f)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				timingFloats(v.Field(i), f)
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				timingFloats(v.Index(i), f)
			}
		case reflect.Float64:
			f(v)
		}
	}
	checked := 0
	timingFloats(tv, func(v reflect.Value) {
		old := v.Float()
		v.SetFloat(-1)
		if tm.plausible() == (tm.refuse("t") != nil) {
			t.Errorf("a timing figure of -1: plausible %v, refuse %v", tm.plausible(), tm.refuse("t"))
		}
		v.SetFloat(old)
		checked++
	})
	if checked < 10 {
		t.Fatalf("checked only %d timing figures", checked)
	}
}
