// Progress is the runner's progress line: one line of its log, in a
// fixed key=value form, that says which case of how many is running, what
// it is doing, and how long the run and its finished cases took. The runner
// writes it (Progress.Line); the client reads it back from the log (ParseProgress) and
// shows it as a status line on a terminal or as a plain line elsewhere.
// docs/architecture.md, "The runner's log", documents the format.

package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ProgressTag starts a progress line, after the log's HH:MM:SS time.
const ProgressTag = "progress"

// Phases of a case.
const (
	PhaseCheck = "check" // models and the correctness check
	PhaseTime  = "time"  // the timing loop
)

// Progress is one progress line.
type Progress struct {
	// Case is the case running, from 1, of Cases.
	Case, Cases int
	// Phase is PhaseCheck or PhaseTime; Impl the implementation being
	// timed (empty while checking).
	Phase, Impl string
	// Elapsed is the time since the runner started, CaseStart the elapsed
	// time at which this case began, Done the time the finished cases
	// (Case-1 of them) took together; all in seconds.
	Elapsed, CaseStart, Done float64
}

// Line is the event as the runner logs it (without the time prefix):
//
//	progress case=2/7 phase=time impl=pipelined elapsed=31.4 case_start=20.2 done=19.8
func (e Progress) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s case=%d/%d phase=%s", ProgressTag, e.Case, e.Cases, e.Phase)
	if e.Impl != "" {
		fmt.Fprintf(&b, " impl=%s", e.Impl)
	}
	fmt.Fprintf(&b, " elapsed=%.1f case_start=%.1f done=%.1f", e.Elapsed, e.CaseStart, e.Done)
	return b.String()
}

// ParseProgress reads a progress line of the log, with or without its HH:MM:SS
// prefix (and a docker timestamp before it). ok is false for any other line.
func ParseProgress(line string) (e Progress, ok bool) {
	line = strings.TrimRight(line, "\r\n")
	fields := strings.Fields(line)
	i := 0
	for i < len(fields) && i < 2 && fields[i] != ProgressTag {
		i++
	}
	if i >= len(fields) || fields[i] != ProgressTag {
		return e, false
	}
	seen := 0
	for _, f := range fields[i+1:] {
		k, v, found := strings.Cut(f, "=")
		if !found {
			return e, false
		}
		var err error
		switch k {
		case "case":
			a, b, _ := strings.Cut(v, "/")
			if e.Case, err = strconv.Atoi(a); err == nil {
				e.Cases, err = strconv.Atoi(b)
			}
			seen |= 1
		case "phase":
			e.Phase = v
			seen |= 2
		case "impl":
			e.Impl = v
		case "elapsed":
			e.Elapsed, err = strconv.ParseFloat(v, 64)
			seen |= 4
		case "case_start":
			e.CaseStart, err = strconv.ParseFloat(v, 64)
		case "done":
			e.Done, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			return Progress{}, false
		}
	}
	if seen != 7 || e.Case < 1 || e.Cases < e.Case {
		return Progress{}, false
	}
	return e, true
}

// Remaining estimates the time left at elapsed seconds (Elapsed, or later
// while the event is the last one seen): the mean time of the finished
// cases for each case not finished, less what the current case has run.
// ok is false until a case has finished, and once the run is past the
// estimate: no estimate is better than a guess.
func (e Progress) Remaining(elapsed float64) (time.Duration, bool) {
	finished := e.Case - 1
	if finished < 1 || e.Done <= 0 {
		return 0, false
	}
	mean := e.Done / float64(finished)
	left := mean*float64(e.Cases-finished) - (elapsed - e.CaseStart)
	if left < 1 {
		// The run is past the estimate: there is nothing honest to say.
		return 0, false
	}
	return time.Duration(left * float64(time.Second)), true
}

// Text is the event for a person, at elapsed seconds:
//
//	case 2/7, timing pipelined, 0:31 elapsed, about 1:12 left
func (e Progress) Text(elapsed float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %d/%d", e.Case, e.Cases)
	switch {
	case e.Phase == PhaseTime && e.Impl != "":
		fmt.Fprintf(&b, ", timing %s", e.Impl)
	case e.Phase == PhaseTime:
		b.WriteString(", timing")
	default:
		b.WriteString(", checking")
	}
	fmt.Fprintf(&b, ", %s elapsed", ProgressClock(elapsed))
	if left, ok := e.Remaining(elapsed); ok {
		fmt.Fprintf(&b, ", about %s left", ProgressClock(left.Seconds()))
	}
	return b.String()
}

// ProgressClock is s seconds as M:SS, or H:MM:SS from an hour.
func ProgressClock(s float64) string {
	t := int(s + 0.5)
	if t < 0 {
		t = 0
	}
	if t >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", t/3600, t/60%60, t%60)
	}
	return fmt.Sprintf("%d:%02d", t/60, t%60)
}
