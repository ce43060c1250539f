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
	"github.com/xrun-dev/xrun/client/store"
)

// A cancel of a job whose pod is on its node but has not created the
// runner's container (its volumes or image are still coming) deletes the
// Job: a kubelet waiting for a volume enforces no deadline until the wait
// ends, and there is no log to keep.
func TestStopBeforeTheRunnerStarts(t *testing.T) {
	ctx := context.Background()
	job, p := jobAndPod(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}, time.Now().Add(-time.Minute))
	client := fake.NewClientset(job, &p)
	b := &Backend{Client: client, Namespace: "lab"}
	j := &store.Job{ID: "0123456789ab", ContainerName: job.Name}

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
