package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Apply makes the process attr starts run as u, with no supplementary
// groups. Leaving root drops every capability the runner holds.
func (u *User) Apply(attr *syscall.SysProcAttr) {
	if u == nil {
		return
	}
	attr.Credential = &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}
}

// procsReserve is how many of the container's processes and threads the
// worker user may never take: the runner's Go threads, nvidia-smi and the
// init's, however many the workers start.
const procsReserve = 256

// defaultProcs is the worker user's process limit in a container without
// a pids limit.
const defaultProcs = 8192

// LimitProcs caps the processes and threads of u (RLIMIT_NPROC, which
// children inherit and which binds only once they leave root) below the
// container's pids limit, read from cgroupRoot ("/sys/fs/cgroup"). The
// runner, being root, is not bound by it. It returns the limit set.
func (u *User) LimitProcs(cgroupRoot string) (int64, error) {
	limit := int64(defaultProcs)
	for _, f := range []string{"pids.max", "pids/pids.max"} {
		b, err := os.ReadFile(filepath.Join(cgroupRoot, f))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			limit = max(v-procsReserve, 64)
		}
		break
	}
	rl := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	if err := syscall.Setrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		return 0, fmt.Errorf("limit the worker user's processes to %d: %w", limit, err)
	}
	return limit, nil
}

// KillAll kills every process of u, under procRoot ("/proc"): the
// workers, what they started, and whatever left their process groups
// (setsid) to outlive them. It looks again until a pass finds none alive,
// so that children forked while a pass ran go too, and gives up after
// limit. It returns the names (comm) of the processes it signalled.
func (u *User) KillAll(procRoot string, limit time.Duration) ([]string, error) {
	if u == nil {
		return nil, nil
	}
	deadline := time.Now().Add(limit)
	var killed []string
	for {
		procs, err := u.alive(procRoot)
		if err != nil {
			return killed, err
		}
		if len(procs) == 0 {
			return killed, nil
		}
		for _, p := range procs {
			if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
				killed = append(killed, p.name)
			}
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("%d processes of uid %d still alive after %s of killing", len(procs), u.UID, limit)
		}
		time.Sleep(time.Millisecond)
	}
}

// Alive counts u's live processes under procRoot (zombies, which hold
// nothing and wait for their parent, are not counted).
func (u *User) Alive(procRoot string) (int, error) {
	procs, err := u.alive(procRoot)
	return len(procs), err
}

type proc struct {
	pid  int
	name string
}

func (u *User) alive(procRoot string) ([]proc, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var procs []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		st, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "status"))
		if err != nil {
			continue // gone since the listing
		}
		if name, uids, state := statusFields(st); state != "Z" && state != "X" && slices.Contains(uids, u.UID) {
			procs = append(procs, proc{pid, name})
		}
	}
	return procs, nil
}

// statusFields reads the name, the real, effective, saved and filesystem
// uids and the state letter from a /proc/PID/status file.
func statusFields(b []byte) (name string, uids []int, state string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k {
		case "Name":
			name = strings.TrimSpace(v)
		case "State":
			if f := strings.Fields(v); len(f) > 0 {
				state = f[0]
			}
		case "Uid":
			for _, f := range strings.Fields(v) {
				if n, err := strconv.Atoi(f); err == nil {
					uids = append(uids, n)
				}
			}
		}
	}
	return name, uids, state
}

// CheckPrivate makes sure dir is a directory (not a link to one) that
// only this process's user can change: the runner's output directory,
// which no worker may replace, fill or delete.
func CheckPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, not a directory", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("cannot read the owner of " + dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to the runner (uid %d)", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s can be written by other users (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}
