//go:build integration

package engine

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The daemon pulls an image of three layers from a registry on this
// machine (the daemon may pull from 127.0.0.1 over plain HTTP): Pull
// reports the layers as they come, and ends with all three there.
func TestDockerPullProgress(t *testing.T) {
	d := daemon(t)
	ctx := context.Background()
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img, err := random.Image(64<<10, 3)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/xrun-test/pull:1"
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.RemoveImage(context.Background(), ref) })

	var got []PullProgress
	if err := d.Pull(ctx, ref, func(p PullProgress) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 {
		t.Fatalf("%d progress reports, want one at least per layer: %+v", len(got), got)
	}
	if last := got[len(got)-1]; last.Layers != 3 || last.Done != 3 {
		t.Errorf("last report %+v, want 3 of 3 layers", last)
	}
	if ok, err := d.ImageExists(ctx, ref); !ok || err != nil {
		t.Errorf("ImageExists(%s) = %v, %v after the pull", ref, ok, err)
	}
	t.Logf("%d reports, the last %s", len(got), got[len(got)-1])
}
