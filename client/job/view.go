package job

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Status is what `xrun status --json` prints: the record and, while
// the host still has it, the container's state.
type Status struct {
	*store.Job
	Container *ContainerState `json:"container,omitempty"`
	StoreDir  string          `json:"store_dir"`
}

// ContainerState is the state of a job's container (or Kubernetes Job),
// as its backend reports it.
type ContainerState struct {
	State      string     `json:"state"`
	Message    string     `json:"message,omitempty"`
	ExitCode   int        `json:"exit_code"`
	OOMKilled  bool       `json:"oom_killed"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// Status brings j up to date (Look) and describes it with its
// container's state, while its host has the container.
func (m *Manager) Status(ctx context.Context, j *store.Job) Status {
	c, ok := m.Look(ctx, j)
	s := Status{Job: j, StoreDir: m.Store.Dir(j.ID)}
	if ok {
		s.Container = containerState(c)
	}
	return s
}

func containerState(b backend.State) *ContainerState {
	s := &ContainerState{State: b.Detail, Message: b.Message, ExitCode: b.ExitCode, OOMKilled: b.OOMKilled}
	if !b.StartedAt.IsZero() {
		t := b.StartedAt
		s.StartedAt = &t
	}
	if !b.FinishedAt.IsZero() {
		t := b.FinishedAt
		s.FinishedAt = &t
	}
	return s
}

// Logs writes job j's log to out: its backend's while the backend has the
// job (with o.Follow until the job ends or ctx does; both of the
// container's streams go to out, as the store's copy has them), else the
// copy in the store, its last o.Tail lines. Once ctx has ended it returns
// nil.
func (m *Manager) Logs(ctx context.Context, j *store.Job, o backend.LogOptions, out io.Writer) error {
	ranHere := connect.IsLocal(j.Host)
	b, err := m.Backends.For(ctx, j)
	if err == nil {
		if o.Timestamps && ranHere {
			m.untimed(j, "ran on this machine (xrun run --local)")
		}
		err = b.Logs(ctx, j, o, out, out)
		if err == nil || ctx.Err() != nil {
			return nil
		}
	}
	// The container (or its host) is gone: the copy in the store is all there is.
	data, rerr := os.ReadFile(m.Store.Log(j.ID))
	if rerr != nil {
		switch {
		case errors.Is(err, backend.ErrNotStarted) && store.Final(j.Status):
			return fmt.Errorf("job %s has no log: it ended (%s) before its runner started", j.ID, j.Status)
		case errors.Is(err, backend.ErrNotStarted):
			return err
		case errors.Is(err, backend.ErrNotFound) && store.Final(j.Status) && j.Error != "":
			// Only a job whose log could not be had ends without one.
			return fmt.Errorf("job %s has no saved log: %s", j.ID, j.Error)
		case errors.Is(err, backend.ErrNotFound):
			return fmt.Errorf("job %s: its container is gone and no logs were saved before it was removed", j.ID)
		}
		return err
	}
	if o.Timestamps && !ranHere {
		m.untimed(j, "is gone from its host, and this is the log saved from it")
	}
	_, err = out.Write(tailLines(data, o.Tail))
	return err
}

// untimed says, on stderr, that --timestamps adds nothing to job j's log,
// whose lines have the runner's own times alone: j what.
func (m *Manager) untimed(j *store.Job, what string) {
	if m.Err != nil {
		fmt.Fprintf(m.Err, "xrun: job %s %s: its lines have the runner's own times (HH:MM:SS, UTC) and no others, so --timestamps adds none\n", j.ID, what)
	}
}

// tailLines returns the last n lines of data ("all": everything).
func tailLines(data []byte, tail string) []byte {
	n, err := strconv.Atoi(tail)
	if err != nil {
		return data
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	var out bytes.Buffer
	for _, l := range lines {
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// Exec runs a command beside job j while it runs (xrun exec), on a
// backend that can (backend.Execer: a Docker host), and returns its exit
// code.
func (m *Manager) Exec(ctx context.Context, j *store.Job, e backend.Exec) (int, error) {
	b, err := m.Backends.For(ctx, j)
	if err != nil {
		return 0, err
	}
	ex, ok := b.(backend.Execer)
	if !ok {
		return 0, contract.Usagef("xrun exec reaches the container of a job on a Docker host; job %s runs on %s, which has none it can reach", j.ID, j.Host)
	}
	s, ok, err := m.Refresh(ctx, j)
	if err != nil {
		return 0, err
	}
	if !ok || s.Phase != backend.Running || store.Final(j.Status) {
		return 0, contract.Usagef("job %s is %s: xrun exec runs a command beside a running job", j.ID, j.Status)
	}
	return ex.Exec(ctx, j, e)
}
