package buildctx

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestGenerateGolden(t *testing.T) {
	tests := map[string]DockerfileOptions{
		"scratch": {Base: "scratch", RunnerSrc: "xrun-runner"},
		"full": {
			Base:       "xrun/cuda13-torch2.11:py3.12",
			Apt:        []string{"git", "build-essential", "git", "libnuma-dev=2.0.18-1"},
			Python:     []string{"triton==3.6.0", "numpy>=2,<3", "einops", "it's[odd]"},
			RunnerSrc:  "xrun-runner",
			Experiment: "gla-pingpong",
			Labels: map[string]string{
				"dev.xrun.spec-hash":  "abc123",
				"dev.xrun.experiment": "gla-pingpong",
				"dev.xrun.note":       `costs $5 "or" a \ more`,
			},
		},
		"apt-only":    {Base: "debian:bookworm", Apt: []string{"python3-numpy"}, RunnerSrc: "bin/runner", Experiment: "x"},
		"python-only": {Base: "python:3.12-slim", Python: []string{"numpy"}, RunnerSrc: "xrun-runner", Labels: map[string]string{"a": "b"}},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Dockerfile(o)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Dockerfile(o)
			if !bytes.Equal(got, again) {
				t.Fatal("two calls give different output")
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Dockerfile differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
		})
	}
}

// TestLayerOrder checks the property the layering exists for: everything a
// code edit touches comes after everything that installs software, and the
// code is not in the image at all: xrun copies it into each container.
func TestLayerOrder(t *testing.T) {
	b, err := Dockerfile(DockerfileOptions{Base: "b", Apt: []string{"git"}, Python: []string{"numpy"}, RunnerSrc: "r", Labels: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	order := []string{"FROM b", "apt-get install", "pip install", "COPY r " + contract.RunnerPath, "ENTRYPOINT", "LABEL"}
	last := -1
	for _, want := range order {
		i := strings.Index(s, want)
		if i <= last {
			t.Fatalf("%q at %d, not after the previous step (%d):\n%s", want, i, last, s)
		}
		last = i
	}
	if strings.Contains(s, "exp/") && !strings.Contains(s, "WORKDIR /xrun/exp") || strings.Contains(s, "COPY exp/") {
		t.Errorf("the image copies the code; xrun copies it into each container:\n%s", s)
	}
	for _, banned := range []string{"<<", "--mount", "# syntax", "--chmod", "--link"} {
		if strings.Contains(s, banned) {
			t.Errorf("output uses %q, which the classic builder does not understand", banned)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	ok := DockerfileOptions{Base: "scratch", RunnerSrc: "xrun-runner"}
	tests := []struct {
		name string
		edit func(*DockerfileOptions)
		want string
	}{
		{"no base", func(o *DockerfileOptions) { o.Base = "" }, "no base image"},
		{"base with spaces", func(o *DockerfileOptions) { o.Base = "a b" }, "contains white space"},
		{"base with newline", func(o *DockerfileOptions) { o.Base = "a\nRUN x" }, "contains white space"},
		{"no runner", func(o *DockerfileOptions) { o.RunnerSrc = "" }, "runner path"},
		{"absolute runner", func(o *DockerfileOptions) { o.RunnerSrc = "/usr/bin/x" }, "runner path"},
		{"runner outside", func(o *DockerfileOptions) { o.RunnerSrc = "../x" }, "runner path"},
		{"bad apt name", func(o *DockerfileOptions) { o.Apt = []string{"git; rm -rf /"} }, "not a Debian package name"},
		{"upper case apt name", func(o *DockerfileOptions) { o.Apt = []string{"Git"} }, "not a Debian package name"},
		{"empty requirement", func(o *DockerfileOptions) { o.Python = []string{" "} }, "pip requirement"},
		{"requirement with newline", func(o *DockerfileOptions) { o.Python = []string{"a\nRUN evil"} }, "pip requirement"},
		{"label key", func(o *DockerfileOptions) { o.Labels = map[string]string{"a b": "c"} }, "label key"},
		{"label value", func(o *DockerfileOptions) { o.Labels = map[string]string{"a": "b\nc"} }, "control characters"},
		{"experiment name", func(o *DockerfileOptions) { o.Experiment = "x\ny" }, "experiment name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			_, err := Dockerfile(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Dockerfile(ok); err != nil {
		t.Fatalf("valid options: %v", err)
	}
}
