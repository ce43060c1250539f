// Safe, SafeWriter and SafeWrap neutralise terminal control sequences in text that xrun
// prints but does not write itself: a job's logs and the error strings in
// its results come from the experiment's code, and an escape sequence in
// them could retitle the window, rewrite what is on the screen, set the
// clipboard (OSC 52) or, on some terminals, make the terminal answer with
// input of its own.

package text

import (
	"io"
	"os"
	"strings"
	"sync"
)

// SafeWrap returns a Writer over w when w is a terminal (a character device),
// and w itself otherwise: a file or a pipe gets the bytes as they are.
func SafeWrap(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return w
	}
	return NewSafeWriter(w)
}

type state int

const (
	ground state = iota
	esc          // after ESC
	escNF        // ESC followed by intermediate bytes, before the final one
	csi          // control sequence: ESC [ or CSI, up to its final byte
	str          // OSC, DCS, SOS, PM or APC string, up to BEL or ST
	strEsc       // ESC inside a string: ESC \ ends it
	strC2        // 0xC2 inside a string: U+009C (ST) ends it
	cr           // after CR: a newline, merged with an LF that follows
	c2           // after 0xC2, which starts the UTF-8 of a C1 control
)

// SafeWriter passes text to the writer under it without control sequences:
// escape sequences (CSI, OSC and other strings, two-byte and nF escapes)
// and the C1 controls (U+0080 to U+009F) are dropped, as is every other C0
// control but newline and tab; CR and CRLF become newline, so a line cannot
// be overwritten by another. A sequence split across writes is still
// recognised. A newline ends an unterminated sequence, so that one never
// swallows more than the rest of its line. It is safe for concurrent use.
type SafeWriter struct {
	mu    sync.Mutex
	w     io.Writer
	state state
	buf   []byte
}

// NewSafeWriter returns a Writer writing to w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{w: w} }

// Write writes p less its control sequences and returns len(p) when the
// writer under it took what was left.
func (t *SafeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.buf[:0]
	for i := 0; i < len(p); i++ {
		if t.state == ground {
			// A run of plain bytes is copied as it is (most of what is
			// written is): a byte at a time, this writer was a fifth
			// of printing a large history.
			j := i
			for j < len(p) && plain[p[j]] {
				j++
			}
			if i == 0 && j == len(p) {
				if _, err := t.w.Write(p); err != nil {
					return 0, err
				}
				return len(p), nil
			}
			t.buf = append(t.buf, p[i:j]...)
			if i = j; i == len(p) {
				break
			}
		}
		t.step(p[i])
	}
	if len(t.buf) == 0 {
		return len(p), nil
	}
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *SafeWriter) step(b byte) {
	switch t.state {
	case ground:
		t.ground(b)
	case esc:
		switch {
		case b == '[':
			t.state = csi
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			t.state = str
		case b >= 0x20 && b <= 0x2f:
			t.state = escNF
		case b >= 0x30 && b <= 0x7e:
			t.state = ground
		default:
			t.abort(b)
		}
	case escNF:
		switch {
		case b >= 0x20 && b <= 0x2f:
		case b >= 0x30 && b <= 0x7e:
			t.state = ground
		default:
			t.abort(b)
		}
	case csi:
		switch {
		case b >= 0x20 && b <= 0x3f: // parameters and intermediates
		case b >= 0x40 && b <= 0x7e:
			t.state = ground
		default:
			t.abort(b)
		}
	case str:
		switch b {
		case 0x07:
			t.state = ground
		case 0x1b:
			t.state = strEsc
		case 0xc2:
			t.state = strC2
		case '\n':
			t.abort(b)
		}
	case strC2:
		t.state = str
		if b == 0x9c {
			t.state = ground
			return
		}
		t.step(b)
	case strEsc:
		if b == '\\' {
			t.state = ground
			return
		}
		t.state = esc
		t.step(b)
	case cr:
		t.buf = append(t.buf, '\n')
		t.state = ground
		if b != '\n' {
			t.ground(b)
		}
	case c2:
		t.state = ground
		switch {
		case b == 0x9b:
			t.state = csi
		case b == 0x90 || b == 0x98 || b == 0x9d || b == 0x9e || b == 0x9f:
			t.state = str
		case b >= 0x80 && b <= 0x9f:
		case b >= 0xa0 && b <= 0xbf:
			t.buf = append(t.buf, 0xc2, b)
		default:
			// Not UTF-8: dropped, so that no later byte completes a C1.
			t.ground(b)
		}
	}
}

// plain are the bytes ground writes as they are.
var plain = func() (p [256]bool) {
	for b := range 256 {
		p[b] = b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7f) || (b >= 0x80 && b != 0xc2)
	}
	return p
}()

func (t *SafeWriter) ground(b byte) {
	switch {
	case b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7f) || (b >= 0x80 && b != 0xc2):
		t.buf = append(t.buf, b)
	case b == 0x1b:
		t.state = esc
	case b == '\r':
		t.state = cr
	case b == 0xc2:
		t.state = c2
	}
	// Other C0 controls and DEL are dropped.
}

// abort ends a malformed or unterminated sequence at b: a newline is kept,
// an ESC starts the next sequence, anything else is dropped with the
// sequence.
func (t *SafeWriter) abort(b byte) {
	t.state = ground
	switch b {
	case '\n':
		t.buf = append(t.buf, b)
	case 0x1b:
		t.state = esc
	}
}

// Safe returns s as a Writer passes it on: without its control
// sequences and controls but newline and tab, CR and CRLF as newline. For
// the experiment's text that xrun keeps or writes where no terminal may
// be (results.json's errors, CSV cells, Markdown for a CI summary).
func Safe(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		b := s[i]
		clean = b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7f) || (b >= 0x80 && b != 0xc2)
	}
	if clean {
		return s
	}
	var b strings.Builder
	w := NewSafeWriter(&b)
	w.Write([]byte(s))
	if w.state == cr {
		b.WriteByte('\n')
	}
	return b.String()
}
