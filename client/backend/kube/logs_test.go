package kube

import (
	"context"
	"errors"
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
