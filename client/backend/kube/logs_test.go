package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// A pod stopped while its runner's container was being created (a cancel
// or its deadline during the image's pull) shows the container terminated
// without a container ID. The kubelet has no log for it and answers a log
// request with 400, so the job has no log: Collect says its runner never
// started, asks for no log, and the state is an end before the runner ran.
func TestCollectPodStoppedBeforeItsContainer(t *testing.T) {
	ctx := context.Background()
	job, p := jobAndPod(corev1.PodFailed, corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated"},
	}, time.Now())
	p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	client := fake.NewClientset(job, &p)
	logReads := 0
	client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "log" {
			logReads++
		}
		return false, nil, nil
	})
	b := &Backend{Client: client, Namespace: "lab"}
	j := &store.Job{ID: "0123456789ab", ContainerName: job.Name}

	logs, out, err := b.Collect(ctx, j)
	if logs != nil || out != nil || !errors.Is(err, backend.ErrNotStarted) || !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Collect = %q, %v, %v; want no log and ErrNotStarted", logs, out, err)
	}
	if err := b.Logs(ctx, j, backend.LogOptions{}, nil, nil); !errors.Is(err, backend.ErrNotStarted) {
		t.Errorf("Logs: %v, want ErrNotStarted", err)
	}
	if logReads != 0 {
		t.Errorf("%d log requests for a container that was never created", logReads)
	}
	s, err := b.State(ctx, j)
	if err != nil || s.Phase != backend.Exited || s.ExitCode != contract.ExitInfra || !s.TimedOut || s.Message != p.Status.Message {
		t.Errorf("state %+v, %v; want exited before the runner ran, timed out, with the pod's message", s, err)
	}

	// Once created, the container has an ID and a log.
	p.Status.ContainerStatuses[0].State.Terminated.ContainerID = "containerd://0f1e2d3c"
	if _, err := client.CoreV1().Pods("lab").UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if logs, _, err := b.Collect(ctx, j); logs == nil || errors.Is(err, backend.ErrNotStarted) || logReads != 1 {
		t.Errorf("Collect of a container that ran = %q, %v after %d log reads; want its log read", logs, err, logReads)
	}
}

// jobAndPod are the test spec's Job (started) in namespace lab and a pod
// of it in phase, with the runner's container in state, that its node's
// kubelet took at started.
func jobAndPod(phase corev1.PodPhase, state corev1.ContainerState, started time.Time) (*batchv1.Job, corev1.Pod) {
	job := JobObject(testSpec(), "r/x:1", "0123456789ab", "", nil)
	job.Namespace = "lab"
	no := false
	job.Spec.Suspend = &no
	p := pod("xrun-quick-0123456789ab-x7k2p", time.Now(), phase, &corev1.ContainerStatus{State: state})
	p.Namespace, p.Labels = "lab", map[string]string{contract.LabelJob: "0123456789ab"}
	p.Status.StartTime = &metav1.Time{Time: started}
	return job, p
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"a\nb\nc\n", 2, "b\nc\n"}, {"a\nb\nc", 2, "b\nc"}, {"a\nb\n", 5, "a\nb\n"}, {"a\n", 0, ""}, {"", 3, ""}} {
		if got := string(lastLines([]byte(c.in), c.n)); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// A pod deleted by hand while it ran takes its log with it; the runner it
// stopped wrote its partial results into that log on the way out. The
// backend that followed the log hands that output back, and says whose
// log it is, whether the pod is gone or still listed with its log gone
// (the kubelet then answers a line, here the fake's "fake logs", with no
// output frame); one that followed nothing says the runner never started.
func TestCollectFollowedLogOfADeletedPod(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"status":"cancelled"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var frame bytes.Buffer
	if err := contract.WriteOut(&frame, dir); err != nil {
		t.Fatal(err)
	}
	for _, listed := range []bool{false, true} {
		job, p := jobAndPod(corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 130, ContainerID: "containerd://1"}}, time.Now())
		client := fake.NewClientset(job)
		if listed {
			client = fake.NewClientset(job, &p)
		}
		b := &Backend{Client: client, Namespace: "lab"}
		j := &store.Job{ID: "0123456789ab", ContainerName: job.Name}
		if _, _, err := b.Collect(ctx, j); !listed && !errors.Is(err, backend.ErrNotStarted) || listed && !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("listed %v: Collect with nothing followed: %v", listed, err)
		}

		// The stream is still on its way when the submit collects: the
		// frame comes after.
		w := b.followed.start(j.ID, p.Name)
		io.WriteString(w, "12:00:01 case N=8\n12:00:09 cancelled: SIGTERM\n")
		go func() {
			time.Sleep(300 * time.Millisecond)
			w.Write(frame.Bytes())
			w.end()
		}()

		logs, out, err := b.Collect(ctx, j)
		if err != nil {
			t.Fatalf("listed %v: Collect of the followed log: %v", listed, err)
		}
		if !strings.Contains(string(logs), "pod xrun-quick-0123456789ab-x7k2p was deleted while it ran") || !strings.Contains(string(logs), "cancelled: SIGTERM") || strings.Contains(string(logs), contract.OutPrefix) {
			t.Errorf("listed %v: log %q: want the followed lines, said to be followed, without the frame", listed, logs)
		}
		tr := tar.NewReader(out)
		found := false
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Name == "out/results.json" {
				data, _ := io.ReadAll(tr)
				found = string(data) == `{"status":"cancelled"}`
			}
		}
		if !found {
			t.Errorf("listed %v: the followed output has no out/results.json with the partial results", listed)
		}
	}
}

// A followed log keeps its last followedMax bytes, cut at a line.
func TestFollowedLogKeepsItsEnd(t *testing.T) {
	var f followed
	w := f.start("id", "pod")
	line := strings.Repeat("x", 1023) + "\n"
	for range 2 * followedMax / len(line) {
		io.WriteString(w, line)
	}
	io.WriteString(w, "last\n")
	w.end()
	_, data, cut := f.get(context.Background(), "id", time.Minute)
	if !cut || len(data) > followedMax || !strings.HasSuffix(string(data), "x\nlast\n") || !strings.HasPrefix(string(data), "x") || len(data)%1024 != 5 {
		t.Errorf("kept %d bytes (cut %v), want the last lines whole within %d", len(data), cut, followedMax)
	}
}
