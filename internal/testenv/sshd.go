package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SSHD is an OpenSSH server on loopback that accepts one key made by the
// test. Through it, ssh://USER@127.0.0.1:PORT reaches the Docker daemon
// that `docker system dial-stdio` finds on this machine (the local one).
type SSHD struct {
	// Host is the address for xrun: ssh://USER@127.0.0.1:PORT.
	Host string
	// Options are the ssh arguments that make the connection hermetic:
	// the test's key, a known_hosts file with the test's host key, strict
	// host key checking, and no user ssh config.
	Options []string
	// BadKeyOptions are the same with a key the server does not accept.
	BadKeyOptions []string
	// UnknownHostOptions are the same with an empty known_hosts file.
	UnknownHostOptions []string

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// StartSSHD starts sshd on a free loopback port and stops it when the test
// ends. The docker CLI must be on the PATH of the ssh session.
func StartSSHD(t testing.TB) *SSHD {
	t.Helper()
	RequireDocker(t)
	sshd := lookPath(t, "sshd", "openssh-server")
	keygen := lookPath(t, "ssh-keygen", "openssh-client")
	lookPath(t, "ssh", "openssh-client")
	lookPath(t, "docker", "docker.io (the docker CLI, for docker system dial-stdio)")
	prefix := sudo(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}

	dir, err := os.MkdirTemp("/tmp", "xrs-")
	if err != nil {
		t.Fatalf("make sshd dir: %v", err)
	}
	os.Chmod(dir, 0o755)
	for _, k := range []string{"host_key", "client_key", "bad_key"} {
		run(t, keygen, "-q", "-t", "ed25519", "-N", "", "-C", "xrun-test", "-f", filepath.Join(dir, k))
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "authorized_keys"), pub, 0o644)
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	fields := strings.Fields(string(hostPub))
	write(t, filepath.Join(dir, "known_hosts"), fmt.Appendf(nil, "[127.0.0.1]:%d %s %s\n", port, fields[0], fields[1]), 0o644)
	write(t, filepath.Join(dir, "empty_known_hosts"), nil, 0o644)
	write(t, filepath.Join(dir, "sshd_config"), fmt.Appendf(nil, `Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
SetEnv PATH=%s
AcceptEnv SLURM_CONF
`, port, filepath.Join(dir, "host_key"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys"), sessionPath()), 0o644)
	// Privilege separation needs this directory (Debian makes it at boot).
	if _, err := os.Stat("/run/sshd"); err != nil {
		argv := append(prefix, "mkdir", "-p", "-m", "0755", "/run/sshd")
		exec.Command(argv[0], argv[1:]...).Run()
	}

	s := &SSHD{
		Host: fmt.Sprintf("ssh://%s@127.0.0.1:%d", u.Username, port),
		dir:  dir,
		done: make(chan struct{}),
	}
	opts := func(key, knownHosts string) []string {
		return []string{
			"-F", "/dev/null",
			"-i", filepath.Join(dir, key),
			"-o", "IdentitiesOnly=yes",
			"-o", "UserKnownHostsFile=" + filepath.Join(dir, knownHosts),
			"-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "StrictHostKeyChecking=yes",
			"-o", "LogLevel=ERROR",
		}
	}
	s.Options = opts("client_key", "known_hosts")
	s.BadKeyOptions = opts("bad_key", "known_hosts")
	s.UnknownHostOptions = opts("client_key", "empty_known_hosts")

	logPath := filepath.Join(dir, "sshd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	argv := append(prefix, sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		Missing(t, "start sshd: %v", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.stop()
		argv := append(sudoPrefix(), "rm", "-rf", dir)
		exec.Command(argv[0], argv[1:]...).Run()
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-s.done:
			Missing(t, "sshd exited at start: %v\n%s", s.cmd.ProcessState, tail(logPath, 20))
		default:
		}
		if time.Now().After(deadline) {
			Missing(t, "sshd did not listen on port %d within 20s\n%s", port, tail(logPath, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// sessionPath is the PATH of ssh sessions: the test's own, so that the
// docker CLI the tests use is the one dial-stdio runs.
func sessionPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

func (s *SSHD) stop() {
	s.once.Do(func() {
		argv := append(sudoPrefix(), "kill", "-TERM", fmt.Sprint(s.cmd.Process.Pid))
		exec.Command(argv[0], argv[1:]...).Run()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			argv := append(sudoPrefix(), "kill", "-KILL", fmt.Sprint(s.cmd.Process.Pid))
			exec.Command(argv[0], argv[1:]...).Run()
			<-s.done
		}
	})
}
