package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

// Zygote starts a run's Python workers by forking them from one process
// that imported numpy, torch and triton once (xrun_harness/zygote.py): a
// worker then starts in milliseconds, and sets up its own CUDA context in
// init, as one started on its own does. Each worker is still a process
// (and process group) of its own, so a crash, hang or OOM in one leaves
// the others running.
type Zygote struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	// mu serialises fork requests: one is in flight at a time.
	mu     sync.Mutex
	nextID int
	// replies gets the answer of the request in flight; exits the wait
	// status of each worker that ended, by pid.
	replies chan zygoteMsg
	emu     sync.Mutex
	exits   map[int]chan syscall.WaitStatus
	ended   map[int]syscall.WaitStatus
	dead    chan struct{}
	err     error // why the zygote is gone, once dead is closed
	// exited is closed once its process has ended.
	exited chan struct{}
	// Loaded are the modules the zygote imported for its workers.
	Loaded []string
}

type zygoteMsg struct {
	Op      string   `json:"op"`
	ID      int      `json:"id"`
	PID     int      `json:"pid"`
	Error   string   `json:"error"`
	Exit    int      `json:"exit"`
	Status  int      `json:"status"`
	Loaded  []string `json:"loaded"`
	Threads int      `json:"threads"`
	// Unsafe says why forking from the zygote is unsafe ("": it is not).
	Unsafe string `json:"unsafe"`
}

// zygoteStart is how long the zygote may take to import its modules.
const zygoteStart = 2 * time.Minute

// zygoteMaxPacket is the largest request the zygote reads (zygote.py).
const zygoteMaxPacket = 128 << 10

// StartZygote starts the zygote as harness worker argv (python -u
// harness.py) with --zygote, in dir with env, as user as, and waits until
// it has imported its modules. Its own output goes to log.
func StartZygote(argv []string, dir string, env []string, as *sandbox.User, log io.Writer) (*Zygote, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start the zygote: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote-child")
	defer theirs.Close()
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("start the zygote: %w", err)
	}
	conn := fc.(*net.UnixConn)
	cmd := exec.Command(argv[0], append(slices.Clone(argv[1:]), "--zygote")...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(env), "XRUN_ZYGOTE_FD=3")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd, as)
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("start the zygote: %w", err)
	}
	z := &Zygote{cmd: cmd, conn: conn, replies: make(chan zygoteMsg, 1),
		exits: map[int]chan syscall.WaitStatus{}, ended: map[int]syscall.WaitStatus{}, dead: make(chan struct{}), exited: make(chan struct{})}
	ready := make(chan zygoteMsg, 1)
	go z.read(ready)
	go func() {
		err := cmd.Wait()
		conn.Close()
		z.die(fmt.Errorf("the zygote ended (%v)", err))
		close(z.exited)
	}()
	select {
	case m := <-ready:
		if m.Op != "ready" {
			z.Close()
			return nil, fmt.Errorf("start the zygote: it said %+v first", m)
		}
		if m.Threads > 1 {
			// A fork copies only the calling thread; a lock another
			// thread held would stay locked in every worker.
			z.Close()
			return nil, fmt.Errorf("start the zygote: it holds %d threads after importing %v, and forking a threaded process is unsafe", m.Threads, m.Loaded)
		}
		if m.Unsafe != "" {
			z.Close()
			return nil, fmt.Errorf("start the zygote: forking from it is unsafe: %s", m.Unsafe)
		}
		z.Loaded = m.Loaded
		return z, nil
	case <-z.dead:
		return nil, fmt.Errorf("start the zygote: %w", z.err)
	case <-time.After(zygoteStart):
		z.Close()
		return nil, fmt.Errorf("start the zygote: no answer within %s", zygoteStart)
	}
}

func (z *Zygote) read(ready chan<- zygoteMsg) {
	buf := make([]byte, 64<<10)
	first := true
	for {
		n, _, _, _, err := z.conn.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			z.die(fmt.Errorf("the zygote closed its socket: %v", err))
			return
		}
		var m zygoteMsg
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			z.die(fmt.Errorf("the zygote said %q: %v", buf[:n], err))
			return
		}
		switch {
		case first:
			first = false
			ready <- m
		case m.Exit > 0:
			z.emu.Lock()
			if ch, ok := z.exits[m.Exit]; ok {
				ch <- syscall.WaitStatus(m.Status)
				delete(z.exits, m.Exit)
			} else {
				z.ended[m.Exit] = syscall.WaitStatus(m.Status)
			}
			z.emu.Unlock()
		default:
			z.replies <- m
		}
	}
}

// die marks the zygote gone, once, with why.
func (z *Zygote) die(err error) {
	z.emu.Lock()
	defer z.emu.Unlock()
	select {
	case <-z.dead:
		return
	default:
	}
	z.err = err
	close(z.dead)
}

// Close ends the zygote and with it (the kernel's parent-death signal)
// every worker it forked that still runs: close the workers first.
func (z *Zygote) Close() {
	z.conn.Close()
	select {
	case <-z.exited:
	case <-time.After(5 * time.Second):
		killTree(z.cmd.Process.Pid)
		<-z.exited
	}
}

// Start forks a worker for c (c.Argv is not used: the worker is the
// zygote's harness). It fails when the zygote is gone; the caller then
// starts the worker on its own (Start).
func (z *Zygote) Start(c Config) (*Worker, error) {
	logFile, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start worker %s: open log: %w", c.Name, err)
	}
	var ends [6]*os.File // out, cmd, event pipes: read and write ends
	for i := 0; i < 6; i += 2 {
		if ends[i], ends[i+1], err = os.Pipe(); err != nil {
			closeAll(ends[:])
			logFile.Close()
			return nil, fmt.Errorf("start worker %s: %w", c.Name, err)
		}
	}
	outR, outW, cmdR, cmdW, evR, evW := ends[0], ends[1], ends[2], ends[3], ends[4], ends[5]
	pid, err := z.fork(c, outW, cmdR, evW)
	outW.Close()
	cmdR.Close()
	evW.Close()
	if err != nil {
		closeAll([]*os.File{outR, cmdW, evR, logFile})
		return nil, fmt.Errorf("start worker %s: %w", c.Name, err)
	}
	out := newTailWriter(logFile)
	w := newWorker(c, pid, cmdW, evR, out)
	copied := make(chan struct{})
	go func() {
		io.Copy(out, outR)
		outR.Close()
		close(copied)
	}()
	go func() {
		ws, ok := z.wait(pid)
		// Grandchildren that keep stdout open must not hold the end.
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
			outR.Close()
		}
		if !ok {
			w.ended(exitInfo{desc: "its zygote died"})
			return
		}
		w.ended(exitInfo{desc: waitDescription(ws), oom: waitOOM(ws)})
	}()
	return w, nil
}

// fork asks the zygote for a worker with the given descriptors.
func (z *Zygote) fork(c Config, out, cmd, ev *os.File) (int, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.nextID++
	// The worker's whole environment and directory: a standby's zygote
	// started before the job's were known (runner/run/standby.go).
	base := c.Env
	if base == nil {
		base = os.Environ()
	}
	env := make(map[string]string, len(base)+3)
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	env["XRUN_CMD_FD"], env["XRUN_EVENT_FD"], env["XRUN_IMPL"] = "3", "4", c.Name
	req, err := json.Marshal(map[string]any{"op": "fork", "id": z.nextID, "env": env, "cwd": c.Dir})
	if err != nil {
		return 0, err
	}
	if len(req) > zygoteMaxPacket {
		return 0, fmt.Errorf("the worker's environment is %d bytes, more than a fork request holds (%d)", len(req), zygoteMaxPacket)
	}
	rights := syscall.UnixRights(int(out.Fd()), int(cmd.Fd()), int(ev.Fd()))
	if _, _, err := z.conn.WriteMsgUnix(req, rights, nil); err != nil {
		return 0, fmt.Errorf("ask the zygote for a worker: %w", err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-z.replies:
			if m.ID != z.nextID {
				continue // the late answer to a request that timed out
			}
			if m.Error != "" {
				return 0, errors.New("the zygote: " + m.Error)
			}
			if err := z.isChild(m.PID); err != nil {
				return 0, err
			}
			return m.PID, nil
		case <-z.dead:
			return 0, z.err
		case <-timeout:
			return 0, errors.New("the zygote did not answer within 30s")
		}
	}
}

// isChild checks that pid, which the zygote says it forked, is its child:
// the zygote runs the experiment's user's code's interpreter, and the
// runner kills the process (group) it names.
func (z *Zygote) isChild(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("the zygote named worker pid %d, which is not running: %w", pid, err)
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	var state string
	var ppid int
	if i < 0 {
		return fmt.Errorf("the zygote named worker pid %d, whose /proc stat does not parse", pid)
	}
	if _, err := fmt.Sscan(string(b[i+1:]), &state, &ppid); err != nil || ppid != z.cmd.Process.Pid {
		return fmt.Errorf("the zygote named pid %d as its worker, which is not its child (parent %d)", pid, ppid)
	}
	return nil
}

// wait returns worker pid's wait status, once the zygote reports it; false
// when the zygote is gone (its workers with it: they die with it).
func (z *Zygote) wait(pid int) (syscall.WaitStatus, bool) {
	z.emu.Lock()
	if ws, ok := z.ended[pid]; ok {
		delete(z.ended, pid)
		z.emu.Unlock()
		return ws, true
	}
	ch := make(chan syscall.WaitStatus, 1)
	z.exits[pid] = ch
	z.emu.Unlock()
	select {
	case ws := <-ch:
		return ws, true
	case <-z.dead:
		// Reports sent just before the end may still be in the map.
		z.emu.Lock()
		defer z.emu.Unlock()
		select {
		case ws := <-ch:
			return ws, true
		default:
			return 0, false
		}
	}
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// waitDescription and waitOOM are exitDescription and oomKilled for a
// wait status the zygote reported.
func waitDescription(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("signal %d, %v", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

func waitOOM(ws syscall.WaitStatus) bool {
	return (ws.Signaled() && ws.Signal() == syscall.SIGKILL) || (ws.Exited() && ws.ExitStatus() == 137)
}
