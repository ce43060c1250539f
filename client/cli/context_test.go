package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/buildctx"
)

func TestSubmitWarnsOfLargeFiles(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.behave = succeed(t)
	big := filepath.Join(dir, "weights.bin")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, buildctx.LargeFileBytes); err != nil {
		t.Fatal(err)
	}
	if code := ta.run(context.Background(), "submit", "-d", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	want := "warning: " + big + ` is 100MiB and goes into the image; if the experiment does not need it, add the line "weights.bin" to ` + filepath.Join(dir, ".xrunignore") + "\n"
	if !strings.Contains(ta.err.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, ta.err)
	}
	if strings.Contains(ta.out.String(), "warning") {
		t.Errorf("a warning went to stdout: %s", ta.out)
	}
}
