// Registry reads and deletes the job images that the Kubernetes
// backend pushes to a cluster's registry (REGISTRY/xrun/NAME:TAG), over the
// registry's HTTP API, with docker login's credentials.

package prune

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Repo is the repository path, under the registry's own path, that xrun's
// job images are pushed to (kube.CodeImage).
const Repo = "xrun/"

// Image is one tag of a job image in the registry.
type Image struct {
	// Ref is REGISTRY/xrun/NAME:TAG, as a Job's container names it.
	Ref    string
	Digest string
	// Created is the image's creation time, from its config.
	Created time.Time
	Labels  map[string]string
	// Bytes is the size of its layers and config (shared layers count in
	// every image that has them).
	Bytes int64
}

// Registry is the registry given as HOST[:PORT][/PATH].
type Registry struct {
	reg  name.Registry
	path string // "" or "team/"
	opts []remote.Option
}

// NewRegistry parses registry (HOST[:PORT][/PATH]). A registry on localhost or a
// loopback or private address is tried over HTTPS, then plain HTTP, as
// docker does by default; any other is spoken to over HTTPS.
func NewRegistry(registry string, opts ...remote.Option) (*Registry, error) {
	registry = strings.TrimSuffix(strings.TrimSpace(registry), "/")
	host, path, _ := strings.Cut(registry, "/")
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("registry %q: %w", registry, err)
	}
	if path != "" {
		path += "/"
	}
	all := append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	return &Registry{reg: reg, path: path, opts: all}, nil
}

// String is the registry as given.
func (r *Registry) String() string {
	if r.path == "" {
		return r.reg.RegistryStr()
	}
	return r.reg.RegistryStr() + "/" + strings.TrimSuffix(r.path, "/")
}

// WithoutHost is ref less its registry's host: "team/xrun/softmax:T" for
// "registry.lab:5000/team/xrun/softmax:T", so that refs compare whatever
// name or address the host goes by.
func WithoutHost(ref string) string {
	_, rest, _ := strings.Cut(ref, "/")
	return rest
}

// Repository is ref's repository path in its registry, less host and tag
// or digest: "team/xrun/softmax" for "registry.lab:5000/team/xrun/softmax:T".
func Repository(ref string) string {
	rest := WithoutHost(ref)
	if i := strings.Index(rest, "@"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest = rest[:i]
	}
	return rest
}

// Images lists xrun's job images: every tag of the repositories under
// PATH/xrun/ in the registry's catalog, and of known (repository paths
// known from elsewhere: Jobs, job records). A registry that does not
// serve its catalog to this user (many hosted ones) is read through known
// alone, and note says so.
func (r *Registry) Images(ctx context.Context, known []string) (ims []Image, note string, err error) {
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.opts...)
	repos, err := remote.Catalog(ctx, r.reg, opts...)
	if err != nil {
		var te *transport.Error
		if !errors.As(err, &te) || te.StatusCode < 400 || te.StatusCode >= 500 || len(known) == 0 {
			return nil, "", r.wrap("list its repositories", err)
		}
		note = fmt.Sprintf("the registry does not list its repositories (%s): read the %d known from the cluster's Jobs and this store's jobs", http.StatusText(te.StatusCode), len(known))
	}
	seen := map[string]bool{}
	var out []Image
	for _, repo := range append(repos, known...) {
		if seen[repo] || !strings.HasPrefix(repo, r.path+Repo) {
			continue
		}
		seen[repo] = true
		rr := r.reg.Repo(repo)
		tags, err := remote.List(rr, opts...)
		if err != nil {
			if isNotFound(err) {
				continue // emptied since the catalog was read
			}
			return nil, "", r.wrap("list the tags of "+repo, err)
		}
		for _, tag := range tags {
			im, err := r.image(rr.Tag(tag), opts)
			if err != nil {
				if isNotFound(err) {
					continue
				}
				return nil, "", r.wrap("read "+rr.Tag(tag).String(), err)
			}
			out = append(out, im)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, note, nil
}

func (r *Registry) image(tag name.Tag, opts []remote.Option) (Image, error) {
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		return Image{}, err
	}
	im := Image{Ref: tag.String(), Digest: desc.Digest.String()}
	img, err := desc.Image()
	if err != nil {
		return Image{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Image{}, err
	}
	im.Created, im.Labels = cf.Created.UTC(), cf.Config.Labels
	if m, err := img.Manifest(); err == nil {
		im.Bytes = m.Config.Size
		for _, l := range m.Layers {
			im.Bytes += l.Size
		}
	}
	return im, nil
}

// Delete deletes the manifest digest of repository ref's (and so every tag
// that points at it). The registry must allow deletes; its garbage
// collection frees the layers no manifest uses any more.
func (r *Registry) Delete(ctx context.Context, ref, digest string) error {
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return err
	}
	d := t.Context().Digest(digest)
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.opts...)
	if err := remote.Delete(d, opts...); err != nil && !isNotFound(err) {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusMethodNotAllowed {
			return fmt.Errorf("delete %s: the registry %s does not allow deletes (distribution: storage.delete.enabled: true)", ref, r)
		}
		return r.wrap("delete "+ref, err)
	}
	// Deleting a manifest removes the tags that point at it in the
	// distribution registry; a registry that keeps them has the tag
	// deleted too (the OCI distribution spec's tag deletion).
	desc, err := remote.Head(t, opts...)
	switch {
	case err != nil && isNotFound(err):
		return nil
	case err != nil:
		return r.wrap("read "+ref+" after deleting it", err)
	case desc.Digest.String() != digest:
		return nil // pushed again since it was listed: not this image any more
	}
	if err := remote.Delete(t, opts...); err != nil && !isNotFound(err) {
		return r.wrap("delete the tag "+ref+" (its manifest is deleted)", err)
	}
	return nil
}

func (r *Registry) wrap(what string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("registry %s: %s: %w (log in with docker login %s)", r, what, err, r.reg.RegistryStr())
	}
	return fmt.Errorf("registry %s: %s: %w", r, what, err)
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}
