package harness

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/spec"
)

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		line    string
		kind    string
		id      int64
		wantErr string
	}{
		{line: `{"event":"ready","id":1,"protocol":1,"timer":"cuda_events","flush_bytes":268435456,"device":{"kind":"cuda","name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0","sm_count":132}}`, kind: EventReady, id: 1},
		{line: `{"event":"models","id":2,"flops":1e12,"metrics":{"ctas":528}}`, kind: EventModels, id: 2},
		{line: `{"event":"correctness","id":3,"passed":false,"trials":2,"seeds":[1,2],"max_abs_error":0.5,"max_rel_error":1,"rms_rel_error":0.1,"mismatch_fraction":0.25,"nan_mismatches":0,"inf_mismatches":0,"inputs_modified":false,"replayed":false,"tolerance":{"atol":1e-4,"rtol":1e-4}}`, kind: EventCorrectness, id: 3},
		{line: `{"event":"samples","id":4,"samples_ms":[0.01,0.011],"warmup_calls":3,"warmup_ms":100,"timer":"perf_counter","later_field":true}`, kind: EventSamples, id: 4},
		{line: `{"event":"error","id":5,"kind":"oom","message":"CUDA out of memory"}`, kind: EventError, id: 5},
		{line: `{"event":"log","message":"compiling"}`, kind: EventLog},
		{line: `  {"event":"models","id":7}  `, kind: EventModels, id: 7},
		{line: `{"event":"ready","id":1,"protocol":2}`, wantErr: "protocol 2"},
		{line: `{"event":"samples","id":4,"samples_ms":[-1]}`, wantErr: "not a duration"},
		{line: `{"event":"samples","id":4,"samples_ms":["x"]}`, wantErr: "cannot unmarshal"},
		{line: `{"event":"correctness","id":3,"trials":2,"seeds":[1]}`, wantErr: "trials 2 but 1 seeds"},
		{line: `{"event":"correctness","id":3,"max_abs_error":-1}`, wantErr: ">= 0"},
		{line: `{"event":"models","id":2,"flops":-5}`, wantErr: "finite and >= 0"},
		{line: `{"event":"error","id":5,"kind":"bad","message":"x"}`, wantErr: `unknown error kind "bad"`},
		{line: `{"event":"nope"}`, wantErr: `unknown event "nope"`},
		{line: `{"id":1}`, wantErr: `no "event" field`},
		{line: `not json`, wantErr: "decode event"},
		{line: `{"event":"samples","samples_ms":[1e999]}`, wantErr: "decode"},
		{line: `{"event":"samples","id":4,"samples_ms":[0.0079,0.0078],"kernel_ms":[0.0054,0.0055],"busy_ms":[0.0054,0.0055],"kernels":1,"sampling_ms":0.3}`, kind: EventSamples, id: 4},
		{line: `{"event":"samples","id":4,"samples_ms":[0.0079,0.0078],"kernel_note":"a call ran no kernel"}`, kind: EventSamples, id: 4},
		{line: `{"event":"samples","id":4,"samples_ms":[0.0079,0.0078],"kernel_ms":[0.0054],"busy_ms":[0.0054]}`, wantErr: "1 kernel_ms and 1 busy_ms for 2 samples"},
		{line: `{"event":"samples","id":4,"samples_ms":[0.0079],"kernel_ms":[0.0054],"busy_ms":[]}`, wantErr: "busy_ms"},
		{line: `{"event":"samples","id":4,"samples_ms":[0.0079],"kernel_ms":[-0.0054],"busy_ms":[0.0054]}`, wantErr: "not a duration"},
		{line: `{"event":"samples","id":4,"samples_ms":[0.0079],"sampling_ms":-1}`, wantErr: "sampling_ms"},
		{line: `{"event":"ready","id":1,"protocol":1,"timer":"cuda_events","kernel_clock":"cupti","launch_ms":-0.001}`, wantErr: "launch_ms"},
		{line: `{"event":"profiled","id":8}`, kind: EventProfiled, id: 8},
		{line: `{"event":"first","id":9,"ms":1240.5,"autotune":[{"kernel":"matmul_kernel","kind":"triton","key":"8192, torch.float16","config":"128x256x64/w8/s3","params":{"BLOCK_M":128,"num_warps":8},"source":"tuned","tuning_ms":1200,"timings_ms":{"128x256x64/w8/s3":1.49}}]}`, kind: EventFirst, id: 9},
		{line: `{"event":"first","id":9,"ms":3.5}`, kind: EventFirst, id: 9},
		{line: `{"event":"first","id":9,"ms":-1}`, wantErr: "ms must be"},
		{line: `{"event":"first","id":9,"ms":1,"autotune":[{"kernel":"k","source":"tuned"}]}`, wantErr: "kernel and config"},
		{line: `{"event":"first","id":9,"ms":1,"autotune":[{"kernel":"k","config":"c","tuning_ms":-3}]}`, wantErr: "tuning_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			ev, err := DecodeEvent([]byte(tt.line))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tt.kind || ev.ID != tt.id {
				t.Errorf("got %s/%d, want %s/%d", ev.Kind, ev.ID, tt.kind, tt.id)
			}
			set := 0
			for _, p := range []bool{ev.Ready != nil, ev.Models != nil, ev.Correctness != nil, ev.First != nil, ev.Samples != nil, ev.Error != nil, ev.Log != nil, ev.Profiled} {
				if p {
					set++
				}
			}
			if set != 1 {
				t.Errorf("%d payloads set, want 1", set)
			}
		})
	}
}

func TestEncodeCommand(t *testing.T) {
	b, err := EncodeCommand(OpTime, 9, Time{Params: json.RawMessage(`{"T":256}`), Seed: 3, MinSamples: 4, BudgetMS: 100, WarmupMS: 100, Flush: true})
	if err != nil {
		t.Fatal(err)
	}
	if b[len(b)-1] != '\n' || strings.Count(string(b), "\n") != 1 {
		t.Fatalf("not one line: %q", b)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"op": "time", "id": 9.0, "params": map[string]any{"T": 256.0}, "seed": 3.0, "min_samples": 4.0,
		"budget_ms": 100.0, "warmup_ms": 100.0, "flush": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	b, err = EncodeCommand(OpExit, 10, nil)
	if err != nil || string(b) != `{"id":10,"op":"exit"}`+"\n" {
		t.Errorf("exit = %q, %v", b, err)
	}
	b, _ = EncodeCommand(OpCheck, 1, Check{Params: json.RawMessage(`{}`), Seeds: []int64{1}})
	if !strings.Contains(string(b), `"tolerance":null`) {
		t.Errorf("a default tolerance must be sent as null: %s", b)
	}
}

func TestEncodeParams(t *testing.T) {
	ps := spec.Params{{Key: "T", Value: int64(1024)}, {Key: "scale", Value: 1.0}, {Key: "eps", Value: 1e-6},
		{Key: "dtype", Value: "bfloat16"}, {Key: "causal", Value: true}, {Key: "big", Value: 1e21}}
	got := string(EncodeParams(ps))
	want := `{"T":1024,"scale":1.0,"eps":1e-06,"dtype":"bfloat16","causal":true,"big":1e+21}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(got), &m); err != nil {
		t.Fatal(err)
	}
	if string(EncodeParams(nil)) != "{}" {
		t.Error("empty params")
	}
}

// FuzzDecodeEvent: any input either fails cleanly or decodes to exactly one
// payload of the named kind, and decoding is stable under re-encoding.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"event":"ready","id":1,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"x"}}`,
		`{"event":"samples","id":4,"samples_ms":[0.01,0.011],"warmup_calls":3}`,
		`{"event":"error","id":5,"kind":"cuda","message":"illegal memory access","traceback":"..."}`,
		`{"event":"correctness","id":3,"passed":true,"trials":1,"seeds":[7]}`,
		`{"event":"models","id":2,"flops":1,"bytes":2,"tokens":3,"metrics":{"a":1}}`,
		`{"event":"log","message":"hi"}`,
		`{"event":"samples","id":1,"samples_ms":null}`,
		`[]`, `null`, `{"event":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := DecodeEvent(line)
		if err != nil {
			return
		}
		var payload any
		switch ev.Kind {
		case EventReady:
			payload = ev.Ready
		case EventModels:
			payload = ev.Models
		case EventCorrectness:
			payload = ev.Correctness
		case EventSamples:
			payload = ev.Samples
		case EventError:
			payload = ev.Error
		case EventLog:
			payload = ev.Log
		default:
			t.Fatalf("decoded unknown kind %q", ev.Kind)
		}
		if reflect.ValueOf(payload).IsNil() {
			t.Fatalf("kind %s without its payload", ev.Kind)
		}
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		fields := map[string]json.RawMessage{}
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		fields["event"], _ = json.Marshal(ev.Kind)
		fields["id"], _ = json.Marshal(ev.ID)
		b, _ = json.Marshal(fields)
		ev2, err := DecodeEvent(b)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("unstable: %+v vs %+v", ev, ev2)
		}
	})
}

// What a worker sends is bounded however long it is: an error's message
// and traceback keep their ends (the first and last bytes), and an event
// line but samples longer than MaxEventBytes is a protocol error.
func TestDecodeEventBounds(t *testing.T) {
	msg := "RuntimeError: " + strings.Repeat("A", 300<<10) + " END"
	line, _ := json.Marshal(map[string]any{"event": "error", "id": 1, "kind": "exception", "where": "fn",
		"type": "RuntimeError", "message": msg, "traceback": "Traceback (most recent call last):\n" + msg})
	ev, err := DecodeEvent(line)
	if err != nil {
		t.Fatal(err)
	}
	e := ev.Error
	if len(e.Message) > MaxMessageBytes+64 || !strings.HasPrefix(e.Message, "RuntimeError: AAA") || !strings.HasSuffix(e.Message, "A END") ||
		!strings.Contains(e.Message, "bytes dropped here") {
		t.Errorf("message of %d bytes: %.100q...", len(e.Message), e.Message)
	}
	if len(e.Traceback) > MaxTracebackBytes+64 || !strings.HasPrefix(e.Traceback, "Traceback") || !strings.HasSuffix(e.Traceback, " END") {
		t.Errorf("traceback of %d bytes", len(e.Traceback))
	}
	line, _ = json.Marshal(map[string]any{"event": "log", "message": msg})
	if ev, err := DecodeEvent(line); err != nil || len(ev.Log.Message) > MaxMessageBytes+64 {
		t.Errorf("log: %v", err)
	}
	line, _ = json.Marshal(map[string]any{"event": "error", "id": 1, "kind": "exception", "message": strings.Repeat("A", 60<<20)})
	if _, err := DecodeEvent(line); err == nil || !strings.Contains(err.Error(), "more than the 1048576 bytes one may have") {
		t.Errorf("a 60 MiB error event: %v", err)
	}
	if len(line) > maxLine {
		t.Fatalf("the test's line is longer than maxLine")
	}
}
