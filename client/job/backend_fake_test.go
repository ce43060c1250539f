package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// fakeBackend is a backend whose answers a test sets: each method answers
// from its field, and one whose field is unset panics (as the nil Backend
// it embeds does for the methods it has no field for), so that a test
// fails on a call it did not expect. It is a backend.Collector; plain()
// is the same backend without Collect, whose log and output are read
// apart (Logs, CopyOut) as a Docker host's are.
type fakeBackend struct {
	backend.Backend
	where string
	// state answers State's look-th call (from 1).
	state func(look int) (backend.State, error)
	looks int
	stop  func() error
	// logs writes the job's log to stdout; copyOut is the output's tar.
	logs    func(stdout io.Writer) error
	copyOut func() (io.ReadCloser, error)
	collect func() ([]byte, io.ReadCloser, error)
	listed  []backend.Listed
	remove  func() error
	// wait answers Wait, create Create.
	wait   func() (backend.State, error)
	create func() error
}

// plain is f without Collect.
func (f *fakeBackend) plain() backend.Backend { return struct{ backend.Backend }{f} }

func (f *fakeBackend) Where() string {
	if f.where == "" {
		panic("fakeBackend: Where")
	}
	return f.where
}

func (f *fakeBackend) State(context.Context, *store.Job) (backend.State, error) {
	if f.state == nil {
		panic("fakeBackend: State")
	}
	f.looks++
	return f.state(f.looks)
}

func (f *fakeBackend) Stop(context.Context, *store.Job, time.Duration) error {
	if f.stop == nil {
		panic("fakeBackend: Stop")
	}
	return f.stop()
}

func (f *fakeBackend) Logs(_ context.Context, _ *store.Job, _ backend.LogOptions, stdout, _ io.Writer) error {
	if f.logs == nil {
		panic("fakeBackend: Logs")
	}
	return f.logs(stdout)
}

func (f *fakeBackend) CopyOut(context.Context, *store.Job) (io.ReadCloser, error) {
	if f.copyOut == nil {
		panic("fakeBackend: CopyOut")
	}
	return f.copyOut()
}

func (f *fakeBackend) Collect(context.Context, *store.Job) ([]byte, io.ReadCloser, error) {
	if f.collect == nil {
		panic("fakeBackend: Collect")
	}
	return f.collect()
}

func (f *fakeBackend) Create(context.Context, *store.Job, backend.Spec) error {
	if f.create == nil {
		panic("fakeBackend: Create")
	}
	return f.create()
}

func (f *fakeBackend) Wait(context.Context, *store.Job) (backend.State, error) {
	if f.wait == nil {
		panic("fakeBackend: Wait")
	}
	return f.wait()
}

func (f *fakeBackend) List(context.Context, bool) ([]backend.Listed, error) {
	if f.listed == nil {
		panic("fakeBackend: List")
	}
	return f.listed, nil
}

func (f *fakeBackend) Remove(context.Context, *store.Job, bool) error {
	if f.remove == nil {
		panic("fakeBackend: Remove")
	}
	return f.remove()
}

// collector is a backend that only collects: Collect returns logs, the
// tar (where not nil) and err; Logs and CopyOut, the two reads Collect
// replaces, are left unset.
func collector(logs, tar []byte, err error) *fakeBackend {
	return &fakeBackend{collect: func() ([]byte, io.ReadCloser, error) {
		if tar == nil {
			return logs, nil, err
		}
		return logs, io.NopCloser(bytes.NewReader(tar)), err
	}}
}

// streamer is a Docker-like backend whose log is n bytes of lines made as
// they are read, and whose output directory is the tar out.
func streamer(n int64, out []byte) backend.Backend {
	f := &fakeBackend{
		logs: func(stdout io.Writer) error {
			line := []byte(strings.Repeat("x", 1023) + "\n")
			for written := int64(0); written < n; written += int64(len(line)) {
				if _, err := stdout.Write(line); err != nil {
					return err
				}
			}
			_, err := io.WriteString(stdout, "status: succeeded\n")
			return err
		},
		copyOut: func() (io.ReadCloser, error) {
			if out == nil {
				return nil, backend.ErrNotFound
			}
			return io.NopCloser(bytes.NewReader(out)), nil
		},
	}
	return f.plain()
}

// stopper is a backend whose job runs until Stop, which returns stopErr;
// after a Stop that deleted the job, State is ErrNotFound.
func stopper(stopErr error) backend.Backend {
	gone := false
	f := &fakeBackend{
		state: func(int) (backend.State, error) {
			if gone {
				return backend.State{}, fmt.Errorf("job: %w", backend.ErrNotFound)
			}
			return backend.State{Phase: backend.Running, Detail: "running"}, nil
		},
		stop: func() error {
			gone = errors.Is(stopErr, backend.ErrNotFound)
			return stopErr
		},
	}
	return f.plain()
}

// starter is a backend whose job a1b2c3d4e5f6 the submitting xrun starts
// (and records running, then ends) just after the first look at its state
// (looked: how many looks were made before); removed says whether Remove
// was called.
func starter(st *store.Store, looked int, removed *bool) backend.Backend {
	f := &fakeBackend{where: "unix:///test.sock", looks: looked,
		listed: []backend.Listed{{Job: store.Job{ID: "a1b2c3d4e5f6"}}},
		remove: func() error { *removed = true; return nil },
		state: func(look int) (backend.State, error) {
			if look > 1 {
				return backend.State{Phase: backend.Running, Detail: "running"}, nil
			}
			started, err := st.Load("a1b2c3d4e5f6")
			if err != nil {
				return backend.State{}, err
			}
			started.Status = store.StatusRunning
			if err := st.Save(started); err != nil {
				return backend.State{}, err
			}
			return backend.State{Phase: backend.Pending, Detail: "created"}, nil
		},
	}
	return f.plain()
}
