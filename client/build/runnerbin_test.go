package build

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/internal/testenv"
)

func TestNormalizePlatform(t *testing.T) {
	tests := []struct{ os, arch, wantOS, wantArch string }{
		{"linux", "amd64", "linux", "amd64"},
		{"linux", "x86_64", "linux", "amd64"},
		{"Linux", "aarch64", "linux", "arm64"},
		{"linux", "arm64", "linux", "arm64"},
		{"linux", "armv7l", "linux", "arm"},
		{"linux", "i686", "linux", "386"},
		{"linux", "ppc64le", "linux", "ppc64le"},
		{"windows", "x86_64", "windows", "amd64"},
	}
	for _, tc := range tests {
		gotOS, gotArch := NormalizePlatform(tc.os, tc.arch)
		if gotOS != tc.wantOS || gotArch != tc.wantArch {
			t.Errorf("NormalizePlatform(%q, %q) = %q, %q; want %q, %q", tc.os, tc.arch, gotOS, gotArch, tc.wantOS, tc.wantArch)
		}
	}
}

func TestIsDevVersion(t *testing.T) {
	tests := map[string]bool{
		"v0.3.0":                             false,
		"v1.2.3-rc.1":                        false,
		"v0.0.0-20261122040000-abcdef123456": false,
		"v0.0.0-20261122040000-abcdef123456+dirty": true,
		"devel":                true,
		"devel+0123abcd-dirty": true,
		"(devel)":              true,
		"":                     true,
		"1.2.3":                true,
	}
	for v, want := range tests {
		if got := IsDevVersion(v); got != want {
			t.Errorf("IsDevVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

func goBuild(t *testing.T, dir, out string, env ...string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", env, err, b)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIsStatic checks the ELF test on real builds: one with cgo (dynamic,
// with an interpreter) and one without.
func TestIsStatic(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Missing(t, "no C compiler for the cgo build (apt-get install gcc)")
	}
	if runtime.GOOS != "linux" {
		testenv.Missing(t, "ELF builds need linux")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cgo/go.mod":    "module cgo\n",
		"cgo/main.go":   "package main\n\n// int one(void) { return 1; }\nimport \"C\"\n\nfunc main() { println(C.one()) }\n",
		"plain/go.mod":  "module plain\n",
		"plain/main.go": "package main\n\nfunc main() { println(1) }\n",
		"text":          "#!/bin/sh\n",
		"truncated":     "\x7fELF\x02\x01\x01",
	})
	cgo, plain := filepath.Join(dir, "cgo.bin"), filepath.Join(dir, "plain.bin")
	goBuild(t, filepath.Join(dir, "cgo"), cgo, "CGO_ENABLED=1")
	goBuild(t, filepath.Join(dir, "plain"), plain, "CGO_ENABLED=0")
	other := otherArch()
	tests := []struct {
		path, goos, goarch string
		want               bool
	}{
		{plain, "linux", runtime.GOARCH, true},
		{cgo, "linux", runtime.GOARCH, false},
		{plain, "linux", other, false},
		{plain, "windows", runtime.GOARCH, false},
		{filepath.Join(dir, "text"), "linux", runtime.GOARCH, false},
		{filepath.Join(dir, "truncated"), "linux", runtime.GOARCH, false},
	}
	for _, tc := range tests {
		got, err := IsStatic(tc.path, tc.goos, tc.goarch)
		if err != nil || got != tc.want {
			t.Errorf("IsStatic(%s, %s/%s) = %v, %v; want %v", filepath.Base(tc.path), tc.goos, tc.goarch, got, err, tc.want)
		}
	}
	if _, err := IsStatic(filepath.Join(dir, "missing"), "linux", runtime.GOARCH); err == nil {
		t.Error("IsStatic of a missing file: no error")
	}

}

// TestSelf checks that the running executable serves as the runner only
// when it is a static xrun binary for the daemon's platform.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	b := &RunnerBuilder{NoSelf: true, CacheDir: t.TempDir(), noCheckout: true}

	if _, err := b.For(ctx, "windows", "amd64"); err == nil || !strings.Contains(err.Error(), "need a Linux daemon") {
		t.Errorf("windows: %v", err)
	}
	if _, err := b.For(ctx, "linux", "mips"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("mips: %v", err)
	}

	b.Version = "devel"
	if _, err := b.For(ctx, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "development build") {
		t.Errorf("devel without a checkout: %v", err)
	}

	b.Version = "v9.9.9"
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	if _, err := b.For(ctx, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "from the Go module proxy") {
		t.Errorf("proxy off: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	_, err := b.For(ctx, "linux", runtime.GOARCH)
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0 go install "+Module+"/cmd/xrun@v9.9.9") {
		t.Errorf("no toolchain: %v", err)
	}
	_, err = b.For(ctx, "linux", "s390x")
	if err == nil || !strings.Contains(err.Error(), "GOARCH=s390x go install "+Package+"@v9.9.9") {
		t.Errorf("no toolchain, other platform: %v", err)
	}
}

func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}
