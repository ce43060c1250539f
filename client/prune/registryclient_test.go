package prune

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// quiet is an in-memory registry that does not log every request.
func quiet() http.Handler { return ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))) }

// serve starts an in-memory registry that answers a request with the
// status refuse gives it (0: serve it), and returns its host:port.
func serve(t *testing.T, refuse func(*http.Request) int) string {
	reg := quiet()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if code := refuse(req); code != 0 {
			w.WriteHeader(code)
			return
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// push writes a random image with labels and a creation time as ref.
func push(t *testing.T, ref string, created time.Time, labels map[string]string) {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.Config(img, v1.Config{Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}

// Images lists every tag under PATH/xrun/ with its digest, creation time
// and labels, and nothing else of the registry; Delete removes one.
func TestImagesAndDelete(t *testing.T) {
	srv := httptest.NewServer(quiet())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	old := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	push(t, host+"/team/xrun/softmax:aaaa-1111", old, map[string]string{"dev.xrun.experiment": "softmax"})
	push(t, host+"/team/xrun/softmax:aaaa-2222", old.Add(time.Hour), map[string]string{"dev.xrun.experiment": "softmax"})
	push(t, host+"/team/other:latest", old, nil)
	push(t, host+"/xrun/elsewhere:bbbb-3333", old, nil) // another path of the registry

	r, err := NewRegistry(host + "/team/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ims, note, err := r.Images(ctx, nil)
	if err != nil || note != "" {
		t.Fatal(err, note)
	}
	if len(ims) != 2 || ims[0].Ref != host+"/team/xrun/softmax:aaaa-1111" || !ims[0].Created.Equal(old) ||
		ims[0].Labels["dev.xrun.experiment"] != "softmax" || !strings.HasPrefix(ims[0].Digest, "sha256:") || ims[0].Bytes < 512 {
		t.Fatalf("Images = %+v", ims)
	}
	if err := r.Delete(ctx, ims[0].Ref, ims[0].Digest); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, ims[0].Ref, ims[0].Digest); err != nil {
		t.Errorf("deleting what is gone: %v", err)
	}
	if ims, _, err = r.Images(ctx, nil); err != nil || len(ims) != 1 || ims[0].Ref != host+"/team/xrun/softmax:aaaa-2222" {
		t.Errorf("after Delete: %+v, %v", ims, err)
	}
}

// A registry that refuses deletes says how to allow them.
func TestDeleteRefused(t *testing.T) {
	host := serve(t, func(req *http.Request) int {
		if req.Method == http.MethodDelete {
			return http.StatusMethodNotAllowed
		}
		return 0
	})
	push(t, host+"/xrun/quick:aaaa-1111", time.Now(), nil)
	r, err := NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	ims, _, err := r.Images(context.Background(), nil)
	if err != nil || len(ims) != 1 {
		t.Fatalf("Images = %+v, %v", ims, err)
	}
	if err := r.Delete(context.Background(), ims[0].Ref, ims[0].Digest); err == nil || !strings.Contains(err.Error(), "does not allow deletes") {
		t.Errorf("Delete on a registry without deletes: %v", err)
	}
}

func TestNewRefusesABadRegistry(t *testing.T) {
	if _, err := NewRegistry("not a host/x"); err == nil {
		t.Error("New accepted a registry with a space")
	}
}

// A registry that does not list its repositories is read through the
// repositories known from elsewhere, and says so; without any it is an error.
func TestImagesWithoutCatalog(t *testing.T) {
	host := serve(t, func(req *http.Request) int {
		if strings.HasSuffix(req.URL.Path, "/_catalog") {
			return http.StatusUnauthorized
		}
		return 0
	})
	push(t, host+"/xrun/quick:aaaa-1111", time.Now(), nil)
	push(t, host+"/xrun/quick:aaaa-2222", time.Now(), nil)
	r, err := NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Images(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "list its repositories") {
		t.Errorf("no catalog, nothing known: %v", err)
	}
	ims, note, err := r.Images(context.Background(), []string{"xrun/quick", "xrun/gone", "other/repo"})
	if err != nil || len(ims) != 2 || !strings.Contains(note, "does not list its repositories") {
		t.Errorf("Images = %+v, %q, %v", ims, note, err)
	}
}

func TestRepository(t *testing.T) {
	for ref, want := range map[string]string{
		"registry.lab:5000/team/xrun/softmax:aaaa-1111": "team/xrun/softmax",
		"localhost:5000/xrun/quick:t":                   "xrun/quick",
		"localhost:5000/xrun/quick@sha256:00":           "xrun/quick",
	} {
		if got := Repository(ref); got != want {
			t.Errorf("Repository(%q) = %q, want %q", ref, got, want)
		}
	}
}
