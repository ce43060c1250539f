// Package harness runs implementations in worker processes and speaks the
// harness protocol with them (PROTOCOL.md): the embedded Python harness, or
// a `command:` benchmark that follows the same protocol. Commands go to the
// worker as JSON lines on its fd 3 and events come back on its fd 4, so the
// experiment's code may print to stdout and stderr freely.
package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// ProtocolVersion is the protocol version the runner speaks.
const ProtocolVersion = 1

// Ops the runner sends.
const (
	OpInit   = "init"
	OpModels = "models"
	OpCheck  = "check"
	// OpFirst is an implementation's first call at a case, made while no
	// other worker uses the GPU (PROTOCOL.md, "first").
	OpFirst = "first"
	OpTime  = "time"
	// OpProfile runs one call for Nsight Compute (PROTOCOL.md).
	OpProfile = "profile"
	OpExit    = "exit"
)

// Events a worker sends.
const (
	EventReady       = "ready"
	EventModels      = "models"
	EventCorrectness = "correctness"
	EventFirst       = "first"
	EventSamples     = "samples"
	EventProfiled    = "profiled"
	EventError       = "error"
	EventLog         = "log"
)

// Error kinds. The worker reports exception, oom, cuda and import; the
// runner adds timeout (no answer in time), crash (the process died) and
// protocol (the worker sent something unreadable).
const (
	KindException = "exception"
	KindOOM       = "oom"
	KindCUDA      = "cuda"
	KindImport    = "import"
	KindTimeout   = "timeout"
	KindCrash     = "crash"
	KindProtocol  = "protocol"
)

// Init is the first command: what to import and where to run it.
type Init struct {
	// Impl is the implementation's name ("reference" for the reference).
	Impl string `json:"impl"`
	// Fn, Reference, Inputs and Metrics are "module:callable".
	Fn        string `json:"fn,omitempty"`
	Reference string `json:"reference,omitempty"`
	Inputs    string `json:"inputs,omitempty"`
	Metrics   string `json:"metrics,omitempty"`
	// Models maps "flops", "bytes" and "tokens" to "module:callable".
	Models map[string]string `json:"models,omitempty"`
	// Device is "cuda" or "cpu".
	Device string `json:"device"`
	// Flush asks for an L2 flush before each sample; FlushBytes is its
	// size, 0 for max(256 MiB, 4 x L2).
	Flush      bool  `json:"flush"`
	FlushBytes int64 `json:"flush_bytes,omitempty"`
	// ImplParams are passed to Fn alone as keyword arguments.
	ImplParams json.RawMessage `json:"impl_params,omitempty"`
	// CUDAGraph times replays of a CUDA graph of one call.
	CUDAGraph bool `json:"cuda_graph,omitempty"`
	// KernelClock asks a GPU worker for the kernel clock beside the events
	// (CUPTI's activity API, else CUPTI through torch's profiler).
	KernelClock bool `json:"kernel_clock,omitempty"`
	// Profile starts a worker that only runs calls for Nsight Compute: no
	// flush buffer, hold kernel or kernel clock.
	Profile bool `json:"profile,omitempty"`
}

// Device is the device a worker runs on, as it sees it.
type Device struct {
	Kind              string `json:"kind"` // "cuda" or "cpu"
	Name              string `json:"name"`
	Index             int    `json:"index,omitempty"`
	ComputeCapability string `json:"compute_capability,omitempty"`
	SMCount           int    `json:"sm_count,omitempty"`
	L2Bytes           int64  `json:"l2_bytes,omitempty"`
	MemoryBytes       int64  `json:"memory_bytes,omitempty"`
	UUID              string `json:"uuid,omitempty"`
}

// Ready answers Init.
type Ready struct {
	Protocol   int    `json:"protocol"`
	PID        int    `json:"pid,omitempty"`
	Python     string `json:"python,omitempty"`
	Numpy      string `json:"numpy,omitempty"`
	Torch      string `json:"torch,omitempty"`
	Triton     string `json:"triton,omitempty"`
	CUDA       string `json:"cuda,omitempty"`
	Timer      string `json:"timer"` // "cuda_events" or "perf_counter"
	FlushBytes int64  `json:"flush_bytes"`
	// TimerFloorMS is what an empty GPU sample reads (Methodology.TimerFloorMS).
	TimerFloorMS float64 `json:"timer_floor_ms,omitempty"`
	Device       Device  `json:"device"`
	// KernelClock is "cupti" when the worker reads the kernel clock;
	// otherwise KernelClockNote says why not. LaunchMS is the cost of one
	// launch that the kernel clock adds to each call's CUPTI span
	// (Methodology.LaunchMS).
	KernelClock     string `json:"kernel_clock,omitempty"`
	KernelClockNote string `json:"kernel_clock_note,omitempty"`
	// KernelClockReader says how the worker reads CUPTI
	// (Methodology.KernelClockReader).
	KernelClockReader string  `json:"kernel_clock_reader,omitempty"`
	LaunchMS          float64 `json:"launch_ms,omitempty"`
	// InitMS is what init spent its time on, in ms, by step ("imports",
	// "code", "cuda", "flush", "spin", "hold", "timer_floor",
	// "kernel_clock"), for the runner's log.
	InitMS map[string]float64 `json:"init_ms,omitempty"`
}

// ModelsCmd asks for the work models and metrics of one case.
type ModelsCmd struct {
	Params json.RawMessage `json:"params"`
}

// Models answers ModelsCmd; a model the spec does not name is 0.
type Models struct {
	Flops   float64            `json:"flops,omitempty"`
	Bytes   float64            `json:"bytes,omitempty"`
	Tokens  float64            `json:"tokens,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Model returns the work models as a result.Model.
func (m *Models) Model() result.Model {
	return result.Model{Flops: m.Flops, Bytes: m.Bytes, Tokens: m.Tokens}
}

// Check asks for a correctness check on fresh inputs for each seed.
type Check struct {
	Params json.RawMessage `json:"params"`
	Seeds  []int64         `json:"seeds"`
	// Tolerance nil means the default for each output's dtype.
	Tolerance *result.Tolerance `json:"tolerance"`
}

// First asks for the implementation's first call at a case, untimed, on
// the inputs of Seed.
type First struct {
	Params json.RawMessage `json:"params"`
	Seed   int64           `json:"seed"`
	// WarmMS: before the call, a GPU worker runs a large matrix product
	// until its time per call stops falling, for at most WarmMS, so that
	// an autotuner times its configs at the GPU's working clocks, not as
	// it comes up from idle (0: no warming).
	WarmMS float64 `json:"warm_ms,omitempty"`
	// Check: after the call, the best CheckConfigs configs of each
	// autotuned Triton kernel the call tuned (or read from the autotune
	// cache) are timed again, CheckRounds interleaved rounds of a batch
	// of CheckBudgetMS each, on the kernel clock, with Flush, RestRatio
	// and KernelClockMaxMS as the timing's (0 configs: no check).
	CheckConfigs  int     `json:"check_configs,omitempty"`
	CheckRounds   int     `json:"check_rounds,omitempty"`
	CheckBudgetMS float64 `json:"check_budget_ms,omitempty"`
	// CheckWallMS: no round of the check starts after the first once
	// this much wall time has passed (0: no limit), so that it keeps well
	// inside the first call's timeout.
	CheckWallMS      float64 `json:"check_wall_ms,omitempty"`
	Flush            bool    `json:"flush,omitempty"`
	RestRatio        float64 `json:"rest_ratio,omitempty"`
	KernelClockMaxMS float64 `json:"kernel_clock_max_ms,omitempty"`
}

// FirstCall answers First: the call's wall time, the configs its
// autotuned kernels ran with, and what warming the GPU did.
type FirstCall struct {
	MS       float64           `json:"ms"`
	Autotune []result.Autotune `json:"autotune,omitempty"`
	Warm     *Warm             `json:"warm,omitempty"`
}

// Warm is what warming the GPU before a first call did: how long it ran,
// and the warm-up product's time per call in its first and last batch.
type Warm struct {
	MS        float64 `json:"ms"`
	FirstCall float64 `json:"first_call_ms"`
	LastCall  float64 `json:"last_call_ms"`
}

// Time asks for a batch of timed samples.
type Time struct {
	Params json.RawMessage `json:"params"`
	// Seed makes the inputs; a worker keeps them while Params and Seed stay.
	Seed int64 `json:"seed"`
	// The batch ends at MaxSamples, or once it has MinSamples and either
	// BudgetMS of measured time or WallMS of wall time.
	MinSamples int     `json:"min_samples"`
	MaxSamples int     `json:"max_samples,omitempty"`
	BudgetMS   float64 `json:"budget_ms"`
	WallMS     float64 `json:"wall_ms,omitempty"`
	WarmupMS   float64 `json:"warmup_ms"`
	Flush      bool    `json:"flush"`
	// RestRatio: the GPU waits before each sample for at least RestRatio
	// x the previous sample.
	RestRatio float64 `json:"rest_ratio,omitempty"`
	// KernelClockMaxMS: a call that takes this long or longer on the GPU
	// is timed on the events alone (0: no limit).
	KernelClockMaxMS float64 `json:"kernel_clock_max_ms,omitempty"`
}

// Samples answers Time.
type Samples struct {
	SamplesMS   []float64 `json:"samples_ms"`
	WarmupCalls int       `json:"warmup_calls"`
	WarmupMS    float64   `json:"warmup_ms"`
	Timer       string    `json:"timer"`
	// Cover is what kept the GPU from reaching the start event before the
	// host had enqueued the call: "hold" (a kernel the host releases),
	// "spin" (a kernel of calibrated length, SpinMS) or "none"; CoverNote
	// says why it is not the hold. Discarded counts GPU samples thrown away
	// because the GPU passed the start event too soon all the same.
	Cover     string  `json:"cover,omitempty"`
	CoverNote string  `json:"cover_note,omitempty"`
	Discarded int     `json:"discarded,omitempty"`
	SpinMS    float64 `json:"spin_ms,omitempty"`
	// SamplingMS is the wall time the batch took, warm-up excluded (0
	// from workers that do not say: the runner then counts the batch's
	// wall time less WarmupMS).
	SamplingMS float64 `json:"sampling_ms,omitempty"`
	// KernelMS is, per sample, the span of the call's kernels in CUPTI's
	// records (first start to last end, launch excluded) and BusyMS the sum
	// of their durations; Kernels is the median number of kernels a call
	// ran. All absent when the batch has no kernel clock: KernelNote says
	// why.
	KernelMS   []float64 `json:"kernel_ms,omitempty"`
	BusyMS     []float64 `json:"busy_ms,omitempty"`
	Kernels    int       `json:"kernels,omitempty"`
	KernelNote string    `json:"kernel_note,omitempty"`
	// LaunchGapsMS are the gaps between back-to-back one-thread kernels
	// the worker launched after the batch's samples: the launch cost the
	// kernel clock adds (Methodology.LaunchMS), measured again each batch.
	LaunchGapsMS []float64 `json:"launch_gaps_ms,omitempty"`
}

// ProfileCmd asks a worker started under Nsight Compute for one profiled
// call of a case; Label names the NVTX range around it.
type ProfileCmd struct {
	Params json.RawMessage `json:"params"`
	Seed   int64           `json:"seed"`
	Label  string          `json:"label"`
}

// ErrorEvent is a failure the worker reports instead of an answer.
type ErrorEvent struct {
	Kind string `json:"kind"`
	// Where is the stage that failed: harness, inputs, reference, fn,
	// flops, bytes, tokens or metrics.
	Where     string `json:"where,omitempty"`
	Type      string `json:"type,omitempty"` // the exception's class
	Message   string `json:"message"`
	Traceback string `json:"traceback,omitempty"`
}

// Log is a line a worker wants in the runner's log.
type Log struct {
	Message string `json:"message"`
}

// Event is one decoded line from a worker. Exactly one of the payload
// pointers is set, matching Kind.
type Event struct {
	Kind        string
	ID          int64
	Ready       *Ready
	Models      *Models
	Correctness *result.Correctness
	First       *FirstCall
	Samples     *Samples
	Profiled    bool
	Error       *ErrorEvent
	Log         *Log
}

type envelope struct {
	Event string `json:"event"`
	ID    *int64 `json:"id"`
}

// Bounds on what a worker sends, whatever it is: the runner trusts no
// worker (an implementation's code runs in it), and what it sends reaches
// the runner's log, results.json and the history. An error's message (the
// exception's text) keeps its first and last MaxMessageBytes/2 bytes, its
// traceback and the exception's class name their first and last
// MaxTracebackBytes/2 and MaxMessageBytes/2 (text.Safe); a
// correctness reason and the notes of a batch the same as a message. An
// event line but samples (a batch of samples is the longest, up to
// maxLine) may be MaxEventBytes long: a longer one is a protocol error.
const (
	MaxMessageBytes   = 4 << 10
	MaxTracebackBytes = 16 << 10
	MaxEventBytes     = 1 << 20
)

// bound keeps the first and last n/2 bytes of s.
func bound(s string, n int) string { return text.HeadTailString(s, n/2, n/2) }

// DecodeEvent decodes and checks one event line. Unknown fields are
// ignored (a newer worker may add some); unknown events, missing fields and
// non-finite or negative timings are errors.
func DecodeEvent(line []byte) (*Event, error) {
	line = bytes.TrimSpace(line)
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, fmt.Errorf("decode event %q: %w", clip(line), err)
	}
	ev := &Event{Kind: env.Event}
	if env.ID != nil {
		ev.ID = *env.ID
	}
	if env.Event != EventSamples && len(line) > MaxEventBytes {
		return nil, fmt.Errorf("decode event %q: the %s event is %d bytes long, more than the %d bytes one may have", clip(line), env.Event, len(line), MaxEventBytes)
	}
	var payload any
	switch env.Event {
	case EventReady:
		ev.Ready = &Ready{}
		payload = ev.Ready
	case EventModels:
		ev.Models = &Models{}
		payload = ev.Models
	case EventCorrectness:
		ev.Correctness = &result.Correctness{}
		payload = ev.Correctness
	case EventFirst:
		ev.First = &FirstCall{}
		payload = ev.First
	case EventSamples:
		ev.Samples = &Samples{}
		payload = ev.Samples
	case EventProfiled:
		ev.Profiled = true
		return ev, nil
	case EventError:
		ev.Error = &ErrorEvent{}
		payload = ev.Error
	case EventLog:
		ev.Log = &Log{}
		payload = ev.Log
	case "":
		return nil, fmt.Errorf("decode event %q: no \"event\" field", clip(line))
	default:
		return nil, fmt.Errorf("decode event %q: unknown event %q", clip(line), clip([]byte(env.Event)))
	}
	if err := json.Unmarshal(line, payload); err != nil {
		return nil, fmt.Errorf("decode %s event %q: %w", env.Event, clip(line), err)
	}
	if err := ev.check(); err != nil {
		return nil, fmt.Errorf("decode %s event %q: %w", env.Event, clip(line), err)
	}
	return ev, nil
}

func (ev *Event) check() error {
	switch {
	case ev.Ready != nil:
		if ev.Ready.Protocol != ProtocolVersion {
			return fmt.Errorf("protocol %d, the runner speaks %d", ev.Ready.Protocol, ProtocolVersion)
		}
		if ev.Ready.FlushBytes < 0 {
			return errors.New("negative flush_bytes")
		}
		if !(ev.Ready.TimerFloorMS >= 0 && ev.Ready.TimerFloorMS <= result.MaxTimingMS) {
			return fmt.Errorf("timer_floor_ms must be a number from 0 to %g", result.MaxTimingMS)
		}
		if !(ev.Ready.LaunchMS >= 0 && ev.Ready.LaunchMS <= result.MaxTimingMS) {
			return fmt.Errorf("launch_ms must be a number from 0 to %g", result.MaxTimingMS)
		}
	case ev.Models != nil:
		if len(ev.Models.Metrics) == 0 {
			ev.Models.Metrics = nil
		}
		for _, v := range []float64{ev.Models.Flops, ev.Models.Bytes, ev.Models.Tokens} {
			if v < 0 || math.IsInf(v, 0) {
				return errors.New("models must be finite and >= 0")
			}
		}
	case ev.Correctness != nil:
		c := ev.Correctness
		for _, v := range []float64{c.MaxAbsError, c.MaxRelError, c.RMSRelError, c.MismatchFraction, c.Tolerance.Atol, c.Tolerance.Rtol} {
			if v < 0 {
				return errors.New("error figures and tolerances must be >= 0")
			}
		}
		c.Reason, c.Dtype = bound(c.Reason, MaxMessageBytes), bound(c.Dtype, MaxMessageBytes)
		if c.Trials != len(c.Seeds) {
			return fmt.Errorf("trials %d but %d seeds", c.Trials, len(c.Seeds))
		}
	case ev.First != nil:
		if ev.First.MS < 0 || math.IsInf(ev.First.MS, 0) {
			return errors.New("ms must be a finite number >= 0")
		}
		for _, a := range ev.First.Autotune {
			if a.Kernel == "" || a.Config == "" {
				return errors.New("an autotune record needs kernel and config")
			}
			if a.TuningMS < 0 || math.IsInf(a.TuningMS, 0) {
				return errors.New("tuning_ms must be a finite number >= 0")
			}
		}
	case ev.Samples != nil:
		sm := ev.Samples
		for _, xs := range [][]float64{sm.SamplesMS, sm.KernelMS, sm.BusyMS, sm.LaunchGapsMS} {
			for _, v := range xs {
				if v < 0 || math.IsInf(v, 0) {
					return fmt.Errorf("sample %g ms is not a duration", v)
				}
			}
		}
		if sm.KernelMS != nil && (len(sm.KernelMS) != len(sm.SamplesMS) || len(sm.BusyMS) != len(sm.KernelMS)) {
			return fmt.Errorf("%d kernel_ms and %d busy_ms for %d samples", len(sm.KernelMS), len(sm.BusyMS), len(sm.SamplesMS))
		}
		sm.KernelNote, sm.CoverNote = bound(sm.KernelNote, MaxMessageBytes), bound(sm.CoverNote, MaxMessageBytes)
		if sm.SamplingMS < 0 || math.IsInf(sm.SamplingMS, 0) || sm.Kernels < 0 {
			return errors.New("sampling_ms and kernels must be finite and >= 0")
		}
	case ev.Error != nil:
		switch ev.Error.Kind {
		case KindException, KindOOM, KindCUDA, KindImport, KindTimeout:
		default:
			return fmt.Errorf("unknown error kind %q", clip([]byte(ev.Error.Kind)))
		}
		e := ev.Error
		e.Message, e.Type = bound(e.Message, MaxMessageBytes), bound(e.Type, MaxMessageBytes)
		e.Where, e.Traceback = bound(e.Where, MaxMessageBytes), bound(e.Traceback, MaxTracebackBytes)
	case ev.Log != nil:
		ev.Log.Message = bound(ev.Log.Message, MaxMessageBytes)
	}
	return nil
}

// EncodeCommand renders one command line: the op and id merged into the
// fields of cmd (one of Init, ModelsCmd, Check, Time, or nil).
func EncodeCommand(op string, id int64, cmd any) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if cmd != nil {
		b, err := json.Marshal(cmd)
		if err != nil {
			return nil, fmt.Errorf("encode %s command: %w", op, err)
		}
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, fmt.Errorf("encode %s command: %w", op, err)
		}
	}
	fields["op"], _ = json.Marshal(op)
	fields["id"], _ = json.Marshal(id)
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode %s command: %w", op, err)
	}
	return append(b, '\n'), nil
}

func clip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// EncodeParams renders case parameters as a JSON object in their written
// order, keeping floats floats: 1.0 is written "1.0", not "1", so Python
// sees a float where the spec has one.
func EncodeParams(ps spec.Params) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.Key)
		b.Write(k)
		b.WriteByte(':')
		switch v := p.Value.(type) {
		case float64:
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				b.WriteString("null")
			default:
				s := strconv.FormatFloat(v, 'g', -1, 64)
				if !strings.ContainsAny(s, ".eE") {
					s += ".0"
				}
				b.WriteString(s)
			}
		default:
			x, err := json.Marshal(v)
			if err != nil {
				x = []byte("null")
			}
			b.Write(x)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}
