package site

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// xrun report --html of an experiment with 50000 series (5000 cases of 10
// implementations, three runs a day apart: 150000 points) fits the
// readers' 5 s and 500 MB (issue 47): it used to write a page and a trend
// figure for every series, 40 minutes of CPU and 1 GB before the first
// page. This guards the shape, with margins for a loaded 2-CPU machine:
// no series page for series the rule has no verdict on, every link of the index and the job
// pages to a page that exists, the build within 60 s and its heap within
// 450 MB above what the test held before (docs/performance.md has the
// figures of the command itself, under /usr/bin/time).
func TestSiteAt50000Series(t *testing.T) {
	if testing.Short() {
		t.Skip("an experiment of 50000 series takes half a minute: not with -short")
	}
	h, err := history.Open(filepath.Join(t.TempDir(), history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	runs := map[string]*result.Results{}
	for i := range 3 {
		id := fmt.Sprintf("scale%04d", i+1)
		r := flat.Synthetic(5000, 9, id, start.Add(time.Duration(i)*24*time.Hour), uint64(i))
		if _, err := h.Import(r, history.Source{Origin: "test"}); err != nil {
			t.Fatal(err)
		}
		runs[id] = r
	}
	dir := filepath.Join(t.TempDir(), "site")
	var whole atomic.Int32 // results asked for with their cases
	// The default rule, as the nightly's report: three runs are too few
	// for a verdict, so the series have no page and are rows of the table.
	o := Options{Dir: dir, Rule: regress.Default(), Results: func(r history.Run, cases bool) *result.Results {
		if cases {
			whole.Add(1)
		}
		return runs[r.JobID]
	}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	began := time.Now()
	pages, err := Build(h, o)
	took := time.Since(began)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	heap := (int64(peak.Load()) - int64(before)) >> 20
	t.Logf("%d pages in %v, heap %d MB above the test's", len(pages), took.Round(time.Millisecond), heap)
	if took > 60*time.Second {
		t.Errorf("the build took %v, over 60 s", took)
	}
	if heap > 450 {
		t.Errorf("the build's heap grew %d MB, over 450 MB", heap)
	}
	if n := whole.Load(); n != 0 {
		t.Errorf("%d runs of 50000 timings were asked for with their cases, which their pages do not show", n)
	}
	kinds := map[string]int{}
	for _, p := range pages {
		kinds[p.Kind]++
	}
	// The series pages, and the table of all series.
	if kinds["series"] != 1 || kinds["job"] != 3 {
		t.Errorf("pages: %v, want the table of all series and 3 jobs", kinds)
	}
	href := regexp.MustCompile(`(?:href|src)="([^"#]+)"`)
	for _, p := range pages {
		if p.Kind == "series" && !strings.Contains(p.Path, "all-") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Path)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range href.FindAllStringSubmatch(string(data), -1) {
			target := path.Join(path.Dir(p.Path), m[1])
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(target))); err != nil {
				t.Errorf("%s links to %s, which is not written", p.Path, m[1])
				break
			}
		}
	}
}

// Of a large experiment, the series whose latest verdicts are worst get a
// page, the lower id first among equals, and none whose verdict says
// nothing to look at; picking in rounds keeps the same ones.
func TestPickSeriesPages(t *testing.T) {
	statuses := []regress.Status{regress.Stable, regress.Improved, regress.Insufficient, regress.Regressed, regress.Suspect,
		regress.Errored, regress.Noisy, regress.Suspect, regress.Stable, regress.Improved}
	var all []candidate
	for i, st := range statuses {
		all = append(all, candidate{id: int64(i + 1), rank: rank(st)})
	}
	ids := func(cs []candidate) string {
		return fmt.Sprint(func() (out []int64) {
			for _, c := range cs {
				out = append(out, c.id)
			}
			return
		}())
	}
	if got := ids(pick(append([]candidate(nil), all...), 4)); got != "[4 6 5 8]" {
		t.Errorf("pick 4: %s, want [4 6 5 8]", got)
	}
	if got := ids(pick(append([]candidate(nil), all...), 10)); got != "[4 6 5 8 2 10]" {
		t.Errorf("pick 10: %s, want [4 6 5 8 2 10]", got)
	}
	var rounds []candidate
	for _, c := range all {
		rounds = append(rounds, c)
		if len(rounds) >= 6 {
			rounds = pick(rounds, 3)
		}
	}
	if got := ids(pick(rounds, 3)); got != "[4 6 5]" {
		t.Errorf("picked in rounds: %s, want [4 6 5]", got)
	}
}
