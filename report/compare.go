// Compare lines up the results of several jobs (the same
// experiment on different hosts or GPUs) side by side: for every sweep
// point and implementation, each job's median time, its speedup over its
// own baseline, its TFLOPS, and the time ratio against the first job with
// the runner's conservative verdict on it (FAST, SLOW, SAME, AMBIGUOUS
// from the q1-q3 of both), so that two hosts or two nights can be told
// apart from noise.
//
// A row's times are on one clock: the kernel clock where every job has
// it, else the CUDA events (a job from a runner before the kernel clock,
// or one timed with method.kernel_clock false, has the events alone).

package report

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
)

// CompareInput is one job's results with what identifies it.
type CompareInput struct {
	JobID   string
	Host    string
	Results *result.Results
}

// Comparison is the side-by-side comparison; it is also the --json output.
type Comparison struct {
	Experiments []string      `json:"experiments"`
	Jobs        []CompareJob  `json:"jobs"`
	Cases       []CompareCase `json:"cases"`
	// Notes say what to keep in mind when reading the ratios: rows read
	// on the events because the jobs' clocks differ, kernel clocks that
	// add different launch costs.
	Notes []string `json:"notes,omitempty"`
}

// CompareJob describes one compared job.
type CompareJob struct {
	Key        string `json:"key"` // "1", "2", ... as the columns are headed
	ID         string `json:"job_id"`
	Host       string `json:"host,omitempty"`
	GPU        string `json:"gpu"`
	Status     string `json:"status"`
	Experiment string `json:"experiment"`
	Mode       string `json:"mode,omitempty"`
	// LaunchMS is the launch cost the job's kernel clock adds to every
	// call (methodology.launch_ms; 0: none recorded).
	LaunchMS float64 `json:"launch_ms,omitempty"`
}

// CompareCase is one sweep point.
type CompareCase struct {
	Label string       `json:"label"`
	Rows  []CompareRow `json:"rows"`
}

// CompareRow is one implementation at one sweep point, one Cell per job.
type CompareRow struct {
	Implementation string        `json:"implementation"`
	Cells          []CompareCell `json:"cells"`
}

// CompareCell is one job's figures for a row; a job that lacks the case or the
// implementation has Status "missing".
type CompareCell struct {
	Status   string  `json:"status"`
	MedianMS float64 `json:"median_ms,omitempty"`
	// Clock is the clock MedianMS is on (result.ClockKernel, ...).
	Clock string `json:"clock,omitempty"`
	// Speedup is over the job's own baseline (1 for the baseline itself;
	// none for the reference, as in the job's own results).
	Speedup float64 `json:"speedup,omitempty"`
	// Baseline marks the job's baseline, which the tables show as
	// "baseline" rather than 1x, as xrun results does.
	Baseline bool    `json:"baseline,omitempty"`
	Verdict  string  `json:"verdict,omitempty"`
	TFLOPS   float64 `json:"tflops,omitempty"`
	// VsFirst is the first job's median over this one's: > 1 is faster
	// here than on the first job's host.
	VsFirst float64 `json:"vs_first,omitempty"`
	// VsFirstVerdict says whether VsFirst is more than noise, with the
	// runner's conservative rule on the q1-q3 of both jobs' timings
	// (analyze.Verdict): FAST (faster here), SLOW, SAME or AMBIGUOUS.
	VsFirstVerdict string `json:"vs_first_verdict,omitempty"`
	// ConfigChange says which autotuned kernels ran another config here
	// than in the first job (result.AutotuneChange): a moved time with
	// its reason.
	ConfigChange string `json:"config_change,omitempty"`
}

// Compare lines the inputs up. Cases are matched by their label (params
// when a label is empty), in the order they first appear.
func Compare(in []CompareInput) (*Comparison, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("compare needs at least two jobs, got %d", len(in))
	}
	rep := &Comparison{}
	expSeen := map[string]bool{}
	var caseKeys []string
	caseLabel := map[string]string{}
	var impls []string
	implSeen := map[string]bool{}
	index := make([]map[string]*result.Case, len(in))
	for i, x := range in {
		r := x.Results
		if r == nil {
			return nil, fmt.Errorf("job %s has no results", x.JobID)
		}
		if !expSeen[r.Experiment] {
			expSeen[r.Experiment] = true
			rep.Experiments = append(rep.Experiments, r.Experiment)
		}
		id := x.JobID
		if id == "" {
			id = r.JobID
		}
		rep.Jobs = append(rep.Jobs, CompareJob{Key: strconv.Itoa(i + 1), ID: id, Host: hostName(x.Host, r), GPU: gpuName(r), Status: r.Status,
			Experiment: r.Experiment, Mode: r.Mode, LaunchMS: r.Methodology.LaunchMS})
		index[i] = map[string]*result.Case{}
		for ci := range r.Cases {
			c := &r.Cases[ci]
			k := caseKey(c)
			index[i][k] = c
			if _, ok := caseLabel[k]; !ok {
				caseKeys = append(caseKeys, k)
				caseLabel[k] = c.Label
				if c.Label == "" {
					caseLabel[k] = k
				}
			}
		}
		for _, n := range implOrder(r) {
			if !implSeen[n] {
				implSeen[n] = true
				impls = append(impls, n)
			}
		}
	}
	onEvents := 0 // rows read on the events because their jobs' clocks differ
	kernelRows := 0
	shared := 0 // rows that more than one job has
	for _, k := range caseKeys {
		c := CompareCase{Label: caseLabel[k]}
		for _, n := range impls {
			row := CompareRow{Implementation: n}
			any := false
			var timings []*result.Timing
			var tuned [][]result.Autotune
			for i, x := range in {
				cell := CompareCell{Status: "missing"}
				var t *result.Timing
				var at []result.Autotune
				if rc := index[i][k]; rc != nil {
					if ir := rc.Results[n]; ir != nil {
						any = true
						cell = makeCell(x.Results, rc, n, ir)
						t, at = ir.Timing, ir.Autotune
					}
				}
				row.Cells = append(row.Cells, cell)
				timings = append(timings, t)
				tuned = append(tuned, at)
			}
			for i := 1; i < len(row.Cells); i++ {
				if ch := result.AutotuneChange(tuned[0], tuned[i]); ch != "" {
					row.Cells[i].ConfigChange = ch
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s at %s, job %s against job 1: %s", n, c.Label, rep.Jobs[i].Key, ch))
				}
			}
			if !any {
				continue
			}
			if have := len(row.Cells) - countMissing(row.Cells); have > 1 {
				shared++
			}
			switch clock, mixed := oneClock(row.Cells, timings); {
			case mixed && clock == result.ClockEvents:
				onEvents++
			case clock == result.ClockKernel:
				kernelRows++
			}
			first := row.Cells[0].MedianMS
			for i := 1; i < len(row.Cells); i++ {
				if m := row.Cells[i].MedianMS; m > 0 && first > 0 {
					row.Cells[i].VsFirst = first / m
					if quartiles(timings[i]) && quartiles(timings[0]) {
						cand, base := analyze.OneClock(*timings[i], *timings[0])
						_, row.Cells[i].VsFirstVerdict = analyze.Verdict(cand, base, threshold(in[i].Results, in[0].Results))
					}
				}
			}
			c.Rows = append(c.Rows, row)
		}
		rep.Cases = append(rep.Cases, c)
	}
	if len(rep.Experiments) > 1 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the jobs ran different experiments (%s): only the sweep points and "+
			"implementations they share line up", strings.Join(rep.Experiments, ", ")))
	}
	if shared == 0 {
		rep.Notes = append(rep.Notes, "no sweep point and implementation is in more than one job: nothing lines up "+
			"(a CPU run sweeps cpu_sweep, a GPU run sweep)")
	}
	if onEvents > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d row(s) compared on the CUDA events: not every job has the kernel clock there "+
			"(a runner before it, or method.kernel_clock false); the events read about 1.2-1.5 µs more per call on an H100", onEvents))
	}
	if kernelRows > 0 {
		lo, hi := 0.0, 0.0
		for _, j := range rep.Jobs {
			if j.LaunchMS > 0 && (lo == 0 || j.LaunchMS < lo) {
				lo = j.LaunchMS
			}
			hi = max(hi, j.LaunchMS)
		}
		if hi-lo >= 0.05e-3 {
			var each []string
			for _, j := range rep.Jobs {
				if j.LaunchMS > 0 {
					each = append(each, fmt.Sprintf("job %s: %.2f µs", j.Key, j.LaunchMS*1e3))
				}
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("the kernel clock adds each job's own launch cost (%s): calls of a few µs "+
				"differ by that much for it alone; timing.kernel in results.json has the spans without it", strings.Join(each, ", ")))
		}
	}
	return rep, nil
}

// quartiles reports whether t has the q1 and q3 a verdict reads.
func quartiles(t *result.Timing) bool { return t != nil && t.Q1MS > 0 && t.Q3MS > 0 }

// threshold is the margin the verdicts of two jobs' timings need: the
// larger of the two runs' fast_threshold, each the runner's default where
// a run does not say (two runs that asked for 1 % are compared at 1 %).
func threshold(a, b *result.Results) float64 {
	return max(marginOf(a), marginOf(b))
}

// marginOf is r's fast_threshold, or the runner's default where r has none.
func marginOf(r *result.Results) float64 {
	if th := r.Methodology.FastThreshold; th >= 1 {
		return th
	}
	return analyze.DefaultThreshold
}

// countMissing counts the cells of jobs that lack the row.
func countMissing(cells []CompareCell) int {
	n := 0
	for _, c := range cells {
		if c.Status == "missing" {
			n++
		}
	}
	return n
}

// oneClock puts a row's cells on one clock: their own where every timed
// cell is on the same one, else the CUDA events for every kernel-clock
// cell that has them. It returns the clock the row is then on ("" for a
// row without a timed cell, or one still on several clocks: each cell's
// Clock says its own), and whether the cells' own clocks differed.
func oneClock(cells []CompareCell, timings []*result.Timing) (clock string, mixed bool) {
	same, timed := true, 0
	for i, t := range timings {
		if t == nil || cells[i].MedianMS <= 0 {
			continue
		}
		timed++
		if clock == "" {
			clock = cells[i].Clock
		} else if cells[i].Clock != clock {
			same = false
		}
	}
	if timed == 0 {
		return "", false
	}
	if same {
		return clock, false
	}
	all := true
	for i, t := range timings {
		if t == nil || cells[i].MedianMS <= 0 {
			continue
		}
		if cells[i].Clock == result.ClockKernel && t.Events != nil && t.Events.MedianMS > 0 {
			cells[i].MedianMS, cells[i].Clock = t.Events.MedianMS, result.ClockEvents
		}
		all = all && cells[i].Clock == result.ClockEvents
	}
	if all {
		return result.ClockEvents, true
	}
	return "", true
}

func makeCell(r *result.Results, c *result.Case, name string, ir *result.ImplResult) CompareCell {
	cell := CompareCell{Status: ir.Status}
	if ir.Timing != nil && ir.Timing.MedianMS > 0 {
		cell.MedianMS, cell.Clock = ir.Timing.MedianMS, ir.Timing.ClockOf(r.Mode)
	}
	if ir.Throughput != nil {
		cell.TFLOPS = ir.Throughput.TFLOPS
	}
	if ir.Status == result.ImplWrong && name != r.Baseline {
		return cell // no speed verdict for an incorrect result
	}
	for _, cmp := range r.Comparisons {
		if cmp.A == name && cmp.B == r.Baseline && sameCase(cmp, c) {
			cell.Speedup, cell.Verdict = cmp.Speedup, cmp.Verdict
			return cell
		}
	}
	// No recorded comparison: the baseline is 1x, the other implementations
	// the median ratio; the reference, which the runner does not compare,
	// none (its row reads - in xrun results too).
	if base := c.Results[r.Baseline]; base != nil && base.Timing != nil && cell.MedianMS > 0 {
		switch {
		case name == r.Baseline:
			cell.Speedup, cell.Baseline = 1, true
		case base.Timing.MedianMS > 0 && slices.Contains(r.Implementations, name):
			cell.Speedup = base.Timing.MedianMS / cell.MedianMS
		}
	}
	return cell
}

func sameCase(cmp result.Comparison, c *result.Case) bool {
	if cmp.Label != "" || c.Label != "" {
		return cmp.Label == c.Label
	}
	return paramsKey(cmp.Params) == paramsKey(c.Params)
}

func caseKey(c *result.Case) string {
	if c.Label != "" {
		return c.Label
	}
	return paramsKey(c.Params)
}

// paramsKey renders params deterministically (sorted keys).
func paramsKey(p map[string]any) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v, _ := json.Marshal(p[k])
		parts = append(parts, k+"="+strings.Trim(string(v), `"`))
	}
	return strings.Join(parts, " ")
}

// implOrder is the baseline, the other implementations in spec order,
// then the reference.
func implOrder(r *result.Results) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	add(r.Baseline)
	for _, n := range r.Implementations {
		add(n)
	}
	var rest []string
	for _, c := range r.Cases {
		for n := range c.Results {
			if !seen[n] && n != result.Reference {
				rest = append(rest, n)
			}
		}
	}
	sort.Strings(rest)
	for _, n := range rest {
		add(n)
	}
	for _, c := range r.Cases {
		if ir := c.Results[result.Reference]; ir != nil && ir.Timing != nil {
			add(result.Reference)
			break
		}
	}
	return out
}

// gpuName is the job's GPU ("2x NVIDIA H100 80GB HBM3"), or the CPU when
// it ran without one.
func gpuName(r *result.Results) string {
	if len(r.Env.GPUs) == 0 {
		if r.Env.CPU != "" {
			return "cpu: " + r.Env.CPU
		}
		return "cpu"
	}
	name := r.Env.GPUs[0].Name
	same := true
	for _, g := range r.Env.GPUs[1:] {
		if g.Name != name {
			same = false
		}
	}
	switch {
	case len(r.Env.GPUs) == 1:
		return name
	case same:
		return fmt.Sprintf("%dx %s", len(r.Env.GPUs), name)
	}
	var names []string
	for _, g := range r.Env.GPUs {
		names = append(names, g.Name)
	}
	return strings.Join(names, " + ")
}

// hostName is the name a job's host goes by in the tables, alike for a job
// and a results file: the machine's host name the runner recorded
// (env.host), with the alias the job was submitted to where it has one
// ("gpu01 (lab)"); without a recorded name, the alias, or the host part of
// the daemon's address ("local" for a socket), never the address itself.
func hostName(conn string, r *result.Results) string {
	alias := conn
	if i := strings.Index(conn, "://"); i >= 0 {
		scheme, rest := conn[:i], conn[i+3:]
		alias = ""
		if r.Env.Host == "" {
			switch scheme {
			case "unix", "npipe":
				alias = "local"
			default:
				if at := strings.LastIndex(rest, "@"); at >= 0 {
					rest = rest[at+1:]
				}
				if h, _, err := net.SplitHostPort(rest); err == nil {
					rest = h
				}
				alias, _, _ = strings.Cut(rest, "/")
			}
		}
	}
	switch {
	case r.Env.Host == "":
		return alias
	case alias == "" || alias == r.Env.Host:
		return r.Env.Host
	}
	return r.Env.Host + " (" + alias + ")"
}
