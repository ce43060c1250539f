package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"
)

// Docker is the Engine backed by the Docker Engine API.
type Docker struct {
	host string
	cli  *client.Client

	gpuRuntimeOnce sync.Once
	gpuRuntime     string
}

var _ Engine = (*Docker)(nil)

// FromClient wraps a client that client/connect made (it owns host
// selection, ssh and TLS); host is what Host reports and what a job records
// to reach the daemon again.
func FromClient(host string, cli *client.Client) *Docker {
	return &Docker{host: host, cli: cli}
}

// Host returns the daemon address.
func (d *Docker) Host() string { return d.host }

// Close releases the client's connections.
func (d *Docker) Close() error { return d.cli.Close() }

// Ping checks the daemon answers and negotiates the API version down to
// the daemon's (Docker 20.10 speaks 1.41).
func (d *Docker) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := d.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return &UnreachableError{Host: d.host, Err: shortNetErr(err)}
	}
	return nil
}

// shortNetErr drops the SDK's long hints so the message stays one sentence.
func shortNetErr(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ". Is the docker daemon running?"); i > 0 {
		msg = msg[:i]
	}
	return errors.New(msg)
}

// Info reads the daemon's platform and runtimes.
func (d *Docker) Info(ctx context.Context) (Info, error) {
	r, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return Info{}, fmt.Errorf("read daemon info from %s: %w", d.host, err)
	}
	in := r.Info
	info := Info{
		OS:             in.OSType,
		Arch:           goArch(in.Architecture),
		ServerVersion:  in.ServerVersion,
		APIVersion:     d.cli.ClientVersion(),
		Name:           in.Name,
		CPUs:           in.NCPU,
		MemoryBytes:    in.MemTotal,
		DefaultRuntime: in.DefaultRuntime,
	}
	for name := range in.Runtimes {
		info.Runtimes = append(info.Runtimes, name)
		if name == "nvidia" {
			info.NvidiaRuntime = true
		}
	}
	sort.Strings(info.Runtimes)
	for _, dev := range in.DiscoveredDevices {
		if dev.Source == "cdi" && strings.Contains(dev.ID, "nvidia.com/gpu") {
			info.NvidiaRuntime = true
		}
	}
	return info, nil
}

// runtimeForGPUs is the runtime GPU containers get: "nvidia" when the
// daemon registers it but runs containers with another by default. A GPU
// device request alone reaches the NVIDIA runtime hook under runc, which
// works only with the legacy toolkit (nvidia-container-cli); the nvidia
// runtime serves both that and CDI mode, where the hook is unused.
func (d *Docker) runtimeForGPUs(ctx context.Context) string {
	d.gpuRuntimeOnce.Do(func() {
		info, err := d.Info(ctx)
		if err != nil {
			return // Create reports the daemon's own error
		}
		d.gpuRuntime = GPURuntime(info)
	})
	return d.gpuRuntime
}

// GPURuntime is the runtime to name for GPU containers on a daemon with
// info: "nvidia" when registered and not the default, else "" (the default).
func GPURuntime(info Info) string {
	if info.DefaultRuntime == "nvidia" {
		return ""
	}
	for _, r := range info.Runtimes {
		if r == "nvidia" {
			return "nvidia"
		}
	}
	return ""
}

// goArch maps the daemon's uname -m spelling to GOARCH.
func goArch(a string) string {
	switch a {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	case "armv7l", "armhf":
		return "arm"
	case "ppc64le":
		return "ppc64le"
	case "s390x":
		return "s390x"
	}
	return a
}

// Create makes a job container.
func (d *Docker) Create(ctx context.Context, s ContainerSpec) (string, error) {
	cfg := &container.Config{
		Image:           s.Image,
		Cmd:             s.Cmd,
		Entrypoint:      s.Entrypoint,
		Env:             s.Env,
		Labels:          s.Labels,
		WorkingDir:      s.WorkingDir,
		StopSignal:      s.StopSignal,
		NetworkDisabled: s.NetworkDisabled,
		User:            s.User,
	}
	hc := &container.HostConfig{ShmSize: s.ShmBytes}
	if s.PidsLimit > 0 {
		hc.PidsLimit = &s.PidsLimit
	}
	hc.CpusetCpus = s.CPUSet
	if s.Unprivileged {
		hc.CapDrop = []string{"ALL"}
		hc.SecurityOpt = []string{"no-new-privileges"}
	}
	hc.CapAdd = s.CapAdd
	for _, m := range s.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: m.Volume, Target: m.Target,
			VolumeOptions: &mount.VolumeOptions{Labels: m.Labels}})
	}
	hc.Memory = s.MemoryBytes
	if s.MemoryBytes > 0 {
		hc.MemorySwap = s.MemoryBytes // no swap beyond the limit, so OOM is OOM
	}
	if s.GPUs != nil {
		req := container.DeviceRequest{Driver: "nvidia", Capabilities: [][]string{{"gpu"}}}
		if len(s.GPUs.IDs) > 0 {
			req.DeviceIDs = s.GPUs.IDs
		} else {
			req.Count = s.GPUs.Count
		}
		hc.DeviceRequests = []container.DeviceRequest{req}
		hc.Runtime = d.runtimeForGPUs(ctx)
	}
	r, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: s.Name})
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", s.Name, translate(err))
	}
	return r.ID, nil
}

// Start starts a container; a missing GPU runtime becomes ErrNoGPURuntime.
func (d *Docker) Start(ctx context.Context, id string) error {
	if _, err := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", short(id), translate(err))
	}
	return nil
}

// Wait waits for the container to stop.
func (d *Docker) Wait(ctx context.Context, id string, nextExit bool) <-chan WaitResult {
	cond := container.WaitConditionNotRunning
	if nextExit {
		cond = container.WaitConditionNextExit
	}
	w := d.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: cond})
	out := make(chan WaitResult, 1)
	go func() {
		select {
		case r := <-w.Result:
			res := WaitResult{ExitCode: int(r.StatusCode)}
			if r.Error != nil && r.Error.Message != "" {
				res.Err = errors.New(r.Error.Message)
			}
			out <- res
		case err := <-w.Error:
			out <- WaitResult{ExitCode: -1, Err: fmt.Errorf("wait for container %s: %w", short(id), translate(err))}
		}
	}()
	return out
}

// Logs copies the container's output, demultiplexed, to stdout and stderr.
func (d *Docker) Logs(ctx context.Context, id string, o LogOptions, stdout, stderr io.Writer) error {
	tail := o.Tail
	if tail == "" {
		tail = "all"
	}
	r, err := d.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: o.Follow, Tail: tail, Timestamps: o.Timestamps,
	})
	if err != nil {
		return fmt.Errorf("read logs of container %s: %w", short(id), translate(err))
	}
	defer r.Close()
	if _, err := stdcopy.StdCopy(stdout, stderr, r); err != nil && ctx.Err() == nil {
		return fmt.Errorf("read logs of container %s: %w", short(id), err)
	}
	return nil
}

// Stop stops a container, killing it after grace.
func (d *Docker) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace.Seconds())
	if _, err := d.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop container %s: %w", short(id), translate(err))
	}
	return nil
}

// Kill signals a container.
func (d *Docker) Kill(ctx context.Context, id, signal string) error {
	if _, err := d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: signal}); err != nil {
		return fmt.Errorf("kill container %s: %w", short(id), translate(err))
	}
	return nil
}

// Exec runs a command in a running container and returns its exit code.
func (d *Docker) Exec(ctx context.Context, id string, o ExecOptions, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	created, err := d.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User: o.User, WorkingDir: o.WorkingDir, Env: o.Env, Cmd: o.Cmd, TTY: o.TTY,
		AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return 0, fmt.Errorf("run %s in container %s: %w", o.Cmd[0], short(id), translate(err))
	}
	att, err := d.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: o.TTY})
	if err != nil {
		return 0, fmt.Errorf("run %s in container %s: %w", o.Cmd[0], short(id), translate(err))
	}
	defer att.Close()
	if stdin != nil {
		go func() {
			io.Copy(att.Conn, stdin)
			att.CloseWrite()
		}()
	}
	done := make(chan error, 1)
	go func() {
		var err error
		if o.TTY {
			_, err = io.Copy(stdout, att.Reader)
		} else {
			_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
		}
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		att.Close()
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("run %s in container %s: %w", o.Cmd[0], short(id), err)
	}
	res, err := d.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("run %s in container %s: %w", o.Cmd[0], short(id), translate(err))
	}
	return res.ExitCode, nil
}

// Remove deletes a container.
func (d *Docker) Remove(ctx context.Context, id string, force bool) error {
	if _, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: force, RemoveVolumes: true}); err != nil {
		return fmt.Errorf("remove container %s: %w", short(id), translate(err))
	}
	return nil
}

// Rename renames the container.
func (d *Docker) Rename(ctx context.Context, id, name string) error {
	if _, err := d.cli.ContainerRename(ctx, id, client.ContainerRenameOptions{NewName: name}); err != nil {
		return fmt.Errorf("rename container %s to %s: %w", short(id), name, translate(err))
	}
	return nil
}

// SetCPUs moves the container onto the CPUs of cpuset.
func (d *Docker) SetCPUs(ctx context.Context, id, cpuset string) error {
	if _, err := d.cli.ContainerUpdate(ctx, id, client.ContainerUpdateOptions{Resources: &container.Resources{CpusetCpus: cpuset}}); err != nil {
		return fmt.Errorf("move container %s onto CPUs %s: %w", short(id), cpuset, translate(err))
	}
	return nil
}

// CopyTo unpacks tar into dir of the container.
func (d *Docker) CopyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	if _, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dir, Content: tar}); err != nil {
		return fmt.Errorf("copy into %s of container %s: %w", dir, short(id), translate(err))
	}
	return nil
}

// CopyFrom returns a tar of path in the container (running or stopped).
func (d *Docker) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	r, err := d.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, fmt.Errorf("copy %s from container %s: %w", path, short(id), translate(err))
	}
	return r.Content, nil
}

// Inspect returns a container's state.
func (d *Docker) Inspect(ctx context.Context, id string) (Container, error) {
	r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Container{}, fmt.Errorf("inspect container %s: %w", short(id), translate(err))
	}
	c := r.Container
	out := Container{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), ImageID: c.Image}
	out.Created, _ = time.Parse(time.RFC3339Nano, c.Created)
	if c.Config != nil {
		out.Image = c.Config.Image
		out.Labels = c.Config.Labels
	}
	if c.HostConfig != nil {
		out.MemoryBytes = c.HostConfig.Memory
		out.CPUSet = c.HostConfig.CpusetCpus
	}
	if s := c.State; s != nil {
		out.State = string(s.Status)
		out.ExitCode = s.ExitCode
		out.OOMKilled = s.OOMKilled
		out.Error = s.Error
		out.StartedAt = parseTime(s.StartedAt)
		out.FinishedAt = parseTime(s.FinishedAt)
	}
	return out, nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 { // the daemon writes 0001-01-01 for "never"
		return time.Time{}
	}
	return t
}

// List returns containers by label.
func (d *Docker) List(ctx context.Context, labels map[string]string, all bool) ([]Container, error) {
	r, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: all, Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list containers on %s: %w", d.host, err)
	}
	out := make([]Container, 0, len(r.Items))
	for _, c := range r.Items {
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, Container{
			ID: c.ID, Name: name, Image: c.Image, ImageID: c.ImageID, Labels: c.Labels,
			State: string(c.State), Created: time.Unix(c.Created, 0), ExitCode: listedExitCode(c.Status),
		})
	}
	return out, nil
}

// Volumes returns the named volumes with labels and how many containers
// use each. Sizes come from the daemon's disk usage where it can report
// volumes alone (API 1.42 and later) within volumeSizeWait; older daemons
// compute every container's size for that call, minutes on a busy host,
// so their sizes stay unknown (-1).
func (d *Docker) Volumes(ctx context.Context, labels map[string]string) ([]Volume, error) {
	r, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list volumes on %s: %w", d.host, translate(err))
	}
	out := make([]Volume, 0, len(r.Items))
	for _, v := range r.Items {
		vol := Volume{Name: v.Name, Labels: v.Labels, Size: -1, Containers: -1}
		vol.Created, _ = time.Parse(time.RFC3339, v.CreatedAt)
		users, err := d.cli.ContainerList(ctx, client.ContainerListOptions{
			All: true, Filters: client.Filters{}.Add("volume", v.Name)})
		if err != nil {
			return nil, fmt.Errorf("list the containers using volume %s on %s: %w", v.Name, d.host, translate(err))
		}
		vol.Containers = int64(len(users.Items))
		out = append(out, vol)
	}
	if len(out) > 0 && !versions.LessThan(d.cli.ClientVersion(), "1.42") {
		d.volumeSizes(ctx, out)
	}
	return out, nil
}

// volumeSizeWait bounds the disk-usage call that sizes volumes: the daemon
// walks every file of every volume for it.
const volumeSizeWait = 20 * time.Second

// volumeSizes fills in the sizes the daemon reports; a slow or failed
// report leaves them unknown.
func (d *Docker) volumeSizes(ctx context.Context, vols []Volume) {
	ctx, cancel := context.WithTimeout(ctx, volumeSizeWait)
	defer cancel()
	du, err := d.cli.DiskUsage(ctx, client.DiskUsageOptions{Volumes: true, Verbose: true})
	if err != nil {
		return
	}
	size := make(map[string]int64, len(du.Volumes.Items))
	for _, v := range du.Volumes.Items {
		if v.UsageData != nil {
			size[v.Name] = v.UsageData.Size
		}
	}
	for i := range vols {
		if n, ok := size[vols[i].Name]; ok {
			vols[i].Size = n
		}
	}
}

// RemoveVolume deletes a named volume.
func (d *Docker) RemoveVolume(ctx context.Context, name string) error {
	if _, err := d.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{}); err != nil {
		return fmt.Errorf("remove volume %s: %w", name, translate(err))
	}
	return nil
}

// listedExitCode reads the exit code from a container listing's status
// ("Exited (2) 3 minutes ago"), which is where the list API gives it;
// 0 for a container that has not exited.
func listedExitCode(status string) int {
	rest, ok := strings.CutPrefix(status, "Exited (")
	if !ok {
		return 0
	}
	code, _, _ := strings.Cut(rest, ")")
	n, err := strconv.Atoi(code)
	if err != nil {
		return 0
	}
	return n
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
