package job

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/xrun-dev/xrun/internal/text"
)

// Result is the outcome on one host.
type HostResult[T any] struct {
	Host    string
	Value   T
	Err     error
	Elapsed time.Duration
}

// HostFunc does the work on one host; out receives its progress (any number
// of bytes at a time; FanOut splits it into lines).
type HostFunc[T any] func(ctx context.Context, host string, out io.Writer) (T, error)

// FanOut runs one piece of work (a submit) on several Docker hosts in
// parallel: it calls fn for every host at once and waits for all of them,
// and the outcome of every host comes back in the order given. A
// failing host does not cancel the others; only ctx does. Progress lines
// go to w as "host | line", never interleaved mid-line.
func FanOut[T any](ctx context.Context, hostNames []string, w io.Writer, fn HostFunc[T]) []HostResult[T] {
	width := 0
	for _, h := range hostNames {
		width = max(width, len(h))
	}
	var mu sync.Mutex // serializes whole lines to w
	results := make([]HostResult[T], len(hostNames))
	var g errgroup.Group // no shared context: one failure must not stop the rest
	for i, h := range hostNames {
		g.Go(func() error {
			lw := &lineWriter{mu: &mu, w: w, prefix: fmt.Sprintf("%-*s | ", width, h)}
			start := time.Now()
			v, err := fn(ctx, h, lw)
			lw.flush()
			results[i] = HostResult[T]{Host: h, Value: v, Err: err, Elapsed: time.Since(start)}
			if err != nil {
				lw.line("failed: " + text.OneLine(err.Error()))
			}
			return nil
		})
	}
	g.Wait()
	return results
}

// lineWriter prefixes every complete line and writes it under mu.
type lineWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    bytes.Buffer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf.Write(p)
	for {
		data := l.buf.Bytes()
		i := bytes.IndexAny(data, "\n\r")
		if i < 0 {
			break
		}
		line := string(data[:i])
		l.buf.Next(i + 1)
		if strings.TrimSpace(line) != "" {
			l.line(line)
		}
	}
	return len(p), nil
}

func (l *lineWriter) flush() {
	if l.buf.Len() > 0 {
		l.line(l.buf.String())
		l.buf.Reset()
	}
}

func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, l.prefix+s+"\n")
}
