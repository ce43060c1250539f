package render

import (
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// Terminal returns w when it is a terminal, else nil: the writer a Status
// may draw on.
func Terminal(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// Status is a status line below the lines written through it. It is safe
// for concurrent use.
type Status struct {
	mu sync.Mutex
	// out gets the lines (sanitised by the caller where they are not
	// xrun's own); tty, nil when out is no terminal, the status line's
	// control sequences.
	out, tty io.Writer
	shown    string
}

// NewStatus returns a Status writing lines to out, and drawing its line
// on tty (Terminal(out's file)); with tty nil, Set does nothing and Line
// prints plain lines.
func NewStatus(out, tty io.Writer) *Status { return &Status{out: out, tty: tty} }

// Live says whether the status line is drawn in place (a terminal).
func (s *Status) Live() bool { return s.tty != nil }

// Println writes one line above the status line.
func (s *Status) Println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	io.WriteString(s.out, line+"\n")
	s.draw()
}

// Write writes whole lines above the status line.
func (s *Status) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	n, err := s.out.Write(p)
	s.draw()
	return n, err
}

// Set replaces the status line (on a terminal; elsewhere it does nothing).
func (s *Status) Set(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty == nil {
		return
	}
	s.clear()
	s.shown = fit(text, width(s.tty))
	s.draw()
}

// Clear takes the status line away.
func (s *Status) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.shown = ""
}

func (s *Status) clear() {
	if s.tty != nil && s.shown != "" {
		io.WriteString(s.tty, "\r\x1b[K")
	}
}

func (s *Status) draw() {
	if s.tty != nil && s.shown != "" {
		io.WriteString(s.tty, s.shown)
	}
}

// width is the terminal's width, 80 when it cannot be asked.
func width(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	return 80
}

// fit cuts text to less than cols columns, so that the line never wraps
// (a wrapped line is not cleared by a carriage return). Control characters
// are dropped: the text may hold an experiment's names.
func fit(text string, cols int) string {
	text = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, text)
	if utf8.RuneCountInString(text) < cols {
		return text
	}
	r := []rune(text)
	return string(r[:max(cols-2, 1)]) + "…"
}
