package nightly

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/text"
)

// RemoveOptions say which runs Remove takes out of the history.
type RemoveOptions struct {
	// Jobs are job ids; Before (a date, 2026-11-01, or an age, 90d) adds
	// every run that started before it.
	Jobs   []string
	Before string
	// DryRun lists the runs and removes nothing; JSON prints as JSON.
	DryRun, JSON bool
	// Now is the time an age counts back from (zero: the clock's).
	Now time.Time
}

// removeReport is xrun history rm --json.
type removeReport struct {
	DryRun  bool              `json:"dry_run"`
	Backup  string            `json:"backup,omitempty"`
	Removed []history.Removed `json:"removed"`
}

// Remove takes the runs o picks out of the history, after backing the
// history up beside itself (the backup's path is said on Err and in the
// JSON). A job id the history lacks is the user's error, and nothing is
// removed.
func (n *History) Remove(o RemoveOptions) error {
	h := n.h
	if len(o.Jobs) == 0 && o.Before == "" {
		return contract.Usagef("history rm takes job ids, --before DATE, or both")
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	var runs []history.Run
	var missing []string
	for _, id := range o.Jobs {
		rs, err := h.RunsOfJob(id)
		if err != nil {
			return infra(err)
		}
		if len(rs) == 0 {
			missing = append(missing, id)
		}
		runs = append(runs, rs...)
	}
	if len(missing) > 0 {
		return contract.Usagef("the results history has no run of job %s (xrun history lists its runs); nothing was removed", strings.Join(missing, ", "))
	}
	if o.Before != "" {
		before, err := parseSince(o.Before, now)
		if err != nil {
			return contract.Usagef("--before %q: give a date (2026-11-01) or an age (90d, 12h)", o.Before)
		}
		rs, err := h.RunsBefore(before)
		if err != nil {
			return infra(err)
		}
		runs = append(runs, rs...)
	}
	slices.SortFunc(runs, func(a, b history.Run) int { return a.At.Compare(b.At) })
	runs = slices.CompactFunc(runs, func(a, b history.Run) bool { return a.ID == b.ID })
	rep := removeReport{DryRun: o.DryRun, Removed: []history.Removed{}}
	if len(runs) == 0 {
		if o.JSON {
			return render.JSON(n.Out, rep)
		}
		fmt.Fprintf(n.Err, "no run of the results history started before %s: nothing to remove\n", o.Before)
		return nil
	}
	if o.DryRun {
		counts, err := h.CountPoints(runs)
		if err != nil {
			return infra(err)
		}
		for _, r := range runs {
			rep.Removed = append(rep.Removed, history.Removed{Run: r, Points: counts[r.ID]})
		}
	} else {
		rep.Backup = backupPath(h.Path(), now)
		if err := h.Backup(rep.Backup); err != nil {
			return infra(err)
		}
		fmt.Fprintf(n.Err, "backed up the results history to %s (to undo: cp %s %s)\n", rep.Backup, text.ShellQuote(rep.Backup), text.ShellQuote(h.Path()))
		removed, err := h.Remove(runs)
		if err != nil {
			return infra(err)
		}
		rep.Removed = removed
	}
	if o.JSON {
		return render.JSON(n.Out, rep)
	}
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	for _, r := range rep.Removed {
		fmt.Fprintf(n.Out, "%s job %s: %s, %s, %d timings\n", verb, r.JobID, r.Experiment, r.At.Format("2006-01-02 15:04 UTC"), r.Points)
	}
	return nil
}

// backupPath is where rm backs the history up: beside it, named for the
// time (history.db.2026-11-28T181500Z.bak).
func backupPath(path string, now time.Time) string {
	return filepath.Join(filepath.Dir(path), filepath.Base(path)+"."+now.UTC().Format("2006-01-02T150405.000Z")+".bak")
}
