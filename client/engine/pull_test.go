package engine

import (
	"strings"
	"testing"
)

// A pull's messages as dockerd sends them: the tag's line, two layers,
// one of them already on the host, the other downloaded in steps.
const pullStream = `{"status":"Pulling from library/x","id":"latest"}
{"status":"Already exists","progressDetail":{},"id":"aaa"}
{"status":"Pulling fs layer","progressDetail":{},"id":"bbb"}
{"status":"Waiting","progressDetail":{},"id":"bbb"}
{"status":"Downloading","progressDetail":{"current":1000,"total":4000},"progress":"[==> ]","id":"bbb"}
{"status":"Downloading","progressDetail":{"current":3000,"total":4000},"progress":"[====> ]","id":"bbb"}
{"status":"Verifying Checksum","progressDetail":{},"id":"bbb"}
{"status":"Download complete","progressDetail":{},"id":"bbb"}
{"status":"Extracting","progressDetail":{"current":4000,"total":4000},"id":"bbb"}
{"status":"Pull complete","progressDetail":{},"id":"bbb"}
{"status":"Digest: sha256:0123"}
{"status":"Status: Downloaded newer image for x:latest"}
`

func TestDecodePull(t *testing.T) {
	var got []PullProgress
	if err := decodePull(strings.NewReader(pullStream), func(p PullProgress) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	want := []PullProgress{
		{Layers: 1, Done: 1},
		{Layers: 2, Done: 1},
		{Layers: 2, Done: 1},
		{Layers: 2, Done: 1, Got: 1000, Size: 4000},
		{Layers: 2, Done: 1, Got: 3000, Size: 4000},
		{Layers: 2, Done: 1, Got: 4000, Size: 4000},
		{Layers: 2, Done: 1, Got: 4000, Size: 4000},
		{Layers: 2, Done: 1, Got: 4000, Size: 4000},
		{Layers: 2, Done: 2, Got: 4000, Size: 4000},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d reports %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := got[len(got)-1].String(); s != "2 of 2 layers, 4kB of 4kB" {
		t.Errorf("String() = %q", s)
	}
}

func TestDecodePullError(t *testing.T) {
	err := decodePull(strings.NewReader(`{"status":"Pulling fs layer","id":"bbb"}
{"errorDetail":{"message":"unauthorized: authentication required"},"error":"unauthorized: authentication required"}
`), func(PullProgress) {})
	if err == nil || err.Error() != "unauthorized: authentication required" {
		t.Errorf("err = %v", err)
	}
}
