//go:build integration

package build

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
)

func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		testenv.Missing(t, "ELF builds need linux")
	}
	src := fakeModule(t)
	dir := t.TempDir()
	static, dynamic, other := filepath.Join(dir, "static"), filepath.Join(dir, "dynamic"), filepath.Join(dir, "other")
	goBuild(t, filepath.Join(src, "cmd", "xrun"), static, "CGO_ENABLED=0")
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
		goBuild(t, filepath.Join(src, "cmd", "xrun"), dynamic, "CGO_ENABLED=1", "GOFLAGS=-tags=withcgo")
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
			b := &RunnerBuilder{Exe: tc.exe, CacheDir: t.TempDir(), Go: "/nonexistent/go", noCheckout: true, Version: "v1.0.0"}
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

// fakeModule makes a checkout-shaped module whose runner prints the
// version it was built with.
func fakeModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":                         "module " + Module + "\n\ngo 1.22\n",
		"internal/version/version.go":    "package version\n\nvar Version = \"unset\"\n",
		"runner/cmd/xrun-runner/main.go": "package main\n\nimport \"" + Module + "/internal/version\"\n\nfunc main() { println(\"runner\", version.Version) }\n",
		"tools/other/main.go":            "package main\n\nfunc main() {}\n",
		"cmd/xrun/main.go":               "package main\n\nfunc main() { println(\"xrun\") }\n",
		"cmd/xrun/cgo.go":                "//go:build withcgo\n\npackage main\n\n// int one(void) { return 1; }\nimport \"C\"\n\nvar _ = C.one\n",
	})
	return root
}

func TestBuildFromSource(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Missing(t, "no Go toolchain on PATH (https://go.dev/dl): the runner is built from source")
	}
	src := fakeModule(t)
	cache := t.TempDir()
	var logs []string
	b := &RunnerBuilder{NoSelf: true, CacheDir: cache, Source: src, Version: "v1.2.3", Logf: func(f string, a ...any) { logs = append(logs, f) }}
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
		testenv.Missing(t, "no Go toolchain on PATH (https://go.dev/dl): the runner is built from source")
	}
	wd, _ := os.Getwd()
	root := moduleRoot(wd)
	if root == "" {
		t.Fatalf("no module root with runner/cmd/xrun-runner above %s: the test runs in a checkout", wd)
	}
	cache := t.TempDir()
	b := &RunnerBuilder{NoSelf: true, CacheDir: cache, Version: "devel"}
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
