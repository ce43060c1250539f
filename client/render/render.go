// Package render is everything xrun shows a person or a program:
//   - what it streams (a job's log, an image build) the way its reader
//     needs it: on a terminal the lines scroll and a single status line
//     below them is redrawn in place; anywhere else (a pipe, a file, a CI
//     log) every update is an ordinary line, with no control sequences
//     (Status, Log);
//   - a job's results as a table, markdown, JSON or CSV, and its figures
//     (Results, Figures);
//   - the small forms every command shares: indented JSON, "3 minutes
//     ago", sizes as docker writes them, and output made safe for a
//     terminal (JSON, Ago, Bytes, Safe).
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/xrun-dev/xrun/internal/text"
)

// JSON writes v as indented JSON and a newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// Ago renders a time as "3 minutes ago" (now is the present), "-" for
// the zero time.
func Ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	n, unit := int(d.Hours()/24), "day"
	switch {
	case d < time.Minute:
		n, unit = int(d.Seconds()), "second"
	case d < time.Hour:
		n, unit = int(d.Minutes()), "minute"
	case d < 48*time.Hour:
		n, unit = int(d.Hours()), "hour"
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Safe wraps w so that what experiments wrote (names, messages, logs)
// cannot move a terminal's cursor or change its title; terminal reports
// whether w is a terminal, where such sequences would act.
func Safe(w io.Writer) (safe io.Writer, terminal bool) {
	s := text.SafeWrap(w)
	_, terminal = s.(*text.SafeWriter)
	return s, terminal
}

// SafeAlways wraps w as Safe does on a terminal, whatever w is: for
// tables whose cells come from experiments.
func SafeAlways(w io.Writer) io.Writer { return text.NewSafeWriter(w) }
