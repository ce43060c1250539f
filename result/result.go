// Package result defines results.json (schema_version 1): what the runner
// writes and the client reads, reports and compares. It is the one
// definition of that contract; schema.json beside it is its JSON Schema.
package result

import (
	"time"
)

// SchemaVersion is the version of the results.json layout.
const SchemaVersion = 1

// FileName is the name of the results file in the output directory.
const FileName = "results.json"

// Job statuses.
const (
	StatusRunning        = "running"
	StatusSucceeded      = "succeeded"
	StatusFailed         = "failed"
	StatusCriteriaFailed = "criteria_failed"
	StatusCancelled      = "cancelled"
	StatusTimeout        = "timeout"
)

// Implementation statuses within a case.
const (
	ImplOK      = "ok"      // ran, correct, timed
	ImplWrong   = "wrong"   // ran, but failed the correctness check (not timed, unless it is the baseline; its error says so)
	ImplError   = "error"   // raised, crashed, failed to compile
	ImplTimeout = "timeout" // exceeded the per-implementation timeout
	ImplOOM     = "oom"     // ran out of device or host memory
	ImplSkipped = "skipped" // not run here (no GPU, compute capability too low)
	ImplCrashed = "crashed" // the worker process died (signal, illegal address)
	ImplNotRun  = "not_run" // an earlier failure in the same worker stopped it
)

// Verdicts of a comparison.
const (
	VerdictFast      = "FAST"
	VerdictSlow      = "SLOW"
	VerdictSame      = "SAME"
	VerdictAmbiguous = "AMBIGUOUS"
)

// Results is the whole results.json document.
type Results struct {
	SchemaVersion   int          `json:"schema_version"`
	JobID           string       `json:"job_id"`
	Experiment      string       `json:"experiment"`
	CreatedAt       time.Time    `json:"created_at"`
	FinishedAt      *time.Time   `json:"finished_at,omitempty"`
	Status          string       `json:"status"`
	ClientVersion   string       `json:"client_version,omitempty"`
	RunnerVersion   string       `json:"runner_version"`
	SpecHash        string       `json:"spec_hash"`
	Image           Image        `json:"image"`
	Env             Env          `json:"env"`
	Methodology     Methodology  `json:"methodology"`
	Mode            string       `json:"mode"` // "gpu" or "cpu"
	SweepKeys       []string     `json:"sweep_keys"`
	Implementations []string     `json:"implementations"`
	Baseline        string       `json:"baseline"`
	Cases           []Case       `json:"cases"`
	Comparisons     []Comparison `json:"comparisons"`
	Criteria        []Criterion  `json:"criteria"`
	Success         bool         `json:"success"`
	Warnings        []Warning    `json:"warnings"`
	// Profiles are the Nsight Compute reports asked for with XRUN_PROFILE
	// (or --profile): one per implementation, in the output directory.
	Profiles []Profile `json:"profiles,omitempty"`
	Error    string    `json:"error,omitempty"`
	// Split says the run is one part of a sweep split over several jobs
	// (xrun submit --split), or the gather of all the parts; nil for a
	// run of the whole sweep in one job.
	Split *Split `json:"split,omitempty"`
}

// Image identifies the container image the job ran in.
type Image struct {
	Ref    string `json:"ref,omitempty"`
	Digest string `json:"digest,omitempty"`
	// CodeHash is the content hash of the experiment's code, which xrun
	// copies into the job's container beside the image.
	CodeHash string `json:"code_hash,omitempty"`
}

// Env records where the job ran.
type Env struct {
	// Host is the machine's name: XRUN_HOST_NAME from the client (the
	// Docker daemon's host name, a pod's node), else the runner's own
	// host name (in a container, its id).
	Host        string `json:"host"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPU         string `json:"cpu,omitempty"`
	Python      string `json:"python,omitempty"`
	Torch       string `json:"torch,omitempty"`
	Triton      string `json:"triton,omitempty"`
	Numpy       string `json:"numpy,omitempty"`
	CUDARuntime string `json:"cuda_runtime,omitempty"`
	Driver      string `json:"driver,omitempty"`
	GitCommit   string `json:"git_commit,omitempty"`
	// GitDirty says the experiment's files differed from GitCommit.
	GitDirty bool  `json:"git_dirty,omitempty"`
	GPUs     []GPU `json:"gpus"`
	// Container is set when the runner ran inside a container.
	Container *Container `json:"container,omitempty"`
	// Cache is the compile caches the job started with (Triton,
	// TorchInductor, CUDA extensions), where it had a place for them.
	Cache *Cache            `json:"cache,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
	// HostLoad summarises how busy the machine was while the timings were
	// taken (CPU runs on Linux); each timing has its own (Timing.HostLoad).
	HostLoad *HostLoadSummary `json:"host_load,omitempty"`
}

// HostLoadSummary is the host's load over a run's timings.
type HostLoadSummary struct {
	// Timings is how many timings have a HostLoad; CPUs is how many CPUs
	// the job could use.
	Timings int `json:"timings"`
	CPUs    int `json:"cpus"`
	// MaxLoad1 is the highest 1-minute load average read.
	MaxLoad1 float64 `json:"max_load1"`
	// MedianOthersShare and MaxOthersShare are the median and the largest
	// of the timings' OthersShare, MaxStealShare the largest StealShare.
	MedianOthersShare float64 `json:"median_others_share"`
	MaxOthersShare    float64 `json:"max_others_share"`
	MaxStealShare     float64 `json:"max_steal_share"`
	// MinCPUMHz and MaxCPUMHz bound the timings' CPU clocks (absent where
	// the machine does not expose them).
	MinCPUMHz float64 `json:"min_cpu_mhz,omitempty"`
	MaxCPUMHz float64 `json:"max_cpu_mhz,omitempty"`
	// BusyShare is the contention (OthersShare + StealShare) at or above
	// which a timing was taken on a busy host (0: the check was off) where
	// the CPUs were also FullShare busy or more (JobShare + OthersShare +
	// StealShare), and Busy how many were: each has a host_busy warning.
	BusyShare float64 `json:"busy_share"`
	FullShare float64 `json:"full_share"`
	Busy      int     `json:"busy"`
}

// HostLoad is how busy the machine was while one implementation was timed
// on one case, read from /proc at both ends of each of its batches and
// summed over them (CPU runs on Linux). The shares are of the time of the
// CPUs the job may run on (its affinity, which a cpuset cgroup sets) over
// those windows: their wall time times their number.
type HostLoad struct {
	// Windows is how many batches were read, WallS their wall time.
	Windows int     `json:"windows"`
	WallS   float64 `json:"wall_s"`
	// CPUs is how many CPUs the job could use.
	CPUs int `json:"cpus"`
	// Load1 is the mean of the 1-minute load averages read at the
	// windows' ends, MaxLoad1 the highest (/proc/loadavg: the host's, in
	// a container too).
	Load1    float64 `json:"load1"`
	MaxLoad1 float64 `json:"max_load1"`
	// OthersShare is the share other processes used: the CPUs' busy time
	// (/proc/stat) less the CPU time of the runner and every process under
	// it (/proc/<pid>/stat). JobShare is the job's own.
	OthersShare float64 `json:"others_share"`
	JobShare    float64 `json:"job_share"`
	// StealShare is the share the hypervisor gave to other machines while
	// these CPUs had work.
	StealShare float64 `json:"steal_share"`
	// CPUMHz is the CPUs' mean current clock (cpufreq, else /proc/cpuinfo);
	// absent where the machine does not expose it.
	CPUMHz float64 `json:"cpu_mhz,omitempty"`
}

// Cache is what the job's compile caches held when it started.
type Cache struct {
	Dir string `json:"dir"`
	// Volume names the host's volume that keeps them across the jobs of
	// one owner, trust level, experiment, base and GPU model (on a Kubernetes cluster: the
	// node's directory, /var/lib/xrun/cache/NAME); empty when they were
	// the job's own, empty at its start (xrun submit --no-cache-volume).
	Volume string `json:"volume,omitempty"`
	// Files and Bytes are what they held at the start: 0 on a first run.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Limit is their size limit in bytes (0: none), and TrimmedEntries
	// and TrimmedBytes the least recently used entries the runner
	// removed to keep them within it before the job started.
	Limit          int64 `json:"limit,omitempty"`
	TrimmedEntries int   `json:"trimmed_entries,omitempty"`
	TrimmedBytes   int64 `json:"trimmed_bytes,omitempty"`
	// Fresh are the implementations that failed while they used the
	// volume's caches and ran again with fresh, empty caches of their own
	// (a broken entry is rebuilt, never the job's failure).
	Fresh []FreshCache `json:"fresh,omitempty"`
}

// FreshCache is an implementation run again with fresh compile caches
// after it failed with the volume's.
type FreshCache struct {
	Impl string `json:"impl"`
	// Error is how it failed with the volume's caches (its first line).
	Error string `json:"error"`
	// Passed says the run with fresh caches got past where the first
	// failed: an entry of the volume was broken, and the implementation's
	// fresh entries replaced the volume's (Replaced files). False: it
	// failed again, and its results hold that failure, its own.
	Passed   bool `json:"passed"`
	Replaced int  `json:"replaced,omitempty"`
}

// Container is what the runner saw of the container it ran in: the limits
// that can bear on a timing, and the GPUs the runtime made visible.
type Container struct {
	// ID is the host name the engine gave the container (Docker: its short id).
	ID string `json:"id,omitempty"`
	// MemoryLimitBytes, CPULimit and PidsLimit are the cgroup limits (0: none).
	MemoryLimitBytes int64   `json:"memory_limit_bytes,omitempty"`
	CPULimit         float64 `json:"cpu_limit,omitempty"`
	PidsLimit        int64   `json:"pids_limit,omitempty"`
	// CPUs is how many CPUs the runner may run on.
	CPUs int `json:"cpus,omitempty"`
	// ShmBytes is the size of /dev/shm.
	ShmBytes int64 `json:"shm_bytes,omitempty"`
	// VisibleDevices is NVIDIA_VISIBLE_DEVICES as the runtime left it
	// (a CDI-mode runtime sets "void" once it has injected the devices).
	VisibleDevices string `json:"visible_devices,omitempty"`
	// WorkerUser is the uid:gid the experiment's code ran as, apart from
	// the runner (runner/sandbox); empty when it ran as the runner's own
	// user (xrun submit --root).
	WorkerUser string `json:"worker_user,omitempty"`
	// WorkerProcsLimit is that user's process and thread limit.
	WorkerProcsLimit int64 `json:"worker_procs_limit,omitempty"`
}

// GPU describes one device and its state before and after the run.
type GPU struct {
	Index             int       `json:"index"`
	Name              string    `json:"name"`
	UUID              string    `json:"uuid,omitempty"`
	ComputeCapability string    `json:"compute_capability,omitempty"`
	SMCount           int       `json:"sm_count,omitempty"`
	L2Bytes           int64     `json:"l2_bytes,omitempty"`
	MemoryBytes       int64     `json:"memory_bytes,omitempty"`
	PeakTFLOPS        float64   `json:"peak_tflops,omitempty"` // dense, in the dtype of the table entry
	PeakGBps          float64   `json:"peak_gbps,omitempty"`
	Before            *GPUState `json:"before,omitempty"`
	After             *GPUState `json:"after,omitempty"`
	// During summarises the readings taken while anything was timed.
	During *Clocks `json:"during,omitempty"`
}

// Clocks summarises the GPU readings (nvidia-smi, every 100 ms) taken while
// samples were timed. Readings of an idle GPU are left out.
type Clocks struct {
	Readings      int     `json:"readings"`
	SMClockMHz    int     `json:"sm_clock_mhz"` // median
	MinSMClockMHz int     `json:"min_sm_clock_mhz"`
	MaxSMClockMHz int     `json:"max_sm_clock_mhz"`
	MaxPowerW     float64 `json:"max_power_w"`
	// PowerW is the median power draw and MaxTemperatureC the highest
	// temperature over the readings (absent in files before them, and
	// where nvidia-smi does not report them).
	PowerW          float64 `json:"power_w,omitempty"`
	MaxTemperatureC int     `json:"max_temperature_c,omitempty"`
	// ClockEventReasons are the reasons seen in any reading that hold clocks
	// back (all but gpu_idle and applications_clocks_setting), and
	// ThrottledReadings how many readings had one; ReasonReadings counts
	// the readings each reason was active in.
	ClockEventReasons []string       `json:"clock_event_reasons"`
	ThrottledReadings int            `json:"throttled_readings"`
	ReasonReadings    map[string]int `json:"reason_readings,omitempty"`
}

// GPUState is one nvidia-smi reading.
type GPUState struct {
	SMClockMHz        int      `json:"sm_clock_mhz"`
	MemClockMHz       int      `json:"mem_clock_mhz"`
	MaxSMClockMHz     int      `json:"max_sm_clock_mhz,omitempty"`
	PowerW            float64  `json:"power_w"`
	PowerLimitW       float64  `json:"power_limit_w,omitempty"`
	TemperatureC      int      `json:"temperature_c"`
	Utilization       int      `json:"utilization_pct"`
	MemoryUsedBytes   int64    `json:"memory_used_bytes"`
	PersistenceMode   string   `json:"persistence_mode,omitempty"`
	ClockEventReasons []string `json:"clock_event_reasons"`
}

// Methodology records how timings were taken.
type Methodology struct {
	// AutotuneCache says where autotuned Triton kernels got their configs:
	// AutotuneReuse (stored by an earlier run of the same code, else
	// tuned and stored), AutotuneRetune (tuned afresh, the stored ones
	// forgotten) or AutotuneOff (the job turned Triton's autotune cache
	// off: tuned in every run). Empty in CPU runs and files before it.
	AutotuneCache string `json:"autotune_cache,omitempty"`
	Timer         string `json:"timer"` // "cuda_events" or "perf_counter"
	FlushBytes    int64  `json:"flush_bytes"`
	// TimerFloorMS is the median of an empty timed region on the GPU (the
	// two CUDA events around nothing): the least a GPU timing reads, and a
	// fixed part of a few-microsecond kernel's time.
	TimerFloorMS float64 `json:"timer_floor_ms,omitempty"`
	// WarmupMS is the warm-up of a case's first batch; LaterWarmupMS that
	// of every later batch (results before it say nothing of them).
	WarmupMS      float64 `json:"warmup_ms"`
	LaterWarmupMS float64 `json:"later_warmup_ms,omitempty"`
	MinSamples    int     `json:"min_samples"`
	MaxSamples    int     `json:"max_samples"`
	MinTimeS      float64 `json:"min_time_s"`
	MaxTimeS      float64 `json:"max_time_s"`
	TargetRSE     float64 `json:"target_rse"`
	StoppingRule  string  `json:"stopping_rule"`
	Rounds        int     `json:"rounds"`
	Trials        int     `json:"trials"`
	ImplTimeoutS  float64 `json:"impl_timeout_s"`
	FastThreshold float64 `json:"fast_threshold"`
	CUDAGraph     bool    `json:"cuda_graph"`
	// RestRatio: the GPU rested (spin kernel only) for at least this times
	// the previous sample before each sample.
	RestRatio float64 `json:"rest_ratio"`
	// KernelClock is the second GPU clock read beside the events: "cupti"
	// (CUPTI's kernel records), or "" when the workers could not read it
	// (KernelClockNote says why).
	KernelClock     string `json:"kernel_clock,omitempty"`
	KernelClockNote string `json:"kernel_clock_note,omitempty"`
	// KernelClockReader is how the first worker read CUPTI's records:
	// "activity" (CUPTI's activity API, directly) or "profiler" (torch's
	// profiler, where the activity API could not be opened: the same
	// records, 0.1 s or more a batch slower).
	KernelClockReader string `json:"kernel_clock_reader,omitempty"`
	// LaunchMS is the GPU's cost of one kernel launch, which CUPTI's kernel
	// records leave out and Nsight Compute's gpu__time_duration counts: the
	// interquartile mean of the gaps between back-to-back one-thread
	// kernels, measured with CUPTI after every batch of the run. A timing
	// on the kernel clock is the CUPTI span of the call plus LaunchMS.
	LaunchMS float64 `json:"launch_ms,omitempty"`
	// KernelClockMaxMS: calls that took this long or longer on the GPU
	// were timed on the events alone (0: no limit).
	KernelClockMaxMS float64 `json:"kernel_clock_max_ms,omitempty"`
	// ClockRule says which clock a timing's headline figures come from.
	ClockRule string `json:"clock_rule,omitempty"`
}

// Case is one sweep point and the outcome of every implementation on it.
type Case struct {
	Params  map[string]any         `json:"params"`
	Label   string                 `json:"label"`
	Flops   float64                `json:"flops,omitempty"`
	Bytes   float64                `json:"bytes,omitempty"`
	Tokens  float64                `json:"tokens,omitempty"`
	Results map[string]*ImplResult `json:"results"` // by implementation name, "reference" included
}

// ImplResult is one implementation on one case.
type ImplResult struct {
	Status      string       `json:"status"`
	Error       string       `json:"error,omitempty"`
	StderrTail  string       `json:"stderr_tail,omitempty"`
	Correctness *Correctness `json:"correctness,omitempty"`
	Timing      *Timing      `json:"timing,omitempty"`
	Throughput  *Throughput  `json:"throughput,omitempty"`
	// Model is this implementation's own work model when it differs from
	// the case's (for example the HBM traffic of a fused version).
	Model *Model `json:"model,omitempty"`
	// Metrics are extra figures the experiment reports (CTAs, SMs, ...).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Autotune is the config each autotuned kernel ran with at this case,
	// as its first call chose it (GPU runs of Python implementations).
	Autotune []Autotune `json:"autotune,omitempty"`
}

// Model is the work one call does: FLOPs, bytes through device memory, tokens.
type Model struct {
	Flops  float64 `json:"flops,omitempty"`
	Bytes  float64 `json:"bytes,omitempty"`
	Tokens float64 `json:"tokens,omitempty"`
}

// Correctness is the comparison of an implementation with the reference.
type Correctness struct {
	Passed           bool      `json:"passed"`
	Trials           int       `json:"trials"`
	Seeds            []int64   `json:"seeds"`
	MaxAbsError      float64   `json:"max_abs_error"`
	MaxRelError      float64   `json:"max_rel_error"`
	RMSRelError      float64   `json:"rms_rel_error"`
	MismatchFraction float64   `json:"mismatch_fraction"`
	NaNMismatches    int64     `json:"nan_mismatches"`
	InfMismatches    int64     `json:"inf_mismatches"`
	InputsModified   bool      `json:"inputs_modified"`
	Replayed         bool      `json:"replayed"`
	Tolerance        Tolerance `json:"tolerance"`
	Dtype            string    `json:"dtype,omitempty"`
	Reason           string    `json:"reason,omitempty"`
}

// Tolerance is the bound an element is checked against.
type Tolerance struct {
	Atol float64 `json:"atol"`
	Rtol float64 `json:"rtol"`
}

// Timing is the summary of the timed samples, in milliseconds.
type Timing struct {
	MedianMS   float64 `json:"median_ms"`
	MeanMS     float64 `json:"mean_ms"`
	MinMS      float64 `json:"min_ms"`
	MaxMS      float64 `json:"max_ms"`
	Q1MS       float64 `json:"q1_ms"`
	Q3MS       float64 `json:"q3_ms"`
	P20MS      float64 `json:"p20_ms"`
	P80MS      float64 `json:"p80_ms"`
	StdevMS    float64 `json:"stdev_ms"`
	StderrRel  float64 `json:"stderr_rel"`
	Samples    int     `json:"samples"`
	Rounds     int     `json:"rounds"`
	TotalS     float64 `json:"total_s"`
	Converged  bool    `json:"converged"`
	StopReason string  `json:"stop_reason"`
	// Cover is what held the GPU back until the host had enqueued the call
	// (GPU runs): "hold", a kernel the host releases once the call is
	// enqueued; "spin", a kernel of calibrated length, where the hold
	// could not be loaded; "none" for a call that waits for the GPU itself
	// (the hold timed out), whose samples include the host's time.
	Cover string `json:"cover,omitempty"`
	// Discarded counts samples thrown away because the GPU reached the
	// start event before the host had enqueued the call (a gap would have
	// been timed) or the hold timed out.
	Discarded int `json:"discarded,omitempty"`
	// Clocks are the GPU's clocks while these samples were taken (GPU runs).
	Clocks *Clocks `json:"clocks,omitempty"`
	// HostLoad is how busy the machine was while they were taken (CPU runs
	// on Linux).
	HostLoad *HostLoad `json:"host_load,omitempty"`
	// Clock is the clock the figures above come from: ClockKernel,
	// ClockEvents or ClockPerfCounter. Files written before it existed
	// leave it out; their GPU timings are on ClockEvents.
	Clock string `json:"clock,omitempty"`
	// ClockNote says why a GPU timing is not on the kernel clock.
	ClockNote string `json:"clock_note,omitempty"`
	// Events summarises the same samples on the CUDA event pair, and
	// Kernel on the CUPTI kernel records (without the launch), when the
	// figures above come from the kernel clock.
	Events *ClockSummary  `json:"events,omitempty"`
	Kernel *KernelSummary `json:"kernel,omitempty"`
	// KeptSamplesMS are at most KeptSamples of the samples the figures
	// above summarise, evenly spaced in the order they were taken (all of
	// them when there are fewer): enough for a rank test of one run
	// against another (xrun regress), at a fixed cost in the file.
	KeptSamplesMS []float64 `json:"kept_samples_ms,omitempty"`
}

// KeptSamples is the most samples a Timing keeps in KeptSamplesMS.
const KeptSamples = 64

// ClockOf returns the clock t's figures come from in a run of mode ("gpu"
// or "cpu"), also for files written before Timing.Clock existed.
func (t *Timing) ClockOf(mode string) string {
	switch {
	case t.Clock != "":
		return t.Clock
	case mode == "cpu":
		return ClockPerfCounter
	default:
		return ClockEvents
	}
}

// Clocks a timing can be read from.
const (
	// ClockKernel: the span from the first kernel's start to the last
	// kernel's end of each call in CUPTI's records, plus one launch
	// (Methodology.LaunchMS): what Nsight Compute's gpu__time_duration
	// counts, without the event pair's own cost.
	ClockKernel = "kernel"
	// ClockEvents: two CUDA events around the call.
	ClockEvents = "events"
	// ClockPerfCounter: the host's clock around the call (CPU runs).
	ClockPerfCounter = "perf_counter"
)

// ClockSummary is one clock's reading of a timing's samples, in ms.
type ClockSummary struct {
	MedianMS  float64 `json:"median_ms"`
	MinMS     float64 `json:"min_ms"`
	Q1MS      float64 `json:"q1_ms"`
	Q3MS      float64 `json:"q3_ms"`
	StderrRel float64 `json:"stderr_rel"`
	Samples   int     `json:"samples"`
}

// KernelSummary is the CUPTI reading of a timing's samples: the span from
// the first kernel's start to the last kernel's end of each call, without
// the launch.
type KernelSummary struct {
	ClockSummary
	// BusyMedianMS is the median of the summed durations of each call's
	// kernels (the span less the gaps between them).
	BusyMedianMS float64 `json:"busy_median_ms"`
	// Kernels is the median number of kernels (memory copies and sets
	// included) a call ran.
	Kernels int `json:"kernels"`
	// LaunchMS is the launch cost the timing's headline adds to these
	// spans: Methodology.LaunchMS once the run has finished.
	LaunchMS float64 `json:"launch_ms"`
}

// Profile is one Nsight Compute report.
type Profile struct {
	Implementation string `json:"implementation"`
	// Cases are the labels of the cases profiled (one call each, inside an
	// NVTX range named "xrun <label>").
	Cases []string `json:"cases"`
	// Report and Summary are paths relative to the output directory: the
	// .ncu-rep file and its details page as text.
	Report  string `json:"report,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Kernels is how many kernel launches were profiled.
	Kernels int `json:"kernels"`
	// Status is ProfileOK or ProfileFailed; Error says what went wrong.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Profile statuses.
const (
	ProfileOK     = "ok"
	ProfileFailed = "failed"
)

// Throughput is derived from the case's FLOP, byte and token models.
type Throughput struct {
	TFLOPS       float64 `json:"tflops,omitempty"`
	GBps         float64 `json:"gbps,omitempty"`
	PctPeakFlops float64 `json:"pct_peak_flops,omitempty"`
	PctPeakBW    float64 `json:"pct_peak_bw,omitempty"`
	TokensPerS   float64 `json:"tokens_per_s,omitempty"`
	// ArithmeticIntensity is the work model's FLOPs per byte of device
	// memory traffic (both models needed).
	ArithmeticIntensity float64 `json:"arithmetic_intensity,omitempty"`
	// Bound is where the work model puts the call on the GPU's roofline:
	// BoundCompute when its arithmetic intensity is at or above the ridge
	// point (the dense peak for its dtype over the memory bandwidth),
	// else BoundMemory; empty without both models or a known GPU.
	Bound string `json:"bound,omitempty"`
}

// Roofline sides a call can be on (Throughput.Bound).
const (
	BoundCompute = "compute"
	BoundMemory  = "memory"
)

// Comparison is a candidate's speed relative to a baseline on one case.
type Comparison struct {
	A       string         `json:"a"` // candidate
	B       string         `json:"b"` // baseline
	Params  map[string]any `json:"params"`
	Label   string         `json:"label"`
	Speedup float64        `json:"speedup"` // b.median / a.median
	// SpeedupLo and SpeedupHi bound the speedup's 95% interval, from the
	// uncertainty of the two medians (analyze.SpeedupInterval); the
	// verdict is judged on it. Absent in files before it.
	SpeedupLo float64 `json:"speedup_lo,omitempty"`
	SpeedupHi float64 `json:"speedup_hi,omitempty"`
	Verdict   string  `json:"verdict"`
}

// Criterion is the evaluation of one spec criterion.
type Criterion struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
	// Skipped is set when nothing the criterion needs ran here (GPU-only
	// implementations on a CPU run): it is neither passed nor failed.
	Skipped bool `json:"skipped,omitempty"`
	// NotEvaluated is set when the job did not run to its verdict
	// (cancelled, timed out, failed before the end): the criterion is
	// neither passed nor failed, and Detail says why ("job cancelled").
	NotEvaluated bool   `json:"not_evaluated,omitempty"`
	Detail       string `json:"detail,omitempty"`
	// Expect is the outcome the experiment declares for the criterion:
	// ExpectFail for a hypothesis its published results refute,
	// ExpectPass otherwise. Files written before declarations leave it
	// out (nothing is declared).
	Expect string `json:"expect,omitempty"`
}

// Declared outcomes of a criterion (Criterion.Expect).
const (
	ExpectPass = "pass"
	ExpectFail = "fail"
)

// Warning is something that makes a figure less trustworthy.
type Warning struct {
	Kind           string `json:"kind"` // not_converged, throttled, host_busy, excessive_speedup, ...
	Implementation string `json:"implementation,omitempty"`
	Label          string `json:"label,omitempty"`
	Message        string `json:"message"`
}
