// HeadTail bounds a log that a job's code can make as long as it
// likes: it passes on the first Head bytes as they come and keeps
// the last Tail bytes in memory, and Close writes a line saying how many
// bytes were dropped, then that end. A kernel printing in a loop (171 MB
// in a second has been seen) then costs at most Head+Tail bytes of disk
// and Tail bytes of memory, wherever its log is kept.

package text

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// HeadTail is a bounded log writer. It is not safe for concurrent use.
type HeadTail struct {
	w          io.Writer
	head, tail int64
	what       string
	written    int64 // bytes passed on to w
	rest       ring  // what came after the head
	err        error // the first error of w
}

// NewHeadTail returns a Writer onto w keeping head bytes from the start and tail
// from the end; what names the log in the dropped line ("a worker's log").
func NewHeadTail(w io.Writer, head, tail int64, what string) *HeadTail {
	return &HeadTail{w: w, head: head, tail: tail, what: what, rest: ring{size: int(tail)}}
}

// Write never fails: a full disk must not stop whoever writes the log.
// Err reports what w returned.
func (t *HeadTail) Write(p []byte) (int, error) {
	n := min(int64(len(p)), max(t.head-t.written, 0))
	if n > 0 && t.err == nil {
		if _, err := t.w.Write(p[:n]); err != nil {
			t.err = err
		}
	}
	t.written += n
	t.rest.write(p[n:])
	return len(p), nil
}

// Dropped is how many bytes Close will leave out.
func (t *HeadTail) Dropped() int64 { return max(t.rest.total-int64(len(t.rest.bytes())), 0) }

// Total is how many bytes were written.
func (t *HeadTail) Total() int64 { return t.written + t.rest.total }

// Close writes the dropped line, when bytes were dropped, and the kept
// end. It returns the first error w returned, now or before.
func (t *HeadTail) Close() error {
	kept := t.rest.bytes()
	if dropped := t.rest.total - int64(len(kept)); dropped > 0 {
		// Start the kept end at a line when one is near.
		if i := bytes.IndexByte(kept, '\n'); i >= 0 && i < 4096 {
			kept, dropped = kept[i+1:], dropped+int64(i+1)
		}
		t.put([]byte(fmt.Sprintf("\n[xrun: %d bytes of output dropped here; %s keeps its first %d and last %d bytes]\n",
			dropped, t.what, t.head, t.tail)))
	}
	t.put(kept)
	t.rest = ring{size: t.rest.size}
	return t.err
}

func (t *HeadTail) put(p []byte) {
	if t.err == nil && len(p) > 0 {
		_, t.err = t.w.Write(p)
	}
}

// ring keeps the last size bytes written to it.
type ring struct {
	size  int
	buf   []byte // allocated on the first write
	pos   int    // where the next byte goes
	total int64  // bytes ever written
}

func (r *ring) write(p []byte) {
	if len(p) == 0 || r.size == 0 {
		r.total += int64(len(p))
		return
	}
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	r.total += int64(len(p))
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.pos = 0
		return
	}
	n := copy(r.buf[r.pos:], p)
	copy(r.buf, p[n:])
	r.pos = (r.pos + len(p)) % len(r.buf)
}

// bytes returns what the ring holds, oldest first.
func (r *ring) bytes() []byte {
	if r.total < int64(len(r.buf)) || r.buf == nil {
		return r.buf[:r.pos]
	}
	return append(append([]byte(nil), r.buf[r.pos:]...), r.buf[:r.pos]...)
}

// HeadTailString bounds a message the job's code made (an exception's text, a
// traceback) as a Writer bounds a log: when s is longer than head+tail
// bytes it keeps the first head and the last tail of them, cut at UTF-8
// character boundaries, with a line between them saying how many bytes
// were dropped there.
func HeadTailString(s string, head, tail int) string {
	if len(s) <= head+tail {
		return s
	}
	h := head
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:h] + fmt.Sprintf("\n[xrun: %d bytes dropped here]\n", t-h) + s[t:]
}
