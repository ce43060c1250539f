package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

// The protocol's golden lines (testdata/protocol): commands as the runner
// writes them (EncodeCommand), events as the Python harness writes them
// (encode_event). This test holds the Go side to them and
// pytests/test_protocol_golden.py the Python side, so that neither side's
// copy of the protocol can drift from the other's.
//
//	go test ./runner/harness -run Golden -update-golden
//
// rewrites commands.jsonl from the values below after a deliberate change.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/protocol/commands.jsonl")

// goldenCommands are one command of each op, every field set.
func goldenCommands() []struct {
	op  string
	cmd any
} {
	params := json.RawMessage(`{"M":8192,"dtype":"float16"}`)
	return []struct {
		op  string
		cmd any
	}{
		{OpInit, Init{Impl: "triton", Fn: "mm:triton_mm", Reference: "mm:reference", Inputs: "mm:make_inputs", Metrics: "mm:metrics",
			Models: map[string]string{"flops": "mm:flops"}, Device: "cuda", Flush: true, FlushBytes: 268435456,
			ImplParams: json.RawMessage(`{"block":128}`), CUDAGraph: true, KernelClock: true, Profile: true}},
		{OpModels, ModelsCmd{Params: params}},
		{OpCheck, Check{Params: params, Seeds: []int64{11, 12}, Tolerance: &result.Tolerance{Atol: 0.01, Rtol: 0.01}}},
		{OpFirst, First{Params: params, Seed: 7, WarmMS: 2000, CheckConfigs: 3, CheckRounds: 3, CheckBudgetMS: 10, CheckWallMS: 15000, Flush: true,
			RestRatio: 0.5, KernelClockMaxMS: 50}},
		{OpTime, Time{Params: params, Seed: 7, MinSamples: 10, MaxSamples: 1000, BudgetMS: 100, WallMS: 400, WarmupMS: 100,
			Flush: true, RestRatio: 0.5, KernelClockMaxMS: 50}},
		{OpProfile, ProfileCmd{Params: params, Seed: 7, Label: "M=8192"}},
		{OpExit, nil},
	}
}

func goldenLines(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "protocol", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// The runner writes each command exactly as its golden line, and every
// field of a golden line is one of its struct's.
func TestGoldenCommands(t *testing.T) {
	path := filepath.Join("testdata", "protocol", "commands.jsonl")
	var written []byte
	for i, c := range goldenCommands() {
		line, err := EncodeCommand(c.op, int64(i+1), c.cmd)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, line...)
	}
	if *updateGolden {
		if err := os.WriteFile(path, written, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lines := goldenLines(t, "commands.jsonl")
	if want := bytes.Join(lines, []byte("\n")); !bytes.Equal(bytes.TrimSpace(written), want) {
		t.Fatalf("the runner writes\n%s\nthe golden lines are\n%s\n(a deliberate change: -update-golden, then the Python side follows)", written, want)
	}
	for i, c := range goldenCommands() {
		if c.cmd == nil {
			continue
		}
		if err := decodeStrict(lines[i], reflectNew(c.cmd), "op"); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
	}
}

// Every golden event decodes (DecodeEvent), every field Python writes is
// one the runner reads, and every event the runner reads from a worker
// has a golden line.
func TestGoldenEvents(t *testing.T) {
	var kinds []string
	for _, line := range goldenLines(t, "events.jsonl") {
		ev, err := DecodeEvent(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		kinds = append(kinds, ev.Kind)
		var payload any
		switch {
		case ev.Ready != nil:
			payload = &Ready{}
		case ev.Models != nil:
			payload = &Models{}
		case ev.Correctness != nil:
			payload = &result.Correctness{}
		case ev.First != nil:
			payload = &FirstCall{}
		case ev.Samples != nil:
			payload = &Samples{}
		case ev.Error != nil:
			payload = &ErrorEvent{}
		default:
			continue
		}
		if err := decodeStrict(line, payload, "event"); err != nil {
			t.Errorf("%s event: the runner does not read a field the harness writes: %v", ev.Kind, err)
		}
	}
	for _, k := range []string{EventReady, EventModels, EventFirst, EventCorrectness, EventSamples, EventProfiled, EventError} {
		if !slices.Contains(kinds, k) {
			t.Errorf("no golden line of the %s event", k)
		}
	}
}

// reflectNew is a pointer to a new zero value of v's type.
func reflectNew(v any) any { return reflect.New(reflect.TypeOf(v)).Interface() }

// decodeStrict decodes a protocol line into v, less its envelope (kind,
// "op" or "event", and "id"), refusing a field v does not have.
func decodeStrict(line []byte, v any, kind string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return err
	}
	delete(obj, kind)
	delete(obj, "id")
	rest, _ := json.Marshal(obj)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
