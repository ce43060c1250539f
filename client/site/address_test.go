package site

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// The dashboard is published: where a Docker host is reached, with its
// user, and the importer's paths are on no page. A run that recorded no
// machine name is told apart by a hash of its address.
func TestSiteKeepsAddressesOut(t *testing.T) {
	h, err := history.Open(filepath.Join(t.TempDir(), history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	path := filepath.Join("..", "..", "experiments", "heavy-kernels", "results", "2026-12-02-h200", "nights", "night-01", "results.json")
	r, err := result.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Env.Host = ""
	if _, err := h.Import(r, history.Source{Origin: "/home/lab/private/night-01/results.json", Address: "ssh://lab@10.1.2.3"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Build(h, Options{Dir: dir, Rule: regress.Default()}); err != nil {
		t.Fatal(err)
	}
	seen := false
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, leak := range []string{"10.1.2.3", "lab@", "/home/lab/private"} {
			if strings.Contains(string(data), leak) {
				t.Errorf("%s publishes %q", p, leak)
			}
		}
		seen = seen || strings.Contains(string(data), "ssh host ")
		return nil
	})
	if !seen {
		t.Error("no page names the run's host by its hash")
	}
}

// A build stopped midway (Ctrl-C) leaves the site as it was, and no
// staging directory; the next build replaces the site.
func TestStoppedBuildLeavesTheSite(t *testing.T) {
	h, err := history.Open(filepath.Join(t.TempDir(), history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := result.ReadFile(filepath.Join("..", "..", "experiments", "heavy-kernels", "results", "2026-12-02-h200", "nights", "night-01", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Import(r, history.Source{}); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "site")
	if _, err := Build(h, Options{Dir: dir, Rule: regress.Default()}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(h, Options{Dir: dir, Rule: regress.Default(), Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped build: %v, want context.Canceled", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if len(before) == 0 || string(after) != string(before) {
		t.Error("the stopped build changed the site")
	}
	if left, _ := filepath.Glob(filepath.Join(parent, stagingPrefix+"*")); len(left) > 0 {
		t.Errorf("the stopped build left %v", left)
	}
	// A build killed midway leaves its staging directory: the next removes it.
	os.MkdirAll(filepath.Join(parent, stagingPrefix+"site.123", "series"), 0o755)
	if _, err := Build(h, Options{Dir: dir, Rule: regress.Default()}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, stagingPrefix+"*")); len(left) > 0 {
		t.Errorf("a killed build's staging is still there: %v", left)
	}
}

// cancelOn is a progress writer that stops a build when a line holds
// what it waits for.
type cancelOn struct {
	what   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.what) {
		c.cancel()
	}
	return len(p), nil
}

// A Ctrl-C while an experiment is judged stops the build there: no page
// of it is written (no results.json read for one), and the site is as it
// was. The build used to look at its context between experiments only,
// so an experiment of 50000 series ran to its end first.
func TestStopReachesTheExperiment(t *testing.T) {
	h, _ := fixture(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "site")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	o := testOptions(dir)
	o.Context, o.Progress = ctx, cancelOn{"report: experiment 1/", cancel}
	o.Results = func(r history.Run, cases bool) *result.Results { reads++; return readResults(r, cases) }
	if _, err := Build(h, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped build: %v, want context.Canceled", err)
	}
	if reads != 0 {
		t.Errorf("the stopped build read %d results.json for its pages", reads)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) > 0 {
		t.Errorf("the stopped build left %v", left)
	}
}

// The finished site takes the directory's place in one rename, so that no
// kill leaves part of a site the next build refuses; a link to the site
// stays a link, its target replaced.
func TestSiteReplacedWhole(t *testing.T) {
	h, _ := fixture(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "site")
	for range 2 {
		if _, err := Build(h, testOptions(dir)); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(parent, stagingPrefix+"*")); len(left) > 0 {
		t.Errorf("the build left %v", left)
	}
	// A kill between the two renames leaves the old site aside and no
	// directory: the next build writes it and removes what was aside.
	os.Rename(dir, filepath.Join(parent, stagingPrefix+"site.1-old"))
	if _, err := Build(h, testOptions(dir)); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, stagingPrefix+"*")); len(left) > 0 {
		t.Errorf("a killed swap's old site is still there: %v", left)
	}
	target := filepath.Join(parent, "www")
	if err := os.Rename(dir, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(h, testOptions(dir)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link to the site was replaced: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "index.html")); err != nil {
		t.Errorf("the link's target has no site: %v", err)
	}
}

// flipContext is cancelled from its second look on; at that look it counts
// the series pages the build had written.
type flipContext struct {
	context.Context
	parent string
	looks  int
	pages  int
}

func (c *flipContext) Err() error {
	c.looks++
	if c.looks < 2 {
		return nil
	}
	if c.looks == 2 {
		got, _ := filepath.Glob(filepath.Join(c.parent, stagingPrefix+"*", "series", "*.html"))
		c.pages = len(got)
	}
	return context.Canceled
}

// Ctrl-C during an experiment of many series (issue 47: ignored until the
// experiment's last page) stops the build at the next page.
func TestStopWithinAnExperiment(t *testing.T) {
	h, err := history.Open(filepath.Join(t.TempDir(), history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := result.ReadFile(filepath.Join("..", "..", "experiments", "heavy-kernels", "results", "2026-12-02-h200", "nights", "night-01", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Import(r, history.Source{}); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	ctx := &flipContext{Context: context.Background(), parent: parent}
	if _, err := Build(h, Options{Dir: filepath.Join(parent, "site"), Rule: regress.Default(), Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped build: %v, want context.Canceled", err)
	}
	if ctx.pages != 0 {
		t.Errorf("the build went on for %d series pages after Ctrl-C", ctx.pages)
	}
	if _, err := os.Stat(filepath.Join(parent, "site")); !os.IsNotExist(err) {
		t.Errorf("the stopped build made the site: %v", err)
	}
}
