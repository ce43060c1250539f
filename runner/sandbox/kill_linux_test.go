package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// testUser is a uid no process of this machine uses.
var testUser = User{UID: 65529, GID: 65529}

func needRoot(t *testing.T) { t.Helper(); testenv.Root(t, "it runs processes as another user") }

// The processes of the worker user, those that left the group of the
// process that started them among them, are all gone after KillAll.
func TestKillAllReachesSetsidChildren(t *testing.T) {
	needRoot(t)
	// A shell that starts three daemons in their own sessions, then exits.
	cmd := exec.Command("sh", "-c", `for i in 1 2 3; do setsid sleep 300 </dev/null >/dev/null 2>&1 & done; sleep 0.2`)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	testUser.Apply(cmd.SysProcAttr)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start the daemons: %v: %s", err, out)
	}
	if n, err := testUser.Alive("/proc"); err != nil || n < 3 {
		t.Fatalf("%d processes of uid %d alive (%v), want the 3 daemons", n, testUser.UID, err)
	}
	killed, err := testUser.KillAll("/proc", 5*time.Second)
	if err != nil || len(killed) < 3 || !slices.Contains(killed, "sleep") {
		t.Fatalf("KillAll = %v, %v", killed, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := testUser.Alive("/proc")
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of uid %d still alive", n, testUser.UID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RLIMIT_NPROC binds the worker user, not the root runner that set it.
func TestLimitProcsBindsTheWorkerAlone(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/pids.max", []byte("320\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(6, &old); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(6, &old)
	n, err := testUser.LimitProcs(dir)
	if err != nil || n != 64 {
		t.Fatalf("LimitProcs = %d, %v; want 64 (320 less the reserve, at least 64)", n, err)
	}
	// The worker user cannot start more than 64 processes...
	cmd := exec.Command("sh", "-c", `n=0; while [ $n -lt 200 ]; do sleep 30 </dev/null >/dev/null 2>&1 & n=$((n+1)); done`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	testUser.Apply(cmd.SysProcAttr)
	out, _ := cmd.CombinedOutput()
	defer testUser.KillAll("/proc", 5*time.Second)
	if !strings.Contains(strings.ToLower(string(out)), "fork") && !strings.Contains(strings.ToLower(string(out)), "resource") {
		t.Errorf("the worker user started 200 processes under a limit of 64: %q", out)
	}
	// ...while root, which set the limit, still can.
	for i := 0; i < 100; i++ {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatalf("the runner (root) could not start process %d: %v", i, err)
		}
	}
}
