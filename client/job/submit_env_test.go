package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// submitEnv is a Manager over a fresh job store, a connect.Set whose every
// host is one fake engine, and a fake runner binary: the submit pipeline
// as xrun submit drives it, without a daemon.
type submitEnv struct {
	m    *Manager
	fake *enginetest.Engine
	// err is what the Manager wrote (stderr's part of a submit).
	err *syncBuffer
	// env is the environment the request and the backends read; a test
	// sets its keys before it submits.
	env    map[string]string
	root   string // the job store's
	runner string // the fake runner binary
}

func newSubmitEnv(t *testing.T) *submitEnv {
	t.Helper()
	runner := filepath.Join(t.TempDir(), "xrun-runner")
	if err := os.WriteFile(runner, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &submitEnv{fake: enginetest.New(), err: &syncBuffer{}, root: t.TempDir(), runner: runner,
		env: map[string]string{"SECRET_TOKEN": "s3cr3t", "XDG_CACHE_HOME": t.TempDir()}}
	e.m = e.manager(t)
	return e
}

func (e *submitEnv) getenv(k string) string { return e.env[k] }

// manager returns a Manager of its own on e's store and engine, as another
// xrun process on this machine has: its own store handle and connections.
func (e *submitEnv) manager(t *testing.T) *Manager {
	t.Helper()
	st, err := store.Open(e.root)
	if err != nil {
		t.Fatal(err)
	}
	set := &connect.Set{Getenv: e.getenv, KubeLog: e.err,
		Connect: func(context.Context, connect.Selection) (engine.Engine, error) { return e.fake, nil }}
	return &Manager{Store: st, Backends: set, Err: e.err,
		RunnerFor: func(context.Context, string, string, func(string, ...any)) (string, error) { return e.runner, nil }}
}

// request loads the experiment dir into the SubmitRequest xrun submit
// makes of a (Request), reading e's environment.
func (e *submitEnv) request(t *testing.T, dir string, a Args) SubmitRequest {
	t.Helper()
	a.Dir = dir
	if a.Network == "" {
		a.Network = "default" // the flag's default
	}
	r, err := Request(a, e.getenv, e.err)
	if err != nil {
		t.Fatalf("request %+v: %v", a, err)
	}
	return r
}

// submit submits the experiment dir with a, as xrun submit does.
func (e *submitEnv) submit(ctx context.Context, t *testing.T, dir string, a Args) (*store.Job, error) {
	t.Helper()
	return e.m.Submit(ctx, e.request(t, dir, a))
}

// jobs returns the records of the store.
func (e *submitEnv) jobs(t *testing.T) []*store.Job {
	t.Helper()
	list, err := e.m.Store.List()
	if err != nil {
		t.Fatalf("job store unreadable: %v", err)
	}
	return list
}

// cancelWhenRunning returns a context cancelled once e's engine runs a
// container, as Ctrl-C during a job.
func (e *submitEnv) cancelWhenRunning() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if running, _ := e.fake.List(context.Background(), nil, false); len(running) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return ctx
}

// jobContainers counts e's job containers and its waiting standbys.
func (e *submitEnv) jobContainers() (running, standbys int) {
	for _, c := range e.fake.Containers {
		if contract.WaitingStandby(c.C.Name, c.C.Labels) {
			standbys++
		} else {
			running++
		}
	}
	return running, standbys
}

// experiment writes the experiment xrun init makes (spec.Scaffold), on
// the fake engine's base, to a directory whose name has a space.
func experiment(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "My Kernel")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := spec.Scaffold("my-kernel", "test/base:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// editSpec replaces the first old in dir's xrun.yaml with new.
func editSpec(t *testing.T, dir, old, new string) {
	t.Helper()
	path := filepath.Join(dir, "xrun.yaml")
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(y), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Reset empties the buffer, between the submits of a test.
func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
