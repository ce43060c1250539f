package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/contract"
)

// A cancel of a job whose pod is on its node but has not created the
// runner's container (its volumes or image are still coming) deletes the
// Job: a kubelet waiting for a volume enforces no deadline until the wait
// ends, and there is no log to keep.
func TestStopBeforeTheRunnerStarts(t *testing.T) {
	ctx := context.Background()
	job := JobObject(testSpec(), "r/x:1", "0123456789ab", "", nil)
	job.Namespace = "lab"
	no := false
	job.Spec.Suspend = &no
	p := pod("xrun-quick-0123456789ab-x7k2p", time.Now(), corev1.PodPending, &corev1.ContainerStatus{State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"},
	}})
	p.Namespace, p.Labels = "lab", map[string]string{contract.LabelJob: "0123456789ab"}
	p.Status.StartTime = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	client := fake.NewClientset(job, &p)
	b := &Backend{Client: client, Namespace: "lab"}
	j := &jobs.Job{ID: "0123456789ab", ContainerName: job.Name}

	err := b.Stop(ctx, j, time.Second)
	if !errors.Is(err, backend.ErrNotStarted) {
		t.Fatalf("Stop: %v, want ErrNotStarted", err)
	}
	if _, err := b.State(ctx, j); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("State after the stop: %v, want the Job gone", err)
	}
	if got, _ := client.CoreV1().Pods("lab").Get(ctx, p.Name, metav1.GetOptions{}); got != nil && got.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("the pod's deadline was patched (%d) instead of the Job deleted", *got.Spec.ActiveDeadlineSeconds)
	}
}
