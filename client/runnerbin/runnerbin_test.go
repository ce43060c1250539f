package runnerbin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
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
		t.Skip("no C compiler for the cgo build")
	}
	if runtime.GOOS != "linux" {
		t.Skip("ELF builds need linux")
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
func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF builds need linux")
	}
	src := fakeModule(t)
	dir := t.TempDir()
	static, dynamic, other := filepath.Join(dir, "static"), filepath.Join(dir, "dynamic"), filepath.Join(dir, "other")
	goBuild(t, filepath.Join(src, "client", "cmd", "xrun"), static, "CGO_ENABLED=0")
	goBuild(t, filepath.Join(src, "tools", "other"), other, "CGO_ENABLED=0")
	tests := []struct {
		name, exe, arch string
		self            bool
	}{
		{"static xrun", static, runtime.GOARCH, true},
		{"static xrun, other arch", static, otherArch(), false},
		{"static, not xrun", other, runtime.GOARCH, false},
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		goBuild(t, filepath.Join(src, "client", "cmd", "xrun"), dynamic, "CGO_ENABLED=1", "GOFLAGS=-tags=withcgo")
		if ok, _ := IsStatic(dynamic, "linux", runtime.GOARCH); ok {
			t.Fatal("cgo build of the fake client is static")
		}
		tests = append(tests, struct {
			name, exe, arch string
			self            bool
		}{"dynamic xrun", dynamic, runtime.GOARCH, false})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &Builder{Exe: tc.exe, CacheDir: t.TempDir(), Go: "/nonexistent/go", noCheckout: true, Version: "v1.0.0"}
			got, err := b.For(context.Background(), "linux", tc.arch)
			if tc.self {
				if err != nil || got != tc.exe {
					t.Fatalf("For = %q, %v; want the executable", got, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("For = %q; want a build, which fails without a toolchain", got)
			}
		})
	}
}

func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// fakeModule makes a checkout-shaped module whose runner prints the
// version it was built with.
func fakeModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":                         "module " + Module + "\n\ngo 1.22\n",
		"runner/version/version.go":      "package version\n\nvar Version = \"unset\"\n",
		"runner/cmd/xrun-runner/main.go": "package main\n\nimport \"" + Module + "/runner/version\"\n\nfunc main() { println(\"runner\", version.Version) }\n",
		"tools/other/main.go":            "package main\n\nfunc main() {}\n",
		"client/cmd/xrun/main.go":        "package main\n\nfunc main() { println(\"xrun\") }\n",
		"client/cmd/xrun/cgo.go":         "//go:build withcgo\n\npackage main\n\n// int one(void) { return 1; }\nimport \"C\"\n\nvar _ = C.one\n",
	})
	return root
}

func TestBuildFromSource(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain")
	}
	src := fakeModule(t)
	cache := t.TempDir()
	var logs []string
	b := &Builder{NoSelf: true, CacheDir: cache, Source: src, Version: "v1.2.3", Logf: func(f string, a ...any) { logs = append(logs, f) }}
	ctx := context.Background()
	for _, arch := range []string{"amd64", "arm64"} {
		p, err := b.For(ctx, "linux", arch)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(cache, "v1.2.3-linux-"+arch); p != want {
			t.Errorf("path = %s, want %s", p, want)
		}
		if ok, err := IsStatic(p, "linux", arch); !ok || err != nil {
			t.Errorf("%s: not a static linux/%s binary (%v)", p, arch, err)
		}
	}
	if len(logs) != 2 {
		t.Errorf("logged %d builds, want 2: %q", len(logs), logs)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		out, err := exec.Command(filepath.Join(cache, "v1.2.3-linux-amd64")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "runner v1.2.3") {
			t.Errorf("built runner says %q (%v), want the client's version", out, err)
		}
	}

	// A second call is served from the cache, even with the source gone.
	b.Source = filepath.Join(src, "gone")
	start := time.Now()
	if _, err := b.For(ctx, "linux", "x86_64"); err != nil {
		t.Fatalf("cached: %v", err)
	}
	if len(logs) != 2 || time.Since(start) > time.Second {
		t.Errorf("second call rebuilt (%d logs, %v)", len(logs), time.Since(start))
	}

	// A development version is keyed to the executable.
	b.Source, b.Version, b.Exe = src, "devel", filepath.Join(cache, "v1.2.3-linux-amd64")
	p, err := b.For(ctx, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if name := filepath.Base(p); !strings.HasPrefix(name, "dev-devel-") || !strings.HasSuffix(name, "-linux-amd64") {
		t.Errorf("development runner cached as %s", name)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		if out, err := exec.Command(p).CombinedOutput(); err != nil || !strings.Contains(string(out), "runner devel") {
			t.Errorf("development runner says %q (%v), want the client's version", out, err)
		}
	}
}

// TestBuildFromCheckout builds the real runner from this checkout for both
// architectures the CUDA images exist for.
func TestBuildFromCheckout(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain")
	}
	wd, _ := os.Getwd()
	root := moduleRoot(wd)
	if root == "" {
		t.Skip("runner/cmd/xrun-runner has no Go files yet")
	}
	cache := t.TempDir()
	b := &Builder{NoSelf: true, CacheDir: cache, Version: "devel"}
	for _, arch := range []string{"amd64", "arm64"} {
		p, err := b.For(context.Background(), "linux", arch)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(p) != cache {
			t.Errorf("runner at %s, not in the cache %s", p, cache)
		}
		if ok, err := IsStatic(p, "linux", arch); !ok || err != nil {
			t.Errorf("%s: not a static linux/%s binary (%v)", p, arch, err)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	b := &Builder{NoSelf: true, CacheDir: t.TempDir(), noCheckout: true}

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
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0 go install "+Module+"/client/cmd/xrun@v9.9.9") {
		t.Errorf("no toolchain: %v", err)
	}
	_, err = b.For(ctx, "linux", "s390x")
	if err == nil || !strings.Contains(err.Error(), "GOARCH=s390x go install "+Package+"@v9.9.9") {
		t.Errorf("no toolchain, other platform: %v", err)
	}
}
