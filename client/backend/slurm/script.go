package slurm

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/contract"
)

// Settings are a job's Slurm options, in sbatch's own names where sbatch
// has them, as its record keeps them for a rerun (store.SubmitArgs.Place).
type Settings struct {
	// Dir holds the job directories on the cluster's shared file system
	// ("": ~/.xrun/slurm; a leading ~/ is the home directory there).
	Dir        string `json:"dir,omitempty"`
	Partition  string `json:"partition,omitempty"`
	Account    string `json:"account,omitempty"`
	QOS        string `json:"qos,omitempty"`
	Constraint string `json:"constraint,omitempty"`
	// Python is the harness's interpreter on the nodes (a module's or a
	// venv's python3); "": the runner picks the first python3 with numpy.
	Python string `json:"python,omitempty"`
	// PendingLimit is a record's --pending-limit from before the record
	// kept it with the other places' (store.SubmitArgs.PendingLimit): a
	// rerun takes it from here. A job's own is its spec's.
	PendingLimit time.Duration `json:"pending_limit,omitempty"`
	// Sbatch are more sbatch options, each written to the job's script as
	// one #SBATCH line after xrun's own (--exclusive, --nodelist=n1).
	Sbatch []string `json:"sbatch,omitempty"`
	// Runtime runs the job on the node: RuntimeBare ("", the runner as
	// the user's process) or RuntimeDocker (the job's image, in the
	// node's Docker).
	Runtime string `json:"runtime,omitempty"`
}

// Slurm runtimes (Settings.Runtime).
const (
	RuntimeBare   = "bare"
	RuntimeDocker = "docker"
)

// Check refuses settings that contradict each other.
func (s Settings) Check() error {
	switch s.Runtime {
	case "", RuntimeBare, RuntimeDocker:
	default:
		return contract.Usagef("--slurm-runtime %q: give bare or docker", s.Runtime)
	}
	if s.Python != "" && s.Runtime == RuntimeDocker {
		return contract.Usagef("--python does not apply with --slurm-runtime docker: the job's image has its Python")
	}
	return nil
}

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

// deadline is sbatch --deadline for a job of timeout that may wait
// pending for a node: Slurm drops it when it cannot start and end in
// time. "" for a job without a timeout, which waits as long as it takes.
func deadline(timeout, pending time.Duration) string {
	if timeout <= 0 {
		return ""
	}
	if pending <= 0 {
		pending = DefaultPendingLimit
	}
	return fmt.Sprintf("now+%d", int((pending + timeout).Seconds()))
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
		{"deadline", deadline(spec.Timeout, spec.PendingLimit)},
		{"gres", gres(spec.GPUs, spec.GPUType)},
	}
	if spec.MemoryBytes > 0 {
		opts = append(opts, [2]string{"mem", fmt.Sprintf("%dM", (spec.MemoryBytes+1<<20-1)>>20)})
	}
	if spec.CPUs > 0 {
		// The job's own CPUs: the reference, the candidate and the
		// runner's worker do not share the one CPU Slurm gives by default.
		opts = append(opts, [2]string{"cpus-per-task", fmt.Sprint(spec.CPUs)})
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
	// The user's own options come last: the directives above are xrun's,
	// and what an extra option could change of them is refused.
	for _, o := range s.Sbatch {
		if err := checkExtra(o); err != nil {
			return nil, err
		}
		lines = append(lines, "#SBATCH "+o)
	}
	return lines, nil
}

// ownOptions are the sbatch options that xrun writes itself, by long name
// (and the short names that mean them), each with what sets it instead.
var ownOptions = map[string]string{
	"job-name": "the job's name", "output": "the job's log", "error": "the job's log", "input": "the job's script",
	"open-mode": "the job's log", "chdir": "the job's directory", "wrap": "the job's script", "array": "one job per submit",
	"partition": "give --partition", "account": "give --account", "qos": "give --qos", "constraint": "give --constraint",
	"time": "give --timeout or resources.timeout", "deadline": "give --pending-limit",
	"gres": "give resources.gpus and gpu_type", "gpus": "give resources.gpus", "gpus-per-node": "give resources.gpus", "gpus-per-task": "give resources.gpus",
	"mem": "give resources.memory", "mem-per-cpu": "give resources.memory", "mem-per-gpu": "give resources.memory",
	"cpus-per-task": "give --cpus or resources.cpus", "test-only": "xrun asks it itself", "parsable": "xrun reads sbatch's answer", "wait": "xrun waits itself",
}

var shortOptions = map[byte]string{'J': "job-name", 'o': "output", 'e': "error", 'i': "input", 'D': "chdir", 'a': "array", 'p': "partition",
	'A': "account", 'q': "qos", 'C': "constraint", 't': "time", 'G': "gpus", 'c': "cpus-per-task", 'W': "wait"}

// checkExtra checks one of the user's extra sbatch options (Settings.Sbatch):
// one option, written as sbatch reads it in a #SBATCH line, that leaves
// xrun's own options alone.
func checkExtra(o string) error {
	if strings.ContainsAny(o, " \t\n\r\"'\\") {
		return fmt.Errorf("--sbatch %q: give one option, as --exclusive or --nodelist=n1,n2, without white space, quotes or backslashes", o)
	}
	var name string
	switch {
	case strings.HasPrefix(o, "--") && len(o) > 2:
		name, _, _ = strings.Cut(o[2:], "=")
	case len(o) >= 2 && o[0] == '-' && o[1] != '-':
		name = shortOptions[o[1]]
	default:
		return fmt.Errorf("--sbatch %q: give an sbatch option, as --exclusive or --nodelist=n1,n2", o)
	}
	if why, ok := ownOptions[name]; ok {
		return fmt.Errorf("--sbatch %s: xrun sets --%s itself (%s)", o, name, why)
	}
	return nil
}

// jobScript is the batch script of the job that runs runner (a path on
// the cluster) in dir with env: it records when it started and the
// runner's exit code, and passes a SIGTERM (scancel, the time limit) on
// to the runner, which writes cancelled results before it exits.
func jobScript(directives []string, dir, runner string, env []string) string {
	var b strings.Builder
	scriptHead(&b, directives, dir, "")
	exportEnv(&b, env, "")
	fmt.Fprintf(&b, "%s --experiment \"$d/exp\" --out \"$d/out\" &\n", quote(runner))
	waitFor(&b, "kill -TERM $pid 2>/dev/null")
	return b.String()
}

// scriptHead starts a batch script: its #SBATCH lines, the job's
// directory as $d, when it started, and a line on where it runs (where
// added to it).
func scriptHead(b *strings.Builder, directives []string, dir, where string) {
	b.WriteString("#!/bin/sh\n")
	for _, d := range directives {
		b.WriteString(d + "\n")
	}
	fmt.Fprintf(b, "d=%s\n", quote(dir))
	b.WriteString(`date +%s > "$d/` + startedFile + `"
rm -f "$d/` + exitFile + `"
echo "xrun: Slurm job ${SLURM_JOB_ID:-?} on $(hostname), GPUs ${CUDA_VISIBLE_DEVICES:-none}` + where + `" >&2
`)
}

// exportEnv exports env's variables (sorted; names that are not a shell's
// left out, and skip) and returns their names.
func exportEnv(b *strings.Builder, env []string, skip string) []string {
	env = append([]string(nil), env...)
	sort.Strings(env)
	var names []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) || k == skip {
			continue
		}
		fmt.Fprintf(b, "export %s=%s\n", k, quote(v))
		names = append(names, k)
	}
	return names
}

// waitFor ends a batch script: it waits for the job it started last (in
// the background), running stop on a SIGTERM or SIGINT, and records the
// job's own exit code. A signal cuts the wait short: the exit code comes
// from waiting again, as many times as a signal came (the shell keeps it
// after the job exited).
func waitFor(b *strings.Builder, stop string) {
	b.WriteString(`pid=$!
sig=
trap 'sig=1; ` + stop + `' TERM INT
rc=0
wait $pid || rc=$?
while [ -n "$sig" ]; do sig=; rc=0; wait $pid || rc=$?; done
echo $rc > "$d/` + exitFile + `.tmp" && mv -f "$d/` + exitFile + `.tmp" "$d/` + exitFile + `"
exit $rc
`)
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

// imageFile is the name of an image's archive on the cluster: its
// reference (xrun/NAME:CONTENT-HASH, one per content) with what a file
// name cannot hold replaced.
func imageFile(ref string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == '@' {
			return '_'
		}
		return r
	}, ref)
}

// dockerScript is the batch script of a job that runs in the node's
// Docker (the docker runtime): it loads the job's image from imageDir
// (images.go) unless the node has it, and runs it as a Docker host runs a job's
// container: the runner as root with only the capabilities it needs
// (contract.RunnerCaps), the experiment's code as the job user, no new
// privileges, the job's limits; the code and the output directory are the
// job directory's, bind-mounted. The environment is passed by name, so
// that no value is on a command line. The container is created, given the
// POST token as contract.PostTokenFile (a tar in the script, which
// docker cp unpacks: in no command line, and not in the container's
// configuration, which docker inspect shows any user of the node's
// Docker), then started attached. A SIGTERM (scancel, the time limit)
// stops the container gracefully, and the runner writes cancelled
// results before it exits.
func dockerScript(directives []string, dir, imageDir, image, jobID string, spec backend.Spec, env []string) (string, error) {
	var b strings.Builder
	scriptHead(&b, directives, dir, ", in Docker")
	fmt.Fprintf(&b, "image=%s\nname=%s\n", quote(image), quote("xrun-slurm-"+jobID))
	b.WriteString(loadImage(imageDir))
	b.WriteString(`mkdir -p "$d/out"` + "\n")
	// The runner names the machine it ran on after the node, not the
	// Docker host that built the image.
	b.WriteString(`export ` + contract.EnvHostName + `="$(hostname)"` + "\n")
	names := append([]string{contract.EnvHostName}, exportEnv(&b, env, contract.EnvHostName)...)
	args := []string{"docker", "create", "--rm", "--name", `"$name"`, "--user", "0:0", "--cap-drop", "ALL"}
	for _, c := range contract.RunnerCaps {
		args = append(args, "--cap-add", c)
	}
	args = append(args, "--security-opt", "no-new-privileges", "--label", contract.LabelJob+"="+jobID)
	if spec.PidsLimit > 0 {
		args = append(args, "--pids-limit", fmt.Sprint(spec.PidsLimit))
	}
	if spec.MemoryBytes > 0 {
		args = append(args, "--memory", fmt.Sprintf("%db", spec.MemoryBytes))
	}
	if spec.ShmBytes > 0 {
		args = append(args, "--shm-size", fmt.Sprintf("%db", spec.ShmBytes))
	}
	for _, k := range names {
		args = append(args, "-e", k)
	}
	args = append(args, "-v", `"$d/exp:`+contract.ExperimentDir+`:ro"`, "-v", `"$d/out:`+contract.OutDir+`"`)
	b.WriteString(strings.Join(args, " "))
	if spec.GPUs != nil {
		// The GPUs Slurm gave the job, by index, as the node numbers them.
		b.WriteString(` ${CUDA_VISIBLE_DEVICES:+--gpus "\"device=$CUDA_VISIBLE_DEVICES\""}`)
	}
	b.WriteString(` "$image" >/dev/null || { echo 4 > "$d/` + exitFile + `"; exit 4; }` + "\n")
	// Until it starts, a stop removes the container, which --rm would not.
	b.WriteString(`trap 'docker rm -f "$name" >/dev/null 2>&1; exit 143' TERM INT` + "\n")
	if spec.PostToken != "" {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		if err := backend.WriteSecret(tw, contract.PostTokenFile, []byte(spec.PostToken)); err != nil {
			return "", err
		}
		if err := tw.Close(); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "base64 -d <<'%s' | docker cp - \"$name\":/xrun >&2 || { docker rm -f \"$name\" >/dev/null 2>&1; echo 4 > \"$d/%s\"; exit 4; }\n", tarEnd, exitFile)
		enc := base64.StdEncoding.EncodeToString(tb.Bytes())
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\n")
			enc = enc[76:]
		}
		b.WriteString(enc + "\n" + tarEnd + "\n")
	}
	b.WriteString(`docker start -a "$name" &` + "\n")
	waitFor(&b, `docker stop -t 20 "$name" >/dev/null 2>&1 &`)
	return b.String(), nil
}

// tarEnd ends the here-document of the token's tar in a batch script: no
// line of base64 is it.
const tarEnd = "XRUN_TOKEN_TAR"
