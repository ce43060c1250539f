package testenv

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Daemon is a second dockerd on this machine with its own data root,
// exec root and pid file, listening on a unix socket and on loopback TCP
// with TLS (client certificates required). It gets a bridge of its own
// made by the test and no iptables rules, so it leaves the host's network
// alone. (--bridge=none would not do: dockerd then deletes the interface
// named docker0, which belongs to the local daemon.)
type Daemon struct {
	// Socket is its unix address (unix:///tmp/...).
	Socket string
	// TCP is its TLS address (tcp://127.0.0.1:PORT).
	TCP string
	// CertDir holds ca.pem, cert.pem and key.pem that it trusts, in the
	// DOCKER_CERT_PATH layout.
	CertDir string
	// WrongCADir holds the same client certificate with a CA that did not
	// sign the daemon's certificate: verification must refuse it.
	WrongCADir string

	dir    string
	bridge string
	argv   []string
	cmd    *exec.Cmd
	log    string
	done   chan struct{}
	once   sync.Once
}

// StartDaemon starts a second dockerd and stops it when the test ends.
// It uses the storage driver of the local daemon (which must answer),
// since that is the one known to work on this machine.
func StartDaemon(t testing.TB) *Daemon {
	t.Helper()
	RequireDocker(t)
	dockerd := lookPath(t, "dockerd", "docker.io")
	prefix := sudo(t)
	driver := localStorageDriver(t)

	// Short paths: containerd's sockets live under the exec root and unix
	// socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("/tmp", "xrd-")
	if err != nil {
		t.Fatalf("make daemon dir: %v", err)
	}
	m := makeTLS(t, filepath.Join(dir, "tls"))
	port := freePort(t)
	d := &Daemon{
		Socket:     "unix://" + filepath.Join(dir, "d.sock"),
		TCP:        fmt.Sprintf("tcp://127.0.0.1:%d", port),
		CertDir:    m.clientDir,
		WrongCADir: m.wrongCA,
		dir:        dir,
		log:        filepath.Join(dir, "dockerd.log"),
		done:       make(chan struct{}),
	}
	// An empty config file keeps /etc/docker/daemon.json (its hosts, its
	// data root) out of this daemon.
	write(t, filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644)
	d.bridge = makeBridge(t, prefix)
	args := []string{
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"-H", d.Socket,
		"-H", d.TCP,
		"--tlsverify",
		"--tlscacert", filepath.Join(m.serverDir, "ca.pem"),
		"--tlscert", filepath.Join(m.serverDir, "server-cert.pem"),
		"--tlskey", filepath.Join(m.serverDir, "server-key.pem"),
		"--bridge", d.bridge, "--iptables=false", "--ip-masq=false", "--ip6tables=false",
		"--storage-driver", driver,
	}
	d.argv = append(append(prefix, dockerd), args...)
	d.start(t)
	t.Cleanup(func() { d.Stop(t); d.remove(t) })
	cleanupBridge := true
	defer func() {
		// Until the daemon started, the bridge is removed here on failure.
		if cleanupBridge && t.Failed() {
			delBridge(d.bridge)
		}
	}()
	d.waitReady(t)
	cleanupBridge = false
	return d
}

// start starts dockerd with d's arguments, appending to its log.
func (d *Daemon) start(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("make daemon log: %v", err)
	}
	defer logf.Close()
	d.cmd = exec.Command(d.argv[0], d.argv[1:]...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		Missing(t, "start dockerd: %v", err)
	}
	done := d.done
	cmd := d.cmd
	go func() { cmd.Wait(); close(done) }()
}

// Restart starts a daemon that Stop stopped again, with the same data,
// and waits until it answers: a daemon restart under the jobs it has.
func (d *Daemon) Restart(t testing.TB) {
	t.Helper()
	d.Stop(t)
	d.done, d.once = make(chan struct{}), sync.Once{}
	d.start(t)
	d.waitReady(t)
}

// waitReady waits until the daemon answers on its socket.
func (d *Daemon) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(context.Background(), d.Socket, 2*time.Second)
		if err == nil {
			break
		}
		select {
		case <-d.done:
			Missing(t, "test dockerd exited at start: %v\n%s", d.cmd.ProcessState, tail(d.log, 30))
		default:
		}
		if time.Now().After(deadline) {
			Missing(t, "test dockerd did not answer on %s within 60s: %v\n%s", d.Socket, err, tail(d.log, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// makeBridge makes a bridge interface for the test daemon with an address
// in a random 10.X.Y.0/24 subnet, and removes it when the test ends.
func makeBridge(t testing.TB, prefix []string) string {
	t.Helper()
	ipTool := lookPath(t, "ip", "iproute2")
	var b [3]byte
	rand.Read(b[:])
	name := fmt.Sprintf("xrdbr%02x%02x", b[0], b[1])
	addr := fmt.Sprintf("10.%d.%d.1/24", 200+int(b[0])%50, b[2])
	for _, args := range [][]string{
		{"link", "add", name, "type", "bridge"},
		{"addr", "add", addr, "dev", name},
		{"link", "set", name, "up"},
	} {
		argv := append(append(append([]string(nil), prefix...), ipTool), args...)
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			delBridge(name)
			Missing(t, "make bridge %s for the test daemon: ip %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { delBridge(name) })
	return name
}

func delBridge(name string) {
	argv := append(sudoPrefix(), "ip", "link", "del", name)
	exec.Command(argv[0], argv[1:]...).Run()
}

// localStorageDriver asks the local daemon which storage driver it uses.
func localStorageDriver(t testing.TB) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("make client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		Missing(t, "read the local daemon's info: %v", err)
	}
	if info.Info.Driver == "" {
		return "vfs"
	}
	return info.Info.Driver
}

// Stop stops the daemon (SIGTERM, then SIGKILL after 20 s) and waits for
// it; calling it again does nothing.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	d.once.Do(func() {
		signal := func(sig string) {
			// The daemon may run under sudo: signal it by its pid file,
			// which names dockerd itself.
			pid := d.cmd.Process.Pid
			if data, err := os.ReadFile(filepath.Join(d.dir, "dockerd.pid")); err == nil {
				if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
					pid = p
				}
			}
			argv := append(sudoPrefix(), "kill", "-"+sig, strconv.Itoa(pid))
			exec.Command(argv[0], argv[1:]...).Run()
		}
		signal("TERM")
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			signal("KILL")
			<-d.done
		}
	})
}

// sudoPrefix is sudo's prefix without the test checks (for cleanup).
func sudoPrefix() []string {
	if os.Geteuid() == 0 {
		return nil
	}
	return []string{"sudo", "-n"}
}

// remove unmounts what the daemon left mounted and deletes its files.
func (d *Daemon) remove(t testing.TB) {
	mounts, _ := os.ReadFile("/proc/self/mounts")
	var targets []string
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], d.dir+"/") {
			targets = append(targets, f[1])
		}
	}
	for i := len(targets) - 1; i >= 0; i-- {
		argv := append(sudoPrefix(), "umount", "-l", targets[i])
		exec.Command(argv[0], argv[1:]...).Run()
	}
	argv := append(sudoPrefix(), "rm", "-rf", d.dir)
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Logf("remove test daemon files %s: %v: %s", d.dir, err, out)
	}
}

// Log returns the end of the daemon's log, for failure messages.
func (d *Daemon) Log() string { return tail(d.log, 40) }
