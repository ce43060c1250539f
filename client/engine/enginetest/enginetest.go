// Package enginetest is an in-memory engine.Engine for the tests of the
// packages above the engine (the job lifecycle, the commands, the GPU
// assignment): one fake, beside what it fakes.
package enginetest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
)

// Engine is an in-memory engine.Engine with the daemon's rules that
// xrun's code relies on: images are names, container names are unique
// and containers are found by id or name, and a started container "runs"
// what Behave says at once (or until stopped, when Hang).
type Engine struct {
	mu sync.Mutex
	// DaemonInfo is what Info answers.
	DaemonInfo engine.Info
	// ImageIDs are the images by reference, with their ids; ImageEnv
	// their environment.
	ImageIDs map[string]string
	ImageEnv map[string][]string
	// BuildFiles are the files of each build context.
	BuildFiles []map[string][]byte
	// BuildOutput, when set, are the lines every build prints (default:
	// one step); BuildErr, when set, is what it then returns.
	BuildOutput []string
	BuildErr    error
	Containers  map[string]*Container
	// Removed are the containers Remove deleted, in order.
	Removed []*Container
	// PullErr, when set, is what every Pull returns.
	PullErr error
	// PullSteps are the progress every Pull reports before it ends.
	PullSteps []engine.PullProgress
	// Behave says what a container runs, from its spec.
	Behave func(s engine.ContainerSpec) Run
	// Stops counts Stop calls.
	Stops int
	// VolumeSet are the named volumes, made by the mounts of Create.
	VolumeSet map[string]*engine.Volume
	// Execs are the commands Exec ran; ExecRun, when set, answers each
	// with its stdout, stderr and exit code.
	Execs   []engine.ExecOptions
	ExecRun func(engine.ExecOptions) (stdout, stderr string, code int)
	next    int
}

// Run is what a started container does: it exits with Exit at once (or
// when stopped, with Hang), OOM-killed with OOM, having written Logs and
// the Files of its /xrun/out.
type Run struct {
	Exit  int
	OOM   bool
	Logs  string
	Files map[string]string // under /xrun/out
	Hang  bool
}

// Container is a container of the Engine.
type Container struct {
	C    engine.Container
	Spec engine.ContainerSpec
	Run  Run
	done chan struct{}
	// Copied are the paths CopyTo put into it.
	Copied []string
	// standby: started, waiting for its job (CopyTo).
	standby bool
	// Ran says Behave was asked what the container runs: it was
	// started, and handed its job when it is a standby.
	Ran bool
}

// New returns an Engine of a linux/amd64 daemon with an NVIDIA runtime
// and one image, test/base:1, whose containers exit 0 at once.
func New() *Engine {
	return &Engine{
		DaemonInfo: engine.Info{OS: "linux", Arch: "amd64", NvidiaRuntime: true},
		ImageIDs:   map[string]string{"test/base:1": "sha256:base"},
		Containers: map[string]*Container{},
		Behave:     func(engine.ContainerSpec) Run { return Run{} },
	}
}

var _ engine.Engine = (*Engine)(nil)

func (f *Engine) Host() string                                      { return "unix:///fake.sock" }
func (f *Engine) Ping(context.Context) error                        { return nil }
func (f *Engine) Info(context.Context) (engine.Info, error)         { return f.DaemonInfo, nil }
func (f *Engine) Close() error                                      { return nil }
func (f *Engine) Kill(ctx context.Context, id, signal string) error { return f.Stop(ctx, id, 0) }

// Exec records the command (Execs) and answers with ExecRun's output and
// exit code (nil: none and 0); the container must be running.
func (f *Engine) Exec(_ context.Context, id string, o engine.ExecOptions, _ io.Reader, stdout, stderr io.Writer) (int, error) {
	f.mu.Lock()
	c, err := f.get(id)
	if err == nil && c.C.State != "running" {
		err = fmt.Errorf("container %s is not running", id)
	}
	f.Execs = append(f.Execs, o)
	run := f.ExecRun
	f.mu.Unlock()
	if err != nil || run == nil {
		return 0, err
	}
	out, errOut, code := run(o)
	io.WriteString(stdout, out)
	io.WriteString(stderr, errOut)
	return code, nil
}

func (f *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := f.ImageID(ctx, ref)
	return err == nil, nil
}

func (f *Engine) ImageConfig(ctx context.Context, ref string) (engine.ImageConfig, error) {
	id, err := f.ImageID(ctx, ref)
	if err != nil {
		return engine.ImageConfig{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return engine.ImageConfig{ID: id, Env: f.ImageEnv[ref]}, nil
}

func (f *Engine) ImageID(_ context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.ImageIDs[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("image %s: %w", ref, engine.ErrNotFound)
}

func (f *Engine) Push(ctx context.Context, ref string, _ func(string)) error {
	if _, err := f.ImageID(ctx, ref); err != nil {
		return err
	}
	return nil
}

func (f *Engine) Pull(_ context.Context, ref string, progress func(engine.PullProgress)) error {
	for _, p := range f.PullSteps {
		progress(p)
	}
	if f.PullErr != nil {
		return f.PullErr
	}
	f.mu.Lock()
	f.ImageIDs[ref] = "sha256:pulled"
	f.mu.Unlock()
	return nil
}

func (f *Engine) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	delete(f.ImageIDs, ref)
	f.mu.Unlock()
	return nil
}

// SaveImage returns a stand-in archive of ref: its name and id.
func (f *Engine) SaveImage(_ context.Context, ref string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.ImageIDs[ref]
	if !ok {
		return nil, fmt.Errorf("save image %s: %w", ref, engine.ErrNotFound)
	}
	return io.NopCloser(strings.NewReader(ref + " " + id + "\n")), nil
}

func (f *Engine) Images(context.Context, map[string]string) ([]engine.Image, error) {
	return nil, nil
}

// readTar returns the entries of a tar stream by name.
func readTar(r io.Reader) (map[string][]byte, error) {
	files, _, err := readTarOrdered(r)
	return files, err
}

// readTarOrdered is readTar with the names in the tar's order.
func readTarOrdered(r io.Reader) (map[string][]byte, []string, error) {
	files := map[string][]byte{}
	var names []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, names, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
		names = append(names, h.Name)
	}
}

func (f *Engine) Build(_ context.Context, r io.Reader, o engine.BuildOptions, progress func(string)) (string, error) {
	files, err := readTar(r)
	if err != nil {
		return "", err
	}
	lines := f.BuildOutput
	if lines == nil {
		lines = []string{"Step 1/1 : FROM fake"}
	}
	for _, l := range lines {
		progress(l)
	}
	if f.BuildErr != nil {
		return "", f.BuildErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.BuildFiles = append(f.BuildFiles, files)
	f.ImageIDs[o.Tag] = "sha256:" + o.Tag
	return f.ImageIDs[o.Tag], nil
}

func (f *Engine) Create(_ context.Context, s engine.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.ImageIDs[s.Image]; !ok {
		return "", fmt.Errorf("create container: no such image %s: %w", s.Image, engine.ErrNotFound)
	}
	if s.Name != "" {
		if _, dup := f.byName(s.Name); dup {
			return "", fmt.Errorf("create container %q: Conflict. The container name %q is already in use", s.Name, "/"+s.Name)
		}
	}
	for _, m := range s.Mounts {
		if f.VolumeSet == nil {
			f.VolumeSet = map[string]*engine.Volume{}
		}
		if _, ok := f.VolumeSet[m.Volume]; !ok {
			f.VolumeSet[m.Volume] = &engine.Volume{Name: m.Volume, Labels: m.Labels, Created: time.Now()}
		}
	}
	f.next++
	id := fmt.Sprintf("c%063d", f.next)
	f.Containers[id] = &Container{
		C: engine.Container{ID: id, Name: s.Name, Image: s.Image, Labels: s.Labels, State: "created",
			Created: time.Now(), MemoryBytes: s.MemoryBytes, CPUSet: s.CPUSet},
		Spec: s, done: make(chan struct{}),
	}
	return id, nil
}

// get finds a container by id or name, as the daemon does.
func (f *Engine) get(ref string) (*Container, error) {
	if c, ok := f.Containers[ref]; ok {
		return c, nil
	}
	if c, ok := f.byName(ref); ok {
		return c, nil
	}
	return nil, fmt.Errorf("no such container %s: %w", ref, engine.ErrNotFound)
}

func (f *Engine) byName(name string) (*Container, bool) {
	for _, c := range f.Containers {
		if c.C.Name == name {
			return c, true
		}
	}
	return nil, false
}

// Volumes returns the named volumes with labels; a volume's Containers
// counts the containers that mount it.
func (f *Engine) Volumes(_ context.Context, labels map[string]string) ([]engine.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Volume
	for _, v := range f.VolumeSet {
		match := true
		for k, want := range labels {
			if got, ok := v.Labels[k]; !ok || want != "" && got != want {
				match = false
			}
		}
		if !match {
			continue
		}
		vol := *v
		vol.Containers = 0
		for _, c := range f.Containers {
			for _, m := range c.Spec.Mounts {
				if m.Volume == v.Name {
					vol.Containers++
				}
			}
		}
		out = append(out, vol)
	}
	return out, nil
}

// RemoveVolume deletes a volume no container mounts.
func (f *Engine) RemoveVolume(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.VolumeSet[name]; !ok {
		return fmt.Errorf("volume %s: %w", name, engine.ErrNotFound)
	}
	for _, c := range f.Containers {
		for _, m := range c.Spec.Mounts {
			if m.Volume == name {
				return fmt.Errorf("remove volume %s: volume is in use", name)
			}
		}
	}
	delete(f.VolumeSet, name)
	return nil
}

// Exit ends container ref (one that Hangs) with code, as its runner
// exiting would.
func (f *Engine) Exit(ref string, code int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(ref)
	if err != nil {
		return err
	}
	if c.C.State == "running" {
		f.exit(c, code)
	}
	return nil
}

// SetState puts container ref in state, as another client's doing would
// (a job that ended elsewhere).
func (f *Engine) SetState(ref, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(ref)
	if err != nil {
		return err
	}
	c.C.State = state
	return nil
}

// Add puts a container in state with labels, created at created, as if
// another client had made it; it returns its id.
func (f *Engine) Add(name, state string, labels map[string]string, created time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := fmt.Sprintf("c%063d", f.next)
	f.Containers[id] = &Container{C: engine.Container{ID: id, Name: name, Labels: labels, State: state, Created: created}, done: make(chan struct{})}
	return id
}

func (f *Engine) Start(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	if c.Spec.GPUs != nil && !f.DaemonInfo.NvidiaRuntime {
		return fmt.Errorf("start container: %w", engine.ErrNoGPURuntime)
	}
	c.C.State = "running"
	c.C.StartedAt = time.Now()
	if slices.ContainsFunc(c.Spec.Env, func(kv string) bool { return strings.HasPrefix(kv, contract.EnvStandby+"=") }) {
		c.standby = true // it waits for its job (CopyTo)
		return nil
	}
	f.run(c)
	return nil
}

// run runs what Behave says c runs; f.mu is held.
func (f *Engine) run(c *Container) {
	c.Run, c.Ran = f.Behave(c.Spec), true
	if !c.Run.Hang {
		f.exit(c, c.Run.Exit)
	}
}

func (f *Engine) exit(c *Container, code int) {
	c.C.State = "exited"
	c.C.ExitCode = code
	c.C.OOMKilled = c.Run.OOM
	c.C.FinishedAt = time.Now()
	close(c.done)
}

func (f *Engine) Wait(ctx context.Context, id string, _ bool) <-chan engine.WaitResult {
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
			out <- engine.WaitResult{ExitCode: c.C.ExitCode}
			f.mu.Unlock()
		case <-ctx.Done():
			out <- engine.WaitResult{ExitCode: -1, Err: ctx.Err()}
		}
	}()
	return out
}

func (f *Engine) Logs(ctx context.Context, id string, o engine.LogOptions, stdout, _ io.Writer) error {
	f.mu.Lock()
	c, err := f.get(id)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	io.WriteString(stdout, c.Run.Logs)
	if o.Follow {
		select {
		case <-c.done:
		case <-ctx.Done():
		}
	}
	return nil
}

func (f *Engine) Stop(_ context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	f.Stops++
	if c.C.State == "running" {
		f.exit(c, 143)
	}
	return nil
}

func (f *Engine) Remove(_ context.Context, id string, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	if c.C.State == "running" && !force {
		return errors.New("container is running")
	}
	if c.C.State == "running" {
		f.exit(c, 137)
	}
	delete(f.Containers, c.C.ID)
	f.Removed = append(f.Removed, c)
	return nil
}

// Rename renames a container; a name in use is a conflict.
func (f *Engine) Rename(_ context.Context, id, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	if _, dup := f.byName(name); dup {
		return fmt.Errorf("rename container %s: Conflict. The container name %q is already in use", id, "/"+name)
	}
	c.C.Name, c.Spec.Name = name, name
	return nil
}

// SetCPUs moves the container onto cpuset (none: as it was).
func (f *Engine) SetCPUs(_ context.Context, id, cpuset string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err == nil && cpuset != "" {
		c.C.CPUSet, c.Spec.CPUSet = cpuset, cpuset
	}
	return err
}

// Made returns every container made, removed ones included.
func (f *Engine) Made() []*Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := append([]*Container(nil), f.Removed...)
	for _, c := range f.Containers {
		all = append(all, c)
	}
	return all
}

// CopyTo records the names of the files copied into a container, in
// order. A standby (contract.EnvStandby) handed its job
// (contract.StandbyGoFile) runs it then, as Start runs other containers.
func (f *Engine) CopyTo(_ context.Context, id, dir string, r io.Reader) error {
	_, order, err := readTarOrdered(r)
	if err != nil {
		return err
	}
	var names []string
	for _, name := range order {
		names = append(names, path.Join(dir, name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	c.Copied = append(c.Copied, names...)
	if c.standby && c.C.State == "running" && slices.Contains(names, contract.StandbyGoFile) {
		c.standby = false
		f.run(c)
	}
	return nil
}

func (f *Engine) CopyFrom(_ context.Context, id, path string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return nil, err
	}
	if len(c.Run.Files) == 0 {
		return nil, fmt.Errorf("copy %s: %w", path, engine.ErrNotFound)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	for name, data := range c.Run.Files {
		tw.WriteHeader(&tar.Header{Name: "out/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
		io.WriteString(tw, data)
	}
	tw.Close()
	return io.NopCloser(&buf), nil
}

func (f *Engine) Inspect(_ context.Context, id string) (engine.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return engine.Container{}, err
	}
	return c.C, nil
}

func (f *Engine) List(_ context.Context, labels map[string]string, all bool) ([]engine.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Container
	for _, c := range f.Containers {
		if !all && c.C.State != "running" {
			continue
		}
		ok := true
		for k, v := range labels {
			if got, has := c.C.Labels[k]; !has || v != "" && got != v {
				ok = false
			}
		}
		if ok {
			out = append(out, c.C)
		}
	}
	return out, nil
}
