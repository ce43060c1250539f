package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// The real parts that tests of remote hosts need on the machine the tests
// run on: a second Docker daemon reached over a unix socket and over
// tcp:// with TLS (certificates made here), an sshd on loopback that
// reaches the local daemon with `docker system dial-stdio`, and a tiny
// busybox image loaded into a daemon. The tests start and stop them.

// LocalHost is the local daemon's socket.
const LocalHost = "unix:///var/run/docker.sock"

// RequireDocker checks that the local daemon answers. Under -short (the
// unit tests alone) every test that needs real parts is skipped.
func RequireDocker(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test that needs the Docker daemon")
	}
	host := LocalHost
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		host = h
	}
	if err := ping(context.Background(), host, 10*time.Second); err != nil {
		Missing(t, "local Docker daemon at %s: %v", host, err)
	}
}

// ping asks the daemon at a unix:// or plain tcp:// address for /_ping.
func ping(ctx context.Context, host string, timeout time.Duration) error {
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err
}

// sudo returns the command prefix that runs a daemon as root: none when
// the tests run as root, `sudo -n` otherwise.
func sudo(t testing.TB) []string {
	t.Helper()
	if os.Geteuid() == 0 {
		return nil
	}
	if err := exec.Command("sudo", "-n", "true").Run(); err != nil {
		Missing(t, "starting a test daemon needs root or passwordless sudo: %v", err)
	}
	return []string{"sudo", "-n"}
}

// lookPath finds a program or reports it missing.
func lookPath(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if p := dir + "/" + name; isExec(p) {
			return p
		}
	}
	Missing(t, "%s is not installed (Debian package %s)", name, pkg)
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// run runs a command and returns its combined output, failing the test
// when it exits non-zero.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}
