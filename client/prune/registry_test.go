package prune

import (
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

// The plan keeps what a Job names (whatever host it spells), what is young,
// what lacks the labels asked for, and any tag whose manifest a kept tag
// shares; it removes the rest.
func TestPlanRegistryPrune(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	old := now.Add(-48 * time.Hour)
	exp := map[string]string{"dev.xrun.experiment": "softmax", "team": "kernels"}
	ims := []Image{
		{Ref: "10.0.0.5:5000/xrun/softmax:a-1", Digest: "sha256:1", Created: old, Labels: exp}, // a Job names it
		{Ref: "10.0.0.5:5000/xrun/softmax:a-2", Digest: "sha256:2", Created: old, Labels: exp}, // goes
		{Ref: "10.0.0.5:5000/xrun/softmax:a-3", Digest: "sha256:3", Created: now, Labels: exp}, // young
		{Ref: "10.0.0.5:5000/xrun/other:b-1", Digest: "sha256:4", Created: old, Labels: nil},   // not team=kernels
		{Ref: "10.0.0.5:5000/xrun/softmax:a-4", Digest: "sha256:1", Created: old, Labels: exp}, // shares a-1's manifest
		{Ref: "10.0.0.5:5000/xrun/softmax:a-5", Digest: "sha256:5", Created: old, Labels: exp}, // goes
	}
	used := map[string]bool{WithoutHost("prune.lab:5000/xrun/softmax:a-1"): true}
	// --all-users without --label: every job image, and nothing else.
	all := planRegistryPrune(append(ims, Image{Ref: "10.0.0.5:5000/xrun/pause:1", Digest: "sha256:9", Created: old}), used, nil, now.Add(-time.Hour))
	for _, im := range all.remove {
		if im.Labels[contract.LabelExperiment] == "" {
			t.Errorf("an image that is not xrun's would go: %s", im.Ref)
		}
	}
	if len(all.remove) != 2 {
		t.Errorf("all users: remove %d images, want the 2 old softmax ones", len(all.remove))
	}
	p := planRegistryPrune(ims, used, map[string]string{"team": "kernels"}, now.Add(-time.Hour))
	var got []string
	for _, im := range p.remove {
		got = append(got, im.Ref)
	}
	if len(got) != 2 || got[0] != "10.0.0.5:5000/xrun/softmax:a-2" || got[1] != "10.0.0.5:5000/xrun/softmax:a-5" {
		t.Errorf("remove %v", got)
	}
	if p.inUse != 1 || p.young != 1 || p.shared != 1 {
		t.Errorf("kept: in use %d, young %d, shared %d", p.inUse, p.young, p.shared)
	}
}
