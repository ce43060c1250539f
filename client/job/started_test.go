package job

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// A job its scheduler holds is said to wait, with the scheduler's reason,
// and to run once it starts: never "running" while it is pending.
func TestWaitSaysWhenAPendingJobStarts(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: store.NewID(), Experiment: "e", Status: store.StatusRunning, ContainerID: "31", ContainerName: "xrun-e"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	states := []backend.State{
		{Phase: backend.Pending, Detail: "PENDING", Waiting: true, Message: "Resources"},
		{Phase: backend.Running, Detail: "RUNNING"},
		{Phase: backend.Exited, Detail: "COMPLETED"},
	}
	f := &fakeBackend{where: "slurm://login", state: func(look int) (backend.State, error) {
		return states[min(look, len(states)-1)], nil
	}, wait: func() (backend.State, error) { return backend.State{}, nil },
		logs:    func(io.Writer) error { return nil },
		copyOut: func() (io.ReadCloser, error) { return nil, backend.ErrNotFound }}
	var out bytes.Buffer
	m := &Manager{Store: st, Err: &out}
	if err := m.waitJob(context.Background(), f.plain(), j, states[0]); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	waiting := strings.Index(got, "job "+j.ID+" is waiting (PENDING): Resources")
	running := strings.Index(got, "job "+j.ID+" running in container xrun-e on slurm://login")
	if waiting < 0 || running < waiting {
		t.Errorf("stderr %q: want the wait, then the start", got)
	}

	// A quick job seen only once it has ended ran, and is said to have.
	out.Reset()
	j.Status, j.Finished = store.StatusRunning, nil
	f.looks, states = 0, []backend.State{states[0], states[2]}
	if err := m.waitJob(context.Background(), f.plain(), j, states[0]); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "job "+j.ID+" ran in container xrun-e on slurm://login") || strings.Contains(got, "running in") {
		t.Errorf("stderr %q: want the job said to have run", got)
	}
}

// A place that refuses a job before anything is submitted leaves no record
// of it: the refusal is the whole story.
func TestRefusedSubmitLeavesNoRecord(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	refused := &backend.RefusedError{Where: "Slurm partition debug", Reason: "the job asks for 3 GPUs and its nodes have at most 2"}
	f := &fakeBackend{where: "slurm://login", create: func() error { return refused }}
	m := &Manager{Store: st, Err: io.Discard}
	j, err := m.RunLocal(context.Background(), LocalRequest{Backend: f, Record: &store.Job{Experiment: "e"},
		Spec: func(*store.Job) backend.Spec { return backend.Spec{Name: "xrun-e"} }})
	var got *backend.RefusedError
	if !errors.As(err, &got) || j != nil {
		t.Fatalf("RunLocal = %+v, %v; want no job and the refusal", j, err)
	}
	if jobs, err := st.List(); err != nil || len(jobs) != 0 {
		t.Errorf("the store holds %d records after a refusal (%v)", len(jobs), err)
	}
}

// waitsForEnd is a backend whose Wait returns only when its context ends,
// as a cluster's does for a job that is running or queued again.
type waitsForEnd struct{ backend.Backend }

func (waitsForEnd) Wait(ctx context.Context, _ *store.Job) (backend.State, error) {
	<-ctx.Done()
	return backend.State{}, ctx.Err()
}

// A running job its cluster puts back in the queue (a node that went
// down) is said to be back in the queue, with the scheduler's words and
// how to give up, and to run again once it does; the wait goes on to
// its end.
func TestWaitSaysWhenARunningJobIsRequeued(t *testing.T) {
	defer func(p, r time.Duration) { pendingPoll, runningPoll = p, r }(pendingPoll, runningPoll)
	pendingPoll, runningPoll = 5*time.Millisecond, 5*time.Millisecond
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: store.NewID(), Experiment: "e", Status: store.StatusRunning, ContainerID: "31", ContainerName: "xrun-e"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	requeued := backend.State{Phase: backend.Pending, Detail: "requeued", Waiting: true,
		Message: "Slurm requeued it (its node went down, or it was preempted): it runs again from the start once it gets a node (ReqNodeNotAvail)"}
	states := []backend.State{
		{Phase: backend.Running, Detail: "RUNNING"},
		{Phase: backend.Running, Detail: "RUNNING"},
		requeued, requeued, requeued,
		{Phase: backend.Running, Detail: "RUNNING"},
		{Phase: backend.Exited, Detail: "COMPLETED"},
	}
	f := &fakeBackend{where: "slurm://login", state: func(look int) (backend.State, error) {
		return states[min(look, len(states)-1)], nil
	}, logs: func(io.Writer) error { return nil },
		copyOut: func() (io.ReadCloser, error) { return nil, backend.ErrNotFound }}
	var out bytes.Buffer
	m := &Manager{Store: st, Err: &out}
	if err := m.waitJob(context.Background(), waitsForEnd{f.plain()}, j, states[0]); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	back := strings.Index(got, "job "+j.ID+" is back in the queue (requeued): Slurm requeued it (its node went down, or it was preempted): it runs again from the start once it gets a node (ReqNodeNotAvail) (xrun cancel "+j.ID+" gives up)")
	again := strings.Index(got, "job "+j.ID+" running in container xrun-e on slurm://login")
	if back < 0 || again < back || strings.Count(got, "back in the queue") != 1 || strings.Contains(got, "is waiting") {
		t.Errorf("stderr %q: want the job back in the queue once, then running again", got)
	}
	if f.looks < len(states)-1 {
		t.Errorf("the wait ended after %d looks, before the job did", f.looks)
	}
}

// An attached submit removes what its job left once the store holds the
// job's end: a job no node took has no log to wait for, and its Failed
// Job (or Slurm directory) goes all the same; a job whose log is not in
// the store yet stays.
func TestRemoveStoredJobNoNodeTook(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	removed := false
	f := &fakeBackend{where: "k8s://lab", remove: func() error { removed = true; return nil }}
	m := &Manager{Store: st, Err: io.Discard}
	j := &store.Job{ID: store.NewID(), Experiment: "e", Status: "timeout", Finished: &now, ContainerID: "uid-1",
		Error: NoNodePrefix + " within its pending limit (--pending-limit 2m0s): 0/1 nodes are available"}
	if err := st.Create(j); err != nil {
		t.Fatal(err)
	}
	m.removeStored(f.plain(), j)
	if !removed {
		t.Error("the Job of a job no node took was left")
	}
	removed = false
	ran := &store.Job{ID: store.NewID(), Experiment: "e", Status: "failed", Finished: &now, ContainerID: "uid-2", Error: "worker crashed"}
	if err := st.Create(ran); err != nil {
		t.Fatal(err)
	}
	m.removeStored(f.plain(), ran)
	if removed {
		t.Error("a job whose log is not in the store was removed")
	}
}
