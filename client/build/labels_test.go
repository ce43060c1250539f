package build

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// A job image carries its builder's name as its owner, as the job's
// container does: prune removes only its user's images, and two users
// of a host never share one (the owner is in the Dockerfile, so in the
// image's reference).
func TestImageLabelsOwner(t *testing.T) {
	s := &spec.Spec{Name: "k"}
	mine, theirs := imageLabels(s, "sha256:b", "me", nil), imageLabels(s, "sha256:b", "you", nil)
	if mine[contract.LabelOwner] != "me" || theirs[contract.LabelOwner] != "you" {
		t.Errorf("owner labels %q, %q; want me, you", mine[contract.LabelOwner], theirs[contract.LabelOwner])
	}
	if _, ok := imageLabels(s, "", "", nil)[contract.LabelOwner]; ok {
		t.Error("an owner label without an owner")
	}
}

// A job with a cache volume tells its runner the volume's size limit.
func TestJobSpecCacheLimit(t *testing.T) {
	p := &Prepared{Spec: &spec.Spec{Name: "k"}, Mode: "cpu", Code: &buildctx.Context{}}
	s := p.JobSpec(context.Background(), &store.Job{ID: "0a", Owner: "me"}, t.TempDir(), JobOptions{CacheVolume: "xrun-cache-k-1", CacheLimit: 1 << 20})
	env := s.WhereEnv(s.Image, s.HostName, s.CacheVolume)
	if !slices.Contains(env, contract.EnvCacheLimit+"=1048576") || s.Labels[contract.LabelOwner] != "me" {
		t.Errorf("env %v, labels %v", env, s.Labels)
	}
	s = p.JobSpec(context.Background(), &store.Job{ID: "0b"}, t.TempDir(), JobOptions{})
	for _, kv := range s.WhereEnv(s.Image, s.HostName, s.CacheVolume) {
		if strings.HasPrefix(kv, contract.EnvCacheLimit+"=") {
			t.Errorf("a job without a cache volume has %s", kv)
		}
	}
}
