package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/runner/result"
)

// fakeEngine is an in-memory Engine: images are names, and a started
// container "runs" what behave says at once (or until stopped, when hang).
type fakeEngine struct {
	mu         sync.Mutex
	info       engine.Info
	images     map[string]string
	imageEnv   map[string][]string // by reference
	builds     []map[string][]byte
	containers map[string]*fakeContainer
	pullErr    error
	behave     func(s engine.ContainerSpec) fakeRun
	stops      int
	next       int
}

type fakeRun struct {
	exit  int
	oom   bool
	logs  string
	files map[string]string // under /xrun/out
	hang  bool
}

type fakeContainer struct {
	c    engine.Container
	spec engine.ContainerSpec
	run  fakeRun
	done chan struct{}
	// copied are the paths CopyTo put into it.
	copied []string
}

func newFake() *fakeEngine {
	return &fakeEngine{
		info:       engine.Info{OS: "linux", Arch: "amd64", NvidiaRuntime: true},
		images:     map[string]string{"test/base:1": "sha256:base"},
		containers: map[string]*fakeContainer{},
		behave:     func(engine.ContainerSpec) fakeRun { return fakeRun{} },
	}
}

var _ engine.Engine = (*fakeEngine)(nil)

func (f *fakeEngine) Host() string                                      { return "unix:///fake.sock" }
func (f *fakeEngine) Ping(context.Context) error                        { return nil }
func (f *fakeEngine) Info(context.Context) (engine.Info, error)         { return f.info, nil }
func (f *fakeEngine) Close() error                                      { return nil }
func (f *fakeEngine) Kill(ctx context.Context, id, signal string) error { return f.Stop(ctx, id, 0) }

func (f *fakeEngine) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := f.ImageID(ctx, ref)
	return err == nil, nil
}

func (f *fakeEngine) ImageConfig(ctx context.Context, ref string) (engine.ImageConfig, error) {
	id, err := f.ImageID(ctx, ref)
	if err != nil {
		return engine.ImageConfig{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return engine.ImageConfig{ID: id, Env: f.imageEnv[ref]}, nil
}

func (f *fakeEngine) ImageID(_ context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.images[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("image %s: %w", ref, engine.ErrNotFound)
}

func (f *fakeEngine) Push(ctx context.Context, ref string, _ func(string)) error {
	if _, err := f.ImageID(ctx, ref); err != nil {
		return err
	}
	return nil
}

func (f *fakeEngine) Pull(_ context.Context, ref string, _ func(string)) error {
	if f.pullErr != nil {
		return f.pullErr
	}
	f.mu.Lock()
	f.images[ref] = "sha256:pulled"
	f.mu.Unlock()
	return nil
}

func (f *fakeEngine) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	delete(f.images, ref)
	f.mu.Unlock()
	return nil
}

func (f *fakeEngine) Images(context.Context, map[string]string) ([]engine.Image, error) {
	return nil, nil
}

// readTar returns the entries of a tar stream by name.
func readTar(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
}

func (f *fakeEngine) Build(_ context.Context, r io.Reader, o engine.BuildOptions, progress func(string)) (string, error) {
	files, err := readTar(r)
	if err != nil {
		return "", err
	}
	progress("Step 1/1 : FROM fake")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.builds = append(f.builds, files)
	f.images[o.Tag] = "sha256:" + o.Tag
	return f.images[o.Tag], nil
}

func (f *fakeEngine) Create(_ context.Context, s engine.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.images[s.Image]; !ok {
		return "", fmt.Errorf("create container: no such image %s: %w", s.Image, engine.ErrNotFound)
	}
	f.next++
	id := fmt.Sprintf("c%063d", f.next)
	f.containers[id] = &fakeContainer{
		c: engine.Container{ID: id, Name: s.Name, Image: s.Image, Labels: s.Labels, State: "created",
			Created: time.Now(), MemoryBytes: s.MemoryBytes},
		spec: s, done: make(chan struct{}),
	}
	return id, nil
}

func (f *fakeEngine) get(id string) (*fakeContainer, error) {
	c, ok := f.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, engine.ErrNotFound)
	}
	return c, nil
}

func (f *fakeEngine) Start(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	if c.spec.GPUs != nil && !f.info.NvidiaRuntime {
		return fmt.Errorf("start container: %w", engine.ErrNoGPURuntime)
	}
	c.run = f.behave(c.spec)
	c.c.State = "running"
	c.c.StartedAt = time.Now()
	if !c.run.hang {
		f.exit(c, c.run.exit)
	}
	return nil
}

func (f *fakeEngine) exit(c *fakeContainer, code int) {
	c.c.State = "exited"
	c.c.ExitCode = code
	c.c.OOMKilled = c.run.oom
	c.c.FinishedAt = time.Now()
	close(c.done)
}

func (f *fakeEngine) Wait(ctx context.Context, id string, _ bool) <-chan engine.WaitResult {
	out := make(chan engine.WaitResult, 1)
	f.mu.Lock()
	c, err := f.get(id)
	f.mu.Unlock()
	if err != nil {
		out <- engine.WaitResult{Err: err}
		return out
	}
	go func() {
		select {
		case <-c.done:
			f.mu.Lock()
			out <- engine.WaitResult{ExitCode: c.c.ExitCode}
			f.mu.Unlock()
		case <-ctx.Done():
			out <- engine.WaitResult{ExitCode: -1, Err: ctx.Err()}
		}
	}()
	return out
}

func (f *fakeEngine) Logs(ctx context.Context, id string, o engine.LogOptions, stdout, _ io.Writer) error {
	f.mu.Lock()
	c, err := f.get(id)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	io.WriteString(stdout, c.run.logs)
	if o.Follow {
		select {
		case <-c.done:
		case <-ctx.Done():
		}
	}
	return nil
}

func (f *fakeEngine) Stop(_ context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	f.stops++
	if c.c.State == "running" {
		f.exit(c, 143)
	}
	return nil
}

func (f *fakeEngine) Remove(_ context.Context, id string, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	if c.c.State == "running" && !force {
		return errors.New("container is running")
	}
	if c.c.State == "running" {
		f.exit(c, 137)
	}
	delete(f.containers, id)
	return nil
}

// CopyTo records the names of the files copied into a container.
func (f *fakeEngine) CopyTo(_ context.Context, id, dir string, r io.Reader) error {
	files, err := readTar(r)
	if err != nil {
		return err
	}
	var names []string
	for name := range files {
		names = append(names, path.Join(dir, name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	c.copied = append(c.copied, names...)
	return nil
}

func (f *fakeEngine) CopyFrom(_ context.Context, id, path string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return nil, err
	}
	if len(c.run.files) == 0 {
		return nil, fmt.Errorf("copy %s: %w", path, engine.ErrNotFound)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	for name, data := range c.run.files {
		tw.WriteHeader(&tar.Header{Name: "out/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
		io.WriteString(tw, data)
	}
	tw.Close()
	return io.NopCloser(&buf), nil
}

func (f *fakeEngine) Inspect(_ context.Context, id string) (engine.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return engine.Container{}, err
	}
	return c.c, nil
}

func (f *fakeEngine) List(_ context.Context, labels map[string]string, all bool) ([]engine.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Container
	for _, c := range f.containers {
		if !all && c.c.State != "running" {
			continue
		}
		ok := true
		for k, v := range labels {
			if got, has := c.c.Labels[k]; !has || v != "" && got != v {
				ok = false
			}
		}
		if ok {
			out = append(out, c.c)
		}
	}
	return out, nil
}

// resultsJSON is a results.json the fake runner writes.
func resultsJSON(t *testing.T, experiment, status string) string {
	t.Helper()
	r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: experiment, Status: status,
		Success: status == result.StatusSucceeded, CreatedAt: time.Unix(0, 0).UTC()}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// testApp is an App on a fake engine with its own store and a fake runner binary.
type testApp struct {
	*App
	fake     *fakeEngine
	out, err *bytes.Buffer
}

// setenv makes the app see env's values for those keys, and the
// environment it had for the others.
func (ta *testApp) setenv(env map[string]string) {
	get := ta.Getenv
	ta.Getenv = func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return get(k)
	}
}

func newTestApp(t *testing.T) *testApp {
	t.Helper()
	f := newFake()
	var out, errb bytes.Buffer
	runner := filepath.Join(t.TempDir(), "xrun-runner")
	if err := os.WriteFile(runner, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SECRET_TOKEN": "s3cr3t"}
	a := &App{
		Out: &out, Err: &errb,
		Getenv:    func(k string) string { return env[k] },
		Connect:   func(context.Context, HostSelection) (engine.Engine, error) { return f, nil },
		RunnerFor: func(context.Context, string, string, func(string, ...any)) (string, error) { return runner, nil },
		StoreRoot: t.TempDir(),
	}
	return &testApp{App: a, fake: f, out: &out, err: &errb}
}

// run runs xrun with args and returns its exit code.
func (ta *testApp) run(ctx context.Context, args ...string) int {
	ta.out.Reset()
	ta.err.Reset()
	return ta.report(ta.Command().RunContext(ctx, append([]string{"xrun"}, args...)))
}
