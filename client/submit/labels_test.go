package submit

import (
	"testing"

	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/spec"
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
