package report

import (
	"fmt"
	"strconv"

	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/result"
)

// autotuneTable is the configs the autotuned kernels ran with, one row
// per implementation, case and kernel: implementation, case, kernel,
// config, and where the config came from. It has no rows when nothing was
// autotuned.
func autotuneTable(r *result.Results) *table.Table {
	t := &table.Table{Columns: table.Heads("Implementation", "Case", "Kernel", "Config", "Source")}
	cols := columns(r)
	for _, n := range implNames(r) {
		for i, c := range r.Cases {
			ir := c.Results[n]
			if ir == nil {
				continue
			}
			for _, a := range ir.Autotune {
				t.Add(table.Text(n), table.Text(cols[i]), table.Text(a.Kernel), table.Text(a.Config), table.Text(autotuneSource(a)))
			}
		}
	}
	return t
}

// autotuneSource says where a config came from, in words, and what the
// check of the choice found.
func autotuneSource(a result.Autotune) string {
	s := sourceWords(a)
	if c := a.Check; c != nil {
		switch {
		case c.Replaced != "":
			s += "; checked: replaces the autotuner's " + c.Replaced + checkGain(c, c.Replaced, a.Config)
		case c.Beaten != "":
			s += "; checked: beaten by " + c.Beaten + checkGain(c, a.Config, c.Beaten) + " (--retune tunes afresh)"
		default:
			s += fmt.Sprintf("; checked: the fastest of %d", len(c.TimingsMS))
		}
	}
	return s
}

// checkGain is how much faster than slow fast ran in check c: " (6.1 %
// faster)", or "" where the check lacks either.
func checkGain(c *result.AutotuneCheck, slow, fast string) string {
	a, b := c.TimingsMS[slow], c.TimingsMS[fast]
	if a <= 0 || b <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.1f %% faster)", 100*(a/b-1))
}

func sourceWords(a result.Autotune) string {
	switch a.Source {
	case result.AutotuneTuned:
		s := "tuned in " + strconv.FormatFloat(a.TuningMS/1e3, 'f', 1, 64) + " s"
		if n := len(a.TimingsMS); n > 0 {
			s += fmt.Sprintf(" (best of %d configs)", n)
		}
		return s
	case result.AutotuneCache:
		return "from the autotune cache (an earlier run's choice)"
	case result.AutotuneReused:
		return "chosen at an earlier case"
	case result.AutotuneSingle:
		return "its only config"
	}
	return a.Source
}
