package slurm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Slurm's job states (squeue %T) that have not ended, by what they mean
// for the runner.
var (
	waiting = map[string]bool{"PENDING": true, "CONFIGURING": true, "REQUEUED": true, "REQUEUE_HOLD": true,
		"REQUEUE_FED": true, "RESV_DEL_HOLD": true, "SUSPENDED": true, "STOPPED": true, "SPECIAL_EXIT": true}
	running = map[string]bool{"RUNNING": true, "COMPLETING": true, "SIGNALING": true, "RESIZING": true, "STAGE_OUT": true}
)

// ended is why a job Slurm ended: what a user reads.
var ended = map[string]string{
	"CANCELLED":     "Slurm cancelled it (scancel)",
	"TIMEOUT":       "it ran past its Slurm time limit",
	"NODE_FAIL":     "its node failed",
	"BOOT_FAIL":     "its node failed to boot",
	"PREEMPTED":     "a job of higher priority preempted it",
	"OUT_OF_MEMORY": "it ran out of memory (resources.memory, sbatch --mem)",
	"DEADLINE":      "it could not start within its pending limit (--pending-limit): Slurm dropped it while it waited for a node",
	"FAILED":        "its batch script failed",
	"REVOKED":       "a sibling cluster ran it",
}

// probe is what one look at a job's directory and Slurm's queue found.
type probe struct {
	gone     bool   // the directory is gone
	queue    string // squeue's "STATE|REASON", "" when Slurm no longer lists it
	exit     string // the runner's exit code, "" before it has exited
	ended    int64  // when the exit file was written
	started  int64  // when the batch script started, 0 before
	hasLog   bool
	logBytes int64
}

func (b *Backend) probe(ctx context.Context, j *store.Job) (probe, error) {
	d, err := dir(j)
	if err != nil {
		return probe{}, err
	}
	script := fmt.Sprintf(`d=%s
if [ ! -d "$d" ]; then echo gone; exit 0; fi
id=%s
if [ -n "$id" ]; then printf 'queue %%s\n' "$(squeue -h -t all -j "$id" -o '%%T|%%r' 2>/dev/null | head -n 1)"; fi
if [ -f "$d/exit" ]; then printf 'exit %%s %%s\n' "$(cat "$d/exit")" "$(stat -c %%Y "$d/exit")"; fi
if [ -f "$d/started" ]; then printf 'started %%s\n' "$(cat "$d/started")"; fi
if [ -f "$d/log" ]; then printf 'log %%s\n' "$(stat -c %%s "$d/log")"; fi
`, quote(d), quote(slurmID(j)))
	out, err := b.Shell.Run(ctx, script, nil)
	if err != nil {
		return probe{}, fmt.Errorf("look at job %s on %s: %w", j.ID, b.Shell.Where(), err)
	}
	var p probe
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "gone":
			p.gone = true
		case "queue":
			p.queue = strings.TrimSpace(val)
		case "exit":
			code, at, _ := strings.Cut(val, " ")
			p.exit = strings.TrimSpace(code)
			p.ended, _ = strconv.ParseInt(strings.TrimSpace(at), 10, 64)
		case "started":
			p.started, _ = strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		case "log":
			p.hasLog = true
			p.logBytes, _ = strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		}
	}
	return p, nil
}

func (b *Backend) State(ctx context.Context, j *store.Job) (backend.State, error) {
	p, err := b.probe(ctx, j)
	if err != nil {
		return backend.State{}, err
	}
	if p.gone {
		return backend.State{}, fmt.Errorf("job %s: its directory on %s is gone: %w", j.ID, b.Shell.Where(), backend.ErrNotFound)
	}
	return stateOf(p, slurmID(j) != "", j.Timeout), nil
}

// stateOf is a job's state from what probe found; submitted says sbatch
// took it.
func stateOf(p probe, submitted bool, timeout string) backend.State {
	// Slurm stops the job at its time limit, but only looks every half
	// minute or so: a client that watches stops it at its timeout.
	s := backend.State{Timeout: timeout}
	if p.started > 0 {
		s.StartedAt = time.Unix(p.started, 0)
	}
	word, reason, _ := strings.Cut(p.queue, "|")
	if reason == "None" {
		reason = ""
	}
	switch {
	case !submitted:
		s.Phase, s.Detail = backend.Pending, "created"
		return s
	case p.exit != "" && !waiting[word]:
		// The runner's own exit code says how it ended; Slurm's word why,
		// when Slurm ended it.
		s.Phase, s.Detail = backend.Exited, "exited"
		s.ExitCode, _ = strconv.Atoi(p.exit)
		if p.ended > 0 {
			s.FinishedAt = time.Unix(p.ended, 0)
		}
		if why, ok := ended[word]; ok && word != "FAILED" {
			s.Detail, s.Message = strings.ToLower(word), why
		}
		s.TimedOut = word == "TIMEOUT"
		return s
	case waiting[word]:
		s.Phase, s.Detail, s.Message, s.Waiting = backend.Pending, strings.ToLower(word), reason, true
		if p.started > 0 && word != "SUSPENDED" && word != "STOPPED" {
			// It ran, and Slurm put it back in the queue: its node went
			// down, or a job of higher priority preempted it.
			s.Detail = "requeued"
			s.Message = "Slurm requeued it (its node went down, or it was preempted): it runs again from the start once it gets a node"
			if reason != "" {
				s.Message += " (" + reason + ")"
			}
		}
		return s
	case running[word]:
		s.Phase, s.Detail = backend.Running, "running"
		return s
	}
	// Slurm ended the job without the runner's exit code, or no longer
	// lists it: -1 says there is none.
	s.Phase, s.Detail, s.FinishedAt = backend.Exited, strings.ToLower(word), time.Now()
	switch word {
	case "":
		s.Detail, s.ExitCode = "gone", -1
		s.Message = "Slurm no longer lists the job and its runner left no exit code (its node failed, or it was killed)"
	case "COMPLETED":
		s.ExitCode = -1
		s.Message = "its batch script ended without the runner's exit code"
	case "TIMEOUT":
		s.ExitCode, s.TimedOut, s.Message = 124, true, ended[word]
	case "DEADLINE":
		// Dropped while it waited: what it waited for is Slurm's reason.
		s.ExitCode, s.TimedOut, s.NoNode = 124, true, true
		s.Message = "no node took it within its pending limit (--pending-limit): Slurm dropped it while it waited for a node"
		if reason != "" && reason != "DeadLine" {
			s.Message += " (" + reason + ")"
		}
	case "CANCELLED":
		s.ExitCode, s.Message = 143, ended[word]
	case "OUT_OF_MEMORY":
		s.ExitCode, s.OOMKilled, s.Message = 137, true, ended[word]
	default:
		s.ExitCode, s.Message = -1, ended[word]
		if s.Message == "" {
			s.Message = "Slurm says " + word
		}
	}
	return s
}

func (b *Backend) Wait(ctx context.Context, j *store.Job) (backend.State, error) {
	for {
		s, err := b.State(ctx, j)
		if err != nil || s.Finished() {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(b.poll()):
		}
	}
}

// Logs writes the job's log (its stdout and stderr together); with
// Follow, what the runner adds until the job ends.
func (b *Backend) Logs(ctx context.Context, j *store.Job, opts backend.LogOptions, stdout, stderr io.Writer) error {
	d, err := dir(j)
	if err != nil {
		return err
	}
	logPath := quote(d + "/" + logFile)
	if !opts.Follow {
		cmd := "cat " + logPath
		if n, err := strconv.Atoi(opts.Tail); err == nil && n >= 0 {
			cmd = fmt.Sprintf("tail -n %d %s", n, logPath)
		}
		p, err := b.probe(ctx, j)
		if err != nil {
			return err
		}
		if !p.hasLog || p.started == 0 {
			return fmt.Errorf("job %s has no log yet: %w", j.ID, backend.ErrNotStarted)
		}
		out, err := b.Shell.Run(ctx, cmd, nil)
		if err != nil {
			return fmt.Errorf("read job %s's log: %w", j.ID, err)
		}
		_, err = stdout.Write(out)
		return err
	}
	var off int64
	if n, err := strconv.Atoi(opts.Tail); err == nil && n >= 0 {
		// The last n lines, then what comes.
		out, err := b.Shell.Run(ctx, fmt.Sprintf("test -f %s && tail -n %d %s; test -f %s && stat -c %%s %s || echo 0", logPath, n, logPath, logPath, logPath), nil)
		if err != nil {
			return fmt.Errorf("read job %s's log: %w", j.ID, err)
		}
		text := string(out)
		i := strings.LastIndex(strings.TrimRight(text, "\n"), "\n")
		size, _ := strconv.ParseInt(strings.TrimSpace(text[i+1:]), 10, 64)
		stdout.Write([]byte(text[:i+1]))
		off = size
	}
	for {
		p, err := b.probe(ctx, j)
		if err != nil {
			return err
		}
		if p.gone {
			return fmt.Errorf("job %s: its directory is gone: %w", j.ID, backend.ErrNotFound)
		}
		if p.hasLog && p.logBytes > off {
			out, err := b.Shell.Run(ctx, fmt.Sprintf("tail -c +%d %s | head -c %d", off+1, logPath, p.logBytes-off), nil)
			if err != nil {
				return fmt.Errorf("read job %s's log: %w", j.ID, err)
			}
			stdout.Write(out)
			off += int64(len(out))
		}
		if stateOf(p, slurmID(j) != "", j.Timeout).Finished() {
			if p.hasLog {
				// What came after the look.
				out, err := b.Shell.Run(ctx, fmt.Sprintf("tail -c +%d %s", off+1, logPath), nil)
				if err == nil {
					stdout.Write(out)
				}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.poll() / 2):
		}
	}
}

// CopyOut returns a tar of the runner's output directory.
func (b *Backend) CopyOut(ctx context.Context, j *store.Job) (io.ReadCloser, error) {
	d, err := dir(j)
	if err != nil {
		return nil, err
	}
	p, err := b.probe(ctx, j)
	if err != nil {
		return nil, err
	}
	if p.started == 0 {
		return nil, fmt.Errorf("job %s has no output: %w", j.ID, backend.ErrNotStarted)
	}
	if _, err := b.Shell.Run(ctx, "test -d "+quote(d+"/"+outDir), nil); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("job %s wrote no output: %w", j.ID, backend.ErrNotFound)
		}
		return nil, err
	}
	return b.Shell.Stream(ctx, fmt.Sprintf("tar -cf - -C %s %s", quote(d), outDir))
}

// Stop sends SIGTERM to every process of a running job (the runner writes
// cancelled results) and cancels it after grace. A job that waits for its
// node is cancelled and its directory removed: it has nothing to keep.
func (b *Backend) Stop(ctx context.Context, j *store.Job, grace time.Duration) error {
	s, err := b.State(ctx, j)
	if err != nil {
		return err
	}
	id := slurmID(j)
	switch {
	case s.Finished():
		return nil
	case s.Phase == backend.Pending && s.Detail == "requeued":
		// It ran before Slurm requeued it: what its first run wrote is
		// kept, and the job ends cancelled as one that ran.
		return b.scancel(ctx, id, "")
	case s.Phase == backend.Pending:
		if id != "" {
			if err := b.scancel(ctx, id, ""); err != nil {
				return err
			}
		}
		if err := b.removeDir(ctx, j); err != nil {
			return err
		}
		return fmt.Errorf("job %s was cancelled while it waited for a node: %w", j.ID, backend.ErrNotStarted)
	}
	if err := b.scancel(ctx, id, "TERM"); err != nil {
		return err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.poll() / 2):
		}
		if s, err := b.State(ctx, j); err != nil || s.Finished() {
			return err
		}
	}
	return b.scancel(ctx, id, "KILL")
}

// scancel cancels Slurm job id: with signal "" as scancel does (a pending
// job leaves the queue); "TERM" sends it to every process of the job, for
// the runner to write its results; "KILL" kills every process, then
// cancels the job.
func (b *Backend) scancel(ctx context.Context, id, signal string) error {
	cmd := "scancel " + quote(id)
	switch signal {
	case "TERM":
		cmd = "scancel --signal=TERM --full " + quote(id)
	case "KILL":
		cmd = "scancel --signal=KILL --full " + quote(id) + "; " + cmd
	}
	if _, err := b.Shell.Run(ctx, cmd, nil); err != nil {
		return fmt.Errorf("scancel %s: %w", id, err)
	}
	return nil
}

// Remove deletes the job's directory; force cancels a job that has not
// ended first.
func (b *Backend) Remove(ctx context.Context, j *store.Job, force bool) error {
	s, err := b.State(ctx, j)
	if err != nil {
		return err
	}
	if !s.Finished() {
		if !force {
			return &backend.RunningError{JobID: j.ID, State: s.Detail}
		}
		if id := slurmID(j); id != "" {
			b.scancel(ctx, id, "KILL")
		}
	}
	return b.removeDir(ctx, j)
}

func (b *Backend) removeDir(ctx context.Context, j *store.Job) error {
	d, err := dir(j)
	if err != nil {
		return err
	}
	if _, err := b.Shell.Run(ctx, "rm -rf "+quote(d), nil); err != nil {
		return fmt.Errorf("remove job %s's directory %s on %s: %w", j.ID, d, b.Shell.Where(), err)
	}
	return nil
}

// List returns the jobs whose directories are under Dir (with all, the
// finished ones too).
func (b *Backend) List(ctx context.Context, all bool) ([]backend.Listed, error) {
	out, err := b.Shell.Run(ctx, fmt.Sprintf(`r=%s
for f in "$r"/*/%s; do [ -f "$f" ] && { cat "$f"; echo; }; done; true`, b.rootExpr(), recordFile), nil)
	if err != nil {
		return nil, fmt.Errorf("list the jobs on %s: %w", b.Shell.Where(), err)
	}
	var list []backend.Listed
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var j store.Job
		if json.Unmarshal(sc.Bytes(), &j) != nil || j.ID == "" {
			continue
		}
		// The record was written before sbatch took the job.
		if id, err := b.Shell.Run(ctx, "cat "+quote(j.ContainerName+"/"+idFile)+" 2>/dev/null; true", nil); err == nil {
			if s, _, _ := strings.Cut(strings.TrimSpace(string(id)), ";"); s != "" {
				j.ContainerID = s
			}
		}
		s, err := b.State(ctx, &j)
		if err != nil {
			continue
		}
		if s.Finished() && !all {
			continue
		}
		list = append(list, backend.Listed{Job: j, State: s})
	}
	return list, nil
}
