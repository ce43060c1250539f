package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsRunner(t *testing.T) {
	for args, want := range map[string]bool{
		"/usr/local/bin/xrun-runner --experiment /x": true,
		"xrun __runner --experiment /x":              true,
		"xrun __run-local --experiment /x":           false,
		"xrun submit .":                              false,
		"xrun":                                       false,
	} {
		if got := IsRunner(strings.Fields(args)); got != want {
			t.Errorf("IsRunner(%q) = %v", args, got)
		}
	}
}

func TestRunnerMainFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunnerMain(context.Background(), []string{"xrun", RunnerArg, "--version"}, &out, &errb); code != 0 || strings.TrimSpace(out.String()) == "" {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	out.Reset()
	if code := RunnerMain(context.Background(), []string{"xrun-runner", "stray"}, &out, &errb); code != 3 || !strings.Contains(errb.String(), "unexpected arguments") {
		t.Errorf("stray argument: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte("name: x\nbogus: 1\n"), 0o644)
	code := RunnerMain(context.Background(), []string{"xrun-runner", "--experiment", dir, "--out", t.TempDir()}, &out, &errb)
	if code != 3 || !strings.Contains(errb.String(), "bogus") {
		t.Errorf("bad spec: exit %d, %s", code, errb.String())
	}
}
