package site

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
)

func build(t *testing.T, h *history.Store, dir string) []Page {
	t.Helper()
	pages, err := Build(h, testOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

func TestSitePages(t *testing.T) {
	_, dir, pages := sharedSite(t)
	kinds := map[string]int{}
	for _, p := range pages {
		kinds[p.Kind]++
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p.Path))); err != nil {
			t.Errorf("page %s was listed but not written: %v", p.Path, err)
		}
	}
	if pages[0].Path != "index.html" || kinds["index"] != 1 || kinds["series"] != 8 || kinds["job"] != 26 {
		t.Fatalf("pages: %v (first %s)", kinds, pages[0].Path)
	}
	index := read(t, dir, "index.html")
	for _, want := range []string{"gemm", "job a013", "2 regressed", "as the experiment declares", `href="jobs/a013.html"`} {
		if !strings.Contains(index, want) {
			t.Errorf("the index lacks %q", want)
		}
	}
	job := read(t, dir, "jobs/a013.html")
	for _, want := range []string{"tiled 1.2x faster than blocked", "failed, as declared", "4e11f86c0ffee", "NVIDIA H100 80GB HBM3 (GPU-52449011)",
		"580.159.04", "gpu-box", "2.11.0", `<pre class="table">`, ".png"} {
		if !strings.Contains(job, want) {
			t.Errorf("the job's page lacks %q", want)
		}
	}
}

// Each night's verdict on a series page is the one xrun regress gave
// that run (history.Judge, the series up to the run), not the one later
// runs made of it.
func TestNightVerdictsAsReported(t *testing.T) {
	h, _, _ := sharedSite(t)
	ru := regress.Default()
	points, err := h.Points(history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	walked, err := h.Walk(points, ru)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		series int64
		job    string
	}
	night := map[key]regress.Verdict{}
	runs, _ := h.Runs("")
	for _, r := range runs {
		judged, err := h.Judge(r.JobID, ru)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range judged {
			night[key{j.SeriesID, j.JobID}] = j.Verdict
		}
	}
	seen := map[regress.Status]int{}
	laterChanged := 0
	for _, j := range walked {
		want := night[key{j.SeriesID, j.JobID}]
		got := j.Verdict.AsReported()
		if got.Status != want.Status || got.Direction != want.Direction || got.Confirms != want.Confirms ||
			got.ConfirmedBy != want.ConfirmedBy || got.Spike != want.Spike || got.Score != want.Score {
			t.Errorf("series %d job %s: as reported %+v, regress said %+v", j.SeriesID, j.JobID, got, want)
		}
		if j.Verdict.Status != got.Status || j.Verdict.Spike {
			laterChanged++
		}
		seen[got.Status]++
	}
	// The fixture has what makes the difference: a spike, and a suspect
	// the next night confirmed.
	if seen[regress.Suspect] < 2 || seen[regress.Regressed] < 1 || laterChanged < 2 {
		t.Fatalf("the fixture lacks suspects, regressions or later changes: %v, %d changed later", seen, laterChanged)
	}
}

func TestSiteSeriesPage(t *testing.T) {
	_, dir, _ := sharedSite(t)
	page := ""
	for _, p := range listPages(t, dir) {
		s := read(t, dir, p)
		if strings.HasPrefix(p, "series/") && strings.Contains(s, "gemm · tiled · N=1024") {
			page = s
		}
	}
	if page == "" {
		t.Fatal("no series page for gemm tiled N=1024")
	}
	for _, want := range []string{"suspect (slower)", "regressed, confirms a012", "regressed: confirmed by a013", "spike: the next run did not confirm it",
		`src="trend-`, `href="../jobs/a000.html"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the series page lacks %q", want)
		}
	}
}

// The experiment's names and texts are text on every page, never markup.
func TestSiteEscapes(t *testing.T) {
	_, dir, _ := sharedSite(t)
	escaped := 0
	for _, p := range listPages(t, dir) {
		s := read(t, dir, p)
		for _, bad := range []string{"<script", "<img src=x", "<i>host", "onerror=\"alert"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s holds %q unescaped", p, bad)
			}
		}
		if strings.Contains(s, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			escaped++
		}
	}
	if escaped < 10 {
		t.Errorf("the experiment's name shows escaped on %d pages", escaped)
	}
	for _, p := range listPages(t, dir) {
		if s := read(t, dir, p); strings.Contains(s, "job e/011") && !strings.Contains(s, "&lt;/pre&gt;&lt;script&gt;alert(3)") {
			t.Errorf("%s lacks the error text, escaped", p)
		}
	}
}

var linkAttr = regexp.MustCompile(`(?:href|src)="([^"]*)"`)

// Every link and image of every page is relative and resolves to a file
// of the site.
func TestSiteLinks(t *testing.T) {
	_, dir, _ := sharedSite(t)
	links := 0
	for _, p := range listPages(t, dir) {
		for _, m := range linkAttr.FindAllStringSubmatch(read(t, dir, p), -1) {
			u := strings.ReplaceAll(m[1], "&amp;", "&")
			if strings.HasPrefix(u, "#") {
				continue
			}
			if strings.Contains(u, ":") || strings.HasPrefix(u, "/") {
				t.Errorf("%s links outside the site: %s", p, u)
				continue
			}
			target := path.Join(path.Dir(p), u)
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(target))); err != nil {
				t.Errorf("%s: broken link %s", p, u)
			}
			links++
		}
	}
	if links < 100 {
		t.Errorf("only %d links", links)
	}
}

// The same history gives the same bytes.
func TestSiteDeterministic(t *testing.T) {
	h, a, _ := sharedSite(t)
	b := t.TempDir()
	build(t, h, b)
	fa, fb := tree(t, a), tree(t, b)
	if len(fa) != len(fb) {
		t.Fatalf("%d files, then %d", len(fa), len(fb))
	}
	for name, data := range fa {
		if !bytes.Equal(data, fb[name]) {
			t.Errorf("%s differs between two builds", name)
		}
	}
}

func TestSiteEmpty(t *testing.T) {
	h, _, _ := sharedSite(t)
	_, err := Build(h, Options{Dir: t.TempDir(), Rule: regress.Default(), Experiments: []string{"nothing"}})
	if err != ErrEmpty {
		t.Fatalf("got %v", err)
	}
}

func read(t *testing.T, dir, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// listPages returns the site's HTML pages, slash-separated, sorted.
func listPages(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for name := range tree(t, dir) {
		if strings.HasSuffix(name, ".html") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A night's verdict on the dashboard is what xrun regress reported that
// night, also once a change point accepted later makes the rule read that
// run otherwise: the history keeps the nights a change point rereads.
func TestNightVerdictsKeptAfterAccept(t *testing.T) {
	h, dir := fixture(t)
	ru := regress.Default()
	runs, err := h.Runs("")
	if err != nil {
		t.Fatal(err)
	}
	var series int64
	var run history.Run
	for _, r := range runs {
		judged, err := h.Judge(r.JobID, ru)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range judged {
			if j.Verdict.Status == regress.Regressed {
				series, run = j.SeriesID, r
			}
		}
	}
	if series == 0 {
		t.Fatal("the fixture has no regressed night")
	}
	// Accepted: the run starts a new baseline, and the rule now reads it
	// otherwise.
	if _, err := h.MarkChange([]int64{series}, run.At, run.JobID, "meant"); err != nil {
		t.Fatal(err)
	}
	now, err := h.Judge(run.JobID, ru)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range now {
		if j.SeriesID == series && j.Verdict.Status == regress.Regressed {
			t.Fatal("the accepted change point changed nothing: the test shows nothing")
		}
	}
	site := filepath.Join(dir, "site")
	build(t, h, site)
	page := read(t, site, "series/"+seriesFile(series))
	i := strings.Index(page, ">"+run.JobID+"</a>")
	if i < 0 {
		t.Fatalf("the series page has no row of job %s", run.JobID)
	}
	row := page[i:]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "regressed") {
		t.Errorf("the night of job %s after the accept: %s", run.JobID, row)
	}
	if job := read(t, site, "jobs/"+run.JobID+".html"); !strings.Contains(job, "regressed") {
		t.Errorf("the job's page lost its night's verdict")
	}
}
