package prune

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
)

// images is the fake engine with job images, which it lists by label and
// removes.
type images struct {
	*enginetest.Engine
	ims []engine.Image
}

func (e *images) Images(_ context.Context, filter map[string]string) ([]engine.Image, error) {
	var out []engine.Image
	for _, im := range e.ims {
		ok := true
		for k, v := range filter {
			if got, has := im.Labels[k]; !has || v != "" && got != v {
				ok = false
			}
		}
		if ok {
			out = append(out, im)
		}
	}
	return out, nil
}

func (e *images) RemoveImage(_ context.Context, ref string) error {
	e.ims = slices.DeleteFunc(e.ims, func(im engine.Image) bool { return im.ID == ref })
	return nil
}

// host is a shared host with an image, a standby and a compile cache of
// each of me, you and no owner (an xrun before owners).
func host() *images {
	f := enginetest.New()
	f.VolumeSet = map[string]*engine.Volume{}
	e := &images{Engine: f}
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for i, owner := range []string{"me", "you", ""} {
		labels := func(more map[string]string) map[string]string {
			l := map[string]string{contract.LabelExperiment: "k"}
			if owner != "" {
				l[contract.LabelOwner] = owner
			}
			for k, v := range more {
				l[k] = v
			}
			return l
		}
		tag := "xrun/k:" + strings.Repeat(string(rune('a'+i)), 12)
		e.ims = append(e.ims, engine.Image{ID: "sha256:" + tag[7:], Tags: []string{tag}, Created: time.Now().Add(-time.Minute), Size: 1 << 20,
			Labels: labels(nil)})
		f.Add("xrun-k-0"+string(rune('a'+i))+"-standby", "running",
			labels(map[string]string{contract.LabelStandby: "key", contract.LabelJob: "0" + string(rune('a'+i)), "dev.xrun.standby-until": until}), time.Now())
		v := "xrun-cache-k-" + string(rune('a'+i))
		f.VolumeSet[v] = &engine.Volume{Name: v, Size: 1 << 20, Labels: labels(map[string]string{contract.LabelCache: "1", contract.LabelBaseID: "sha256:gone"})}
	}
	return e
}

// Without --all-users, prune names and removes the caller's image,
// standby and cache alone, dry or not; another user's and those of no
// owner stay, counted. --all-users removes all.
func TestHostPrunesTheOwnersObjectsAlone(t *testing.T) {
	ctx := context.Background()
	e := host()
	var out bytes.Buffer
	o := Options{DryRun: true, Owner: "me", Out: &out}
	rep, err := Host(ctx, e, dockerhost.New(e), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"would remove xrun/k:aaaaaaaaaaaa (k,",
		"would remove standby container xrun-k-0a-standby (k, me's)",
		"would remove cache volume xrun-cache-k-a (k,",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run says\n%s\nwithout %q", out.String(), want)
		}
	}
	if strings.Count(out.String(), "would remove") != 3 {
		t.Errorf("dry run names other users' objects:\n%s", out.String())
	}
	if rep.Others != 2 || rep.CachesOthers != 2 || len(rep.StandbyContainers) != 1 {
		t.Errorf("report %+v: want 2 images and 2 caches of others kept, 1 standby", rep)
	}
	var sum bytes.Buffer
	rep.Summary(&sum, o)
	if !strings.Contains(sum.String(), "2 of other users or of none (--all-users removes those)") {
		t.Errorf("summary:\n%s", sum.String())
	}
	if len(e.ims) != 3 || len(e.Containers) != 3 || len(e.VolumeSet) != 3 {
		t.Fatalf("the dry run removed something: %d images, %d containers, %d volumes", len(e.ims), len(e.Containers), len(e.VolumeSet))
	}

	out.Reset()
	if _, err := Host(ctx, e, dockerhost.New(e), Options{Owner: "me", Out: &out}); err != nil {
		t.Fatal(err)
	}
	if len(e.ims) != 2 || len(e.Containers) != 2 || len(e.VolumeSet) != 2 {
		t.Errorf("prune left %d images, %d containers, %d volumes; want 2 of each:\n%s", len(e.ims), len(e.Containers), len(e.VolumeSet), out.String())
	}
	for _, im := range e.ims {
		if im.Labels[contract.LabelOwner] == "me" {
			t.Errorf("prune kept my image %v", im.Tags)
		}
	}
	if !strings.Contains(out.String(), "removed standby container xrun-k-0a-standby") {
		t.Errorf("prune says:\n%s", out.String())
	}

	if _, err := Host(ctx, e, dockerhost.New(e), Options{}); err != nil {
		t.Fatal(err)
	}
	if len(e.ims) != 0 || len(e.Containers) != 0 || len(e.VolumeSet) != 0 {
		t.Errorf("--all-users left %d images, %d containers, %d volumes", len(e.ims), len(e.Containers), len(e.VolumeSet))
	}
}
