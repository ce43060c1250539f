package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/sandbox"
)

// TailBytes is how much of a worker's stdout and stderr is kept for errors.
const TailBytes = 4096

// LogHeadBytes and LogTailBytes bound a worker's log file: it keeps the
// first LogHeadBytes of the worker's stdout and stderr as they come and,
// once the worker has ended, the last LogTailBytes after a line saying how
// many bytes were dropped between them. A kernel printing in a loop (171 MB
// in a second has been seen) would otherwise fill the output directory, and
// every job store it is copied into.
const (
	LogHeadBytes = 1 << 20
	LogTailBytes = 1 << 20
)

// maxLine bounds one event line (a batch of samples is the longest).
const maxLine = 64 << 20

// Config says how to start a worker.
type Config struct {
	// Name is the implementation the worker runs, for messages.
	Name string
	// Argv is the program and its arguments: python3 -u and the path
	// WriteScript returned, or a command benchmark.
	Argv []string
	// Dir is the working directory (the experiment directory).
	Dir string
	// Env is the complete environment; nil means this process's.
	Env []string
	// LogPath receives the worker's stdout and stderr.
	LogPath string
	// Logf, when set, receives the worker's log events.
	Logf func(format string, args ...any)
	// As is the user the worker runs as (nil: the runner's own).
	As *sandbox.User
	// MemoryLimitBytes is the container's memory limit (0: none), for
	// the words of an out-of-memory kill.
	MemoryLimitBytes int64
}

// Error is a failure of one operation in a worker: reported by the worker
// (exception, oom, cuda, import) or seen by the runner (timeout, crash,
// protocol).
type Error struct {
	Kind      string
	Where     string // the stage that failed (fn, reference, inputs, ...)
	Message   string
	Traceback string
	// Tail is the end of the worker's stdout and stderr.
	Tail string
	// Exit describes how the process ended, when it did.
	Exit string
}

func (e *Error) Error() string {
	if e.Where != "" && e.Where != "harness" {
		return e.Where + ": " + e.Message
	}
	return e.Message
}

// Worker is one running worker process. Its methods are not safe for
// concurrent use: the protocol is one command, then its answer.
type Worker struct {
	name    string
	cmdPipe *os.File
	events  chan eventOrErr
	done    chan struct{}
	out     *tailWriter
	logf    func(string, ...any)
	nextID  int64

	// memoryNote says which memory ran out: the container's limit, or the host's.
	memoryNote string
	// logLeft is what is left of the worker's LogBudget.
	logLeft int

	// pid is the worker's process, the leader of its process group.
	pid int

	mu     sync.Mutex
	killed bool
	// exit says how the process ended, once it has (exited).
	exit   exitInfo
	exited bool
}

// exitInfo is how a worker's process ended: in words, and whether it
// looks like the out-of-memory killer's doing.
type exitInfo struct {
	desc string
	oom  bool
}

type eventOrErr struct {
	ev  *Event
	err error
}

// Start starts a worker process with the protocol pipes on its fds 3
// (commands) and 4 (events).
func Start(c Config) (*Worker, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("start worker: empty command")
	}
	logFile, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start worker %s: open log: %w", c.Name, err)
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start worker %s: %w", c.Name, err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		cmdR.Close()
		cmdW.Close()
		return nil, fmt.Errorf("start worker %s: %w", c.Name, err)
	}
	out := newTailWriter(logFile)
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	// A fresh slice: callers share c.Env between workers started at once.
	cmd.Env = append(slices.Clip(env), "XRUN_CMD_FD=3", "XRUN_EVENT_FD=4", "XRUN_IMPL="+c.Name)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	// A child that leaves grandchildren holding stdout must not hang Wait.
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd, c.As)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		cmdR.Close()
		cmdW.Close()
		evR.Close()
		evW.Close()
		return nil, fmt.Errorf("start worker %s: %w", c.Name, err)
	}
	cmdR.Close()
	evW.Close()
	w := newWorker(c, cmd.Process.Pid, cmdW, evR, out)
	go func() {
		_ = cmd.Wait()
		w.ended(exitInfo{desc: exitDescription(cmd.ProcessState), oom: oomKilled(cmd.ProcessState)})
	}()
	return w, nil
}

// newWorker is the Worker of process pid, reading its events from evR.
func newWorker(c Config, pid int, cmdW, evR *os.File, out *tailWriter) *Worker {
	logf := c.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	w := &Worker{name: c.Name, pid: pid, cmdPipe: cmdW, events: make(chan eventOrErr, 16),
		done: make(chan struct{}), out: out, logf: logf, memoryNote: memoryNote(c.MemoryLimitBytes), logLeft: LogBudget}
	go w.read(evR)
	return w
}

// ended records how the process ended, once its output is in.
func (w *Worker) ended(e exitInfo) {
	w.mu.Lock()
	w.exit, w.exited = e, true
	w.mu.Unlock()
	w.out.Close()
	close(w.done)
}

func (w *Worker) read(r *os.File) {
	defer close(w.events)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			ev, derr := DecodeEvent(line)
			w.events <- eventOrErr{ev, derr}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.events <- eventOrErr{nil, err}
			}
			return
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("an event line is longer than %d bytes", maxLine)
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}

// Name returns the implementation the worker runs.
func (w *Worker) Name() string { return w.name }

// Tail returns the last TailBytes of the worker's stdout and stderr.
func (w *Worker) Tail() string { return w.out.Tail() }

// Exited reports whether the process has ended.
func (w *Worker) Exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Init sends init and waits for ready.
func (w *Worker) Init(ctx context.Context, c Init) (*Ready, error) {
	ev, err := w.call(ctx, OpInit, c, EventReady)
	if err != nil {
		return nil, err
	}
	return ev.Ready, nil
}

// Models asks for the work models and metrics of one case.
func (w *Worker) Models(ctx context.Context, params json.RawMessage) (*Models, error) {
	ev, err := w.call(ctx, OpModels, ModelsCmd{Params: params}, EventModels)
	if err != nil {
		return nil, err
	}
	return ev.Models, nil
}

// Check runs the correctness check.
func (w *Worker) Check(ctx context.Context, c Check) (*result.Correctness, error) {
	ev, err := w.call(ctx, OpCheck, c, EventCorrectness)
	if err != nil {
		return nil, err
	}
	return ev.Correctness, nil
}

// First makes the implementation's first call at a case (OpFirst).
func (w *Worker) First(ctx context.Context, c First) (*FirstCall, error) {
	ev, err := w.call(ctx, OpFirst, c, EventFirst)
	if err != nil {
		return nil, err
	}
	return ev.First, nil
}

// Time takes one batch of samples.
func (w *Worker) Time(ctx context.Context, c Time) (*Samples, error) {
	ev, err := w.call(ctx, OpTime, c, EventSamples)
	if err != nil {
		return nil, err
	}
	return ev.Samples, nil
}

// Profile runs one call of a case for Nsight Compute (OpProfile): the
// worker must run under ncu, and Init must have set Profile.
func (w *Worker) Profile(ctx context.Context, c ProfileCmd) error {
	_, err := w.call(ctx, OpProfile, c, EventProfiled)
	return err
}

// call sends one command and waits for its answer. When ctx ends first the
// worker is killed: a deadline is a timeout Error, a cancellation returns
// ctx's error.
func (w *Worker) call(ctx context.Context, op string, cmd any, want string) (*Event, error) {
	if w.Exited() {
		return nil, w.deathError(op)
	}
	w.nextID++
	id := w.nextID
	line, err := EncodeCommand(op, id, cmd)
	if err != nil {
		return nil, err
	}
	if _, err := w.cmdPipe.Write(line); err != nil {
		w.waitExit(2 * time.Second)
		return nil, w.deathError(op)
	}
	start := time.Now()
	for {
		select {
		case e, ok := <-w.events:
			if !ok {
				w.waitExit(5 * time.Second)
				return nil, w.deathError(op)
			}
			if e.err != nil {
				w.Kill()
				return nil, &Error{Kind: KindProtocol, Message: fmt.Sprintf("%s: unreadable answer to %s (the worker was stopped): %v", w.name, op, e.err), Tail: w.Tail()}
			}
			ev := e.ev
			if ev.Kind == EventLog {
				w.note(ev.Log.Message)
				continue
			}
			if ev.ID != id {
				w.note(fmt.Sprintf("ignoring a %s event for command %d while waiting for %d", ev.Kind, ev.ID, id))
				continue
			}
			if ev.Kind == EventError {
				e := ev.Error
				// What the worker printed before failing may still be in its
				// stdout/stderr pipes: let it reach the tail.
				w.out.settle(20*time.Millisecond, 250*time.Millisecond)
				return nil, &Error{Kind: e.Kind, Where: e.Where, Message: e.Message, Traceback: e.Traceback, Tail: w.Tail()}
			}
			if ev.Kind != want {
				w.Kill()
				return nil, &Error{Kind: KindProtocol, Message: fmt.Sprintf("%s: answered %s with a %s event, want %s (the worker was stopped)", w.name, op, ev.Kind, want), Tail: w.Tail()}
			}
			return ev, nil
		case <-w.done:
			// The process is gone; its last events may still be in the pipe,
			// and a grandchild may hold the pipe open, so drain briefly.
			select {
			case e, ok := <-w.events:
				if ok && e.err == nil && e.ev.ID == id && (e.ev.Kind == want || e.ev.Kind == EventError) {
					if e.ev.Kind == EventError {
						x := e.ev.Error
						return nil, &Error{Kind: x.Kind, Where: x.Where, Message: x.Message, Traceback: x.Traceback, Tail: w.Tail()}
					}
					return e.ev, nil
				}
				if ok {
					continue
				}
			case <-time.After(time.Second):
			}
			return nil, w.deathError(op)
		case <-ctx.Done():
			w.Kill()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				w.waitExit(5 * time.Second)
				return nil, &Error{Kind: KindTimeout, Where: "harness",
					Message: fmt.Sprintf("no answer to %s after %s; the worker was killed", doing(op), time.Since(start).Round(time.Millisecond)),
					Tail:    w.Tail()}
			}
			return nil, fmt.Errorf("%s: %s: %w", w.name, op, ctx.Err())
		}
	}
}

func (w *Worker) waitExit(d time.Duration) {
	select {
	case <-w.done:
	case <-time.After(d):
		w.Kill()
		select {
		case <-w.done:
		case <-time.After(d):
		}
	}
}

// doing names what a worker was doing when it answered op, in a sentence:
// the op, or "its first call" for OpFirst.
func doing(op string) string {
	if op == OpFirst {
		return "its first call"
	}
	return op
}

// deathError describes a worker that ended without answering.
func (w *Worker) deathError(op string) *Error {
	w.mu.Lock()
	st, exited, killed := w.exit, w.exited, w.killed
	w.mu.Unlock()
	e := &Error{Kind: KindCrash, Where: "harness", Tail: w.Tail()}
	if !exited {
		e.Message = fmt.Sprintf("the worker closed its event pipe during %s", doing(op))
		return e
	}
	e.Exit = st.desc
	switch {
	case killed:
		e.Message = fmt.Sprintf("the worker was killed during %s", doing(op))
	case st.oom:
		e.Kind = KindOOM
		e.Message = fmt.Sprintf("the worker was killed during %s (%s): most likely out of memory (%s)", doing(op), e.Exit, w.memoryNote)
	default:
		e.Message = fmt.Sprintf("the worker died during %s (%s)", doing(op), e.Exit)
	}
	return e
}

// LogBudget is how many bytes of a worker's messages go into the runner's
// log, and MaxLogMessage how long one may be: the event pipe is within the
// experiment's reach, and the runner's log is the job's.
const (
	LogBudget     = 64 << 10
	MaxLogMessage = 2000
)

// note passes a message of the worker on to Logf while its budget lasts.
func (w *Worker) note(msg string) {
	if w.logLeft <= 0 {
		return
	}
	if len(msg) > MaxLogMessage {
		msg = msg[:MaxLogMessage] + fmt.Sprintf("... (%d bytes more)", len(msg)-MaxLogMessage)
	}
	w.logLeft -= len(msg)
	if w.logLeft <= 0 {
		w.logf("%s: further messages of this worker are dropped (the runner's log keeps %d bytes of each worker's)", w.name, LogBudget)
		return
	}
	w.logf("%s: %s", w.name, msg)
}

// memoryNote names the memory an OOM kill most likely ran out of.
func memoryNote(limit int64) string {
	if limit <= 0 {
		return "the host's; the container has no memory limit"
	}
	return fmt.Sprintf("the container's limit of %s, shared by every worker", humanBytes(limit))
}

// humanBytes writes n in binary units: 2 GiB, 512 MiB.
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " " + units[i]
}

// Kill ends the worker and every process it started, at once.
func (w *Worker) Kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.exited {
		return // reaped: its pid may belong to another process by now
	}
	w.killed = true
	killTree(w.pid)
}

// Close asks the worker to exit, waits up to grace for it, then kills it.
func (w *Worker) Close(grace time.Duration) {
	if !w.Exited() {
		if line, err := EncodeCommand(OpExit, w.nextID+1, nil); err == nil {
			_, _ = w.cmdPipe.Write(line)
		}
	}
	w.cmdPipe.Close()
	select {
	case <-w.done:
	case <-time.After(grace):
		w.Kill()
		<-w.done
	}
	// Unread events would keep the reading goroutine blocked forever.
	go func() {
		for range w.events {
		}
	}()
}

// tailWriter writes the head of the output to the worker's log file, holds
// the end of the rest until Close (see LogHeadBytes), and keeps the last
// TailBytes for errors.
type tailWriter struct {
	mu     sync.Mutex
	log    *text.HeadTail // the log file, bounded
	f      *os.File
	tail   []byte
	closed bool
	last   time.Time // of the latest write
}

func newTailWriter(f *os.File) *tailWriter {
	return &tailWriter{log: text.NewHeadTail(f, LogHeadBytes, LogTailBytes, "a worker's log"), f: f}
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	if !t.closed {
		_, _ = t.log.Write(p) // a full disk must not stop the worker
	}
	t.tail = append(t.tail, p...)
	if len(t.tail) > TailBytes {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-TailBytes:]...)
	}
	return len(p), nil
}

// Tail returns the kept end of the output, starting at a line boundary
// when one is near.
func (t *tailWriter) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.tail)
	if len(t.tail) == TailBytes {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
			s = s[i+1:]
		}
	}
	return s
}

// settle waits until nothing was written for quiet (counted from the call
// at the earliest), or for at most limit.
func (t *tailWriter) settle(quiet, limit time.Duration) {
	start := time.Now()
	end := start.Add(limit)
	for time.Now().Before(end) {
		t.mu.Lock()
		last := t.last
		t.mu.Unlock()
		if last.Before(start) {
			last = start
		}
		idle := time.Since(last)
		if idle >= quiet {
			return
		}
		time.Sleep(quiet - idle)
	}
}

func (t *tailWriter) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	_ = t.log.Close()
	t.f.Close()
}
