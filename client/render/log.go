package render

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

// Log is a job's log as a person reads it: the runner's progress lines
// (contract.Progress) become the status line on a terminal, redrawn every
// second so that the elapsed time moves, and a plain line elsewhere each
// time the case or its phase changes; every other line passes through.
type Log struct {
	s   *Status
	now func() time.Time

	mu      sync.Mutex
	partial []byte
	last    contract.Progress
	seen    bool
	at      time.Time // when last arrived
	plain   string    // the case and phase of the last plain progress line
	stop    chan struct{}
	stopped sync.Once
}

// NewLog returns a Log over s. Close it when the log ends.
func NewLog(s *Status) *Log { return newLog(s, time.Now, time.Second) }

func newLog(s *Status, now func() time.Time, tick time.Duration) *Log {
	l := &Log{s: s, now: now, stop: make(chan struct{})}
	if s.Live() && tick > 0 {
		go l.tick(tick)
	}
	return l
}

func (l *Log) tick(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.redraw()
			l.mu.Unlock()
		}
	}
}

// Write takes the log as it comes, in pieces of any size.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i+1]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// Close writes what is left of a last line without its newline and takes
// the status line away.
func (l *Log) Close() error {
	l.stopped.Do(func() { close(l.stop) })
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(string(l.partial) + "\n")
		l.partial = nil
	}
	l.s.Clear()
	return nil
}

func (l *Log) line(line string) {
	e, ok := contract.ParseProgress(line)
	if !ok {
		l.s.Write([]byte(line))
		return
	}
	l.last, l.seen, l.at = e, true, l.now()
	if l.s.Live() {
		l.redraw()
		return
	}
	key := strconv.Itoa(e.Case) + " " + e.Phase
	if key == l.plain {
		return
	}
	l.plain = key
	prefix := ""
	if f := strings.Fields(line); len(f) > 0 && f[0] != contract.ProgressTag {
		prefix = f[0] + " " // the log's time
	}
	l.s.Println(prefix + "progress: " + e.Text(e.Elapsed))
}

// redraw puts the last progress on the status line, its elapsed time
// moved on by the time since it arrived.
func (l *Log) redraw() {
	if !l.seen {
		return
	}
	elapsed := l.last.Elapsed + l.now().Sub(l.at).Seconds()
	l.s.Set(l.last.Text(elapsed))
}

var _ io.WriteCloser = (*Log)(nil)
