//go:build integration

package site

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// The site in a real browser: Debian's chromium, headless.

// browse runs headless chromium on url with args and returns its stdout
// and stderr.
func browse(t *testing.T, bin, profile string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}

// probe is what the check injected into a copy of each page reports once
// the page has loaded.
type probe struct {
	Broken  []string `json:"broken"`
	Errors  []string `json:"errors"`
	Links   []string `json:"links"`
	Images  int      `json:"images"`
	Scripts int      `json:"scripts"`
	OnError int      `json:"onerror"`
	Styled  bool     `json:"styled"`
}

// The check: every error event (a resource that failed to load, a script
// error) is recorded from the start; at load, every image must have
// decoded, and every link is listed as the browser resolved it.
const (
	errorHook = `<script>window.__errs=[];window.addEventListener('error',function(e){var t=e.target;` +
		`window.__errs.push(t&&(t.src||t.href)?'failed to load '+(t.src||t.href):'error: '+e.message);},true);</script>`
	loadCheck = `<script>window.addEventListener('load',function(){var r={broken:[],errors:window.__errs,links:[],` +
		`images:document.images.length,scripts:document.scripts.length,onerror:document.querySelectorAll('[onerror]').length,` +
		`styled:getComputedStyle(document.querySelector('header')).backgroundColor!=='rgba(0, 0, 0, 0)'};` +
		`for(const i of document.images){if(!i.complete||i.naturalWidth===0)r.broken.push(i.src);}` +
		`for(const a of document.querySelectorAll('a[href],link[href]')){r.links.push(a.href);}` +
		`var p=document.createElement('pre');p.id='xrun-check';p.textContent=JSON.stringify(r);document.body.appendChild(p);});</script>`
)

var probeOut = regexp.MustCompile(`(?s)<pre id="xrun-check">(.*?)</pre>`)

// Every page of the site loads in chromium with no broken link or image
// and no console message; the experiment's markup in names and errors is
// text in the browser's DOM (no script or onerror of its own); the index
// renders to a screenshot that has both text and background.
func TestSiteInChromium(t *testing.T) {
	bin := testenv.Chromium(t)
	h, _ := fixture(t)
	site := t.TempDir()
	pages := build(t, h, site)
	// The probe runs in a copy of the site: the site itself has no script.
	probed := t.TempDir()
	for name, data := range tree(t, site) {
		if strings.HasSuffix(name, ".html") {
			if bytes.Contains(data, []byte("<script")) {
				t.Errorf("%s has a script", name)
			}
			data = bytes.Replace(data, []byte("<head>"), []byte("<head>"+errorHook), 1)
			data = bytes.Replace(data, []byte("</body>"), []byte(loadCheck+"</body>"), 1)
		}
		p := filepath.Join(probed, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	profile := t.TempDir()
	for _, pg := range pages {
		file := filepath.Join(probed, filepath.FromSlash(pg.Path))
		dom, stderr := browse(t, bin, profile, "--dump-dom", "file://"+file)
		if p, ok := checkPage(t, pg.Path, probed, dom, stderr); ok && pg.Kind != "index" && p.Images == 0 {
			t.Errorf("%s: no figure", pg.Path)
		}
	}
	// Screenshots of the site as published: the index and the series page
	// of the fixture's regression. XRUN_SITE_SCREENSHOTS=DIR keeps them
	// (docs/img/dashboard-*.png are made so).
	shots := t.TempDir()
	if dest := os.Getenv("XRUN_SITE_SCREENSHOTS"); dest != "" {
		shots = dest
	}
	seriesPage := ""
	for _, pg := range pages {
		if pg.Kind == "series" && pg.Title == "gemm · tiled · N=1024" {
			seriesPage = pg.Path
		}
	}
	if seriesPage == "" {
		t.Fatal("no series page for gemm tiled N=1024")
	}
	for _, s := range []struct {
		name, page string
		height     int
	}{{"dashboard-index.png", "index.html", 900}, {"dashboard-series.png", seriesPage, 1400}} {
		shot := filepath.Join(shots, s.name)
		_, stderr := browse(t, bin, profile, "--hide-scrollbars", fmt.Sprintf("--window-size=1280,%d", s.height), "--screenshot="+shot,
			"file://"+filepath.Join(site, filepath.FromSlash(s.page)))
		consoleFree(t, s.page+" (screenshot)", stderr)
		checkScreenshot(t, shot, 1280, s.height)
	}
}

// consoleLine is a console message in chromium's log.
var consoleLine = regexp.MustCompile(`(?m)^.*(CONSOLE|console).*$`)

func consoleFree(t *testing.T, page, stderr string) {
	t.Helper()
	for _, l := range consoleLine.FindAllString(stderr, -1) {
		t.Errorf("%s: console message: %s", page, l)
	}
}

func checkPage(t *testing.T, page, root, dom, stderr string) (probe, bool) {
	t.Helper()
	consoleFree(t, page, stderr)
	var p probe
	m := probeOut.FindStringSubmatch(dom)
	if m == nil {
		t.Errorf("%s: the page did not finish loading (no probe in its DOM)", page)
		return p, false
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
		t.Errorf("%s: probe %q: %v", page, m[1], err)
		return p, false
	}
	for _, b := range p.Broken {
		t.Errorf("%s: broken image %s", page, b)
	}
	for _, e := range p.Errors {
		t.Errorf("%s: %s", page, e)
	}
	if p.Scripts != 2 || p.OnError != 0 {
		t.Errorf("%s: %d scripts (the probe's 2) and %d onerror attributes in the DOM: markup of the experiment's ran as markup", page, p.Scripts, p.OnError)
	}
	if !p.Styled {
		t.Errorf("%s: the style sheet did not apply", page)
	}
	rootURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(root) + "/"}).String()
	for _, l := range p.Links {
		u, err := url.Parse(l)
		if err != nil || u.Scheme != "file" || !strings.HasPrefix(l, rootURL) {
			t.Errorf("%s: link %s leaves the site", page, l)
			continue
		}
		if _, err := os.Stat(filepath.FromSlash(u.Path)); err != nil {
			t.Errorf("%s: broken link %s", page, l)
		}
	}
	return p, true
}

// checkScreenshot requires a real picture of a page: the window's size,
// mostly light background, and dark text on a fair share of it.
func checkScreenshot(t *testing.T, path string, width, height int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	light, dark, colored, total := screenshotStats(img)
	t.Logf("screenshot %s: %dx%d, %.1f %% light, %.2f %% dark, %.2f %% coloured", path, img.Bounds().Dx(), img.Bounds().Dy(),
		100*float64(light)/float64(total), 100*float64(dark)/float64(total), 100*float64(colored)/float64(total))
	if img.Bounds().Dx() != width || img.Bounds().Dy() != height {
		t.Errorf("screenshot is %v, not the %dx%d window", img.Bounds(), width, height)
	}
	if light < total/2 || dark < total/200 || colored < total/1000 {
		t.Errorf("screenshot %s is not a rendered page: %d light, %d dark, %d coloured of %d pixels", path, light, dark, colored, total)
	}
}

// screenshotStats counts light (background), dark (text) and coloured
// (links, verdicts) pixels.
func screenshotStats(img image.Image) (light, dark, colored, total int) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			luma := (299*r + 587*g + 114*bl) / 1000
			switch {
			case luma > 200:
				light++
			case luma < 90:
				dark++
			}
			if max(r, g, bl)-min(r, g, bl) > 80 {
				colored++
			}
			total++
		}
	}
	return
}
