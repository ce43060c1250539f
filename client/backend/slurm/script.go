package slurm

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Settings are a job's Slurm options, as its record keeps them for a rerun.
type Settings = store.SlurmSettings

// DefaultPendingLimit is how long a job waits for a node by default.
const DefaultPendingLimit = 24 * time.Hour

// timeLimit is sbatch --time for a job of timeout, as minutes:seconds;
// "" for none. At the limit Slurm sends SIGTERM, and the runner writes
// its results before Slurm's KillWait ends.
func timeLimit(timeout time.Duration) string {
	if timeout <= 0 {
		return ""
	}
	secs := int(math.Ceil(timeout.Seconds()))
	return fmt.Sprintf("%d:%02d", secs/60, secs%60)
}

// gres is sbatch --gres for gpus of type kind ("" for a CPU job).
func gres(gpus *backend.GPUs, kind string) string {
	if gpus == nil || gpus.Count <= 0 {
		return ""
	}
	if kind != "" {
		return fmt.Sprintf("gpu:%s:%d", kind, gpus.Count)
	}
	return fmt.Sprintf("gpu:%d", gpus.Count)
}

// directives are the job script's #SBATCH options of s for spec in dir.
func directives(s Settings, spec backend.Spec, dir string) ([]string, error) {
	opts := [][2]string{
		{"job-name", spec.Name},
		{"output", dir + "/" + logFile},
		{"open-mode", "append"},
		{"chdir", dir},
		{"partition", s.Partition},
		{"account", s.Account},
		{"qos", s.QOS},
		{"constraint", s.Constraint},
		{"time", timeLimit(spec.Timeout)},
		{"gres", gres(spec.GPUs, spec.GPUType)},
	}
	if spec.MemoryBytes > 0 {
		opts = append(opts, [2]string{"mem", fmt.Sprintf("%dM", (spec.MemoryBytes+1<<20-1)>>20)})
	}
	var lines []string
	for _, o := range opts {
		if o[1] == "" {
			continue
		}
		// sbatch splits a directive at white space and reads quotes.
		if strings.ContainsAny(o[1], " \t\n\r\"'\\") {
			return nil, fmt.Errorf("--%s %q: a Slurm option must not hold white space, quotes or backslashes", o[0], o[1])
		}
		lines = append(lines, fmt.Sprintf("#SBATCH --%s=%s", o[0], o[1]))
	}
	return lines, nil
}

// jobScript is the batch script of the job that runs runner (a path on
// the cluster) in dir with env: it records when it started and the
// runner's exit code, and passes a SIGTERM (scancel, the time limit) on
// to the runner, which writes cancelled results before it exits.
func jobScript(directives []string, dir, runner string, env []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, d := range directives {
		b.WriteString(d + "\n")
	}
	fmt.Fprintf(&b, "d=%s\n", quote(dir))
	b.WriteString(`date +%s > "$d/` + startedFile + `"
rm -f "$d/` + exitFile + `"
echo "xrun: Slurm job ${SLURM_JOB_ID:-?} on $(hostname), GPUs ${CUDA_VISIBLE_DEVICES:-none}" >&2
`)
	env = append([]string(nil), env...)
	sort.Strings(env)
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) {
			continue
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, quote(v))
	}
	fmt.Fprintf(&b, "%s --experiment \"$d/exp\" --out \"$d/out\" &\n", quote(runner))
	// A signal cuts the wait short: the runner's own exit code comes from
	// waiting again, as many times as a signal came (the shell keeps it
	// after the runner exited).
	b.WriteString(`pid=$!
sig=
trap 'sig=1; kill -TERM $pid 2>/dev/null' TERM INT
rc=0
wait $pid || rc=$?
while [ -n "$sig" ]; do sig=; rc=0; wait $pid || rc=$?; done
echo $rc > "$d/` + exitFile + `.tmp" && mv -f "$d/` + exitFile + `.tmp" "$d/` + exitFile + `"
exit $rc
`)
	return b.String()
}

func validName(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
