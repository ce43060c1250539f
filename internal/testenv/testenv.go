// Package testenv is where the test suites decide what a missing real
// part means (a Docker daemon, root, Python with numpy or torch, bash, a
// cluster): under CI=true, whose machine has all of them, the test fails;
// elsewhere it is skipped, saying what is missing and how to get it.
// It also starts the real parts themselves where a test can: a throwaway
// PostgreSQL server (Postgres), a second Docker daemon over a unix socket
// or tcp:// with TLS (StartDaemon), an sshd that reaches the local daemon
// (StartSSHD), and a busybox image (EnsureBusybox).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the suites run under CI=true.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing fails t under CI=true and skips it elsewhere: a real part the
// test needs is missing, as the message says.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI=true: the real parts are required)", msg)
	}
	t.Skip(msg)
}

// Root is Missing unless the test runs as root: it switches users, makes
// a store unwritable (chattr) or mounts a small file system.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root (%s): run the suite as root, as CI does", why)
	}
}

// Unavailable says on stderr why suite cannot run at all and returns the
// exit code of its TestMain: 1 under CI=true, where that is a failure,
// else 0 (the suite is skipped).
func Unavailable(suite, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, suite+": "+format+"\n", args...)
	if CI() {
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s: skipping the suite (it fails under CI=true)\n", suite)
	return 0
}

// NoNVIDIARuntime is for a test of a Docker host without the NVIDIA
// runtime, given whether the daemon under test has one: with one it is
// Missing (CI's machine has none, so there it fails), and on a GPU host
// the GPU suite's TestHostWithoutNVIDIARuntime runs the case against a
// daemon without it.
func NoNVIDIARuntime(t testing.TB, has bool) {
	t.Helper()
	if has {
		Missing(t, "this host has an NVIDIA runtime: the test needs one without (on a GPU host, the GPU suite's TestHostWithoutNVIDIARuntime runs this case against a daemon without it)")
	}
}

// Chromium returns the path of a headless-capable browser for the tests
// of pages in a real browser: $XRUN_CHROMIUM, else chromium or
// chromium-browser on PATH; Missing when there is none.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("XRUN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "chromium is not installed (scripts/setup.sh installs Debian's chromium; XRUN_CHROMIUM names another)")
	return ""
}
