package result

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatalf("parse schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("compile schema.json: %v", err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse instance: %v", err)
	}
	return s.Validate(inst)
}

// full is a Results with every field set, so that a field added to the
// types but not to schema.json fails TestSchemaFull.
func full() *Results {
	created := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	finished := created.Add(5 * time.Minute)
	state := func(clock int) *GPUState {
		return &GPUState{SMClockMHz: clock, MemClockMHz: 2619, MaxSMClockMHz: 1980, PowerW: 350.5, PowerLimitW: 700,
			TemperatureC: 55, Utilization: 100, MemoryUsedBytes: 4 << 30, PersistenceMode: "Enabled",
			ClockEventReasons: []string{"sw_power_cap"}}
	}
	clocks := &Clocks{Readings: 20, SMClockMHz: 1410, MinSMClockMHz: 1155, MaxSMClockMHz: 1980, MaxPowerW: 701.2,
		PowerW: 699.5, MaxTemperatureC: 61, ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 18,
		ReasonReadings: map[string]int{"sw_power_cap": 18}}
	timing := &Timing{MedianMS: 5.645, MeanMS: 5.66, MinMS: 5.6, MaxMS: 6.1, Q1MS: 5.63, Q3MS: 5.66, P20MS: 5.62,
		P80MS: 5.67, StdevMS: 0.05, StderrRel: 0.0012, Samples: 400, Rounds: 3, TotalS: 2.3, Converged: true, StopReason: "converged",
		Cover: "hold", Discarded: 12, Clocks: clocks, Clock: ClockKernel, ClockNote: "the events read 2.4 us more",
		Events: &ClockSummary{MedianMS: 5.647, MinMS: 5.602, Q1MS: 5.632, Q3MS: 5.662, StderrRel: 0.0013, Samples: 400},
		Kernel: &KernelSummary{ClockSummary: ClockSummary{MedianMS: 5.644, MinMS: 5.599, Q1MS: 5.629, Q3MS: 5.659, StderrRel: 0.0012, Samples: 400},
			BusyMedianMS: 5.62, Kernels: 2, LaunchMS: 0.00098},
		KeptSamplesMS: []float64{5.64, 5.65, 5.63},
		HostLoad: &HostLoad{Windows: 9, WallS: 1.84, CPUs: 2, Load1: 7.9, MaxLoad1: 8.2, OthersShare: 0.63, JobShare: 0.36,
			StealShare: 0.01, CPUMHz: 2445}}
	return &Results{
		SchemaVersion: SchemaVersion, JobID: "j-0123", Experiment: "gla-pingpong", CreatedAt: created,
		FinishedAt: &finished, Status: StatusCriteriaFailed, ClientVersion: "v0.1.0", RunnerVersion: "v0.1.0",
		SpecHash: "ab12", Image: Image{Ref: "xrun/gla:abc", Digest: "sha256:00ff", CodeHash: "9c1e"},
		Env: Env{Host: "gpu-1", OS: "linux", Arch: "amd64", CPU: "Xeon", Python: "3.11.2", Torch: "2.5.1",
			Triton: "3.1.0", Numpy: "1.26.4", CUDARuntime: "12.4", Driver: "580.159.04", GitCommit: "deadbeef", GitDirty: true,
			GPUs: []GPU{{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1", ComputeCapability: "9.0",
				SMCount: 132, L2Bytes: 50 << 20, MemoryBytes: 80 << 30, PeakTFLOPS: 989.5, PeakGBps: 3350,
				Before: state(1980), After: state(1755), During: clocks}},
			Container: &Container{ID: "3fa1b2c3d4e5", MemoryLimitBytes: 16 << 30, CPULimit: 2, PidsLimit: 4096, CPUs: 16, ShmBytes: 1 << 30, VisibleDevices: "0", WorkerUser: "65532:65532", WorkerProcsLimit: 7936},
			Cache: &Cache{Dir: "/xrun/cache", Volume: "xrun-cache-softmax-0123456789ab", Files: 42, Bytes: 1 << 20, Limit: 10 << 30, TrimmedEntries: 3, TrimmedBytes: 4096,
				Fresh: []FreshCache{{Impl: "pipelined", Error: "exception during check: JSONDecodeError", Passed: true, Replaced: 7}}},
			Extra: map[string]string{"nccl": "2.21"},
			HostLoad: &HostLoadSummary{Timings: 8, CPUs: 2, MaxLoad1: 8.2, MedianOthersShare: 0.04, MaxOthersShare: 0.63,
				MaxStealShare: 0.01, MinCPUMHz: 2400, MaxCPUMHz: 2445, BusyShare: 0.1, FullShare: 0.9, Busy: 1}},
		Methodology: Methodology{AutotuneCache: AutotuneReuse, Timer: "cuda_events", FlushBytes: 256 << 20, TimerFloorMS: 0.00122, WarmupMS: 100, LaterWarmupMS: 20, MinSamples: 10,
			MaxSamples: 100000, MinTimeS: 0.5, MaxTimeS: 15, TargetRSE: 0.005, StoppingRule: "at least 10 samples",
			Rounds: 3, Trials: 3, ImplTimeoutS: 600, FastThreshold: 1.02, CUDAGraph: true, RestRatio: 0.5,
			KernelClock: "cupti", KernelClockNote: "unavailable in one worker", KernelClockReader: "activity", LaunchMS: 0.0011, KernelClockMaxMS: 0.1, ClockRule: "the kernel clock where every sample has it"},
		Mode: "gpu", SweepKeys: []string{"T"}, Implementations: []string{"baseline", "pipelined"}, Baseline: "baseline",
		Cases: []Case{{Params: map[string]any{"T": 1024, "dtype": "bfloat16", "causal": true}, Label: "T=1024",
			Flops: 8.6e9, Bytes: 1.2e8, Tokens: 4096,
			Results: map[string]*ImplResult{"pipelined": {
				Status: ImplWrong, Error: "max abs error 0.5 > tolerance", StderrTail: "warning: ...",
				Correctness: &Correctness{Passed: true, Trials: 3, Seeds: []int64{1, 2, 987654321}, MaxAbsError: 0.01,
					MaxRelError: 0.02, RMSRelError: 0.003, MismatchFraction: 0.001, NaNMismatches: 1, InfMismatches: 2,
					InputsModified: true, Replayed: true, Tolerance: Tolerance{Atol: 1e-2, Rtol: 1e-2}, Dtype: "bfloat16",
					Reason: "inputs modified"},
				Timing: timing,
				Throughput: &Throughput{TFLOPS: 1.52, GBps: 21.3, PctPeakFlops: 0.15, PctPeakBW: 0.6, TokensPerS: 725602,
					ArithmeticIntensity: 71.7, Bound: BoundMemory},
				Model:   &Model{Flops: 8.6e9, Bytes: 1.3e8, Tokens: 4096},
				Metrics: map[string]float64{"ctas": 512},
				Autotune: []Autotune{{Kernel: "matmul_kernel", Kind: "triton", Key: "8192, 8192, 8192, torch.float16", Config: "128x256x64/w8/s3", Params: map[string]any{"BLOCK_M": 128, "num_warps": 8}, Source: AutotuneTuned, TuningMS: 1240, TimingsMS: map[string]float64{"128x256x64/w8/s3": 1.49, "128x128x32/w4/s4": 1.88},
					Check: &AutotuneCheck{Clock: ClockKernel, TimingsMS: map[string]float64{"128x256x64/w8/s3": 1.46, "128x128x32/w4/s4": 1.44},
						Rounds: 3, Replaced: "128x256x64/w8/s3", Stored: true, Beaten: "64x256x32/w4/s4", Note: "128x128x32/w4/s4 was 1.4 % faster"}}},
			}}}},
		Comparisons: []Comparison{{A: "pipelined", B: "baseline", Params: map[string]any{"T": 1024}, Label: "T=1024",
			Speedup: 0.274, SpeedupLo: 0.272, SpeedupHi: 0.276, Verdict: VerdictSlow}},
		Criteria: []Criterion{{Name: "pipelined >= 1.2x over baseline at every case", Kind: "speedup", Value: 0.274,
			Threshold: 1.2, Passed: true, Skipped: true, NotEvaluated: true, Detail: "fails at T=1024", Expect: ExpectFail}},
		Success:  true,
		Warnings: []Warning{{Kind: "throttled", Implementation: "pipelined", Label: "T=1024", Message: "GPU 0 was throttled"}},
		Profiles: []Profile{{Implementation: "pipelined", Cases: []string{"T=1024"}, Report: "profile/pipelined.ncu-rep",
			Summary: "profile/pipelined.txt", Kernels: 3, Status: ProfileFailed, Error: "ERR_NVGPUCTRPERM"}},
		Error: "criteria failed",
		Split: &Split{Part: 1, Parts: 2, Jobs: []SplitJob{{Part: 1, JobID: "0e36dd772729", Host: "slurm://login", Status: StatusSucceeded, GPUs: []string{"NVIDIA H200"}}}},
	}
}

// zeroFields lists the fields of v (recursively) left at their zero value.
func zeroFields(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			*out = append(*out, path)
			return
		}
		zeroFields(v.Elem(), path, out)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.Interface().(time.Time).IsZero() {
				*out = append(*out, path)
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			*out = append(*out, path)
		}
		for i := 0; i < v.Len(); i++ {
			zeroFields(v.Index(i), path+"[]", out)
		}
	case reflect.Map:
		if v.Len() == 0 {
			*out = append(*out, path)
		}
		for _, k := range v.MapKeys() {
			zeroFields(v.MapIndex(k), path+"{}", out)
		}
	case reflect.Interface:
		if v.IsNil() {
			*out = append(*out, path)
		}
	default:
		if v.IsZero() {
			*out = append(*out, path)
		}
	}
}

func TestSchemaFull(t *testing.T) {
	r := full()
	var zero []string
	zeroFields(reflect.ValueOf(r), "Results", &zero)
	if len(zero) > 0 {
		t.Fatalf("the full fixture leaves fields unset (add them here and to schema.json): %v", zero)
	}
	s := compileSchema(t)
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(t, s, data); err != nil {
		t.Fatalf("full results do not validate: %v", err)
	}
	// The file the runner writes validates too, and reads back the same.
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(again, data) {
		t.Errorf("round trip through WriteFile/ReadFile changed the document:\n%s\n%s", data, again)
	}
}

func TestSchemaMinimal(t *testing.T) {
	s := compileSchema(t)
	for _, r := range []*Results{
		{SchemaVersion: SchemaVersion, Status: StatusRunning, Mode: "cpu", CreatedAt: time.Unix(0, 0).UTC()},
		{SchemaVersion: SchemaVersion, Status: StatusFailed, Mode: "gpu", CreatedAt: time.Unix(0, 0).UTC(),
			Cases:    []Case{{Params: map[string]any{}, Results: map[string]*ImplResult{"a": {Status: ImplSkipped}}}},
			Warnings: []Warning{}, Criteria: []Criterion{}, Comparisons: []Comparison{}},
	} {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, s, data); err != nil {
			t.Errorf("minimal results %s do not validate: %v", data, err)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	base, err := json.Marshal(full())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
	}{
		{"bad status", func(m map[string]any) { m["status"] = "done" }},
		{"bad schema version", func(m map[string]any) { m["schema_version"] = 2 }},
		{"missing job id", func(m map[string]any) { delete(m, "job_id") }},
		{"unknown field", func(m map[string]any) { m["speed"] = 1 }},
		{"bad created_at", func(m map[string]any) { m["created_at"] = "yesterday" }},
		{"bad mode", func(m map[string]any) { m["mode"] = "tpu" }},
		{"bad bound", func(m map[string]any) {
			res := m["cases"].([]any)[0].(map[string]any)["results"].(map[string]any)
			res["pipelined"].(map[string]any)["throughput"].(map[string]any)["bound"] = "latency"
		}},
		{"bad expect", func(m map[string]any) { m["criteria"].([]any)[0].(map[string]any)["expect"] = "failed" }},
		{"bad verdict", func(m map[string]any) {
			m["comparisons"].([]any)[0].(map[string]any)["verdict"] = "FASTER"
		}},
		{"bad implementation status", func(m map[string]any) {
			res := m["cases"].([]any)[0].(map[string]any)["results"].(map[string]any)
			res["pipelined"].(map[string]any)["status"] = "fine"
		}},
		{"timing without median", func(m map[string]any) {
			res := m["cases"].([]any)[0].(map[string]any)["results"].(map[string]any)
			delete(res["pipelined"].(map[string]any)["timing"].(map[string]any), "median_ms")
		}},
		{"others share over 1", func(m map[string]any) {
			res := m["cases"].([]any)[0].(map[string]any)["results"].(map[string]any)
			res["pipelined"].(map[string]any)["timing"].(map[string]any)["host_load"].(map[string]any)["others_share"] = 63
		}},
		{"host load summary without its threshold", func(m map[string]any) {
			delete(m["env"].(map[string]any)["host_load"].(map[string]any), "busy_share")
		}},
		{"samples not an integer", func(m map[string]any) {
			res := m["cases"].([]any)[0].(map[string]any)["results"].(map[string]any)
			res["pipelined"].(map[string]any)["timing"].(map[string]any)["samples"] = 1.5
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(base, &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			data, _ := json.Marshal(m)
			if err := validate(t, s, data); err == nil {
				t.Errorf("schema accepted a document with %s", c.name)
			}
		})
	}
}

// A file written before the kernel clock existed (no timing.clock, no
// events or kernel summaries, no profiles) still reads, and its timings
// are on the events.
func TestDecodeBeforeKernelClock(t *testing.T) {
	old := `{"schema_version": 1, "status": "succeeded", "mode": "gpu", "runner_version": "v0.1.0",
		"methodology": {"timer": "cuda_events", "min_time_s": 0.5},
		"cases": [{"params": {"T": 1}, "label": "T=1", "results": {"a": {"status": "ok",
			"timing": {"median_ms": 0.0149, "q1_ms": 0.0147, "q3_ms": 0.0151, "samples": 77000, "cover": "hold"}}}}]}`
	r, err := Decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	tm := r.Cases[0].Results["a"].Timing
	if tm.Clock != "" || tm.Events != nil || tm.Kernel != nil || r.Profiles != nil || tm.MedianMS != 0.0149 {
		t.Errorf("old timing decoded as %+v, profiles %v", tm, r.Profiles)
	}
	if got := tm.ClockOf(r.Mode); got != ClockEvents {
		t.Errorf("ClockOf an old GPU timing = %q, want %q", got, ClockEvents)
	}
	if got := (&Timing{}).ClockOf("cpu"); got != ClockPerfCounter {
		t.Errorf("ClockOf an old CPU timing = %q, want %q", got, ClockPerfCounter)
	}
	if got := (&Timing{Clock: ClockKernel}).ClockOf("gpu"); got != ClockKernel {
		t.Errorf("ClockOf a kernel timing = %q", got)
	}
}

func TestDecodeSchemaVersion(t *testing.T) {
	if _, err := Decode([]byte(`{"schema_version": 2}`)); err == nil || !strings.Contains(err.Error(), "schema_version 2") {
		t.Errorf("Decode of version 2: err = %v", err)
	}
	if _, err := Decode([]byte(`{"schema_version": 1, "status": 3}`)); err == nil {
		t.Error("Decode of a mistyped field succeeded")
	}
}
