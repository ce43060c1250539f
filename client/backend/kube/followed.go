package kube

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

// followedMax is the most of a followed log kept: the output frame at its
// end (contract.OutMaxBytes, in base64 lines) and the runner's last lines
// before it.
const followedMax = 2 * contract.OutMaxBytes

// followed keeps, per job, the log of its newest pod as this backend
// followed it (Logs with Follow), output frame included. A pod deleted by
// hand takes its log with it, while the runner it stopped wrote its
// partial results into that log on the way out: what was followed is
// then the only copy, and collect reads the output there.
type followed struct {
	mu   sync.Mutex
	logs map[string]*followedLog
}

// followedLog is one pod's followed log, its oldest bytes dropped past
// followedMax (cut at a line, so that a frame's lines stay whole).
type followedLog struct {
	mu   sync.Mutex
	pod  string
	buf  bytes.Buffer
	cut  bool          // bytes were dropped from its start
	done chan struct{} // closed when its stream ended (end)
	once sync.Once
}

// end says that the log's stream ended: nothing more comes.
func (l *followedLog) end() { l.once.Do(func() { close(l.done) }) }

// followedWait is the longest collect waits for a followed log whose
// stream has not ended (the pod's gone, but its last lines, the output
// frame among them, are still on their way), on a loaded machine.
const followedWait = 30 * time.Second

// start begins keeping the log of job id's pod as it is followed, in
// place of an earlier pod's.
func (f *followed) start(id, pod string) *followedLog {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logs == nil {
		f.logs = map[string]*followedLog{}
	}
	l := &followedLog{pod: pod, done: make(chan struct{})}
	f.logs[id] = l
	return l
}

// get is the followed log of job id and the pod it is of ("" and nil
// when none was followed); cut says its start was dropped. A log still
// streaming is waited for, up to wait or ctx's end.
func (f *followed) get(ctx context.Context, id string, wait time.Duration) (pod string, data []byte, cut bool) {
	f.mu.Lock()
	l := f.logs[id]
	f.mu.Unlock()
	if l == nil {
		return "", nil, false
	}
	select {
	case <-l.done:
	case <-ctx.Done():
	case <-time.After(wait):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pod, bytes.Clone(l.buf.Bytes()), l.cut
}

func (l *followedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if over := l.buf.Len() - followedMax; over > 0 {
		b := l.buf.Bytes()
		if i := bytes.IndexByte(b[over:], '\n'); i >= 0 {
			over += i + 1
		}
		l.buf.Next(over)
		l.cut = true
	}
	return len(p), nil
}
