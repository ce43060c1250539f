//go:build integration

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// xrun exec runs a command in a running job's container as its
// experiment's code runs: the job user, not root, without the runner's
// privileges; its exit code is xrun's, standard input reaches it with -i,
// and a job that ended has nothing to run it in.
func TestExec(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	defer x.Run(t, time.Minute, "rm", "--force", id)
	waitRunning(t, id)
	who := x.Run(t, time.Minute, "exec", id, "--", "sh", "-c", "id -u; pwd; echo $HOME")
	expect(t, who, 0)
	if got := strings.Fields(who.Stdout); len(got) != 3 || got[0] != "65532" || got[1] != "/xrun/exp" || got[2] != "/xrun/home" {
		t.Errorf("the command ran as %q, want the job user in the experiment's directory", who.Stdout)
	}
	expect(t, x.Run(t, time.Minute, "exec", id, "--", "sh", "-c", "exit 7"), 7, "exited with code 7")
	// The runner (root, pid 1) is beyond its reach.
	kill := x.Run(t, time.Minute, "exec", id, "--", "kill", "-0", "1")
	if kill.Code == 0 {
		t.Error("the command could signal the runner")
	}
	cmd := exec.Command(xrunBin, "exec", "-i", id, "--", "tr", "a-z", "A-Z")
	cmd.Env = env()
	cmd.Stdin = strings.NewReader("through stdin\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "THROUGH STDIN\n" {
		t.Errorf("exec -i: %q, %v", out, err)
	}
	if s := x.Status(t, id); s.Status != "running" {
		t.Errorf("the job after the commands: %s", s.Status)
	}
	expect(t, x.Run(t, time.Minute, "cancel", id), 0)
	expect(t, x.Run(t, time.Minute, "exec", id, "--", "true"), 3, "is cancelled: xrun exec runs a command beside a running job")
	expect(t, x.Run(t, time.Minute, "exec", id), 3, "xrun exec JOB -- COMMAND")
}
