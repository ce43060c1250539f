//go:build integration

package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// Over ssh (sshd on loopback, the test cluster's commands behind it) a
// job's remote steps share one connection: each step's session comes
// from the same client port, and a step does not wait for the shared
// connection to end. A user's ControlMaster=no in ssh_options wins.
func TestSSHStepsShareOneConnection(t *testing.T) {
	startCluster(t, t.TempDir())
	sshd := testenv.StartSSHD(t)
	opts := append(append([]string(nil), sshd.Options...), "-o", "SetEnv=SLURM_CONF="+os.Getenv("SLURM_CONF"))
	if controlDir() == "" {
		t.Fatal("no private directory for ssh's control sockets")
	}
	t.Cleanup(func() {
		// The shared connection would outlive the test by ControlPersist.
		host, port, _ := strings.Cut(strings.TrimPrefix(sshd.Host, "ssh://"), ":")
		args := append(append(append([]string(nil), opts...), controlOptions()...), "-p", port, "-O", "exit", host)
		exec.Command("ssh", args...).Run()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// clients runs n steps and returns the client end of each one's
	// connection (SSH_CONNECTION's address and port).
	clients := func(sh SSHShell, n int) map[string]bool {
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			start := time.Now()
			out, err := sh.Run(ctx, `set -- $SSH_CONNECTION; echo "$1:$2"; sinfo -h -o %P`, nil)
			if err != nil {
				t.Fatalf("step %d over ssh: %v", i, err)
			}
			if d := time.Since(start); d > ControlPersist/2 {
				t.Errorf("step %d took %s: it waited for the shared connection", i, d)
			}
			lines := strings.Fields(string(out))
			if len(lines) < 2 || lines[1] != "debug*" {
				t.Fatalf("step %d: %q, want the client's address and the cluster's partitions", i, out)
			}
			seen[lines[0]] = true
		}
		return seen
	}
	sh := SSHShell{Login: sshd.Host, Options: opts}
	if seen := clients(sh, 4); len(seen) != 1 {
		t.Errorf("4 steps came over %d connections (%v), want one", len(seen), seen)
	}
	sockets, _ := filepath.Glob(filepath.Join(controlDir(), "*"))
	if len(sockets) == 0 {
		t.Errorf("no control socket in %s", controlDir())
	}
	// A stream (the copy of out/) goes over it too.
	rc, err := sh.Stream(ctx, "echo streamed")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := rc.Read(buf)
	if err := rc.Close(); err != nil || string(buf[:n]) != "streamed\n" {
		t.Errorf("stream: %q, %v", buf[:n], err)
	}

	own := SSHShell{Login: sshd.Host, Options: append(append([]string(nil), opts...), "-o", "ControlMaster=no", "-o", "ControlPath=none")}
	if seen := clients(own, 2); len(seen) != 2 {
		t.Errorf("with ssh_options ControlMaster=no, 2 steps came over %d connections, want 2", len(seen))
	}
	b := &Backend{Shell: sh}
	if arch, err := b.Arch(ctx); err != nil || arch == "" {
		t.Errorf("Arch over the shared connection: %q, %v", arch, err)
	}
}
