// Package slurm runs jobs on a Slurm cluster (xrun submit --slurm): the
// backend.Backend whose job is a batch job that runs the static runner on
// a node, without a container, with the cluster's own Python (docs/slurm.md).
// The Slurm commands run on this machine, or on a login node over ssh.
//
// Each job is a directory on the cluster's shared file system, under Dir
// (default ~/.xrun/slurm), named by the job's id:
//
//	exp/       the experiment's code
//	job.sh     the batch script (its #SBATCH lines are the job's options)
//	job.json   the job as List describes it
//	slurm-id   the Slurm job id, once sbatch took it
//	started    when the batch script started (seconds since 1970)
//	log        the runner's stdout and stderr (sbatch --output)
//	out/       the runner's output directory
//	exit       the runner's exit code, once it has exited
//
// The runner binary is kept once per version in Dir/bin.
package slurm

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Schemes of a Slurm job's Host: slurm://LOGIN when the commands run on
// the login node over ssh, slurm+local://HOSTNAME when they run on the
// machine called HOSTNAME.
const (
	Scheme      = "slurm://"
	LocalScheme = "slurm+local://"
)

// IsRef reports whether a job record's Host names a Slurm cluster.
func IsRef(host string) bool {
	return strings.HasPrefix(host, Scheme) || strings.HasPrefix(host, LocalScheme)
}

// Ref is the Host of the jobs of the cluster reached through login ("":
// this machine's Slurm commands).
func Ref(login string) string {
	if login == "" {
		return LocalScheme + backend.ThisHost()
	}
	return Scheme + strings.TrimPrefix(login, "ssh://")
}

// ParseRef returns the login node of ref, or, for a cluster whose commands
// run on a machine (slurm+local://), "" and that machine's name.
func ParseRef(ref string) (login, machine string) {
	if m, ok := strings.CutPrefix(ref, LocalScheme); ok {
		return "", m
	}
	return strings.TrimPrefix(ref, Scheme), ""
}

// Files of a job directory.
const (
	scriptFile  = "job.sh"
	recordFile  = "job.json"
	idFile      = "slurm-id"
	startedFile = "started"
	logFile     = "log"
	outDir      = "out"
	exitFile    = "exit"
)

// Capabilities is what a Slurm job lacks with its runtime (Runtime*):
// it runs as the user, on what Slurm allocates, with its node's network,
// and without a container unless the runtime is docker.
func Capabilities(runtime string) backend.Capabilities {
	c := backend.Capabilities{Name: "Slurm", Flag: Flag, Lacks: map[backend.Feature]string{
		backend.GPUsByID:  "Slurm picks the GPUs; give a count",
		backend.NoNetwork: "a Slurm job has its node's network",
		backend.RunAsRoot: "a Slurm job runs as your user on the cluster",
	}, StoppedBy: "scancel, a node that went down, or a preemption"}
	if runtime != RuntimeDocker {
		c.Lacks[backend.BaseImage] = "the job runs without a container, with the cluster's Python (--python), unless --slurm-runtime docker"
	}
	return c
}

// Backend is one Slurm cluster.
type Backend struct {
	Shell Shell
	// Settings are where the job directories are (Dir, also for List and
	// the other commands) and the sbatch options of the jobs Create makes.
	Settings Settings
	// Poll is how often Wait, Logs and Stop ask again (0: 2 s).
	Poll time.Duration
	// Log gets what a submit should know and goes on with: a job that
	// waits for drained nodes.
	Log io.Writer

	ref string
}

// New is the backend of the cluster reached through login ("": the
// Slurm commands of this machine).
func New(login string) *Backend {
	b := &Backend{ref: Ref(login)}
	if login == "" {
		b.Shell = LocalShell{}
	} else {
		b.Shell = SSHShell{Login: login}
	}
	return b
}

func (b *Backend) Where() string { return b.ref }

// Handle names the Slurm job, or its directory before sbatch took it.
func (b *Backend) Handle(j *store.Job) string {
	if id := slurmID(j); id != "" {
		return "Slurm job " + id
	}
	return "Slurm job directory " + j.ContainerName
}

// Describe names what runs job j, for xrun status: a batch job and its
// directory on the cluster, not a container.
func Describe(j *store.Job) (rows [][2]string, state string) {
	if id := slurmID(j); id != "" {
		rows = append(rows, [2]string{"slurm job", id})
	}
	return append(rows, [2]string{"directory", j.ContainerName}), "slurm state"
}

func (b *Backend) poll() time.Duration {
	if b.Poll > 0 {
		return b.Poll
	}
	return 2 * time.Second
}

// slurmID is j's Slurm job id, "" before sbatch took it (ContainerID is
// then the job's directory).
func slurmID(j *store.Job) string {
	id := j.ContainerID
	if id == "" || strings.Contains(id, "/") {
		return ""
	}
	return id
}

// dir is job j's directory on the cluster.
func dir(j *store.Job) (string, error) {
	d := j.ContainerName
	if !path.IsAbs(d) || path.Base(d) != j.ID || path.Clean(d) != d {
		return "", fmt.Errorf("job %s has no directory on the cluster recorded (%q): %w", j.ID, d, backend.ErrNotFound)
	}
	return d, nil
}

// rootExpr is Dir as a sh word.
func (b *Backend) rootExpr() string {
	switch d := b.Settings.Dir; {
	case d == "":
		return `"$HOME/.xrun/slurm"`
	case d == "~":
		return `"$HOME"`
	case strings.HasPrefix(d, "~/"):
		return `"$HOME"/` + quote(d[2:])
	default:
		return quote(d)
	}
}

// runnerName is the runner's path in Dir/bin, one per content:
// HASH/xrun-runner (the xrun binary is the runner by that name).
func runnerName(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the runner for the cluster: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("the runner for the cluster: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16] + "/xrun-runner", nil
}

// Create checks with sbatch --test-only that the cluster can run spec,
// then makes the job's directory: the runner (once per version), the
// code, the batch script and the record. It submits nothing (Start does).
func (b *Backend) Create(ctx context.Context, j *store.Job, spec backend.Spec) error {
	if err := Capabilities(b.Settings.Runtime).Refuse(spec.Asks()...); err != nil {
		return err
	}
	docker := b.Settings.Runtime == RuntimeDocker
	if spec.Code == nil || !docker && spec.Runner == "" || docker && (spec.Image == "" || spec.Push == nil || spec.Push.Builder == nil) {
		return errors.New("a Slurm job needs its code and the runner for the cluster (with the docker runtime: its image, and the Docker host that built it)")
	}
	name := "none"
	if !docker {
		var err error
		if name, err = runnerName(spec.Runner); err != nil {
			return err
		}
	}
	// The directory's name is known only once the cluster resolved Dir.
	present := fmt.Sprintf("test -x bin/%s", name)
	if docker {
		// Touched when found: its time says when a submit last needed
		// it (xrun prune --older-than); when it is not there, the blobs
		// that are (images.go) need not be sent again.
		present = fmt.Sprintf("test -f images/%s/manifest.json && touch images/%s", imageFile(spec.Image), imageFile(spec.Image))
	}
	out, err := b.Shell.Run(ctx, fmt.Sprintf(`r=%s
mkdir -p "$r/bin" "$r/images/%s" && chmod 0700 "$r" && cd "$r" && pwd && if %s; then echo have; else echo need; ls images/%s; fi`,
		b.rootExpr(), blobsDir, present, blobsDir), nil)
	if err != nil {
		return fmt.Errorf("make the job directories on %s: %w", b.Shell.Where(), err)
	}
	lines := strings.Fields(string(out))
	if len(lines) < 2 || !path.IsAbs(lines[0]) {
		return fmt.Errorf("make the job directories on %s: unexpected answer %q", b.Shell.Where(), out)
	}
	root, have := lines[0], lines[1] == "have"
	blobs := map[string]bool{}
	for _, name := range lines[2:] {
		blobs[name] = true
	}
	if strings.ContainsAny(root, " \t\"'\\") {
		return fmt.Errorf("the job directory %s holds white space or quotes, which sbatch's options cannot: choose another with --slurm-dir", root)
	}
	d := root + "/" + j.ID
	var nodes *partitionNodes // read once, when needed
	if spec.GPUs != nil && spec.GPUs.Count > 0 && spec.GPUType != "" {
		// gpu_type ignores case; sbatch's --gres does not.
		nodes = b.nodes(ctx)
		spec.GPUType = gresType(nodes.list, spec.GPUType)
	}
	opts, err := directives(b.Settings, spec, d)
	if err != nil {
		return contract.BadInput(err)
	}
	// The node names itself in the script (jobScript); a bare job has no
	// image, and the cluster no cache volume.
	env := append(slices.Clone(spec.Env), spec.WhereEnv(spec.Image, "", "")...)
	if spec.PostToken != "" && !docker {
		// The script is its owner's alone (0700, in a 0700 directory);
		// the docker runtime copies the token into the container instead
		// (dockerScript).
		env = append(env, contract.EnvPostToken+"="+spec.PostToken)
	}
	if b.Settings.Python != "" {
		env = append(env, contract.EnvPython+"="+b.Settings.Python)
	}
	script := jobScript(opts, d, root+"/bin/"+name, env)
	if docker {
		if script, err = dockerScript(opts, d, root+"/images/"+imageFile(spec.Image), spec.Image, j.ID, spec, env); err != nil {
			return err
		}
	}
	if err := b.testOnly(ctx, script, spec, nodes); err != nil {
		return err
	}
	if err := b.checkTimeLimit(ctx, spec.Timeout); err != nil {
		return err
	}
	j.ContainerID, j.ContainerName = d, d
	if err := b.upload(ctx, j, spec, d, root, name, have, blobs, script); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), backend.CleanupTimeout)
		defer cancel()
		b.Shell.Run(cctx, "rm -rf "+quote(d), nil)
		j.ContainerID, j.ContainerName = "", ""
		return err
	}
	return nil
}

// testOnly asks sbatch whether the cluster could ever run script: a
// partition without such GPUs, a time limit past its maximum or an
// unknown account is a refusal in Slurm's words, followed by what no node
// of the partition has (Slurm's words do not say). sbatch --test-only
// also refuses a job whose nodes are drained, down or not responding,
// which sbatch itself queues until one is back (ReqNodeNotAvail): such a
// job goes on, and Log says what it waits for. nodes is the partition's
// nodes if they were read already.
func (b *Backend) testOnly(ctx context.Context, script string, spec backend.Spec, nodes *partitionNodes) error {
	_, err := b.Shell.Run(ctx, "sbatch --test-only", strings.NewReader(script))
	var ee *ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.Code == 127:
		return fmt.Errorf("sbatch is not on %s's PATH: is it a Slurm login node? (%s)", b.Shell.Where(), ee.Stderr)
	case errors.As(err, &ee):
		where := "the Slurm cluster"
		if b.Settings.Partition != "" {
			where = "Slurm partition " + b.Settings.Partition
		}
		if bad := badOption(ee.Stderr); bad != "" {
			return contract.BadInput(fmt.Errorf("sbatch on %s does not take the job's options: %s (check --sbatch and the config's slurm: sbatch:)", b.Shell.Where(), bad))
		}
		reason := sbatchReason(ee.Stderr)
		if nodes == nil {
			nodes = b.nodes(ctx)
		}
		r := request{gpuType: spec.GPUType, memMiB: (spec.MemoryBytes + 1<<20 - 1) >> 20, constraint: b.Settings.Constraint}
		if spec.GPUs != nil {
			r.gpus = spec.GPUs.Count
		}
		if strings.Contains(reason, "node configuration is not available") {
			if line := waitLine(nodes.name, nodes.list, r); line != "" {
				if b.Log != nil {
					fmt.Fprintln(b.Log, line)
				}
				return nil
			}
		}
		if nodes.name != "" {
			where = "Slurm partition " + nodes.name
		}
		if lack := missing(nodes.list, r); lack != "" {
			reason += ": " + lack + " (ask for less, or pick another --partition)"
		}
		return &backend.RefusedError{Where: where, Reason: reason}
	}
	return err
}

// partitionNodes are the nodes of the job's partition and its name; both
// empty when sinfo did not answer.
type partitionNodes struct {
	name string
	list []node
}

// nodes asks sinfo for the nodes of the job's partition; when sinfo does
// not answer, the checks are sbatch's alone.
func (b *Backend) nodes(ctx context.Context) *partitionNodes {
	out, err := b.Shell.Run(ctx, sinfoNodes, nil)
	if err != nil {
		return &partitionNodes{}
	}
	name, list := parseNodes(string(out), b.Settings.Partition)
	return &partitionNodes{name: name, list: list}
}

// checkTimeLimit refuses a timeout past the partition's time limit:
// sbatch takes such a job unless the cluster enforces partition limits
// at submission, and it would then wait for good (PartitionTimeLimit).
func (b *Backend) checkTimeLimit(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	out, err := b.Shell.Run(ctx, "sinfo -h -o '%P %l'", nil)
	if err != nil {
		return nil // sbatch's own check stands
	}
	part, limit, ok := partitionLimit(string(out), b.Settings.Partition)
	if !ok || limit <= 0 || timeout <= limit {
		return nil
	}
	return &backend.RefusedError{Where: "Slurm partition " + part,
		Reason: fmt.Sprintf("its time limit is %s and the job's timeout %s: lower resources.timeout (or --timeout), or pick another --partition", limit, timeout)}
}

// partitionLimit reads sinfo's "PARTITION TIMELIMIT" lines for partition
// ("": the default one, marked *): its name and time limit (0: none).
func partitionLimit(sinfo, partition string) (string, time.Duration, bool) {
	for _, line := range strings.Split(sinfo, "\n") {
		name, limit, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		def := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		if partition == name || partition == "" && def {
			d, ok := parseSlurmTime(strings.TrimSpace(limit))
			return name, d, ok
		}
	}
	return "", 0, false
}

// parseSlurmTime reads a Slurm time limit: [days-]hours:minutes:seconds,
// minutes:seconds, minutes, or infinite (0).
func parseSlurmTime(s string) (time.Duration, bool) {
	if s == "infinite" || s == "UNLIMITED" {
		return 0, true
	}
	var days int
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, false
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || len(parts) > 3 {
			return 0, false
		}
		n[i] = v
	}
	var d time.Duration
	switch len(parts) {
	case 1: // minutes, or hours with days
		if days > 0 {
			d = time.Duration(n[0]) * time.Hour
		} else {
			d = time.Duration(n[0]) * time.Minute
		}
	case 2: // minutes:seconds, or hours:minutes with days
		if days > 0 {
			d = time.Duration(n[0])*time.Hour + time.Duration(n[1])*time.Minute
		} else {
			d = time.Duration(n[0])*time.Minute + time.Duration(n[1])*time.Second
		}
	case 3:
		d = time.Duration(n[0])*time.Hour + time.Duration(n[1])*time.Minute + time.Duration(n[2])*time.Second
	}
	return d + time.Duration(days)*24*time.Hour, true
}

// sbatchReason is sbatch's error without its prefixes.
// badOption is sbatch's line on an option it does not know or whose
// value it cannot read, or "" when stderr has none.
func badOption(stderr string) string {
	for _, mark := range []string{"unrecognized option", "invalid option", "requires an argument", "Invalid --"} {
		for _, line := range strings.Split(stderr, "\n") {
			if strings.Contains(line, mark) {
				return strings.TrimPrefix(strings.TrimSpace(line), "sbatch: error: ")
			}
		}
	}
	return ""
}

func sbatchReason(stderr string) string {
	s := strings.TrimSpace(stderr)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimPrefix(s, "sbatch: error: ")
	s = strings.TrimPrefix(s, "Batch job submission failed: ")
	s = strings.TrimPrefix(s, "allocation failure: ") // sbatch --test-only
	if s == "" {
		return "sbatch --test-only refused it"
	}
	return s
}

func (b *Backend) upload(ctx context.Context, j *store.Job, spec backend.Spec, d, root, name string, have bool, blobs map[string]bool, script string) error {
	where := b.Shell.Where()
	if !have && b.Settings.Runtime == RuntimeDocker {
		rc, err := spec.Push.Builder.SaveImage(ctx, spec.Image)
		if err != nil {
			return err
		}
		defer rc.Close()
		progress := newCopyProgress(rc, b.Log, fmt.Sprintf("copying the job's image %s to %s", spec.Image, where))
		kept, err := b.sendImage(ctx, progress, root, spec.Image, blobs)
		if err != nil {
			return fmt.Errorf("copy the job's image %s to %s: %w", spec.Image, where, err)
		}
		progress.done(kept)
	} else if !have {
		f, err := os.Open(spec.Runner)
		if err != nil {
			return fmt.Errorf("the runner for the cluster: %w", err)
		}
		defer f.Close()
		bin := quote(root + "/bin/" + name)
		if _, err := b.Shell.Run(ctx, fmt.Sprintf(`mkdir -p "$(dirname %s)" && t=%s.$$ && cat > "$t" && chmod 755 "$t" && mv -f "$t" %s`, bin, bin, bin), f); err != nil {
			return fmt.Errorf("copy the runner to %s: %w", where, err)
		}
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(spec.Code.WriteCode(pw)) }()
	_, err := b.Shell.Run(ctx, fmt.Sprintf("mkdir -m 0700 -p %s && tar -xf - -C %s", quote(d), quote(d)), pr)
	pr.Close()
	if err != nil {
		return fmt.Errorf("copy the experiment's code to %s: %w", where, err)
	}
	rec := *j
	rec.Host = b.ref
	record, err := json.Marshal(&rec)
	if err != nil {
		return err
	}
	var files bytes.Buffer
	tw := tar.NewWriter(&files)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{scriptFile, 0o700, []byte(script)}, {recordFile, 0o644, record}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Now(), Typeflag: tar.TypeReg})
		tw.Write(f.data)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := b.Shell.Run(ctx, "tar -xf - -C "+quote(d), &files); err != nil {
		return fmt.Errorf("write the job's script to %s: %w", where, err)
	}
	return nil
}

// Start submits the job's script with sbatch. A job with a timeout has a
// deadline in its script: Slurm drops it when it cannot start within the
// pending limit.
func (b *Backend) Start(ctx context.Context, j *store.Job) error {
	d, err := dir(j)
	if err != nil {
		return err
	}
	args := "--parsable"
	out, err := b.Shell.Run(ctx, fmt.Sprintf(`cd %s && sbatch %s %s > %s.tmp && mv -f %s.tmp %s && cat %s`,
		quote(d), args, scriptFile, idFile, idFile, idFile, idFile), nil)
	if err != nil {
		return fmt.Errorf("sbatch on %s: %w", b.Shell.Where(), err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return fmt.Errorf("sbatch on %s answered %q, not a job id", b.Shell.Where(), out)
	}
	j.ContainerID = id
	return nil
}

// Arch is the GOARCH of the machine the Slurm commands run on, taken to
// be the nodes' (docs/slurm.md).
func (b *Backend) Arch(ctx context.Context) (string, error) {
	out, err := b.Shell.Run(ctx, "uname -m", nil)
	if err != nil {
		return "", fmt.Errorf("reach the Slurm cluster on %s: %w", b.Shell.Where(), err)
	}
	switch m := strings.TrimSpace(string(out)); m {
	case "x86_64", "amd64":
		return "amd64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	case "ppc64le":
		return "ppc64le", nil
	default:
		return "", fmt.Errorf("the Slurm cluster on %s is a %s machine, which xrun has no runner for", b.Shell.Where(), m)
	}
}
