package dockerhost

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// A job's container starts its runner as root with the runner's three
// capabilities and no others (runner/sandbox); --root gives Docker's
// defaults and what CapAdd asks; GPUs, the cache volume and no network
// carry over.
func TestContainerSpec(t *testing.T) {
	s := backend.Spec{Name: "xrun-k-0123", Image: "xrun/k:1", Env: []string{"A=1"}, Labels: map[string]string{"dev.xrun.job": "0123"},
		GPUs: &backend.GPUs{IDs: []string{"0", "2"}}, CacheVolume: "xrun-cache-k-abc", CacheLabels: map[string]string{contract.LabelCache: "1"},
		NoNetwork: true, CapAdd: []string{"SYS_ADMIN"}}
	cs := ContainerSpec(s)
	if cs.User != "0:0" || !cs.Unprivileged || !slices.Equal(cs.CapAdd, contract.RunnerCaps) {
		t.Errorf("user %q, unprivileged %v, caps %v: want root with the runner's capabilities alone", cs.User, cs.Unprivileged, cs.CapAdd)
	}
	if cs.GPUs == nil || !slices.Equal(cs.GPUs.IDs, []string{"0", "2"}) || !cs.NetworkDisabled {
		t.Errorf("GPUs %+v, network disabled %v", cs.GPUs, cs.NetworkDisabled)
	}
	if len(cs.Mounts) != 1 || cs.Mounts[0].Volume != s.CacheVolume || cs.Mounts[0].Target != contract.CacheDir {
		t.Errorf("mounts %+v, want the cache volume at %s", cs.Mounts, contract.CacheDir)
	}
	s.Root, s.CacheVolume, s.GPUs = true, "", nil
	cs = ContainerSpec(s)
	if cs.User != "" || cs.Unprivileged || !slices.Equal(cs.CapAdd, []string{"SYS_ADMIN"}) || cs.GPUs != nil || len(cs.Mounts) != 0 {
		t.Errorf("--root: %+v", cs)
	}
}

// The POST token goes into the container as a file only root reads, never
// into its configuration.
func TestCreateCopiesTheTokenAsAFile(t *testing.T) {
	f := enginetest.New()
	b := New(f)
	j := &store.Job{ID: "0123"}
	s := backend.Spec{Name: "xrun-k-0123", Image: "test/base:1", Labels: map[string]string{"dev.xrun.job": "0123"}, PostToken: "s3cr3t"}
	if err := b.Create(context.Background(), j, s); err != nil {
		t.Fatal(err)
	}
	c := f.Containers[j.ContainerID]
	if c == nil || j.ContainerName != s.Name {
		t.Fatalf("job %+v: no container", j)
	}
	if !slices.Contains(c.Copied, contract.PostTokenFile) {
		t.Errorf("copied %v, want %s", c.Copied, contract.PostTokenFile)
	}
	for _, e := range c.Spec.Env {
		if strings.Contains(e, "s3cr3t") {
			t.Errorf("the token is in the container's environment: %s", e)
		}
	}
}

// failingCopy is an engine whose copies into a container fail.
type failingCopy struct{ *enginetest.Engine }

func (failingCopy) CopyTo(context.Context, string, string, io.Reader) error {
	return errors.New("disk full")
}

// A create whose copy fails, or whose ctx ended before it, leaves no
// container behind.
func TestCreateLeavesNothingBehind(t *testing.T) {
	f := enginetest.New()
	b := New(failingCopy{f})
	j := &store.Job{ID: "0123"}
	s := backend.Spec{Name: "xrun-k-0123", Image: "test/base:1", Labels: map[string]string{"dev.xrun.job": "0123"}, PostToken: "t"}
	err := b.Create(context.Background(), j, s)
	if err == nil || !strings.Contains(err.Error(), "copy the POST token") || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
	if len(f.Containers) != 0 || len(f.Removed) != 1 {
		t.Errorf("%d containers left, %d removed: want the one made removed", len(f.Containers), len(f.Removed))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New(f).Create(ctx, &store.Job{ID: "4567"}, backend.Spec{Name: "xrun-k-4567", Image: "test/base:1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("create after ctx ended: %v", err)
	}
	if len(f.Containers) != 0 {
		t.Errorf("%d containers left after a create whose ctx had ended", len(f.Containers))
	}
	var _ engine.Engine = failingCopy{f}
}
