package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

func progressLine(e contract.Progress) string { return "22:23:16 " + e.Line() + "\n" }

// A log with progress lines, as the runner writes it: two cases, each
// checked then timed in rounds.
func sampleLog() string {
	var b strings.Builder
	b.WriteString("22:23:13 xrun-runner devel: experiment /xrun/exp\n")
	for c := 1; c <= 2; c++ {
		start := float64(c-1) * 10
		b.WriteString("22:23:16 case T=64\n")
		b.WriteString(progressLine(contract.Progress{Case: c, Cases: 2, Phase: contract.PhaseCheck, Elapsed: start, CaseStart: start, Done: start}))
		for round := 0; round < 3; round++ {
			for _, impl := range []string{"reference", "recurrent"} {
				b.WriteString(progressLine(contract.Progress{Case: c, Cases: 2, Phase: contract.PhaseTime, Impl: impl, Elapsed: start + 1 + float64(round), CaseStart: start, Done: start}))
			}
		}
		b.WriteString("22:23:18 recurrent: median 2.032 ms over 343 samples in 5 rounds (converged)\n")
	}
	b.WriteString("22:23:23 status: succeeded\n")
	return b.String()
}

// In a pipe: no control sequences, the ordinary lines as they were, and
// one plain progress line each time the case or its phase changes, with
// an estimate only once a case has finished.
func TestLogInAPipeIsPlainLines(t *testing.T) {
	var out bytes.Buffer
	l := NewLog(NewStatus(&out, nil))
	// In pieces that split lines.
	log := sampleLog()
	for i := 0; i < len(log); i += 7 {
		l.Write([]byte(log[i:min(i+7, len(log))]))
	}
	l.Close()
	got := out.String()
	if strings.ContainsAny(got, "\r\x1b") {
		t.Fatalf("control sequences in a pipe:\n%q", got)
	}
	want := `22:23:13 xrun-runner devel: experiment /xrun/exp
22:23:16 case T=64
22:23:16 progress: case 1/2, checking, 0:00 elapsed
22:23:16 progress: case 1/2, timing reference, 0:01 elapsed
22:23:18 recurrent: median 2.032 ms over 343 samples in 5 rounds (converged)
22:23:16 case T=64
22:23:16 progress: case 2/2, checking, 0:10 elapsed, about 0:10 left
22:23:16 progress: case 2/2, timing reference, 0:11 elapsed, about 0:09 left
22:23:18 recurrent: median 2.032 ms over 343 samples in 5 rounds (converged)
22:23:23 status: succeeded
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// On a terminal: the ordinary lines scroll, the progress is one status
// line redrawn in place below them (never a line of its own), and it is
// gone when the log ends.
func TestLogOnATerminalIsAStatusLine(t *testing.T) {
	var tty bytes.Buffer
	now := time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)
	l := newLog(NewStatus(&tty, &tty), func() time.Time { return now }, 0)
	l.Write([]byte("22:23:16 case T=64\n"))
	l.Write([]byte(progressLine(contract.Progress{Case: 2, Cases: 3, Phase: contract.PhaseTime, Impl: "recurrent", Elapsed: 12, CaseStart: 10, Done: 10})))
	if got, want := tty.String(), "22:23:16 case T=64\ncase 2/3, timing recurrent, 0:12 elapsed, about 0:18 left"; got != want {
		t.Fatalf("after a progress line:\n%q\nwant\n%q", got, want)
	}
	tty.Reset()
	now = now.Add(2 * time.Second)
	l.redraw()
	if got, want := tty.String(), "\r\x1b[Kcase 2/3, timing recurrent, 0:14 elapsed, about 0:16 left"; got != want {
		t.Errorf("a second later:\n%q\nwant\n%q", got, want)
	}
	tty.Reset()
	l.Write([]byte("22:23:18 recurrent: median 2.032 ms\n"))
	if got, want := tty.String(), "\r\x1b[K22:23:18 recurrent: median 2.032 ms\ncase 2/3, timing recurrent, 0:14 elapsed, about 0:16 left"; got != want {
		t.Errorf("a log line goes above the status line:\n%q\nwant\n%q", got, want)
	}
	tty.Reset()
	l.Close()
	if got := tty.String(); got != "\r\x1b[K" {
		t.Errorf("Close: %q, want the status line cleared", got)
	}
	if strings.Contains(tty.String(), "progress case=") {
		t.Error("a raw progress line reached the terminal")
	}
}

func TestFitNeverWraps(t *testing.T) {
	if got := fit(strings.Repeat("x", 200), 80); len([]rune(got)) >= 80 {
		t.Errorf("fit to 80 columns: %d runes", len([]rune(got)))
	}
	if got := fit("a\x1b[2Jb", 80); got != "a[2Jb" {
		t.Errorf("fit kept a control character: %q", got)
	}
}
