package kube

import (
	"context"
	"errors"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
)

// pushedBuilder is a builder whose code images are all pushed already.
type pushedBuilder struct{ engine.Engine }

func (pushedBuilder) ImageExists(context.Context, string) (bool, error) { return true, nil }
func (pushedBuilder) Push(context.Context, string, func(string)) error  { return nil }
func (pushedBuilder) Host() string                                      { return "unix:///builder.sock" }

// A Ctrl-C while the Job's create request is in flight, or a create that
// fails after the API server made the Job, leaves no Job behind.
func TestCreateLeavesNoJobWhenCutOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		// during runs inside the create request, after the Job is made.
		during func(cancel context.CancelFunc) error
		want   func(error) bool
	}{
		{"interrupted", func(cancel context.CancelFunc) error { cancel(); return nil },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"lost reply", func(context.CancelFunc) error {
			return apierrors.NewTimeoutError("the request was cut off", 1)
		}, func(err error) bool { return apierrors.IsTimeout(err) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				obj := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job)
				gvr := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
				if err := client.Tracker().Create(gvr, obj, obj.Namespace); err != nil {
					return true, nil, err
				}
				if err := tc.during(cancel); err != nil {
					return true, nil, err
				}
				return true, obj, nil
			})
			b := &Backend{Client: client, Namespace: "lab", Builder: pushedBuilder{}, Registry: "registry.lab:5000"}
			j := &store.Job{ID: "0123456789ab"}
			err := b.Create(ctx, j, testSpec())
			if !tc.want(err) {
				t.Fatalf("Create: %v", err)
			}
			left, lerr := client.BatchV1().Jobs("lab").List(context.Background(), metav1.ListOptions{})
			if lerr != nil || len(left.Items) != 0 {
				t.Errorf("left %d Jobs (%v)", len(left.Items), lerr)
			}
			if j.ContainerID != "" {
				t.Errorf("the record names a Job that is gone: %q", j.ContainerID)
			}
		})
	}
}

// A Job of the same name made before is not the failed create's to delete.
func TestCreateKeepsAJobAlreadyThere(t *testing.T) {
	client := fake.NewClientset()
	b := &Backend{Client: client, Namespace: "lab", Builder: pushedBuilder{}, Registry: "registry.lab:5000"}
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, testSpec()); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, testSpec()); !apierrors.IsAlreadyExists(errors.Unwrap(err)) {
		t.Fatalf("second Create: %v", err)
	}
	left, _ := client.BatchV1().Jobs("lab").List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 1 {
		t.Errorf("%d Jobs, want the first one", len(left.Items))
	}
}
