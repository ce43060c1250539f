package contract

import (
	"testing"
	"time"
)

func TestLineParsesBack(t *testing.T) {
	for _, e := range []Progress{
		{Case: 1, Cases: 2, Phase: PhaseCheck, Elapsed: 3.2},
		{Case: 2, Cases: 7, Phase: PhaseTime, Impl: "pipelined", Elapsed: 31.4, CaseStart: 20.2, Done: 19.8},
	} {
		for _, line := range []string{e.Line(), "22:23:16 " + e.Line(), "2026-11-25T22:23:16.1Z 22:23:16 " + e.Line() + "\n"} {
			got, ok := ParseProgress(line)
			if !ok || got != e {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", line, got, ok, e)
			}
		}
	}
}

func TestParseRefusesOtherLines(t *testing.T) {
	for _, line := range []string{
		"",
		"22:23:16 case B=1 H=2 chunk=16 T=64",
		"22:23:16 recurrent: progress made",
		"22:23:16 progress case=3/2 phase=time elapsed=1",
		"22:23:16 progress case=1/2 elapsed=1",
		"22:23:16 progress case=1/2 phase=time elapsed=x",
		"a b c progress case=1/2 phase=time elapsed=1",
	} {
		if e, ok := ParseProgress(line); ok {
			t.Errorf("Parse(%q) = %+v, want no event", line, e)
		}
	}
}

// No estimate before a case has finished; then the mean of the finished
// cases for each one left, less what the current one has run.
func TestRemaining(t *testing.T) {
	if _, ok := (Progress{Case: 1, Cases: 3, Phase: PhaseTime, Elapsed: 5}).Remaining(9); ok {
		t.Error("an estimate before any case finished")
	}
	e := Progress{Case: 2, Cases: 3, Phase: PhaseTime, Elapsed: 12, CaseStart: 10, Done: 10}
	left, ok := e.Remaining(14)
	if !ok || left != 16*time.Second {
		t.Errorf("Remaining = %v, %v; want 16s", left, ok)
	}
	if left, ok := e.Remaining(100); ok {
		t.Errorf("Remaining past the estimate = %v, want none", left)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		e       Progress
		elapsed float64
		want    string
	}{
		{Progress{Case: 1, Cases: 2, Phase: PhaseCheck, Elapsed: 3}, 4, "case 1/2, checking, 0:04 elapsed"},
		{Progress{Case: 2, Cases: 3, Phase: PhaseTime, Impl: "recurrent", Elapsed: 12, CaseStart: 10, Done: 10}, 14,
			"case 2/3, timing recurrent, 0:14 elapsed, about 0:16 left"},
		{Progress{Case: 2, Cases: 2, Phase: PhaseTime, Impl: "a", CaseStart: 3000, Done: 3000}, 3700, "case 2/2, timing a, 1:01:40 elapsed, about 38:20 left"},
	} {
		if got := tc.e.Text(tc.elapsed); got != tc.want {
			t.Errorf("Text = %q, want %q", got, tc.want)
		}
	}
}
