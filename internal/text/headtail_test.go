package text

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeadTail(t *testing.T) {
	line := func(i int) string { return fmt.Sprintf("line %06d\n", i) } // 12 bytes
	tests := []struct {
		name        string
		lines       int
		chunk       int // lines per Write
		wantDropped bool
	}{
		{"under the head", 5, 1, false},
		{"exactly head plus tail", 20, 3, false},
		{"more than both", 1000, 7, true},
		{"one huge write", 1000, 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all strings.Builder
			var out bytes.Buffer
			w := NewHeadTail(&out, 120, 120, "a test log")
			for i := 0; i < tt.lines; i += tt.chunk {
				var b strings.Builder
				for j := i; j < min(i+tt.chunk, tt.lines); j++ {
					b.WriteString(line(j))
				}
				all.WriteString(b.String())
				if n, err := w.Write([]byte(b.String())); err != nil || n != b.Len() {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if w.Total() != int64(all.Len()) {
				t.Errorf("Total = %d, want %d", w.Total(), all.Len())
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if !tt.wantDropped {
				if got != all.String() {
					t.Errorf("got %q, want everything", got)
				}
				return
			}
			if !strings.HasPrefix(got, all.String()[:120]) {
				t.Error("the head is not the start of the output")
			}
			if !strings.HasSuffix(got, line(tt.lines-1)) {
				t.Error("the end is not the end of the output")
			}
			if !strings.Contains(got, "bytes of output dropped here; a test log keeps its first 120 and last 120 bytes") {
				t.Errorf("no dropped line in %q", got)
			}
			if len(got) > 120+120+200 {
				t.Errorf("kept %d bytes, want about 240", len(got))
			}
		})
	}
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("no space left on device")
}

func TestWriterKeepsGoingWhenTheDiskIsFull(t *testing.T) {
	f := &failing{}
	w := NewHeadTail(f, 10, 10, "a test log")
	for i := 0; i < 5; i++ {
		if _, err := w.Write([]byte("0123456789abcdef")); err != nil {
			t.Fatalf("Write returned %v; a full disk must not stop the writer", err)
		}
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "no space") {
		t.Errorf("Close = %v, want the disk's error", err)
	}
	if f.n != 1 {
		t.Errorf("%d writes reached the failing disk, want 1", f.n)
	}
}

func TestHeadTailString(t *testing.T) {
	if got := HeadTailString("short", 2, 3); got != "short" {
		t.Errorf("a short string changed: %q", got)
	}
	s := "αβ" + strings.Repeat("A", 60<<20) + "END"
	got := HeadTailString(s, 3, 4)
	if len(got) > 3+4+64 || !strings.HasPrefix(got, "α\n[xrun: ") || !strings.HasSuffix(got, "\nAEND") ||
		!strings.Contains(got, fmt.Sprintf("%d bytes dropped here", len(s)-2-4)) || !utf8.ValidString(got) {
		t.Errorf("String of %d bytes: %q", len(s), got)
	}
}
