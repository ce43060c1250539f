package lifecycle

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/xrun-dev/xrun/runner/result"
)

func TestExtractTarRefusesEscapes(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "out/../../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	dir := t.TempDir()
	if err := ExtractTar(&buf, filepath.Join(dir, "out")); err == nil {
		t.Error("an entry leaving the directory was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
		t.Error("evil file exists")
	}
}

func TestFailureSentence(t *testing.T) {
	r := &result.Results{Implementations: []string{"fast", "big"}, Cases: []result.Case{
		{Label: "n=1", Results: map[string]*result.ImplResult{"reference": {Status: "ok"}, "fast": {Status: "ok"}, "big": {Status: "skipped"}}},
		{Label: "n=2", Results: map[string]*result.ImplResult{"reference": {Status: "ok"}, "fast": {Status: "crashed", Error: "the worker died during check (signal 11, segmentation fault)"},
			"big": {Status: "oom", Error: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 TiB.\nTraceback..."}}},
	}}
	got := FailureSentence(r)
	want := "implementation fast crashed at n=2: the worker died during check (signal 11, segmentation fault); 1 more failed"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	r.Cases[1].Results["fast"].Status = "ok"
	got = FailureSentence(r)
	want = "implementation big ran out of GPU memory at n=2 (torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 TiB.): make the case smaller or run it on a GPU with more memory"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	r.Cases[1].Results["big"].Status = "ok"
	if got := FailureSentence(r); got != "" {
		t.Errorf("no failure: got %q", got)
	}
}
