//go:build integration

package server

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/result"
)

// The dashboard in a real browser: Debian's chromium, headless, as
// client/site's pages are tested.

// browse runs headless chromium with the profile and args and returns
// the page's DOM as it stands once loaded (--dump-dom).
func browse(t *testing.T, bin, profile string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// A browser signs in through the dashboard's form with a read token and
// lands on the job's page it was sent (a link pasted into a pull
// request); its session cookie then opens the index without signing in
// again, in the next start of the browser too; a browser without it gets
// the form. The token is in no URL the browser loads and in no log line.
func TestDashboardInChromium(t *testing.T) {
	bin := testenv.Chromium(t)
	h, err := history.Open(filepath.Join(t.TempDir(), history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	f := newFixture(t, h, Options{})
	var last string
	for _, dir := range []string{"first", "second", "third"} {
		src := filepath.Join("..", "..", "experiments", "058-projection-chain-backward", "results", "2026-11-26-h100-zygote-dynamo", dir, "results.json")
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if code, r := f.postResults(t, f.post, data); code != 201 {
			t.Fatalf("post %s: %d %+v", src, code, r)
		}
		r, err := result.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		last = r.JobID
	}
	// The job's page, as the index links it.
	code, index := f.do(t, "GET", "/", f.read, nil)
	jobPage := regexp.MustCompile(`jobs/[^"]*` + last + `[^"]*\.html`).FindString(string(index))
	if code != 200 || jobPage == "" {
		t.Fatalf("the index (%d) links no page of job %s", code, last)
	}

	// The sign-in as a person makes it: the server's form, filled with
	// the token and sent. The page that fills it is a file of the test's,
	// so that the token is in no address the browser loads.
	code, form := f.do(t, "GET", "/"+jobPage, "", nil)
	if code != 401 || !bytes.Contains(form, []byte(`action="/login"`)) {
		t.Fatalf("the job's page signed out: %d %s", code, form)
	}
	filled := bytes.Replace(form, []byte(`action="/login"`), []byte(`action="`+f.srv.URL+`/login"`), 1)
	filled = bytes.Replace(filled, []byte(`id="token"`), []byte(`id="token" value="`+html.EscapeString(f.read)+`"`), 1)
	filled = bytes.Replace(filled, []byte("</body>"), []byte(`<script>document.getElementById('login').submit()</script></body>`), 1)
	signin := filepath.Join(t.TempDir(), "signin.html")
	if err := os.WriteFile(signin, filled, 0o600); err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	dom := browse(t, bin, profile, "file://"+signin)
	if !strings.Contains(dom, last) || !strings.Contains(dom, "projection-chain-backward") || strings.Contains(dom, `action="/login"`) {
		t.Fatalf("after signing in the browser shows\n%s\nnot the page of job %s", dom, last)
	}
	// The browser started again with its profile: signed in still.
	dom = browse(t, bin, profile, f.srv.URL+"/")
	if !strings.Contains(dom, "projection-chain-backward") || !strings.Contains(dom, jobPage) {
		t.Errorf("the index in the signed-in browser:\n%s", dom)
	}
	// Another browser: the form.
	dom = browse(t, bin, t.TempDir(), f.srv.URL+"/"+jobPage)
	if !strings.Contains(dom, `action="/login"`) || strings.Contains(dom, last+" ") {
		t.Errorf("a browser not signed in got\n%s", dom)
	}
	log := f.logText()
	if strings.Contains(log, f.read) {
		t.Errorf("the log shows the token:\n%s", log)
	}
	if want := fmt.Sprintf("GET /%s 200 token=t-read", jobPage); !strings.Contains(log, "POST /login 303 token=t-read") || !strings.Contains(log, want) {
		t.Errorf("the log lacks the sign-in and %q:\n%s", want, log)
	}
}
