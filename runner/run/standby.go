package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/runner/harness"
)

// A standby is a job's container started before its job: the client of a
// Docker host keeps one per experiment ready (docs/performance.md, "Warm
// starts"), so that the next submit finds Python found, the harness
// written and the zygote's imports done. It runs no experiment code
// before the job comes: the experiment's directory is empty until the
// client copies the code in, and the zygote imports with the experiment
// off its path. One standby serves one job, then ends with it.

// Warm is what a standby prepared before its job came, for newPool.
type Warm struct {
	// Argv runs the harness; Tmp holds it. Nil and "" when the standby
	// could not prepare them (err says why).
	Argv []string
	Tmp  string
	// zygote is closed once the zygote is started (z) or failed (err).
	zygote chan struct{}
	z      *harness.Zygote
	err    error
	took   time.Duration
	// ready is when the zygote was started or failed; came is when the
	// job came.
	ready, came time.Time
	// Waited is how long the standby waited for its job.
	Waited time.Duration
}

// standbyGoFile is contract.StandbyGoFile; tests move it.
var standbyGoFile = contract.StandbyGoFile

// standbyPoll is how often a standby looks for contract.StandbyGoFile.
const standbyPoll = 5 * time.Millisecond

// standbyIdle is how long a standby waits for its job, from
// contract.EnvStandby (seconds); 0 when the runner is no standby.
func standbyIdle() (time.Duration, error) {
	v := os.Getenv(contract.EnvStandby)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a number of seconds", contract.EnvStandby, v)
	}
	return time.Duration(n) * time.Second, nil
}

// prewarm finds Python, writes the harness and starts the zygote, as
// newPool would, with what is known before the job: the worker user, the
// mode, the output and cache directories. Failures are kept for the job's
// log; the job then does what prewarm could not, as without a standby.
func prewarm(ctx context.Context, o Options) *Warm {
	w := &Warm{zygote: make(chan struct{})}
	o, err := o.withDefaults()
	if err == nil {
		w.Argv, w.Tmp, err = prepareHarness(ctx, o.Python, o.Worker)
	}
	if err == nil && o.NoZygote {
		err = errors.New(contract.EnvZygote + "=off")
	}
	if err != nil {
		w.err = err
		close(w.zygote)
		return w
	}
	device := "cuda"
	if o.Mode == "cpu" {
		device = "cpu"
	}
	go func() {
		defer close(w.zygote)
		start := time.Now()
		if w.err = os.MkdirAll(filepath.Join(o.OutDir, "logs"), 0o755); w.err != nil {
			return
		}
		// The experiment's directory is empty: the zygote starts in /
		// and each worker moves into its own directory as it is forked.
		// The experiment's code is not here yet: the client, which has it,
		// says whether the zygote imports torch.compile's modules too.
		preload := os.Getenv(contract.EnvZygotePreload)
		w.z, w.err = startZygote(w.Argv, "/", zygoteEnv(workerEnv(o.ExperimentDir, nil, device, o.CacheDir), preload), o.Worker, o.OutDir)
		w.ready = time.Now()
		w.took = w.ready.Sub(start)
	}()
	return w
}

// close ends what w started, for a standby whose job never came.
func (w *Warm) close() {
	<-w.zygote
	if w.z != nil {
		w.z.Close()
	}
	if w.Tmp != "" {
		os.RemoveAll(w.Tmp)
	}
}

// standbyGo is contract.StandbyGoFile's content.
type standbyGo struct {
	Env map[string]string `json:"env"`
}

// errNoJob is a standby's wait that ended without a job.
var errNoJob = errors.New("no job came")

// waitForJob waits for contract.StandbyGoFile, at most idle, and sets
// the variables it names (contract.StandbyEnv); errNoJob when none came in time. A file being
// written reads as broken JSON until it is whole: it is read again. The
// file stays where it is: the daemon that copies it in sets its owner,
// mode and times after its content, and fails the client's copy when it
// is gone by then ("lchown /xrun/runner/go.json: no such file or
// directory"). It holds nothing secret, and a standby serves one job.
func waitForJob(ctx context.Context, path string, idle time.Duration) error {
	deadline := time.Now().Add(idle)
	tick := time.NewTicker(standbyPoll)
	defer tick.Stop()
	var lastErr error
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var g standbyGo
			if lastErr = json.Unmarshal(b, &g); lastErr == nil {
				for k, v := range g.Env {
					if !slices.Contains(contract.StandbyEnv, k) {
						return fmt.Errorf("standby: %s sets %s; only %s may differ between submits", path, k, strings.Join(contract.StandbyEnv, ", "))
					}
					os.Setenv(k, v)
				}
				return nil
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return fmt.Errorf("standby: %s unreadable after %s: %v", path, idle, lastErr)
			}
			return fmt.Errorf("standby: %w within %s", errNoJob, idle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// standby prepares the job's run and waits for the job (idle at most);
// the options that differ between submits (contract.StandbyEnv, the POST
// token) are then read again. It fails with errNoJob when no job came in time, with ctx's
// error when ctx ended first: the runner exits having run nothing.
func standby(ctx context.Context, o Options, idle time.Duration) (Options, error) {
	begin := time.Now()
	w := prewarm(ctx, o)
	if err := waitForJob(ctx, standbyGoFile, idle); err != nil {
		w.close()
		return o, err
	}
	os.Unsetenv(contract.EnvStandby)
	job := OptionsFromEnv()
	o.CodeHash, o.GitCommit, o.GitDirty, o.Retune, o.PostToken = job.CodeHash, job.GitCommit, job.GitDirty, job.Retune, job.PostToken
	w.came = time.Now()
	w.Waited = w.came.Sub(begin)
	o.Warm = w
	return o, nil
}

// useWarm gives p the harness and Python the standby prepared; false
// when it has neither (newPool then does both itself).
func (p *pool) useWarm(w *Warm) bool {
	if w.Argv == nil {
		p.logf("standby: waited %.1f s for this job and prepared nothing: %v", w.Waited.Seconds(), w.err)
		return false
	}
	p.argv, p.tmp = w.Argv, w.Tmp
	return true
}

// adoptZygote waits for the standby's zygote and makes it the pool's.
func (p *pool) adoptZygote(w *Warm) {
	<-w.zygote
	if w.z == nil {
		p.logf("standby: waited %.1f s for this job; workers start on their own: %v", w.Waited.Seconds(), w.err)
		return
	}
	p.logf("%s", w.readyLine())
	p.zygote = w.z
}

// readyLine says, for the job's log, how long the standby waited for the
// job and what its zygote imported, and how long the job then waited for
// those imports: a submit that comes sooner after the last job's end than
// they take waits for the rest.
func (w *Warm) readyLine() string {
	line := fmt.Sprintf("standby: waited %.1f s for this job; its zygote had imported %s in %.1f s", w.Waited.Seconds(), strings.Join(w.z.Loaded, ", "), w.took.Seconds())
	if late := w.ready.Sub(w.came); late >= 50*time.Millisecond {
		line += fmt.Sprintf(", the last %.1f s of them while the job waited", late.Seconds())
	}
	return line
}
