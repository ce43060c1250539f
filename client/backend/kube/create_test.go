package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
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
			b := &Backend{Client: client, Namespace: "lab"}
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
	b := &Backend{Client: client, Namespace: "lab"}
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

// A job asking for more GPUs than any node offers is refused before
// anything is made, unless it asks to wait for such a node (--queue).
func TestCreateRefusesGPUsNoNodeHas(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{GPUResource: resource.MustParse("1")}}}
	client := fake.NewClientset(node)
	b := &Backend{Client: client, Namespace: "lab"}
	s := testSpec() // 2 GPUs
	err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s)
	var refused *backend.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "asks for 2 GPUs and the most any of its 1 nodes offers is 1") {
		t.Fatalf("Create: %v", err)
	}
	if left, _ := client.BatchV1().Jobs("lab").List(context.Background(), metav1.ListOptions{}); len(left.Items) != 0 {
		t.Errorf("a refused job made %d Jobs", len(left.Items))
	}
	s.WaitForNode = true
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s); err != nil {
		t.Errorf("with --queue: %v", err)
	}
	s.WaitForNode, s.GPUs, s.Name = false, &backend.GPUs{Count: 1}, "xrun-quick-0123456789ac"
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ac"}, s); err != nil {
		t.Errorf("one GPU, which the node has: %v", err)
	}
}

// A job asking for more memory or CPUs than any node offers its pods
// (allocatable, not capacity) is refused, naming the resource and the
// most a node has; with --queue it waits.
func TestCreateRefusesMemoryAndCPUsNoNodeHas(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("24Gi"), corev1.ResourceCPU: resource.MustParse("2")},
		Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("23Gi"), corev1.ResourceCPU: resource.MustParse("1900m")}}}
	client := fake.NewClientset(node)
	b := &Backend{Client: client, Namespace: "lab"}
	s := testSpec()
	s.GPUs, s.MemoryBytes = nil, 100<<30
	err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s)
	var refused *backend.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "the job asks for 100Gi of memory (resources.memory) and the most any of its 1 nodes offers its pods is 23Gi") {
		t.Errorf("100 GiB on a node of 23: %v", err)
	}
	s.MemoryBytes, s.CPUs = 1<<30, 2
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s); !errors.As(err, &refused) || !strings.Contains(err.Error(), "asks for 2 CPUs (--cpus or resources.cpus) and the most any of its 1 nodes offers its pods is 1900m") {
		t.Errorf("2 CPUs on a node of 1.9: %v", err)
	}
	if left, _ := client.BatchV1().Jobs("lab").List(context.Background(), metav1.ListOptions{}); len(left.Items) != 0 {
		t.Errorf("a refused job made %d Jobs", len(left.Items))
	}
	s.WaitForNode = true
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s); err != nil {
		t.Errorf("with --queue: %v", err)
	}
	s.WaitForNode, s.CPUs, s.Name = false, 1, "xrun-quick-0123456789ac"
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ac"}, s); err != nil {
		t.Errorf("1 CPU and 1 GiB, which the node has: %v", err)
	}
}

// failingPush is a builder whose pushes fail; it records the images
// removed.
type failingPush struct {
	engine.Engine
	removed []string
}

func (*failingPush) ImageExists(context.Context, string) (bool, error) { return true, nil }
func (*failingPush) Host() string                                      { return "unix:///builder.sock" }
func (*failingPush) Push(_ context.Context, ref string, _ func(string)) error {
	return fmt.Errorf("push %s: connection refused", ref)
}
func (f *failingPush) RemoveImage(_ context.Context, ref string) error {
	f.removed = append(f.removed, ref)
	return nil
}

// A failed push says so, makes no Job, and leaves no tag for the registry
// on the builder.
func TestCreateFailedPushLeavesNoTag(t *testing.T) {
	client := fake.NewClientset()
	b := &Backend{Client: client, Namespace: "lab"}
	f := &failingPush{}
	s := testSpec()
	s.Push.Builder = f
	err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s)
	if err == nil || !strings.Contains(err.Error(), "connection refused (is the registry reachable") || strings.Contains(err.Error(), "image build failed") {
		t.Fatalf("err %v", err)
	}
	if want := CodeImage("registry.lab:5000", s); len(f.removed) != 1 || f.removed[0] != want {
		t.Errorf("removed %v, want %s", f.removed, want)
	}
	if jobs, _ := client.BatchV1().Jobs("lab").List(context.Background(), metav1.ListOptions{}); len(jobs.Items) != 0 {
		t.Errorf("a Job was made: %v", jobs.Items)
	}
}

// A long push says how many layers are in the registry as it goes.
func TestPushProgress(t *testing.T) {
	defer func(d time.Duration) { pushReport = d }(pushReport)
	pushReport = 0
	var said []string
	p := pushProgress("reg/xrun/q:1", func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) })
	for _, line := range []string{"The push refers to repository [reg/xrun/q]", "aaaaaaaaaaaa: Preparing", "bbbbbbbbbbbb: Preparing",
		"aaaaaaaaaaaa: Layer already exists", "bbbbbbbbbbbb: Pushing", "bbbbbbbbbbbb: Pushed", "1: digest: sha256:00 size: 1"} {
		p(line)
	}
	if len(said) != 5 || said[0] != "pushing reg/xrun/q:1: 0 of 1 layers in the registry after 0s" ||
		!strings.HasPrefix(said[4], "pushing reg/xrun/q:1: 2 of 2 layers in the registry") {
		t.Errorf("said %q", said)
	}
}

// A job's POST token is in a Secret of its own, owned by its Job and
// mounted as the runner's file, never in the pod's spec; a Secret that
// cannot be made leaves no Job behind.
func TestCreatePostTokenSecret(t *testing.T) {
	s := testSpec()
	s.PostToken = "secret-token-1"
	client := fake.NewClientset()
	b := &Backend{Client: client, Namespace: "lab"}
	j := &store.Job{ID: "0123456789ab"}
	if err := b.Create(context.Background(), j, s); err != nil {
		t.Fatal(err)
	}
	job, err := client.BatchV1().Jobs("lab").Get(context.Background(), j.ContainerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == contract.EnvPostToken || strings.Contains(e.Value, s.PostToken) {
			t.Errorf("the pod's spec holds the token: %s=%s", e.Name, e.Value)
		}
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.MountPath == contract.PostTokenFile && m.ReadOnly && m.Name == tokenVolume
	}
	var mode int32
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == tokenVolume && v.Secret != nil && v.Secret.SecretName == TokenSecretName(job.Name) {
			mode = *v.Secret.DefaultMode
		}
	}
	if !mounted || mode != 0o400 {
		t.Errorf("the token's Secret is not mounted read-only at %s with mode 0400 (mounted %v, mode %o): %+v", contract.PostTokenFile, mounted, mode, c.VolumeMounts)
	}
	sec, err := client.CoreV1().Secrets("lab").Get(context.Background(), TokenSecretName(job.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["post-token"]) != s.PostToken || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].Kind != "Job" || sec.OwnerReferences[0].Name != job.Name {
		t.Errorf("the token's Secret: %+v", sec)
	}

	failing := fake.NewClientset()
	failing.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no"))
	})
	b = &Backend{Client: failing, Namespace: "lab"}
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, s); err == nil || !strings.Contains(err.Error(), "create secrets") {
		t.Fatalf("Create without the right to make secrets: %v", err)
	}
	if left, _ := failing.BatchV1().Jobs("lab").List(context.Background(), metav1.ListOptions{}); len(left.Items) != 0 {
		t.Errorf("left %d Jobs", len(left.Items))
	}
}
