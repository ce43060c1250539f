package engine

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// The image half of Docker: look-ups, pull and push, builds.

// ImageExists reports whether ref is on the host.
func (d *Docker) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := d.ImageID(ctx, ref)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ImageID returns the id of ref on the host.
func (d *Docker) ImageID(ctx context.Context, ref string) (string, error) {
	r, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			return "", fmt.Errorf("image %s: %w", ref, ErrNotFound)
		}
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return r.ID, nil
}

// ImageConfig returns the id, labels and environment of ref.
func (d *Docker) ImageConfig(ctx context.Context, ref string) (ImageConfig, error) {
	r, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			return ImageConfig{}, fmt.Errorf("image %s: %w", ref, ErrNotFound)
		}
		return ImageConfig{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	c := ImageConfig{ID: r.ID}
	if r.Config != nil {
		c.Labels, c.Env = r.Config.Labels, r.Config.Env
	}
	return c, nil
}

// Pull fetches ref from its registry.
func (d *Docker) Pull(ctx context.Context, ref string, progress func(PullProgress)) error {
	r, err := d.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer r.Close()
	if err := decodePull(r, progress); err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	return nil
}

// Push uploads ref to its registry.
func (d *Docker) Push(ctx context.Context, ref string, progress func(string)) error {
	auth, err := registryAuth(ref)
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	r, err := d.cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, translate(err))
	}
	defer r.Close()
	if _, err := decodeStream(r, progress); err != nil {
		// The daemon's push stream fails as its build stream does, but it
		// is no build that failed.
		var be *BuildError
		if errors.As(err, &be) {
			return fmt.Errorf("push %s: %s", ref, be.Message)
		}
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// registryAuth is the X-Registry-Auth value for ref's registry: the
// credentials `docker login` stored, or none.
func registryAuth(ref string) (string, error) {
	host, _, _ := strings.Cut(ref, "/")
	cf, err := config.Load(config.Dir())
	if err != nil {
		return "", fmt.Errorf("read the docker CLI's credentials: %w", err)
	}
	ac, err := cf.GetAuthConfig(host)
	if err != nil {
		return "", fmt.Errorf("credentials for %s: %w", host, err)
	}
	data, err := json.Marshal(map[string]string{
		"username": ac.Username, "password": ac.Password, "serveraddress": host,
		"identitytoken": ac.IdentityToken, "registrytoken": ac.RegistryToken,
	})
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(data), nil
}

// RemoveImage deletes ref from the host.
func (d *Docker) RemoveImage(ctx context.Context, ref string) error {
	if _, err := d.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
		return fmt.Errorf("remove image %s: %w", ref, translate(err))
	}
	return nil
}

// SaveImage returns ref as a docker save archive.
func (d *Docker) SaveImage(ctx context.Context, ref string) (io.ReadCloser, error) {
	r, err := d.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, fmt.Errorf("save image %s: %w", ref, translate(err))
	}
	return r, nil
}

// Images lists images by label.
func (d *Docker) Images(ctx context.Context, labels map[string]string) ([]Image, error) {
	r, err := d.cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list images on %s: %w", d.host, err)
	}
	out := make([]Image, 0, len(r.Items))
	for _, im := range r.Items {
		out = append(out, Image{ID: im.ID, Tags: im.RepoTags, Created: time.Unix(im.Created, 0), Size: im.Size, Labels: im.Labels, Parent: im.ParentID})
	}
	return out, nil
}

func labelFilters(labels map[string]string) client.Filters {
	f := client.Filters{}
	for k, v := range labels {
		if v == "" {
			f.Add("label", k)
		} else {
			f.Add("label", k+"="+v)
		}
	}
	return f
}

// Build sends the context to the daemon's builder and decodes its stream.
func (d *Docker) Build(ctx context.Context, tar io.Reader, opts BuildOptions, progress func(string)) (string, error) {
	r, err := d.cli.ImageBuild(ctx, tar, client.ImageBuildOptions{
		Tags:        []string{opts.Tag},
		Labels:      opts.Labels,
		NoCache:     opts.NoCache,
		Remove:      true,
		ForceRemove: true,
		Dockerfile:  "Dockerfile",
	})
	if err != nil {
		return "", fmt.Errorf("build %s on %s: %w", opts.Tag, d.host, err)
	}
	defer r.Body.Close()
	id, err := decodeStream(r.Body, progress)
	if err != nil {
		return "", err
	}
	if id == "" {
		if id, err = d.ImageID(ctx, opts.Tag); err != nil {
			return "", fmt.Errorf("build %s: %w", opts.Tag, err)
		}
	}
	return id, nil
}

// streamError is the message of an error in the daemon's JSON stream.
func streamError(e *jsonstream.Error) string {
	if msg := strings.TrimSpace(e.Message); msg != "" {
		return msg
	}
	return "the daemon reported an error without a message"
}

// decodeStream reads the daemon's JSON message stream of a build or a push
// (a pull's is decodePull's). An errorDetail becomes a *BuildError naming
// the last step and the output before it; the image id comes from the aux
// message when there is one.
func decodeStream(r io.Reader, progress func(string)) (imageID string, err error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var step string
	var last []string
	var partial string
	emit := func(line string) {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "Step ") {
			step = line
		}
		if strings.TrimSpace(line) != "" {
			last = append(last, line)
			if len(last) > 15 {
				last = last[len(last)-15:]
			}
		}
		if progress != nil {
			progress(line)
		}
	}
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", fmt.Errorf("read build output: %w", err)
		}
		if m.Error != nil {
			if partial != "" {
				emit(partial)
			}
			return "", &BuildError{Step: step, Message: streamError(m.Error), Last: last}
		}
		if m.Aux != nil {
			var aux struct {
				ID string `json:"ID"`
			}
			if json.Unmarshal(*m.Aux, &aux) == nil && aux.ID != "" {
				imageID = aux.ID
			}
		}
		text := m.Stream
		if text == "" && m.Status != "" {
			text = m.Status
			if m.ID != "" {
				text = m.ID + ": " + text
			}
			text += "\n"
		}
		partial += text
		for {
			i := strings.IndexByte(partial, '\n')
			if i < 0 {
				break
			}
			emit(partial[:i])
			partial = partial[i+1:]
		}
	}
	if partial != "" {
		emit(partial)
	}
	return imageID, nil
}
