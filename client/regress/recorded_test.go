package regress

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recorded reads a history exported by xrun history --csv: one series per
// implementation (one case), every run naming baseline as its baseline.
func recorded(t *testing.T, path, baseline string) ([]Series, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	var order []string
	by := map[string]*Series{}
	for _, r := range rows[1:] {
		impl := r[col["implementation"]]
		if by[impl] == nil {
			by[impl] = &Series{Group: r[col["case"]], Implementation: impl}
			order = append(order, impl)
		}
		at, err := time.Parse(time.RFC3339, r[col["date"]])
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := strconv.ParseFloat(r[col["median_ms"]], 64)
		v := Value{Run: r[col["job_id"]], At: at, MedianMS: ms, Baseline: baseline}
		if r[col["converged"]] != "true" {
			v.Noisy = NotConverged
		}
		by[impl].Values = append(by[impl].Values, v)
	}
	var out []Series
	for _, impl := range order {
		out = append(out, *by[impl])
	}
	return out, order
}

// The loaded-host benchmark's history (scripts/regress-loaded.sh, recorded
// in scripts/regress-demo/runs/2026-11-28-loaded-2core-unpinned): ten
// nights to build it, ten judged nights under 0-6 competing CPU hogs on a
// 2-core VM at load 8-13, then two with the candidate 20 % slower. The
// relative rule regresses the candidate on the slowed nights, and on the
// night before them, a one-night suspect (+13 %) that the slowdown then
// confirmed, and nothing else; the time alone moves by up to 38 %. go test
// ./client/regress -run Recorded -v prints both rules night by night.
func TestRecordedLoadedHost(t *testing.T) {
	series, impls := recorded(t, "testdata/loaded-2core-history.csv", "control")
	rel := Default().WalkRelative(series)
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s", "night")
	for _, impl := range impls {
		fmt.Fprintf(&b, " | %-10s %-34s %-22s", impl, "relative rule", "time alone")
	}
	b.WriteString("\n")
	abs := make([][]Verdict, len(series))
	for k, ser := range series {
		abs[k] = Default().Walk(ser.Values)
	}
	n := len(series[0].Values)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%-5d", i+1)
		for k := range series {
			v, a := rel[k][i], abs[k][i]
			r := ""
			if v.Relative != nil && v.Relative.Median > 0 {
				r = fmt.Sprintf(" %+.1f%%", 100*v.Relative.Change)
			}
			tc := ""
			if a.Median > 0 {
				tc = fmt.Sprintf(" %+.1f%%", 100*a.Change)
			}
			fmt.Fprintf(&b, " | %-10.4g %-34s %-22s", series[k].Values[i].MedianMS, string(v.Status)+r, string(a.Status)+tc)
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
	for k, impl := range impls {
		got := count(rel[k], Regressed)
		switch impl {
		case "candidate":
			if rel[k][n-2].Status != Regressed || rel[k][n-1].Status != Regressed || got != 3 || rel[k][n-3].ConfirmedBy != series[k].Values[n-2].Run {
				t.Errorf("candidate: the slowed nights %s, %s; %d regressed in all", rel[k][n-2].Status, rel[k][n-1].Status, got)
			}
		default:
			if got > 0 {
				t.Errorf("%s regressed on %d nights", impl, got)
			}
			if count(abs[k], Suspect) == 0 {
				t.Errorf("%s: the time alone never breached: %v", impl, statuses(abs[k]))
			}
		}
	}
}
