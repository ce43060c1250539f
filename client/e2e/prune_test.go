//go:build integration

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
)

// prune removes xrun images no container uses, and only those: the one a
// job's container still holds stays until xrun rm.
func TestPrune(t *testing.T) {
	mark := "xrun-prune-test=" + randomHex(t)
	r := submit(t, 5*time.Minute, "quick", "-d", "--label", mark)
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	expect(t, x.Run(t, 3*time.Minute, "wait", id), 0)
	image := func() []string {
		k, v, _ := strings.Cut(mark, "=")
		ims, err := eng.Images(context.Background(), map[string]string{k: v})
		if err != nil {
			t.Fatal(err)
		}
		var tags []string
		for _, im := range ims {
			tags = append(tags, im.Tags...)
		}
		return tags
	}
	if len(image()) == 0 {
		t.Fatal("the job's image carries no test label")
	}

	held := x.Run(t, time.Minute, "prune", "--older-than", "0", "--label", mark)
	expect(t, held, 0, "removed 0 images", "kept 1 in use by containers")
	if len(image()) == 0 {
		t.Fatal("prune removed an image a container uses")
	}

	expect(t, x.Run(t, time.Minute, "rm", id), 0)
	young := x.Run(t, time.Minute, "prune", "--dry-run", "--label", mark)
	expect(t, young, 0, "would remove 0 images", "1 built in the last 1h0m0s")
	dry := x.Run(t, time.Minute, "prune", "--dry-run", "--older-than", "0", "--label", mark)
	expect(t, dry, 0, "would remove 1 image ")
	if !strings.Contains(dry.Stdout, "would remove ") || !strings.Contains(dry.Stdout, "e2e-quick") {
		t.Errorf("dry run lists:\n%s", dry.Stdout)
	}
	if len(image()) == 0 {
		t.Fatal("--dry-run removed the image")
	}
	p := x.Run(t, time.Minute, "prune", "--older-than", "0", "--label", mark, "--json")
	expect(t, p, 0)
	var rep struct {
		DryRun  bool `json:"dry_run"`
		Removed []struct {
			Ref, ID, Experiment string
			Bytes               int64
		} `json:"removed"`
		Bytes int64 `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(p.Stdout), &rep); err != nil || rep.DryRun || len(rep.Removed) != 1 ||
		rep.Removed[0].Experiment != "e2e-quick" || !strings.HasPrefix(rep.Removed[0].ID, "sha256:") || rep.Bytes <= 0 {
		t.Errorf("prune --json: %v\n%s", err, p.Stdout)
	}
	if tags := image(); len(tags) != 0 {
		t.Errorf("after prune: %v", tags)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// An image that another is built on goes after that one (a Kubernetes
// job's code image is built on its job image), and stays, counted, while
// the other stays: prune never fails on the order the daemon lists them.
func TestPruneImageWithChildren(t *testing.T) {
	ctx := context.Background()
	rnd := randomHex(t)
	mark := "xrun-prune-test=" + rnd
	k, v, _ := strings.Cut(mark, "=")
	build := func(tag, dockerfile string) {
		t.Helper()
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))})
		tw.Write([]byte(dockerfile))
		tw.Close()
		if _, err := eng.Build(ctx, &buf, engine.BuildOptions{Tag: tag}, nil); err != nil {
			t.Fatalf("build %s: %v", tag, err)
		}
		t.Cleanup(func() { eng.RemoveImage(context.Background(), tag) })
	}
	base := "xrun/e2e-prune-base:" + rnd
	build(base, fmt.Sprintf("FROM scratch\nLABEL %s=e2e-prune %s=%s\nENV A=1\n", contract.LabelExperiment, k, v))
	build("xrun/e2e-prune-child:"+rnd, fmt.Sprintf("FROM %s\nENV B=2\n", base))
	// Built by hand, the images have no owner: --all-users.
	p := x.Run(t, time.Minute, "prune", "--all-users", "--older-than", "0", "--label", mark)
	expect(t, p, 0, "removed 2 images")
	if ims, err := eng.Images(ctx, map[string]string{k: v}); err != nil || len(ims) != 0 {
		t.Errorf("left %d images (%v)", len(ims), err)
	}

	// A child that the prune does not select (another label value) keeps
	// its base.
	build(base, fmt.Sprintf("FROM scratch\nLABEL %s=e2e-prune %s=%s\nENV A=1\n", contract.LabelExperiment, k, v))
	build("xrun/e2e-prune-child:"+rnd, fmt.Sprintf("FROM %s\nLABEL %s=other\nENV B=2\n", base, k))
	p = x.Run(t, time.Minute, "prune", "--all-users", "--older-than", "0", "--label", mark)
	expect(t, p, 0, "removed 0 images", "and 1 that a kept image is built on")
}
