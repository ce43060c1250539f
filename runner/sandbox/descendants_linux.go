package sandbox

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The processes of a job that runs as its caller's own user (xrun run
// --local), where KillAll cannot tell them by their uid: this process
// adopts every orphan of its tree and kills what is left of the tree at
// the end.

// AdoptOrphans makes this process the reaper of its descendants' orphans
// (PR_SET_CHILD_SUBREAPER): a daemon started in a session of its own
// (setsid, a double fork) leaves its process group, but when its parent
// ends it becomes this process's child, not init's, and KillDescendants
// finds it.
func AdoptOrphans() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// KillDescendants kills and reaps every child of this process, pass after
// pass (a killed process's children become this process's once it has
// adopted orphans), until a pass finds none or limit has passed. It
// returns the names (comm) of the processes it killed. Only for the end of
// a job: it reaps children that an exec.Cmd may still be waiting for.
func KillDescendants(limit time.Duration) []string {
	self := os.Getpid()
	var killed []string
	seen := map[int]bool{}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		kids := childrenOf(self)
		if len(kids) == 0 {
			break
		}
		for _, pid := range kids {
			name, state := procStat(pid)
			if !seen[pid] && state != "Z" {
				killed = append(killed, name)
			}
			seen[pid] = true
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
	}
	return killed
}

// ReapAdopted reaps the ended children of this process other than keep
// (the ones whose exec.Cmd waits for them), so that adopted orphans that
// end while the job runs on do not pile up as zombies.
func ReapAdopted(keep ...int) {
	for _, pid := range childrenOf(os.Getpid()) {
		if _, state := procStat(pid); state == "Z" && !contains(keep, pid) {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid(p) == pid {
			out = append(out, p)
		}
	}
	return out
}

// statFields are the fields of /proc/PID/stat after the command's closing
// parenthesis (state, ppid, ...), and the command.
func statFields(pid int) (comm string, fields []string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", nil
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", nil
	}
	return s[open+1 : end], strings.Fields(s[end+1:])
}

func ppid(pid int) int {
	_, f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// procStat is a process's command name and state ("Z": a zombie).
func procStat(pid int) (name, state string) {
	comm, f := statFields(pid)
	if len(f) < 1 {
		return comm, ""
	}
	return comm, f[0]
}
