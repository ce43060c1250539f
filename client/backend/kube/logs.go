package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Logs writes the runner's log without the output frame. Following, it
// waits for the runner to start, and goes on with the pod that replaces
// an evicted one.
func (b *Backend) Logs(ctx context.Context, j *store.Job, o backend.LogOptions, stdout, _ io.Writer) error {
	if _, err := b.job(ctx, j); err != nil {
		return err
	}
	seen := map[string]bool{}
	for {
		pod, err := b.logPod(ctx, j, o.Follow, seen)
		if err != nil || pod == "" {
			return err
		}
		seen[pod] = true
		opts := &corev1.PodLogOptions{Container: ContainerName, Follow: o.Follow, Timestamps: o.Timestamps}
		// A finished runner's log ends with its output frame, which the
		// filter strips: the last lines are counted after it, unless the
		// log is followed (the frame comes last, once the runner is done).
		out, tail := stdout, int64(-1)
		if n, err := strconv.ParseInt(o.Tail, 10, 64); err == nil && n >= 0 {
			if o.Follow {
				opts.TailLines = &n
			} else {
				out, tail = new(bytes.Buffer), n
			}
		}
		client := b.Client
		if o.Follow && b.Stream != nil {
			client = b.Stream
		}
		rc, err := client.CoreV1().Pods(b.Namespace).GetLogs(pod, opts).Stream(ctx)
		if err != nil {
			return fmt.Errorf("logs of pod %s: %w", pod, notFound(err))
		}
		f := contract.FilterOut(out)
		var in io.Reader = rc
		var kept *followedLog
		if o.Follow {
			kept = b.followed.start(j.ID, pod)
			in = io.TeeReader(rc, kept)
		}
		_, err = io.Copy(f, in)
		rc.Close()
		if kept != nil {
			kept.end()
		}
		f.Close()
		if tail >= 0 {
			stdout.Write(lastLines(out.(*bytes.Buffer).Bytes(), int(tail)))
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("logs of pod %s: %w", pod, err)
		}
		if !o.Follow || ctx.Err() != nil {
			return nil
		}
		if s, err := b.State(ctx, j); err != nil || s.Finished() {
			return nil
		}
	}
}

// lastLines is the last n lines of b.
func lastLines(b []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	i := end
	for lines := 0; i > 0; i-- {
		if b[i-1] == '\n' {
			if lines++; lines == n {
				break
			}
		}
	}
	return b[i:]
}

// logPod is the pod whose log to read: the newest one whose runner has
// started. Following, it waits for one it has not read yet; else "" when
// there is none.
func (b *Backend) logPod(ctx context.Context, j *store.Job, follow bool, seen map[string]bool) (string, error) {
	for {
		pods, err := b.pods(ctx, j.ID)
		if err != nil {
			return "", err
		}
		for _, p := range pods {
			if seen[p.Name] {
				continue
			}
			if runnerStarted(&p) {
				return p.Name, nil
			}
		}
		if !follow {
			if len(seen) == 0 {
				return "", fmt.Errorf("job %s has no log yet: %w", j.ID, backend.ErrNotStarted)
			}
			return "", nil
		}
		if s, err := b.State(ctx, j); err != nil || s.Finished() {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", nil
		case <-time.After(b.poll()):
		}
	}
}

// CopyOut unpacks the output frame from the log of the job's newest pod
// that ran.
func (b *Backend) CopyOut(ctx context.Context, j *store.Job) (io.ReadCloser, error) {
	_, out, err := b.collect(ctx, j)
	return out, err
}

// Collect reads the log of the job's newest pod that ran once, and returns
// it without the output frame beside the frame's output (backend.Collector);
// the log is nil when no pod of the job ran.
func (b *Backend) Collect(ctx context.Context, j *store.Job) ([]byte, io.ReadCloser, error) {
	if _, err := b.job(ctx, j); err != nil {
		return nil, nil, err
	}
	logs, out, err := b.collect(ctx, j)
	if logs == nil && errors.Is(err, backend.ErrNotStarted) {
		return nil, nil, fmt.Errorf("job %s has no log yet: %w", j.ID, backend.ErrNotStarted)
	}
	return logs, out, err
}

// runnerStarted reports whether the runner's container of pod p was
// created, and so has a log. A pod stopped while its container was being
// created (cancelled, or past its deadline, during the image's pull) shows
// the container terminated without a container ID, and the kubelet refuses
// to read a log for it.
func runnerStarted(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		if cs.State.Running != nil {
			return true
		}
		if t := cs.State.Terminated; t != nil {
			return t.ContainerID != ""
		}
	}
	return false
}

// collect is Collect without the check that the Job is still there; logs
// is nil when no pod of the job ran.
func (b *Backend) collect(ctx context.Context, j *store.Job) (logs []byte, out io.ReadCloser, err error) {
	pods, err := b.pods(ctx, j.ID)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pods {
		if !runnerStarted(&p) {
			continue
		}
		data, err := b.Client.CoreV1().Pods(b.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ContainerName}).DoRaw(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("logs of pod %s: %w", p.Name, notFound(err))
		}
		tarData, rest, err := contract.ExtractOut(data)
		if rest == nil {
			rest = []byte{} // the pod ran: an empty log is still its log
		}
		if errors.Is(err, contract.ErrNoOutFrame) {
			// A pod deleted by hand can be read for a moment after its
			// log is gone: the kubelet then answers with a line saying
			// so, as if it were the log.
			if pod, data, cut := b.followed.get(ctx, j.ID, followedWait); pod == p.Name && data != nil {
				if logs, out, err := fromFollowed(pod, data, cut); err == nil {
					return logs, out, nil
				}
			}
			return rest, nil, fmt.Errorf("pod %s: the runner wrote no output into its log (it is running, or died): %w", p.Name, backend.ErrNotFound)
		}
		if err != nil {
			return rest, nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		return rest, io.NopCloser(bytes.NewReader(tarData)), nil
	}
	if pod, data, cut := b.followed.get(ctx, j.ID, followedWait); data != nil {
		// Its pod is gone with its log (deleted by hand), but this
		// backend followed that log to its end.
		return fromFollowed(pod, data, cut)
	}
	if bj, err := b.job(ctx, j); err == nil && podDeleted(bj, pods) {
		return nil, nil, fmt.Errorf("its pod was deleted, and its log with it, before xrun read it (an attached submit keeps a copy of the log as it follows): %w", backend.ErrNotFound)
	}
	return nil, nil, fmt.Errorf("job %s: no pod of it started the runner: %w", j.ID, backend.ErrNotStarted)
}

// fromFollowed is collect's answer from the followed log data of pod,
// which is gone: the log without the output frame, and the output.
func fromFollowed(pod string, data []byte, cut bool) ([]byte, io.ReadCloser, error) {
	tarData, rest, err := contract.ExtractOut(data)
	if rest == nil {
		rest = []byte{}
	}
	note := fmt.Sprintf("(pod %s was deleted while it ran, and its log with it: this is its log as xrun followed it", pod)
	if cut {
		note += fmt.Sprintf(", its first lines left out past %d MiB", followedMax>>20)
	}
	rest = append([]byte(note+")\n"), rest...)
	if errors.Is(err, contract.ErrNoOutFrame) {
		return rest, nil, fmt.Errorf("pod %s was deleted before its runner wrote its output into its log: %w", pod, backend.ErrNotFound)
	}
	if err != nil {
		return rest, nil, fmt.Errorf("pod %s, as followed: %w", pod, err)
	}
	return rest, io.NopCloser(bytes.NewReader(tarData)), nil
}
