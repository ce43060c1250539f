// RunnerBinary finds or builds the static xrun-runner binary that goes
// into an experiment's image: the client's own version, for the Docker
// daemon's platform, without pulling any image.

package build

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/internal/version"
)

const (
	// Module is the Go module of xrun.
	Module = "github.com/xrun-dev/xrun"
	// Package is the main package built as the runner.
	Package = Module + "/runner/cmd/xrun-runner"
	// VersionVar is the variable the build sets (-ldflags -X) to the
	// client's version, so the runner reports the version of the client
	// it was built for.
	VersionVar = Module + "/internal/version.Version"
)

// RunnerBuilder says where For looks for a runner and how it builds one. The zero
// value is ready to use; tests override fields.
type RunnerBuilder struct {
	// Version is the client's version; default: version.Version.
	Version string
	// Exe is the running executable; default: os.Executable.
	Exe string
	// NoSelf skips the running executable even when it would do.
	NoSelf bool
	// CacheDir holds built runners; default: $XDG_CACHE_HOME/xrun/runner.
	CacheDir string
	// Source is the root of an xrun checkout to build from; default: the
	// checkout this client was built from, when it still exists, or (for a
	// development version) one above the executable or the working directory.
	Source string
	// Go is the go command; default: "go" on PATH.
	Go string
	// Logf reports what is being done; may be nil.
	Logf func(format string, args ...any)

	noCheckout bool // tests: ignore the checkout this package was built from
}

// RunnerBinary returns the path of a static xrun-runner of this client's version for
// goos/goarch (the daemon's platform; Docker's "x86_64" and "aarch64" are
// accepted). In order: (1) the running executable, when it is the xrun
// client (or runner) and a static ELF for that platform (the xrun binary
// acts as the runner when invoked as xrun-runner); (2) a cached build under $XDG_CACHE_HOME/xrun/runner;
// (3) a build with the Go toolchain (CGO_ENABLED=0), from the checkout the
// client runs from, else from the module proxy at the client's version;
// (4) otherwise an error that says how to get one.
func RunnerBinary(ctx context.Context, goos, goarch string, logf func(string, ...any)) (string, error) {
	return (&RunnerBuilder{Logf: logf}).For(ctx, goos, goarch)
}

// For is the package-level For with b's settings.
func (b *RunnerBuilder) For(ctx context.Context, goos, goarch string) (string, error) {
	goos, goarch = NormalizePlatform(goos, goarch)
	if goos != "linux" {
		return "", fmt.Errorf("the daemon runs %s/%s; xrun images need a Linux daemon (Docker Desktop and Linux hosts are)", goos, goarch)
	}
	if _, ok := elfMachines[goarch]; !ok {
		return "", fmt.Errorf("the daemon's architecture %q is not supported; xrun runs on amd64, arm64, 386, arm, ppc64le, s390x and riscv64", goarch)
	}
	version := b.version()
	exe := b.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			exe = ""
		}
	}
	if !b.NoSelf && exe != "" && isXrun(exe) {
		if ok, err := IsStatic(exe, goos, goarch); err == nil && ok {
			return exe, nil
		}
	}

	cacheDir, err := b.cacheDir()
	if err != nil {
		return "", err
	}
	dev := IsDevVersion(version)
	key := sanitize(version)
	if dev {
		// A development client changes without its version changing: key
		// its runner to this executable, so a rebuilt client rebuilds it.
		key = devPrefix + key + "-" + fingerprint(exe)
	}
	cached := filepath.Join(cacheDir, fmt.Sprintf("%s-%s-%s", key, goos, goarch))
	if ok, err := IsStatic(cached, goos, goarch); err == nil && ok {
		return cached, nil
	}

	goTool := b.Go
	if goTool == "" {
		goTool, err = exec.LookPath("go")
		if err != nil {
			return "", noToolchain(version, goos, goarch, cached)
		}
	}
	src := b.Source
	if src == "" && !b.noCheckout {
		src = findCheckout(exe, dev)
	}
	switch {
	case src != "":
		b.logf("building the xrun runner for %s/%s from %s (once per client version)", goos, goarch, src)
		err = b.build(ctx, goTool, src, "./runner/cmd/xrun-runner", version, goos, goarch, cached)
	case !dev:
		b.logf("building the xrun runner %s for %s/%s from the Go module proxy (once per client version)", version, goos, goarch)
		err = b.buildFromProxy(ctx, goTool, version, goos, goarch, cached)
	default:
		return "", fmt.Errorf("this xrun is a development build (%s) and its source checkout is not found, so no runner for %s/%s can be built; run xrun from its checkout, or install a release with `CGO_ENABLED=0 go install %s/cmd/xrun@latest`", version, goos, goarch, Module)
	}
	if err != nil {
		return "", err
	}
	if ok, err := IsStatic(cached, goos, goarch); err != nil || !ok {
		return "", fmt.Errorf("the runner built at %s is not a static %s/%s binary (%v); check that CGO_ENABLED=0 is not overridden in the Go environment", cached, goos, goarch, err)
	}
	if dev {
		pruneDev(cacheDir, cached, goos, goarch)
	}
	return cached, nil
}

func (b *RunnerBuilder) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf(format, args...)
	}
}

func (b *RunnerBuilder) version() string {
	if b.Version != "" {
		return b.Version
	}
	return ClientVersion()
}

func (b *RunnerBuilder) cacheDir() (string, error) {
	if b.CacheDir != "" {
		return b.CacheDir, nil
	}
	dir := os.Getenv("XDG_CACHE_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserCacheDir(); err != nil {
			return "", fmt.Errorf("find the cache directory for runner builds: %w; set XDG_CACHE_HOME", err)
		}
	}
	return filepath.Join(dir, "xrun", "runner"), nil
}

// ClientVersion returns the client's version (version.Version): a release
// ("v0.3.0"), a pseudo-version, or "devel+<revision>[-dirty]".
func ClientVersion() string { return version.Version }

var releaseRE = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// IsDevVersion reports whether version names no build the module proxy can
// serve: "devel", "devel+<revision>", or a version with local changes
// ("+dirty").
func IsDevVersion(version string) bool {
	return !releaseRE.MatchString(version)
}

// NormalizePlatform maps Docker's names (uname -m style, as in the
// daemon's Info) to Go's GOOS/GOARCH.
func NormalizePlatform(goos, goarch string) (string, string) {
	goos = strings.ToLower(goos)
	switch strings.ToLower(goarch) {
	case "x86_64", "x86-64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64", "armv8", "armv8l":
		goarch = "arm64"
	case "i386", "i686", "x86", "386":
		goarch = "386"
	case "armv7l", "armv7", "armhf", "armv6l", "arm":
		goarch = "arm"
	}
	return goos, goarch
}

var elfMachines = map[string]struct {
	machine elf.Machine
	class   elf.Class
	order   string
}{
	"amd64":   {elf.EM_X86_64, elf.ELFCLASS64, "little"},
	"arm64":   {elf.EM_AARCH64, elf.ELFCLASS64, "little"},
	"386":     {elf.EM_386, elf.ELFCLASS32, "little"},
	"arm":     {elf.EM_ARM, elf.ELFCLASS32, "little"},
	"ppc64le": {elf.EM_PPC64, elf.ELFCLASS64, "little"},
	"s390x":   {elf.EM_S390, elf.ELFCLASS64, "big"},
	"riscv64": {elf.EM_RISCV, elf.ELFCLASS64, "little"},
}

// IsStatic reports whether path is an ELF executable for goos/goarch with
// no program interpreter (PT_INTERP), so it runs in any container,
// including one built from scratch. A file that is not ELF gives false and
// no error; an unreadable one an error.
func IsStatic(path, goos, goarch string) (bool, error) {
	goos, goarch = NormalizePlatform(goos, goarch)
	want, ok := elfMachines[goarch]
	if goos != "linux" || !ok {
		return false, nil
	}
	r, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", path, err)
	}
	defer r.Close()
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || string(magic[:]) != elf.ELFMAG {
		return false, nil
	}
	f, err := elf.NewFile(r)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("inspect %s: %w", path, err)
	}
	order := "little"
	if f.ByteOrder.String() == "BigEndian" {
		order = "big"
	}
	if f.Machine != want.machine || f.Class != want.class || order != want.order || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return false, nil
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// isXrun reports whether exe is the xrun client or runner (and not, say, a
// test binary that links this package).
func isXrun(exe string) bool {
	bi, err := buildinfo.ReadFile(exe)
	return err == nil && (bi.Path == Module+"/cmd/xrun" || bi.Path == Package)
}

// build runs go build of pkg in dir for goos/goarch into dst, atomically.
func (b *RunnerBuilder) build(ctx context.Context, goTool, dir, pkg, version, goos, goarch, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create the runner cache %s: %w", filepath.Dir(dst), err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", dst, os.Getpid())
	defer os.Remove(tmp)
	ldflags := fmt.Sprintf("-s -w -X %s=%s", VersionVar, version)
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build the runner for %s/%s: %w", goos, goarch, ctx.Err())
		}
		return fmt.Errorf("build the runner for %s/%s in %s: %w:\n%s", goos, goarch, dir, err, tail(out, 20))
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("store the runner in %s: %w", dst, err)
	}
	return nil
}

// buildFromProxy builds Package at version in a scratch module, the way go
// install would, except that go install refuses to cross-compile into GOBIN.
func (b *RunnerBuilder) buildFromProxy(ctx context.Context, goTool, version, goos, goarch, dst string) error {
	dir, err := os.MkdirTemp("", "xrun-runner-build-")
	if err != nil {
		return fmt.Errorf("create a directory to build the runner: %w", err)
	}
	defer os.RemoveAll(dir)
	gomod := "module xrun-runner-build\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("create a module to build the runner: %w", err)
	}
	get := exec.CommandContext(ctx, goTool, "get", Module+"@"+version)
	get.Dir = dir
	if out, err := get.CombinedOutput(); err != nil {
		return fmt.Errorf("fetch %s@%s from the Go module proxy: %w:\n%s\ncheck GOPROXY and the network, or run xrun from a checkout", Module, version, err, tail(out, 20))
	}
	return b.build(ctx, goTool, dir, Package, version, goos, goarch, dst)
}

// findCheckout returns the root of the xrun checkout to build from, or "".
// The source path compiled into this package is the strongest sign that
// the client runs from a checkout; for a development version a checkout
// above the executable or the working directory is used too.
func findCheckout(exe string, dev bool) string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if root := moduleRoot(filepath.Dir(file)); root != "" {
			return root
		}
	}
	if !dev {
		return ""
	}
	if exe != "" {
		if root := moduleRoot(filepath.Dir(exe)); root != "" {
			return root
		}
	}
	if wd, err := os.Getwd(); err == nil {
		return moduleRoot(wd)
	}
	return ""
}

// moduleRoot walks up from dir to a go.mod declaring Module whose tree
// holds the runner's main package.
func moduleRoot(dir string) string {
	for {
		if isModule(filepath.Join(dir, "go.mod")) {
			if m, _ := filepath.Glob(filepath.Join(dir, "runner", "cmd", "xrun-runner", "*.go")); len(m) > 0 {
				return dir
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func isModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == Module
		}
	}
	return false
}

// fingerprint identifies an executable cheaply: path, size and mtime.
func fingerprint(exe string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", exe)
	if st, err := os.Stat(exe); err == nil {
		fmt.Fprintf(h, "%d\x00%d", st.Size(), st.ModTime().UnixNano())
	}
	if bi, err := buildinfo.ReadFile(exe); err == nil {
		fmt.Fprintf(h, "\x00%s", bi.Main.Sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// pruneDev removes older development runners for the same platform.
func pruneDev(dir, keep, goos, goarch string) {
	suffix := fmt.Sprintf("-%s-%s", goos, goarch)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == keep || !strings.HasPrefix(e.Name(), devPrefix) || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		// Leave a runner another xrun may have just built alone.
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			os.Remove(p)
		}
	}
}

// devPrefix marks cached runners of development builds, which are pruned.
const devPrefix = "dev-"

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitize(s string) string { return unsafeRE.ReplaceAllString(s, "_") }

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func noToolchain(version, goos, goarch, cached string) error {
	v := version
	if IsDevVersion(v) {
		v = "latest"
	}
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		return fmt.Errorf("no runner for %s/%s: this xrun is not a static binary and no Go toolchain is on PATH to build one; install xrun with `CGO_ENABLED=0 go install %s/cmd/xrun@%s`, or install Go", goos, goarch, Module, v)
	}
	return fmt.Errorf("no runner for %s/%s and no Go toolchain on PATH to build one; install Go, or build it elsewhere with `CGO_ENABLED=0 GOOS=%s GOARCH=%s go install %s@%s` (it lands in $(go env GOPATH)/bin/%s_%s/) and copy it to %s", goos, goarch, goos, goarch, Package, v, goos, goarch, cached)
}
