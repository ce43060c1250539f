package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/site"
)

// browser is a client with a cookie jar that follows no redirect, as a
// browser's requests are seen one by one.
type browser struct {
	t   *testing.T
	f   *fixture
	c   *http.Client
	jar *cookiejar.Jar
}

func newBrowser(t *testing.T, f *fixture) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, f: f, c: c, jar: jar}
}

func (b *browser) answer(resp *http.Response, err error) (int, http.Header, string) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(data)
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	code, _, body := b.answer(b.c.Get(b.f.srv.URL + path))
	return code, body
}

func (b *browser) login(token, next string) (int, http.Header, string) {
	b.t.Helper()
	return b.answer(b.c.PostForm(b.f.srv.URL+"/login", url.Values{"token": {token}, "next": {next}}))
}

// The dashboard: the pages of report --html, for a browser signed in
// with a read token through the form; each page (a job's) is at an
// address of its own that signs in and comes back; a post rebuilds it;
// the token is in no URL, cookie or log line, and removing it signs its
// browsers out.
func testDashboard(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	b := newBrowser(t, f)
	if code, body := b.get("/"); code != http.StatusOK || !strings.Contains(body, "history is empty") {
		// Signed out, the form; an empty history needs no build either.
		if code != http.StatusUnauthorized || !strings.Contains(body, `action="/login"`) {
			t.Fatalf("/ signed out: %d %s; want 401 and the sign-in form", code, body)
		}
	}
	for i := 0; i < 3; i++ {
		if code, r := f.postResults(t, f.post, results(t, "job-d"+string(rune('0'+i)), day.Add(time.Duration(i)*24*time.Hour), 2)); code != http.StatusCreated {
			t.Fatalf("post: %d %+v", code, r)
		}
	}
	// A job's page asked for signed out: the form, which comes back to it.
	code, body := b.get("/jobs/")
	if code != http.StatusUnauthorized || !strings.Contains(body, `name="next" value="/jobs/"`) {
		t.Fatalf("a page signed out: %d %s; want 401 and the form with the page to come back to", code, body)
	}
	for _, c := range []struct {
		token string
		want  int
		msg   string
	}{
		{"xrun_nosuchtoken", http.StatusUnauthorized, "not known to this server"},
		{f.post, http.StatusForbidden, "has scope post"},
		{"", http.StatusUnauthorized, "Give a read token"},
	} {
		code, hdr, body := b.login(c.token, "/")
		if code != c.want || !strings.Contains(body, c.msg) || hdr.Get("Set-Cookie") != "" {
			t.Errorf("sign in with %q: %d %s (cookie %q); want %d saying %q, and no cookie", c.token, code, body, hdr.Get("Set-Cookie"), c.want, c.msg)
		}
	}
	code, hdr, _ := b.login(f.read, "/")
	cookie := hdr.Get("Set-Cookie")
	if code != http.StatusSeeOther || hdr.Get("Location") != "/" || !strings.Contains(cookie, SessionCookie+"=") ||
		!strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Lax") || strings.Contains(cookie, f.read) {
		t.Fatalf("sign in: %d, Location %q, Set-Cookie %q; want 303 to /, an HttpOnly session cookie without the token", code, hdr.Get("Location"), cookie)
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("a cookie over plain HTTP is Secure: %q", cookie)
	}
	// Behind a proxy that terminates TLS, the cookie is for HTTPS alone.
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/login", strings.NewReader(url.Values{"token": {f.read}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	if _, hdr, _ := newBrowser(t, f).answer(newBrowser(t, f).c.Do(req)); !strings.Contains(hdr.Get("Set-Cookie"), "; Secure") {
		t.Errorf("sign in through a TLS proxy: Set-Cookie %q, want Secure", hdr.Get("Set-Cookie"))
	}
	code, index := b.get("/")
	if code != http.StatusOK || !strings.Contains(index, "synthetic") || !strings.Contains(index, "job-d2") {
		t.Fatalf("the index signed in: %d %s; want the experiment and its latest job", code, index)
	}
	jobPage := regexp.MustCompile(`jobs/[^"]*job-d2[^"]*\.html`).FindString(index)
	if jobPage == "" {
		t.Fatalf("the index links no page of job-d2:\n%s", index)
	}
	if code, body := b.get("/" + jobPage); code != http.StatusOK || !strings.Contains(body, "job-d2") || !strings.Contains(body, "gpu-box") {
		t.Errorf("job page %s: %d %s", jobPage, code, body)
	}
	if code, body := b.get("/style.css"); code != http.StatusOK || len(body) < 100 {
		t.Errorf("style.css: %d, %d bytes", code, len(body))
	}
	for _, p := range []string{"/jobs/", "/no-such-page.html", "/jobs/.x.html", "/api/v1/nothing"} {
		if code, _ := b.get(p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	// Signed in elsewhere, a job's page sends the browser back to it.
	other := newBrowser(t, f)
	if code, hdr, _ := other.login(f.admin, "/"+jobPage); code != http.StatusSeeOther || hdr.Get("Location") != "/"+jobPage {
		t.Errorf("sign in from %s: %d, Location %q", jobPage, code, hdr.Get("Location"))
	}
	if code, hdr, _ := other.login(f.admin, "//evil.example/"); code != http.StatusSeeOther || hdr.Get("Location") != "/" {
		t.Errorf("sign in to go to another site: %d, Location %q; want /", code, hdr.Get("Location"))
	}
	// The same pages as one archive, for xrun report --server.
	code, archive := f.do(t, http.MethodGet, "/api/v1/site?window=2&min_history=1", f.read, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/site: %d %s", code, archive)
	}
	dir := filepath.Join(t.TempDir(), "site")
	pages, err := site.Unpack(dir, bytes.NewReader(archive))
	if err != nil || len(pages) < 3 || pages[0].Path != "index.html" {
		t.Fatalf("the site's archive: %v, pages %+v", err, pages)
	}
	if data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(jobPage))); err != nil || !strings.Contains(string(data), "job-d2") {
		t.Errorf("the archive's %s: %v", jobPage, err)
	}
	for _, c := range []struct {
		token, query string
		want         int
	}{{f.post, "", http.StatusForbidden}, {f.read, "?experiment=none", http.StatusNotFound}, {f.read, "?floor=-1", http.StatusBadRequest}} {
		if code, _ := f.do(t, http.MethodGet, "/api/v1/site"+c.query, c.token, nil); code != c.want {
			t.Errorf("GET /api/v1/site%s: %d, want %d", c.query, code, c.want)
		}
	}
	// A post lands: the next request sees it.
	if code, r := f.postResults(t, f.post, results(t, "job-d3", day.Add(3*24*time.Hour), 2)); code != http.StatusCreated {
		t.Fatalf("post: %d %+v", code, r)
	}
	if code, index := b.get("/"); code != http.StatusOK || !strings.Contains(index, "job-d3") {
		t.Errorf("the index after a post: %d; want job-d3 on it:\n%s", code, index)
	}
	// A script reads it with a bearer token.
	if code, body := f.do(t, http.MethodGet, "/", f.read, nil); code != http.StatusOK || !strings.Contains(string(body), "job-d3") {
		t.Errorf("/ with a bearer token: %d", code)
	}
	if code, _ := f.do(t, http.MethodGet, "/", f.post, nil); code != http.StatusUnauthorized {
		t.Errorf("/ with a post token: %d, want 401", code)
	}
	// The token removed, its browsers are signed out.
	if ok, err := h.RemoveToken("t-read"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if code, _ := b.get("/"); code != http.StatusUnauthorized {
		t.Errorf("/ after its token was removed: %d, want 401", code)
	}
	if code, _ := other.get("/" + jobPage); code != http.StatusOK {
		t.Errorf("another token's browser: %d, want 200", code)
	}
	if code, _, _ := other.answer(other.c.PostForm(f.srv.URL+"/logout", nil)); code != http.StatusOK {
		t.Errorf("sign out: %d", code)
	}
	if code, _ := other.get("/"); code != http.StatusUnauthorized {
		t.Errorf("/ signed out: %d, want 401", code)
	}
	log := f.logText()
	for _, secret := range []string{f.read, f.admin, f.post} {
		if strings.Contains(log, secret) {
			t.Errorf("the log shows a token:\n%s", log)
		}
	}
	if !strings.Contains(log, "POST /login 303 token=t-read") || !strings.Contains(log, "GET / 200 token=t-read") {
		t.Errorf("the log names no sign-in or page by the token's name:\n%s", log)
	}
}

// A browser stays signed in across a restart of the server (a new Server
// on the same history), which keeps the session by the hash of its
// cookie, not the cookie; signing out, or removing the token, ends it on
// every server of the history.
func testSessions(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	if code, r := f.postResults(t, f.post, results(t, "job-s0", day, 2)); code != http.StatusCreated {
		t.Fatalf("post: %d %+v", code, r)
	}
	b := newBrowser(t, f)
	if code, _, _ := b.login(f.read, "/"); code != http.StatusSeeOther {
		t.Fatalf("sign in: %d", code)
	}
	u, _ := url.Parse(f.srv.URL)
	var cookie *http.Cookie
	for _, c := range b.jar.Cookies(u) {
		if c.Name == SessionCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie")
	}
	if _, ok, err := h.SessionToken(cookie.Value); ok || err != nil {
		t.Errorf("the history keeps the cookie's value itself (%v)", err)
	}
	restarted := New(h, Options{})
	srv := httptest.NewServer(restarted)
	t.Cleanup(func() { srv.Close(); restarted.Close() })
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.AddCookie(cookie)
		code, _, _ := b.answer(http.DefaultClient.Do(req))
		return code
	}
	if code := get("/"); code != http.StatusOK {
		t.Errorf("the index after a restart: %d, want the signed-in page", code)
	}
	// Signed out on the first server, the cookie opens nothing on either.
	if code, _, _ := b.answer(b.c.PostForm(f.srv.URL+"/logout", nil)); code != http.StatusOK {
		t.Errorf("sign out: %d", code)
	}
	if code := get("/"); code != http.StatusUnauthorized {
		t.Errorf("the index after signing out: %d, want 401", code)
	}
	// Removing the token signs out its browsers, restarted or not.
	if code, _, _ := b.login(f.read, "/"); code != http.StatusSeeOther {
		t.Fatalf("sign in again: %d", code)
	}
	for _, c := range b.jar.Cookies(u) {
		if c.Name == SessionCookie {
			cookie = c
		}
	}
	if code := get("/"); code != http.StatusOK {
		t.Errorf("signed in again: %d", code)
	}
	if ok, err := h.RemoveToken("t-" + ScopeRead); !ok || err != nil {
		t.Fatalf("remove the token: %v %v", ok, err)
	}
	if code := get("/"); code != http.StatusUnauthorized {
		t.Errorf("the index after its token was removed: %d, want 401", code)
	}
}
