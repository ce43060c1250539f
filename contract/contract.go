// Package contract is the one definition of what xrun's client and the
// runner in a job's container agree on: the paths in the container, the
// user a job runs as, the environment the client sets, the runner's exit
// codes, the labels that mark a job's containers and images, and the two
// protocols carried in the runner's log: its progress line (Progress) and
// its output directory (WriteOut).
package contract

import "strings"

// Paths in a job's container.
const (
	// ExperimentDir holds the experiment's code (its includes inside),
	// copied in by the client before the container starts.
	ExperimentDir = "/xrun/exp"
	// OutDir is where the runner writes results.json, results.md,
	// runner.log and logs/; the client copies it out after the job.
	OutDir = "/xrun/out"
	// HomeDir and TmpDir are the job's HOME and TMPDIR (Triton and torch
	// caches, scratch), writable by JobUser.
	HomeDir = "/xrun/home"
	TmpDir  = "/xrun/tmp"
	// RunnerPath is the runner binary, the image's entrypoint.
	RunnerPath = "/usr/local/bin/xrun-runner"
	// CacheDir holds the compile caches (Triton, TorchInductor, CUDA
	// extensions, the CUDA JIT cache), writable by JobUser: a named volume
	// kept across the jobs of one experiment, base and GPU model on a host,
	// a directory of the node on a Kubernetes cluster (xrun submit
	// --no-cache-volume: the container's own, new each job).
	CacheDir = "/xrun/cache"
	// RunnerDir belongs to root like OutDir and holds the runner's own
	// files while it runs (the harness) and the POST token the client
	// copies in (PostTokenFile), out of the worker user's reach.
	RunnerDir = "/xrun/runner"
	// PostTokenFile holds the bearer token for EnvPostURL when the client
	// copies it in rather than setting EnvPostToken, which the
	// container's configuration would show.
	PostTokenFile = RunnerDir + "/post-token"
)

// JobUser is the uid:gid the experiment's code runs as unless the job was
// submitted with --root: no name needed, so it works on any base, scratch
// included. The runner itself starts as root with the capabilities SETUID,
// SETGID and KILL alone, and runs every process of the experiment as
// JobUser (EnvWorkerUser), which owns HomeDir and TmpDir but not OutDir,
// RunnerDir or ExperimentDir (runner/sandbox).
const JobUser = "65532:65532"

// RunnerCaps are the capabilities the runner of an unprivileged job keeps:
// switching to the worker user, and killing its processes.
var RunnerCaps = []string{"SETUID", "SETGID", "KILL"}

// Environment the client sets for the runner (all optional for it).
const (
	EnvJobID         = "XRUN_JOB_ID"
	EnvClientVersion = "XRUN_CLIENT_VERSION"
	EnvImageRef      = "XRUN_IMAGE_REF"
	EnvImageDigest   = "XRUN_IMAGE_DIGEST"
	// EnvCodeHash is the content hash of the code the client copied into
	// the container beside the image.
	EnvCodeHash  = "XRUN_CODE_HASH"
	EnvGitCommit = "XRUN_GIT_COMMIT"
	// EnvGitDirty=1 says the experiment's files differ from XRUN_GIT_COMMIT.
	EnvGitDirty   = "XRUN_GIT_DIRTY"
	EnvMode       = "XRUN_MODE"
	EnvPostURL    = "XRUN_POST_URL"
	EnvPostToken  = "XRUN_POST_TOKEN"
	EnvPython     = "XRUN_PYTHON"
	EnvExperiment = "XRUN_EXPERIMENT"
	EnvOut        = "XRUN_OUT"
	// EnvSplit is "K/N": the job runs part K (from 1) of its sweep split
	// over N jobs, the cases i (from 0) with i % N == K-1 (result.Split).
	EnvSplit = "XRUN_SPLIT"
	// EnvClockMonitor=off stops the runner reading the GPU's clocks while
	// it times (they are still read before and after).
	EnvClockMonitor = "XRUN_CLOCK_MONITOR"
	// EnvZygote=off makes every Python worker start on its own instead of
	// being forked from the zygote that imported numpy, torch and triton
	// once (runner/harness/PROTOCOL.md, "The zygote").
	EnvZygote = "XRUN_ZYGOTE"
	// EnvHostBusyShare is the share of the CPUs other processes (and the
	// hypervisor) may take while a CPU timing is taken before it gets a
	// host_busy warning (0 < share <= 1; default 0.1), or off: never.
	EnvHostBusyShare = "XRUN_HOST_BUSY_SHARE"
	// EnvZygotePreload lists modules (comma-separated) that a standby's
	// zygote imports after numpy, torch and triton: torch.compile's
	// (spec.CompileStack), set by the client for an experiment whose code
	// uses it. A standby has the time; a job's own zygote does not, and
	// imports only the three (docs/performance.md, "torch.compile and the
	// caches").
	EnvZygotePreload = "XRUN_ZYGOTE_PRELOAD"
	// EnvOutToLog=1 makes the runner write its output directory into its
	// log at the end (contract.WriteOut), for backends that keep a finished
	// job's log but not its files.
	EnvOutToLog = "XRUN_OUT_TO_LOG"
	// EnvOwnTree=1 says every process the runner starts is the job's and
	// runs as the runner's own user (run.Options.OwnTree): a job of a
	// batch scheduler without a container (client/backend/slurm), whose
	// orphans the runner adopts and kills before its results are final.
	EnvOwnTree = "XRUN_OWN_TREE"
	// EnvProfile asks the runner for Nsight Compute reports after the
	// timed cases: "ncu" for every implementation and case, or
	// "ncu:impl=a,b;case=0,2;set=full;clock=base" (each key optional;
	// runner/profile documents them). The reports go to OutDir/profile/.
	// Profiling needs ncu in the image, and GPU performance counters the
	// job may read (ERR_NVGPUCTRPERM otherwise: the host lets only
	// administrators profile, and the job needs root with CAP_SYS_ADMIN).
	EnvProfile = "XRUN_PROFILE"
	// EnvRetune=1 makes the runner forget the autotune results stored in
	// the job's compile caches before it starts, so that every autotuned
	// Triton kernel is timed afresh, and its new choices stored
	// (xrun submit --retune; the spec's benchmark.method.retune).
	EnvRetune = "XRUN_RETUNE"
	// EnvHostName is the name of the machine the job runs on (the Docker
	// daemon's host name, a Kubernetes pod's node): a container's own
	// host name is its id. The runner records it as env.host.
	EnvHostName = "XRUN_HOST_NAME"
	// EnvWorkerUser ("uid:gid") makes the runner, started as root, run the
	// experiment's code as that user (runner/sandbox).
	EnvWorkerUser = "XRUN_WORKER_USER"
	// EnvCacheVolume names the volume at CacheDir (on a cluster: the
	// node's directory), for the record (results.json env.cache); unset
	// when the job has none.
	EnvCacheVolume = "XRUN_CACHE_VOLUME"
	// EnvCacheLimit is the most bytes the compile caches at CacheDir may
	// hold as a job starts (a number of bytes; 0: no limit): the runner
	// removes the least recently used entries over it first. Unset, a
	// job with a cache volume gets DefaultCacheLimit.
	EnvCacheLimit = "XRUN_CACHE_LIMIT"
	// EnvStandby (a number of seconds) starts the runner as a standby:
	// it finds Python, writes the harness and starts the zygote before
	// any job exists, then waits at most that long for StandbyGoFile and
	// runs the job it names. Without one it exits, having run nothing.
	EnvStandby = "XRUN_STANDBY"
)

// StandbyGoFile is what the client copies into a standby container, after
// the experiment's code and the POST token, to hand it a job: a JSON
// object {"env": {NAME: VALUE}} with the variables that differ from one
// submit to the next (EnvCodeHash, EnvGitCommit, EnvGitDirty, EnvRetune), which the
// runner sets before it reads its options. Root's alone, like the token.
const StandbyGoFile = RunnerDir + "/go.json"

// LabelStandby marks a standby container (EnvStandby) on a Docker host;
// its value is the key of the settings it was made for. A standby no job
// has claimed has a name that ends in StandbySuffix; the claim renames it
// to its job's name with ClaimedSuffix, and the hand-over to its job's
// name, from when on it is that job's container. A claimed standby whose
// client died before the hand-over stays claimed, runs nothing and exits
// when its wait ends.
const (
	LabelStandby  = "dev.xrun.standby"
	StandbySuffix = "-standby"
	ClaimedSuffix = "-claimed"
)

// WaitingStandby says a container of that name and labels is a standby
// no job has claimed: nobody's job, holding no GPU.
func WaitingStandby(name string, labels map[string]string) bool {
	return labels[LabelStandby] != "" && strings.HasSuffix(name, StandbySuffix)
}

// IdleStandby says a container of that name and labels is a standby that
// runs no job: waiting, or claimed and not (yet) handed its job.
func IdleStandby(name string, labels map[string]string) bool {
	return WaitingStandby(name, labels) || labels[LabelStandby] != "" && strings.HasSuffix(name, ClaimedSuffix)
}

// StandbyEnv are the variables StandbyGoFile may set.
var StandbyEnv = []string{EnvCodeHash, EnvGitCommit, EnvGitDirty, EnvRetune}

// LocalRunnerArg, as the xrun binary's first argument, makes it the
// runner of a job of xrun run --local (runner/run.LocalMain; the client
// writes the command line, client/backend/local.Command).
const LocalRunnerArg = "__run-local"

// ProbeJob is the LabelJob value of the throwaway containers that probe a
// host's GPU support: they are nobody's job.
const ProbeJob = "gpu-probe"

// Labels on job containers and images. The job label finds a job's
// container on any host; the timeout label lets any client enforce the
// timeout of a detached job.
const (
	LabelJob           = "dev.xrun.job"
	LabelExperiment    = "dev.xrun.experiment"
	LabelSpecHash      = "dev.xrun.spec-hash"
	LabelGPUs          = "dev.xrun.gpus"
	LabelClientVersion = "dev.xrun.client-version"
	LabelImage         = "dev.xrun.image"
	LabelMode          = "dev.xrun.mode"
	LabelTimeout       = "dev.xrun.timeout"
	// LabelOwner is the user who submitted the job (on a shared host, rm
	// and cancel of another user's job need --force).
	LabelOwner = "dev.xrun.owner"
	// LabelCodeHash (on job containers) is the content hash of the
	// experiment's code copied into it.
	LabelCodeHash = "dev.xrun.code-hash"
	// LabelBaseID (on job images) is the id of the base image they were built on.
	LabelBaseID = "dev.xrun.base-id"
	// LabelCache marks a compile-cache volume; LabelGPUModel is the GPU
	// model its entries were built for ("cpu" for CPU jobs).
	LabelCache    = "dev.xrun.cache"
	LabelGPUModel = "dev.xrun.gpu-model"
	// LabelCacheTrust is the trust level of the jobs that write a
	// compile-cache volume: CacheTrustJobUser (the sandboxed job user) or
	// CacheTrustRoot (submit --root); the two never share a volume.
	LabelCacheTrust   = "dev.xrun.cache-trust"
	CacheTrustJobUser = "job-user"
	CacheTrustRoot    = "root"
)

// DefaultCacheLimit is the compile caches' size limit (EnvCacheLimit)
// where the job does not give one: 10 GiB, some thousands of Triton and
// Inductor kernels, or a few CUDA extension builds.
const DefaultCacheLimit int64 = 10 << 30
