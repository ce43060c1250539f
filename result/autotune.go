package result

import "strings"

// Autotune is one autotuned kernel's config at a case: what Triton's
// autotuner (or TorchInductor's, Kind "inductor") chose in the
// implementation's first call there, and where the choice came from.
type Autotune struct {
	// Kernel is the autotuned function's name; Key the autotuner's key
	// for the call (its key arguments' values and the dtypes).
	Kernel string `json:"kernel"`
	Kind   string `json:"kind"`
	Key    string `json:"key,omitempty"`
	// Config is the chosen config's short name: its block sizes, warps
	// and stages, as 128x256x64/w8/s3; Params all of it.
	Config string         `json:"config"`
	Params map[string]any `json:"params,omitempty"`
	// Source is AutotuneTuned, AutotuneCache, AutotuneReused or
	// AutotuneSingle.
	Source string `json:"source"`
	// TuningMS is how long the autotuner took to time every config (when
	// Source is AutotuneTuned); TimingsMS each config's median as it
	// measured them, by short name.
	TuningMS  float64            `json:"tuning_ms,omitempty"`
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
	// Check is the runner's own reading of the best configs after the
	// autotuner chose (nil: not checked).
	Check *AutotuneCheck `json:"check,omitempty"`
}

// AutotuneCheck is the check of an autotuner's choice: its best configs
// timed again on the runner's clock, in interleaved rounds, after it
// chose (docs/performance.md, "A checked choice").
type AutotuneCheck struct {
	// Clock is the clock of TimingsMS: ClockKernel or ClockEvents.
	Clock string `json:"clock"`
	// TimingsMS is each checked config's median over Rounds rounds.
	TimingsMS map[string]float64 `json:"timings_ms"`
	Rounds    int                `json:"rounds"`
	// Replaced is the autotuner's choice where the check found another
	// config faster by more than AutotuneCheckMargin and ran that one
	// instead (Autotune.Config); Stored says the check's choice was kept
	// for later runs, which read it from the cache with Triton's.
	Replaced string `json:"replaced,omitempty"`
	Stored   bool   `json:"stored,omitempty"`
	// Beaten, on a choice read from the cache, is the config the check
	// found faster by more than AutotuneBeatenMargin: the cached one still
	// ran (reuse stays the default), and xrun submit --retune tunes afresh.
	Beaten string `json:"beaten,omitempty"`
	// Note says what the check concluded, in words.
	Note string `json:"note,omitempty"`
}

// The check's margins: a tuned choice is replaced by a config faster by
// more than 1 %, and a cached one is reported beaten by one faster by
// more than 3 %.
const (
	AutotuneCheckMargin  = 0.01
	AutotuneBeatenMargin = 0.03
)

// Sources of an autotuned config.
const (
	// AutotuneTuned: every config was timed in this run.
	AutotuneTuned = "tuned"
	// AutotuneCache: read from the autotune cache a run before this one
	// stored (the job's compile caches; xrun submit --retune tunes afresh).
	AutotuneCache = "cache"
	// AutotuneReused: chosen at an earlier case of this run with the same key.
	AutotuneReused = "reused"
	// AutotuneSingle: one config was left to run; nothing was tuned.
	AutotuneSingle = "single"
)

// Methodology.AutotuneCache values.
const (
	AutotuneReuse  = "reuse"
	AutotuneRetune = "retune"
	AutotuneOff    = "off"
)

// AutotuneSummary is a's configs in one line, as the results history keeps
// them: "kernel config" per kernel, "; " between them, in a's order
// ("matmul_kernel 128x256x64/w8/s3"); "" when nothing was autotuned.
func AutotuneSummary(a []Autotune) string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = x.Kernel + " " + x.Config
	}
	return strings.Join(parts, "; ")
}

// AutotuneSummaryChange is AutotuneChange for two AutotuneSummary lines.
func AutotuneSummaryChange(before, after string) string {
	return AutotuneChange(parseSummary(before), parseSummary(after))
}

func parseSummary(s string) []Autotune {
	var out []Autotune
	for _, part := range strings.Split(s, "; ") {
		if k, c, ok := strings.Cut(part, " "); ok {
			out = append(out, Autotune{Kernel: k, Config: c})
		}
	}
	return out
}

// AutotuneChange says how the autotuned configs of one implementation's
// results differ from another's ("" when no kernel's config changed):
// "config changed: matmul_kernel 128x256x64/w8/s3 → 128x128x32/w4/s4".
// Kernels only one side has are left out: a run that recorded no configs
// says nothing about the other's.
func AutotuneChange(before, after []Autotune) string {
	was := map[string]string{}
	for _, a := range before {
		was[a.Kind+"\x00"+a.Kernel+"\x00"+a.Key] = a.Config
	}
	var changes []string
	for _, a := range after {
		old, ok := was[a.Kind+"\x00"+a.Kernel+"\x00"+a.Key]
		if ok && old != a.Config {
			changes = append(changes, a.Kernel+" "+old+" → "+a.Config)
		}
	}
	if len(changes) == 0 {
		return ""
	}
	return "config changed: " + strings.Join(changes, "; ")
}
