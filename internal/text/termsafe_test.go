package text

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestSafeWriter(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text", "case T=1024: 1.25 ms\n\tok\n", "case T=1024: 1.25 ms\n\tok\n"},
		{"utf-8 kept", "µs ° – ✅ 日本\n", "µs ° – ✅ 日本\n"},
		{"colours", "\x1b[1;31mFAIL\x1b[0m done\n", "FAIL done\n"},
		{"window title (OSC, BEL)", "a\x1b]0;pwned\x07b\n", "ab\n"},
		{"clipboard (OSC 52, ST)", "a\x1b]52;c;cm0gLXJmIH4=\x1b\\b\n", "ab\n"},
		{"hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\n", "click\n"},
		{"DCS string", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"cursor moves and erase", "secret\x1b[2K\x1b[1A\x1b[10;20Hshown\n", "secretshown\n"},
		{"private mode", "\x1b[?1049h\x1b[?25lx", "x"},
		{"two-byte and nF escapes", "\x1bc\x1b(0\x1b)Bx", "x"},
		{"C1 CSI and OSC in UTF-8", "a\u009b31mb\u009d0;t\u009cc\u0085d", "abcd"},
		{"carriage return cannot overwrite", "rm -rf ~\rsafe\n", "rm -rf ~\nsafe\n"},
		{"CRLF is one newline", "a\r\nb\r\n", "a\nb\n"},
		{"other controls dropped", "a\x00b\x07c\x08d\x7fe\x0cf\n", "abcdef\n"},
		{"unterminated OSC ends at the newline", "a\x1b]0;title\nnext line\n", "a\nnext line\n"},
		{"ESC ESC restarts", "\x1b\x1b[31mx", "x"},
		{"bad byte in CSI", "\x1b[3\x01x", "x"},
		{"lone C2 cannot pair with a later byte", "\xc2\x1b[m\x85x", "\x85x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var whole bytes.Buffer
			if n, err := NewSafeWriter(&whole).Write([]byte(tc.in)); err != nil || n != len(tc.in) {
				t.Fatalf("Write = %d, %v", n, err)
			}
			if whole.String() != tc.want {
				t.Errorf("got %q, want %q", whole.String(), tc.want)
			}
			// Byte by byte: a sequence split across writes is still one.
			var split bytes.Buffer
			w := NewSafeWriter(&split)
			for i := range len(tc.in) {
				w.Write([]byte{tc.in[i]})
			}
			if split.String() != tc.want {
				t.Errorf("byte by byte: got %q, want %q", split.String(), tc.want)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if SafeWrap(f) != f {
		t.Error("a regular file was wrapped")
	}
	var b bytes.Buffer
	if SafeWrap(&b) != &b {
		t.Error("a buffer was wrapped")
	}
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if _, ok := SafeWrap(tty).(*SafeWriter); !ok {
		t.Errorf("%s, a character device, was not wrapped", os.DevNull)
	}
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte("\x1b[31mred\x1b[0m\r\n"), 3)
	f.Add([]byte("a\x1b]0;t\x07\u009b1m\xc2\x1b[m\x85"), 1)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		chunk = max(chunk%64, 1)
		var out bytes.Buffer
		w := NewSafeWriter(&out)
		for i := 0; i < len(in); i += chunk {
			w.Write(in[i:min(i+chunk, len(in))])
		}
		b := out.Bytes()
		// The same as stepping a byte at a time.
		ref := NewSafeWriter(io.Discard)
		for _, c := range in {
			ref.step(c)
		}
		if !bytes.Equal(b, ref.buf) {
			t.Fatalf("wrote %q, a byte at a time %q", b, ref.buf)
		}
		for i, c := range b {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Fatalf("control byte %#x at %d in %q", c, i, b)
			}
			if c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f {
				t.Fatalf("C1 control at %d in %q", i, b)
			}
		}
	})
}

// String strips what a Writer strips; a string without controls is
// returned as it is, and a trailing CR is a newline.
func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain µs ✅\n\tok":                          "plain µs ✅\n\tok",
		"RuntimeError: \x1b]0;pwned\x07\x1b[31mred": "RuntimeError: red",
		"a\x07b\x1b[2Kc\r":                          "abc\n",
		"\u009b31mx":                                "x",
	} {
		if got := Safe(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
