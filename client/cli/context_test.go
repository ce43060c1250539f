package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
)

func TestSubmitWarnsOfLargeFiles(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
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

// A --host that cannot name a daemon is the user's mistake (exit 3), not
// an unreachable host (exit 4); nothing is dialled.
func TestBadHostIsUsageError(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case "XDG_DATA_HOME", "XDG_CONFIG_HOME", "HOME":
			return dir
		}
		return ""
	}
	for _, host := range []string{"nonsense://x", "nosuchname"} {
		var out, errw bytes.Buffer
		code := Main(context.Background(), []string{"xrun", "ps", "--host", host}, &out, &errw, getenv)
		if code != contract.ExitUsage || !strings.Contains(errw.String(), host) {
			t.Errorf("--host %s: exit %d, stderr %q; want %d naming the host", host, code, errw.String(), contract.ExitUsage)
		}
	}
}
